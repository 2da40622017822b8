// Everything around the drawing: status line, pending request, log, streamed text, controls.

/** @param {string} tag @param {string} cls @param {string} [text] */
export function h(tag, cls, text) {
  const el = document.createElement(tag);
  if (cls) el.className = cls;
  if (text !== undefined) el.textContent = text;
  return el;
}

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

const KINDS = { approval: "Approval", input: "Input", breakpoint: "Breakpoint" };

/** A breakpoint's answers: the word sent, the label, classes, and what it does. */
const BREAK_BUTTONS = [
  ["continue", "Continue", "nbg-approve nbg-break-continue", "Run on to the next breakpoint"],
  ["step", "Step", "nbg-break-step", "Run the next node, then pause again before the one after it"],
  ["stop", "Stop", "nbg-deny nbg-break-stop", "End the run (aborted); it can be resumed from here"],
];

function pauseBox(pause, send) {
  const box = h("div", `nbg-pause nbg-pause-${pause.kind}`);
  box.dataset.pause = pause.id;
  box.dataset.path = pause.path || pause.node;
  box.dataset.branch = pause.branch || "";
  box.setAttribute("role", "group");
  const what = KINDS[pause.kind] || "Input";
  box.setAttribute("aria-label", `${what} for ${pauseWhere(pause)}: ${pause.prompt}`);
  box.appendChild(h("div", "nbg-pause-node", `${what} \u2014 ${pauseWhere(pause)}`));
  box.appendChild(h("div", "nbg-pause-prompt", pause.prompt));
  if (pause.kind === "breakpoint" && pause.at === "after" && pause.update != null) {
    // What the node returned; its routing waits for the answer.
    box.appendChild(h("pre", "nbg-text nbg-break-update", JSON.stringify(pause.update, null, 1)));
  }
  const row = h("div", "nbg-pause-actions");
  // Once an answer is sent the box's controls wait for the kernel (a stale click is ignored there anyway).
  const answer = (message) => {
    box.classList.add("nbg-sent");
    for (const control of box.querySelectorAll("button, input")) control.disabled = true;
    send({ ...message, pause_id: pause.id });
  };
  if (pause.kind === "breakpoint") {
    // The same "answer" message as an option: the kernel's run.respond takes the word.
    for (const [value, label, cls, title] of BREAK_BUTTONS) {
      const button = h("button", `nbg-button ${cls}`, label);
      button.title = title;
      button.addEventListener("click", () => answer({ type: "answer", value }));
      row.appendChild(button);
    }
  } else if (pause.kind === "approval") {
    const approve = h("button", "nbg-button nbg-approve", "Approve");
    const deny = h("button", "nbg-button nbg-deny", "Deny");
    approve.addEventListener("click", () => answer({ type: "approve" }));
    deny.addEventListener("click", () => answer({ type: "deny" }));
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
  box.appendChild(row);
  return box;
}

/**
 * The panel for open requests, one box per pause (several while branches wait), each with
 * its own option buttons or text field for input, or Approve / Deny for an approval. Each
 * answer carries the pause id, so a stale click is ignored by the kernel. Boxes are kept
 * by pause id, so answering one leaves what is typed (and the focus) in the others.
 */
export function renderPending(el, pending, send) {
  const kept = new Map([...el.children].map((box) => [box.dataset.pause, box]));
  const boxes = pending.map((pause) => kept.get(pause.id) || pauseBox(pause, send));
  for (const [id, box] of kept) if (!pending.some((pause) => pause.id === id)) box.remove();
  boxes.forEach((box, i) => {
    if (el.children[i] !== box) el.insertBefore(box, el.children[i] || null);
  });
  el.hidden = pending.length === 0;
}

/** Let the open requests be answered again (the kernel refused an answer). */
export function reopenPending(el) {
  for (const box of el.querySelectorAll(".nbg-sent")) {
    box.classList.remove("nbg-sent");
    for (const control of box.querySelectorAll("button, input")) control.disabled = false;
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
