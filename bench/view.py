"""How long the view takes to lay out and draw a graph, in a real browser, and how large it is.

The committed bundle (``nbgraph/static/widget.js``) is loaded in Debian's Chromium
through Playwright on a static page. The large graphs are the generated ones of the JS
tests (``js/test/graphs.js``): 200 nodes, each following one of the four before it, a
third branching forward under a labelled condition, every tenth looping back (so the
drawing has branches, cycles and edge labels), and a 40-node chain. Timed, alternating,
in the same page:

- ``layoutGraph``: the view's layout (sizes from measured text, dagre with the
  view's own ordering step, edge routes and label positions, self-loops);
- dagre alone: ``dagre.layout`` on the same nodes, edges and label sizes with its
  own ordering (``js/node_modules``, so after ``cd js && npm ci``);
- the whole first render: the widget's ``render`` with a model holding the graph
  (layout, SVG, the fitted viewport), until it returns.

Then the figures, each beside its target:

- the layout of the 200-node graph (``layoutGraph``), target <= 200 ms;
- the first drawing of notebook 01's graph (its first ``%%graph`` cell, read as the
  browser tests read it): from the output's arrival (the bundle fetched and evaluated
  afresh, as a new output does) to the frame after the drawing is painted, target <= 300 ms;
- the bundle's size now and before the batch view shared the graph view's bundle
  (the parent of the commit that removed ``nbgraph/static/batch.js``, else ``HEAD``).

Run: python bench/view.py [--nodes N] [--repeat N]
"""

from __future__ import annotations

import argparse
import functools
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "e2e"))
from chromium_page import chromium_page  # noqa: E402  (beside this file)
from drawings import notebook_dags  # noqa: E402

STATIC = ROOT / "nbgraph" / "static"
DAGRE = ROOT / "js" / "node_modules" / "@dagrejs" / "dagre" / "dist" / "dagre.min.js"
PAGE = """<!doctype html>
<html><head><meta charset="utf-8"><link rel="stylesheet" href="/nbgraph/static/widget.css">
<script src="/js/node_modules/@dagrejs/dagre/dist/dagre.min.js" onerror="window.noDagre = true"></script>
</head><body style="width: 1000px; font-family: system-ui, sans-serif">
<div id="out"></div>
<script type="module">
import widget, { layoutGraph, textMeasure } from "/nbgraph/static/widget.js";
import { bigGraph, chainGraph } from "/js/test/graphs.js";

// dagre alone, with the sizes the view gives it (so the same problem).
function dagreAlone(dag, measure) {
  const g = new dagre.graphlib.Graph({ multigraph: true });
  g.setGraph({ rankdir: "TB", nodesep: 36, ranksep: 48, edgesep: 16, marginx: 12, marginy: 12 });
  g.setDefaultEdgeLabel(() => ({}));
  for (const node of dag.nodes) g.setNode(node.id, { width: Math.ceil(measure(node.id, "node")) + 28, height: 36 });
  dag.edges.forEach((e, i) => g.setEdge(e.from, e.to, e.label ? { width: Math.ceil(measure(e.label, "edge")) + 10, height: 16, labelpos: "c" } : {}, `e${i}`));
  dagre.layout(g);
  return g.graph();
}

function fakeModel(dag) {
  const traits = { kind: "graph", dag, status: {}, visits: {}, fired: {}, running: [], branches: {}, reruns: {}, pending: [], text: "", log: [] };
  return { get: (k) => traits[k], on() {}, off() {}, send() {} };
}

// A new output: the bundle fetched and evaluated afresh, the view rendered, until the frame
// after it is painted (the second animation frame: the first runs before that paint).
window.firstDrawing = async (dag, repeat) => {
  const times = [];
  for (let i = 0; i < repeat + 2; i++) {
    const t = performance.now();
    const fresh = (await import(`/nbgraph/static/widget.js?fresh=${i}`)).default;
    const el = document.createElement("div");
    document.getElementById("out").replaceChildren(el);
    const cleanup = fresh.render({ model: fakeModel(dag), el });
    await new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done)));
    if (i >= 2) times.push(performance.now() - t);  // (the first two warm the browser up)
    cleanup();
  }
  return times;
};

window.measureAll = (nodes, repeat) => {
  const dag = nodes === 40 ? chainGraph(40) : bigGraph(nodes);
  const measure = textMeasure();
  const runs = {
    layoutGraph: () => layoutGraph(dag, new Set(), { measure }),
    render: () => {
      const el = document.createElement("div");
      document.getElementById("out").replaceChildren(el);
      const cleanup = widget.render({ model: fakeModel(dag), el });
      const size = el.querySelector(".nbg-svg").getAttribute("height");
      cleanup();
      return size;
    },
  };
  if (!window.noDagre) runs["dagre alone"] = () => dagreAlone(dag, measure);
  const times = Object.fromEntries(Object.keys(runs).map((k) => [k, []]));
  for (let i = 0; i < 3; i++) for (const run of Object.values(runs)) run(); // warm up
  for (let i = 0; i < repeat; i++) {
    for (const [name, run] of Object.entries(runs)) {
      const t = performance.now();
      run();
      times[name].push(performance.now() - t);
    }
  }
  const laid = layoutGraph(dag, new Set(), { measure });
  return { times, nodes: laid.nodes.length, edges: laid.edges.length, width: laid.width, height: laid.height };
};
window.ready = true;
</script></body></html>
"""


def _before() -> tuple[str, int]:
    """The revision before the shared bundle, and its bundles' size in bytes (widget.js and batch.js)."""
    git = functools.partial(subprocess.run, capture_output=True, text=True, cwd=ROOT)
    removed = git(
        ["git", "log", "--diff-filter=D", "--format=%H", "-1", "--", "nbgraph/static/batch.js"]
    ).stdout.strip()
    revision = f"{removed}^" if removed else "HEAD"
    size = 0
    for name in ("widget.js", "batch.js"):
        shown = subprocess.run(["git", "show", f"{revision}:nbgraph/static/{name}"], capture_output=True, cwd=ROOT)
        size += len(shown.stdout)
    return revision, size


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, nargs="*", default=[40, 200])
    parser.add_argument("--repeat", type=int, default=15)
    args = parser.parse_args()

    first = next(dag for where, dag in notebook_dags() if where.startswith("01"))
    with chromium_page(PAGE, "bench.html") as (browser, page):
        print(f"Chromium {browser.version}")
        if not DAGRE.exists():
            print("(no js/node_modules: dagre alone is not measured; cd js && npm ci)")
        layout_200 = None
        for nodes in args.nodes:
            result = page.evaluate("([n, r]) => window.measureAll(n, r)", [nodes, args.repeat])
            label = "40-node chain" if nodes == 40 else f"{nodes}-node graph, branches and cycles"
            print(
                f"\n{label}: {result['edges']} edges, drawn {result['width']:.0f} x {result['height']:.0f} px; "
                f"ms over {args.repeat} runs (median, min-max)"
            )
            for name, times in result["times"].items():
                print(f"  {name:<12} {statistics.median(times):7.1f}   {min(times):6.1f}-{max(times):.1f}")
            if nodes == 200:
                layout_200 = statistics.median(result["times"]["layoutGraph"])
        drawing = page.evaluate("([dag, r]) => window.firstDrawing(dag, r)", [first, args.repeat])
    revision, before = _before()
    after = (STATIC / "widget.js").stat().st_size
    print(f"\nFigures ({args.repeat} runs, medians):")
    if layout_200 is not None:
        print(f"  layout of the 200-node graph          {layout_200:7.1f} ms   target <= 200 ms")
    print(
        f"  first drawing of notebook 01's graph  {statistics.median(drawing):7.1f} ms   target <= 300 ms "
        f"({first['name']}: {len(first['nodes'])} nodes, {len(first['edges'])} edges)"
    )
    print(f"  bundle now (widget.js, both views)    {after / 1024:7.1f} KB")
    print(f"  bundles before ({revision}: widget.js + batch.js) {before / 1024:.1f} KB")


if __name__ == "__main__":
    main()
