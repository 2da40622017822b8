import { test } from "node:test";
import assert from "node:assert/strict";
import { NO_KERNEL, answer, frameOf, sharedModel } from "../src/share.js";

const FILE = {
  inspections: [null, { step: 1, path: "draft", input: {}, error: null }, { step: 2, error: "boom", path: "review", input: {} }, { unavailable: "left out" }],
  keys: { node: { draft: 1, review: 2, late: 3 }, step: { 1: 1, 2: 2 }, where: { "2 review": 2, "1 draft": 1 } },
};

test("an inspect message names its frame as the kernel's view reads it", () => {
  assert.equal(frameOf({ type: "inspect", frame: 2 }, FILE.keys), 2);
  assert.equal(frameOf({ type: "inspect", node: "draft" }, FILE.keys), 1);
  assert.equal(frameOf({ type: "inspect", step: 2 }, FILE.keys), 2);
  assert.equal(frameOf({ type: "inspect", step: 1, where: "draft" }, FILE.keys), 1);
  assert.equal(frameOf({ type: "inspect", node: "nowhere" }, FILE.keys), undefined);
});

test("the inspector is answered from the file; what needs a kernel is refused, saying so", () => {
  assert.deepEqual(answer({ type: "inspect", frame: 1 }, FILE), { type: "inspection", step: 1, path: "draft", input: {}, error: null });
  assert.deepEqual(answer({ type: "inspect", step: 2, where: "review" }, FILE), { type: "inspection", step: 2, error: "boom", path: "review", input: {} });
  assert.deepEqual(answer({ type: "inspect", node: "late" }, FILE), { type: "error", message: "left out" });
  assert.match(answer({ type: "inspect", node: "nowhere" }, FILE).message, /no step "nowhere"/);
  assert.match(answer({ type: "inspect", frame: 0 }, FILE).message, /no step 0/);
  assert.equal(answer({ type: "hello" }, FILE), null);
  for (const type of ["answer", "approve", "deny", "fork", "stop", "steer", "revoke", "toggle-breakpoint"]) {
    assert.deepEqual(answer({ type }, FILE), { type: "error", message: NO_KERNEL });
  }
});

test("the model plays anywidget's: get, set with change events, on and off, and replies after a send", async () => {
  const sent = [];
  const model = sharedModel({ status: { state: "done" } }, (message) => {
    sent.push(message);
    return message.type === "inspect" ? { type: "inspection", step: 1 } : null;
  });
  assert.deepEqual(model.get("status"), { state: "done" });
  const heard = [];
  const onStatus = (value) => heard.push(["status", value]);
  model.on("change:status change:log", onStatus);
  model.set("status", { state: "x" });
  model.set("log", ["a"]);
  model.off("change:status", onStatus);
  model.set("status", { state: "y" });
  assert.deepEqual(heard, [["status", { state: "x" }], ["status", ["a"]]]);
  assert.deepEqual(model.get("status"), { state: "y" });
  model.save_changes();

  const replies = [];
  model.on("msg:custom", (message, buffers) => replies.push([message, buffers]));
  model.send({ type: "hello" });
  model.send({ type: "inspect", frame: 1 });
  assert.deepEqual(replies, []); // (not within the send: as a kernel's reply, later)
  await Promise.resolve();
  assert.deepEqual(replies, [[{ type: "inspection", step: 1 }, []]]);
  assert.deepEqual(sent.map((m) => m.type), ["hello", "inspect"]);
  model.off();
  model.set("status", { state: "z" });
  assert.equal(heard.length, 2);
});
