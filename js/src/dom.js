// The DOM and SVG helpers both views build with, and text measured in the fonts they draw with.
import { estimateWidth } from "./layout.js";

const SVG = "http://www.w3.org/2000/svg";

/** An HTML element with a class and text. @param {string} tag @param {string} [cls] @param {string} [text] */
export function h(tag, cls, text) {
  const el = document.createElement(tag);
  if (cls) el.className = cls;
  if (text !== undefined) el.textContent = text;
  return el;
}

/** An SVG element with attributes. @param {string} tag @param {Record<string, string|number>} [attrs] */
export function svg(tag, attrs = {}) {
  const el = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, String(v));
  return el;
}

let measure = null;

/**
 * Text widths in the fonts the views draw with (JupyterLab's, else the CSS fallbacks), so
 * node boxes fit their labels. Measured once per text on a canvas, which needs no layout;
 * without a canvas (Node), estimated.
 * @returns {(text: string, font: "node"|"edge") => number}
 */
export function textMeasure() {
  if (measure) return measure;
  const context = typeof document !== "undefined" && document.createElement("canvas").getContext("2d");
  if (!context) return estimateWidth;
  const vars = document.body ? getComputedStyle(document.body) : null;
  const font = (name, fallback) => (vars && vars.getPropertyValue(name).trim()) || fallback;
  const fonts = {
    node: `500 12px ${font("--jp-ui-font-family", 'system-ui, -apple-system, "Segoe UI", sans-serif')}`,
    edge: `10.5px ${font("--jp-code-font-family", "ui-monospace, monospace")}`,
  };
  const seen = new Map();
  measure = (text, kind) => {
    const key = `${kind}\u0000${text}`;
    if (!seen.has(key)) {
      context.font = fonts[kind];
      seen.set(key, context.measureText(text).width);
    }
    return seen.get(key);
  };
  return measure;
}
