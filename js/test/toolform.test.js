import { test } from "node:test";
import assert from "node:assert/strict";
import { collected, controlOf, decide, formFields, readField, readForm } from "../src/toolform.js";
import { SCHEMA } from "./schemas.js";

const ARGS = { order: "A-17", amount: 12.5, reason: "damaged", tags: ["x"] };
const CALL = { call_id: "c1", name: "refund", arguments: ARGS, parameters: SCHEMA, decisions: ["approve", "edit", "reject", "respond"] };

const byName = (fields) => Object.fromEntries(fields.map((field) => [field.name, field]));

test("each field gets the control its schema says, required fields marked", () => {
  const fields = byName(formFields(SCHEMA, ARGS));
  assert.deepEqual(Object.keys(fields), ["order", "amount", "reason", "notify", "note", "count", "tags", "addr"]);
  const controls = Object.fromEntries(Object.values(fields).map((field) => [field.name, field.control]));
  assert.deepEqual(controls, {
    order: "text", amount: "number", reason: "select", notify: "checkbox", note: "text", count: "integer", tags: "json", addr: "json",
  });
  assert.equal(fields.order.required, true);
  assert.equal(fields.amount.required, true);
  assert.equal(fields.reason.required, false);
  assert.equal(fields.note.nullable, true);
  assert.equal(fields.addr.nullable, true);
  // Starting texts: the model's arguments, or the schema's default for a checkbox left out.
  assert.equal(fields.order.initial, "A-17");
  assert.equal(fields.amount.initial, "12.5");
  assert.equal(fields.reason.initial, '"damaged"');
  assert.equal(fields.notify.initial, true);
  assert.equal(fields.tags.initial, '["x"]'); // one line while short
  assert.equal(fields.note.initial, "");
  assert.deepEqual(fields.reason.options, [
    { value: "", label: "(default)" },
    { value: '"damaged"', label: "damaged" },
    { value: '"late"', label: "late" },
  ]);
  assert.equal(fields.tags.kind, "JSON list");
  assert.equal(fields.count.kind, "whole number");
});

test("without a schema, each argument's value says its control; arguments the schema does not name are kept", () => {
  const fields = byName(formFields({}, { q: "kyoto", n: 3, exact: false, where: { lat: 1 }, gone: null }));
  assert.deepEqual(
    Object.values(fields).map((field) => [field.name, field.control, field.required]),
    [["q", "text", false], ["n", "number", false], ["exact", "checkbox", false], ["where", "json", false], ["gone", "json", false]],
  );
  const extra = byName(formFields(SCHEMA, { ...ARGS, surprise: 1 }));
  assert.equal(extra.surprise.control, "number");
  // A value the schema's control cannot show (a string where a boolean belongs) is edited as JSON.
  assert.equal(byName(formFields(SCHEMA, { ...ARGS, notify: "yes" })).notify.control, "json");
  assert.equal(controlOf({ type: "boolean" }, true, null), "select"); // true, false or none
  assert.equal(controlOf({ type: "string" }, false, "a\nb"), "longtext");
  assert.equal(controlOf({ const: "x" }, false, "x"), "select");
});

test("a long argument folds; a short one does not", () => {
  const fields = byName(formFields(SCHEMA, { ...ARGS, tags: Array.from({ length: 40 }, (_, i) => `tag-${i}`) }));
  assert.equal(fields.tags.folded.head.startsWith('["tag-0","tag-1"'), true);
  assert.match(fields.tags.folded.size, /^\d+ chars$/);
  assert.equal(fields.order.folded, null);
});

test("an untouched form approves the call as asked", () => {
  const fields = formFields(SCHEMA, ARGS);
  assert.deepEqual(readForm(fields, {}), { args: ARGS, problems: [] });
  assert.deepEqual(decide(CALL, "approve", fields, {}), { decision: { type: "approve" } });
  // Changed and changed back (or written another way) is not an edit.
  assert.deepEqual(decide(CALL, "approve", fields, { amount: "12.50", tags: '[ "x" ]' }), { decision: { type: "approve" } });
});

test("a changed field makes the decision an edit, with every argument", () => {
  const fields = formFields(SCHEMA, ARGS);
  const made = decide(CALL, "approve", fields, { amount: "20", note: "late parcel", notify: false, reason: '"late"' });
  assert.deepEqual(made, {
    decision: {
      type: "edit",
      arguments: { order: "A-17", amount: 20, reason: "late", notify: false, note: "late parcel", tags: ["x"] },
    },
  });
  // Emptied: an optional field takes none, or its default (left out).
  const emptied = decide(CALL, "approve", fields, { reason: "", tags: "" });
  assert.deepEqual(emptied.decision.arguments, { order: "A-17", amount: 12.5 });
  const nested = decide(CALL, "approve", fields, { addr: '{"street": "Main", "zip": 1234}' });
  assert.deepEqual(nested.decision.arguments.addr, { street: "Main", zip: 1234 });
});

test("an invalid edit is refused naming its field: required, type, whole numbers, JSON, enum, nested, bounds", () => {
  const fields = formFields(SCHEMA, ARGS);
  const problems = (raws) => decide(CALL, "approve", fields, raws).problems;
  assert.deepEqual(problems({ order: "" }), [{ field: "order", message: "is required" }]);
  assert.deepEqual(problems({ amount: "" }), [{ field: "amount", message: "is required" }]);
  assert.deepEqual(problems({ amount: "?" }), [{ field: "amount", message: "must be a number" }]);
  assert.deepEqual(problems({ count: "2.5" }), [{ field: "count", message: "must be a whole number, not 2.5" }]);
  assert.deepEqual(problems({ count: "0" }), [{ field: "count", message: "must be at least 1, not 0" }]);
  const [json] = problems({ tags: "[1," });
  assert.equal(json.field, "tags");
  assert.match(json.message, /^is not valid JSON: /);
  assert.deepEqual(problems({ tags: "[1]" }), [{ field: "tags", message: "[0]: must be text, not 1" }]);
  assert.deepEqual(problems({ tags: '"x"' }), [{ field: "tags", message: 'must be a list, not "x"' }]);
  assert.deepEqual(problems({ addr: '{"street": "Main", "zip": "9"}' }), [{ field: "addr", message: 'zip: must be a whole number, not "9"' }]);
  assert.deepEqual(problems({ addr: '{"street": "Main"}' }), [{ field: "addr", message: "zip: is required" }]);
  // Both at once: each field says its own.
  assert.deepEqual(problems({ order: "", amount: "abc" }).map((p) => p.field), ["order", "amount"]);
});

test("readField reads each control's text", () => {
  const [amount] = formFields({ properties: { amount: { type: "number" } } }, { amount: 3 });
  assert.deepEqual(readField(amount, "3"), { value: 3 });
  assert.deepEqual(readField(amount, " 4.25 "), { value: 4.25 });
  assert.deepEqual(readField(amount, ""), { absent: true }); // optional: the tool's default
  const [when] = formFields({ properties: { when: { type: "boolean" } } }, {});
  assert.deepEqual(readField(when, false), { absent: true }); // untouched, and not given: still not given
  assert.deepEqual(readField(when, true), { value: true });
  const [pick] = formFields({ properties: { n: { enum: [1, 2] } }, required: ["n"] }, {});
  assert.equal(pick.options[0].label, "(choose)");
  assert.deepEqual(readField(pick, "2"), { value: 2 });
});

test("reject and respond carry their message; respond needs one", () => {
  const fields = formFields(SCHEMA, ARGS);
  assert.deepEqual(decide(CALL, "reject", fields, {}, "not this customer"), { decision: { type: "reject", message: "not this customer" } });
  assert.deepEqual(decide(CALL, "reject", fields, {}, " "), { decision: { type: "reject" } });
  assert.deepEqual(decide(CALL, "respond", fields, {}, "refunded by hand"), { decision: { type: "respond", message: "refunded by hand" } });
  assert.deepEqual(decide(CALL, "respond", fields, {}, ""), { problems: [{ field: "message", message: "say what the tool's result is" }] });
  // A call that is only run as edited says so when approved unchanged.
  const editOnly = { ...CALL, decisions: ["edit", "reject"] };
  assert.deepEqual(decide(editOnly, "approve", fields, {}).problems, [
    { field: "", message: "this call is only run as edited: change an argument first" },
  ]);
});

test("several calls are answered once each has a decision, in their order", () => {
  const calls = [{ name: "a" }, { name: "b" }, { name: "c" }];
  assert.deepEqual(collected(calls, [{ type: "approve" }, null, null]), { missing: ["b", "c"] });
  assert.deepEqual(collected(calls, [{ type: "approve" }, { type: "reject" }, { type: "respond", message: "m" }]), {
    value: [{ type: "approve" }, { type: "reject" }, { type: "respond", message: "m" }],
  });
});

test("names that an object inherits are plain names here", () => {
  const fields = formFields({ properties: { x: { type: "toString" } } }, { constructor: "c", x: 1 });
  assert.deepEqual(fields.map((field) => [field.name, field.control]), [["x", "json"], ["constructor", "text"]]);
});

test("a field's description, through a lone allOf, is its hint", () => {
  const wrapped = { properties: { addr: { allOf: [{ $ref: "#/$defs/Addr" }], description: "where" } }, $defs: SCHEMA.$defs };
  const [addr] = formFields(wrapped, {});
  assert.deepEqual([addr.control, addr.kind, addr.description], ["json", "JSON object", "where"]);
});
