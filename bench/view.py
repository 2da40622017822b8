"""How long the live view takes to lay out and draw a large graph, in a real browser.

The committed bundle (``nbgraph/static/widget.js``) is loaded in Debian's Chromium
through Playwright on a static page. The graph is the generated one of the JS tests
(``js/test/graphs.js``): 200 nodes, each following one of the four before it, a third
branching forward under a labelled condition, every tenth looping back (so the
drawing has branches, cycles and edge labels). Timed, alternating, in the same page:

- ``layoutGraph``: the view's layout (sizes from measured text, dagre with the
  view's own ordering step, edge routes and label positions);
- dagre alone: ``dagre.layout`` on the same nodes, edges and label sizes with its
  own ordering (``js/node_modules``, so after ``cd js && npm ci``);
- the whole first render: the widget's ``render`` with a model holding the graph
  (layout, SVG, the fitted viewport), until it returns.

Target: layoutGraph <= 200 ms for 200 nodes.

Run: python bench/view.py [--nodes N] [--repeat N]
"""

from __future__ import annotations

import argparse
import functools
import http.server
import shutil
import statistics
import threading
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DAGRE = ROOT / "js" / "node_modules" / "@dagrejs" / "dagre" / "dist" / "dagre.min.js"
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-quic",
]

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
  const traits = { dag, status: {}, visits: {}, fired: {}, running: [], branches: {}, reruns: {}, pending: [], text: "", log: [] };
  return { get: (k) => traits[k], on() {}, off() {}, send() {} };
}

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


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args) -> None:  # the bench prints its own lines
        pass

    def do_GET(self) -> None:
        if self.path == "/bench.html":
            body = PAGE.encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        super().do_GET()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, nargs="*", default=[40, 200])
    parser.add_argument("--repeat", type=int, default=15)
    args = parser.parse_args()

    from playwright.sync_api import sync_playwright

    handler = functools.partial(_Quiet, directory=str(ROOT))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS)
            page = browser.new_page()
            page.goto(f"http://127.0.0.1:{server.server_port}/bench.html")
            page.wait_for_function("() => window.ready === true")
            version = browser.version
            print(f"Chromium {version}; bundle {ROOT / 'nbgraph/static/widget.js'} ({(ROOT / 'nbgraph/static/widget.js').stat().st_size / 1024:.0f} KB)")
            if not DAGRE.exists():
                print("(no js/node_modules: dagre alone is not measured; cd js && npm ci)")
            for nodes in args.nodes:
                result = page.evaluate("([n, r]) => window.measureAll(n, r)", [nodes, args.repeat])
                label = "40-node chain" if nodes == 40 else f"{nodes}-node graph, branches and cycles"
                print(f"\n{label}: {result['edges']} edges, drawn {result['width']:.0f} x {result['height']:.0f} px; "
                      f"ms over {args.repeat} runs (median, min-max)")
                for name, times in result["times"].items():
                    print(f"  {name:<12} {statistics.median(times):7.1f}   {min(times):6.1f}-{max(times):.1f}")
            browser.close()
    finally:
        server.shutdown()


if __name__ == "__main__":
    main()
