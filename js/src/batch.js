// The batch view: the graph drawn as the graph view draws it, with each edge's count of runs
// (its label, its width) and the batch's counts; a click on an edge (Enter or Space when it
// has the focus) asks the kernel which inputs took it ({type: "inputs", edge}). In compare
// mode the edges say which version took them, and a table lists the inputs that changed.
import { h, svg, textMeasure } from "./dom.js";
import { drawGraph, fitLabels } from "./draw.js";
import { edgeLabel, graphOf, layoutGraph } from "./layout.js";
import { busiest, compareEdge, countPlace, countStats, edgeTitle, edgeWidth, formatCost, pathText } from "./histogram.js";
import { receiver, sender } from "./protocol.js";

let counter = 0;

/** @param {{model: any, el: HTMLElement}} ctx */
export function renderBatch({ model, el }) {
  const uid = `nbgb${++counter}`;
  const root = h("div", "nbg-root nbg-batch");
  const header = h("div", "nbg-header");
  const title = h("span", "nbg-title");
  const status = h("div", "nbg-status nbg-batch-counts");
  status.setAttribute("role", "status");
  const stop = h("button", "nbg-button nbg-stop nbg-batch-stop", "Stop");
  stop.title = "Start no more runs and stop those under way (aborted, resumable: the same batch again goes on)";
  const send = sender("batch", model);
  stop.addEventListener("click", () => {
    stop.disabled = true;
    send({ type: "stop" });
  });
  header.append(title, status, stop);
  const body = h("div", "nbg-body");
  const canvas = h("div", "nbg-canvas");
  const side = h("div", "nbg-batch-side");
  const inputs = h("div", "nbg-batch-inputs");
  inputs.setAttribute("aria-live", "polite");
  inputs.appendChild(h("p", "nbg-batch-hint", "Click an edge (or Tab to it, Enter) to list the inputs that took it."));
  const error = h("div", "nbg-error");
  error.hidden = true;
  const table = h("div", "nbg-compare-rows");
  side.append(inputs, error, table);
  body.append(canvas, side);
  root.append(header, body);
  el.appendChild(root);

  let drawing = null;
  let overlays = new Map(); // edge key -> [{group, path, hit, badge, text, bg}]
  let selected = null;
  const measure = textMeasure();

  function select(key) {
    selected = key;
    for (const [k, entries] of overlays) for (const { group } of entries) group.classList.toggle("nbg-selected", k === key);
    inputs.replaceChildren(h("p", "nbg-batch-hint", `${edgeTitle(key)}: asking the kernel\u2026`));
    send({ type: "inputs", edge: key });
  }

  function decorate(laid) {
    overlays = new Map();
    // Arrowheads keep their size on wide edges.
    for (const marker of drawing.root.querySelectorAll("marker")) {
      marker.setAttribute("markerUnits", "userSpaceOnUse");
      marker.setAttribute("markerWidth", 10);
      marker.setAttribute("markerHeight", 10);
    }
    for (const edge of laid.edges) {
      const entries = drawing.edgeEls.get(edge.key) || [];
      const entry = entries.find((e) => e.edge === edge);
      if (!entry) continue;
      const { group, path } = entry;
      group.classList.add("nbg-hist-edge");
      if (edge.old) group.classList.add("nbg-old-edge");
      group.setAttribute("tabindex", "0");
      group.setAttribute("role", "button");
      // A wide, invisible twin of the line takes the clicks a thin line would miss.
      const hit = svg("path", { d: path.getAttribute("d"), class: "nbg-hit" });
      group.insertBefore(hit, path);
      const at = countPlace(edge, Boolean(edgeLabel(edge)));
      const badge = svg("g", { class: "nbg-count", transform: `translate(${at.x},${at.y})` });
      const bg = svg("rect", { class: "nbg-count-bg", y: -8, height: 16, rx: 8 });
      const text = svg("text", { class: "nbg-count-text", y: 4, "text-anchor": "middle" });
      badge.append(bg, text);
      group.appendChild(badge);
      group.addEventListener("click", (event) => {
        event.stopPropagation();
        select(edge.key);
      });
      group.addEventListener("keydown", (event) => {
        if (event.key === "Enter" || event.key === " ") {
          event.preventDefault();
          select(edge.key);
        }
      });
      if (!overlays.has(edge.key)) overlays.set(edge.key, []);
      overlays.get(edge.key).push({ group, path, hit, badge, text, bg });
    }
  }

  function drawDag() {
    const dag = graphOf(model.get("dag"));
    if (dag) { // (none yet while the kernel has not set it: drawn when it comes)
      title.textContent = `${dag.name || "graph"} \u2014 ${model.get("mode") === "compare" ? "compared" : "batch"}`;
      const laid = layoutGraph(dag, new Set(), { measure });
      drawing = drawGraph(laid, uid);
      drawing.root.setAttribute("aria-label", `graph ${dag.name || ""}: each edge with the number of runs that took it`);
      canvas.replaceChildren(drawing.root);
      decorate(laid);
      requestAnimationFrame(() => drawing && fitLabels(drawing.root));
    }
    paint();
  }

  function label(entry, value, tip) {
    const { text, bg, group } = entry;
    text.textContent = value;
    const width = value.length * 6.6 + 10;
    bg.setAttribute("x", -width / 2);
    bg.setAttribute("width", width);
    entry.badge.style.display = value ? "" : "none";
    group.setAttribute("aria-label", `${tip}; press Enter to list its inputs`);
    let tipEl = group.querySelector(":scope > title");
    if (!tipEl) {
      tipEl = svg("title");
      group.insertBefore(tipEl, group.firstChild);
    }
    tipEl.textContent = tip;
  }

  function paintBatch() {
    const counts = model.get("counts") || {};
    const edges = model.get("edges") || {};
    const max = busiest(edges);
    for (const [key, entries] of overlays) {
      const n = edges[key] || 0;
      for (const entry of entries) {
        entry.group.dataset.count = String(n);
        entry.group.classList.toggle("nbg-fired", n > 0);
        entry.group.classList.toggle("nbg-unfired", Boolean(counts.finished) && n === 0);
        entry.path.style.strokeWidth = `${edgeWidth(n, max)}px`;
        if (entry.path.hasAttribute("marker-end")) entry.path.setAttribute("marker-end", `url(#${n ? "arrow-fired" : "arrow"}-${uid})`);
        label(entry, n ? String(n) : "", `${edgeTitle(key)}: ${n} run${n === 1 ? "" : "s"}`);
      }
    }
    status.replaceChildren();
    const state = counts.finished ? (counts.stopped ? "stopped" : "finished") : "running";
    status.appendChild(h("span", `nbg-pill nbg-state-${state === "finished" ? "done" : state === "stopped" ? "aborted" : "running"}`, state));
    for (const [name, value] of countStats(counts)) {
      const stat = h("span", `nbg-stat nbg-stat-${name.replace("/", "-per-")}`);
      stat.dataset.stat = name;
      stat.append(h("span", "nbg-stat-name", `${name} `), h("b", "", value));
      status.appendChild(stat);
    }
    if (counts.stopped) status.appendChild(h("div", "nbg-reason", `stopped starting runs: ${counts.stopped}`));
    root.dataset.ended = String(counts.ended || 0);
    root.dataset.total = String(counts.total || 0);
    root.dataset.finished = String(Boolean(counts.finished));
    stop.hidden = !model.get("stoppable") || Boolean(counts.finished);
  }

  function paintCompare() {
    const compared = model.get("compared") || {};
    const edges = compared.edges || {};
    const max = Math.max(0, ...Object.values(edges).map((c) => Math.max(c.a || 0, c.b || 0)));
    for (const [key, entries] of overlays) {
      const counts = edges[key] || {};
      const { side, text, title: tip } = compareEdge(counts);
      for (const entry of entries) {
        for (const s of ["a", "b", "both", "none"]) entry.group.classList.toggle(`nbg-cmp-${s}`, s === side);
        entry.group.dataset.side = side;
        entry.path.style.strokeWidth = `${edgeWidth(Math.max(counts.a || 0, counts.b || 0), max)}px`;
        label(entry, text, `${edgeTitle(key)}: ${tip}`);
      }
    }
    const rows = compared.rows || [];
    status.replaceChildren();
    const stats = [["inputs", String(compared.total || 0)], ["changed", String(rows.length)]];
    for (const [name, value] of stats) {
      const stat = h("span", `nbg-stat nbg-stat-${name}`);
      stat.append(h("span", "nbg-stat-name", `${name} `), h("b", "", value));
      status.appendChild(stat);
    }
    const legend = h("span", "nbg-cmp-legend");
    legend.append(h("span", "nbg-cmp-key nbg-cmp-key-a", "\u2212 old only"), h("span", "nbg-cmp-key nbg-cmp-key-b", "+ new only"),
      h("span", "nbg-cmp-key nbg-cmp-key-both", "both (old\u2192new)"));
    status.appendChild(legend);
    table.replaceChildren();
    if (!rows.length) {
      table.appendChild(h("p", "nbg-batch-hint", "No input changed path, outcome or cost."));
      return;
    }
    const grid = h("table", "nbg-compare-table");
    const caption = h("caption", "", `Inputs that changed (${rows.length})`);
    const head = h("tr");
    for (const name of ["input", "changed", "path", "outcome", "cost"]) head.appendChild(h("th", "", name));
    grid.append(caption, head);
    for (const row of rows) {
      const tr = h("tr");
      tr.dataset.input = String(row.id);
      const both = (a, b) => (a === b ? a : `${a} \u2192 ${b}`);
      tr.append(
        h("td", "nbg-cmp-id", String(row.id)),
        h("td", "", row.changed.join(", ")),
        pathCell(row),
        h("td", row.changed.includes("outcome") ? "nbg-cmp-moved" : "", both(row.outcome_a, row.outcome_b)),
        h("td", row.changed.includes("cost") ? "nbg-cmp-moved" : "", both(formatCost(row.cost_a), formatCost(row.cost_b))),
      );
      grid.appendChild(tr);
    }
    table.appendChild(grid);
  }

  /** The path cell: one path, or the old one above the new one. */
  function pathCell(row) {
    const a = pathText(row.path_a);
    const b = pathText(row.path_b);
    if (a === b) return h("td", "", a);
    const td = h("td", "nbg-cmp-moved");
    td.append(h("div", "nbg-cmp-old", `\u2212 ${a}`), h("div", "nbg-cmp-new", `+ ${b}`));
    return td;
  }

  function paint() {
    root.dataset.mode = model.get("mode") || "batch";
    if (model.get("mode") === "compare") paintCompare();
    else paintBatch();
  }

  function listInputs(msg) {
    if (msg.edge !== selected) return; // an answer to an earlier click
    inputs.replaceChildren();
    const list = (heading, ids, count, cls) => {
      const section = h("div", `nbg-input-list ${cls}`);
      section.appendChild(h("p", "nbg-input-heading", heading));
      const ul = h("ul", "nbg-input-ids");
      for (const id of ids) ul.appendChild(h("li", "nbg-input-id", String(id)));
      section.appendChild(ul);
      if (count > ids.length) section.appendChild(h("p", "nbg-batch-hint", `\u2026 and ${count - ids.length} more`));
      inputs.appendChild(section);
    };
    const runs = (n) => `${n} input${n === 1 ? "" : "s"}`;
    if ("ids" in msg) {
      list(`${edgeTitle(msg.edge)}: ${runs(msg.count)}`, msg.ids, msg.count, "");
    } else {
      list(`${edgeTitle(msg.edge)}, old version: ${runs(msg.count_a)}`, msg.a, msg.count_a, "nbg-input-list-a");
      list(`${edgeTitle(msg.edge)}, new version: ${runs(msg.count_b)}`, msg.b, msg.count_b, "nbg-input-list-b");
    }
  }

  const onMessage = receiver("batch", {
    inputs(msg) {
      error.hidden = true;
      listInputs(msg);
    },
    stopped() {
      stop.hidden = true;
    },
    error(msg) {
      error.textContent = msg.message;
      error.hidden = false;
    },
  });

  model.on("change:dag", drawDag);
  model.on("change:counts", paint);
  model.on("change:edges", paint);
  model.on("change:compared", paint);
  model.on("change:stoppable", paint);
  model.on("change:mode", drawDag);
  model.on("msg:custom", onMessage);
  drawDag();
  return () => {
    model.off("change:dag", drawDag);
    model.off("change:counts", paint);
    model.off("change:edges", paint);
    model.off("change:compared", paint);
    model.off("change:stoppable", paint);
    model.off("change:mode", drawDag);
    model.off("msg:custom", onMessage);
  };
}
