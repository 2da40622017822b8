// Checking a value against a JSON schema, as far as tools' argument schemas go: the browser's
// twin of nbgraph/schema_check.py (types, enums, constants, anyOf / oneOf / allOf, local $ref,
// properties, required fields, extra fields, list items, number bounds), so an edit is checked
// where it is made, with the same words. What it does not read it lets through; the kernel
// checks again, and the tool's own validation runs before the call.
import { valueText } from "./fold.js";

/** Whether `value` is a JSON object (not null, not a list). */
export function isObject(value) {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

/** `schema` with its local `$ref` followed (and a lone `allOf`, which older pydantic writes around one). */
export function resolved(schema, root) {
  let node = isObject(schema) ? schema : {};
  for (let hops = 0; hops < 16; hops++) {
    if (typeof node.$ref === "string") {
      let target = root;
      if (node.$ref.startsWith("#/")) {
        for (const part of node.$ref.slice(2).split("/")) target = isObject(target) ? target[part] : undefined;
      }
      const { $ref, ...rest } = node;
      node = { ...(isObject(target) ? target : {}), ...rest };
    } else if (Array.isArray(node.allOf) && node.allOf.length === 1 && !node.type) {
      const { allOf, ...rest } = node;
      node = { ...resolved(allOf[0], root), ...rest };
    } else {
      break;
    }
  }
  return node;
}

const TYPES = {
  __proto__: null, // (a schema's "type" is looked up here: "toString" is no type)
  string: ["text", (v) => typeof v === "string"],
  integer: ["a whole number", (v) => typeof v === "number" && Number.isInteger(v)],
  number: ["a number", (v) => typeof v === "number" && Number.isFinite(v)],
  boolean: ["true or false", (v) => typeof v === "boolean"],
  object: ["an object", isObject],
  array: ["a list", Array.isArray],
  null: ["null", (v) => v === null],
};

function shown(value) {
  const text = valueText(value === undefined ? null : value);
  const quoted = typeof value === "string" ? JSON.stringify(value) : text;
  return quoted.length <= 60 ? quoted : `${quoted.slice(0, 57)}...`;
}

function typeFits(schema, value, root) {
  const kind = resolved(schema, root).type;
  return typeof kind === "string" && kind in TYPES && TYPES[kind][1](value);
}

function kindsOf(options, root) {
  const said = options.map((option) => {
    const kind = resolved(option, root).type;
    return typeof kind === "string" && kind in TYPES ? TYPES[kind][0] : "its other shape";
  });
  return [...new Set(said)].join(", ");
}

function check(schema, value, where, root, problems) {
  const node = resolved(schema, root);
  for (const part of Array.isArray(node.allOf) ? node.allOf : []) check(part, value, where, root, problems);
  const options = node.anyOf || node.oneOf;
  if (Array.isArray(options) && options.length) {
    const found = options.map((option) => {
      const seen = [];
      check(option, value, where, root, seen);
      return seen;
    });
    if (found.every((seen) => seen.length)) {
      // The option of the value's own type says best what is wrong inside it.
      const shaped = found.filter((_, i) => typeFits(options[i], value, root));
      if (shaped.length === 1) problems.push(...shaped[0]);
      else problems.push({ path: where, message: `${shown(value)} fits none of ${kindsOf(options, root)}` });
    }
    return;
  }
  if ("const" in node && JSON.stringify(value) !== JSON.stringify(node.const)) {
    problems.push({ path: where, message: `must be ${shown(node.const)}, not ${shown(value)}` });
    return;
  }
  if (Array.isArray(node.enum) && !node.enum.some((item) => JSON.stringify(item) === JSON.stringify(value))) {
    problems.push({ path: where, message: `must be one of ${node.enum.map(shown).join(", ")}, not ${shown(value)}` });
    return;
  }
  const kinds = (Array.isArray(node.type) ? node.type : node.type ? [node.type] : []).filter((kind) => kind in TYPES);
  if (kinds.length && !kinds.some((kind) => TYPES[kind][1](value))) {
    const said = kinds.map((kind) => TYPES[kind][0]).join(" or ");
    problems.push({ path: where, message: `must be ${said}, not ${shown(value)}` });
    return;
  }
  if (typeof value === "number") {
    for (const [key, holds, said] of [
      ["minimum", (bound) => value >= bound, "at least"],
      ["maximum", (bound) => value <= bound, "at most"],
      ["exclusiveMinimum", (bound) => value > bound, "above"],
      ["exclusiveMaximum", (bound) => value < bound, "below"],
    ]) {
      if (typeof node[key] === "number" && !holds(node[key])) {
        problems.push({ path: where, message: `must be ${said} ${node[key]}, not ${value}` });
      }
    }
  }
  if (isObject(value)) {
    const properties = isObject(node.properties) ? node.properties : {};
    const prefix = where ? `${where}.` : "";
    for (const name of Array.isArray(node.required) ? node.required : []) {
      if (!Object.hasOwn(value, name)) problems.push({ path: `${prefix}${name}`, message: "is required" });
    }
    for (const [name, item] of Object.entries(value)) {
      if (Object.hasOwn(properties, name)) check(properties[name], item, `${prefix}${name}`, root, problems);
      else if (node.additionalProperties === false) {
        const fields = Object.keys(properties).join(", ") || "none";
        problems.push({ path: `${prefix}${name}`, message: `is not a field here; the fields are ${fields}` });
      }
    }
  } else if (Array.isArray(value) && isObject(node.items)) {
    value.forEach((item, i) => check(node.items, item, `${where}[${i}]`, root, problems));
  }
}

/**
 * What is wrong with `args` by the tool's `schema`: `[{field, message}]`, `field` the argument a
 * problem is in ("" for the arguments as a whole); a problem inside a nested value names where
 * in it (`zip: must be a whole number, not "9"` on the field `address`). Empty: they fit.
 */
export function checkArguments(schema, args) {
  const root = isObject(schema) ? schema : {};
  const problems = [];
  check(root, args, "", root, problems);
  return problems.map(({ path, message }) => {
    const match = /^([^.[]+)(.*)$/.exec(path || "");
    if (!match) return { field: "", message };
    const inside = match[2].replace(/^\./, "");
    return { field: match[1], message: inside ? `${inside}: ${message}` : message };
  });
}

/** Whether two JSON values are the same (objects compared key by key, whatever their order). */
export function sameJSON(a, b) {
  if (a === b) return true;
  if (Array.isArray(a)) return Array.isArray(b) && a.length === b.length && a.every((item, i) => sameJSON(item, b[i]));
  if (isObject(a) && isObject(b)) {
    const keys = Object.keys(a);
    return keys.length === Object.keys(b).length && keys.every((key) => Object.hasOwn(b, key) && sameJSON(a[key], b[key]));
  }
  return false;
}
