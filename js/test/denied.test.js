import { test } from "node:test";
import assert from "node:assert/strict";
import { edgeClass, edgeTip } from "../src/draw.js";
import { layoutGraph } from "../src/layout.js";

// Tutorial 11's desk: a denied big_refund goes to hand_over, which no other edge leads to.
const desk = {
  nodes: [
    { id: "__start__", kind: "start" },
    { id: "big_refund", kind: "function", approval: "before" },
    { id: "hand_over", kind: "function" },
    { id: "__end__", kind: "end" },
  ],
  edges: [
    { from: "__start__", to: "big_refund", label: null, unconditional: true },
    { from: "big_refund", to: "__end__", label: null, unconditional: true },
    { from: "hand_over", to: "__end__", label: null, unconditional: true },
    { from: "big_refund", to: "hand_over", label: "denied", unconditional: false, denied: true },
  ],
};

test("a denial's edge is laid out with its label and drawn long-dashed, saying what it is", () => {
  const laid = layoutGraph(desk);
  const denied = laid.edges.find((edge) => edge.key === "big_refund\u2192hand_over");
  assert.ok(denied.points.length >= 2, "it is routed like any edge");
  assert.deepEqual(denied.lines, ["denied"]);
  assert.equal(edgeClass(denied), "nbg-edge nbg-denied");
  assert.equal(edgeTip(denied), "big_refund \u2192 hand_over: denied \u2014 where the run goes when a person denies big_refund");
  const hand = laid.nodes.find((node) => node.path === "hand_over");
  const refund = laid.nodes.find((node) => node.path === "big_refund");
  assert.ok(hand.y > refund.y, "the target is laid out below the gated node, as reached from it");
});
