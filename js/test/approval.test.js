import { test } from "node:test";
import assert from "node:assert/strict";
import { appendedText, changeRows, inputRows, nextLine } from "../src/approval.js";
import { FOLD_CHARS, folding, valueText } from "../src/fold.js";
import { breakAnswer } from "../src/panel.js";

test("an approval's changes read as one row per field; appended lists as their new items", () => {
  const rows = changeRows([
    { field: "draft", before: "", after: "Dear customer" },
    { field: "messages", before: null, after: [{ role: "ai", content: "hi" }, { role: "ai", content: "bye" }], appended: true },
    { field: "count", after: 3 },
    { field: "log", after: "one line", appended: true },
  ]);
  assert.deepEqual(rows, [
    { field: "draft", appended: false, before: "", after: "Dear customer" },
    { field: "messages", appended: true, items: [{ role: "ai", content: "hi" }, { role: "ai", content: "bye" }], count: 2 },
    { field: "count", appended: false, before: null, after: 3 },
    { field: "log", appended: true, items: ["one line"], count: 1 },
  ]);
  assert.deepEqual(changeRows(null), []);
  assert.equal(appendedText(2), "+ 2 items");
  assert.equal(appendedText(1), "+ 1 item");
});

test("where the run goes if approved; END says end; unknown says nothing", () => {
  assert.equal(nextLine(["send", "archive"]), "Next if approved: send, archive");
  assert.equal(nextLine(["__end__"]), "Next if approved: end");
  assert.equal(nextLine([]), "Next if approved: end");
  assert.equal(nextLine(null), "");
  assert.equal(nextLine(undefined), "");
});

test("the state a node would run on reads as field rows", () => {
  assert.deepEqual(inputRows({ topic: "tea", n: 2 }), [["topic", "tea"], ["n", 2]]);
  assert.deepEqual(inputRows("just text"), [["input", "just text"]]);
  assert.deepEqual(inputRows(null), []);
});

test("long values fold to their first line; short ones show whole", () => {
  assert.deepEqual(folding({ a: 1 }), { folded: false, text: '{"a":1}' });
  assert.deepEqual(folding("short"), { folded: false, text: "short" });
  assert.equal(valueText(""), '""');
  const long = folding("x".repeat(FOLD_CHARS + 1));
  assert.equal(long.folded, true);
  assert.equal(long.size, `${FOLD_CHARS + 1} chars`);
  assert.equal(long.head, `${"x".repeat(72)}\u2026`);
  const lines = folding("one\ntwo\nthree\nfour\nfive\nsix\nseven");
  assert.deepEqual([lines.folded, lines.head, lines.size], [true, "one\u2026", "7 lines"]);
  assert.equal(folding("1\n2\n3\n4\n5\n6").folded, false);
  // Unfolded, JSON is pretty-printed.
  const object = folding(Object.fromEntries(Array.from({ length: 30 }, (_, i) => [`key${i}`, i])));
  assert.equal(object.folded, true);
  assert.equal(object.text.split("\n").length, 32);
});

test("a breakpoint's Continue carries a state edit only when one is typed, and only an object", () => {
  assert.deepEqual(breakAnswer(""), { value: "continue" });
  assert.deepEqual(breakAnswer("  "), { value: "continue" });
  assert.deepEqual(breakAnswer("{}"), { value: "continue" });
  assert.deepEqual(breakAnswer('{"draft": "v2"}'), { value: { answer: "continue", update: { draft: "v2" } } });
  assert.match(breakAnswer("{draft").error, /^is not valid JSON: /);
  assert.match(breakAnswer("[1]").error, /^must be a JSON object/);
  assert.match(breakAnswer("3").error, /^must be a JSON object/);
});
