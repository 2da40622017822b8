import { test } from "node:test";
import assert from "node:assert/strict";
import { graphOf, layoutGraph } from "../src/layout.js";

const cycle = {
  nodes: [
    { id: "__start__", kind: "start" },
    { id: "analyze", kind: "llm" },
    { id: "tool", kind: "function" },
    { id: "__end__", kind: "end" },
  ],
  edges: [
    { from: "__start__", to: "analyze", label: null, unconditional: true },
    { from: "analyze", to: "tool", label: "state.needs_tool", unconditional: false },
    { from: "analyze", to: "__end__", label: null, unconditional: true },
    { from: "tool", to: "analyze", label: null, unconditional: true },
  ],
};

test("a graph with a cycle is laid out top to bottom", () => {
  const laid = layoutGraph(cycle);
  const y = Object.fromEntries(laid.nodes.map((n) => [n.id, n.y]));
  assert.ok(y.__start__ < y.analyze, "START above analyze");
  assert.ok(y.analyze < y.tool, "analyze above tool");
  assert.ok(y.analyze < y.__end__, "analyze above END");
  assert.equal(laid.nodes.length, 4);
  assert.equal(laid.edges.length, 4);
});

test("every edge, the back edge included, gets a routed path inside the drawing", () => {
  const laid = layoutGraph(cycle);
  for (const edge of laid.edges) {
    assert.ok(edge.points.length >= 2, `${edge.key} has points`);
    for (const p of edge.points) {
      assert.ok(p.x >= 0 && p.x <= laid.width + 1 && p.y >= 0 && p.y <= laid.height + 1, `${edge.key} stays inside`);
    }
  }
  const back = laid.edges.find((e) => e.from === "tool" && e.to === "analyze");
  assert.ok(back.points[0].y > back.points[back.points.length - 1].y, "the back edge runs upwards");
});

test("nodes do not overlap and labelled edges carry a label position", () => {
  const laid = layoutGraph(cycle);
  for (const a of laid.nodes) {
    for (const b of laid.nodes) {
      if (a === b) continue;
      const apart = Math.abs(a.x - b.x) >= (a.width + b.width) / 2 || Math.abs(a.y - b.y) >= (a.height + b.height) / 2;
      assert.ok(apart, `${a.id} and ${b.id} overlap`);
    }
  }
  const labelled = laid.edges.find((e) => e.label === "state.needs_tool");
  assert.ok(Number.isFinite(labelled.labelX) && Number.isFinite(labelled.labelY));
});

test("a view's dag trait before the kernel has set it holds no graph to lay out", () => {
  // (Voilà's progressive rendering draws a view from the model's first state: `dag` is still {}.)
  for (const unset of [undefined, null, {}, { nodes: [] }, { edges: [] }, { nodes: {}, edges: [] }]) {
    assert.equal(graphOf(unset), null, JSON.stringify(unset));
  }
  assert.equal(graphOf(cycle), cycle);
});
