// Top-to-bottom layout of a DAG-JSON graph with dagre. Pure: no DOM.
// A sub-graph node (kind "graph") is a frame: closed, a node like the others; open, a box
// sized to hold its own graph, laid out the same way (recursively) and placed inside it.
import dagre from "@dagrejs/dagre";

export const START = "__start__";
export const END = "__end__";

const CHAR_WIDTH = 7.2; // 12px system-ui, measured average
const LABEL_CHAR_WIDTH = 6.2;
/** Room around an open frame's graph: the title row above it, a margin around it. */
export const FRAME_HEAD = 26;
export const FRAME_PAD = 8;

/** @param {string} text @param {number} perChar */
function textWidth(text, perChar) {
  return Math.ceil(String(text).length * perChar);
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

function closedSize(node) {
  if (node.id === START || node.id === END) return { width: 72, height: 28 };
  const badges = (node.kind === "llm" ? 1 : 0) + (node.tools && node.tools.length ? 1 : 0) + (node.approval ? 1 : 0);
  const glyph = isFrame(node) ? 16 : 0; // the disclosure triangle
  return { width: Math.max(88, textWidth(node.id, CHAR_WIDTH) + 28 + glyph + badges * 22), height: isFrame(node) ? 40 : 36 };
}

/**
 * Lay out nodes and edges top to bottom; frames whose path is in `open` hold their graph.
 * Node `path`s (and edge keys) are prefixed with the frames they sit in: `research/search`.
 * @param {{nodes: Array<object>, edges: Array<object>}} dag
 * @param {Set<string>} [open] paths of the open frames
 * @param {string} [prefix] the path of the level being laid out, with a trailing "/"
 * @returns {{width: number, height: number, prefix: string, nodes: Array<object>, edges: Array<object>, joins: Array<object>}}
 */
export function layoutGraph(dag, open = new Set(), prefix = "") {
  const g = new dagre.graphlib.Graph({ multigraph: true });
  g.setGraph({ rankdir: "TB", nodesep: 36, ranksep: 48, edgesep: 16, marginx: 12, marginy: 12 });
  g.setDefaultEdgeLabel(() => ({}));
  const inner = new Map();
  for (const node of dag.nodes) {
    const path = prefix + node.id;
    let size = closedSize(node);
    if (isFrame(node) && open.has(path)) {
      const laid = layoutGraph(node.graph, open, `${path}/`);
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
      label ? { width: textWidth(label, LABEL_CHAR_WIDTH) + 10, height: 16, labelpos: "c" } : {},
      `e${index}`,
    );
  });
  dagre.layout(g);
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
