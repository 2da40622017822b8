// What an approval pause asks about. After its node ran: what the node's update changes in the
// state, field by field (the old value struck, the new one beside it; for a list the update
// appends to, only what it appends), and where the run goes if it is approved. Before its node
// runs: the state the node would run on.
import { h } from "./dom.js";
import { valueView } from "./fold.js";

const END = "__end__";

/**
 * The rows of an approval's diff, one per changed field: `{field, before, after}`, or for a list
 * the update appended to, `{field, appended: true, items, count}` (`after` is only what was appended).
 */
export function changeRows(changes) {
  return (changes || []).map((change) => {
    if (!change.appended) {
      return { field: change.field, appended: false, before: change.before ?? null, after: change.after ?? null };
    }
    const items = Array.isArray(change.after) ? change.after : [change.after];
    return { field: change.field, appended: true, items, count: items.length };
  });
}

/** "+ 2 items" for what an update appends to a list. */
export function appendedText(count) {
  return `+ ${count} item${count === 1 ? "" : "s"}`;
}

/** "Next if approved: a, b" (END says "end"); "" when the next nodes are not known before routing. */
export function nextLine(next) {
  if (!Array.isArray(next)) return "";
  const names = next.map((name) => (name === END ? "end" : name));
  return `Next if approved: ${names.length ? names.join(", ") : "end"}`;
}

/** The state a node would run on, as `[field, value]` rows (a state that is not an object: one row). */
export function inputRows(input) {
  if (input !== null && typeof input === "object" && !Array.isArray(input)) return Object.entries(input);
  return input === undefined || input === null ? [] : [["input", input]];
}

/** Words a screen reader says that the eye reads from the layout (struck, arrow, colour). */
function spoken(text) {
  return h("span", "nbg-sr", text);
}

function changeView(row) {
  const item = h("li", "nbg-change");
  item.dataset.field = row.field;
  item.appendChild(h("span", "nbg-change-field", row.field));
  if (row.appended) {
    const added = h("div", "nbg-change-appended");
    added.appendChild(h("span", "nbg-change-count", appendedText(row.count)));
    const list = h("ul", "nbg-change-items");
    for (const value of row.items) {
      const entry = h("li", "nbg-change-item");
      entry.appendChild(valueView(value, "nbg-change-after"));
      list.appendChild(entry);
    }
    added.appendChild(list);
    item.appendChild(added);
    return item;
  }
  const values = h("div", "nbg-change-values");
  const before = h("span", "nbg-change-before");
  before.append(spoken("was "), valueView(row.before));
  const arrow = h("span", "nbg-change-arrow", " \u2192 ");
  arrow.setAttribute("aria-hidden", "true");
  const after = h("span", "nbg-change-after");
  after.append(spoken(", now "), valueView(row.after));
  values.append(before, arrow, after);
  item.appendChild(values);
  return item;
}

/** A list of `field: value` rows (a <dl>, each pair in a <div>, as axe allows). */
export function fieldList(rows, cls) {
  const list = h("dl", `nbg-field-list ${cls}`);
  for (const [field, value] of rows) {
    const pair = h("div", "nbg-field-pair");
    pair.dataset.field = field;
    pair.append(h("dt", "nbg-field-name", field), h("dd", "nbg-field-value"));
    pair.lastChild.appendChild(valueView(value));
    list.appendChild(pair);
  }
  return list;
}

/** What an approval pause shows above its Approve / Deny buttons. */
export function approvalView(pause) {
  const view = h("div", "nbg-approval");
  if (pause.at === "before") {
    const rows = inputRows(pause.input);
    view.appendChild(h("div", "nbg-section-title", rows.length ? "It would run on" : "It would run on an empty state"));
    if (rows.length) view.appendChild(fieldList(rows, "nbg-approval-input"));
    return view;
  }
  const rows = changeRows(pause.changes);
  if (rows.length) {
    view.appendChild(h("div", "nbg-section-title", "Its update changes"));
    const list = h("ul", "nbg-changes");
    for (const row of rows) list.appendChild(changeView(row));
    view.appendChild(list);
  } else if (pause.update != null) {
    // (An update that is not field by field, as an older kernel sends it: shown whole.)
    view.appendChild(h("div", "nbg-section-title", "Its update"));
    view.appendChild(valueView(pause.update, "nbg-approval-update"));
  } else if (pause.at === "after") {
    view.appendChild(h("div", "nbg-section-title", "Its update changes nothing in the state"));
  }
  const next = nextLine(pause.next);
  if (next) view.appendChild(h("div", "nbg-approval-next", next));
  return view;
}
