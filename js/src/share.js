// A run shared as one HTML file (nbgraph/share.py writes it): the graph view drawn from the traits
// a replay of the run gives it in a notebook, with no kernel behind it. `sharedModel` plays
// anywidget's model over those traits; the inspector's questions are answered from the
// inspections the file holds, as the kernel would answer them, and whatever else needs a kernel
// is refused with a message saying so. The view sits in a shadow root: the page's styles do not
// reach it, its styles and ids do not reach the page, and two shared runs can share one page.

export const NO_KERNEL =
  "This is a shared copy of a run: no kernel runs behind it, so nothing can be answered, forked, resumed or changed here. Open the run in its notebook for that.";

// The page's own look: the variables the view reads (JupyterLab's), light or dark as the
// reader's system prefers, whatever page includes it; and the controls that need a kernel left out.
export const PAGE_CSS = `
:host {
  display: block;
  color-scheme: light;
  background: var(--jp-layout-color0);
  --jp-ui-font-color1: #1f2328; --jp-ui-font-color2: #59636e; --jp-ui-font-color3: #c6cbd1;
  --jp-layout-color0: #ffffff; --jp-layout-color1: #f6f8fa; --jp-border-color1: #d0d7de;
  --jp-brand-color1: #0969da; --jp-success-color1: #1a7f37; --jp-warn-color1: #9a6700; --jp-error-color1: #cf222e;
}
@media (prefers-color-scheme: dark) {
  :host {
    color-scheme: dark;
    --jp-ui-font-color1: #e6edf3; --jp-ui-font-color2: #9198a1; --jp-ui-font-color3: #6e7681;
    --jp-layout-color0: #0d1117; --jp-layout-color1: #161b22; --jp-border-color1: #3d444d;
    --jp-brand-color1: #4493f8; --jp-success-color1: #3fb950; --jp-warn-color1: #d29922; --jp-error-color1: #f85149;
  }
}
.nbg-controls, .nbg-bp { display: none !important; }
.nbg-share-note { margin: 6px 2px 0; font: 11px system-ui, -apple-system, "Segoe UI", sans-serif; color: var(--jp-ui-font-color2); }
`;

/**
 * The frame an inspect message names, by the file's keys: `frame` itself, the latest record of
 * a `node`, the step of the run's own graph `step`, or that step at a log line's place `where`.
 */
export function frameOf(message, keys) {
  if (Number.isInteger(message.frame)) return message.frame;
  if (typeof message.node === "string") return keys.node[message.node];
  if (Number.isInteger(message.step)) {
    return typeof message.where === "string" ? keys.where[`${message.step} ${message.where}`] : keys.step[message.step];
  }
  return undefined;
}

/**
 * What the kernel would answer `message` with, from the file's `inspections` and `keys` (an
 * inspection the file could not hold says why in its `unavailable`); null: no answer.
 */
export function answer(message, { inspections, keys }) {
  if (message.type === "hello") return null;
  if (message.type !== "inspect") return { type: "error", message: NO_KERNEL };
  const frame = frameOf(message, keys);
  const seen = Number.isInteger(frame) ? inspections[frame] : null;
  if (!seen) {
    const what = message.node ?? (message.where ? `${message.step} ${message.where}` : message.step ?? message.frame);
    return { type: "error", message: `the shared run has no step ${JSON.stringify(what)} to inspect` };
  }
  return seen.unavailable ? { type: "error", message: seen.unavailable } : { type: "inspection", ...seen };
}

/**
 * anywidget's model over `traits`: get, set, on, off, save_changes and send. What the view
 * sends is given to `reply`; its answer comes back as a custom message, after the send returns,
 * as a kernel's would.
 */
export function sharedModel(traits, reply) {
  const values = { ...traits };
  const listeners = new Map();
  const fire = (name, ...args) => {
    for (const fn of [...(listeners.get(name) || [])]) fn(...args);
  };
  return {
    get: (name) => values[name],
    set(name, value) {
      if (values[name] === value) return;
      values[name] = value;
      fire(`change:${name}`, value);
    },
    on(names, fn) {
      for (const name of names.split(/\s+/).filter(Boolean)) {
        if (!listeners.has(name)) listeners.set(name, new Set());
        listeners.get(name).add(fn);
      }
    },
    off(names, fn) {
      if (!names) return listeners.clear();
      for (const name of names.split(/\s+/).filter(Boolean)) {
        if (fn) listeners.get(name)?.delete(fn);
        else listeners.delete(name);
      }
    },
    save_changes() {},
    send(message) {
      const back = reply(message);
      if (back) queueMicrotask(() => fire("msg:custom", back, []));
    },
  };
}

/**
 * Draw the shared run whose element carries `token` (the first not drawn yet: a page may
 * include the same file twice) with `view`, the view's module (its default export).
 */
export function mountShared(view, token) {
  const host = [...document.querySelectorAll("[data-nbgraph-shared]")].find(
    (el) => el.dataset.nbgraphShared === token && !el.shadowRoot,
  );
  if (!host) throw new Error(`nbgraph: no element of the shared run ${token} left to draw in`);
  const data = JSON.parse(host.querySelector('script[type="application/json"]').textContent);
  const root = host.attachShadow({ mode: "open" });
  const style = document.createElement("style");
  style.textContent = `${data.css}\n${PAGE_CSS}`;
  const el = document.createElement("div");
  const note = document.createElement("p");
  note.className = "nbg-share-note";
  note.textContent = data.note;
  root.append(style, el, note);
  const model = sharedModel(data.traits, (message) => answer(message, data));
  if (view.initialize) view.initialize({ model });
  return view.render({ model, el });
}
