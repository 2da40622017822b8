import { test } from "node:test";
import assert from "node:assert/strict";
import { checkArguments, sameJSON } from "../src/schema.js";
import { SCHEMA } from "./schemas.js";

const ARGS = { order: "A-17", amount: 12.5, reason: "damaged", tags: ["x"] };

test("checkArguments reads the schema as the kernel does", () => {
  assert.deepEqual(checkArguments(SCHEMA, ARGS), []);
  assert.deepEqual(checkArguments(SCHEMA, { amount: 1 }), [{ field: "order", message: "is required" }]);
  assert.deepEqual(checkArguments(SCHEMA, { ...ARGS, reason: "bored" }), [
    { field: "reason", message: 'must be one of "damaged", "late", not "bored"' },
  ]);
  assert.deepEqual(checkArguments(SCHEMA, { ...ARGS, extra: 1 }), [
    { field: "extra", message: "is not a field here; the fields are order, amount, reason, notify, note, count, tags, addr" },
  ]);
  assert.deepEqual(checkArguments(SCHEMA, { ...ARGS, note: 5 }), [{ field: "note", message: "5 fits none of text, null" }]);
  assert.deepEqual(checkArguments(SCHEMA, { ...ARGS, amount: true }), [{ field: "amount", message: "must be a number, not true" }]);
  assert.deepEqual(checkArguments(SCHEMA, [1]), [{ field: "", message: "must be an object, not [1]" }]);
  assert.deepEqual(checkArguments({}, { anything: [1, { a: 2 }] }), []);
  // A field wrapped in allOf (as older pydantic writes a $ref with a description) is followed.
  const wrapped = { properties: { addr: { allOf: [{ $ref: "#/$defs/Addr" }], description: "where" } }, $defs: SCHEMA.$defs };
  assert.deepEqual(checkArguments(wrapped, { addr: { street: "s", zip: "x" } }), [{ field: "addr", message: 'zip: must be a whole number, not "x"' }]);
});

test("a schema's type that an object inherits is no type", () => {
  assert.deepEqual(checkArguments({ properties: { x: { type: "toString" } } }, { x: 1 }), []);
  assert.deepEqual(checkArguments({ properties: { x: { type: "constructor" } } }, { x: 1 }), []);
});

test("sameJSON compares values, not key order", () => {
  assert.equal(sameJSON({ a: 1, b: [1, { c: 2 }] }, { b: [1, { c: 2 }], a: 1 }), true);
  assert.equal(sameJSON({ a: 1 }, { a: 1, b: undefined }), false);
  assert.equal(sameJSON([1, 2], [2, 1]), false);
  assert.equal(sameJSON(null, {}), false);
});
