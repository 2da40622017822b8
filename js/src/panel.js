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
 * The panel for open requests: option buttons or a text field for input, Approve / Deny
 * for approvals. Each answer carries the pause id, so a stale click is ignored by the kernel.
 */
export function renderPending(el, pending, send) {
  el.replaceChildren();
  el.hidden = pending.length === 0;
  for (const pause of pending) {
    const box = h("div", `nbg-pause nbg-pause-${pause.kind}`);
    box.dataset.pause = pause.id;
    const who = h("div", "nbg-pause-node", pause.kind === "approval" ? `Approval \u2014 ${pause.node}` : `Input \u2014 ${pause.node}`);
    box.appendChild(who);
    box.appendChild(h("div", "nbg-pause-prompt", pause.prompt));
    const row = h("div", "nbg-pause-actions");
    if (pause.kind === "approval") {
      const approve = h("button", "nbg-button nbg-approve", "Approve");
      const deny = h("button", "nbg-button nbg-deny", "Deny");
      approve.addEventListener("click", () => send({ type: "approve", pause_id: pause.id }));
      deny.addEventListener("click", () => send({ type: "deny", pause_id: pause.id }));
      row.append(approve, deny);
    } else if (pause.options && pause.options.length) {
      for (const option of pause.options) {
        const button = h("button", "nbg-button nbg-option", option);
        button.addEventListener("click", () => send({ type: "answer", pause_id: pause.id, value: option }));
        row.appendChild(button);
      }
    } else {
      const form = h("form", "nbg-answer-form");
      const input = h("input", "nbg-answer");
      input.type = pause.input_kind === "number" ? "number" : "text";
      input.placeholder = "Type an answer\u2026";
      input.setAttribute("aria-label", pause.prompt);
      const submit = h("button", "nbg-button nbg-submit", "Send");
      submit.type = "submit";
      form.append(input, submit);
      form.addEventListener("submit", (event) => {
        event.preventDefault();
        const value = pause.input_kind === "number" ? Number(input.value) : input.value;
        send({ type: "answer", pause_id: pause.id, value });
      });
      row.appendChild(form);
    }
    box.appendChild(row);
    el.appendChild(box);
  }
}

/** The last lines of the run's log, newest at the bottom. */
export function renderLog(el, lines) {
  el.replaceChildren(...lines.map((line) => h("div", "nbg-log-line", line)));
  el.scrollTop = el.scrollHeight;
}
