// Top-to-bottom layout of a DAG-JSON graph with dagre. Pure: no DOM.
import dagre from "@dagrejs/dagre";

export const START = "__start__";
export const END = "__end__";

const CHAR_WIDTH = 7.2; // 12px system-ui, measured average
const LABEL_CHAR_WIDTH = 6.2;

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

/**
 * Lay out nodes and edges top to bottom.
 * @param {{nodes: Array<{id: string, kind?: string}>, edges: Array<{from: string, to: string, label?: string|null, unconditional?: boolean}>}} dag
 * @returns {{width: number, height: number, nodes: Array<object>, edges: Array<object>}}
 */
export function layoutGraph(dag) {
  const g = new dagre.graphlib.Graph({ multigraph: true });
  g.setGraph({ rankdir: "TB", nodesep: 36, ranksep: 48, edgesep: 16, marginx: 12, marginy: 12 });
  g.setDefaultEdgeLabel(() => ({}));
  for (const node of dag.nodes) {
    const terminal = node.id === START || node.id === END;
    const badges = (node.kind === "llm" ? 1 : 0) + (node.tools && node.tools.length ? 1 : 0) + (node.approval ? 1 : 0);
    const width = terminal ? 72 : Math.max(88, textWidth(node.id, CHAR_WIDTH) + 28 + badges * 22);
    g.setNode(node.id, { width, height: terminal ? 28 : 36 });
  }
  dag.edges.forEach((edge, index) => {
    if (!g.hasNode(edge.from) || !g.hasNode(edge.to)) return;
    const label = edge.unconditional ? "" : edge.label || "";
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
      return { ...node, x: box.x, y: box.y, width: box.width, height: box.height };
    });
  const edges = [];
  dag.edges.forEach((edge, index) => {
    const laid = g.edge({ v: edge.from, w: edge.to, name: `e${index}` });
    if (!laid) return;
    edges.push({
      ...edge,
      key: `${edge.from}\u2192${edge.to}`,
      points: laid.points.map((p) => ({ x: p.x, y: p.y })),
      labelX: laid.x,
      labelY: laid.y,
    });
  });
  return { width: graph.width || 0, height: graph.height || 0, nodes, edges };
}
