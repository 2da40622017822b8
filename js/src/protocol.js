// The messages between the views and the kernel, declared once in nbgraph/static/protocol.json
// (which the kernel reads too): what a view sends is checked before it goes, what it receives
// before it is handled; a message the protocol does not allow is refused with a console error.
import protocol from "../../nbgraph/static/protocol.json" with { type: "json" };

export { protocol };

const TYPES = {
  string: ["a string", (v) => typeof v === "string"],
  integer: ["a whole number", (v) => Number.isInteger(v)],
  number: ["a number", (v) => typeof v === "number" && Number.isFinite(v)],
  boolean: ["true or false", (v) => typeof v === "boolean"],
  object: ["an object", (v) => typeof v === "object" && v !== null && !Array.isArray(v)],
  array: ["a list", (v) => Array.isArray(v)],
  any: ["a value", () => true],
};

const shown = (value) => {
  const text = JSON.stringify(value);
  return text === undefined ? String(value) : text.length > 80 ? `${text.slice(0, 80)}\u2026` : text;
};

/**
 * What is wrong with `message` by the declared `kinds` (one view's messages one way), or "".
 * @param {Record<string, {required?: object, optional?: object, one_of?: string[]}>} kinds
 */
export function problemOf(kinds, message) {
  if (typeof message !== "object" || message === null || typeof message.type !== "string") {
    return `a message without a type: ${shown(message)}`;
  }
  const spec = kinds[message.type];
  if (!spec) return `unknown message type ${shown(message.type)}; expected one of: ${Object.keys(kinds).join(", ")}`;
  const present = (field) => message[field] !== undefined && message[field] !== null;
  for (const [field, type] of Object.entries(spec.required || {})) {
    if (!present(field)) return `message ${shown(message.type)} needs ${shown(field)} (${TYPES[type][0]})`;
  }
  for (const [field, type] of Object.entries({ ...spec.required, ...spec.optional })) {
    if (present(field) && !TYPES[type][1](message[field])) {
      return `message ${shown(message.type)}: ${shown(field)} must be ${TYPES[type][0]}, not ${shown(message[field])}`;
    }
  }
  if (spec.one_of && !spec.one_of.some(present)) {
    return `message ${shown(message.type)} needs one of ${spec.one_of.map(shown).join(", ")}`;
  }
  return "";
}

/** A send for `view`'s messages to the kernel: one the protocol does not allow is refused here. */
export function sender(view, model) {
  return (message) => {
    const problem = problemOf(protocol[view].to_kernel, message);
    if (problem) {
      console.error(`nbgraph ${view} view: not sent, ${problem}`);
      return;
    }
    model.send(message);
  };
}

/**
 * The handler of `view`'s messages from the kernel: `handlers` has one function for each kind
 * the protocol declares (checked here, once); a message it does not allow is refused.
 */
export function receiver(view, handlers) {
  const kinds = protocol[view].to_view;
  const declared = Object.keys(kinds).sort().join();
  if (Object.keys(handlers).sort().join() !== declared) {
    throw new Error(`nbgraph ${view} view: handlers for ${Object.keys(handlers).sort().join()}, but the protocol declares ${declared}`);
  }
  return (message) => {
    const problem = problemOf(kinds, message);
    if (problem) {
      console.error(`nbgraph ${view} view: refused a message from the kernel, ${problem}`);
      return;
    }
    handlers[message.type](message);
  };
}
