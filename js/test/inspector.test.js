import { test } from "node:test";
import assert from "node:assert/strict";
import { candidateValue, compact, diffLines } from "../src/inspector.js";

test("the update reads as a diff", () => {
  const lines = diffLines({
    added: { note: "3 is odd" },
    changed: { n: { before: 2, after: 3 } },
    removed: ["draft"],
    appended: { messages: [{ role: "ai", content: "hi" }] },
    replaced: { items: [{ index: 1, before: "a", after: "b" }] },
  });
  assert.deepEqual(lines, [
    ["+", 'note: "3 is odd"'],
    ["~", "n: 2 \u2192 3"],
    ["+", 'messages[+]: {"role":"ai","content":"hi"}'],
    ["~", 'items[1]: "a" \u2192 "b"'],
    ["-", "draft"],
  ]);
  assert.deepEqual(diffLines({}), []);
});

test("candidates say their condition's value; long JSON is clipped", () => {
  assert.equal(candidateValue({ holds: false }), "false");
  assert.equal(candidateValue({ holds: true }), "true");
  assert.equal(candidateValue({ unconditional: true }), "always");
  assert.equal(candidateValue({ error: "boom" }), "raised: boom");
  assert.equal(candidateValue({ items: 3 }), "3 items");
  assert.match(compact("x".repeat(5000)), /\u2026 \(5002 chars\)$/);
});
