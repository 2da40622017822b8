import { test } from "node:test";
import assert from "node:assert/strict";
import {
  clockText, deadlineState, decidersLine, enterDoes, timeoutOutcome, warnWithin, youLine,
} from "../src/decide.js";
import {
  clockOf, decisionLine, decisionsTitle, decisionsUpTo, editLine, standingLine, viaText,
} from "../src/decisions.js";
import { decide, formFields } from "../src/toolform.js";
import { SCHEMA } from "./schemas.js";

test("who may decide: the names, or anyone; and whether the one answering here is among them", () => {
  assert.equal(decidersLine([]), "Anyone may decide");
  assert.equal(decidersLine(undefined), "Anyone may decide");
  assert.equal(decidersLine(["alice"]), "Decides: alice");
  assert.equal(decidersLine(["alice", "bob"]), "Decides: alice or bob");
  assert.equal(decidersLine(["alice", "bob", "carol"]), "Decides: alice, bob or carol");
  assert.deepEqual(youLine("alice", ["alice", "bob"]), { text: "You are alice", allowed: true });
  assert.deepEqual(youLine("carol", ["alice", "bob"]), { text: "You are carol, who may not decide this", allowed: false });
  assert.deepEqual(youLine("carol", []), { text: "You are carol", allowed: true });
  assert.deepEqual(youLine("", ["alice"]), { text: "", allowed: true });
});

test("the time left reads as a clock, and warns in the last 60 s or the last fifth of a shorter wait", () => {
  assert.equal(clockText(5), "0:05");
  assert.equal(clockText(272), "4:32");
  assert.equal(clockText(3723), "1:02:03");
  assert.equal(clockText(0.2), "0:01"); // (a part of a second left is a second)
  assert.equal(clockText(-3), "0:00");
  assert.equal(warnWithin(3600), 60);
  assert.equal(warnWithin(300), 60);
  assert.equal(warnWithin(100), 20);
  assert.equal(warnWithin(NaN), 60);
  const pause = { kind: "approval", deadline: 1000, on_timeout: null };
  assert.deepEqual(deadlineState(pause, 700, 600), { left: 300, over: false, warn: false, text: "5:00 left, then denied" });
  assert.deepEqual(deadlineState(pause, 941, 600), { left: 59, over: false, warn: true, text: "0:59 left, then denied" });
  // A wait of 50 s warns in its last 10.
  assert.equal(deadlineState(pause, 985, 50).warn, false);
  assert.equal(deadlineState(pause, 991, 50).warn, true);
  assert.deepEqual(deadlineState(pause, 1002, 600), { left: 0, over: true, warn: true, text: "Time is up: denied" });
  assert.equal(deadlineState({ kind: "approval", deadline: null }, 0, 0), null);
});

test("what a passed deadline answers: none denies or rejects; a value says itself", () => {
  assert.equal(timeoutOutcome({ kind: "approval", on_timeout: null }), "denied");
  assert.equal(timeoutOutcome({ kind: "approval", on_timeout: true }), "approved");
  assert.equal(timeoutOutcome({ kind: "tool" }), "rejected");
  assert.equal(timeoutOutcome({ kind: "tool", on_timeout: "approve" }), "approved");
  assert.equal(timeoutOutcome({ kind: "tool", on_timeout: { type: "respond", message: "no" } }), "answered in the tool's place");
  assert.equal(timeoutOutcome({ kind: "tool", on_timeout: { type: "reject", message: "late" } }), "rejected");
  assert.equal(timeoutOutcome({ kind: "input", on_timeout: "economy" }), 'answered "economy"');
  assert.equal(timeoutOutcome({ kind: "input", on_timeout: 3 }), "answered 3");
});

test("Enter in the reason field approves, or submits the decisions of several calls, and says so", () => {
  assert.equal(enterDoes({ kind: "approval" }), "approves");
  assert.equal(enterDoes({ kind: "tool", tool_calls: [{}] }), "approves");
  assert.equal(enterDoes({ kind: "tool", tool_calls: [{}, {}] }), "submits");
});

const ROW = {
  pause_id: "p1", kind: "tool", path: "agent", branch: null, step: 1, by: "alice", at: "2026-12-07T15:21:18.265+00:00",
  via: "view", verdict: "approved", reason: "small", edits: [], standing: null, stands: null, tools: ["refund"], frame: 1,
};

test("a decision reads as who decided what, where, through which door; one that stands says so", () => {
  assert.equal(decisionLine(ROW), "alice approved refund in agent");
  assert.equal(decisionLine({ ...ROW, stands: "run" }), "alice approved refund in agent, and every later refund call in this run");
  assert.equal(decisionLine({ ...ROW, kind: "approval", tools: [], path: "send", verdict: "denied" }), "alice denied send");
  assert.equal(viaText("view"), "in the view");
  assert.equal(viaText("standing"), "by a standing approval");
  assert.equal(viaText("deadline"), "by the deadline");
  assert.equal(editLine({ field: "refund.amount", before: 200, after: 150 }), "refund.amount: 200 \u2192 150");
  assert.equal(editLine({ field: "to", before: "a@x", after: null }), "to: a@x \u2192 null");
  assert.match(clockOf(ROW.at), /^\d\d:\d\d:18$/);
  assert.equal(clockOf("not a time"), "not a time");
});

test("at an earlier frame of the replay, the decisions made up to it", () => {
  const rows = [ROW, { ...ROW, pause_id: "p2", frame: 3 }, { ...ROW, pause_id: "p3", frame: null }];
  assert.deepEqual(decisionsUpTo(rows, null), rows);
  assert.deepEqual(decisionsUpTo(rows, 0).map((r) => r.pause_id), []);
  assert.deepEqual(decisionsUpTo(rows, 2).map((r) => r.pause_id), ["p1"]);
  assert.deepEqual(decisionsUpTo(rows, 3).map((r) => r.pause_id), ["p1", "p2"]);
  assert.equal(decisionsTitle(3, 3, null), "Decisions (3)");
  assert.equal(decisionsTitle(1, 3, 2), "Decisions up to frame 2 (1 of 3)");
});

test("a standing approval reads as its tool, what it covers, who approved and why", () => {
  const row = { id: "s1", tool: "refund", scope: "run", by: "alice", at: "", reason: "small", when: null };
  assert.equal(standingLine(row), "refund: every later call in this run, approved by alice: small");
  assert.equal(
    standingLine({ ...row, scope: "thread", reason: null, when: "to='me@example.com'" }),
    "refund: every later call with to='me@example.com' in this thread, approved by alice",
  );
});

test("approving every later call approves this one as asked, and refuses an edited form", () => {
  const call = { call_id: "c1", name: "refund", arguments: { order: "A-17", amount: 12.5 }, parameters: SCHEMA };
  const fields = formFields(SCHEMA, call.arguments);
  const untouched = Object.fromEntries(fields.map((field) => [field.name, field.initial]));
  assert.deepEqual(decide(call, "standing", fields, untouched), { decision: { type: "approve", standing: "run" } });
  const edited = decide(call, "standing", fields, { ...untouched, amount: "10" });
  assert.deepEqual(edited.problems, [
    { field: "", message: "approving every later refund call runs them as asked: undo your edits first, or Approve with edits" },
  ]);
  assert.deepEqual(decide(call, "standing", fields, { ...untouched, order: "" }).problems, [{ field: "order", message: "is required" }]);
});
