// The run's decisions, as a person reads them: who decided what, where, when, through which
// door, why, and what they changed; at an earlier frame of the replay, those made up to it.
// And the standing approvals in force, each with a Revoke button.
import { h } from "./dom.js";
import { valueText } from "./fold.js";

const VIA = {
  view: "in the view",
  code: "from code",
  resume: "on resume",
  magic: "by a magic",
  langgraph: "at the LangGraph door",
  deadline: "by the deadline",
  standing: "by a standing approval",
};

/** The door a decision came through, in words. */
export function viaText(via) {
  return VIA[via] || via || "";
}

/** What a decision was about: the tools it decided on and their node, or the node. */
function about(row) {
  const tools = row.tools || [];
  return tools.length ? `${tools.join(", ")} in ${row.path}` : row.path;
}

/** A decision's head: "alice approved refund in agent", and what it set up if it stands. */
export function decisionLine(row) {
  const head = `${row.by} ${row.verdict} ${about(row)}`;
  if (!row.stands) return head;
  const tools = row.tools || [];
  const tool = tools.length === 1 ? tools[0] : "this tool";
  return `${head}, and every later ${tool} call in this ${row.stands}`;
}

/** The time of an ISO timestamp, as this browser's clock reads it (HH:MM:SS). */
export function clockOf(at) {
  const when = new Date(at);
  if (Number.isNaN(when.getTime())) return at || "";
  return [when.getHours(), when.getMinutes(), when.getSeconds()].map((n) => String(n).padStart(2, "0")).join(":");
}

/** An edit, in words: "refund.amount: 200 → 150". */
export function editLine(edit) {
  return `${edit.field}: ${valueText(edit.before)} \u2192 ${valueText(edit.after)}`;
}

/** The decisions shown at replay frame `frame` (null: the run as it is, all of them). */
export function decisionsUpTo(rows, frame) {
  if (frame === null || frame === undefined) return rows;
  return rows.filter((row) => row.frame !== null && row.frame !== undefined && row.frame <= frame);
}

/** "Decisions (2)"; at a frame, "Decisions up to frame 3 (1 of 2)". */
export function decisionsTitle(shown, all, frame) {
  if (frame === null || frame === undefined) return `Decisions (${all})`;
  return `Decisions up to frame ${frame} (${shown} of ${all})`;
}

function decisionView(row) {
  const item = h("li", "nbg-decision");
  item.dataset.pause = row.pause_id;
  item.dataset.via = row.via;
  item.dataset.verdict = row.verdict;
  item.appendChild(h("div", "nbg-decision-head", decisionLine(row)));
  const meta = h("div", "nbg-decision-meta");
  meta.append(`step ${row.step}${row.branch ? ` \u00B7 branch ${row.branch}` : ""} \u00B7 ${viaText(row.via)}`);
  const when = h("span", "nbg-decision-when", " \u00B7 ");
  const time = h("time", "nbg-decision-at", clockOf(row.at));
  time.dateTime = row.at;
  time.title = row.at;
  when.appendChild(time);
  meta.appendChild(when);
  item.appendChild(meta);
  if (row.reason) item.appendChild(h("div", "nbg-decision-reason", row.reason));
  if (row.edits && row.edits.length) {
    const edits = h("ul", "nbg-decision-edits");
    for (const edit of row.edits) edits.appendChild(h("li", "nbg-decision-edit", editLine(edit)));
    item.appendChild(edits);
  }
  return item;
}

/**
 * The "Decisions" panel: a disclosure (open) listing the run's decisions, newest last.
 * `show(log, frame)`: the view's `decisions` trait, and the replay frame shown (null: the run as it is).
 */
export function createDecisions() {
  const el = h("details", "nbg-decisions");
  el.open = true;
  const summary = h("summary", "nbg-decisions-title");
  const list = h("ol", "nbg-decision-list");
  const earlier = h("div", "nbg-decisions-earlier");
  el.append(summary, earlier, list);
  el.hidden = true;
  return {
    el,
    show(log, frame) {
      const rows = (log && log.rows) || [];
      const shown = decisionsUpTo(rows, frame);
      el.hidden = rows.length === 0;
      summary.textContent = decisionsTitle(shown.length, rows.length, frame);
      const left = (log && log.earlier) || 0;
      earlier.hidden = !left;
      earlier.textContent = left ? `${left} earlier decision${left === 1 ? "" : "s"} not listed: run.decisions has them all` : "";
      list.replaceChildren(...shown.map(decisionView));
      list.scrollTop = list.scrollHeight;
    },
  };
}

/** A standing approval, in words: "refund: every later call in this run, by alice: small amounts". */
export function standingLine(row) {
  const where = row.when ? ` with ${row.when}` : "";
  const why = row.reason ? `: ${row.reason}` : "";
  return `${row.tool}: every later call${where} in this ${row.scope}, approved by ${row.by}${why}`;
}

/**
 * The standing approvals in force, each with a Revoke button that sends `revoke` (and waits,
 * disabled, for the list to change); hidden when there are none or the run has ended.
 */
export function renderStanding(el, rows, send, going) {
  const shown = going ? rows || [] : [];
  el.hidden = shown.length === 0;
  const title = h("div", "nbg-section-title", "Standing approvals");
  const list = h("ul", "nbg-standing-list");
  for (const row of shown) {
    const item = h("li", "nbg-standing-item");
    item.dataset.standing = row.id;
    item.dataset.tool = row.tool;
    item.appendChild(h("span", "nbg-standing-text", standingLine(row)));
    const revoke = h("button", "nbg-button nbg-deny nbg-revoke", "Revoke");
    revoke.setAttribute("aria-label", `Revoke the standing approval of ${row.tool}`);
    revoke.title = `Later ${row.tool} calls wait for a person again`;
    revoke.addEventListener("click", () => {
      revoke.disabled = true;
      send({ type: "revoke", standing: row.id });
    });
    item.appendChild(revoke);
    list.appendChild(item);
  }
  el.replaceChildren(title, list);
}
