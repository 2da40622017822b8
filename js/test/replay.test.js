import { test } from "node:test";
import assert from "node:assert/strict";
import { foldFrames, frameLabel } from "../src/replay.js";

test("the counts at a frame are the changes folded up to it, across checkpoints", () => {
  const frames = [{ step: 0, path: null, visits: {}, fired: {} }];
  for (let i = 1; i <= 200; i++) {
    frames.push({ step: i, path: i % 2 ? "a" : "b", visits: { [i % 2 ? "a" : "b"]: Math.ceil(i / 2) }, fired: { [`x${i % 3}`]: i } });
  }
  const folded = foldFrames(frames);
  assert.equal(folded.length, 201);
  assert.deepEqual(folded.at(0).visits, {});
  assert.deepEqual(folded.at(1).visits, { a: 1 });
  assert.deepEqual(folded.at(4).visits, { a: 2, b: 2 });
  assert.deepEqual(folded.at(130).visits, { a: 65, b: 65 });
  assert.deepEqual(folded.at(130).fired, { x0: 129, x1: 130, x2: 128 });
  assert.equal(folded.at(130).frame.path, "b");
  assert.equal(folded.at(999).index, 200); // clamped
});

test("a frame's label says its step and node", () => {
  assert.equal(frameLabel({ step: 2, path: "ask", branch: "ask[1]" }, 3, 7), "frame 3 / 7 \u00B7 step 2 \u00B7 ask [ask[1]]");
  assert.match(frameLabel({ step: 0 }, 0, 7), /the input/);
});

test("packed frames unpack to each frame's changed counts, names given once", async () => {
  const { unpackFrames } = await import("../src/replay.js");
  const packed = {
    names: ["count", "__start__\u2192count", "count\u2192odd", "odd"],
    rows: [[0, null, null, null, [], []], [1, 0, null, null, [0, 1], [1, 1, 2, 1]], [2, 3, "b1", "boom", [3, 2], []]],
  };
  assert.deepEqual(unpackFrames(packed), [
    { step: 0, path: null, branch: null, error: null, visits: {}, fired: {} },
    { step: 1, path: "count", branch: null, error: null, visits: { count: 1 }, fired: { "__start__\u2192count": 1, "count\u2192odd": 1 } },
    { step: 2, path: "odd", branch: "b1", error: "boom", visits: { odd: 2 }, fired: {} },
  ]);
  assert.deepEqual(unpackFrames(undefined), []);
  assert.deepEqual(unpackFrames({}), []);
});
