// Top-to-bottom layout of a DAG-JSON graph with dagre. Pure: no DOM.
// A sub-graph node (kind "graph") is a frame: closed, a node like the others; open, a box
// sized to hold its own graph, laid out the same way (recursively) and placed inside it.
// Boxes are sized from their text (measured by the caller, estimated here otherwise), so
// labels fit their nodes, and edge labels are boxes dagre keeps clear of the nodes and of
// each other. A long label is wrapped and shortened (its full text is the edge's `label`).
// Self-loops are drawn here, not by dagre (whose loops stop short of their node): beside
// their node's right side, leaving and re-entering it. dagre keeps the room for them: a
// node's loops are given to it as one loop whose label is as large as they are with theirs.
import dagre from "@dagrejs/dagre";
import { orderLayers } from "./order.js";

export const START = "__start__";
export const END = "__end__";

/** Room around an open frame's graph: the title row above it, a margin around it. */
export const FRAME_HEAD = 26;
export const FRAME_PAD = 8;
/** Where a node's label starts (after the disclosure triangle on a frame). */
export const LABEL_X = 12;
export const FRAME_LABEL_X = 24;
const MIN_WIDTH = 88;
const BADGE_GAP = 3;
const LABEL_PAD = 10; // room around an edge label's text
/** An edge label is at most this many lines of this many characters, each line this tall. */
export const LABEL_CHARS = 32;
export const LABEL_LINES = 2;
export const LABEL_LINE_HEIGHT = 13;
/** A self-loop reaches this far right of its node, each further loop on it that much more. */
const LOOP_REACH = 22;
const LOOP_STEP = 14;
const LOOP_END = 8; // the first loop leaves and re-enters its node this far above and below the middle of its side
const LOOP_SPREAD = 4; // each further loop this much further out
const LOOP_LABEL_GAP = 16; // between the outermost loop and its labels (the batch view's counts sit on the loop)
const LABEL_STACK_GAP = 4; // between the labels of a node's loops
const LOOP_SAMPLES = 8; // a loop's route is its curve at this many even steps
const NODESEP = 36;
const EDGESEP = 16;

/**
 * Text widths when nothing measures them: node labels are 12px system-ui (7.2 px a
 * character covers most names), edge labels 10.5px monospace (0.6 em a character).
 * @param {string} text @param {"node"|"edge"} font
 */
export function estimateWidth(text, font) {
  return Math.ceil(String(text).length * (font === "edge" ? 6.4 : 7.2));
}

/** Display name of a node id. @param {string} id */
export function nodeTitle(id) {
  if (id === START) return "START";
  if (id === END) return "END";
  return id;
}

/** The key of an edge between two node paths (as the kernel counts fired edges). */
export function edgeKey(from, to) {
  return `${from}\u2192${to}`;
}

/** Whether a node is drawn as a frame that opens onto its sub-graph. */
export function isFrame(node) {
  return node.kind === "graph" && Boolean(node.graph);
}

/** The label drawn on an edge: conditions, routers and maps ("each item"); none on plain arrows. */
export function edgeLabel(edge) {
  if (edge.each) return edge.label || "each";
  return edge.unconditional ? "" : edge.label || "";
}

/**
 * An edge label as drawn: its words in lines of at most LABEL_CHARS characters, at most
 * LABEL_LINES of them, the last ending in an ellipsis when the text goes on. Conditions are
 * code: lines break at spaces, and a longer word after a dot or comma or before a bracket
 * where it has one (`state.context.get` / `("has_findings")`), else where it must.
 * @param {string} text
 */
export function labelLines(text) {
  const lines = [];
  let line = "";
  for (const word of String(text).split(/\s+/).filter(Boolean)) {
    if (line && line.length + 1 + word.length <= LABEL_CHARS) {
      line += ` ${word}`;
      continue;
    }
    if (line) lines.push(line);
    line = word;
    while (line.length > LABEL_CHARS) {
      // After a dot or comma, or before a bracket, whichever lets the line hold most.
      const cut = Math.max(line.lastIndexOf(".", LABEL_CHARS - 1) + 1, line.lastIndexOf(",", LABEL_CHARS - 1) + 1,
        line.lastIndexOf("(", LABEL_CHARS), line.lastIndexOf("[", LABEL_CHARS));
      const at = cut > LABEL_CHARS / 4 ? cut : LABEL_CHARS;
      lines.push(line.slice(0, at));
      line = line.slice(at);
    }
  }
  if (line) lines.push(line);
  if (lines.length <= LABEL_LINES) return lines;
  const kept = lines.slice(0, LABEL_LINES);
  kept[LABEL_LINES - 1] = `${kept[LABEL_LINES - 1].slice(0, LABEL_CHARS - 1).trimEnd()}\u2026`;
  return kept;
}

/** The box an edge's label takes: its lines, width and height (null for an edge without one). */
function labelBox(edge, measure) {
  const text = edgeLabel(edge);
  if (!text) return null;
  const lines = labelLines(text);
  const width = Math.ceil(Math.max(...lines.map((line) => measure(line, "edge")))) + LABEL_PAD;
  return { lines, width, height: 3 + LABEL_LINE_HEIGHT * lines.length };
}

/** `count` + 1 points along a cubic Bezier curve, evenly in its parameter. */
function cubicPoints(p0, p1, p2, p3, count) {
  const points = [];
  for (let i = 0; i <= count; i++) {
    const t = i / count;
    const [a, b, c, d] = [(1 - t) ** 3, 3 * (1 - t) ** 2 * t, 3 * (1 - t) * t ** 2, t ** 3];
    points.push({ x: a * p0.x + b * p1.x + c * p2.x + d * p3.x, y: a * p0.y + b * p1.y + c * p2.y + d * p3.y });
  }
  return points;
}

/**
 * The self-loops of a node of `size`, around its centre: each loop leaves the node's right
 * side above its middle and re-enters it below, each further loop outside the one before
 * (they never cross); their labels stand in a column right of the outermost one. Returns
 * the room they take right of the node (`extra`), the height they need, and each loop's
 * points and label box relative to the node's centre.
 * @param {{width: number, height: number}} size @param {Array<object>} loops the node's self-loop edges
 */
function loopsBeside(size, loops, measure) {
  const half = size.height / 2;
  const spread = loops.length > 1 ? Math.min(LOOP_SPREAD, (half - LOOP_END - 4) / (loops.length - 1)) : 0;
  const right = size.width / 2;
  const reach = LOOP_REACH + (loops.length - 1) * LOOP_STEP;
  const boxes = loops.map((edge) => labelBox(edge, measure));
  const labelled = boxes.filter(Boolean);
  const stack = labelled.reduce((sum, box) => sum + box.height, 0) + LABEL_STACK_GAP * Math.max(0, labelled.length - 1);
  let top = -stack / 2;
  const routes = loops.map((edge, k) => {
    const end = LOOP_END + k * spread;
    const out = (LOOP_REACH + k * LOOP_STEP) / 0.75; // a cubic whose middle control points are this far out reaches 3/4 of it
    const points = cubicPoints(
      { x: right, y: -end }, { x: right + out, y: -2 * end }, { x: right + out, y: 2 * end }, { x: right, y: end }, LOOP_SAMPLES,
    );
    const box = boxes[k];
    if (!box) return { points, box };
    const placed = { ...box, x: right + reach + LOOP_LABEL_GAP + box.width / 2, y: top + box.height / 2 };
    top += box.height + LABEL_STACK_GAP;
    return { points, box: placed };
  });
  const extent = Math.max(...routes.flatMap((route) => route.points.map((p) => Math.abs(p.y))));
  const widest = Math.max(0, ...labelled.map((box) => box.width));
  return { extra: reach + LOOP_LABEL_GAP + widest, height: Math.max(size.height, Math.ceil(2 * extent) + 4, stack + 4), routes };
}

/**
 * An edge's end on the right side of a node with loops, where the loops are, moved to the
 * side (top or bottom) facing `toward`, where the line from `toward` to the node's middle
 * crosses it, kept off the corners. Other ends are left where they are.
 */
function clearOfLoops(node, end, toward) {
  const right = node.x + node.width / 2;
  if (end.x < right - 0.5) return end;
  const y = node.y + ((toward.y < node.y ? -1 : 1) * node.height) / 2;
  const x = toward.y === node.y ? right : toward.x + ((node.x - toward.x) * (toward.y - y)) / (toward.y - node.y);
  return { x: Math.min(right - 8, Math.max(node.x - node.width / 2 + 8, x)), y };
}

/**
 * A node's badges, right-aligned in its box: [text, kind, description, width].
 * Glyphs from the basic symbol blocks, which every desktop font covers (emoji are not).
 */
export function badgesOf(node) {
  const badges = [];
  if (node.kind === "llm") badges.push(["LLM", "llm", "LLM node"]);
  if (node.tools && node.tools.length) badges.push([`\u2699${node.tools.length}`, "tools", `tools: ${node.tools.join(", ")}`]);
  if (node.approval) badges.push(["\u2713", "approval", node.approval === "before" ? "asks for approval before it runs" : "asks for approval"]);
  return badges.map((badge) => [...badge, badge[0].length > 2 ? 26 : 18]);
}

/** Width and height of a node drawn closed: its label and badges fit inside, with room between. */
export function closedSize(node, measure = estimateWidth) {
  if (node.id === START || node.id === END) return { width: 72, height: 28 };
  const badges = badgesOf(node);
  const text = measure(nodeTitle(node.id), "node");
  const right = badges.length ? 8 + badges.reduce((sum, badge) => sum + badge[3] + BADGE_GAP, -BADGE_GAP) + 8 : 16;
  const width = (isFrame(node) ? FRAME_LABEL_X : LABEL_X) + Math.ceil(text) + right;
  return { width: Math.max(MIN_WIDTH, width), height: isFrame(node) ? 40 : 36 };
}

/**
 * The graph a view's `dag` trait holds, or null while it holds none yet: a front-end may draw a
 * view from the model's first state, before the kernel has set its graph (Voilà's progressive
 * rendering does), and the view draws it once it arrives.
 * @param {any} dag
 * @returns {{nodes: Array<object>, edges: Array<object>, name?: string} | null}
 */
export function graphOf(dag) {
  return dag && Array.isArray(dag.nodes) && Array.isArray(dag.edges) ? dag : null;
}

/**
 * Lay out nodes and edges top to bottom; frames whose path is in `open` hold their graph.
 * Node `path`s (and edge keys) are prefixed with the frames they sit in: `research/search`.
 * Node widths come from `measure(text, "node" | "edge")` (the browser passes one that
 * measures with the view's fonts; the default estimates). Each edge has its `points` (a
 * self-loop's go round beside its node), and its label's `lines` and `labelBox` (centre
 * and size; null for an edge without a label).
 * @param {{nodes: Array<object>, edges: Array<object>}} dag
 * @param {Set<string>} [open] paths of the open frames
 * @param {{prefix?: string, measure?: (text: string, font: "node"|"edge") => number}} [options]
 *   prefix: the path of the level being laid out, with a trailing "/"
 * @returns {{width: number, height: number, prefix: string, nodes: Array<object>, edges: Array<object>, joins: Array<object>}}
 */
export function layoutGraph(dag, open = new Set(), { prefix = "", measure = estimateWidth } = {}) {
  const g = new dagre.graphlib.Graph({ multigraph: true });
  g.setGraph({ rankdir: "TB", nodesep: NODESEP, ranksep: 48, edgesep: EDGESEP, marginx: 12, marginy: 12 });
  g.setDefaultEdgeLabel(() => ({}));
  const inner = new Map();
  const loops = new Map(); // node id -> its self-loops beside it
  for (const edge of dag.edges) {
    if (edge.from !== edge.to) continue;
    if (!loops.has(edge.from)) loops.set(edge.from, []);
    loops.get(edge.from).push(edge);
  }
  const beside = new Map();
  for (const node of dag.nodes) {
    const path = prefix + node.id;
    let size = closedSize(node, measure);
    if (isFrame(node) && open.has(path)) {
      const laid = layoutGraph(node.graph, open, { prefix: `${path}/`, measure });
      inner.set(node.id, laid);
      size = { width: Math.max(size.width, laid.width + 2 * FRAME_PAD), height: laid.height + FRAME_HEAD + FRAME_PAD };
    }
    g.setNode(node.id, size);
    if (loops.has(node.id)) beside.set(node.id, loopsBeside(size, loops.get(node.id), measure));
  }
  for (const [id, room] of beside) {
    // dagre puts a loop's label box right after its node, (NODESEP + EDGESEP) / 2 from it.
    const width = Math.max(1, room.extra - (NODESEP + EDGESEP) / 2);
    g.setEdge(id, id, { width, height: room.height, labelpos: "c" }, "loops");
  }
  const boxes = new Map();
  dag.edges.forEach((edge, index) => {
    if (edge.from === edge.to || !g.hasNode(edge.from) || !g.hasNode(edge.to)) return;
    const box = labelBox(edge, measure);
    if (box) boxes.set(index, box);
    g.setEdge(edge.from, edge.to, box ? { width: box.width, height: box.height, labelpos: "c" } : {}, `e${index}`);
  });
  dagre.layout(g, { customOrder: orderLayers });
  const graph = g.graph();
  const nodes = dag.nodes
    .filter((node) => g.hasNode(node.id))
    .map((node) => {
      const box = g.node(node.id);
      const laid = { ...node, path: prefix + node.id, x: box.x, y: box.y, width: box.width, height: box.height };
      if (inner.has(node.id)) laid.inner = inner.get(node.id);
      return laid;
    });
  const at = new Map(nodes.map((node) => [node.id, node]));
  const loopRoutes = new Map([...beside].flatMap(([id, room]) => loops.get(id).map((edge, k) => [edge, room.routes[k]])));
  const edges = [];
  const joins = new Map();
  dag.edges.forEach((edge, index) => {
    const source = at.get(edge.from);
    const target = at.get(edge.to);
    if (!source || !target) return;
    const drawn = { ...edge, key: edgeKey(prefix + edge.from, prefix + edge.to) };
    if (edge.from === edge.to) {
      const { points, box } = loopRoutes.get(edge);
      edges.push(withLabel({ ...drawn, points: points.map((p) => ({ x: source.x + p.x, y: source.y + p.y })) }, box, source));
      return;
    }
    const laid = g.edge({ v: edge.from, w: edge.to, name: `e${index}` });
    const points = laid.points.map((p) => ({ x: p.x, y: p.y }));
    if (beside.has(edge.from)) points[0] = clearOfLoops(source, points[0], points[1]);
    if (beside.has(edge.to)) points[points.length - 1] = clearOfLoops(target, points[points.length - 1], points[points.length - 2]);
    const downward = source.y < target.y;
    // The arms of a fan-out leave from one point, the arms of a join meet at one point.
    if (edge.fanout && edge.fanout.length > 1 && downward) points[0] = { x: source.x, y: source.y + source.height / 2 };
    if (edge.join && edge.join.length > 1 && downward) {
      const meet = { x: target.x, y: target.y - target.height / 2 };
      points[points.length - 1] = meet;
      joins.set(edge.to, { node: prefix + edge.to, x: meet.x, y: meet.y, width: Math.min(40, target.width - 16) });
    }
    edges.push(withLabel({ ...drawn, points }, boxes.has(index) ? { ...boxes.get(index), x: laid.x, y: laid.y } : null));
  });
  return { width: graph.width || 0, height: graph.height || 0, prefix, nodes, edges, joins: [...joins.values()] };
}

/**
 * An edge with its label's lines and box (`labelBox`: centre and size, in the level's
 * coordinates; `origin`: the node a loop's box is relative to), or with none.
 */
function withLabel(edge, box, origin = { x: 0, y: 0 }) {
  if (!box) return { ...edge, lines: [], labelX: null, labelY: null, labelBox: null };
  const x = origin.x + box.x;
  const y = origin.y + box.y;
  return { ...edge, lines: box.lines, labelX: x, labelY: y, labelBox: { x, y, width: box.width, height: box.height } };
}

/**
 * What a map target's badge says about its branches: "3/4" and the failed count.
 * @param {{total?: number, done?: number, failed?: number, running?: number, paused?: number, waiting?: number}} p
 */
export function progressLabel(p) {
  const total = p.total || 0;
  const failed = p.failed || 0;
  const text = `${p.done || 0}/${total}`;
  const parts = ["done", "failed", "running", "paused", "waiting"].filter((name) => p[name]).map((name) => `${p[name]} ${name}`);
  const title = `${total} branch${total === 1 ? "" : "es"}: ${parts.join(", ") || "none yet"}`;
  return { text, failed: failed ? `\u2717${failed}` : "", title, settled: (p.done || 0) + failed === total };
}
