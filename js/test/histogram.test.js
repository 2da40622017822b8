import { test } from "node:test";
import assert from "node:assert/strict";
import { THIN, busiest, compareEdge, countPlace, countStats, edgeTitle, edgeWidth, formatCost, pointAlong } from "../src/histogram.js";

test("an edge's width grows with the square root of its count, from thin (no run) to the widest (the busiest edge)", () => {
  assert.equal(edgeWidth(0, 10), THIN);
  assert.equal(edgeWidth(5, 0), THIN);
  assert.equal(edgeWidth(10, 10), 9);
  assert.equal(edgeWidth(1, 4), 5.5); // a quarter of the runs: half the way from 2 to 9
  assert.ok(edgeWidth(1, 1000) > THIN && edgeWidth(1, 1000) < edgeWidth(2, 1000));
  assert.equal(edgeWidth(20, 10), 9); // never wider than the widest
});

test("a count sits halfway along its edge, or a quarter of the way when a condition's label is halfway", () => {
  const points = [{ x: 0, y: 0 }, { x: 0, y: 30 }, { x: 40, y: 30 }];
  assert.deepEqual(pointAlong(points, 0.5), { x: 5, y: 30 });
  assert.deepEqual(pointAlong(points, 0), { x: 0, y: 0 });
  assert.deepEqual(pointAlong(points, 1), { x: 40, y: 30 });
  assert.deepEqual(countPlace({ from: "a", to: "b", points }, false), { x: 5, y: 30 });
  assert.deepEqual(countPlace({ from: "a", to: "b", points }, true), { x: 0, y: 17.5 });
  // A loop's label stands beside it, not on it: its count sits at its middle, furthest out.
  assert.deepEqual(countPlace({ from: "a", to: "a", points }, true), { x: 5, y: 30 });
  assert.deepEqual(pointAlong([{ x: 3, y: 4 }], 0.5), { x: 3, y: 4 });
});

test("the counts line says ended of total, done, failed, running, waiting, other outcomes, runs/s, tokens and cost", () => {
  const stats = countStats({ total: 10, ended: 7, done: 4, failed: 2, running: 2, waiting: 1, throughput: 3.456, tokens: 120, cost: 0.01234 });
  assert.deepEqual(stats, [
    ["ended", "7 / 10"], ["done", "4"], ["failed", "2"], ["running", "2"], ["waiting", "1"], ["other", "1"],
    ["runs/s", "3.5"], ["tokens", "120"], ["cost", "$0.0123"],
  ]);
  assert.deepEqual(countStats({}).map(([name]) => name), ["ended", "done", "failed", "running", "waiting", "runs/s", "tokens", "cost"]);
  assert.equal(formatCost(12.5), "$12.50");
  assert.equal(busiest({ a: 3, b: 7, c: 0 }), 7);
  assert.equal(busiest({}), 0);
});

test("two versions on an edge: only the old, only the new, both (with the move), or neither", () => {
  assert.deepEqual(compareEdge({ a: 2, b: 0 }), { side: "a", text: "\u22122", title: "only the old version: 2 runs" });
  assert.deepEqual(compareEdge({ b: 1 }), { side: "b", text: "+1", title: "only the new version: 1 run" });
  assert.deepEqual(compareEdge({ a: 2, b: 3 }), { side: "both", text: "2\u21923", title: "both versions: 2 runs before, 3 runs after" });
  assert.equal(compareEdge({ a: 4, b: 4 }).text, "4");
  assert.equal(compareEdge(undefined).side, "none");
  assert.equal(edgeTitle("__start__\u2192work"), "START \u2192 work");
  assert.equal(edgeTitle("odd\u2192__end__"), "odd \u2192 END");
});
