// Two runs drawn together (GraphView.side_by_side): each run's path on the graph in its own
// colour (and stroke, so colour is not the only cue), the nodes where the paths part marked,
// and beside the graph the frame table with the first state difference and the diff there.
import { svg } from "./dom.js";

/** Whose path a node or edge is on: "both", "a", "b", or null (neither run's). */
function whose(inA, inB) {
  return inA && inB ? "both" : inA ? "a" : inB ? "b" : null;
}

/**
 * What to paint for a comparison (the `sides` trait): `nodes` and `edges` (path or edge key ->
 * "both" | "a" | "b"), and `parted` (node path -> the labels of the runs that went there at the
 * step where the paths part). Null when there is no comparison.
 */
export function sidesPaint(sides) {
  if (!sides || !Array.isArray(sides.runs) || sides.runs.length !== 2) return null;
  const [a, b] = sides.runs.map((run) => ({ visits: run.visits || {}, fired: run.fired || {} }));
  const mark = (one, two) => {
    const out = {};
    for (const key of new Set([...Object.keys(one), ...Object.keys(two)])) {
      const on = whose((one[key] || 0) > 0, (two[key] || 0) > 0);
      if (on) out[key] = on;
    }
    return out;
  };
  const parted = {};
  const row = (sides.rows || []).find((r) => r.frame === sides.parted_at);
  if (row) {
    (sides.labels || ["a", "b"]).forEach((label, i) => {
      const side = i === 0 ? row.a : row.b;
      if (side) (parted[side.path] ||= []).push(label);
    });
  }
  return { nodes: mark(a.visits, b.visits), edges: mark(a.fired, b.fired), parted };
}

/** A run's record at a frame, as the table says it: "review [odd] (failed)". */
export function cellText(side, frame) {
  if (!side) return frame === 0 ? "(input)" : "(ended)";
  return `${side.path}${side.branch ? ` [${side.branch}]` : ""}${side.error ? " (failed)" : ""}`;
}

function shortJson(value, at) {
  if (at != null && Array.isArray(value)) {
    if (at >= value.length) return "(no item)";
    value = value[at];
  }
  const text = value === undefined ? "null" : JSON.stringify(value);
  return text.length <= 60 ? text : `${text.slice(0, 59)}\u2026`;
}

/** A field that differs, in words: "version: run 1, fork 5"; a list's first differing item. */
export function changeText(change, [la, lb]) {
  if (change.kind === "only_a") return `${change.field}: only in ${la}, ${shortJson(change.a, change.at)}`;
  if (change.kind === "only_b") return `${change.field}: only in ${lb}, ${shortJson(change.b, change.at)}`;
  const where = change.at != null ? `${change.field}[${change.at}]` : change.field;
  return `${where}: ${la} ${shortJson(change.a, change.at)}, ${lb} ${shortJson(change.b, change.at)}`;
}

/** What a frame's row notes: "paths part", "first state difference", both or "". */
export function rowNote(sides, frame) {
  const notes = [];
  if (frame === sides.parted_at) notes.push("paths part");
  if (frame === sides.differs_at) notes.push("first state difference");
  return notes.join(", ");
}

const KINDS = ["both", "a", "b"];

/** Paint `sidesPaint`'s answer on a drawing (null: take every mark off). */
export function paintSides(drawing, painted) {
  const nodes = painted ? painted.nodes : {};
  const edges = painted ? painted.edges : {};
  const parted = painted ? painted.parted : {};
  for (const [path, { group, node }] of drawing.nodeEls) {
    for (const kind of KINDS) group.classList.toggle(`nbg-side-${kind}`, nodes[path] === kind);
    const labels = parted[path];
    group.classList.toggle("nbg-parted", Boolean(labels));
    let mark = group.querySelector(":scope > .nbg-parted-mark");
    if (!labels) {
      if (mark) mark.remove();
      delete group.dataset.parted;
      continue;
    }
    group.dataset.parted = labels.join(" ");
    if (!mark) {
      // Over the box's top-right corner, where a run's visit count would be (this view has none).
      mark = svg("text", { x: node.width, y: -4, "text-anchor": "end", class: "nbg-parted-mark" });
      group.appendChild(mark);
    }
    mark.textContent = `parts: ${labels.join(", ")}`;
  }
  for (const [key, entries] of drawing.edgeEls) {
    for (const { group } of entries) {
      for (const kind of KINDS) group.classList.toggle(`nbg-side-${kind}`, edges[key] === kind);
    }
  }
}

/**
 * The comparison beside the graph: a key to the colours, the frame table (the parting row
 * and the first differing row marked), and the state diff at the first difference.
 */
export function renderSides(el, sides, h) {
  el.replaceChildren();
  el.hidden = !sides || !Array.isArray(sides.rows);
  if (el.hidden) return;
  const [la, lb] = sides.labels || ["a", "b"];
  const [ta, tb] = sides.threads || [null, null];
  const [oa, ob] = sides.outcomes || [null, null];
  const key = h("div", "nbg-sides-key");
  key.append(
    swatch(h, "a", `${la} (${ta ?? "no thread"}, ${oa || "running"}) only`),
    swatch(h, "b", `${lb} (${tb ?? "no thread"}, ${ob || "running"}) only`),
    swatch(h, "both", "both runs"),
  );
  const summary = h(
    "p",
    "nbg-sides-summary",
    `${sides.parted_at == null ? "The paths never part" : `The paths part at frame ${sides.parted_at}`}; ${
      sides.differs_at == null ? "the states never differ" : `the states first differ at frame ${sides.differs_at}`
    }.`,
  );
  const table = h("table", "nbg-sides-table");
  const head = h("tr");
  for (const text of ["#", la, lb, ""]) {
    const th = h("th", "", text);
    th.scope = "col";
    head.append(th);
  }
  table.append(head);
  for (const row of sides.rows) {
    const tr = h("tr", "nbg-sides-row");
    tr.dataset.frame = String(row.frame);
    tr.classList.toggle("nbg-sides-parted", row.frame === sides.parted_at);
    tr.classList.toggle("nbg-sides-differs", row.frame === sides.differs_at);
    tr.classList.toggle("nbg-sides-other", !row.same_node);
    tr.append(
      h("td", "", String(row.frame)),
      h("td", "", cellText(row.a, row.frame)),
      h("td", "", cellText(row.b, row.frame)),
      h("td", "nbg-sides-note", rowNote(sides, row.frame)),
    );
    table.append(tr);
  }
  // A region of its own: a long table scrolls, and the keyboard reaches it (Tab, then arrows).
  const scroller = h("div", "nbg-sides-scroll");
  scroller.tabIndex = 0;
  scroller.setAttribute("role", "region");
  scroller.setAttribute("aria-label", `Frames of ${la} and ${lb} side by side`);
  scroller.append(table);
  const diff = h("div", "nbg-sides-diff");
  if (sides.differs_at == null) {
    diff.append(h("p", "", "The states never differ."));
  } else {
    diff.append(h("p", "", `The state after frame ${sides.differs_at}:`));
    const list = h("ul");
    for (const change of sides.changes || []) {
      const item = h("li", `nbg-sides-change nbg-sides-${change.kind}`, changeText(change, [la, lb]));
      item.dataset.field = change.field;
      list.append(item);
    }
    diff.append(list);
  }
  el.append(key, summary, scroller, diff);
}

function swatch(h, kind, text) {
  const item = h("span", `nbg-sides-swatch nbg-sides-swatch-${kind}`);
  item.append(h("span", "nbg-sides-line"), h("span", "", text));
  return item;
}
