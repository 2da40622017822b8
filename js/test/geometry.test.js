import { test } from "node:test";
import assert from "node:assert/strict";
import { FRAME_HEAD, LABEL_CHARS, LABEL_LINES, edgeLabel, estimateWidth, labelLines, layoutGraph } from "../src/layout.js";
import { borderDistance, geometryProblems, laidDrawing } from "./geometry.js";
import { agentGraph, bigGraph, branchesGraph, chainGraph, loopsGraph } from "./graphs.js";

const HARD = [
  ["an agent that calls itself, with long conditions", agentGraph(), new Set()],
  ["loops: two on one node, a goto, one in an open sub-graph", loopsGraph(), new Set(["review"])],
  ["branches, a map and open sub-graphs two deep", branchesGraph(), new Set(["research", "research/deep"])],
  ["200 nodes with branches and cycles", bigGraph(200), new Set()],
  ["120 other nodes", bigGraph(120, 11), new Set()],
  ["a 40-node chain", chainGraph(40), new Set()],
];

for (const [name, dag, open] of HARD) {
  test(`${name}: every edge leaves its source's border and reaches its target's, no label covers a node or another label`, () => {
    const drawing = laidDrawing(layoutGraph(dag, open), FRAME_HEAD);
    const ids = new Set(dag.nodes.map((n) => n.id));
    assert.ok(drawing.edges.length >= dag.edges.filter((e) => ids.has(e.from) && ids.has(e.to)).length);
    assert.deepEqual(geometryProblems(drawing, { tolerance: 0.5 }), []);
  });
}

test("the checks see what they look for: an edge off its node, a label on a node, labels on each other", () => {
  const box = { x: 0, y: 0, width: 100, height: 40 };
  const far = { x: 300, y: 0, width: 100, height: 40 };
  const drawing = {
    nodes: [{ path: "a", box }, { path: "b", box: far }],
    edges: [{ key: "a\u2192b", from: "a", to: "b", start: { x: 50, y: 40 }, end: { x: 250, y: 20 } }],
    labels: [
      { key: "a\u2192b", from: "a", box: { x: 90, y: 30, width: 50, height: 16 } },
      { key: "b\u2192a", from: "b", box: { x: 130, y: 40, width: 50, height: 16 } },
    ],
  };
  assert.deepEqual(geometryProblems(drawing), [
    "edge a\u2192b ends 50.0 px from node b",
    "the label of a\u2192b covers node a",
    "the labels of a\u2192b and b\u2192a overlap",
  ]);
  assert.equal(borderDistance({ x: 50, y: 20 }, box), 20, "inside: to the nearest side");
});

test("a self-loop leaves its node's right side and re-enters it, its label beside the loop", () => {
  const laid = layoutGraph(agentGraph());
  const agent = laid.nodes.find((n) => n.id === "agent");
  const loop = laid.edges.find((e) => e.from === "agent" && e.to === "agent");
  const right = agent.x + agent.width / 2;
  const [first, last] = [loop.points[0], loop.points[loop.points.length - 1]];
  assert.equal(first.x, right);
  assert.equal(last.x, right);
  assert.ok(first.y < agent.y && last.y > agent.y, "out above the middle, back in below it");
  assert.ok(Math.abs(first.y - agent.y) < agent.height / 2 && Math.abs(last.y - agent.y) < agent.height / 2, "both on the side");
  const reach = Math.max(...loop.points.map((p) => p.x));
  assert.ok(reach >= right + 20, `the loop stands out from the node (${reach - right} px)`);
  assert.ok(loop.labelBox.x - loop.labelBox.width / 2 > reach, "the label stands right of the loop");
  assert.ok(Math.abs(loop.labelBox.y - agent.y) < agent.height, "beside it");
  // The nodes above and below stay in line with it: the room for the loop is on its right.
  const [start, end] = [laid.nodes.find((n) => n.id === "input_handler"), laid.edges.find((e) => e.key === "input_handler\u2192agent")];
  assert.equal(start.x, agent.x);
  assert.equal(end.points[end.points.length - 1].x, agent.x);
});

test("two loops on one node stay apart: the second goes round the first", () => {
  const laid = layoutGraph(loopsGraph());
  const loops = laid.edges.filter((e) => e.from === "run_step" && e.to === "run_step");
  assert.equal(loops.length, 2);
  const [inner, outer] = loops;
  const reach = (loop) => Math.max(...loop.points.map((p) => p.x));
  assert.ok(reach(outer) >= reach(inner) + 10);
  assert.ok(outer.points[0].y < inner.points[0].y && outer.points.at(-1).y > inner.points.at(-1).y, "its ends outside the first's");
  // Apart all along: no point of one is within 3 px of the other's.
  const gap = Math.min(...inner.points.flatMap((p) => outer.points.map((q) => Math.hypot(p.x - q.x, p.y - q.y))));
  assert.ok(gap >= 3, `${gap.toFixed(1)} px apart`);
  // Their labels stand one above the other, right of both.
  assert.ok(inner.labelBox.y < outer.labelBox.y);
  assert.ok(inner.labelBox.x - inner.labelBox.width / 2 > reach(outer));
});

test("other edges keep off a node's right side, where its loops are", () => {
  for (const dag of [agentGraph(), loopsGraph()]) {
    const laid = layoutGraph(dag);
    const looped = new Map(laid.nodes.filter((n) => dag.edges.some((e) => e.from === n.id && e.to === n.id)).map((n) => [n.id, n]));
    for (const edge of laid.edges.filter((e) => e.from !== e.to)) {
      for (const [id, end] of [[edge.from, edge.points[0]], [edge.to, edge.points.at(-1)]]) {
        const node = looped.get(id);
        const onTheRight = node && end.x > node.x + node.width / 2 - 0.5 && Math.abs(end.y - node.y) < node.height / 2 - 0.5;
        assert.ok(!onTheRight, `${edge.key} meets ${id} on its right side, among its loops`);
      }
    }
  }
});

test("a loop inside an open frame is drawn there; closed, the frame hides it", () => {
  const closed = layoutGraph(loopsGraph());
  assert.equal(closed.nodes.find((n) => n.id === "review").inner, undefined);
  const open = layoutGraph(loopsGraph(), new Set(["review"]));
  const loop = open.nodes.find((n) => n.id === "review").inner.edges.find((e) => e.key === "review/score\u2192review/score");
  assert.ok(loop && loop.points.length > 2);
});

test("a long condition is drawn on at most two lines, shortened with an ellipsis; a short one as it is", () => {
  assert.deepEqual(labelLines("state.city"), ["state.city"]);
  assert.deepEqual(labelLines('state.status == "continue" or state.tool_calls > 0'), [
    'state.status == "continue" or', "state.tool_calls > 0",
  ]);
  const long = labelLines('state.status == "in_progress" and not state.tool_calls and state.nudges < 1');
  assert.deepEqual(long, ['state.status == "in_progress"', "and not state.tool_calls and\u2026"]);
  assert.deepEqual(labelLines("a".repeat(40)), ["a".repeat(LABEL_CHARS), "a".repeat(8)]);
  assert.deepEqual(labelLines('state.context.get("has_findings")'), ["state.context.get", '("has_findings")']);
  for (const text of ["x ".repeat(100), "w".repeat(500), agentGraph().edges[3].label]) {
    const lines = labelLines(text);
    assert.ok(lines.length <= LABEL_LINES && lines.every((line) => line.length <= LABEL_CHARS), JSON.stringify(lines));
  }
});

test("a label's box holds its lines, and the edge keeps its whole text", () => {
  const laid = layoutGraph(agentGraph());
  const nudge = laid.edges.find((e) => e.to === "wrapper_nudge");
  assert.equal(edgeLabel(nudge), agentGraph().edges[3].label);
  assert.equal(nudge.lines.length, 2);
  for (const line of nudge.lines) assert.ok(estimateWidth(line, "edge") + 8 <= nudge.labelBox.width);
  assert.ok(nudge.labelBox.height >= 2 * 13);
  const plain = laid.edges.find((e) => e.key === "input_handler\u2192agent");
  assert.deepEqual([plain.lines, plain.labelBox], [[], null]);
});
