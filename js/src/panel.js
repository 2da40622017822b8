// Everything around the drawing: status line, pending request, log, streamed text, controls.
import { approvalView } from "./approval.js";
import { deciding, reasonField } from "./decide.js";
import { h } from "./dom.js";
import { foldBox, folding } from "./fold.js";
import { collected, markField, toolCallView } from "./toolform.js";

function fmtElapsed(seconds) {
  if (!Number.isFinite(seconds)) return "0.0s";
  return seconds < 60 ? `${seconds.toFixed(1)}s` : `${Math.floor(seconds / 60)}m${Math.round(seconds % 60)}s`;
}

/** The status line: state, step / max steps, tokens, cost, elapsed. */
export function renderStatus(el, status) {
  el.replaceChildren();
  const state = status.outcome || status.state || "idle";
  el.appendChild(h("span", `nbg-pill nbg-state-${state}`, state));
  if (status.current) el.appendChild(h("span", "nbg-stat nbg-now", `\u25B6 ${status.current}`));
  const stats = [
    ["step", `${status.step || 0}${status.max_steps ? ` / ${status.max_steps}` : ""}`],
    ["tokens", String(status.tokens || 0)],
    ["cost", `$${(status.cost || 0).toFixed(4)}`],
    ["elapsed", fmtElapsed(status.elapsed || 0)],
  ];
  for (const [name, value] of stats) {
    const stat = h("span", `nbg-stat nbg-stat-${name}`);
    stat.appendChild(h("span", "nbg-stat-name", `${name} `));
    stat.appendChild(h("b", "", value));
    el.appendChild(stat);
  }
  if (status.reason) el.appendChild(h("div", "nbg-reason", status.reason));
}

/**
 * Enter in `input` submits `form`. Said explicitly: inside a notebook's output the browser's
 * implicit submission on Enter does not happen (tried in JupyterLab 4 with Chromium).
 */
export function submitOnEnter(input, form) {
  input.addEventListener("keydown", (event) => {
    if (event.key !== "Enter" || event.isComposing || event.shiftKey) return;
    event.preventDefault();
    form.requestSubmit();
  });
}

/** Where a pause waits: its node's path, and its branch when it runs in one. */
export function pauseWhere(pause) {
  const where = pause.path || pause.node;
  return pause.branch ? `${where} \u00B7 branch ${pause.branch}` : where;
}

const KINDS = { approval: "Approval", input: "Input", breakpoint: "Breakpoint", budget: "Budget", tool: "Tool call" };

/** What a box asks, for its `aria-label`: a tool pause names its calls when it has no prompt. */
function askedOf(pause) {
  if (pause.prompt) return pause.prompt;
  return (pause.tool_calls || []).map((call) => call.name).join(", ");
}

/**
 * What a pause warns before it is answered: the node code (model and tool calls) a resume from
 * a checkpoint runs again. Answered in a live run, nothing runs again; a run that has ended
 * `interrupted` is resumed by its answer, so there the note is what will happen.
 */
export function rerunWarning(pause, ended) {
  const note = pause.reruns && pause.reruns.note;
  if (!note) return "";
  if (pause.reruns.live && !ended) return `\u21BB Answering runs it again: ${note}.`;
  return ended
    ? `\u21BB Answering resumes the run from its checkpoint: ${note}.`
    : `\u21BB Answered here, nothing runs again; if the run is resumed from its checkpoint instead (after a restart), ${note}.`;
}

const LIMIT_NAMES = { turns: "model calls", tokens: "tokens", cost: "cost ($)" };

/** A budget pause's figures, one line per limit: "tokens: 400 used of 450, the next step may take 100". */
export function budgetLines(figures) {
  const f = figures || {};
  const fmt = (key, value) => (key === "cost" ? Number(value || 0).toFixed(4) : String(value ?? 0));
  return Object.keys(f.limits || {}).map((key) => {
    const next = (f.next || {})[key];
    const over = (f.over || []).includes(key);
    return {
      key,
      over,
      text: `${LIMIT_NAMES[key] || key}: ${fmt(key, (f.used || {})[key])} used of ${fmt(key, f.limits[key])}${next ? `, the next step may take ${fmt(key, next)}` : ""}`,
    };
  });
}

/** The raised limits a budget form sends: its fields that hold a number, by limit. */
export function raisedLimits(fields) {
  const limits = {};
  for (const [key, text] of fields) {
    const value = Number(text);
    if (String(text).trim() !== "" && Number.isFinite(value)) limits[key] = key === "cost" ? value : Math.ceil(value);
  }
  return limits;
}

function budgetForm(pause, answer) {
  const figures = pause.budget || {};
  const form = h("form", "nbg-budget-form");
  const list = h("div", "nbg-budget-figures");
  const fields = [];
  for (const { key, over, text } of budgetLines(figures)) {
    const line = h("label", `nbg-budget-line${over ? " nbg-budget-over" : ""}`);
    line.appendChild(h("span", "nbg-budget-text", text));
    const input = h("input", "nbg-budget-input");
    input.type = "number";
    input.min = "0";
    input.step = key === "cost" ? "any" : "1";
    input.dataset.limit = key;
    const suggested = (figures.suggested || {})[key];
    input.value = suggested != null ? String(suggested) : String(figures.limits[key]);
    input.setAttribute("aria-label", `New ${LIMIT_NAMES[key] || key} limit`);
    submitOnEnter(input, form);
    line.appendChild(input);
    list.appendChild(line);
    fields.push(input);
  }
  const raise = h("button", "nbg-button nbg-approve nbg-budget-raise", "Raise and go on");
  raise.type = "submit";
  const stop = h("button", "nbg-button nbg-deny nbg-budget-stop", "Stop");
  stop.type = "button";
  stop.title = "End the run (aborted); it can be resumed from here";
  stop.addEventListener("click", () => answer({ type: "answer", value: "stop" }));
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    answer({ type: "answer", value: raisedLimits(fields.map((input) => [input.dataset.limit, input.value])) });
  });
  const buttons = h("div", "nbg-pause-actions");
  buttons.append(raise, stop);
  form.append(list, buttons);
  return form;
}

/**
 * A breakpoint's Continue with the state edit typed under "Edit state": the word alone when the
 * field is empty, `{answer: "continue", update}` with an object, or `{error}` for anything else.
 */
export function breakAnswer(text) {
  if (!String(text || "").trim()) return { value: "continue" };
  let update;
  try {
    update = JSON.parse(text);
  } catch (error) {
    return { error: `is not valid JSON: ${error.message}` };
  }
  if (update === null || typeof update !== "object" || Array.isArray(update)) {
    return { error: 'must be a JSON object of fields and their new values, such as {"draft": "..."}' };
  }
  return { value: Object.keys(update).length ? { answer: "continue", update } : "continue" };
}

let editIds = 0;

/** "Edit state": a disclosure with a JSON field whose update a breakpoint's Continue carries. */
function stateEdit() {
  const details = h("details", "nbg-fold nbg-break-edit");
  details.appendChild(h("summary", "nbg-fold-head", "Edit state"));
  const id = `nbg-edit${++editIds}`;
  const label = h("label", "nbg-field-label", "Update to the state (JSON), applied by Continue");
  label.htmlFor = id;
  const area = h("textarea", "nbg-field-input nbg-field-area nbg-break-update-text");
  area.id = id;
  area.rows = 3;
  area.spellcheck = false;
  area.placeholder = '{"field": "new value"}';
  const error = h("div", "nbg-field-error");
  error.id = `${id}-error`;
  error.hidden = true;
  area.addEventListener("input", () => markField(area, error, ""));
  details.append(label, area, error);
  return { details, area, error };
}

/** A LangGraph run's static breakpoint: Continue carries the state edit, if one is typed (and fits). */
function continueWith(edit, answer) {
  const read = breakAnswer(edit.area.value);
  markField(edit.area, edit.error, read.error ? `The update ${read.error}` : "");
  if (read.error) {
    edit.details.open = true;
    edit.area.focus();
  } else {
    answer({ type: "answer", value: read.value });
  }
}

/** A breakpoint's answers: the word sent, the label, classes, and what it does. */
const BREAK_BUTTONS = [
  ["continue", "Continue", "nbg-approve nbg-break-continue", "Run on to the next breakpoint"],
  ["step", "Step", "nbg-break-step", "Run the next node, then pause again before the one after it"],
  ["stop", "Stop", "nbg-deny nbg-break-stop", "End the run (aborted); it can be resumed from here"],
];

/** The kinds of pause whose box takes a reason. */
const DECIDED = new Set(["approval", "tool"]);

/** The controls a sent box disables while the kernel answers. */
const CONTROLS = "button, input, select, textarea";

/**
 * One pause's box. `how`: `identity` (who answers from this kernel), `now()` (the kernel's
 * clock, in seconds), `canStand` (the run takes standing approvals). Every answer it sends
 * carries the digest of what it shows (`shown`); an approval's or a tool call's, the reason typed too.
 */
function pauseBox(pause, send, ended, how) {
  const box = h("div", `nbg-pause nbg-pause-${pause.kind}`);
  box.dataset.pause = pause.id;
  box.dataset.shown = pause.shown || "";
  box.dataset.path = pause.path || pause.node;
  box.dataset.branch = pause.branch || "";
  box.dataset.ended = String(ended);
  box.setAttribute("role", "group");
  const what = KINDS[pause.kind] || "Input";
  box.setAttribute("aria-label", `${what} for ${pauseWhere(pause)}: ${askedOf(pause)}`);
  box.appendChild(h("div", "nbg-pause-node", `${what} \u2014 ${pauseWhere(pause)}`));
  if (pause.prompt || pause.kind !== "tool") box.appendChild(h("div", "nbg-pause-prompt", pause.prompt));
  // Keys pressed on the box's buttons, folds and checkboxes are the box's: JupyterLab's notebook
  // shortcuts skip text fields only, and would take a letter as a command ("a" inserts a cell,
  // "d d" deletes one). Shortcuts with a modifier, and Escape, still reach it.
  box.addEventListener("keydown", (event) => {
    if (event.key !== "Escape" && !event.ctrlKey && !event.metaKey && !event.altKey) event.stopPropagation();
  });
  const decider = deciding(pause, how.identity);
  box.appendChild(decider.el);
  box.tick = decider.tick; // (the view calls it once a second)
  decider.tick(how.now());
  const warning = rerunWarning(pause, ended);
  if (warning) {
    const note = h("div", "nbg-pause-rerun", warning);
    note.setAttribute("role", "note");
    box.appendChild(note);
  }
  if (pause.kind === "breakpoint" && pause.at === "after" && pause.update != null) {
    // What the node returned; its routing waits for the answer.
    const text = JSON.stringify(pause.update, null, 1);
    const shown = folding(pause.update);
    const update = h("pre", "nbg-text nbg-break-update", text);
    box.appendChild(shown.folded ? foldBox(shown.head, shown.size, update) : update);
  }
  if (pause.kind === "approval") box.appendChild(approvalView(pause));
  const row = h("div", "nbg-pause-actions");
  let primary = null; // what Enter in the reason field does: Approve, or a tool pause's Approve or Submit
  // A decision on an approval or a tool call takes a reason, kept in its record (an answer to a
  // question, a breakpoint or a budget is its own reason).
  const reason = DECIDED.has(pause.kind) ? reasonField(pause, () => primary && primary()) : null;
  // Where the kernel says why it refused this box's answer (it shows something else now, say).
  const refusal = h("div", "nbg-field-error nbg-pause-refused");
  refusal.setAttribute("role", "alert");
  refusal.hidden = true;
  // Once an answer is sent the box's controls wait for the kernel (a stale click is ignored there anyway).
  const answer = (message) => {
    const why = reason ? reason.read() : undefined;
    const sent = { ...message, pause_id: pause.id, shown: pause.shown || undefined, reason: why };
    if (why && pause.kind === "tool" && Array.isArray(message.value)) {
      sent.value = message.value.map((decided) => ({ ...decided, reason: why })); // (a standing approval keeps it too)
    }
    box.classList.add("nbg-sent");
    for (const control of box.querySelectorAll(CONTROLS)) control.disabled = true;
    refusal.hidden = true;
    send(sent);
  };
  if (pause.kind === "budget") {
    row.appendChild(budgetForm(pause, answer));
  } else if (pause.kind === "tool") {
    primary = toolBox(box, row, pause, answer, how.canStand);
  } else if (pause.kind === "breakpoint") {
    // The same "answer" message as an option: the kernel's run.respond takes the word.
    const edit = pause.takes_update ? stateEdit() : null;
    for (const [value, label, cls, title] of BREAK_BUTTONS) {
      const button = h("button", `nbg-button ${cls}`, label);
      button.title = title;
      const go = value === "continue" && edit ? () => continueWith(edit, answer) : () => answer({ type: "answer", value });
      button.addEventListener("click", go);
      row.appendChild(button);
    }
    if (edit) box.appendChild(edit.details);
  } else if (pause.kind === "approval") {
    const approve = h("button", "nbg-button nbg-approve", "Approve");
    const deny = h("button", "nbg-button nbg-deny", "Deny");
    approve.addEventListener("click", () => answer({ type: "approve" }));
    deny.addEventListener("click", () => answer({ type: "deny" }));
    primary = () => approve.click();
    row.append(approve, deny);
  } else if (pause.options && pause.options.length) {
    for (const option of pause.options) {
      const button = h("button", "nbg-button nbg-option", option);
      button.addEventListener("click", () => answer({ type: "answer", value: option }));
      row.appendChild(button);
    }
  } else {
    // A form: Enter in the field submits it.
    const form = h("form", "nbg-answer-form");
    const input = h("input", "nbg-answer");
    input.type = pause.input_kind === "number" ? "number" : "text";
    input.placeholder = "Type an answer\u2026";
    input.setAttribute("aria-label", `${pause.prompt} (${pauseWhere(pause)})`);
    const submit = h("button", "nbg-button nbg-submit", "Send");
    submit.type = "submit";
    form.append(input, submit);
    submitOnEnter(input, form);
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      const value = pause.input_kind === "number" ? Number(input.value) : input.value;
      answer({ type: "answer", value });
    });
    row.appendChild(form);
  }
  // (The reason after the actions: the keyboard reaches them first, as before there was one.)
  box.append(row, ...(reason ? [reason.el] : []), refusal);
  return box;
}

/**
 * A tool pause: a view per call; with several, each call's choice and one Submit for them all.
 * Returns what Enter in the box's reason field does: approve the one call, or submit them all.
 */
function toolBox(box, row, pause, answer, canStand) {
  const calls = pause.tool_calls || [];
  const several = calls.length > 1;
  const views = calls.map((call) =>
    toolCallView(call, {
      several,
      submitOnEnter,
      canStand,
      decided: (decision) => {
        if (!several) answer({ type: "answer", value: [decision] });
      },
    }),
  );
  for (const view of views) box.appendChild(view.el);
  if (!several) return views.length ? views[0].submit : null;
  const submit = h("button", "nbg-button nbg-approve nbg-tool-submit", "Submit decisions");
  submit.title = "Send the decision chosen for each call";
  const missing = h("div", "nbg-field-error nbg-tool-missing");
  missing.setAttribute("role", "alert");
  missing.hidden = true;
  submit.addEventListener("click", () => {
    const made = collected(calls, views.map((view) => view.current()));
    missing.textContent = made.missing ? `Choose a decision for each call first: ${made.missing.join(", ")}` : "";
    missing.hidden = !made.missing;
    if (made.value) answer({ type: "answer", value: made.value });
  });
  row.append(submit, missing);
  return () => submit.click();
}

/**
 * The panel for open requests, one box per pause (several while branches wait), each with
 * its own option buttons or text field for input, or Approve / Deny for an approval. Each
 * answer carries the pause id, so a stale click is ignored by the kernel. Boxes are kept
 * by pause id, so answering one leaves what is typed (and the focus) in the others.
 * `ended`: the run has ended `interrupted`, and an answer resumes it from its checkpoint.
 * `how`: who answers, the kernel's clock and whether the run takes standing approvals (see pauseBox).
 */
export function renderPending(el, pending, send, ended = false, how = {}) {
  const told = { identity: how.identity || "", now: how.now || (() => Date.now() / 1000), canStand: Boolean(how.canStand) };
  // (A box made while the run could wait says another thing than one for an ended run; one made
  // for what a pause showed before, or for another person, is made again.)
  const same = (box) => box.dataset.ended === String(ended) && box.dataset.identity === told.identity && box.dataset.stand === String(told.canStand);
  const kept = new Map([...el.children].filter(same).map((box) => [`${box.dataset.pause} ${box.dataset.shown}`, box]));
  const boxes = pending.map((pause) => {
    const box = kept.get(`${pause.id} ${pause.shown || ""}`) || pauseBox(pause, send, ended, told);
    box.dataset.identity = told.identity;
    box.dataset.stand = String(told.canStand);
    return box;
  });
  for (const box of [...el.children]) if (!boxes.includes(box)) box.remove();
  boxes.forEach((box, i) => {
    if (el.children[i] !== box) el.insertBefore(box, el.children[i] || null);
  });
  el.hidden = pending.length === 0;
}

/** Say in its box why the kernel refused an answer to pause `pauseId`; false if no box shows it. */
export function showRefusal(el, pauseId, message) {
  const box = [...el.children].find((child) => child.dataset.pause === pauseId);
  const refusal = box && box.querySelector(".nbg-pause-refused");
  if (!refusal) return false;
  refusal.textContent = message;
  refusal.hidden = false;
  return true;
}

/** Count each box's deadline down to `now` (the kernel's clock, in seconds). */
export function tickPending(el, now) {
  for (const box of el.children) if (box.tick) box.tick(now);
}

/** Let the open requests be answered again (the kernel refused an answer). */
export function reopenPending(el) {
  for (const box of el.querySelectorAll(".nbg-sent")) {
    box.classList.remove("nbg-sent");
    // (A read-only checkbox or select is disabled for good: `data-locked`.)
    for (const control of box.querySelectorAll(CONTROLS)) if (!control.dataset.locked) control.disabled = false;
  }
}

const STEP_LINE = /^\s*(\d+)  (.+)  [\d.]+ ms$/;

/** A step's log line ("   3  ask[1]  0.4 ms"): its step and place, else null. */
export function stepOfLine(line) {
  const match = STEP_LINE.exec(line);
  return match ? { step: Number(match[1]), where: match[2] } : null;
}

function logLine(line) {
  const el = h("div", "nbg-log-line", line);
  const step = stepOfLine(line);
  if (step) {
    // A step's line opens it in the inspector: a click, or Enter / Space on the focused line.
    el.classList.add("nbg-log-step");
    el.tabIndex = 0;
    el.setAttribute("role", "button");
    el.dataset.step = String(step.step);
    el.dataset.where = step.where;
    el.title = "Inspect this step";
  }
  return el;
}

/** The last lines of the run's log, newest at the bottom (and scrolled to, see pinLog). */
export function renderLog(el, lines) {
  el.replaceChildren(...lines.map(logLine));
  if (el.dataset.pinned !== "false") el.scrollTop = el.scrollHeight;
}

/** Call `open({step, where}, line)` when a step's log line is clicked or Enter is pressed on it. */
export function onStepLine(el, open) {
  const fire = (event) => {
    const line = event.target.closest && event.target.closest(".nbg-log-step");
    if (!line || !el.contains(line)) return false;
    open({ step: Number(line.dataset.step), where: line.dataset.where }, line);
    return true;
  };
  el.addEventListener("click", fire);
  el.addEventListener("keydown", (event) => {
    if ((event.key === "Enter" || event.key === " ") && fire(event)) event.preventDefault();
  });
}

/**
 * Keep the log scrolled to its newest line, unless the reader scrolled up to read. Also when
 * the lines came while it was hidden or not laid out yet: a finished run's whole log arrives
 * at once, often before the log is shown, and a scroll set then stays at the top (the log
 * showed the first lines of a run instead of its last). Returns a cleanup.
 */
export function pinLog(el) {
  el.dataset.pinned = "true";
  const onScroll = () => {
    if (el.clientHeight) el.dataset.pinned = String(el.scrollTop + el.clientHeight >= el.scrollHeight - 4);
  };
  // Shown, or resized: scroll to the end again if pinned there.
  const observer = typeof ResizeObserver === "function"
    ? new ResizeObserver(() => {
      if (el.dataset.pinned !== "false") el.scrollTop = el.scrollHeight;
    })
    : null;
  el.addEventListener("scroll", onScroll);
  if (observer) observer.observe(el);
  return () => {
    el.removeEventListener("scroll", onScroll);
    if (observer) observer.disconnect();
  };
}
