import { test } from "node:test";
import assert from "node:assert/strict";
import {
  MAX_HEIGHT, MAX_SCALE, READABLE, boxOf, clampView, fitView, followView, needsViewport, openingView, panBy,
  visibleArea, wheelFactor, zoomAt, zoomLimits,
} from "../src/zoom.js";

const close = (a, b, what) => assert.ok(Math.abs(a - b) < 1e-6, `${what}: ${a} != ${b}`);

test("small drawings stay as drawn; wider than the room or taller than the maximum need the viewport", () => {
  assert.equal(needsViewport({ width: 400, height: 300 }, { width: 640 }), false);
  assert.equal(needsViewport({ width: 640, height: MAX_HEIGHT }, { width: 640 }), false);
  assert.equal(needsViewport({ width: 897, height: 300 }, { width: 640 }), true);
  assert.equal(needsViewport({ width: 200, height: 3608 }, { width: 640 }), true);
});

test("a large graph opens as wide as the room, its top in view, at most MAX_HEIGHT tall", () => {
  const { view, height } = openingView({ width: 800, height: 3608 }, { width: 640 });
  close(view.scale, 0.8, "scale");
  assert.equal(height, MAX_HEIGHT);
  assert.deepEqual([view.x, view.y], [0, 0]);
  // The whole width shows: its drawn width is the room's.
  close(800 * view.scale, 640, "drawn width");
});

test("opening never shrinks text below READABLE: a very wide graph is panned instead", () => {
  const { view, height } = openingView({ width: 9055, height: 15372 }, { width: 640 });
  assert.equal(view.scale, READABLE);
  assert.equal(height, MAX_HEIGHT);
  assert.deepEqual([view.x, view.y], [0, 0], "its top left corner first");
});

test("a tall narrow graph opens at its own size, centred, and a short wide one as tall as it is drawn", () => {
  const tall = openingView({ width: 200, height: 3000 }, { width: 640 });
  assert.equal(tall.view.scale, 1);
  assert.equal(tall.view.x, 220);
  const wide = openingView({ width: 1000, height: 200 }, { width: 800 });
  close(wide.view.scale, 0.8, "scale");
  assert.equal(wide.height, 160);
});

test("fit puts the whole drawing in the viewport, centred", () => {
  const size = { width: 897, height: 3608 };
  const viewport = { width: 640, height: 600 };
  const view = fitView(size, viewport);
  close(view.scale, 600 / 3608, "scale");
  assert.ok(view.x > 0 && Math.abs(view.x * 2 + 897 * view.scale - 640) < 1e-6, "centred across");
  close(view.y, 0, "top");
  assert.equal(fitView({ width: 100, height: 100 }, viewport).scale, 1, "never larger than drawn");
});

test("zooming keeps the drawing's point under the pointer, within the limits", () => {
  const view = { scale: 0.8, x: -100, y: -40 };
  const point = { x: 300, y: 200 };
  const before = { x: (point.x - view.x) / view.scale, y: (point.y - view.y) / view.scale };
  const zoomed = zoomAt(view, 1.5, point, { min: 0.1, max: 4 });
  close(zoomed.scale, 1.2, "scale");
  close((point.x - zoomed.x) / zoomed.scale, before.x, "x under the pointer");
  close((point.y - zoomed.y) / zoomed.scale, before.y, "y under the pointer");
  assert.equal(zoomAt(view, 100, point, { min: 0.1, max: MAX_SCALE }).scale, MAX_SCALE);
  assert.equal(zoomAt(view, 0.001, point, { min: 0.1, max: MAX_SCALE }).scale, 0.1);
  const limits = zoomLimits({ width: 9055, height: 15372 }, { width: 640, height: 600 });
  close(limits.min, 600 / 15372, "down to the whole graph");
  assert.equal(zoomLimits({ width: 700, height: 700 }, { width: 640, height: 600 }).min, READABLE);
});

test("panning moves by screen pixels and stops at the drawing's edges", () => {
  const size = { width: 1000, height: 2000 };
  const viewport = { width: 500, height: 600 };
  const view = { scale: 1, x: -100, y: -100 };
  assert.deepEqual(panBy(view, 30, -20), { scale: 1, x: -70, y: -120 });
  assert.deepEqual(clampView(panBy(view, 500, 500), size, viewport), { scale: 1, x: 0, y: 0 });
  assert.deepEqual(clampView(panBy(view, -5000, -5000), size, viewport), { scale: 1, x: -500, y: -1400 });
  // Zoomed out below the viewport's size: centred.
  assert.deepEqual(clampView({ scale: 0.25, x: -300, y: 40 }, size, viewport), { scale: 0.25, x: 125, y: 50 });
});

test("a wheel notch up zooms in, down zooms out; line and page deltas count as pixels", () => {
  assert.ok(wheelFactor(-100) > 1.15 && wheelFactor(-100) < 1.25);
  close(wheelFactor(100) * wheelFactor(-100), 1, "symmetric");
  close(wheelFactor(-3, 1), wheelFactor(-48), "lines");
  assert.equal(wheelFactor(-10_000), wheelFactor(-200), "one event zooms a bounded step");
});

test("follow: nothing moves while the running nodes are in view", () => {
  const size = { width: 900, height: 3600 };
  const viewport = { width: 640, height: 600 };
  const view = { scale: 0.8, x: -50, y: -400 };
  const area = visibleArea(view, viewport);
  const box = { x: area.x + 100, y: area.y + 100, width: 80, height: 36 };
  assert.equal(followView(view, size, viewport, [box]), null);
  assert.equal(followView(view, size, viewport, []), null);
});

test("follow: an offscreen running node is centred, at the same scale", () => {
  const size = { width: 900, height: 3600 };
  const viewport = { width: 640, height: 600 };
  const view = { scale: 0.8, x: -50, y: 0 };
  const box = { x: 400, y: 2000, width: 80, height: 36 };
  const next = followView(view, size, viewport, [box]);
  assert.equal(next.scale, 0.8);
  close(next.x + (box.x + 40) * 0.8, 320, "centred across");
  close(next.y + (box.y + 18) * 0.8, 300, "centred down");
  // Half in view (under the margin) counts as out of view.
  const edge = { x: 100, y: (600 - 10) / 0.8, width: 80, height: 36 };
  assert.notEqual(followView(view, size, viewport, [edge]), null);
  // Near the drawing's end the view stops at its edge rather than centring.
  const last = followView(view, size, viewport, [{ x: 400, y: 3550, width: 80, height: 36 }]);
  close(last.y, 600 - 3600 * 0.8, "bottom edge");
});

test("follow: several running nodes are centred together when they fit, else the first", () => {
  const size = { width: 2000, height: 3600 };
  const viewport = { width: 640, height: 600 };
  const view = { scale: 1, x: 0, y: 0 };
  const a = { x: 700, y: 1000, width: 80, height: 36 };
  const b = { x: 1000, y: 1100, width: 80, height: 36 };
  const both = followView(view, size, viewport, [a, b]);
  close(both.x + 890, 320, "the pair's middle across");
  close(both.y + 1068, 300, "the pair's middle down");
  const far = { x: 1800, y: 3000, width: 80, height: 36 };
  const first = followView(view, size, viewport, [a, far]);
  close(first.x + 740, 320, "the first one's middle");
  close(first.y + 1018, 300, "the first one's middle down");
});

test("a node inside a closed frame is found at its frame", () => {
  const frame = { x: 10, y: 20, width: 100, height: 40 };
  const inner = { x: 30, y: 60, width: 80, height: 36 };
  const boxes = new Map([["research", frame], ["research/search", inner]]);
  assert.equal(boxOf("research/search", boxes), inner);
  assert.equal(boxOf("research/deep/dig", boxes), frame);
  assert.equal(boxOf("elsewhere", boxes), null);
});
