// Marks on the drawing: breakpoints (a dot on a node's left edge, click or "b" toggles the one
// before it), problems (a warning badge on the node or edge, the message in its title and
// aria-label), each node's tokens and cost so far (small, under the node), and "new code" on a
// node whose code a re-run cell swapped into the run.
import { svg } from "./dom.js";
import { END, FRAME_HEAD, START, edgeKey, nodeTitle } from "./layout.js";

/**
 * Every problem with the path of what it marks: `{target: "node"|"edge", key, message}`.
 * `dag` problems sit on each level (a sub-graph's inside its node's `graph`); the run's
 * (`result.problems()`) carry their level in `path`.
 */
export function problemMarks(dag, runProblems = []) {
  const marks = [];
  const add = (level, problem) => {
    const prefix = level ? `${level}/` : "";
    const message = String(problem.message || problem.kind || "problem");
    if (problem.edge && problem.edge.from != null && problem.edge.to != null) {
      marks.push({ target: "edge", key: edgeKey(prefix + problem.edge.from, prefix + problem.edge.to), node: prefix + problem.edge.from, message });
    } else if (problem.node != null) {
      marks.push({ target: "node", key: prefix + problem.node, message });
    }
  };
  const walk = (graph, level) => {
    if (!graph) return;
    for (const problem of graph.problems || []) add(level, problem);
    for (const node of graph.nodes || []) {
      if (node.graph) walk(node.graph, level ? `${level}/${node.id}` : node.id);
    }
  };
  walk(dag, "");
  for (const problem of runProblems || []) add(problem.path || "", problem);
  const seen = new Set();
  return marks.filter((mark) => {
    const id = `${mark.target}\u0000${mark.key}\u0000${mark.message}`;
    if (seen.has(id)) return false;
    seen.add(id);
    return true;
  });
}

/** "1.2k tok · $0.0031": a node's tokens and cost, "" when both are zero. */
export function costLabel(entry) {
  if (!entry) return "";
  const tokens = Number(entry.tokens) || 0;
  const cost = Number(entry.cost) || 0;
  const parts = [];
  if (tokens) parts.push(`${tokens >= 10000 ? `${(tokens / 1000).toFixed(1)}k` : tokens.toLocaleString("en-US")} tok`);
  if (cost) parts.push(`$${cost >= 1 ? cost.toFixed(2) : cost.toPrecision(2)}`);
  return parts.join(" \u00B7 ");
}

/**
 * Add the marks' elements to a drawing's nodes: a breakpoint gutter on each node's left
 * edge (a button: click, Enter, Space or "b" calls `onBreak(path)`) and a cost line under it.
 */
export function addMarks(drawing, onBreak) {
  drawing.marks = new Map();
  for (const [path, entry] of drawing.nodeEls) {
    const { group, node } = entry;
    if (node.id === START || node.id === END) continue;
    const y = node.inner ? FRAME_HEAD / 2 : node.height / 2;
    const name = nodeTitle(node.id);
    // Out of the Tab order (a large graph would put hundreds of stops there): a click focuses it.
    const gutter = svg("g", { class: "nbg-bp", tabindex: -1, role: "button", "data-bp": path });
    const tip = svg("title");
    gutter.append(
      tip,
      svg("rect", { x: -9, y: y - 9, width: 16, height: 18, class: "nbg-bp-hit" }),
      svg("circle", { cx: 0, cy: y, r: 5, class: "nbg-bp-before" }),
      svg("path", { d: `M0,${y + 7} l4,4 l-4,4 l-4,-4 z`, class: "nbg-bp-after" }),
    );
    const toggle = (event) => {
      event.preventDefault();
      event.stopPropagation();
      onBreak(path);
    };
    gutter.addEventListener("click", toggle);
    gutter.addEventListener("keydown", (event) => {
      if (event.key === "Enter" || event.key === " " || event.key === "b" || event.key === "B") toggle(event);
    });
    if (entry.handle) {
      // A frame's handle keeps Enter and Space (open, close); "b" there toggles its breakpoint.
      entry.handle.addEventListener("keydown", (event) => {
        if (event.key === "b" || event.key === "B") toggle(event);
      });
    }
    const cost = svg("text", { x: node.width / 2, y: node.height + 12, "text-anchor": "middle", class: "nbg-cost" });
    const problem = svg("g", { class: "nbg-problem", role: "img", transform: `translate(${node.width / 2},0)` });
    problem.append(svg("title"), svg("path", { d: "M0,-8 L8,6 L-8,6 z", class: "nbg-problem-sign" }));
    const bang = svg("text", { x: 0, y: 4.5, "text-anchor": "middle", class: "nbg-problem-text" });
    bang.textContent = "!";
    problem.append(bang);
    problem.style.display = "none";
    const swap = svg("text", { x: node.width / 2, y: -4, "text-anchor": "middle", class: "nbg-swap" });
    swap.append(svg("title"), svg("tspan"));
    group.append(cost, problem, swap);
    // The gutter is a button of its own: beside the node's group, which is one too once the node has run.
    const beside = svg("g", { class: "nbg-node-marks", transform: group.getAttribute("transform") });
    beside.append(gutter);
    group.after(beside);
    drawing.marks.set(path, { gutter, tip, cost, problem, name, group, swap });
  }
}

function showProblem(el, messages) {
  el.style.display = messages.length ? "" : "none";
  const text = messages.join("\n");
  el.firstChild.textContent = text;
  if (messages.length) el.setAttribute("aria-label", `Problem: ${messages.join("; ")}`);
  else el.removeAttribute("aria-label");
}

/** Reflect breakpoints ({before, after}), problems (from problemMarks), per-node costs and swapped code. */
export function paintMarks(drawing, { breakpoints = {}, problems = [], costs = {}, swapped = [] }) {
  if (!drawing.marks) return;
  const swappedIn = new Set(swapped);
  const before = new Set(breakpoints.before || []);
  const after = new Set(breakpoints.after || []);
  const onNode = new Map();
  const onEdge = new Map();
  for (const mark of problems) {
    const into = mark.target === "edge" && drawing.edgeEls.has(mark.key) ? onEdge : onNode;
    const key = into === onEdge ? mark.key : mark.target === "edge" ? mark.node : mark.key;
    if (!into.has(key)) into.set(key, []);
    into.get(key).push(mark.message);
  }
  for (const [path, { gutter, tip, cost, problem, name, group, swap }] of drawing.marks) {
    const isSwapped = swappedIn.has(path);
    group.classList.toggle("nbg-swapped", isSwapped);
    swap.lastChild.textContent = isSwapped ? "\u270E new code" : "";
    swap.firstChild.textContent = isSwapped ? `${name}: new code from a re-run cell, from its next call on in this run` : "";
    const isBefore = before.has(path);
    const isAfter = after.has(path);
    gutter.classList.toggle("nbg-bp-on-before", isBefore);
    gutter.classList.toggle("nbg-bp-on-after", isAfter);
    group.classList.toggle("nbg-has-bp", isBefore || isAfter);
    gutter.setAttribute("aria-pressed", String(isBefore));
    const where = [isBefore && "before", isAfter && "after"].filter(Boolean).join(" and ");
    const label = isBefore ? `Remove the breakpoint before ${name}` : `Add a breakpoint before ${name}`;
    gutter.setAttribute("aria-label", where ? `${label} (breakpoint ${where} it)` : label);
    tip.textContent = `${where ? `Breakpoint ${where} ${name}. ` : ""}Click (or press b) to ${isBefore ? "remove the" : "add a"} breakpoint before it`;
    cost.textContent = costLabel(costs[path]);
    showProblem(problem, onNode.get(path) || []);
  }
  for (const [key, entries] of drawing.edgeEls) {
    const messages = onEdge.get(key) || [];
    for (const entry of entries) {
      if (!entry.problem && messages.length) {
        const edge = entry.edge;
        let at = { x: edge.labelX, y: edge.labelY - 14 };
        if (!Number.isFinite(at.x) || !Number.isFinite(at.y)) at = edge.points[Math.floor(edge.points.length / 2)];
        entry.problem = svg("g", { class: "nbg-problem nbg-problem-edge", role: "img", transform: `translate(${at.x},${at.y})` });
        entry.problem.append(svg("title"), svg("path", { d: "M0,-8 L8,6 L-8,6 z", class: "nbg-problem-sign" }));
        const bang = svg("text", { x: 0, y: 4.5, "text-anchor": "middle", class: "nbg-problem-text" });
        bang.textContent = "!";
        entry.problem.append(bang);
        entry.group.appendChild(entry.problem);
      }
      if (entry.problem) showProblem(entry.problem, messages);
    }
  }
}
