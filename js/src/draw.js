// The graph as SVG: nodes, edges with condition labels, run state as CSS classes.
import { END, START, nodeTitle } from "./layout.js";

const SVG = "http://www.w3.org/2000/svg";

/** @param {string} tag @param {Record<string, string|number>} attrs */
function svg(tag, attrs = {}) {
  const el = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, String(v));
  return el;
}

/** @param {Array<{x: number, y: number}>} points */
function pathOf(points) {
  if (points.length < 3) return `M${points.map((p) => `${p.x},${p.y}`).join(" L")}`;
  // A smooth curve through dagre's control points (midpoint quadratic splines).
  let d = `M${points[0].x},${points[0].y}`;
  for (let i = 1; i < points.length - 1; i++) {
    const mid = { x: (points[i].x + points[i + 1].x) / 2, y: (points[i].y + points[i + 1].y) / 2 };
    d += ` Q${points[i].x},${points[i].y} ${mid.x},${mid.y}`;
  }
  const last = points[points.length - 1];
  return `${d} L${last.x},${last.y}`;
}

function badgesOf(node) {
  const badges = [];
  // Glyphs from the basic symbol blocks, which every desktop font covers (emoji are not).
  if (node.kind === "llm") badges.push(["LLM", "llm", "LLM node"]);
  if (node.tools && node.tools.length) badges.push([`\u2699${node.tools.length}`, "tools", `tools: ${node.tools.join(", ")}`]);
  if (node.approval) badges.push(["\u2713", "approval", "asks for approval"]);
  return badges;
}

/**
 * Draw a laid-out graph into a fresh <svg>; returns it with lookups for updates.
 * Labels are set with textContent: node names and conditions may be model text.
 */
export function drawGraph(laid, uid) {
  const root = svg("svg", {
    class: "nbg-svg",
    width: Math.ceil(laid.width),
    height: Math.ceil(laid.height),
    viewBox: `0 0 ${Math.ceil(laid.width)} ${Math.ceil(laid.height)}`,
    role: "img",
  });
  const defs = svg("defs");
  for (const [id, cls] of [["arrow", "nbg-arrowhead"], ["arrow-fired", "nbg-arrowhead nbg-arrowhead-fired"]]) {
    const marker = svg("marker", {
      id: `${id}-${uid}`, viewBox: "0 0 10 10", refX: 9, refY: 5, markerWidth: 7, markerHeight: 7, orient: "auto-start-reverse",
    });
    marker.appendChild(svg("path", { d: "M0,0 L10,5 L0,10 z", class: cls }));
    defs.appendChild(marker);
  }
  root.appendChild(defs);

  const edgeEls = new Map();
  const edgeLayer = svg("g", { class: "nbg-edges" });
  for (const edge of laid.edges) {
    const style = edge.goto ? " nbg-goto" : edge.unconditional ? " nbg-unconditional" : "";
    const group = svg("g", { class: `nbg-edge${style}`, "data-edge": edge.key });
    const path = svg("path", { d: pathOf(edge.points), "marker-end": `url(#arrow-${uid})` });
    group.appendChild(path);
    if (!edge.unconditional && edge.label) {
      const label = svg("text", { x: edge.labelX, y: edge.labelY + 4, class: "nbg-edge-label", "text-anchor": "middle" });
      label.textContent = edge.label;
      const bg = svg("rect", { class: "nbg-edge-label-bg", rx: 3 });
      group.appendChild(bg);
      group.appendChild(label);
      group._label = { label, bg };
    }
    edgeLayer.appendChild(group);
    if (!edgeEls.has(edge.key)) edgeEls.set(edge.key, []);
    edgeEls.get(edge.key).push({ group, path });
  }
  root.appendChild(edgeLayer);

  const nodeEls = new Map();
  const nodeLayer = svg("g", { class: "nbg-nodes" });
  for (const node of laid.nodes) {
    const terminal = node.id === START || node.id === END;
    const group = svg("g", {
      class: `nbg-node${terminal ? " nbg-terminal" : ""} nbg-kind-${node.kind || "function"}`,
      "data-node": node.id,
      transform: `translate(${node.x - node.width / 2},${node.y - node.height / 2})`,
    });
    const badges = badgesOf(node);
    const title = svg("title");
    title.textContent = [nodeTitle(node.id), ...badges.map((badge) => badge[2])].join(" \u2014 ");
    group.appendChild(title);
    group.appendChild(svg("rect", { width: node.width, height: node.height, rx: terminal ? node.height / 2 : 8, class: "nbg-node-box" }));
    const text = svg("text", { x: 12, y: node.height / 2 + 4, class: "nbg-node-label" });
    if (terminal) {
      text.setAttribute("x", node.width / 2);
      text.setAttribute("text-anchor", "middle");
    }
    text.textContent = nodeTitle(node.id);
    group.appendChild(text);
    let bx = node.width - 8;
    for (const [label, cls] of badges.reverse()) {
      const w = label.length > 2 ? 26 : 18;
      bx -= w;
      group.appendChild(svg("rect", { x: bx, y: node.height / 2 - 8, width: w, height: 16, rx: 4, class: `nbg-badge nbg-badge-${cls}` }));
      const t = svg("text", { x: bx + w / 2, y: node.height / 2 + 4, "text-anchor": "middle", class: "nbg-badge-text" });
      t.textContent = label;
      group.appendChild(t);
      bx -= 3;
    }
    const visits = svg("text", { x: node.width - 4, y: -4, "text-anchor": "end", class: "nbg-visits" });
    group.appendChild(visits);
    nodeLayer.appendChild(group);
    nodeEls.set(node.id, { group, visits });
  }
  root.appendChild(nodeLayer);
  return { root, nodeEls, edgeEls };
}

/** Size edge-label backgrounds once the SVG is in the document (needs text metrics). */
export function fitLabels(root) {
  for (const group of root.querySelectorAll(".nbg-edge")) {
    if (!group._label) continue;
    const { label, bg } = group._label;
    let box;
    try {
      box = label.getBBox();
    } catch {
      continue;
    }
    if (!box.width) continue;
    bg.setAttribute("x", box.x - 4);
    bg.setAttribute("y", box.y - 1);
    bg.setAttribute("width", box.width + 8);
    bg.setAttribute("height", box.height + 2);
  }
}

/**
 * Reflect a run on the drawing: current node, visited nodes, fired edges.
 * @param {{nodeEls: Map, edgeEls: Map, root: SVGElement}} drawing
 */
export function paintRun(drawing, { current, visits, fired, finished, uid }) {
  for (const [id, { group, visits: badge }] of drawing.nodeEls) {
    const count = visits[id] || 0;
    group.classList.toggle("nbg-current", id === current);
    group.classList.toggle("nbg-visited", count > 0 && id !== current);
    badge.textContent = count > 1 ? `\u00D7${count}` : "";
  }
  for (const [key, entries] of drawing.edgeEls) {
    const count = fired[key] || 0;
    for (const { group, path } of entries) {
      group.classList.toggle("nbg-fired", count > 0);
      group.classList.toggle("nbg-unfired", finished && count === 0);
      path.setAttribute("marker-end", `url(#${count > 0 ? "arrow-fired" : "arrow"}-${uid})`);
    }
  }
}
