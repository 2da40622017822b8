// nbgraph's views: one anywidget ES module for the graph view and the batch view, which share
// its layout and drawing. The Python class says which it is (its `kind` trait). Each renders
// from the model's traits and talks to the kernel in the messages of nbgraph/static/protocol.json.
import { renderBatch } from "./batch.js";
import { h, textMeasure } from "./dom.js";
import { drawGraph, fitLabels, paintRun } from "./draw.js";
import { graphOf, layoutGraph } from "./layout.js";
import { addMarks, paintMarks, problemMarks } from "./marks.js";
import { createDecisions, renderStanding } from "./decisions.js";
import { createInspector } from "./inspector.js";
import {
  onStepLine, pinLog, renderLog, renderPending, renderStatus, reopenPending, rerunWarning, showRefusal, submitOnEnter,
  tickPending,
} from "./panel.js";
import { receiver, sender } from "./protocol.js";
import { createSlider } from "./replay.js";
import { paintSides, renderSides, sidesPaint } from "./sides.js";
import { createViewport } from "./viewport.js";

let counter = 0;

/** The nodes whose open pauses warn that a resume runs them again: path -> the warning. */
function warnings(pending, ended) {
  const warned = {};
  for (const pause of pending) {
    const text = rerunWarning(pause, ended);
    if (text) warned[pause.path || pause.node] = text;
  }
  return warned;
}

/** The graph view: the graph, and the run it is bound to. @param {{model: any, el: HTMLElement}} ctx */
function renderGraph({ model, el }) {
  const uid = `nbg${++counter}`;
  const root = h("div", "nbg-root");
  const header = h("div", "nbg-header");
  const title = h("span", "nbg-title");
  const status = h("div", "nbg-status");
  header.append(title, status);
  const body = h("div", "nbg-body");
  const canvas = h("div", "nbg-canvas");
  const side = h("div", "nbg-side");
  const pending = h("div", "nbg-pending");
  const textBox = h("div", "nbg-text");
  const log = h("div", "nbg-log");
  const error = h("div", "nbg-error");
  error.hidden = true;
  const controls = h("div", "nbg-controls");
  const steerForm = h("form", "nbg-steer");
  const steerInput = h("input", "nbg-steer-input");
  steerInput.placeholder = "Steer the agent\u2026";
  steerInput.setAttribute("aria-label", "Steer the agent");
  const steerButton = h("button", "nbg-button", "Steer");
  steerButton.type = "submit";
  steerForm.append(steerInput, steerButton);
  submitOnEnter(steerInput, steerForm);
  const stop = h("button", "nbg-button nbg-stop", "Stop");
  controls.append(steerForm, stop);
  const send = sender("graph", model);
  // A step of the run in the inspector: from a log line, a visited node, or the slider's frame.
  const inspector = createInspector(h, send, { canFork: () => Boolean(model.get("can_fork")) });
  // The graph was redefined while the run waits: a fork onto the new definition, by a click.
  const redefined = h("div", "nbg-redefined");
  redefined.setAttribute("role", "status");
  const redefinedText = h("span", "nbg-redefined-text");
  const forkOnto = h("button", "nbg-button nbg-fork-onto", "Fork onto the new graph");
  forkOnto.addEventListener("click", () => {
    forkOnto.disabled = true;
    send({ type: "fork", onto: "new" });
  });
  redefined.append(redefinedText, forkOnto);
  const legend = h("div", "nbg-fork-legend");
  const slider = createSlider(h, { onMove: () => paint(), onInspect: (frame) => inspector.ask({ frame }) });
  // The standing approvals in force (each revocable), and the run's decisions (up to the slider's frame).
  const standing = h("div", "nbg-standing");
  standing.setAttribute("role", "group");
  standing.setAttribute("aria-label", "Standing approvals");
  const decisions = createDecisions();
  // Two runs drawn together: the key to their colours, the frame table and the diff.
  const sides = h("div", "nbg-sides");
  sides.setAttribute("role", "group");
  sides.setAttribute("aria-label", "Two runs side by side");
  side.append(sides);
  side.append(redefined, pending, standing, error, inspector.el, legend, decisions.el, textBox, log, controls);
  body.append(canvas, side);
  root.append(header, slider.el, body);
  el.appendChild(root);
  onStepLine(log, (step, line) => inspector.ask(step, line));
  canvas.addEventListener("click", (event) => {
    const group = event.target.closest && event.target.closest("[data-node]");
    if (!group || event.target.closest(".nbg-bp, .nbg-frame-handle")) return;
    if (group.classList.contains("nbg-visited") || group.classList.contains("nbg-current")) {
      inspector.ask({ node: group.dataset.node }, canvas);
    }
  });
  canvas.addEventListener("keydown", (event) => {
    const group = event.target;
    if ((event.key !== "Enter" && event.key !== " ") || !group.matches || !group.matches("[data-node][tabindex]")) return;
    event.preventDefault();
    event.stopPropagation(); // (JupyterLab would take Enter to edit the cell)
    inspector.ask({ node: group.dataset.node }, group);
  });
  let drawing = null;
  let skew = 0; // the kernel's clock less this browser's, in seconds: a deadline is the kernel's time
  const now = () => Date.now() / 1000 + skew;
  const ticking = setInterval(() => tickPending(pending, now()), 1000);
  let listed = null; // the decisions and frame last listed
  const open = new Set(); // paths of the sub-graph frames shown open
  const viewport = createViewport(canvas, body);
  const unpinLog = pinLog(log);

  function toggle(path) {
    if (open.has(path)) {
      for (const inside of [...open]) if (inside === path || inside.startsWith(`${path}/`)) open.delete(inside);
    } else {
      open.add(path);
    }
    drawDag(path);
    const handle = drawing && drawing.nodeEls.get(path)?.handle;
    if (handle) handle.focus({ preventScroll: true }); // the drawing was replaced: keep the keyboard where it was
  }

  /** Lay out and draw the graph; `anchor`, a frame just opened or closed, keeps its place. */
  function drawDag(anchor) {
    const dag = graphOf(model.get("dag"));
    if (dag) { // (none yet while the kernel has not set it: drawn when it comes)
      title.textContent = dag.name || "graph";
      drawing = drawGraph(layoutGraph(dag, open, { measure: textMeasure() }), uid, { onToggle: toggle });
      addMarks(drawing, (path) => send({ type: "toggle-breakpoint", path }));
      viewport.attach(drawing, anchor);
      requestAnimationFrame(() => drawing && fitLabels(drawing.root));
    }
    paint();
  }

  function paint() {
    const shown = slider.shown(); // an earlier frame of an ended run, or null: the run as it is
    const st = shown ? { ...model.get("status"), current: shown.frame.path, step: shown.frame.step } : model.get("status") || {};
    const live = Boolean(st.state) && st.state !== "idle";
    root.classList.toggle("nbg-live", live);
    root.dataset.state = st.outcome || st.state || "idle";
    root.dataset.current = st.current || "";
    renderStatus(status, st);
    const running = shown ? [] : model.get("running") || [];
    root.dataset.frame = shown ? String(shown.index) : "";
    root.dataset.running = running.join(" ");
    if (drawing) {
      paintRun(drawing, {
        current: st.current || null,
        running: new Set(running),
        waiting: new Set(shown ? [] : (model.get("pending") || []).map((pause) => pause.path || pause.node)),
        visits: shown ? shown.visits : model.get("visits") || {},
        fired: shown ? shown.fired : model.get("fired") || {},
        branches: shown ? {} : model.get("branches") || {},
        reruns: shown ? {} : model.get("reruns") || {},
        finished: Boolean(st.outcome) && !shown,
        uid,
        warned: shown ? {} : warnings(model.get("pending") || [], st.state === "done"),
        previous: shown ? {} : model.get("previous") || {},
      });
      paintMarks(drawing, {
        breakpoints: model.get("breakpoints") || {},
        problems: problemMarks(model.get("dag") || {}, model.get("problems") || []),
        costs: model.get("costs") || {},
        swapped: model.get("swapped") || [],
      });
      paintSides(drawing, sidesPaint(model.get("sides")));
    }
    const going = st.state === "running" || st.state === "paused";
    showDecisions(shown ? shown.index : null);
    const waiting = (model.get("pending") || []).map((pause) => pause.path || pause.node);
    viewport.track([...new Set([st.current, ...running, ...waiting].filter(Boolean))], going);
    controls.hidden = !live;
    stop.disabled = !going;
    steerButton.disabled = !going;
  }

  function showPending() {
    const how = { identity: model.get("identity") || "", now, canStand: Boolean(model.get("can_stand")) };
    renderPending(pending, model.get("pending") || [], send, (model.get("status") || {}).state === "done", how);
  }

  function showStanding() {
    const st = model.get("status") || {};
    renderStanding(standing, model.get("standing") || [], send, st.state === "running" || st.state === "paused");
  }

  function showDecisions(frame) {
    const log = model.get("decisions") || {};
    if (listed && listed[0] === log && listed[1] === frame) return;
    listed = [log, frame];
    decisions.show(log, frame);
  }

  function readClock() {
    const st = model.get("status") || {};
    if (Number.isFinite(st.clock)) skew = st.clock - Date.now() / 1000;
  }

  function onStatus() {
    readClock();
    showStanding();
    paint();
  }

  function showRedefined() {
    const info = model.get("redefined") || {};
    redefined.hidden = !info.note;
    redefinedText.textContent = info.note || "";
    forkOnto.disabled = false;
  }

  function showLegend() {
    const previous = model.get("previous") || {};
    legend.hidden = !previous.thread;
    legend.textContent = previous.thread
      ? `Forked from run ${previous.thread} after step ${previous.step}. Dashed: its path that this run did not take.`
      : "";
  }

  function showSides() {
    const data = model.get("sides") || {};
    renderSides(sides, data.rows ? data : null, h);
    root.classList.toggle("nbg-compared", Boolean(data.rows));
  }

  function showText() {
    const text = model.get("text") || "";
    textBox.textContent = text;
    textBox.hidden = !text;
  }

  function showLog() {
    const lines = model.get("log") || [];
    log.hidden = lines.length === 0;
    renderLog(log, lines);
  }

  const onMessage = receiver("graph", {
    inspection(message) {
      error.hidden = true;
      inspector.show(message);
    },
    error(message) {
      // A refused answer is said in its pause's box; anything else under the boxes.
      const inBox = message.pause_id && showRefusal(pending, message.pause_id, message.message);
      error.textContent = inBox ? "" : message.message;
      error.hidden = Boolean(inBox);
      reopenPending(pending);
      showStanding(); // (a refused revoke: its button again)
    },
  });

  stop.addEventListener("click", () => send({ type: "stop" }));
  steerForm.addEventListener("submit", (event) => {
    event.preventDefault();
    if (!steerInput.value.trim()) return;
    send({ type: "steer", text: steerInput.value });
    steerInput.value = "";
  });

  const handlers = [
    ["change:dag", () => drawDag()],
    ["change:status", onStatus],
    ["change:identity", showPending],
    ["change:can_stand", showPending],
    ["change:standing", showStanding],
    ["change:decisions", () => paint()],
    ["change:visits", paint],
    ["change:fired", paint],
    ["change:running", paint],
    ["change:branches", paint],
    ["change:reruns", paint],
    ["change:breakpoints", paint],
    ["change:problems", paint],
    ["change:costs", paint],
    ["change:swapped", paint],
    ["change:previous", () => {
      showLegend();
      paint();
    }],
    ["change:redefined", showRedefined],
    ["change:pending", () => {
      error.hidden = true;
      showPending();
      paint();
    }],
    ["change:frames", () => {
      slider.set(model.get("frames"));
      paint();
    }],
    ["change:sides", () => {
      showSides();
      paint();
    }],
    ["change:text", showText],
    ["change:log", showLog],
    ["msg:custom", onMessage],
  ];
  for (const [name, fn] of handlers) model.on(name, fn);
  slider.set(model.get("frames"));
  readClock();
  drawDag();
  showPending();
  showStanding();
  showRedefined();
  showLegend();
  showSides();
  showText();
  showLog();

  return () => {
    for (const [name, fn] of handlers) model.off(name, fn);
    clearInterval(ticking);
    viewport.destroy();
    unpinLog();
    drawing = null;
    el.replaceChildren();
  };
}

const VIEWS = { graph: renderGraph, batch: renderBatch };

/** The view the model's class asks for. */
function viewOf(model) {
  const kind = model.get("kind");
  if (!(kind in VIEWS)) throw new Error(`nbgraph: no view of kind ${JSON.stringify(kind)}; the module has ${Object.keys(VIEWS).join(", ")}`);
  return kind;
}

// Say hello once the browser has the view's model: a kernel that never hears it knows
// nobody can click, and a run waiting for a person there gives up instead of waiting for ever.
function initialize({ model }) {
  sender(viewOf(model), model)({ type: "hello" });
}

/**
 * The drawing last made for each model, kept for the next view of it. The kernel updates a
 * view's output when its run ends (so a saved notebook shows how it ended), and a front-end
 * then draws the output again, as a new view of the same model; that view takes the drawing
 * back, with everything open in it (a frame, the inspector, an edge's inputs), rather than
 * draw it afresh. Keyed by the model's layout model, one per model and the same for every view
 * of it (where a front-end does not share it, each view draws its own).
 */
const drawings = new WeakMap();

/**
 * A model for a drawing that may outlive its view: what it listens to moves to the next
 * view's model (a front-end drops a view's listeners with the view).
 */
function relay(first) {
  let current = first;
  const listening = [];
  const model = {
    get: (name) => current.get(name),
    set: (name, value) => current.set(name, value),
    save_changes: () => current.save_changes(),
    send: (...args) => current.send(...args),
    on(name, fn) {
      listening.push([name, fn]);
      current.on(name, fn);
    },
    off(name, fn) {
      const at = listening.findIndex(([n, f]) => n === name && f === fn);
      if (at >= 0) listening.splice(at, 1);
      current.off(name, fn);
    },
    get widget_manager() {
      return current.widget_manager;
    },
  };
  function move(next) {
    for (const [name, fn] of listening) current.off(name, fn);
    current = next;
    for (const [name, fn] of listening) next.on(name, fn);
  }
  return { model, move };
}

/**
 * Where each scrolled part of `root` was last scrolled to, put back by the function returned
 * once `root` is on a page again (a browser forgets the scroll of a part taken off the page),
 * and the parts pinned to their end scrolled there.
 */
function keepScrolls(root) {
  const at = new Map();
  root.addEventListener(
    "scroll",
    (event) => {
      const part = event.target;
      if (part instanceof Element && part.isConnected) at.set(part, [part.scrollTop, part.scrollLeft]);
    },
    true,
  );
  const restore = () => {
    for (const [part, [top, left]] of at) {
      part.scrollTop = top;
      part.scrollLeft = left;
    }
    // A part pinned to its end (the log, panel.js's pinLog) to its end again.
    for (const part of root.querySelectorAll('[data-pinned="true"]')) part.scrollTop = part.scrollHeight;
  };
  // At once when `root` reaches the page (a mutation's observer runs before anything reads or
  // paints it there).
  return function putBack() {
    if (root.isConnected || typeof MutationObserver !== "function") {
      restore();
      return;
    }
    const watch = new MutationObserver(() => {
      if (!root.isConnected) return;
      watch.disconnect();
      restore();
    });
    watch.observe(root.ownerDocument, { childList: true, subtree: true });
  };
}

/** @param {{model: any, el: HTMLElement}} ctx */
function render({ model, el }) {
  const key = model.get("layout");
  const keyed = typeof key === "object" && key !== null;
  let drawn = keyed ? drawings.get(key) : undefined;
  if (drawn && !drawn.root.isConnected) {
    drawn.relay.move(model); // the same model drawn again, its drawing on no page: take it back
    el.appendChild(drawn.root);
    drawn.putBack();
  } else {
    const through = relay(model);
    const cleanup = VIEWS[viewOf(model)]({ model: through.model, el });
    const root = el.lastElementChild;
    drawn = { root, relay: through, cleanup, putBack: keepScrolls(root) };
    if (keyed) drawings.set(key, drawn);
  }
  const mine = drawn;
  return () => {
    if (mine.root.parentNode !== el) return; // a later view of the model has it now
    mine.cleanup();
    if (keyed && drawings.get(key) === mine) drawings.delete(key);
  };
}

export default { initialize, render };
// For bench/view.py and the browser tests, which lay out and draw with this very bundle.
export { layoutGraph, textMeasure };
