// What a pause's box says about deciding it: who may decide (and who you are), the time left
// when it has a deadline and what happens when that passes, and a field for why, kept in the
// decision's record. The box counts down itself, once a second, from the kernel's clock.
import { h } from "./dom.js";
import { valueText } from "./fold.js";

/** "Decides: alice", "Decides: alice or bob", "Decides: alice, bob or carol"; "Anyone may decide". */
export function decidersLine(deciders) {
  const names = (deciders || []).filter(Boolean);
  if (!names.length) return "Anyone may decide";
  const last = names[names.length - 1];
  return `Decides: ${names.length > 1 ? `${names.slice(0, -1).join(", ")} or ${last}` : last}`;
}

/** Who answers from this kernel, and whether the pause takes their answer: `{text, allowed}`. */
export function youLine(identity, deciders) {
  if (!identity) return { text: "", allowed: true };
  const names = (deciders || []).filter(Boolean);
  const allowed = !names.length || names.includes(identity);
  return { text: allowed ? `You are ${identity}` : `You are ${identity}, who may not decide this`, allowed };
}

/** Seconds as a clock reads them: "0:05", "4:32", "1:02:03" (never below zero). */
export function clockText(seconds) {
  const whole = Math.max(0, Math.ceil(seconds));
  const hours = Math.floor(whole / 3600);
  const minutes = Math.floor((whole % 3600) / 60);
  const secs = String(whole % 60).padStart(2, "0");
  return hours ? `${hours}:${String(minutes).padStart(2, "0")}:${secs}` : `${minutes}:${secs}`;
}

/** When the time left turns to a warning: the last 60 s, or the last 20 % of a shorter wait. */
export function warnWithin(total) {
  return Number.isFinite(total) && total > 0 ? Math.min(60, 0.2 * total) : 60;
}

/**
 * What the pause's deadline decides when it passes (`on_timeout`, as nbgraph.deadlines keeps it):
 * an approval is denied, or approved (true); a tool call is rejected (none), approved
 * ("approve") or given a decision; a question takes the answer named.
 */
export function timeoutOutcome(pause) {
  const value = pause.on_timeout;
  if (pause.kind === "approval") return value === true || value === "approve" ? "approved" : "denied";
  if (pause.kind === "tool") {
    if (value === null || value === undefined || value === "reject") return "rejected";
    if (value === "approve") return "approved";
    const words = { approve: "approved", reject: "rejected", respond: "answered in the tool's place" };
    return (value && words[value.type]) || "rejected";
  }
  if (value === null || value === undefined) return "denied";
  return `answered ${typeof value === "string" ? JSON.stringify(value) : valueText(value)}`;
}

/**
 * The deadline's line at `now` (seconds since the epoch, the kernel's clock): `{left, text, warn,
 * over}`, or null for a pause without a deadline. `total`: the whole wait, for the warning.
 */
export function deadlineState(pause, now, total) {
  if (pause.deadline === null || pause.deadline === undefined) return null;
  const left = pause.deadline - now;
  const outcome = timeoutOutcome(pause);
  if (left <= 0) return { left: 0, over: true, warn: true, text: `Time is up: ${outcome}` };
  return { left, over: false, warn: left <= warnWithin(total), text: `${clockText(left)} left, then ${outcome}` };
}

/** What Enter in a box's reason field does: an approval's Approve, a tool pause's Approve or Submit. */
export function enterDoes(pause) {
  if (pause.kind === "tool" && (pause.tool_calls || []).length > 1) return "submits";
  return "approves";
}

let ids = 0;

/**
 * The box's lines on deciding: who decides and who you are, and (with a deadline) the time
 * left; `tick(now)` updates the time left and says once, to a screen reader, when it turns to
 * a warning. The warning of a short wait is a part of it from when the kernel heard the pause
 * asked (`pause.asked`, its clock); a pause it did not hear asked warns in its last minute.
 */
export function deciding(pause, identity) {
  const el = h("div", "nbg-pause-deciding");
  el.appendChild(h("span", "nbg-pause-deciders", decidersLine(pause.deciders)));
  const you = youLine(identity, pause.deciders);
  if (you.text) {
    const line = h("span", `nbg-pause-you${you.allowed ? "" : " nbg-pause-not-you"}`, you.text);
    el.appendChild(line);
  }
  if (pause.deadline === null || pause.deadline === undefined) return { el, tick() {} };
  const line = h("div", "nbg-pause-deadline");
  line.setAttribute("role", "timer");
  const text = h("span", "nbg-deadline-text");
  const said = h("span", "nbg-sr");
  said.setAttribute("aria-live", "polite");
  line.append(text, said);
  el.appendChild(line);
  const total = Number.isFinite(pause.asked) ? pause.deadline - pause.asked : NaN;
  let warned = false;
  function tick(now) {
    const state = deadlineState(pause, now, total);
    text.textContent = state.text;
    line.classList.toggle("nbg-deadline-warn", state.warn);
    line.classList.toggle("nbg-deadline-over", state.over);
    if (state.warn && !warned) {
      warned = true;
      said.textContent = state.over ? state.text : `${clockText(state.left)} left to decide`;
    }
  }
  return { el, tick };
}

/** The box's "Reason" field; Enter in it does the box's one action (`act`). */
export function reasonField(pause, act) {
  const id = `nbg-reason${++ids}`;
  const row = h("div", "nbg-reason-field");
  const label = h("label", "nbg-reason-label", "Reason");
  label.htmlFor = id;
  label.appendChild(h("span", "nbg-reason-optional", " (optional, kept in the record)"));
  const input = h("input", "nbg-pause-reason");
  input.type = "text";
  input.id = id;
  input.maxLength = 2000;
  input.placeholder = `Why\u2026 (Enter ${enterDoes(pause)})`;
  input.addEventListener("keydown", (event) => {
    if (event.key !== "Enter" || event.isComposing || event.shiftKey) return;
    event.preventDefault();
    if (act) act();
  });
  row.append(label, input);
  return { el: row, input, read: () => input.value.trim() || undefined };
}
