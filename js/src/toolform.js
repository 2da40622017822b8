// A tool call waiting for a person: its arguments as a form built from the tool's JSON schema
// (the part of JSON Schema pydantic and MCP servers write for arguments), and the decision a
// button makes of it. An edit is checked here (schema.js) before it is sent, so a problem shows
// next to its field and nothing is sent while one shows; the kernel checks it again.
//
// A control that was not changed stands for the argument exactly as the model gave it, so an
// untouched form approves the call as asked (whatever the control can show), and only a
// changed control's text is read back into a value.
import { h } from "./dom.js";
import { foldBox, folding, valueText } from "./fold.js";
import { checkArguments, isObject, resolved, sameJSON } from "./schema.js";

/** A string longer than this, or of more than one line, is edited in a text area. */
const LONG_TEXT = 60;

// -- the form's fields --------------------------------------------------------------------

const isNull = (option) => isObject(option) && option.type === "null";

/** A field's schema without its "or null": `{schema, nullable}` (`anyOf [X, null]`, `type: [X, "null"]`). */
function optional(schema, root) {
  const node = resolved(schema, root);
  const options = node.anyOf || node.oneOf;
  if (Array.isArray(options) && options.some(isNull)) {
    const rest = options.filter((option) => !isNull(option));
    const { anyOf, oneOf, ...outer } = node;
    const inner = rest.length === 1 ? { ...outer, ...resolved(rest[0], root) } : { ...outer, anyOf: rest };
    return { schema: inner, nullable: true };
  }
  if (Array.isArray(node.type) && node.type.includes("null")) {
    const kinds = node.type.filter((kind) => kind !== "null");
    return { schema: { ...node, type: kinds.length === 1 ? kinds[0] : kinds }, nullable: true };
  }
  return { schema: node, nullable: false };
}

const primitive = (value) => value === null || ["string", "number", "boolean"].includes(typeof value);

/**
 * The control for a field: "text", "longtext" (a string in a text area), "number", "integer",
 * "select" (an enum), "checkbox", or "json" (objects, lists, unions, anything unknown). With no
 * schema for the field, its current value says.
 */
export function controlOf(schema, nullable, value) {
  const fits = value === undefined || value === null;
  if (Array.isArray(schema.enum) && schema.enum.length && schema.enum.every(primitive)) return "select";
  if ("const" in schema && primitive(schema.const)) return "select";
  const kind = schema.type;
  if (kind === "string" && (fits || typeof value === "string")) {
    return typeof value === "string" && (value.length > LONG_TEXT || value.includes("\n")) ? "longtext" : "text";
  }
  if ((kind === "number" || kind === "integer") && (fits || typeof value === "number")) return kind;
  // (A checkbox cannot say "none": an optional boolean is a choice of true, false or none.)
  if (kind === "boolean" && (fits || typeof value === "boolean")) return nullable ? "select" : "checkbox";
  if (kind === undefined && !schema.anyOf && !schema.oneOf && !schema.allOf && !schema.properties) {
    if (typeof value === "string") return value.length > LONG_TEXT || value.includes("\n") ? "longtext" : "text";
    if (typeof value === "number") return "number";
    if (typeof value === "boolean") return "checkbox";
  }
  return "json";
}

/** What a control's text starts as, for the argument's current value (absent: `undefined`). */
function initialOf(control, value, schema) {
  if (control === "checkbox") return typeof value === "boolean" ? value : schema.default === true;
  if (value === undefined || value === null) return "";
  if (control === "select") return JSON.stringify(value);
  if (control === "json") {
    // (One line while it is short: a textarea of "[", "  \"x\"", "]" says little in three rows.)
    const compact = JSON.stringify(value);
    return compact.length <= LONG_TEXT ? compact : JSON.stringify(value, null, 2);
  }
  return typeof value === "string" ? value : valueText(value);
}

function optionsOf(control, schema, nullable, required, value) {
  if (control !== "select") return [];
  const values = Array.isArray(schema.enum) ? schema.enum : "const" in schema ? [schema.const] : [true, false];
  const options = values.map((item) => ({ value: JSON.stringify(item), label: valueText(item) }));
  // A value the model gave that the schema does not list stays choosable, so an untouched form
  // sends what the model asked (and the check says what is wrong with it, if it is edited).
  if (value !== undefined && value !== null && !options.some((option) => option.value === JSON.stringify(value))) {
    options.push({ value: JSON.stringify(value), label: valueText(value) });
  }
  if (nullable) options.unshift({ value: "", label: "(none)" });
  else if (!required) options.unshift({ value: "", label: "(default)" });
  else if (value === undefined || value === null) options.unshift({ value: "", label: "(choose)" });
  return options;
}

/** What a field takes, as a hint beside its label. */
function kindText(control, schema) {
  if (control === "integer") return "whole number";
  if (control === "number") return "number";
  if (control === "checkbox" || (control === "select" && schema.type === "boolean")) return "true / false";
  if (control === "select") return "one of";
  if (control !== "json") return "text";
  if (schema.type === "array") return "JSON list";
  return schema.type === "object" || schema.properties ? "JSON object" : "JSON";
}

/**
 * The form for a call's arguments: one field per property of the schema (in its order), then any
 * argument the schema does not name. Each field: `{name, control, required, nullable, options,
 * initial, given, value, kind, description, folded}`; `initial` is the control's starting text
 * (or checked state), `given`/`value` the argument as the model gave it.
 */
export function formFields(schema, args) {
  const root = isObject(schema) ? schema : {};
  const object = resolved(root, root);
  const properties = isObject(object.properties) ? object.properties : {};
  const required = new Set(Array.isArray(object.required) ? object.required : []);
  const given = isObject(args) ? args : {};
  const names = [...Object.keys(properties), ...Object.keys(given).filter((name) => !Object.hasOwn(properties, name))];
  return names.map((name) => {
    const has = Object.hasOwn(given, name);
    const value = has ? given[name] : undefined;
    const { schema: field, nullable } = optional(Object.hasOwn(properties, name) ? properties[name] : {}, root);
    const control = controlOf(field, nullable, value);
    const initial = initialOf(control, value, field);
    const area = control === "json" || control === "longtext";
    const shown = area ? folding(has ? value : "") : { folded: false };
    return {
      name,
      control,
      required: required.has(name),
      nullable,
      options: optionsOf(control, field, nullable, required.has(name), value),
      initial,
      given: has,
      value,
      kind: kindText(control, field),
      description: typeof field.description === "string" ? field.description : "",
      folded: shown.folded ? { head: shown.head, size: shown.size } : null,
    };
  });
}

// -- reading the form -----------------------------------------------------------------------

/** A control left empty: none (null) when the field takes it, the tool's default when it is optional. */
function emptied(field) {
  if (field.nullable) return { value: null };
  if (field.required) return { error: "is required" };
  return { absent: true };
}

/**
 * One control's text (or checked state) as the argument it says: `{value}`, `{absent: true}`
 * (left out: the tool's default applies), or `{error}`. A number field holding text that is not
 * a number reads as "?" (the browser gives an empty value for it, which is not "cleared").
 */
export function readField(field, raw) {
  if (raw === field.initial) return field.given ? { value: field.value } : { absent: true };
  switch (field.control) {
    case "checkbox":
      return { value: Boolean(raw) };
    case "select":
      return raw === "" ? emptied(field) : { value: JSON.parse(raw) }; // (the options' values are JSON made here)
    case "number":
    case "integer": {
      const text = String(raw).trim();
      if (text === "") return emptied(field);
      const value = Number(text);
      if (!Number.isFinite(value)) return { error: "must be a number" }; // (the browser keeps what was typed to itself)
      if (field.control === "integer" && !Number.isInteger(value)) return { error: `must be a whole number, not ${text}` };
      return { value };
    }
    case "json": {
      if (String(raw).trim() === "") return emptied(field);
      try {
        return { value: JSON.parse(raw) };
      } catch (error) {
        return { error: `is not valid JSON: ${error.message}` };
      }
    }
    default:
      return raw === "" ? emptied(field) : { value: String(raw) };
  }
}

/** The arguments the form's controls say (`raws`: name -> text or checked state), and each field's problem. */
export function readForm(fields, raws) {
  const args = {};
  const problems = [];
  for (const field of fields) {
    const read = readField(field, Object.hasOwn(raws, field.name) ? raws[field.name] : field.initial);
    if (read.error) problems.push({ field: field.name, message: read.error });
    else if (!read.absent) args[field.name] = read.value;
  }
  return { args, problems };
}

// -- decisions ------------------------------------------------------------------------------

/**
 * A decision on one call: a value inside an "answer" message, not a message of its own (made
 * here, so it does not read as a message kind where the protocol's kinds are looked for).
 */
const decision = (type, rest = {}) => ({ type, ...rest });

/**
 * The decision a button makes of a call: `{decision}` to send, or `{problems}` to show
 * (`[{field, message}]`, `field` an argument, or "message" for the text beside Respond).
 *  - "approve": the call as asked, or as edited (`{type: "edit", arguments}`) when the form's
 *    arguments differ from the model's, once they fit the schema;
 *  - "reject": `{type: "reject", message}`, the message (if any) the model reads as the result;
 *  - "respond": `{type: "respond", message}`, the result given in the tool's place (not empty);
 *  - "standing": `{type: "approve", standing: "run"}`, the call as asked and every later call
 *    of its tool in this run (an edited form is refused: a standing approval approves as asked).
 */
export function decide(call, kind, fields, raws, text = "") {
  if (kind === "standing") {
    // "Approve every later call": this call as asked, and a standing approval of its tool.
    const made = decide(call, "approve", fields, raws);
    if (made.problems) return made;
    if (made.decision.type !== "approve") {
      const problem = `approving every later ${call.name} call runs them as asked: undo your edits first, or Approve with edits`;
      return { problems: [{ field: "", message: problem }] };
    }
    return { decision: decision("approve", { standing: "run" }) };
  }
  if (kind === "reject") return { decision: decision("reject", text.trim() ? { message: text } : {}) };
  if (kind === "respond") {
    if (!text.trim()) return { problems: [{ field: "message", message: "say what the tool's result is" }] };
    return { decision: decision("respond", { message: text }) };
  }
  const { args, problems } = readForm(fields, raws);
  if (problems.length) return { problems };
  if (sameJSON(args, call.arguments || {})) {
    const decisions = call.decisions || ["approve"];
    if (decisions.includes("approve")) return { decision: decision("approve") };
    return { problems: [{ field: "", message: "this call is only run as edited: change an argument first" }] };
  }
  // (Only a call that takes edits has an editable form: a read-only one stays as asked.)
  const wrong = checkArguments(call.parameters, args);
  if (wrong.length) return { problems: wrong };
  return { decision: decision("edit", { arguments: args }) };
}

/** The answer to a pause of several calls: `{value}` once every call has a decision, else `{missing}` (their names). */
export function collected(calls, decisions) {
  const missing = calls.filter((_, i) => !decisions[i]).map((call) => call.name);
  return missing.length ? { missing } : { value: calls.map((_, i) => decisions[i]) };
}

// -- the form, in the page --------------------------------------------------------------------

let ids = 0;

const BUTTONS = {
  approve: ["Approve", "nbg-approve nbg-tool-approve", "Run the call (with your edits, if you made any)"],
  standing: ["", "nbg-tool-standing", "Run this call as asked, and every later call of the tool in this run without asking (revocable)"],
  reject: ["Reject", "nbg-deny nbg-tool-reject", "Do not run it: the model reads your message as its result"],
  respond: ["Respond", "nbg-tool-respond", "Do not run it: your text is its result"],
};

function control(field, id, editable) {
  let el;
  if (field.control === "select") {
    el = h("select", "nbg-field-input");
    for (const option of field.options) {
      const item = h("option", "", option.label);
      item.value = option.value;
      el.appendChild(item);
    }
    el.value = field.initial;
  } else if (field.control === "json" || field.control === "longtext") {
    el = h("textarea", "nbg-field-input nbg-field-area");
    el.value = field.initial;
    el.rows = Math.min(8, Math.max(2, field.initial.split("\n").length));
    el.spellcheck = false;
  } else {
    el = h("input", "nbg-field-input");
    if (field.control === "checkbox") {
      el.type = "checkbox";
      el.checked = field.initial;
    } else if (field.control === "number" || field.control === "integer") {
      el.type = "number";
      el.step = field.control === "integer" ? "1" : "any";
      el.value = field.initial;
    } else {
      el.type = "text";
      el.value = field.initial;
    }
  }
  el.id = id;
  el.name = field.name;
  el.dataset.field = field.name;
  if (field.required) el.setAttribute("aria-required", "true");
  if (!editable) {
    // A checkbox or a select cannot be read-only: disabled, and kept so when the box reopens.
    if (el.tagName === "SELECT" || el.type === "checkbox") {
      el.disabled = true;
      el.dataset.locked = "true";
    } else {
      el.readOnly = true;
    }
  }
  return el;
}

/** A control's text, or its checked state; a number field holding what is not a number says "?". */
function rawOf(el) {
  if (el.type === "checkbox") return el.checked;
  if (el.type === "number" && el.validity && el.validity.badInput) return "?";
  return el.value;
}

/** Show (or clear, with "") a problem next to `el`, named by `aria-describedby`. */
export function markField(el, errorEl, message) {
  errorEl.textContent = message;
  errorEl.hidden = !message;
  const said = (el.getAttribute("aria-describedby") || "").split(" ").filter((id) => id && id !== errorEl.id);
  if (message) {
    el.setAttribute("aria-invalid", "true");
    said.push(errorEl.id);
  } else {
    el.removeAttribute("aria-invalid");
  }
  if (said.length) el.setAttribute("aria-describedby", said.join(" "));
  else el.removeAttribute("aria-describedby");
}

/**
 * One call's view: its name, description, arguments form, and a button per decision it takes.
 * `decided(decision)` is called with a decision that passed its checks: alone in its pause, the
 * call is answered by it; one of `several`, it is that call's choice until the box's Submit.
 * `canStand`: the run takes standing approvals, so the call offers "Approve every later <tool>
 * call in this run". Returns `{el, current, submit}`: `current()` is the chosen decision read
 * again (null: none chosen, or a problem, shown in place); `submit()` approves, as Enter does.
 */
export function toolCallView(call, { several, decided, submitOnEnter, canStand = false }) {
  const decisions = call.decisions || ["approve", "edit", "reject", "respond"];
  const editable = decisions.includes("edit");
  const view = h("div", "nbg-tool-call");
  view.dataset.tool = call.name;
  view.dataset.call = call.call_id || "";
  if (several) {
    view.setAttribute("role", "group");
    view.setAttribute("aria-label", `Tool call ${call.name}`);
  }
  const head = h("div", "nbg-tool-head");
  head.appendChild(h("code", "nbg-tool-name", call.name));
  if (!editable) head.appendChild(h("span", "nbg-tool-readonly", " (arguments as asked; not editable)"));
  view.appendChild(head);
  if (call.description) {
    const said = folding(call.description);
    const text = h("div", "nbg-tool-desc", call.description);
    view.appendChild(said.folded ? foldBox(said.head, said.size, text, "nbg-tool-desc-fold") : text);
  }

  // A read-only form shows the arguments the model gave; an editable one every field it could give.
  const fields = formFields(call.parameters, call.arguments).filter((field) => editable || field.given);
  const form = h("form", "nbg-tool-form");
  const grid = h("div", "nbg-fields");
  form.noValidate = true; // (checked here, with the problem next to its field, not in the browser's bubble)
  const controls = new Map();
  const general = h("div", "nbg-field-error nbg-tool-problem");
  general.id = `nbg-f${++ids}-problem`;
  general.setAttribute("role", "alert");
  general.hidden = true;
  if (!fields.length) form.appendChild(h("div", "nbg-tool-noargs", "No arguments."));
  else form.appendChild(grid);
  for (const field of fields) {
    const id = `nbg-f${++ids}`;
    const row = h("div", `nbg-field nbg-field-${field.control}`);
    row.dataset.field = field.name;
    const label = h("label", "nbg-field-label");
    label.htmlFor = id;
    label.appendChild(h("span", "nbg-field-key", field.name));
    if (field.required) {
      const mark = h("span", "nbg-required", " *");
      mark.title = "required";
      mark.setAttribute("aria-hidden", "true"); // (the control says aria-required)
      label.appendChild(mark);
    }
    label.appendChild(h("span", "nbg-field-kind", ` ${field.kind}`));
    const el = control(field, id, editable);
    const hint = field.description ? h("div", "nbg-field-hint", field.description) : null;
    if (hint) {
      hint.id = `${id}-hint`;
      el.setAttribute("aria-describedby", hint.id);
    }
    const error = h("div", "nbg-field-error");
    error.id = `${id}-error`;
    error.hidden = true;
    const holder = field.folded ? foldBox(field.folded.head, field.folded.size, el, "nbg-field-fold") : el;
    if (el.tagName === "INPUT" && el.type !== "checkbox") submitOnEnter(el, form);
    el.addEventListener("input", () => {
      markField(el, error, ""); // (a problem shown is about what was there before)
      syncApprove();
    });
    el.addEventListener("change", syncApprove);
    row.append(label, holder);
    if (hint) row.appendChild(hint);
    row.appendChild(error);
    grid.appendChild(row);
    controls.set(field.name, { el, error, holder });
  }
  form.appendChild(general);

  const raws = () => Object.fromEntries([...controls].map(([name, { el }]) => [name, rawOf(el)]));

  /** Show each problem next to its field (or under the form), the keyboard on the first. */
  function show(problems) {
    general.hidden = true;
    for (const { el, error } of controls.values()) markField(el, error, "");
    const seen = new Set();
    let first = null;
    for (const { field, message } of problems) {
      const shownAt = controls.get(field);
      if (shownAt && !seen.has(field)) {
        seen.add(field);
        markField(shownAt.el, shownAt.error, message);
        if (shownAt.holder.tagName === "DETAILS") shownAt.holder.open = true;
        first = first || shownAt.el;
      } else if (!shownAt) {
        general.textContent = field ? `${field}: ${message}` : message;
        general.hidden = false;
      }
    }
    if (first) first.focus();
  }

  const buttons = h("div", "nbg-pause-actions nbg-tool-actions");
  const pressed = new Map(); // kind -> its button, pressed when chosen (several calls)
  const messages = new Map(); // kind -> its text field and the place for its problem
  let chosen = null;

  /** The decision `kind` makes now, or null with its problems shown in place. */
  function make(kind) {
    const text = messages.has(kind) ? messages.get(kind).input.value : "";
    const made = decide(call, kind, fields, raws(), text);
    const problems = made.problems || [];
    for (const [name, { input, error }] of messages) {
      const said = name === kind ? problems.find((problem) => problem.field === "message") : null;
      markField(input, error, said ? said.message : "");
      if (said) input.focus();
    }
    show(problems.filter((problem) => !(messages.has(kind) && problem.field === "message")));
    return made.decision || null;
  }

  function choose(kind) {
    const made = make(kind);
    if (!made) return;
    if (several) {
      // With several calls a button chooses; the box's Submit sends them all, read again then.
      chosen = kind;
      for (const [name, button] of pressed) button.setAttribute("aria-pressed", String(name === kind));
      view.dataset.decision = kind;
    }
    decided(made);
  }

  let approve = null;
  function syncApprove() {
    if (!approve) return;
    const { args, problems } = readForm(fields, raws());
    approve.textContent = problems.length || !sameJSON(args, call.arguments || {}) ? "Approve with edits" : "Approve";
  }
  if (decisions.includes("approve") || editable) {
    const [label, cls, title] = BUTTONS.approve;
    approve = h("button", `nbg-button ${cls}`, label);
    approve.type = "submit";
    approve.title = title;
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      choose("approve");
    });
    pressed.set("approve", approve);
    buttons.appendChild(approve);
  }
  if (canStand && decisions.includes("approve")) {
    const [, cls, title] = BUTTONS.standing;
    const always = h("button", `nbg-button ${cls}`, `Approve every later ${call.name} call in this run`);
    always.type = "button";
    always.title = title;
    always.addEventListener("click", () => choose("standing"));
    pressed.set("standing", always);
    buttons.appendChild(always);
  }
  form.appendChild(buttons);
  view.appendChild(form);

  // Reject and Respond: each a text field and its button; Enter in the field sends it.
  for (const kind of ["reject", "respond"]) {
    if (!decisions.includes(kind)) continue;
    const [label, cls, title] = BUTTONS[kind];
    const reason = h("form", `nbg-answer-form nbg-tool-${kind}-form`);
    reason.noValidate = true;
    const input = h("input", `nbg-answer nbg-tool-message nbg-tool-${kind}-text`);
    input.type = "text";
    input.placeholder = kind === "reject" ? "Why not (the model reads this)\u2026" : "The result, in the tool's place\u2026";
    const named = kind === "reject" ? `Message for the model on rejecting ${call.name}` : `Result to give in place of ${call.name}`;
    input.setAttribute("aria-label", named);
    const error = h("div", "nbg-field-error");
    error.id = `nbg-f${++ids}-error`;
    error.hidden = true;
    const button = h("button", `nbg-button ${cls}`, label);
    button.type = "submit";
    button.title = title;
    pressed.set(kind, button);
    messages.set(kind, { input, error });
    submitOnEnter(input, reason);
    input.addEventListener("input", () => markField(input, error, ""));
    reason.addEventListener("submit", (event) => {
      event.preventDefault();
      choose(kind);
    });
    reason.append(input, button, error);
    view.appendChild(reason);
  }
  if (several) for (const button of pressed.values()) button.setAttribute("aria-pressed", "false");
  // The chosen decision as the fields say it now (an edit made after choosing counts), or null.
  return { el: view, current: () => (chosen ? make(chosen) : null), submit: () => form.requestSubmit() };
}
