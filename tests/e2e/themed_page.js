// The page side of the theme test. `show` draws a view with the built module where a host puts a
// widget's element, from a model that holds a real view's traits and answers the view's messages
// as its kernel did. `audit` measures what is drawn: axe-core's color-contrast rule on the HTML
// text, and what axe does not look at, from computed styles: SVG text on what is drawn under it,
// the outlines and fills that make out a control, focus rings, and the lines of the graph.
import view from "/nbgraph/static/widget.js";

let cleanup = null;
let root = null;
let unanswered = [];

const frame = () => new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done)));

function element(tag, cls) {
  const el = document.createElement(tag);
  el.className = cls;
  return el;
}

/** The widget's element, placed in the page as the host places it. */
async function mount(how) {
  const out = document.getElementById("out");
  out.replaceChildren();
  const el = element("div", "lm-Widget jupyter-widgets"); // (a widget's element, as ipywidgets makes it)
  if (how === "vscode") {
    // vscode-jupyter: the renderer's element and the panel in it, both painted white by its
    // stylesheet, an empty .cell-output, and the widget's element beside it.
    const outer = element("div", "cell-output-ipywidget-background");
    const inner = element("div", "cell-output-ipywidget-background");
    inner.append(element("div", "cell-output cell-output"), el);
    outer.append(inner);
    out.append(outer);
  } else if (how === "shadow") {
    // marimo: a custom element whose shadow root adopts copies of the page's stylesheets, then
    // the widget's CSS.
    const host = document.createElement("marimo-anywidget");
    out.append(host);
    const shadow = host.attachShadow({ mode: "open" });
    const copies = [...document.styleSheets].map((sheet) => {
      const copy = new CSSStyleSheet();
      copy.replaceSync([...sheet.cssRules].map((rule) => rule.cssText).filter((text) => !text.includes("@import")).join("\n"));
      return copy;
    });
    const texts = await Promise.all(["widget.css", "batch.css"].map((f) => fetch(`/nbgraph/static/${f}`).then((r) => r.text())));
    const own = new CSSStyleSheet();
    own.replaceSync(texts.join("\n"));
    shadow.adoptedStyleSheets = [...copies, own];
    shadow.append(el);
  } else {
    out.append(el);
  }
  return el;
}

const same = (a, b) => {
  const keys = Object.keys(a).sort();
  return JSON.stringify(keys) === JSON.stringify(Object.keys(b).sort()) && keys.every((k) => JSON.stringify(a[k]) === JSON.stringify(b[k]));
};

/** A model as anywidget gives one: the traits, and the kernel's replies to the messages it was asked. */
function modelOf(state) {
  const listeners = new Map();
  return {
    get: (name) => state.traits[name],
    on(name, fn) {
      if (!listeners.has(name)) listeners.set(name, []);
      listeners.get(name).push(fn);
    },
    off(name, fn) {
      listeners.set(name, (listeners.get(name) || []).filter((f) => f !== fn));
    },
    send(message) {
      if (message.type === "hello") return;
      const pair = state.replies.find(([request]) => same(request, message));
      if (!pair) {
        unanswered.push(message);
        return;
      }
      setTimeout(() => {
        for (const fn of listeners.get("msg:custom") || []) fn(pair[1], []);
      });
    },
  };
}

/** Draw `state` (`{kind, traits, replies}`) where the host `how` puts a widget. */
export async function show(state, how) {
  if (cleanup) cleanup();
  unanswered = [];
  const el = await mount(how);
  const model = modelOf(state);
  view.initialize({ model });
  cleanup = view.render({ model, el });
  root = el.querySelector(".nbg-root");
  await frame();
  return root.className;
}

// -- colours ------------------------------------------------------------------------------------

/** A computed colour as [r, g, b, a] (0-255, alpha 0-1): rgb(), rgba(), color(srgb ...). */
function parse(text) {
  if (!text || text === "none" || text === "transparent") return [0, 0, 0, 0];
  const srgb = text.match(/color\(srgb ([\d.e+-]+) ([\d.e+-]+) ([\d.e+-]+)(?: \/ ([\d.e+-]+))?\)/);
  if (srgb) return [+srgb[1] * 255, +srgb[2] * 255, +srgb[3] * 255, srgb[4] === undefined ? 1 : +srgb[4]];
  const rgb = text.match(/rgba?\(([\d.]+),? ([\d.]+),? ([\d.]+)(?:,? \/? ?([\d.]+))?\)/);
  if (rgb) return [+rgb[1], +rgb[2], +rgb[3], rgb[4] === undefined ? 1 : +rgb[4]];
  throw new Error(`a colour this audit cannot read: ${text}`);
}

const over = (top, under) => [0, 1, 2].map((i) => top[3] * top[i] + (1 - top[3]) * under[i]).concat(1);
const faded = (colour, opacity) => colour.slice(0, 3).concat(colour[3] * opacity);

function luminance(c) {
  const [r, g, b] = c.slice(0, 3).map((v) => {
    v /= 255;
    return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4;
  });
  return 0.2126 * r + 0.7152 * g + 0.0722 * b;
}

/** The WCAG contrast ratio of two opaque colours. */
function ratio(a, b) {
  const [x, y] = [luminance(a), luminance(b)].sort((p, q) => q - p);
  return Math.round(((x + 0.05) / (y + 0.05)) * 100) / 100;
}

const hex = (c) => `#${c.slice(0, 3).map((v) => Math.round(v).toString(16).padStart(2, "0")).join("")}`;

/** The parent of `el`, through a shadow root to its host. */
const up = (el) => el.parentElement || (el.parentNode && el.parentNode.host) || null;

/** What is painted behind `el`'s content: its own and its ancestors' backgrounds, composited. */
function backdrop(el) {
  const layers = [];
  for (let at = el; at; at = up(at)) {
    const style = getComputedStyle(at);
    layers.push(faded(parse(style.backgroundColor), Number(style.opacity)));
  }
  return layers.reduceRight((under, layer) => over(layer, under), [255, 255, 255, 1]);
}

/** How opaque `el` is drawn: its opacity and its ancestors' within the drawing. */
function opacityOf(el, stop) {
  let opacity = 1;
  for (let at = el; at && at !== stop; at = up(at)) opacity *= Number(getComputedStyle(at).opacity);
  return opacity;
}

const shown = (el) => {
  const style = getComputedStyle(el);
  if (style.display === "none" || style.visibility === "hidden") return false;
  const box = el.getBoundingClientRect();
  return (box.width > 0 || box.height > 0) && !el.closest("[hidden]"); // (a straight edge is a line)
};

const name = (el) => {
  const cls = typeof el.className === "string" ? el.className : el.className.baseVal;
  const text = (el.textContent || el.value || el.getAttribute("aria-label") || "").trim().slice(0, 40);
  return `${el.tagName.toLowerCase()}.${cls.split(/\s+/).filter(Boolean).join(".")} "${text}"`;
};

// -- what axe does not look at --------------------------------------------------------------

/** SVG text on the shapes drawn under its middle (a label on its node, a badge on its badge). */
function svgText(svgEl, canvas, seen) {
  const low = [];
  const shapes = [...svgEl.querySelectorAll("rect, circle, ellipse, polygon, path")].filter((s) => {
    if (s.closest("defs, marker, title") || s.classList.contains("nbg-hit") || !shown(s)) return false;
    return parse(getComputedStyle(s).fill)[3] > 0;
  });
  for (const text of svgEl.querySelectorAll("text")) {
    if (!text.textContent.trim() || !shown(text)) continue;
    const box = text.getBoundingClientRect();
    const [x, y] = [box.left + box.width / 2, box.top + box.height / 2];
    let under = canvas;
    for (const shape of shapes) {
      if (!(text.compareDocumentPosition(shape) & Node.DOCUMENT_POSITION_PRECEDING)) continue;
      const r = shape.getBoundingClientRect();
      if (x < r.left || x > r.right || y < r.top || y > r.bottom) continue;
      const style = getComputedStyle(shape);
      under = over(faded(parse(style.fill), Number(style.fillOpacity) * opacityOf(shape, svgEl)), under);
    }
    const style = getComputedStyle(text);
    const colour = over(faded(parse(style.fill), Number(style.fillOpacity) * opacityOf(text, svgEl)), under);
    const r = ratio(colour, under);
    seen.svgText += 1;
    if (r < 4.5) low.push(`${name(text)}: ${r}:1 (${hex(colour)} on ${hex(under)})`);
  }
  return low;
}

/** The graph's lines (node outlines, states, edges) on the canvas: 3:1 at least. */
function svgLines(svgEl, canvas, seen) {
  const low = [];
  for (const shape of svgEl.querySelectorAll("rect, path, circle, polygon")) {
    if (shape.closest("defs, marker") || shape.classList.contains("nbg-hit") || !shown(shape)) continue;
    const style = getComputedStyle(shape);
    const stroke = parse(style.stroke);
    if (stroke[3] === 0 || parseFloat(style.strokeWidth) === 0) continue;
    const colour = over(faded(stroke, Number(style.strokeOpacity) * opacityOf(shape, svgEl)), canvas);
    if (hex(colour) === hex(canvas)) continue; // (an outline in the background's colour is a gap, not a line)
    const r = ratio(colour, canvas);
    seen.lines += 1;
    const what = shape.closest("[data-node], [data-edge]");
    const where = what ? ` of ${what.dataset.node || what.dataset.edge}` : "";
    if (r < 3) low.push(`${name(shape)}${where}: ${r}:1 (${hex(colour)} on ${hex(canvas)})`);
  }
  return low;
}

/** Each control made out from what is round it (its outline or its fill, 3:1), and its focus ring (3:1). */
function controls(scope, seen) {
  const low = [];
  for (const el of scope.querySelectorAll("button, input, select, textarea")) {
    if (el.disabled || !shown(el)) continue;
    const around = backdrop(up(el));
    const style = getComputedStyle(el);
    seen.controls += 1;
    if (["range", "checkbox", "radio"].includes(el.type)) {
      const r = ratio(over(parse(style.accentColor), around), around);
      if (r < 3) low.push(`${name(el)}: its accent ${r}:1 on ${hex(around)}`);
    } else {
      const border = style.borderTopStyle !== "none" && parseFloat(style.borderTopWidth) > 0
        ? ratio(over(parse(style.borderTopColor), around), around) : 1;
      const fill = ratio(over(parse(style.backgroundColor), around), around);
      if (Math.max(border, fill) < 3) low.push(`${name(el)}: outline ${border}:1, fill ${fill}:1 on ${hex(around)}`);
    }
    el.focus({ preventScroll: true });
    const focused = getComputedStyle(el);
    if (focused.outlineStyle === "none" || parseFloat(focused.outlineWidth) === 0) {
      low.push(`${name(el)}: no focus ring`);
    } else if (focused.outlineStyle !== "auto") {
      const r = ratio(over(parse(focused.outlineColor), around), around);
      if (r < 3) low.push(`${name(el)}: focus ring ${r}:1 on ${hex(around)}`);
    }
    el.blur();
  }
  return low;
}

/** HTML text axe could not decide on, measured on its backdrop. */
function htmlText(nodes) {
  const low = [];
  for (const el of nodes) {
    const style = getComputedStyle(el);
    const under = backdrop(el);
    const colour = over(faded(parse(style.color), opacityOf(el, null)), under);
    const r = ratio(colour, under);
    if (r < 4.5) low.push(`${name(el)}: ${r}:1 (${hex(colour)} on ${hex(under)})`);
  }
  return low;
}

/** Everything measured on the view shown now, and what the page around it paints. */
export async function audit() {
  await frame();
  const result = await axe.run(root, {
    runOnly: { type: "rule", values: ["color-contrast"] },
    resultTypes: ["violations", "incomplete", "passes"],
  });
  const axeLow = result.violations.flatMap((v) => v.nodes.map((n) => `${n.target.join(" ")}: ${n.failureSummary}`));
  const undecided = result.incomplete.flatMap((v) => v.nodes.map((n) => n.element).filter(Boolean));
  const canvas = backdrop(root);
  const svgs = [...root.querySelectorAll("svg.nbg-svg")];
  const seen = { svgText: 0, lines: 0, controls: 0, axe: [result.passes, result.violations, result.incomplete].flat().reduce((n, v) => n + v.nodes.length, 0) };
  const panels = [];
  for (let at = up(root); at; at = up(at)) {
    if (at.classList.contains("cell-output-ipywidget-background")) panels.push(getComputedStyle(at).backgroundColor);
  }
  return {
    axe: axeLow,
    undecided: undecided.length,
    html: htmlText(undecided),
    svgText: svgs.flatMap((s) => svgText(s, canvas, seen)),
    lines: svgs.flatMap((s) => svgLines(s, canvas, seen)),
    controls: controls(root, seen),
    seen,
    background: getComputedStyle(root).backgroundColor,
    scheme: getComputedStyle(root).colorScheme,
    panels,
    unanswered,
  };
}
