// The zoomable view around a large drawing: it opens fitted to the cell's width, zooms with
// the wheel (around the pointer), pans by dragging, has buttons and keys for both, and follows
// the running node until the reader moves the view by hand. Small drawings are left as drawn.
import { h } from "./dom.js";
import {
  MAX_HEIGHT, STEP, between, boxOf, clampView, fitView, followView, needsViewport, openingView, panBy,
  wheelFactor, zoomAt, zoomLimits,
} from "./zoom.js";

const PAN_STEP = 60; // px an arrow key moves the drawing (four times that with Shift)
const DRAG_START = 3; // px the pointer moves before a press becomes a drag
const PAN_MS = 320; // length of a followed pan
const HINT_MS = 2000;
const KEYS_HELP = "+ and \u2212 zoom, 0 fits the whole graph, the arrow keys pan";

/**
 * Manage the view of the drawings put in `canvas` (whose row is `row`).
 * @param {HTMLElement} canvas @param {HTMLElement} row
 */
export function createViewport(canvas, row) {
  const bar = h("div", "nbg-zoombar");
  bar.setAttribute("role", "toolbar");
  bar.setAttribute("aria-label", "Zoom and pan");
  const button = (cls, text, label, action) => {
    const el = h("button", `nbg-button nbg-zoom-button ${cls}`, text);
    el.type = "button";
    el.title = label;
    el.setAttribute("aria-label", label);
    el.addEventListener("click", action);
    bar.appendChild(el);
    return el;
  };
  const center = () => ({ x: width / 2, y: height / 2 });
  button("nbg-zoom-in", "+", "Zoom in (+)", () => byHand(zoomAt(view, STEP, center(), limits())));
  button("nbg-zoom-out", "\u2212", "Zoom out (\u2212)", () => byHand(zoomAt(view, 1 / STEP, center(), limits())));
  button("nbg-zoom-fit", "Fit", "Fit the whole graph (0)", () => byHand(fitView(size(), viewport())));
  const followButton = button("nbg-follow", "Follow", "Follow the running node", () => {
    following = true;
    showFollow();
    followNow();
  });
  const hint = h("div", "nbg-hint", "Click the drawing, or hold Ctrl, to zoom with the wheel");
  hint.setAttribute("role", "status");
  hint.hidden = true;

  let drawing = null;
  let boxes = new Map();
  let zoomed = false;
  let view = { scale: 1, x: 0, y: 0 };
  let width = 0; // the viewport's size, in screen pixels
  let height = 0;
  let auto = true; // the scale is the opening one (refitted when the room changes) until zoomed by hand
  let following = true;
  let live = false;
  let running = [];
  let frame = 0;
  let target = null; // where a followed pan is heading
  let press = null;
  let dragged = false;
  let hintTimer = 0;
  let seenRow = -1;
  let seenCanvas = -1;

  const size = () => ({ width: drawing.width, height: drawing.height });
  const viewport = () => ({ width, height });
  const limits = () => zoomLimits(size(), viewport());

  function apply() {
    drawing.scene.setAttribute("transform", `translate(${view.x} ${view.y}) scale(${view.scale})`);
    canvas.dataset.scale = view.scale.toFixed(4);
  }

  function showFollow() {
    followButton.hidden = !(zoomed && live);
    followButton.setAttribute("aria-pressed", String(following));
    canvas.dataset.follow = following ? "on" : "off";
  }

  function stop() {
    if (frame) cancelAnimationFrame(frame);
    frame = 0;
    target = null;
    delete canvas.dataset.moving;
  }

  /** A view chosen by the reader: following stops until the Follow button is pressed. */
  function byHand(next) {
    if (!zoomed) return;
    stop();
    following = false;
    auto = false;
    view = clampView(next, size(), viewport());
    apply();
    showFollow();
  }

  function setZoomed(on) {
    zoomed = on;
    canvas.classList.toggle("nbg-zoomed", on);
    const root = drawing.root;
    if (on) {
      root.removeAttribute("viewBox");
      root.setAttribute("tabindex", "0");
      root.setAttribute("aria-label", `Graph drawing, ${drawing.nodeEls.size} nodes. Keys: ${KEYS_HELP}`);
    } else {
      stop();
      const w = Math.ceil(drawing.width);
      const ht = Math.ceil(drawing.height);
      root.setAttribute("width", w);
      root.setAttribute("height", ht);
      root.setAttribute("viewBox", `0 0 ${w} ${ht}`);
      root.removeAttribute("tabindex");
      root.removeAttribute("aria-label");
      drawing.scene.removeAttribute("transform");
      delete canvas.dataset.scale;
    }
    bar.hidden = !on;
    showFollow();
  }

  /**
   * Decide how the drawing is shown for the room there is: as drawn, or zoomable. `anchor`
   * (a frame just opened or closed) keeps its place on screen across the new layout.
   */
  function place(anchor, before = null) {
    if (!drawing) return;
    const room = row.clientWidth;
    seenRow = room;
    if (!room) return; // not laid out yet: the resize observer places it once it is
    const wasZoomed = zoomed;
    setZoomed(needsViewport(size(), { width: room, maxHeight: MAX_HEIGHT }));
    seenCanvas = canvas.clientWidth;
    if (!zoomed) return;
    const oldWidth = width;
    width = canvas.clientWidth;
    const opening = openingView(size(), { width });
    if (before) {
      // The anchor's top centre stays where it was on screen.
      const was = before.box;
      const now = boxOf(anchor, boxes);
      const scale = auto ? opening.view.scale : before.view.scale;
      if (auto) height = opening.height;
      const sx = (was.x + was.width / 2) * before.view.scale + before.view.x;
      const sy = was.y * before.view.scale + before.view.y;
      view = now ? { scale, x: sx - (now.x + now.width / 2) * scale, y: sy - now.y * scale } : { ...before.view, scale };
    } else if (!wasZoomed || !oldWidth) {
      ({ view, height } = opening);
    } else if (auto) {
      // The room changed: refit, keeping the drawing's point at the middle of the view there.
      const mid = { x: (oldWidth / 2 - view.x) / view.scale, y: (height / 2 - view.y) / view.scale };
      height = opening.height;
      const scale = opening.view.scale;
      view = { scale, x: width / 2 - mid.x * scale, y: height / 2 - mid.y * scale };
    }
    drawing.root.setAttribute("width", width);
    drawing.root.setAttribute("height", height);
    view = clampView(view, size(), viewport());
    apply();
  }

  /**
   * Show a new drawing (laid out afresh). A new graph opens fitted; after a frame (`anchor`)
   * opened or closed, the view keeps its scale and the frame its place, and following stops
   * (the reader is looking at that frame).
   */
  function attach(next, anchor) {
    const box = anchor && drawing && zoomed ? boxOf(anchor, boxes) : null;
    const before = box ? { view: target || view, box } : null;
    if (before) following = false;
    stop();
    drawing = next;
    boxes = new Map([...next.nodeEls].map(([path, entry]) => [path, entry.box]));
    zoomed = false;
    if (!anchor) auto = true;
    canvas.replaceChildren(bar, next.root, hint); // (the bar first: Tab reaches its buttons before the nodes)
    place(anchor, before);
    followNow();
  }

  function animate(to) {
    if (target && Math.abs(target.x - to.x) < 0.5 && Math.abs(target.y - to.y) < 0.5) return; // already heading there
    stop();
    const reduced = typeof matchMedia === "function" && matchMedia("(prefers-reduced-motion: reduce)").matches;
    if (reduced) {
      view = to;
      apply();
      return;
    }
    const from = view;
    const start = performance.now();
    target = to;
    canvas.dataset.moving = "true";
    const step = (now) => {
      const t = Math.min(1, (now - start) / PAN_MS);
      view = between(from, to, t);
      apply();
      frame = t < 1 ? requestAnimationFrame(step) : 0;
      if (!frame) stop();
    };
    frame = requestAnimationFrame(step);
  }

  function followNow() {
    if (!drawing || !zoomed || !following || !live) return;
    const shown = running.map((path) => boxOf(path, boxes)).filter(Boolean);
    const next = followView(target || view, size(), viewport(), [...new Set(shown)]);
    if (next) animate(next);
  }

  /**
   * The run's nodes running now (the current one first) and whether the run goes on: while it
   * does, the view follows them unless the reader has moved it by hand.
   */
  function track(paths, going) {
    running = paths;
    live = going;
    showFollow();
    followNow();
  }

  // Wheel: zoom around the pointer. A plain wheel zooms once the drawing has the focus (a
  // click, or Tab), so scrolling the notebook past it still scrolls; Ctrl + wheel, which is
  // also how trackpads send a pinch, always zooms.
  function onWheel(event) {
    if (!zoomed || bar.contains(event.target)) return;
    if (!(event.ctrlKey || event.metaKey || canvas.contains(document.activeElement))) {
      hint.hidden = false;
      clearTimeout(hintTimer);
      hintTimer = setTimeout(() => { hint.hidden = true; }, HINT_MS);
      return;
    }
    event.preventDefault();
    const rect = drawing.root.getBoundingClientRect();
    const point = { x: event.clientX - rect.left, y: event.clientY - rect.top };
    byHand(zoomAt(view, wheelFactor(event.deltaY, event.deltaMode), point, limits()));
  }

  function onPointerDown(event) {
    if (!zoomed || event.button !== 0 || bar.contains(event.target)) return;
    dragged = false;
    press = { id: event.pointerId, x: event.clientX, y: event.clientY, view, moving: false };
    const focusable = event.target.closest ? event.target.closest("[tabindex]") : null;
    (focusable && canvas.contains(focusable) ? focusable : drawing.root).focus({ preventScroll: true });
  }

  function onPointerMove(event) {
    if (!press || event.pointerId !== press.id) return;
    const dx = event.clientX - press.x;
    const dy = event.clientY - press.y;
    if (!press.moving) {
      if (Math.hypot(dx, dy) < DRAG_START) return;
      press.moving = true;
      canvas.setPointerCapture(press.id);
      canvas.classList.add("nbg-dragging");
    }
    byHand(panBy(press.view, dx, dy));
  }

  function onPointerUp(event) {
    if (!press || event.pointerId !== press.id) return;
    if (press.moving) {
      dragged = true; // the click that ends a drag is not a click on what is under it
      setTimeout(() => { dragged = false; }, 0);
      canvas.classList.remove("nbg-dragging");
    }
    press = null;
  }

  function onClick(event) {
    if (!dragged) return;
    dragged = false;
    event.stopPropagation();
    event.preventDefault();
  }

  function onKey(event) {
    if (!zoomed || event.ctrlKey || event.metaKey || event.altKey || bar.contains(event.target) && (event.key === "Enter" || event.key === " ")) return;
    const pan = event.shiftKey ? 4 * PAN_STEP : PAN_STEP;
    const moves = {
      "+": () => zoomAt(view, STEP, center(), limits()),
      "=": () => zoomAt(view, STEP, center(), limits()),
      "-": () => zoomAt(view, 1 / STEP, center(), limits()),
      _: () => zoomAt(view, 1 / STEP, center(), limits()),
      0: () => fitView(size(), viewport()),
      ArrowLeft: () => panBy(view, pan, 0),
      ArrowRight: () => panBy(view, -pan, 0),
      ArrowUp: () => panBy(view, 0, pan),
      ArrowDown: () => panBy(view, 0, -pan),
    };
    const move = moves[event.key];
    if (!move) return;
    // Handled here: JupyterLab must not also take the key (arrows move between cells, 0 0 restarts).
    event.preventDefault();
    event.stopPropagation();
    byHand(move());
  }

  const resized = () => {
    if (!drawing) return;
    if (row.clientWidth === seenRow && (!zoomed || canvas.clientWidth === seenCanvas)) return;
    place();
    followNow();
  };
  const observer = typeof ResizeObserver === "function" ? new ResizeObserver(resized) : null;
  if (observer) {
    observer.observe(row);
    observer.observe(canvas);
  }
  const listeners = [
    ["wheel", onWheel, { passive: false }],
    ["pointerdown", onPointerDown],
    ["pointermove", onPointerMove],
    ["pointerup", onPointerUp],
    ["pointercancel", onPointerUp],
    ["click", onClick, true],
    ["keydown", onKey],
  ];
  for (const [name, fn, options] of listeners) canvas.addEventListener(name, fn, options);

  return {
    attach,
    track,
    destroy() {
      stop();
      clearTimeout(hintTimer);
      if (observer) observer.disconnect();
      for (const [name, fn, options] of listeners) canvas.removeEventListener(name, fn, options);
      drawing = null;
    },
  };
}
