// The step slider: scrubs the drawing through a run's frames without running anything.
// Python sends the frames packed as changes (each frame only the counts it changed, every
// path and edge named once); the counts at frame i are folded here, from the nearest kept
// checkpoint, so scrubbing a long run costs at most a few dozen merges per move.

const EVERY = 64; // a checkpoint of the folded counts every this many frames

/**
 * The frames Python packed ({names, rows: [[step, path, branch, error, visits, fired]]}, where
 * path indexes names and visits / fired are flat [name index, count, ...] lists) as
 * {step, path, branch, error, visits, fired} objects.
 */
export function unpackFrames(packed) {
  const names = (packed && packed.names) || [];
  const counts = (flat) => {
    const out = {};
    for (let i = 0; i < flat.length; i += 2) out[names[flat[i]]] = flat[i + 1];
    return out;
  };
  return ((packed && packed.rows) || []).map(([step, path, branch, error, visits, fired]) => ({
    step, path: path == null ? null : names[path], branch, error, visits: counts(visits || []), fired: counts(fired || []),
  }));
}

/** Fold compact frames into the counts at any frame: `at(i)` -> {visits, fired, frame}. */
export function foldFrames(frames) {
  const kept = [];
  let visits = {};
  let fired = {};
  frames.forEach((frame, i) => {
    visits = { ...visits, ...(frame.visits || {}) };
    fired = { ...fired, ...(frame.fired || {}) };
    if (i % EVERY === 0) kept.push({ visits, fired });
  });
  return {
    length: frames.length,
    at(i) {
      const index = Math.max(0, Math.min(frames.length - 1, i));
      const base = kept[Math.floor(index / EVERY)] || { visits: {}, fired: {} };
      const out = { visits: { ...base.visits }, fired: { ...base.fired } };
      for (let j = Math.floor(index / EVERY) * EVERY + 1; j <= index; j++) {
        Object.assign(out.visits, frames[j].visits || {});
        Object.assign(out.fired, frames[j].fired || {});
      }
      return { ...out, frame: frames[index], index };
    },
  };
}

/** What a frame says in words: "frame 3 / 7 · step 2 · odd". */
export function frameLabel(frame, index, last) {
  if (!frame) return "";
  if (index === 0) return `frame 0 / ${last} \u00B7 the input`;
  const where = frame.branch ? `${frame.path} [${frame.branch}]` : frame.path;
  return `frame ${index} / ${last} \u00B7 step ${frame.step} \u00B7 ${where}${frame.error ? " \u00B7 failed" : ""}`;
}

/**
 * The slider row: prev, a range input, next, a label and an Inspect button. `onMove(i)` is
 * called on every move (the last frame: the run as it ended); `onInspect(i)` for Inspect.
 * Arrow keys and Page Up / Down on the range input, Home, End, [ and ] anywhere in the row move it.
 */
export function createSlider(h, { onMove, onInspect }) {
  const row = h("div", "nbg-replay");
  row.setAttribute("role", "group");
  row.setAttribute("aria-label", "Replay the run step by step");
  const prev = h("button", "nbg-button nbg-replay-prev", "\u25C0");
  prev.setAttribute("aria-label", "Previous step");
  const range = h("input", "nbg-replay-range");
  range.type = "range";
  range.min = "0";
  range.step = "1";
  range.setAttribute("aria-label", "Step of the run");
  const next = h("button", "nbg-button nbg-replay-next", "\u25B6");
  next.setAttribute("aria-label", "Next step");
  const label = h("span", "nbg-replay-label");
  const inspect = h("button", "nbg-button nbg-replay-inspect", "Inspect");
  inspect.title = "Open this step in the inspector";
  row.append(prev, range, next, label, inspect);
  row.hidden = true;
  let folded = foldFrames([]);

  const last = () => folded.length - 1;
  function move(i, notify = true) {
    const index = Math.max(0, Math.min(last(), i));
    range.value = String(index);
    range.setAttribute("aria-valuetext", frameLabel(folded.at(index).frame, index, last()));
    label.textContent = range.getAttribute("aria-valuetext");
    prev.disabled = index <= 0;
    next.disabled = index >= last();
    inspect.disabled = index === 0;
    row.dataset.frame = String(index);
    if (notify) onMove(index);
  }
  range.addEventListener("input", () => move(Number(range.value)));
  prev.addEventListener("click", () => move(Number(range.value) - 1));
  next.addEventListener("click", () => move(Number(range.value) + 1));
  inspect.addEventListener("click", () => onInspect(Number(range.value)));
  // The keys are handled here, not left to the range input: inside a notebook JupyterLab takes
  // the arrow keys first and the input never moves (seen in JupyterLab 4 with Chromium).
  const KEYS = { ArrowLeft: -1, ArrowDown: -1, ArrowRight: 1, ArrowUp: 1, PageDown: -10, PageUp: 10, "[": -1, "]": 1 };
  row.addEventListener("keydown", (event) => {
    if (event.ctrlKey || event.metaKey || event.altKey) return;
    const here = Number(range.value);
    let to = null;
    if (event.key === "Home") to = 0;
    else if (event.key === "End") to = last();
    else if (event.key in KEYS && (event.target === range || event.key === "[" || event.key === "]")) to = here + KEYS[event.key];
    if (to === null) return;
    event.preventDefault();
    event.stopPropagation();
    move(to);
  });

  return {
    el: row,
    /** New frames (as Python packs them): the slider goes to the last one (the run as it ended). */
    set(packed) {
      folded = foldFrames(unpackFrames(packed));
      row.hidden = folded.length < 2;
      range.max = String(Math.max(0, last()));
      move(last(), false);
    },
    /** The counts to draw, or null at the last frame (draw the run's own traits). */
    shown() {
      const index = Number(range.value);
      if (row.hidden || index >= last()) return null;
      return folded.at(index);
    },
    move,
  };
}
