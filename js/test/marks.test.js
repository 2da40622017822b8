import { test } from "node:test";
import assert from "node:assert/strict";
import { costLabel, problemMarks } from "../src/marks.js";

test("problems land on the node or edge they name, inside sub-graphs by path, once each", () => {
  const dag = {
    problems: [
      { kind: "unreachable", node: "lost", message: "node 'lost' cannot be reached" },
      { kind: "unknown-node", edge: { from: "a", to: "ghost" }, message: "an edge to 'ghost'" },
    ],
    nodes: [{ id: "research", graph: { problems: [{ kind: "no-way-out", node: "loop", message: "goes round" }], nodes: [] } }],
  };
  const run = [
    { kind: "condition-raised", edge: { from: "search", to: "__end__" }, message: "KeyError", path: "research" },
    { kind: "unreachable", node: "lost", message: "node 'lost' cannot be reached", path: "" },
  ];
  assert.deepEqual(problemMarks(dag, run), [
    { target: "node", key: "lost", message: "node 'lost' cannot be reached" },
    { target: "edge", key: "a\u2192ghost", node: "a", message: "an edge to 'ghost'" },
    { target: "node", key: "research/loop", message: "goes round" },
    { target: "edge", key: "research/search\u2192research/__end__", node: "research/search", message: "KeyError" },
  ]);
  assert.deepEqual(problemMarks({}, undefined), []);
});

test("a node's cost line shows what it used, nothing when it used nothing", () => {
  assert.equal(costLabel(undefined), "");
  assert.equal(costLabel({ tokens: 0, cost: 0 }), "");
  assert.equal(costLabel({ tokens: 15, cost: 0 }), "15 tok");
  assert.equal(costLabel({ tokens: 1234, cost: 0.00312 }), "1,234 tok \u00B7 $0.0031");
  assert.equal(costLabel({ tokens: 123456, cost: 2.5 }), "123.5k tok \u00B7 $2.50");
});
