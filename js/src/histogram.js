// The batch view's arithmetic: edge widths by count, where a count sits on an edge, the
// counts line, and how two versions' counts on an edge compare. Pure: no DOM.

export const THIN = 1.2; // an edge no run took
const WIDEST = 9; // the edge most runs took

/**
 * Stroke width of an edge `count` runs took, when the busiest edge took `max`: by area
 * (square root), so a 4x busier edge is twice as wide; 0 runs draw a thin line.
 * @param {number} count @param {number} max
 */
export function edgeWidth(count, max) {
  if (!count || !max) return THIN;
  return Math.round((2 + (WIDEST - 2) * Math.sqrt(Math.min(count, max) / max)) * 10) / 10;
}

/**
 * The point `fraction` of the way along a polyline (by length).
 * @param {Array<{x: number, y: number}>} points @param {number} fraction
 */
export function pointAlong(points, fraction) {
  if (!points.length) return { x: 0, y: 0 };
  const lengths = [];
  let total = 0;
  for (let i = 1; i < points.length; i++) {
    const length = Math.hypot(points[i].x - points[i - 1].x, points[i].y - points[i - 1].y);
    lengths.push(length);
    total += length;
  }
  let left = total * Math.min(Math.max(fraction, 0), 1);
  for (let i = 1; i < points.length; i++) {
    const length = lengths[i - 1];
    if (left <= length || i === points.length - 1) {
      const t = length ? Math.min(left / length, 1) : 0;
      return { x: points[i - 1].x + (points[i].x - points[i - 1].x) * t, y: points[i - 1].y + (points[i].y - points[i - 1].y) * t };
    }
    left -= length;
  }
  return { ...points[0] };
}

/**
 * Where an edge's count goes: halfway (a loop's outermost point), or a quarter of the way
 * when its condition's label sits halfway (a loop's label stands beside the loop).
 */
export function countPlace(edge, labelled) {
  return pointAlong(edge.points || [], labelled && edge.from !== edge.to ? 0.25 : 0.5);
}

/** The busiest edge's count. @param {Record<string, number>} counts */
export function busiest(counts) {
  return Object.values(counts || {}).reduce((max, n) => Math.max(max, n || 0), 0);
}

/** A cost in dollars, with as many decimals as small amounts need. */
export function formatCost(cost) {
  const value = Number(cost) || 0;
  return `$${value >= 1 ? value.toFixed(2) : value.toFixed(4)}`;
}

/**
 * The counts line of a batch: [name, value] pairs in the order shown.
 * @param {{total?: number, ended?: number, done?: number, failed?: number, running?: number, waiting?: number,
 *   throughput?: number, tokens?: number, cost?: number}} c
 */
export function countStats(c) {
  const other = (c.ended || 0) - (c.done || 0) - (c.failed || 0);
  const stats = [
    ["ended", `${c.ended || 0} / ${c.total || 0}`],
    ["done", String(c.done || 0)],
    ["failed", String(c.failed || 0)],
    ["running", String(c.running || 0)],
    ["waiting", String(c.waiting || 0)],
  ];
  if (other > 0) stats.push(["other", String(other)]); // aborted, interrupted, skipped ...
  stats.push(["runs/s", (c.throughput || 0).toFixed(1)], ["tokens", String(c.tokens || 0)], ["cost", formatCost(c.cost)]);
  return stats;
}

/**
 * How two versions' counts on one edge compare: which took it, and its label.
 * @param {{a?: number, b?: number}} counts
 * @returns {{side: "a"|"b"|"both"|"none", text: string, title: string}}
 */
export function compareEdge(counts) {
  const a = (counts && counts.a) || 0;
  const b = (counts && counts.b) || 0;
  const runs = (n) => `${n} run${n === 1 ? "" : "s"}`;
  if (a && b) return { side: "both", text: a === b ? String(a) : `${a}\u2192${b}`, title: `both versions: ${runs(a)} before, ${runs(b)} after` };
  if (a) return { side: "a", text: `\u2212${a}`, title: `only the old version: ${runs(a)}` };
  if (b) return { side: "b", text: `+${b}`, title: `only the new version: ${runs(b)}` };
  return { side: "none", text: "", title: "no run took it" };
}

/** A path of nodes as one line of text. @param {string[]} path */
export function pathText(path) {
  return (path || []).length ? path.join(" \u2192 ") : "(none)";
}

/** The title of an edge from its key ("a→b"), START and END by name. */
export function edgeTitle(key) {
  const name = (id) => (id === "__start__" ? "START" : id === "__end__" ? "END" : id);
  const [source, target] = String(key).split("\u2192");
  return `${name(source)} \u2192 ${name(target)}`;
}
