// Top-to-bottom layout of a DAG-JSON graph with dagre. Pure: no DOM.
// A sub-graph node (kind "graph") is a frame: closed, a node like the others; open, a box
// sized to hold its own graph, laid out the same way (recursively) and placed inside it.
// Boxes are sized from their text (measured by the caller, estimated here otherwise), so
// labels fit their nodes, and edge labels are boxes dagre keeps clear of the nodes.
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
 * A node's badges, right-aligned in its box: [text, kind, description, width].
 * Glyphs from the basic symbol blocks, which every desktop font covers (emoji are not).
 */
export function badgesOf(node) {
  const badges = [];
  if (node.kind === "llm") badges.push(["LLM", "llm", "LLM node"]);
  if (node.tools && node.tools.length) badges.push([`\u2699${node.tools.length}`, "tools", `tools: ${node.tools.join(", ")}`]);
  if (node.approval) badges.push(["\u2713", "approval", "asks for approval"]);
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
 * Lay out nodes and edges top to bottom; frames whose path is in `open` hold their graph.
 * Node `path`s (and edge keys) are prefixed with the frames they sit in: `research/search`.
 * Node widths come from `measure(text, "node" | "edge")` (the browser passes one that
 * measures with the view's fonts; the default estimates).
 * @param {{nodes: Array<object>, edges: Array<object>}} dag
 * @param {Set<string>} [open] paths of the open frames
 * @param {{prefix?: string, measure?: (text: string, font: "node"|"edge") => number}} [options]
 *   prefix: the path of the level being laid out, with a trailing "/"
 * @returns {{width: number, height: number, prefix: string, nodes: Array<object>, edges: Array<object>, joins: Array<object>}}
 */
export function layoutGraph(dag, open = new Set(), { prefix = "", measure = estimateWidth } = {}) {
  const g = new dagre.graphlib.Graph({ multigraph: true });
  g.setGraph({ rankdir: "TB", nodesep: 36, ranksep: 48, edgesep: 16, marginx: 12, marginy: 12 });
  g.setDefaultEdgeLabel(() => ({}));
  const inner = new Map();
  for (const node of dag.nodes) {
    const path = prefix + node.id;
    let size = closedSize(node, measure);
    if (isFrame(node) && open.has(path)) {
      const laid = layoutGraph(node.graph, open, { prefix: `${path}/`, measure });
      inner.set(node.id, laid);
      size = { width: Math.max(size.width, laid.width + 2 * FRAME_PAD), height: laid.height + FRAME_HEAD + FRAME_PAD };
    }
    g.setNode(node.id, size);
  }
  dag.edges.forEach((edge, index) => {
    if (!g.hasNode(edge.from) || !g.hasNode(edge.to)) return;
    const label = edgeLabel(edge);
    g.setEdge(
      edge.from,
      edge.to,
      label ? { width: Math.ceil(measure(label, "edge")) + LABEL_PAD, height: 16, labelpos: "c" } : {},
      `e${index}`,
    );
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
  const edges = [];
  const joins = new Map();
  dag.edges.forEach((edge, index) => {
    const laid = g.edge({ v: edge.from, w: edge.to, name: `e${index}` });
    if (!laid) return;
    const points = laid.points.map((p) => ({ x: p.x, y: p.y }));
    const source = at.get(edge.from);
    const target = at.get(edge.to);
    const downward = source.y < target.y;
    // The arms of a fan-out leave from one point, the arms of a join meet at one point.
    if (edge.fanout && edge.fanout.length > 1 && downward) points[0] = { x: source.x, y: source.y + source.height / 2 };
    if (edge.join && edge.join.length > 1 && downward) {
      const meet = { x: target.x, y: target.y - target.height / 2 };
      points[points.length - 1] = meet;
      joins.set(edge.to, { node: prefix + edge.to, x: meet.x, y: meet.y, width: Math.min(40, target.width - 16) });
    }
    edges.push({
      ...edge,
      key: edgeKey(prefix + edge.from, prefix + edge.to),
      points,
      labelX: laid.x,
      labelY: laid.y,
    });
  });
  return { width: graph.width || 0, height: graph.height || 0, prefix, nodes, edges, joins: [...joins.values()] };
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
