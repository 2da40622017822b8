"""The drawing's geometry in Chromium: every notebook's graphs and a set of hard ones, drawn by the
committed bundle on a plain page, measured from the SVG the browser laid out.

Every edge starts on its source node's border and ends on its target's (within a few pixels),
no edge label covers a node or another label, a self-loop leaves and re-enters its node, and
a long condition is drawn shortened with its whole text as the tooltip; in the batch view a
loop carries its count and its width by count, and in the compared drawing which version took it.
"""

from __future__ import annotations

import functools
import http.server
import threading
from pathlib import Path

import pytest
from drawings import ROOT, hard_dags, notebook_dags

PAGE = """<!doctype html>
<html><head><meta charset="utf-8">
<link rel="stylesheet" href="/nbgraph/static/widget.css"><link rel="stylesheet" href="/nbgraph/static/batch.css">
</head><body style="width: 1300px; font-family: system-ui, sans-serif"><div id="out"></div>
<script type="module">
import view from "/nbgraph/static/widget.js";
import { drawnDrawing, geometryProblems } from "/js/test/geometry.js";
import { bigGraph, chainGraph } from "/js/test/graphs.js";

const GRAPH = { status: {}, visits: {}, fired: {}, running: [], branches: {}, reruns: {}, pending: [], text: "", log: [] };
const out = document.getElementById("out");
let cleanup = null;
const frame = () => new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done)));

// The view as anywidget runs it, its model holding `traits` (a kernel sends nothing here).
async function show(traits) {
  if (cleanup) cleanup();
  const el = document.createElement("div");
  out.replaceChildren(el);
  const model = { get: (k) => traits[k], on() {}, off() {}, send() {} };
  cleanup = view.render({ model, el });
  await frame();
  return el;
}

async function measured(el) {
  await frame();
  const drawing = drawnDrawing(el.querySelector(".nbg-svg"));
  const labels = [...el.querySelectorAll(".nbg-edge-text")].map((box) => ({
    key: box.closest(".nbg-edge").dataset.edge,
    lines: [...box.querySelectorAll("tspan")].map((t) => t.textContent),
    title: box.querySelector(":scope > title").textContent,
  }));
  return { problems: geometryProblems(drawing), nodes: drawing.nodes.length, edges: drawing.edges.map((e) => e.key), labels };
}

window.generated = { "200 nodes with branches and back edges": bigGraph(200), "a 40-node chain": chainGraph(40) };

// The graph view of `dag`, with the frames at `open` opened one by one by a click, as a reader would.
window.draw = async (dag, open) => {
  const el = await show({ kind: "graph", dag, ...GRAPH });
  for (const path of open) {
    el.querySelector(`[data-node="${CSS.escape(path)}"] > .nbg-frame-handle`).dispatchEvent(new MouseEvent("click", { bubbles: true }));
  }
  return measured(el);
};

// The batch view of `dag`: `traits` are its counts (batch) or the comparison (compare).
window.drawBatch = async (dag, traits) => {
  const el = await show({ kind: "batch", dag, counts: {}, edges: {}, compared: {}, stoppable: false, ...traits });
  const result = await measured(el);
  result.loops = [...el.querySelectorAll(".nbg-hist-edge")].filter((g) => {
    const [a, b] = g.dataset.edge.split("\\u2192");
    return a === b;
  }).map((g) => {
    const badge = g.querySelector(".nbg-count");
    const box = badge.getBoundingClientRect();
    const node = el.querySelector(`[data-node="${CSS.escape(g.dataset.edge.split("\\u2192")[0])}"] .nbg-node-box`).getBoundingClientRect();
    const label = g.querySelector(".nbg-edge-label")?.getBoundingClientRect();
    const apart = (a, b) => !b || a.right <= b.left || b.right <= a.left || a.bottom <= b.top || b.bottom <= a.top;
    return {
      key: g.dataset.edge, count: g.dataset.count, side: g.dataset.side, text: g.querySelector(".nbg-count-text").textContent,
      width: getComputedStyle(g.querySelector("path:not(.nbg-hit)")).strokeWidth, shown: badge.style.display !== "none",
      clearOfNode: apart(box, node), clearOfLabel: apart(box, label),
    };
  });
  return result;
};
window.ready = true;
</script></body></html>
"""


class _Site(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args) -> None:
        pass

    def do_GET(self) -> None:
        if self.path == "/favicon.ico":  # (asked for by every page)
            self.send_response(204)
            self.end_headers()
            return
        if self.path != "/drawing.html":
            super().do_GET()
            return
        body = PAGE.encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture(scope="module")
def site(browser):
    """A page that draws with the committed bundle, served from the repository on loopback."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Site, directory=str(ROOT)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.on("console", lambda message: message.type == "error" and errors.append(message.text))
    page.goto(f"http://127.0.0.1:{server.server_port}/drawing.html")
    page.wait_for_function("() => window.ready === true")
    yield page, errors
    page.close()
    server.shutdown()
    server.server_close()


def _frames(dag: dict, prefix: str = "") -> list[str]:
    """The paths of every sub-graph frame in ``dag``, outer ones first."""
    paths = []
    for node in dag["nodes"]:
        if node.get("graph"):
            paths.append(prefix + node["id"])
            paths += _frames(node["graph"], f"{prefix}{node['id']}/")
    return paths


def _labels(dag: dict, prefix: str = "") -> dict[str, set[str]]:
    """Edge key -> the labels drawn on it (each's whole text), every frame's inside included."""
    labels: dict[str, set[str]] = {}
    for edge in dag["edges"]:
        text = (
            (edge.get("label") or "each")
            if edge.get("each")
            else ""
            if edge.get("unconditional")
            else edge.get("label") or ""
        )
        if text:
            labels.setdefault(f"{prefix}{edge['from']}\u2192{prefix}{edge['to']}", set()).add(text)
    for node in dag["nodes"]:
        if node.get("graph"):
            for key, texts in _labels(node["graph"], f"{prefix}{node['id']}/").items():
                labels.setdefault(key, set()).update(texts)
    return labels


def _check(name: str, dag: dict, drawn: dict, *, frames_open: bool) -> None:
    assert drawn["problems"] == [], f"{name}: {drawn['problems']}"
    loops = [e for e in dag["edges"] if e["from"] == e["to"]]
    assert sum(1 for key in drawn["edges"] if key.split("\u2192")[0] == key.split("\u2192")[1]) >= len(loops), name
    want = _labels(dag) if frames_open else {k: v for k, v in _labels(dag).items() if "/" not in k}
    for label in drawn["labels"]:
        assert label["title"] in want[label["key"]], f"{name}: {label}"
        assert 1 <= len(label["lines"]) <= 2 and all(len(line) <= 32 for line in label["lines"]), f"{name}: {label}"
        if len(label["title"]) <= 32:
            assert label["lines"] == [label["title"]], f"{name}: a short label is drawn as it is"
        elif "".join("".join(label["lines"]).split()) != "".join(label["title"].split()):
            assert label["lines"][-1].endswith("\u2026"), f"{name}: a label drawn in part says so"
    assert sorted(label["key"] for label in drawn["labels"]) == sorted(k for k, texts in want.items() for _ in texts), (
        name
    )


def test_every_notebook_drawing_and_the_hard_ones_keep_edges_on_their_nodes_and_labels_clear(site):
    page, errors = site
    graphs = [(name, dag, []) for name, dag in notebook_dags()] + hard_dags()
    assert len(graphs) > len(hard_dags()), "the notebooks' graphs were read"
    loops = 0
    for name, dag, open_frames in graphs:
        for frames in ([], open_frames or _frames(dag)) if _frames(dag) else ([],):
            drawn = page.evaluate("([dag, open]) => window.draw(dag, open)", [dag, frames])
            _check(f"{name}, frames open: {frames}", dag, drawn, frames_open=bool(frames))
        loops += sum(1 for e in dag["edges"] if e["from"] == e["to"])
    assert loops >= 4, "self-loops were drawn and checked"
    for name in page.evaluate("() => Object.keys(window.generated)"):
        drawn = page.evaluate("name => window.draw(window.generated[name], [])", name)
        assert drawn["problems"] == [], f"{name}: {drawn['problems']}"
        assert len(drawn["labels"]) >= 9
    assert errors == []


def test_a_loop_in_the_batch_view_has_its_count_and_width_and_in_a_comparison_its_side(site):
    page, errors = site
    name, agent, _ = hard_dags()[0]
    edges = {
        "__start__\u2192input_handler": 4,
        "input_handler\u2192agent": 4,
        "agent\u2192agent": 3,
        "agent\u2192wrapper_nudge": 1,
        "wrapper_nudge\u2192agent": 1,
        "agent\u2192__end__": 4,
    }
    counts = {"total": 4, "ended": 4, "done": 4, "finished": True}
    drawn = page.evaluate(
        "([dag, traits]) => window.drawBatch(dag, traits)", [agent, {"mode": "batch", "edges": edges, "counts": counts}]
    )
    assert drawn["problems"] == []
    assert drawn["loops"] == [
        {
            "key": "agent\u2192agent",
            "count": "3",
            "side": None,
            "text": "3",
            "width": "8.1px",
            "shown": True,
            "clearOfNode": True,
            "clearOfLabel": True,
        }
    ]
    compared = {
        "edges": {"agent\u2192agent": {"a": 2, "b": 3}, "input_handler\u2192agent": {"a": 4, "b": 4}},
        "rows": [],
        "total": 4,
    }
    drawn = page.evaluate(
        "([dag, traits]) => window.drawBatch(dag, traits)", [agent, {"mode": "compare", "compared": compared}]
    )
    assert drawn["problems"] == []
    assert [(loop["side"], loop["text"], loop["width"], loop["clearOfNode"]) for loop in drawn["loops"]] == [
        ("both", "2\u21923", "8.1px", True)
    ]
    assert errors == []


def test_the_notebooks_are_read_as_they_are_now():
    import json

    found = notebook_dags()
    with_cells = {
        path.stem
        for path in (ROOT / "notebooks").glob("*.ipynb")
        if any(
            cell["cell_type"] == "code" and "".join(cell["source"]).lstrip().startswith("%%graph")
            for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]
        )
    }
    assert with_cells, "the notebooks define graphs in %%graph cells"
    assert with_cells <= {where.split(":")[0] for where, _ in found}
    assert all(dag["nodes"] and dag["edges"] for _, dag in found)


def test_graphs_are_read_from_a_notebook_s_cells(tmp_path: Path):
    import json

    cells = [
        "%%node agent --llm --tools look_up\nYou answer.",
        "%%graph agent_graph\nSTART -> agent\nagent -> agent if state.more\nagent -> END",
        "%%graph broken\nSTART -> -> END",
        'g = Graph("outer")\ng.add_node("plan", plan)\ng.add_node("sub", agent_graph)\n'
        'g.add_edge(START, "plan")\ng.add_edge("plan", "sub", when=lambda s: s.go)\ng.add_edge("sub", END)\n'
        'g.add_node("", plan)  # refused: drawn without it',
    ]
    notebook = {
        "cells": [{"cell_type": "code", "source": source} for source in cells],
        "metadata": {},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    (tmp_path / "x.ipynb").write_text(json.dumps(notebook))
    found = dict(notebook_dags(tmp_path))
    assert sorted(found) == ["x: %%graph agent_graph", "x: Graph('outer')"]
    agent = next(n for n in found["x: %%graph agent_graph"]["nodes"] if n["id"] == "agent")
    assert (agent["kind"], agent["tools"]) == ("llm", ["look_up"])
    outer = found["x: Graph('outer')"]
    assert [(e["from"], e["to"], e["label"]) for e in outer["edges"]] == [
        ("__start__", "plan", None),
        ("plan", "sub", "condition"),
        ("sub", "__end__", None),
    ]
    sub = next(n for n in outer["nodes"] if n["id"] == "sub")
    assert [(e["from"], e["to"]) for e in sub["graph"]["edges"] if e["from"] == e["to"]] == [("agent", "agent")]
