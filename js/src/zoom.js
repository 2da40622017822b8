// The arithmetic of the zoomable view: how a large drawing opens, zoom around a point, pan,
// fit, and when to follow the running node. Pure: no DOM, so it is tested in Node.
// A view is {scale, x, y}: a point p of the drawing shows at p * scale + (x, y) in the viewport.

/** The drawing's height on screen at most, when it opens. */
export const MAX_HEIGHT = 600;
/** Opening never shrinks text below this scale (12 px labels at 9 px): wider graphs are panned. */
export const READABLE = 0.75;
/** Zooming in stops here; zooming out at the whole graph in view (or READABLE, if lower). */
export const MAX_SCALE = 4;
/** One zoom step of the buttons and keys. */
export const STEP = 1.25;
/** Room kept around a followed node when it is brought into view. */
export const FOLLOW_MARGIN = 24;

const clamp = (value, lo, hi) => Math.min(hi, Math.max(lo, value));

/**
 * Whether a drawing of `size` needs the zoomable view: wider than the room it has, or taller
 * than the height a drawing may take. Smaller ones are drawn as they are.
 * @param {{width: number, height: number}} size @param {{width: number, maxHeight?: number}} room
 */
export function needsViewport(size, room) {
  return size.width > room.width + 0.5 || size.height > (room.maxHeight ?? MAX_HEIGHT) + 0.5;
}

/**
 * How a large drawing opens: as wide as the room (never larger than drawn, never below
 * READABLE), its top at the top, at most `maxHeight` tall. Returns the view and the
 * viewport's height.
 */
export function openingView(size, room) {
  const scale = clamp(room.width / size.width, READABLE, 1);
  const height = Math.max(1, Math.min(room.maxHeight ?? MAX_HEIGHT, Math.ceil(size.height * scale)));
  const viewport = { width: room.width, height };
  const view = clampView({ scale, x: 0, y: 0 }, size, viewport);
  return { view, height };
}

/** The whole drawing inside the viewport, centred, never larger than drawn. */
export function fitView(size, viewport) {
  const scale = Math.min(1, viewport.width / size.width, viewport.height / size.height);
  return clampView({ scale, x: 0, y: 0 }, size, viewport);
}

/** The smallest and largest scales zooming reaches. */
export function zoomLimits(size, viewport) {
  return { min: Math.min(READABLE, fitView(size, viewport).scale), max: MAX_SCALE };
}

/**
 * Keep the drawing in reach: along an axis where it is larger than the viewport it pans up
 * to its edges and no further; where it is smaller it is centred.
 */
export function clampView(view, size, viewport) {
  const axis = (offset, length, room) => {
    const drawn = length * view.scale;
    return drawn <= room ? (room - drawn) / 2 : clamp(offset, room - drawn, 0);
  };
  return { scale: view.scale, x: axis(view.x, size.width, viewport.width), y: axis(view.y, size.height, viewport.height) };
}

/**
 * Zoom by `factor` around `point` (viewport coordinates): the drawing's point under it stays
 * under it, the scale within `limits`.
 */
export function zoomAt(view, factor, point, limits) {
  const scale = clamp(view.scale * factor, limits.min, limits.max);
  const k = scale / view.scale;
  return { scale, x: point.x - (point.x - view.x) * k, y: point.y - (point.y - view.y) * k };
}

/** Move the drawing by (dx, dy) screen pixels. */
export function panBy(view, dx, dy) {
  return { scale: view.scale, x: view.x + dx, y: view.y + dy };
}

/**
 * The zoom factor of one wheel event: a mouse notch (about 100 px) zooms by about 1.2, a
 * trackpad's small deltas smoothly; lines and pages are turned into pixels first.
 */
export function wheelFactor(deltaY, deltaMode = 0) {
  const pixels = deltaY * (deltaMode === 1 ? 16 : deltaMode === 2 ? 400 : 1);
  return Math.exp(-clamp(pixels, -200, 200) * 0.0018);
}

/** The part of the drawing the viewport shows, in drawing coordinates. */
export function visibleArea(view, viewport) {
  return { x: -view.x / view.scale, y: -view.y / view.scale, width: viewport.width / view.scale, height: viewport.height / view.scale };
}

/** The smallest box holding all of `boxes` (null for none). */
export function unionBox(boxes) {
  if (!boxes.length) return null;
  const x0 = Math.min(...boxes.map((b) => b.x));
  const y0 = Math.min(...boxes.map((b) => b.y));
  const x1 = Math.max(...boxes.map((b) => b.x + b.width));
  const y1 = Math.max(...boxes.map((b) => b.y + b.height));
  return { x: x0, y: y0, width: x1 - x0, height: y1 - y0 };
}

/**
 * Where a node is drawn: its own box, or (inside a closed frame) the box of the innermost
 * frame around it that is drawn. `boxes` maps drawn paths to boxes.
 * @param {string} path @param {Map<string, {x: number, y: number, width: number, height: number}>} boxes
 */
export function boxOf(path, boxes) {
  for (let at = path; at; at = at.includes("/") ? at.slice(0, at.lastIndexOf("/")) : "") {
    if (boxes.has(at)) return boxes.get(at);
  }
  return null;
}

function inside(box, area, margin) {
  const m = Math.min(margin, area.width / 4, area.height / 4);
  return box.x >= area.x + m && box.y >= area.y + m && box.x + box.width <= area.x + area.width - m
    && box.y + box.height <= area.y + area.height - m;
}

/**
 * The follow decision. `boxes` are the running nodes' boxes, the current one first. When all
 * are in view (with a margin), null: the view stays. Otherwise the view that centres them
 * all, if they fit at this scale, else the first; the scale never changes.
 */
export function followView(view, size, viewport, boxes, margin = FOLLOW_MARGIN) {
  const area = visibleArea(view, viewport);
  if (!boxes.length || boxes.every((box) => inside(box, area, margin / view.scale))) return null;
  const all = unionBox(boxes);
  const fits = all.width * view.scale <= viewport.width - 2 * margin && all.height * view.scale <= viewport.height - 2 * margin;
  const target = fits ? all : boxes[0];
  const cx = target.x + target.width / 2;
  const cy = target.y + target.height / 2;
  const next = clampView({ scale: view.scale, x: viewport.width / 2 - cx * view.scale, y: viewport.height / 2 - cy * view.scale }, size, viewport);
  return Math.abs(next.x - view.x) < 0.5 && Math.abs(next.y - view.y) < 0.5 ? null : next;
}

/** A view part way (t in [0, 1], eased) from `a` to `b`, for a smooth pan. */
export function between(a, b, t) {
  const e = t < 0.5 ? 2 * t * t : 1 - (-2 * t + 2) ** 2 / 2;
  return { scale: a.scale + (b.scale - a.scale) * e, x: a.x + (b.x - a.x) * e, y: a.y + (b.y - a.y) * e };
}
