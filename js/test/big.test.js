import { test } from "node:test";
import assert from "node:assert/strict";
import dagre from "@dagrejs/dagre";
import { FRAME_LABEL_X, LABEL_X, badgesOf, closedSize, edgeLabel, estimateWidth, isFrame, layoutGraph, nodeTitle } from "../src/layout.js";
import { orderLayers } from "../src/order.js";
import { bigGraph, chainGraph } from "./graphs.js";

const overlap = (a, b) => Math.abs(a.x - b.x) < (a.width + b.width) / 2 && Math.abs(a.y - b.y) < (a.height + b.height) / 2;

function labelBoxes(laid, measure = estimateWidth) {
  return laid.edges.filter((e) => edgeLabel(e)).map((e) => ({
    key: e.key, x: e.labelX, y: e.labelY, width: measure(edgeLabel(e), "edge") + 8, height: 14,
  }));
}

for (const [name, dag] of [["200 nodes with branches and cycles", bigGraph(200)], ["a 40-node chain", chainGraph(40)]]) {
  test(`${name}: no node overlaps another, and no edge label overlaps a node`, () => {
    const laid = layoutGraph(dag);
    assert.equal(laid.nodes.length, dag.nodes.length);
    assert.equal(laid.edges.length, dag.edges.length);
    for (let i = 0; i < laid.nodes.length; i++) {
      for (let j = i + 1; j < laid.nodes.length; j++) {
        assert.ok(!overlap(laid.nodes[i], laid.nodes[j]), `${laid.nodes[i].id} overlaps ${laid.nodes[j].id}`);
      }
    }
    const labels = labelBoxes(laid);
    assert.ok(labels.length >= 9);
    for (const label of labels) {
      assert.ok(Number.isFinite(label.x) && Number.isFinite(label.y), `label of ${label.key} is placed`);
      for (const node of laid.nodes) assert.ok(!overlap(label, node), `label of ${label.key} overlaps ${node.id}`);
    }
  });
}

test("a node's box holds its label and its badges, with room between them", () => {
  const nodes = [
    ...bigGraph(200).nodes,
    { id: "a_rather_long_node_name_for_a_model_call", kind: "llm", tools: Array(12).fill("t"), approval: true },
    { id: "W".repeat(30), kind: "function" },
    { id: "research", kind: "graph", graph: chainGraph(3) },
  ];
  for (const node of nodes) {
    if (node.id.startsWith("__")) continue;
    const { width } = closedSize(node);
    const badges = badgesOf(node);
    const text = (isFrame(node) ? FRAME_LABEL_X : LABEL_X) + estimateWidth(nodeTitle(node.id), "node");
    const right = badges.reduce((sum, badge) => sum + badge[3] + 3, 0);
    assert.ok(text + 8 + right + 5 <= width, `${node.id}: ${text} + badges ${right} in ${width}`);
  }
});

test("node boxes follow the measured text: a wider font gives wider boxes and labels", () => {
  const dag = chainGraph(8);
  const plain = layoutGraph(dag);
  const wide = layoutGraph(dag, new Set(), { measure: (text, font) => 2 * estimateWidth(text, font) });
  const width = (laid, id) => laid.nodes.find((n) => n.id === id).width;
  assert.ok(width(wide, "step_03") > width(plain, "step_03") + 40);
  for (const label of labelBoxes(wide, (text, font) => 2 * estimateWidth(text, font))) {
    for (const node of wide.nodes) assert.ok(!overlap(label, node), `label of ${label.key} overlaps ${node.id}`);
  }
});

/** Edge crossings of dagre's ordering, once long edges are split into one-rank pieces. */
function crossingsOf(dag, order) {
  const g = new dagre.graphlib.Graph({ multigraph: true });
  g.setGraph({ rankdir: "TB", nodesep: 36, ranksep: 48, edgesep: 16 });
  g.setDefaultEdgeLabel(() => ({}));
  for (const node of dag.nodes) g.setNode(node.id, { width: 120, height: 36 });
  dag.edges.forEach((e, i) => g.setEdge(e.from, e.to, e.label ? { width: 100, height: 16, labelpos: "c" } : {}, `e${i}`));
  let count = 0;
  dagre.layout(g, {
    customOrder(graph, dagreOrder) {
      if (order) order(graph);
      else dagreOrder(graph);
      const layers = [];
      for (const v of graph.nodes()) {
        const node = graph.node(v);
        (layers[node.rank] ||= [])[node.order] = v;
      }
      for (const layer of layers) if (layer) assert.equal(layer.filter(Boolean).length, layer.length, "orders 0..n-1 in each rank");
      for (let r = 0; r + 1 < layers.length; r++) {
        const pairs = [];
        for (const v of layers[r] || []) {
          for (const w of graph.successors(v)) if (graph.node(w).rank === r + 1) pairs.push([graph.node(v).order, graph.node(w).order]);
        }
        for (let i = 0; i < pairs.length; i++) {
          for (let j = i + 1; j < pairs.length; j++) if ((pairs[i][0] - pairs[j][0]) * (pairs[i][1] - pairs[j][1]) < 0) count++;
        }
      }
    },
  });
  return count;
}

test("the array-based ordering crosses no more edges than dagre's own", () => {
  for (const dag of [bigGraph(200), bigGraph(60, 3), bigGraph(120, 11), chainGraph(40)]) {
    const ours = crossingsOf(dag, orderLayers);
    const theirs = crossingsOf(dag, null);
    assert.ok(ours <= theirs, `${dag.name}: ${ours} crossings, dagre's ${theirs}`);
  }
  assert.equal(crossingsOf(chainGraph(40), orderLayers), 0);
});
