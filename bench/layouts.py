"""dagre (the view's layout) against ELK's layered algorithm, on the project's own graphs, in Chromium.

Both lay out the same boxes: node sizes and edge-label sizes as the view measures them (the
view's ``layoutGraph`` from the committed bundle gives them; ELK gets the same numbers). ELK is
``elkjs`` (``js/node_modules``, a dev dependency: it is measured, not shipped), run in the page
with the layered algorithm, top to bottom, the view's spacings, labels centred on their edges,
self-loops as ELK draws them; once with orthogonal routing, once with splines. Sub-graph frames
stay closed (ELK would lay out an open one as a compound node; dagre's view lays it out inside).

The graphs: every notebook's (``tests/e2e/drawings.py`` reads them from the cells), the hard
ones of the browser tests (self-loops, two loops on one node, long conditions), and the
generated 40- and 200-node graphs with branches and back edges (``js/test/graphs.js``).

Measured on each drawing, the same way for both (edges as the polylines through their points;
the view draws dagre's as smooth curves through them):

- crossings: pairs of edge segments that cross (ends shared at a node do not count);
- bends: points along an edge where it turns by more than 10 degrees;
- length: the edges' total length, in px;
- faults: an edge end off its node's border by more than 3 px, a label over a node or
  another label (the checks of the browser tests, ``js/test/geometry.js``);
- time: the median time to lay the graph out, in ms (ELK's promise awaited);
- bundle: the minified size of the layout library, as esbuild bundles it.

What it showed (bench/layouts.md): on the notebooks' graphs neither layout crosses an edge,
and dagre draws them with fewer bends and shorter edges; on the 200-node graph dagre crosses
fewer edges (33 against 56), with a third fewer bends and less length; ELK crosses two fewer
on the 40-node graph and one fewer on the hard ones. dagre lays out 5 to 15 times faster and
is 47 KB of the bundle against ELK's 1,459 KB. So the view keeps dagre, with its own
self-loops, label boxes and ordering step.

Run: python bench/layouts.py [--repeat N] [--out bench/layouts.md]
"""

from __future__ import annotations

import argparse
import functools
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "e2e"))
from chromium_page import chromium_page  # noqa: E402  (beside this file)
from drawings import hard_dags, notebook_dags  # noqa: E402

LAYOUTS = ("dagre (the view)", "ELK orthogonal", "ELK splines")

PAGE = """<!doctype html>
<html><head><meta charset="utf-8"><link rel="stylesheet" href="/nbgraph/static/widget.css">
<script src="/js/node_modules/elkjs/lib/elk.bundled.js"></script>
</head><body style="font-family: system-ui, sans-serif">
<script type="module">
import { layoutGraph, textMeasure } from "/nbgraph/static/widget.js";
import { geometryProblems, laidDrawing } from "/js/test/geometry.js";
import { bigGraph } from "/js/test/graphs.js";

const elk = new ELK();
const measure = textMeasure();
window.generated = { "40-node random graph": bigGraph(40, 5), "200-node random graph": bigGraph(200) };

// The view's layout, as the drawing: node boxes, edges' polylines, label boxes.
function dagreDrawing(dag) {
  const laid = layoutGraph(dag, new Set(), { measure });
  const drawing = laidDrawing(laid, 0);
  const lines = laid.edges.map((e) => e.points);
  return { drawing, lines, laid };
}

// ELK on the same boxes: the sizes of the view's nodes and labels.
async function elkDrawing(dag, laid, routing) {
  const graph = {
    id: "root",
    layoutOptions: {
      "elk.algorithm": "layered", "elk.direction": "DOWN", "elk.edgeRouting": routing,
      "elk.spacing.nodeNode": "36", "elk.layered.spacing.nodeNodeBetweenLayers": "48", "elk.spacing.edgeEdge": "16",
      "elk.spacing.edgeNode": "16", "elk.edgeLabels.inline": "false", "elk.padding": "[top=12,left=12,bottom=12,right=12]",
    },
    children: laid.nodes.map((n) => ({ id: n.id, width: n.width, height: n.height })),
    edges: laid.edges.map((e, i) => ({
      id: `e${i}`, sources: [e.from], targets: [e.to],
      labels: e.labelBox ? [{ id: `l${i}`, text: e.label, width: e.labelBox.width, height: e.labelBox.height,
        layoutOptions: { "elk.edgeLabels.placement": "CENTER" } }] : [],
    })),
  };
  const out = await elk.layout(graph);
  const drawing = { nodes: [], edges: [], labels: [] };
  for (const n of out.children) drawing.nodes.push({ path: n.id, box: { x: n.x, y: n.y, width: n.width, height: n.height } });
  const lines = [];
  out.edges.forEach((e, i) => {
    const points = (e.sections || []).flatMap((s) => [s.startPoint, ...(s.bendPoints || []), s.endPoint]);
    if (!points.length) return;
    lines.push(points);
    const key = laid.edges[i].key;
    drawing.edges.push({ key, from: e.sources[0], to: e.targets[0], start: points[0], end: points[points.length - 1] });
    for (const l of e.labels || []) drawing.labels.push({ key, from: e.sources[0], box: { x: l.x, y: l.y, width: l.width, height: l.height } });
  });
  return { drawing, lines };
}

const cross = (p, q, r, s) => {
  const d = (a, b, c) => (b.x - a.x) * (c.y - a.y) - (b.y - a.y) * (c.x - a.x);
  return d(p, q, r) * d(p, q, s) < 0 && d(r, s, p) * d(r, s, q) < 0;
};

function metrics(lines, drawing) {
  const segments = lines.map((points) => points.slice(1).map((p, i) => [points[i], p]));
  let crossings = 0;
  for (let a = 0; a < segments.length; a++) {
    for (let b = a + 1; b < segments.length; b++) {
      for (const [p, q] of segments[a]) for (const [r, s] of segments[b]) if (cross(p, q, r, s)) crossings++;
    }
  }
  let bends = 0;
  let length = 0;
  for (const points of lines) {
    for (let i = 1; i < points.length; i++) length += Math.hypot(points[i].x - points[i - 1].x, points[i].y - points[i - 1].y);
    for (let i = 1; i + 1 < points.length; i++) {
      const a = Math.atan2(points[i].y - points[i - 1].y, points[i].x - points[i - 1].x);
      const b = Math.atan2(points[i + 1].y - points[i].y, points[i + 1].x - points[i].x);
      const turn = Math.abs(((b - a + 3 * Math.PI) % (2 * Math.PI)) - Math.PI);
      if (turn > Math.PI / 18) bends++;
    }
  }
  return { crossings, bends, length: Math.round(length), faults: geometryProblems(drawing).length };
}

async function timed(run, repeat) {
  for (let i = 0; i < 2; i++) await run();
  const times = [];
  for (let i = 0; i < repeat; i++) {
    const t = performance.now();
    await run();
    times.push(performance.now() - t);
  }
  times.sort((a, b) => a - b);
  return times[Math.floor(times.length / 2)];
}

window.compare = async (dag, repeat) => {
  const { drawing, lines, laid } = dagreDrawing(dag);
  const results = { "dagre (the view)": { ...metrics(lines, drawing), time: await timed(() => layoutGraph(dag, new Set(), { measure }), repeat) } };
  for (const [name, routing] of [["ELK orthogonal", "ORTHOGONAL"], ["ELK splines", "SPLINES"]]) {
    const out = await elkDrawing(dag, laid, routing);
    results[name] = { ...metrics(out.lines, out.drawing), time: await timed(() => elkDrawing(dag, laid, routing), repeat) };
  }
  return results;
};
window.ready = true;
</script></body></html>
"""


def bundled_kb(module: str) -> float:
    """The minified size of ``module`` (from js/node_modules) as esbuild bundles it, in KB."""
    esbuild = ROOT / "js" / "node_modules" / ".bin" / "esbuild"
    out = subprocess.run(
        [str(esbuild), "--bundle", "--minify", "--format=esm", "--log-level=error"],
        input=f'import layout from "{module}"; export default layout;',
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT / "js",
    )
    return len(out.stdout.encode()) / 1024


def table(rows: list[tuple[str, dict]], bundles: dict[str, float]) -> str:
    lines = [
        "| graphs | layout | crossings | bends | length (px) | faults | time (ms, median) |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    for group, results in rows:
        for layout in LAYOUTS:
            r = results[layout]
            lines.append(
                f"| {group} | {layout} | {r['crossings']} | {r['bends']} | {r['length']:,} | {r['faults']} | {r['time']:.1f} |"
            )
    lines += ["", "| layout library | minified, bundled |", "|---|---:|"]
    lines += [f"| {name} | {size:,.0f} KB |" for name, size in bundles.items()]
    return "\n".join(lines)


def summed(results: list[dict]) -> dict:
    out = {}
    for layout in LAYOUTS:
        values = [r[layout] for r in results]
        out[layout] = {key: sum(v[key] for v in values) for key in ("crossings", "bends", "length", "faults", "time")}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=9)
    parser.add_argument("--out", type=Path, help="also write the tables to this Markdown file")
    args = parser.parse_args()

    if not (ROOT / "js" / "node_modules" / "elkjs").exists():
        raise SystemExit("js/node_modules/elkjs is missing: run `cd js && npm ci` first")
    with chromium_page(PAGE, "layouts.html") as (browser, page):
        run = functools.partial(page.evaluate, "([dag, repeat]) => window.compare(dag, repeat)")
        notebooks = [(name, run([dag, args.repeat])) for name, dag in notebook_dags()]
        hard = [(name, run([dag, args.repeat])) for name, dag, _ in hard_dags()]
        generated = [
            (
                name,
                page.evaluate(
                    "([name, repeat]) => window.compare(window.generated[name], repeat)", [name, args.repeat]
                ),
            )
            for name in page.evaluate("() => Object.keys(window.generated)")
        ]
        version = browser.version
    rows = [
        (f"the notebooks' {len(notebooks)} graphs (sums)", summed([r for _, r in notebooks])),
        (f"the {len(hard)} hard graphs (sums)", summed([r for _, r in hard])),
        *generated,
    ]
    bundles = {
        "@dagrejs/dagre (the view's)": bundled_kb("@dagrejs/dagre"),
        "elkjs (elk.bundled.js)": bundled_kb("elkjs/lib/elk.bundled.js"),
    }
    text = table(rows, bundles)
    detail = table([*notebooks, *hard], {})
    detail = detail[: detail.index("\n\n| layout library")]
    report = f"Chromium {version}, {args.repeat} timed runs each.\n\n{text}\n\nEach graph:\n\n{detail}\n"
    print(report)
    if args.out:
        args.out.write_text(
            f"# dagre and ELK on nbgraph's graphs\n\nMade by `python bench/layouts.py --out {args.out}`. {report}",
            encoding="utf-8",
        )


if __name__ == "__main__":
    main()
