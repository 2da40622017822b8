import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync, readdirSync } from "node:fs";
import { problemOf, protocol, receiver, sender } from "../src/protocol.js";

const SOURCES = new URL("../src/", import.meta.url);

/** What console.error says while `run` runs (the views' refusals go there). */
function errorsDuring(run) {
  const said = [];
  const original = console.error;
  console.error = (...parts) => said.push(parts.join(" "));
  try {
    run();
  } finally {
    console.error = original;
  }
  return said;
}

// share.js answers the graph view in a shared page, as the kernel would: its messages go the other way.
const KERNELS = new Set(["share.js"]);

test("the kinds of message the views' code sends are the kinds the protocol declares, for both views", () => {
  const sent = new Set();
  const answered = new Set();
  for (const name of readdirSync(SOURCES).filter((file) => file.endsWith(".js"))) {
    const text = readFileSync(new URL(name, SOURCES), "utf8").replace(/^import .*$/gm, ""); // (not `with { type: "json" }`)
    for (const [, kind] of text.matchAll(/\{ type: "([a-z-]+)"/g)) (KERNELS.has(name) ? answered : sent).add(kind);
  }
  const declared = new Set(["graph", "batch"].flatMap((view) => Object.keys(protocol[view].to_kernel)));
  assert.deepEqual([...sent].sort(), [...declared].sort());
  assert.deepEqual([...answered].sort(), Object.keys(protocol.graph.to_view).sort());
});

test("a message is checked against its kind: type, required fields, their types, one of several", () => {
  const kinds = protocol.graph.to_kernel;
  assert.equal(problemOf(kinds, { type: "answer", pause_id: "p1", value: null }), 'message "answer" needs "value" (a value)');
  assert.equal(problemOf(kinds, { type: "answer", pause_id: "p1", value: 0 }), "");
  assert.equal(problemOf(kinds, { type: "approve", pause_id: "p1" }), "");
  assert.equal(problemOf(kinds, { type: "approve", pause_id: "p1", update: null }), "", "an optional field that is null is absent");
  assert.equal(problemOf(kinds, { type: "approve", pause_id: "p1", update: [1] }), 'message "approve": "update" must be an object, not [1]');
  assert.equal(problemOf(kinds, { type: "inspect", step: 2.5 }), 'message "inspect": "step" must be a whole number, not 2.5');
  assert.equal(problemOf(kinds, { type: "inspect", where: "a" }), 'message "inspect" needs one of "step", "node", "frame"');
  assert.equal(problemOf(kinds, { type: "explode" }), `unknown message type "explode"; expected one of: ${Object.keys(kinds).join(", ")}`);
  assert.equal(problemOf(kinds, "hello"), 'a message without a type: "hello"');
  assert.equal(problemOf(kinds, null), "a message without a type: null");
});

test("a view sends only what the protocol allows; what it does not is said on the console, not sent", () => {
  const sent = [];
  const send = sender("graph", { send: (message) => sent.push(message) });
  const said = errorsDuring(() => {
    send({ type: "steer", text: "be brief" });
    send({ type: "steer" });
    send({ type: "inputs", edge: "a\u2192b" }); // a batch view's message
  });
  assert.deepEqual(sent, [{ type: "steer", text: "be brief" }]);
  assert.deepEqual(said, [
    'nbgraph graph view: not sent, message "steer" needs "text" (a string)',
    `nbgraph graph view: not sent, unknown message type "inputs"; expected one of: ${Object.keys(protocol.graph.to_kernel).join(", ")}`,
  ]);
});

test("a view handles each kind the kernel may send it, and refuses the rest with a console error", () => {
  const handled = [];
  const handle = receiver("batch", {
    inputs: (message) => handled.push(message.edge),
    stopped: () => handled.push("stopped"),
    error: (message) => handled.push(message.message),
  });
  const said = errorsDuring(() => {
    handle({ type: "inputs", edge: "a\u2192b", ids: ["q1"], count: 1 });
    handle({ type: "inputs", edge: "a\u2192b" });
    handle({ type: "stopped" });
    handle({ type: "inspection", step: 1 });
  });
  assert.deepEqual(handled, ["a\u2192b", "stopped"]);
  assert.deepEqual(said, [
    'nbgraph batch view: refused a message from the kernel, message "inputs" needs one of "ids", "a"',
    'nbgraph batch view: refused a message from the kernel, unknown message type "inspection"; expected one of: inputs, stopped, error',
  ]);
  // A view without a handler for a kind the kernel may send it, or with one for a kind it may not, is a mistake.
  assert.throws(() => receiver("graph", { inspection() {} }), /handlers for inspection, but the protocol declares error,inspection/);
  assert.throws(() => receiver("graph", { inspection() {}, error() {}, inputs() {} }), /the protocol declares error,inspection/);
});
