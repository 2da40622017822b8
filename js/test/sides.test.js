import { test } from "node:test";
import assert from "node:assert/strict";
import { cellText, changeText, rowNote, sidesPaint } from "../src/sides.js";

// GraphView.side_by_side(run, fork, labels=("run", "fork")).sides for the writer graph of
// tests/test_side_by_side.py: the run drafted twice, the fork (version 5 from step 1) published at once.
const fork = {"labels": ["run", "fork"], "threads": ["run", "fork"], "outcomes": ["done", "done"], "parted_at": 3, "differs_at": 1, "rows": [{"frame": 0, "a": null, "b": null, "same_node": true, "same_state": true}, {"frame": 1, "a": {"step": 1, "node": "draft", "path": "draft", "branch": null, "error": null}, "b": {"step": 1, "node": "draft", "path": "draft", "branch": null, "error": null}, "same_node": true, "same_state": false}, {"frame": 2, "a": {"step": 2, "node": "review", "path": "review", "branch": null, "error": null}, "b": {"step": 2, "node": "review", "path": "review", "branch": null, "error": null}, "same_node": true, "same_state": false}, {"frame": 3, "a": {"step": 3, "node": "draft", "path": "draft", "branch": null, "error": null}, "b": {"step": 3, "node": "publish", "path": "publish", "branch": null, "error": null}, "same_node": false, "same_state": false}, {"frame": 4, "a": {"step": 4, "node": "review", "path": "review", "branch": null, "error": null}, "b": null, "same_node": false, "same_state": false}, {"frame": 5, "a": {"step": 5, "node": "publish", "path": "publish", "branch": null, "error": null}, "b": null, "same_node": false, "same_state": false}], "changes": [{"field": "version", "kind": "changed", "a": 1, "b": 5, "at": null}], "runs": [{"visits": {"draft": 2, "review": 2, "publish": 1}, "fired": {"__start__\u2192draft": 1, "draft\u2192review": 2, "review\u2192draft": 1, "review\u2192publish": 1, "publish\u2192__end__": 1}}, {"visits": {"draft": 1, "review": 1, "publish": 1}, "fired": {"__start__\u2192draft": 1, "draft\u2192review": 1, "review\u2192publish": 1, "publish\u2192__end__": 1}}]};

test("each run's path is painted as its own or both runs', and the nodes where they part carry the runs' names", () => {
  const painted = sidesPaint(fork);
  assert.deepEqual(painted.nodes, { draft: "both", review: "both", publish: "both" });
  assert.deepEqual(painted.edges, {
    "__start__\u2192draft": "both",
    "draft\u2192review": "both",
    "review\u2192draft": "a", // only the run drafted again
    "review\u2192publish": "both",
    "publish\u2192__end__": "both",
  });
  assert.deepEqual(painted.parted, { draft: ["run"], publish: ["fork"] });
});

test("a run's own node is its alone; paths that never part mark nothing; no comparison paints nothing", () => {
  const runs = [{ visits: { a: 1, x: 1 }, fired: {} }, { visits: { a: 1, y: 2 }, fired: {} }];
  const rows = [{ frame: 0, a: null, b: null }, { frame: 1, a: { path: "x" }, b: { path: "x" } }];
  assert.deepEqual(sidesPaint({ runs, rows, parted_at: null }).nodes, { a: "both", x: "a", y: "b" });
  assert.deepEqual(sidesPaint({ runs, rows, parted_at: null }).parted, {});
  // One run failed where the other finished: the same node, named for both.
  assert.deepEqual(sidesPaint({ runs, rows, parted_at: 1, labels: ["ok", "bad"] }).parted, { x: ["ok", "bad"] });
  assert.equal(sidesPaint({}), null);
  assert.equal(sidesPaint(undefined), null);
});

test("the table's cells, notes and diff say what the Python table says", () => {
  assert.equal(cellText(null, 0), "(input)");
  assert.equal(cellText(null, 4), "(ended)");
  assert.equal(cellText({ path: "research/search", branch: "q[1]", error: "boom" }, 2), "research/search [q[1]] (failed)");
  assert.equal(rowNote(fork, 3), "paths part");
  assert.equal(rowNote(fork, 1), "first state difference");
  assert.equal(rowNote({ parted_at: 2, differs_at: 2 }, 2), "paths part, first state difference");
  assert.equal(rowNote(fork, 2), "");
  const labels = ["run", "fork"];
  assert.equal(changeText(fork.changes[0], labels), "version: run 1, fork 5");
  assert.equal(changeText({ field: "done", kind: "only_a", a: true, b: null, at: null }, labels), "done: only in run, true");
  const messages = { field: "messages", kind: "changed", a: ["hi", "Hello."], b: ["hi"], at: 1 };
  assert.equal(changeText(messages, labels), 'messages[1]: run "Hello.", fork (no item)');
  const long = { field: "text", kind: "only_b", a: null, b: "x".repeat(80), at: null };
  assert.equal(changeText(long, labels), `text: only in fork, "${"x".repeat(58)}\u2026`);
});
