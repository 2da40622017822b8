// Values shown in a pause box (a tool's arguments, what an approval changes, the state a node
// would run on): short ones on one line, long ones folded to their first line behind a
// <details>, so one long message does not push the buttons out of the side panel. A <summary>
// opens on a click, Enter or Space by itself, and is reached with Tab.
import { h } from "./dom.js";

/** A value longer than this (as compact JSON) folds. */
export const FOLD_CHARS = 160;
/** A text of more lines than this folds. */
export const FOLD_LINES = 6;
const HEAD_CHARS = 72;

/** A value as text: a string as itself (so a draft reads as prose), anything else as JSON. */
export function valueText(value, pretty = false) {
  if (typeof value === "string") return value === "" ? '""' : value;
  if (value === undefined) return "undefined";
  try {
    const text = pretty ? JSON.stringify(value, null, 2) : JSON.stringify(value);
    return text === undefined ? String(value) : text;
  } catch {
    return String(value); // (a cycle cannot come from JSON; said rather than thrown all the same)
  }
}

/**
 * How a value shows: `{folded: false, text}` on one line, or `{folded: true, head, text}`:
 * the first line (clipped) as the summary, and the whole of it, pretty-printed, once unfolded.
 */
export function folding(value) {
  const compact = valueText(value);
  const lines = compact.split("\n").length;
  if (compact.length <= FOLD_CHARS && lines <= FOLD_LINES) return { folded: false, text: compact };
  const first = compact.split("\n", 1)[0];
  const head = first.length > HEAD_CHARS ? `${first.slice(0, HEAD_CHARS)}\u2026` : `${first}\u2026`;
  const size = lines > FOLD_LINES ? `${lines} lines` : `${compact.length} chars`;
  return { folded: true, head, size, text: valueText(value, true) };
}

/** A folded block: the summary (`head`, and a muted size), then `body` once opened. */
export function foldBox(head, size, body, cls = "") {
  const details = h("details", `nbg-fold ${cls}`.trim());
  const summary = h("summary", "nbg-fold-head");
  summary.appendChild(h("span", "nbg-fold-text", head));
  if (size) summary.appendChild(h("span", "nbg-fold-size", ` (${size})`));
  details.append(summary, body);
  return details;
}

/** A value as an element: a <code> span when short, a folded block when long. */
export function valueView(value, cls = "") {
  const shown = folding(value);
  if (!shown.folded) return h("code", `nbg-value ${cls}`.trim(), shown.text);
  return foldBox(shown.head, shown.size, h("pre", "nbg-value nbg-value-full", shown.text), cls);
}
