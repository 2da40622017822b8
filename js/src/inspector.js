// The inspector: one step of a run, asked of the kernel ({type: "inspect", step | node | frame})
// and answered with {type: "inspection", ...}: where it ran, the state it saw, its update as a
// diff, the edge that fired and every candidate with its condition's value, tokens, cost,
// time, error, and an LLM node's replies and tool calls. Escape closes it and gives the focus
// back to what opened it.

const CLIP = 1200;

/** Compact JSON, clipped to a readable length. */
export function compact(value) {
  let text;
  try {
    text = JSON.stringify(value);
  } catch {
    text = String(value);
  }
  if (text === undefined) text = String(value);
  return text.length > CLIP ? `${text.slice(0, CLIP)}\u2026 (${text.length} chars)` : text;
}

/** The change as diff lines: [sign, text] with + added / appended, ~ changed, - removed. */
export function diffLines(change) {
  const lines = [];
  const c = change || {};
  for (const [field, value] of Object.entries(c.added || {})) lines.push(["+", `${field}: ${compact(value)}`]);
  for (const [field, { before, after }] of Object.entries(c.changed || {})) {
    lines.push(["~", `${field}: ${compact(before)} \u2192 ${compact(after)}`]);
  }
  for (const [field, items] of Object.entries(c.appended || {})) {
    for (const item of items) lines.push(["+", `${field}[+]: ${compact(item)}`]);
  }
  for (const [field, items] of Object.entries(c.replaced || {})) {
    for (const { index, before, after } of items) lines.push(["~", `${field}[${index}]: ${compact(before)} \u2192 ${compact(after)}`]);
  }
  for (const field of c.removed || []) lines.push(["-", field]);
  return lines;
}

/** A candidate edge's value in words. */
export function candidateValue(candidate) {
  if (candidate.error) return `raised: ${candidate.error}`;
  if (candidate.unconditional) return "always";
  if (candidate.holds === true) return "true";
  if (candidate.holds === false) return "false";
  if (candidate.items != null) return `${candidate.items} item${candidate.items === 1 ? "" : "s"}`;
  return candidate.value === undefined || candidate.value === null ? "\u2014" : compact(candidate.value);
}

function ms(seconds) {
  return `${((seconds || 0) * 1000).toFixed(1)} ms`;
}

function section(h, title, ...children) {
  const box = h("div", "nbg-insp-section");
  box.appendChild(h("div", "nbg-insp-title", title));
  box.append(...children);
  return box;
}

/** Fill `el` with one inspection. */
export function renderInspection(h, el, data) {
  el.replaceChildren();
  const head = h("div", "nbg-insp-head");
  const where = data.branch && data.branch !== data.path ? `${data.path} [${data.branch}]` : data.path;
  head.appendChild(h("b", "nbg-insp-where", `Step ${data.step} \u00B7 ${where}`));
  head.appendChild(h("span", "nbg-insp-visit", ` visit ${data.visit}`));
  el.appendChild(head);
  const stats = h("div", "nbg-insp-stats");
  stats.textContent = `${data.tokens || 0} tokens \u00B7 $${(data.cost || 0).toFixed(4)} \u00B7 ${ms(data.duration)}`;
  el.appendChild(stats);
  if (data.error) el.appendChild(h("div", "nbg-insp-error", `error: ${data.error}`));

  const diff = h("div", "nbg-insp-diff");
  const lines = diffLines(data.change);
  if (!lines.length) diff.appendChild(h("div", "nbg-insp-none", "no change to the state"));
  for (const [sign, text] of lines) {
    const kind = sign === "+" ? "add" : sign === "-" ? "del" : "chg";
    diff.appendChild(h("div", `nbg-insp-line nbg-insp-${kind}`, `${sign} ${text}`));
  }
  el.appendChild(section(h, "Update", diff));

  const routing = h("div", "nbg-insp-edges");
  if (data.edge) {
    const e = data.edge;
    routing.appendChild(h("div", "nbg-insp-fired", `fired: ${e.source} \u2192 ${e.targets.join(", ")}${e.label ? ` (${e.label})` : ""}`));
  }
  for (const c of data.candidates || []) {
    const row = h("div", `nbg-insp-candidate${c.fired ? " nbg-insp-took" : ""}${c.error ? " nbg-insp-raised" : ""}`);
    row.textContent = `${c.fired ? "\u2713" : c.chosen ? "\u2192" : "\u00B7"} ${c.label || c.target}: ${candidateValue(c)}`;
    row.title = `${c.kind} to ${c.targets.join(", ")}${c.chosen ? "; routing picks it" : ""}${c.fired ? "; the run took it" : ""}`;
    routing.appendChild(row);
  }
  if (routing.children.length) el.appendChild(section(h, "Edges", routing));

  if (data.llm) {
    const llm = h("div", "nbg-insp-llm");
    for (const message of data.llm.messages || []) {
      const role = (message && message.role) || "message";
      const content = message && typeof message.content === "string" ? message.content : compact(message && message.content);
      llm.appendChild(h("div", "nbg-insp-msg", `${role}: ${content}`));
    }
    for (const call of data.llm.tool_calls || []) {
      llm.appendChild(h("div", `nbg-insp-tool${call.is_error ? " nbg-insp-raised" : ""}`, `tool ${call.name}(${compact(call.args)}) \u2192 ${compact(call.result)}`));
    }
    for (const error of data.llm.errors || []) llm.appendChild(h("div", "nbg-insp-error", error));
    el.appendChild(section(h, "LLM", llm));
  }
  for (const pause of data.pauses || []) {
    el.appendChild(h("div", "nbg-insp-pause", `${pause.kind}: ${pause.prompt}${pause.answered ? ` \u2192 ${compact(pause.answer)}` : " (not answered)"}`));
  }
  const input = h("details", "nbg-insp-input");
  input.appendChild(h("summary", "", "Input state"));
  input.appendChild(h("pre", "nbg-insp-json", compact(data.input)));
  el.appendChild(input);
  for (const note of data.missing || []) el.appendChild(h("div", "nbg-insp-missing", note));
}

/** Whether "Fork from here" can start from this inspected step: a step of the run's own graph. */
export function forkable(data) {
  return Boolean(data) && Number.isInteger(data.step) && !String(data.path || "").includes("/");
}

/**
 * The inspector panel. `ask(request)` sends {type: "inspect", ...request} and remembers what
 * had the focus; `show(data)` fills and focuses the panel; Escape (or \u00D7) closes it.
 * When `canFork()` holds, a step of the run's own graph offers "Fork from here": a new run
 * from that step, with the graph as defined now ({type: "fork", step}).
 */
export function createInspector(h, send, { canFork = () => false } = {}) {
  const panel = h("div", "nbg-inspector");
  panel.hidden = true;
  panel.tabIndex = -1;
  panel.setAttribute("role", "region");
  panel.setAttribute("aria-label", "Step inspector");
  const close = h("button", "nbg-button nbg-insp-close", "\u00D7");
  close.setAttribute("aria-label", "Close the inspector");
  const content = h("div", "nbg-insp-content");
  panel.append(close, content);
  let opener = null;

  function hide() {
    if (panel.hidden) return;
    panel.hidden = true;
    delete panel.dataset.step;
    if (opener && opener.isConnected) opener.focus({ preventScroll: true });
    opener = null;
  }
  close.addEventListener("click", hide);
  panel.addEventListener("keydown", (event) => {
    if (event.key === "Escape") {
      event.preventDefault();
      event.stopPropagation();
      hide();
    }
  });
  return {
    el: panel,
    ask(request, from) {
      opener = from || (typeof document !== "undefined" ? document.activeElement : null);
      send({ type: "inspect", ...request });
    },
    show(data) {
      renderInspection(h, content, data);
      if (canFork() && forkable(data)) {
        const fork = h("button", "nbg-button nbg-fork", "Fork from here");
        fork.title = `Start a new run after step ${data.step} with the graph as defined now; steps up to it are reused, nothing before it runs again`;
        fork.addEventListener("click", () => {
          fork.disabled = true;
          send({ type: "fork", step: data.step });
        });
        content.insertBefore(fork, content.children[1] || null);
      }
      panel.dataset.step = String(data.step);
      panel.dataset.path = data.path;
      panel.hidden = false;
      panel.focus({ preventScroll: true });
      panel.scrollIntoView?.({ block: "nearest" });
    },
    hide,
  };
}
