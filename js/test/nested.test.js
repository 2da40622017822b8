import { test } from "node:test";
import assert from "node:assert/strict";
import { FRAME_HEAD, FRAME_PAD, edgeLabel, layoutGraph, progressLabel } from "../src/layout.js";

// DAG JSON 1.2: a fan-out, a join, a map and a sub-graph node holding its own graph (itself nesting one).
const deep = {
  name: "deep",
  nodes: [
    { id: "__start__", kind: "start" },
    { id: "dig", kind: "function", approval: false },
    { id: "__end__", kind: "end" },
  ],
  edges: [
    { from: "__start__", to: "dig", label: null, unconditional: true },
    { from: "dig", to: "__end__", label: null, unconditional: true },
  ],
};
const research = {
  name: "research",
  nodes: [
    { id: "__start__", kind: "start" },
    { id: "search", kind: "llm", approval: false },
    { id: "deep", kind: "graph", approval: false, graph: deep },
    { id: "rank", kind: "function", approval: false },
    { id: "__end__", kind: "end" },
  ],
  edges: [
    { from: "__start__", to: "search", label: null, unconditional: true },
    { from: "search", to: "deep", label: null, unconditional: true },
    { from: "deep", to: "rank", label: null, unconditional: true },
    { from: "rank", to: "search", label: "state.more", unconditional: false },
    { from: "rank", to: "__end__", label: null, unconditional: true },
  ],
};
const dag = {
  version: "1.2",
  mode: "graph",
  name: "trip",
  nodes: [
    { id: "__start__", kind: "start" },
    { id: "plan", kind: "function", approval: false },
    { id: "flights", kind: "function", approval: false },
    { id: "hotels", kind: "function", approval: false },
    { id: "gather", kind: "function", approval: false },
    { id: "ask", kind: "function", approval: false, map: true },
    { id: "research", kind: "graph", approval: false, graph: research, mapping: true },
    { id: "__end__", kind: "end" },
  ],
  edges: [
    { from: "__start__", to: "plan", label: null, unconditional: true },
    { from: "plan", to: "flights", label: null, unconditional: true, fanout: ["flights", "hotels"] },
    { from: "plan", to: "hotels", label: null, unconditional: true, fanout: ["flights", "hotels"] },
    { from: "flights", to: "gather", label: null, unconditional: true, join: ["flights", "hotels"] },
    { from: "hotels", to: "gather", label: null, unconditional: true, join: ["flights", "hotels"] },
    { from: "gather", to: "ask", label: "each city", unconditional: true, each: true },
    { from: "ask", to: "research", label: null, unconditional: true },
    { from: "research", to: "__end__", label: null, unconditional: true },
  ],
};

function byPath(level) {
  return Object.fromEntries(level.nodes.map((n) => [n.path, n]));
}

function apart(a, b) {
  return Math.abs(a.x - b.x) >= (a.width + b.width) / 2 || Math.abs(a.y - b.y) >= (a.height + b.height) / 2;
}

test("a closed sub-graph is one node; node paths and edge keys are the ids", () => {
  const laid = layoutGraph(dag);
  const nodes = byPath(laid);
  assert.deepEqual(Object.keys(nodes).sort(), ["__end__", "__start__", "ask", "flights", "gather", "hotels", "plan", "research"]);
  assert.equal(nodes.research.inner, undefined);
  assert.ok(nodes.research.height < 50, "closed: node-sized");
  assert.ok(laid.edges.some((e) => e.key === "gather\u2192ask"));
});

test("an open frame holds its sub-graph laid out inside it, with paths under the frame's", () => {
  const closed = byPath(layoutGraph(dag)).research;
  const laid = layoutGraph(dag, new Set(["research"]));
  const frame = byPath(laid).research;
  const inner = frame.inner;
  assert.ok(inner, "the open frame carries its own layout");
  assert.deepEqual(inner.nodes.map((n) => n.path).sort(), [
    "research/__end__", "research/__start__", "research/deep", "research/rank", "research/search",
  ]);
  assert.equal(byPath(inner)["research/deep"].inner, undefined, "a nested frame stays closed until opened");
  // The frame grew to hold it: its graph plus the title row and margins, never less.
  assert.ok(frame.width >= inner.width + 2 * FRAME_PAD && frame.width > closed.width);
  assert.equal(frame.height, inner.height + FRAME_HEAD + FRAME_PAD);
  const y = Object.fromEntries(inner.nodes.map((n) => [n.id, n.y]));
  assert.ok(y.__start__ < y.search && y.search < y.deep && y.deep < y.rank && y.rank < y.__end__, "top to bottom inside");
  for (const node of inner.nodes) {
    assert.ok(node.x - node.width / 2 >= 0 && node.x + node.width / 2 <= inner.width, `${node.id} inside horizontally`);
    assert.ok(node.y - node.height / 2 >= 0 && node.y + node.height / 2 <= inner.height, `${node.id} inside vertically`);
  }
  const keys = inner.edges.map((e) => e.key);
  assert.ok(keys.includes("research/__start__\u2192research/search"));
  assert.ok(keys.includes("research/rank\u2192research/search"), "the back edge, keyed by paths");
  // The bigger frame still overlaps nothing at the top level, and the edge into it ends on it.
  for (const other of laid.nodes) if (other !== frame) assert.ok(apart(frame, other), `frame overlaps ${other.id}`);
  const into = laid.edges.find((e) => e.key === "ask\u2192research");
  const end = into.points[into.points.length - 1];
  assert.ok(Math.abs(end.y - (frame.y - frame.height / 2)) < 1, "the edge meets the frame's top");
});

test("frames open inside frames; closing the outer one hides the inner", () => {
  const both = byPath(byPath(layoutGraph(dag, new Set(["research", "research/deep"]))).research.inner)["research/deep"];
  assert.deepEqual(both.inner.nodes.map((n) => n.path).sort(), ["research/deep/__end__", "research/deep/__start__", "research/deep/dig"]);
  assert.deepEqual(both.inner.edges.map((e) => e.key).sort(), [
    "research/deep/__start__\u2192research/deep/dig", "research/deep/dig\u2192research/deep/__end__",
  ]);
  const outerClosed = byPath(layoutGraph(dag, new Set(["research/deep"]))).research;
  assert.equal(outerClosed.inner, undefined);
});

test("a fan-out's arms leave from one point and a join's arms meet at one point", () => {
  const laid = layoutGraph(dag);
  const nodes = byPath(laid);
  const arms = laid.edges.filter((e) => e.fanout);
  assert.equal(arms.length, 2);
  const starts = arms.map((e) => e.points[0]);
  assert.deepEqual(starts[0], starts[1]);
  assert.deepEqual(starts[0], { x: nodes.plan.x, y: nodes.plan.y + nodes.plan.height / 2 });
  const joined = laid.edges.filter((e) => e.join);
  const ends = joined.map((e) => e.points[e.points.length - 1]);
  assert.deepEqual(ends[0], ends[1]);
  assert.deepEqual(laid.joins, [{ node: "gather", x: nodes.gather.x, y: nodes.gather.y - nodes.gather.height / 2, width: 40 }]);
  // The arms really fork: their other ends are apart.
  assert.notDeepEqual(arms[0].points.at(-1), arms[1].points.at(-1));
  assert.notDeepEqual(joined[0].points[0], joined[1].points[0]);
});

test("a map's edge is labelled even though it has no condition; plain arrows are not", () => {
  const [map] = dag.edges.filter((e) => e.each);
  assert.equal(edgeLabel(map), "each city");
  assert.equal(edgeLabel(dag.edges[0]), "");
  assert.equal(edgeLabel({ from: "a", to: "b", label: "state.ok", unconditional: false }), "state.ok");
  const laid = layoutGraph(dag);
  const drawn = laid.edges.find((e) => e.each);
  assert.ok(Number.isFinite(drawn.labelX) && Number.isFinite(drawn.labelY));
});

test("a map target's badge counts done of all branches and shows the failed ones", () => {
  assert.deepEqual(progressLabel({ total: 4, done: 3, failed: 1, running: 0, paused: 0, waiting: 0 }), {
    text: "3/4", failed: "\u27171", title: "4 branches: 3 done, 1 failed", settled: true,
  });
  assert.deepEqual(progressLabel({ total: 4, done: 1, failed: 0, running: 1, paused: 1, waiting: 1 }), {
    text: "1/4", failed: "", title: "4 branches: 1 done, 1 running, 1 paused, 1 waiting", settled: false,
  });
  assert.deepEqual(progressLabel({ total: 1, done: 0, running: 1 }), {
    text: "0/1", failed: "", title: "1 branch: 1 running", settled: false,
  });
});
