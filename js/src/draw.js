// The graph as SVG: nodes, edges with condition labels, frames for sub-graphs, run state as CSS classes.
import { svg } from "./dom.js";
import {
  END, FRAME_HEAD, FRAME_LABEL_X, LABEL_LINE_HEIGHT, LABEL_X, START, badgesOf, edgeLabel, isFrame, nodeTitle, progressLabel,
} from "./layout.js";

const JOIN_GAP = 8; // the join bar sits this far above the node the arms meet at

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

function describe(node, badges) {
  const parts = [nodeTitle(node.id), ...badges.map((badge) => badge[2])];
  if (node.map) parts.push("runs once per item (a branch each)");
  if (isFrame(node)) {
    const count = node.graph.nodes.filter((n) => n.id !== START && n.id !== END).length;
    const mapped = node.mapping ? ", with input/output mappings" : "";
    parts.push(`sub-graph ${node.graph.name || ""} of ${count} node${count === 1 ? "" : "s"}${mapped}`);
  }
  return parts.join(" \u2014 ");
}

/**
 * An edge's classes: how it is drawn (a `goto` dotted, an unconditional one dashed, a
 * `denied` one, where a person's denial sends the run, long-dashed in the colour of a
 * refusal, a `dynamic` one, discovered while running because the graph does not declare
 * it, dash-dot).
 */
export function edgeClass(edge) {
  let style = edge.goto ? " nbg-goto" : edge.denied ? " nbg-denied" : edge.unconditional && !edge.each ? " nbg-unconditional" : "";
  if (edge.each) style += " nbg-each";
  if (edge.fanout && edge.fanout.length > 1) style += " nbg-fanout";
  if (edge.join && edge.join.length > 1) style += " nbg-join";
  if (edge.dynamic) style += " nbg-dynamic";
  return `nbg-edge${style}`;
}

/** An edge's tooltip: its ends and label, and for a discovered edge how to declare it (its `note`). */
export function edgeTip(edge) {
  const text = edgeLabel(edge);
  const title = `${nodeTitle(edge.from)} \u2192 ${nodeTitle(edge.to)}${text ? `: ${text}` : ""}`;
  if (edge.denied) return `${title} \u2014 where the run goes when a person denies ${nodeTitle(edge.from)}`;
  if (!edge.dynamic) return title;
  return `${title} \u2014 ${edge.note || "discovered while running: the graph does not declare it"}`;
}

/**
 * Draw a laid-out graph into a fresh <svg>; returns it with lookups for updates.
 * Everything drawn sits in one group, `scene`, which the view moves and scales to zoom and
 * pan; each node's entry keeps its `box` in the drawing's coordinates (frames' insides too).
 * Labels are set with textContent: node names and conditions may be model text.
 * `onToggle(path)` is called when a frame is clicked, or Enter / Space pressed on it.
 */
export function drawGraph(laid, uid, { onToggle = () => {} } = {}) {
  const root = svg("svg", {
    class: "nbg-svg",
    width: Math.ceil(laid.width),
    height: Math.ceil(laid.height),
    viewBox: `0 0 ${Math.ceil(laid.width)} ${Math.ceil(laid.height)}`,
    role: "group",
    "data-width": Math.ceil(laid.width),
    "data-height": Math.ceil(laid.height),
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
  const scene = svg("g", { class: "nbg-scene" });
  root.appendChild(scene);
  const drawing = {
    root, scene, width: laid.width, height: laid.height, nodeEls: new Map(), edgeEls: new Map(), joinEls: new Map(), onToggle,
  };
  drawLevel(scene, laid, drawing, uid, { x: 0, y: 0 });
  return drawing;
}

function drawLevel(parent, laid, drawing, uid, origin) {
  const edgeLayer = svg("g", { class: "nbg-edges" });
  for (const edge of laid.edges) {
    const group = svg("g", { class: edgeClass(edge), "data-edge": edge.key });
    const points = edge.points.slice();
    const joined = edge.join && edge.join.length > 1 && laid.joins.some((j) => j.node === laid.prefix + edge.to);
    if (joined) {
      const last = points[points.length - 1];
      points[points.length - 1] = { x: last.x, y: last.y - JOIN_GAP }; // the arms end on the bar
    }
    const path = svg("path", { d: pathOf(points) });
    if (!joined) path.setAttribute("marker-end", `url(#arrow-${uid})`);
    group.appendChild(path);
    const text = edgeLabel(edge);
    const tip = svg("title");
    tip.textContent = edgeTip(edge);
    group.prepend(tip);
    if (text) group.appendChild(drawLabel(edge, text));
    edgeLayer.appendChild(group);
    if (!drawing.edgeEls.has(edge.key)) drawing.edgeEls.set(edge.key, []);
    drawing.edgeEls.get(edge.key).push({ group, path, arrow: !joined, edge });
  }
  // Where the arms of a join meet: a bar, and one arrow on into the node.
  for (const join of laid.joins) {
    const group = svg("g", { class: "nbg-edge nbg-join-point", "data-join": join.node });
    const bar = svg("path", { d: `M${join.x - join.width / 2},${join.y - JOIN_GAP} L${join.x + join.width / 2},${join.y - JOIN_GAP}`, class: "nbg-join-bar" });
    const stub = svg("path", { d: `M${join.x},${join.y - JOIN_GAP} L${join.x},${join.y}`, "marker-end": `url(#arrow-${uid})` });
    const title = svg("title");
    title.textContent = `${nodeTitle(join.node.split("/").pop())} runs once all of its sources have finished`;
    group.append(title, bar, stub);
    edgeLayer.appendChild(group);
    const keys = laid.edges.filter((e) => laid.prefix + e.to === join.node && e.join).map((e) => e.key);
    drawing.joinEls.set(join.node, { group, path: stub, keys });
  }
  parent.appendChild(edgeLayer);
  const nodeLayer = svg("g", { class: "nbg-nodes" });
  for (const node of laid.nodes) nodeLayer.appendChild(drawNode(node, drawing, uid, origin));
  parent.appendChild(nodeLayer);
}

/**
 * An edge's label as drawn (its lines, shortened when long) on a background, with its whole
 * text as the tooltip; the inspector shows it whole too.
 */
function drawLabel(edge, text) {
  const box = svg("g", { class: "nbg-edge-text" });
  const tip = svg("title");
  tip.textContent = text;
  const top = edge.labelY + 4 - ((edge.lines.length - 1) * LABEL_LINE_HEIGHT) / 2;
  const label = svg("text", { x: edge.labelX, y: top, class: "nbg-edge-label", "text-anchor": "middle" });
  edge.lines.forEach((line, i) => {
    const span = svg("tspan", { x: edge.labelX, dy: i ? LABEL_LINE_HEIGHT : 0 });
    span.textContent = line;
    label.appendChild(span);
  });
  box.append(tip, svg("rect", { class: "nbg-edge-label-bg", rx: 3 }), label);
  return box;
}

function drawNode(node, drawing, uid, origin) {
  const terminal = node.id === START || node.id === END;
  const frame = isFrame(node);
  const open = Boolean(node.inner);
  let cls = `nbg-node${terminal ? " nbg-terminal" : ""} nbg-kind-${node.kind || "function"}`;
  if (node.map) cls += " nbg-map";
  if (frame) cls += ` nbg-frame${open ? " nbg-open" : ""}`;
  const group = svg("g", { class: cls, "data-node": node.path, transform: `translate(${node.x - node.width / 2},${node.y - node.height / 2})` });
  const badges = badgesOf(node);
  const title = svg("title");
  title.textContent = describe(node, badges);
  group.appendChild(title);
  if (node.map) {
    // A stack of cards: the node runs as many branches.
    for (const offset of [6, 3]) {
      group.appendChild(svg("rect", { x: offset, y: offset, width: node.width, height: node.height, rx: 8, class: "nbg-stack" }));
    }
  }
  const box = svg("rect", { width: node.width, height: node.height, rx: terminal ? node.height / 2 : 8, class: "nbg-node-box" });
  const labelY = open ? FRAME_HEAD / 2 + 5 : node.height / 2 + 4;
  const text = svg("text", { x: LABEL_X, y: labelY, class: "nbg-node-label" });
  if (terminal) {
    text.setAttribute("x", node.width / 2);
    text.setAttribute("text-anchor", "middle");
  }
  text.textContent = nodeTitle(node.id);
  let handle = null;
  if (frame) {
    // The frame's own box and title take clicks and focus; what is drawn inside has its own.
    handle = svg("g", {
      class: "nbg-frame-handle", tabindex: 0, role: "button", "aria-expanded": String(open),
      "aria-label": `${open ? "Close" : "Open"} sub-graph ${node.id}`,
    });
    const glyph = svg("text", { x: 10, y: labelY, class: "nbg-frame-glyph" });
    glyph.textContent = open ? "\u25BE" : "\u25B8";
    text.setAttribute("x", FRAME_LABEL_X);
    handle.append(box, glyph, text);
    handle.addEventListener("click", (event) => {
      event.stopPropagation();
      drawing.onToggle(node.path);
    });
    handle.addEventListener("keydown", (event) => {
      if (event.key === "Enter" || event.key === " ") {
        event.preventDefault();
        drawing.onToggle(node.path);
      }
    });
    group.appendChild(handle);
  } else {
    group.append(box, text);
  }
  let bx = node.width - 8;
  const badgeY = open ? FRAME_HEAD / 2 : node.height / 2;
  for (const [label, kind, , w] of badges.reverse()) {
    bx -= w;
    group.appendChild(svg("rect", { x: bx, y: badgeY - 8, width: w, height: 16, rx: 4, class: `nbg-badge nbg-badge-${kind}` }));
    const t = svg("text", { x: bx + w / 2, y: badgeY + 4, "text-anchor": "middle", class: "nbg-badge-text" });
    t.textContent = label;
    group.appendChild(t);
    bx -= 3;
  }
  const visits = svg("text", { x: node.width - 4, y: -4, "text-anchor": "end", class: "nbg-visits" });
  const rerun = svg("text", { x: 2, y: -4, class: "nbg-rerun" });
  rerun.append(svg("title"), svg("tspan"));
  const progress = svg("g", { class: "nbg-progress", transform: `translate(${node.width},${node.height})` });
  progress.append(svg("title"), svg("rect", { y: -8, height: 16, rx: 8, class: "nbg-progress-box" }));
  progress.append(svg("text", { y: 4, class: "nbg-progress-text" }), svg("text", { y: 4, class: "nbg-progress-failed" }));
  progress.style.display = "none";
  group.append(visits, rerun, progress);
  const at = { x: origin.x + node.x - node.width / 2, y: origin.y + node.y - node.height / 2, width: node.width, height: node.height };
  if (open) {
    const dx = (node.width - node.inner.width) / 2;
    const inner = svg("g", { class: "nbg-frame-inner", transform: `translate(${dx},${FRAME_HEAD})` });
    drawLevel(inner, node.inner, drawing, uid, { x: at.x + dx, y: at.y + FRAME_HEAD });
    group.appendChild(inner);
  }
  drawing.nodeEls.set(node.path, { group, visits, rerun, progress, handle, node, box: at });
  return group;
}

/** Size edge-label backgrounds once the SVG is in the document (needs text metrics). */
export function fitLabels(root) {
  for (const label of root.querySelectorAll(".nbg-edge-label")) {
    const bg = label.previousElementSibling;
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

function paintProgress(progress, node, counts) {
  const shown = Boolean(counts) && (node.map || counts.total > 1);
  progress.style.display = shown ? "" : "none";
  if (!shown) return;
  const { text, failed, title, settled } = progressLabel(counts);
  const [tip, box, done, bad] = progress.children;
  tip.textContent = title;
  const w1 = text.length * 6.4 + 10;
  const w2 = failed ? failed.length * 6.4 + 4 : 0;
  // Straddles the node's bottom-right corner, right-aligned to it.
  box.setAttribute("x", -(w1 + w2) + 6);
  box.setAttribute("width", w1 + w2);
  done.setAttribute("x", -(w1 + w2) + 11);
  done.textContent = text;
  bad.setAttribute("x", -w2 + 4);
  bad.textContent = failed;
  progress.classList.toggle("nbg-progress-settled", settled);
  progress.classList.toggle("nbg-progress-has-failed", Boolean(failed));
}

/**
 * A node that has run can be inspected from the keyboard: it joins the Tab order (only the
 * nodes a run reached, not every node of a large graph) and Enter or Space opens its step.
 */
function inspectable(group, node, reached) {
  if (node.id === START || node.id === END || isFrame(node)) return; // (a frame's handle is its button)
  if (reached === group.hasAttribute("tabindex")) return;
  if (reached) {
    group.setAttribute("tabindex", "0");
    group.setAttribute("role", "button");
    group.setAttribute("aria-label", `Inspect the latest step of ${nodeTitle(node.id)}`);
  } else {
    for (const name of ["tabindex", "role", "aria-label"]) group.removeAttribute(name);
  }
}

/**
 * Reflect a run on the drawing: the nodes running now (several while branches run),
 * pauses, visits, branch progress, re-runs and fired edges. `warned` (path -> note): nodes a
 * resume would run again, said before the answer. `previous` ({visits, fired}): the run a fork
 * came from, whose path not taken by this run shows dashed beside it.
 * @param {{nodeEls: Map, edgeEls: Map, joinEls: Map, root: SVGElement}} drawing
 */
export function paintRun(drawing, {
  current, running, waiting, visits, fired, branches, reruns, finished, uid, warned = {}, previous = {},
}) {
  const wasVisited = previous.visits || {};
  const wasFired = previous.fired || {};
  for (const [path, { group, visits: badge, rerun, progress, node }] of drawing.nodeEls) {
    const count = visits[path] || 0;
    const live = running.has(path) || path === current;
    group.classList.toggle("nbg-current", live);
    group.classList.toggle("nbg-waiting", waiting.has(path));
    group.classList.toggle("nbg-visited", count > 0 && !live);
    inspectable(group, node, count > 0 || live);
    group.classList.toggle("nbg-was-visited", count === 0 && !live && (wasVisited[path] || 0) > 0);
    badge.textContent = count > 1 ? `\u00D7${count}` : "";
    const again = reruns[path] || 0;
    const warning = warned[path] || "";
    const [tip, glyph] = rerun.children;
    glyph.textContent = again > 1 ? `\u21BB${again}` : again ? "\u21BB" : warning ? "\u21BB?" : "";
    tip.textContent = again
      ? `ran again from its start on resume${again > 1 ? ` (${again} times)` : ""}: its code up to the pause ran a second time`
      : warning;
    group.classList.toggle("nbg-reran", again > 0);
    group.classList.toggle("nbg-rerun-warned", !again && Boolean(warning));
    paintProgress(progress, node, branches[path]);
  }
  for (const [key, entries] of drawing.edgeEls) {
    const count = fired[key] || 0;
    const before = count === 0 && (wasFired[key] || 0) > 0;
    for (const { group, path, arrow } of entries) {
      group.classList.toggle("nbg-fired", count > 0);
      group.classList.toggle("nbg-was-fired", before);
      group.classList.toggle("nbg-unfired", finished && count === 0 && !before);
      if (arrow) path.setAttribute("marker-end", `url(#${count > 0 ? "arrow-fired" : "arrow"}-${uid})`);
    }
  }
  for (const { group, path, keys } of drawing.joinEls.values()) {
    const count = keys.every((key) => fired[key]) ? 1 : 0; // the node ran once all its sources had
    group.classList.toggle("nbg-fired", count > 0);
    group.classList.toggle("nbg-unfired", finished && count === 0);
    path.setAttribute("marker-end", `url(#${count > 0 ? "arrow-fired" : "arrow"}-${uid})`);
  }
}
