import { test } from "node:test";
import assert from "node:assert/strict";
import { edgeClass, edgeTip } from "../src/draw.js";
import { layoutGraph } from "../src/layout.js";

// A LangGraph graph whose Send fan-out declares no path map: LangGraph draws no edge into
// `work`; the view adds the one a run took, marked `dynamic`, with how to declare it.
const note = "discovered while running: declare it with a path map: add_conditional_edges('plan', fan, ['work', ...])";
const fanOut = {
  nodes: [
    { id: "__start__", kind: "start" },
    { id: "plan", kind: "function" },
    { id: "work", kind: "function" },
    { id: "__end__", kind: "end" },
  ],
  edges: [
    { from: "__start__", to: "plan", label: null, unconditional: true },
    { from: "plan", to: "__end__", label: null, unconditional: true },
    { from: "work", to: "__end__", label: null, unconditional: true },
    { from: "plan", to: "work", label: null, unconditional: false, dynamic: true, note },
  ],
};

test("a discovered edge is laid out and drawn with its marker class and how to declare it", () => {
  const laid = layoutGraph(fanOut);
  const taken = laid.edges.find((edge) => edge.key === "plan\u2192work");
  assert.ok(taken.points.length >= 2, "it is routed like any edge");
  assert.equal(taken.lines.length, 0, "it carries no label text: its marker says what it is");
  assert.equal(edgeClass(taken), "nbg-edge nbg-dynamic");
  assert.equal(edgeTip(taken), `plan \u2192 work \u2014 ${note}`);
});

test("a declared edge has no marker, and a discovered one without a note still says it was discovered", () => {
  const declared = layoutGraph(fanOut).edges.find((edge) => edge.key === "work\u2192__end__");
  assert.equal(edgeClass(declared), "nbg-edge nbg-unconditional");
  assert.equal(edgeTip(declared), "work \u2192 END");
  const bare = { from: "a", to: "b", label: "goto", unconditional: false, dynamic: true };
  assert.equal(edgeClass(bare), "nbg-edge nbg-dynamic");
  assert.equal(edgeTip(bare), "a \u2192 b: goto \u2014 discovered while running: the graph does not declare it");
});
