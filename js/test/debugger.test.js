import { test } from "node:test";
import assert from "node:assert/strict";
import { forkable } from "../src/inspector.js";
import { budgetLines, raisedLimits, rerunWarning } from "../src/panel.js";

const reruns = { path: "draft", model_calls: 2, tool_calls: ["search"], answered: 0, note: "a resume runs 'draft' again from its start, making 2 model calls and tool search again" };

test("a pause that a resume would reach again by re-running its node says so before the answer", () => {
  const pause = { id: "p", kind: "input", path: "draft", prompt: "Send?", reruns };
  assert.equal(
    rerunWarning(pause, false),
    "\u21BB Answered here, nothing runs again; if the run is resumed from its checkpoint instead (after a restart), a resume runs 'draft' again from its start, making 2 model calls and tool search again.",
  );
  assert.equal(rerunWarning(pause, true), `\u21BB Answering resumes the run from its checkpoint: ${reruns.note}.`);
  assert.equal(rerunWarning({ ...pause, reruns: null }, true), "");
  assert.equal(rerunWarning({ id: "a", kind: "approval", path: "write" }, true), "");
});

test("a LangGraph pause says that answering runs its node again, even while the run waits", () => {
  const pause = { id: "p", kind: "input", path: "ask", prompt: "City?", reruns: { path: "ask", live: true, note: "a resume runs 'ask' again from its start" } };
  assert.equal(rerunWarning(pause, false), "\u21BB Answering runs it again: a resume runs 'ask' again from its start.");
});

test("a budget pause's figures read as one line per limit, the limits it would pass marked", () => {
  const figures = {
    used: { turns: 4, tokens: 400, cost: 0.04 }, limits: { tokens: 450, cost: 0.1 }, next: { tokens: 100, cost: 0.01 },
    over: ["tokens"], suggested: { tokens: 900, cost: 0.2 },
  };
  assert.deepEqual(budgetLines(figures), [
    { key: "tokens", over: true, text: "tokens: 400 used of 450, the next step may take 100" },
    { key: "cost", over: false, text: "cost ($): 0.0400 used of 0.1000, the next step may take 0.0100" },
  ]);
  assert.deepEqual(budgetLines({ used: { turns: 3 }, limits: { turns: 3 }, next: {}, over: ["turns"] }), [
    { key: "turns", over: true, text: "model calls: 3 used of 3" },
  ]);
});

test("the raised limits sent are the fields holding numbers, whole for counts", () => {
  assert.deepEqual(raisedLimits([["tokens", "900.2"], ["cost", "0.25"], ["turns", ""], ["x", "abc"]]), { tokens: 901, cost: 0.25 });
  assert.deepEqual(raisedLimits([]), {});
});

test("a fork starts from a step of the run's own graph, not from inside a sub-graph", () => {
  assert.equal(forkable({ step: 3, path: "classify" }), true);
  assert.equal(forkable({ step: 2, path: "research/search" }), false);
  assert.equal(forkable({ step: null, path: "x" }), false);
  assert.equal(forkable(null), false);
});
