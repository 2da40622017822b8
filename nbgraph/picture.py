"""A picture of a graph and of how a run went on it: one SVG, no script, no network.

The live view lays its graph out with dagre in the browser. A saved notebook is also read
where no script runs (GitHub, nbviewer, nbconvert's HTML, a PDF): there each view's output
shows this picture instead. :func:`layout` places a graph's top level in layers, top to
bottom (cycles broken where a walk from START comes back, long edges through bends,
conditions as labels that keep clear of the nodes, crossings reduced by barycentres, each
layer's positions the closest to its neighbours' that keep the gaps); :func:`to_svg` draws
it with a :class:`Frame` on it: the path a run took, the nodes it stopped at, how it ended.

Pure functions over DAG JSON (:func:`nbgraph.export.to_dag`); a sub-graph is drawn as one
node. The SVG has its own background, in light colours, and in dark ones where the reader
prefers them (GitHub's dark theme shows an image on the page's dark background).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal
from xml.sax.saxutils import escape

from .names import END, START

__all__ = ["PALETTES", "Box", "Frame", "Layout", "Route", "Tone", "caption", "layout", "to_svg"]

Tone = Literal["plain", "ok", "warn", "bad"]

_NODE_H = 30
_NODE_PAD = 12  # each side of a node's label
_NODE_MIN_W = 56
_CHAR_W = 7.2  # 12px sans-serif, most characters of a name
_LABEL_CHAR_W = 6.4  # 10.5px monospace
_LABEL_H = 15
_LABEL_CHARS = 32
_NODE_GAP = 28  # between two things in a layer
_LAYER_GAP = 10  # between two layers (labels sit in the layers between nodes)
_MARGIN = 14
_LOOP_W = 26  # room a node's self-loop takes at its right
_HEAD_LINE = 18
_SWEEPS = 8
_SMOOTHING = 12


@dataclass(frozen=True, slots=True)
class Box:
    """A node or an edge label as placed: its centre and size."""

    x: float
    y: float
    w: float
    h: float

    def overlaps(self, other: Box, gap: float = 0.0) -> bool:
        """Whether the two boxes (each grown by ``gap``/2) overlap."""
        return abs(self.x - other.x) * 2 < self.w + other.w + gap and abs(self.y - other.y) * 2 < self.h + other.h + gap


@dataclass(frozen=True, slots=True)
class Route:
    """An edge as drawn: ``points`` from its source to its target (arrow at the last)."""

    source: str
    target: str
    points: tuple[tuple[float, float], ...]
    label: str = ""
    """The label drawn (shortened to fit; empty for none)."""
    label_box: Box | None = None
    edges: tuple[Mapping[str, Any], ...] = ()
    """The DAG's edges this route draws (several between the same two nodes share one)."""
    loop: bool = False


@dataclass(frozen=True, slots=True)
class Layout:
    """Where a graph's nodes and edges go, in a ``width`` × ``height`` drawing."""

    boxes: Mapping[str, Box]
    routes: tuple[Route, ...]
    width: float
    height: float


@dataclass(frozen=True, slots=True)
class Frame:
    """What a picture shows on its graph (all optional: none is the graph alone)."""

    headline: str = ""
    """The first line, after the graph's name: how the run stands (``done after 6 steps``)."""
    note: str = ""
    """A second line: why it ended, what it waits for."""
    tone: Tone = "plain"
    """The headline's colour, and END's once the run has ended there: ok, warn or bad."""
    visits: Mapping[str, int] = field(default_factory=dict)
    """node -> times it ran (marked, counted when more than once)."""
    fired: Mapping[str, int] = field(default_factory=dict)
    """``"source→target"`` -> times the edge was taken (drawn as the path)."""
    other: Mapping[str, int] = field(default_factory=dict)
    """A second path drawn under the first in its own colour (the other run of two, or the
    run a fork came from)."""
    current: frozenset[str] = frozenset()
    """Nodes running or waiting for a person."""
    failed: frozenset[str] = frozenset()
    """Nodes whose last step failed."""
    counted: bool = False
    """Label each taken edge with its count (a batch's runs), its width by it."""
    legend: tuple[tuple[str, str], ...] = ()
    """(``"path"`` or ``"other"``, what it is) pairs for a key under the headline."""


# -- layout --------------------------------------------------------------------------


def _title(node_id: str) -> str:
    return "START" if node_id == START else "END" if node_id == END else node_id


def _short(text: str, chars: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= chars else text[: chars - 1] + "\u2026"


def _edge_text(edge: Mapping[str, Any]) -> str:
    if edge.get("each"):
        return str(edge.get("label") or "each")
    return "" if edge.get("unconditional") else str(edge.get("label") or "")


def _labelled(edges: Sequence[Mapping[str, Any]], note: str, chars: int) -> str:
    """The label of the edges between two nodes (their conditions, shortened to ``chars``),
    then ``note``."""
    label = _short(" / ".join(dict.fromkeys(t for t in map(_edge_text, edges) if t)), chars)
    return " ".join(part for part in (label, note) if part)


def _node_width(node_id: str, extra: float = 0.0) -> float:
    return max(_NODE_MIN_W, len(_title(node_id)) * _CHAR_W + 2 * _NODE_PAD + extra)


def layout(
    dag: Mapping[str, Any],
    *,
    extra_edges: Iterable[Mapping[str, Any]] = (),
    badges: Mapping[str, float] = {},
    notes: Mapping[str, str] = {},
) -> Layout:
    """Place ``dag``'s top level: nodes in layers top to bottom, its edges' routes and labels.

    ``extra_edges``: edges drawn besides the DAG's own (as ``{"from", "to", ...}``);
    ``badges``: node -> room (pixels) its label needs besides its name; ``notes``: edge key
    (``"source→target"``) -> text its label ends with (a count).
    """
    nodes = [str(node["id"]) for node in dag.get("nodes") or ()]
    known = set(nodes)
    pairs: dict[tuple[str, str], list[Mapping[str, Any]]] = {}
    for edge in [*(dag.get("edges") or ()), *extra_edges]:
        source, target = str(edge["from"]), str(edge["to"])
        if source in known and target in known:
            pairs.setdefault((source, target), []).append(edge)
    loops = {pair[0]: _labelled(pairs[pair], notes.get(_key(*pair), ""), 16) for pair in pairs if pair[0] == pair[1]}
    room = {n: _LOOP_W + (len(text) * _LABEL_CHAR_W + 6 if text else 0.0) for n, text in loops.items()}
    widths = {n: _node_width(n, badges.get(n, 0.0)) + room.get(n, 0.0) for n in nodes}
    links = [pair for pair in pairs if pair[0] != pair[1]]
    back = _back_edges(nodes, links)
    rank = _ranks(nodes, [(t, s) if (s, t) in back else (s, t) for s, t in links])

    # Every edge spans at least one layer between its ends' (where its label goes).
    layer_of = {n: 2 * rank[n] for n in nodes}
    items: dict[str, tuple[float, float]] = {n: (widths[n], _NODE_H) for n in nodes}
    chains: dict[tuple[str, str], list[str]] = {}
    labels: dict[tuple[str, str], str] = {}
    for source, target in links:
        top, bottom = (target, source) if (source, target) in back else (source, target)
        text = _labelled(pairs[(source, target)], notes.get(_key(source, target), ""), _LABEL_CHARS)
        labels[(source, target)] = text
        chain = []
        for layer in range(layer_of[top] + 1, layer_of[bottom]):
            dummy = f"\0{source}\0{target}\0{layer}"
            first = layer == layer_of[top] + 1
            items[dummy] = (len(text) * _LABEL_CHAR_W + 8, _LABEL_H) if first and text else (2.0, 0.0)
            layer_of[dummy] = layer
            chain.append(dummy)
        chains[(source, target)] = [top, *chain, bottom]

    depth = max(layer_of.values(), default=0) + 1
    layers: list[list[str]] = [[] for _ in range(depth)]
    for item in _first_order(nodes, links, chains):
        layers[layer_of[item]].append(item)
    up: dict[str, list[str]] = {item: [] for item in items}
    down: dict[str, list[str]] = {item: [] for item in items}
    for chain in chains.values():
        for a, b in zip(chain, chain[1:], strict=False):
            down[a].append(b)
            up[b].append(a)
    layers = _ordered(layers, up, down)
    xs = _positions(layers, items, up, down)

    heights = [max((items[i][1] for i in layer), default=0.0) for layer in layers]
    ys: list[float] = []
    y = _MARGIN
    for h in heights:
        ys.append(y + h / 2)
        y += h + _LAYER_GAP
    left = min((xs[i] - items[i][0] / 2 for i in items), default=0.0)
    right = max((xs[i] + items[i][0] / 2 for i in items), default=0.0)
    shift = _MARGIN - left
    boxes = {
        n: Box(xs[n] + shift - room.get(n, 0.0) / 2, ys[layer_of[n]], widths[n] - room.get(n, 0.0), _NODE_H)
        for n in nodes
    }

    routes: list[Route] = []
    for (source, target), chain in chains.items():
        points = [(xs[i] + shift, ys[layer_of[i]]) for i in chain]
        if (source, target) in back:
            points.reverse()
        points[0] = _port(boxes[source], points[1], leaving=True)
        points[-1] = _port(boxes[target], points[-2], leaving=False)
        text = labels[(source, target)]
        label_box = None
        if text:
            first = chain[1]
            w, h = items[first]
            label_box = Box(xs[first] + shift, ys[layer_of[first]], w, h)
        routes.append(Route(source, target, tuple(points), text, label_box, tuple(pairs[(source, target)])))
    for node in sorted(loops, key=nodes.index):
        box = boxes[node]
        x0, y0 = box.x + box.w / 2, box.y
        text = loops[node]
        points = ((x0, y0 - 6), (x0 + _LOOP_W - 6, y0 - 12), (x0 + _LOOP_W - 6, y0 + 12), (x0, y0 + 6))
        routes.append(Route(node, node, points, text, None, tuple(pairs[(node, node)]), loop=True))
    width = right - left + 2 * _MARGIN
    height = y - _LAYER_GAP + _MARGIN if layers else 2 * _MARGIN
    return Layout(boxes, tuple(routes), width, height)


def _back_edges(nodes: Sequence[str], links: Sequence[tuple[str, str]]) -> set[tuple[str, str]]:
    """The edges a depth-first walk from START (then from each node not reached) finds going
    back to a node it is still inside: turning them round leaves no cycle."""
    out: dict[str, list[str]] = {n: [] for n in nodes}
    for source, target in links:
        out[source].append(target)
    state: dict[str, int] = {}  # 1: on the walk's path, 2: done
    back: set[tuple[str, str]] = set()
    roots = [START] if START in out else []
    for root in [*roots, *nodes]:
        if root in state:
            continue
        state[root] = 1
        stack = [(root, iter(out[root]))]
        while stack:
            node, rest = stack[-1]
            target = next(rest, None)
            if target is None:
                state[node] = 2
                stack.pop()
            elif state.get(target) == 1:
                back.add((node, target))
            elif target not in state:
                state[target] = 1
                stack.append((target, iter(out[target])))
    # END only ever ends a path: an edge out of it is drawn going back.
    back.update((s, t) for s, t in links if s == END)
    back.update((s, t) for s, t in links if t == START)
    return back


def _ranks(nodes: Sequence[str], edges: Sequence[tuple[str, str]]) -> dict[str, int]:
    """Each node's layer: the longest way to it (the edges have no cycle); END below all."""
    ins: dict[str, list[str]] = {n: [] for n in nodes}
    for source, target in edges:
        ins[target].append(source)
    rank: dict[str, int] = {}

    def of(node: str) -> int:
        stack = [node]
        while stack:
            top = stack[-1]
            waiting = [s for s in ins[top] if s not in rank]
            if waiting:
                stack.extend(waiting)
                continue
            stack.pop()
            rank[top] = max((rank[s] + 1 for s in ins[top]), default=0)
        return rank[node]

    for node in nodes:
        if node not in rank:
            of(node)
    if END in rank:
        rank[END] = max([rank[n] for n in nodes if n != END] + [rank[END] - 1]) + 1
    return rank


def _first_order(
    nodes: Sequence[str], links: Sequence[tuple[str, str]], chains: Mapping[tuple[str, str], list[str]]
) -> list[str]:
    """Every node and bend once, in the order a walk from START meets them (a first order
    for each layer that keeps a node's edges in the order declared)."""
    out: dict[str, list[tuple[str, str]]] = {n: [] for n in nodes}
    for link in links:
        out[link[0]].append(link)
    seen: dict[str, None] = {}
    queue = [START] if START in out else []
    queue += list(nodes)
    at = 0
    while at < len(queue):
        node = queue[at]
        at += 1
        if node in seen:
            continue
        seen[node] = None
        for link in out[node]:
            for item in chains[link][1:-1]:
                seen.setdefault(item, None)
            queue.append(link[1])
    for chain in chains.values():
        for item in chain:
            seen.setdefault(item, None)
    return list(seen)


def _crossings(layers: Sequence[Sequence[str]], down: Mapping[str, Sequence[str]]) -> int:
    total = 0
    for upper, lower in zip(layers, layers[1:], strict=False):
        at = {item: i for i, item in enumerate(lower)}
        ends = [(i, at[b]) for i, a in enumerate(upper) for b in down[a] if b in at]
        total += sum(1 for x, (a1, b1) in enumerate(ends) for a2, b2 in ends[x + 1 :] if (a1 - a2) * (b1 - b2) < 0)
    return total


def _ordered(
    layers: list[list[str]], up: Mapping[str, Sequence[str]], down: Mapping[str, Sequence[str]]
) -> list[list[str]]:
    """The layers reordered by barycentres, sweeping down and up; the order with the fewest crossings."""
    best, fewest = [list(layer) for layer in layers], _crossings(layers, down)
    current = [list(layer) for layer in layers]
    for sweep in range(_SWEEPS):
        downward = sweep % 2 == 0
        indices = range(1, len(current)) if downward else range(len(current) - 2, -1, -1)
        for i in indices:
            near = current[i - 1] if downward else current[i + 1]
            at = {item: k for k, item in enumerate(near)}
            linked = up if downward else down

            def centre(
                item: str, k: int, at: dict[str, int] = at, linked: Mapping[str, Sequence[str]] = linked
            ) -> float:
                ends = [at[other] for other in linked[item] if other in at]
                return sum(ends) / len(ends) if ends else float(k)

            keyed = [(centre(item, k), k, item) for k, item in enumerate(current[i])]
            current[i] = [item for _, _, item in sorted(keyed)]
        count = _crossings(current, down)
        if count < fewest:
            best, fewest = [list(layer) for layer in current], count
    return best


def _closest_in_order(wanted: Sequence[float], gaps: Sequence[float]) -> list[float]:
    """Positions as close as can be to ``wanted`` (least squares) keeping each at least its
    ``gaps[i]`` right of the one before: the pool-adjacent-violators fit of an order."""
    offsets = [0.0]
    for gap in gaps:
        offsets.append(offsets[-1] + gap)
    blocks: list[list[float]] = []  # [mean, count]
    for value, offset in zip(wanted, offsets, strict=True):
        blocks.append([value - offset, 1.0])
        while len(blocks) > 1 and blocks[-2][0] > blocks[-1][0]:
            mean, count = blocks.pop()
            blocks[-1][0] = (blocks[-1][0] * blocks[-1][1] + mean * count) / (blocks[-1][1] + count)
            blocks[-1][1] += count
    fitted: list[float] = []
    for mean, count in blocks:
        fitted.extend([mean] * int(count))
    return [value + offset for value, offset in zip(fitted, offsets, strict=True)]


def _positions(
    layers: Sequence[Sequence[str]],
    items: Mapping[str, tuple[float, float]],
    up: Mapping[str, Sequence[str]],
    down: Mapping[str, Sequence[str]],
) -> dict[str, float]:
    """Each item's x: packed at first, then drawn towards its neighbours' in the layers above
    and below, a layer at a time, never closer to the next in its layer than the gap."""
    xs: dict[str, float] = {}

    def gaps(layer: Sequence[str]) -> list[float]:
        return [(items[a][0] + items[b][0]) / 2 + _NODE_GAP for a, b in zip(layer, layer[1:], strict=False)]

    for layer in layers:
        at = 0.0
        for item in layer:
            xs[item] = at + items[item][0] / 2
            at += items[item][0] + _NODE_GAP
        middle = at / 2
        for item in layer:
            xs[item] -= middle
    for sweep in range(_SMOOTHING):
        order = range(len(layers)) if sweep % 2 == 0 else range(len(layers) - 1, -1, -1)
        for i in order:
            layer = layers[i]
            if not layer:
                continue
            wanted = []
            for item in layer:
                near = [xs[other] for other in (*up[item], *down[item])]
                wanted.append(sum(near) / len(near) if near else xs[item])
            for item, x in zip(layer, _closest_in_order(wanted, gaps(layer)), strict=True):
                xs[item] = x
    return xs


def _port(box: Box, towards: tuple[float, float], *, leaving: bool) -> tuple[float, float]:
    """Where an edge meets ``box``: on its bottom or top side (whichever faces ``towards``),
    as far towards it as the side's rounded ends allow."""
    x = min(max(towards[0], box.x - box.w / 2 + 10), box.x + box.w / 2 - 10)
    below = towards[1] > box.y
    return (x, box.y + box.h / 2 if below else box.y - box.h / 2)


# -- drawing -------------------------------------------------------------------------

_LIGHT = {
    "bg": "#ffffff",
    "border": "#d0d7de",
    "fg": "#1f2328",
    "muted": "#59636e",
    "node": "#f6f8fa",
    "edge": "#818b98",
    "path": "#0969da",
    "visited": "#ddf4ff",
    "other": "#bc4c00",
    "ok": "#1a7f37",
    "warn": "#9a6700",
    "bad": "#cf222e",
}
_DARK = {
    "bg": "#0d1117",
    "border": "#3d444d",
    "fg": "#e6edf3",
    "muted": "#9198a1",
    "node": "#151b23",
    "edge": "#8b949e",
    "path": "#4493f8",
    "visited": "#0c2d6b",
    "other": "#f0883e",
    "ok": "#3fb950",
    "warn": "#d29922",
    "bad": "#f85149",
}
PALETTES: Mapping[str, Mapping[str, str]] = {"light": _LIGHT, "dark": _DARK}
"""The picture's colours by scheme: every text colour keeps 4.5:1 on its background."""

_FONT = "system-ui,-apple-system,'Segoe UI',Helvetica,Arial,sans-serif"
_MONO = "ui-monospace,SFMono-Regular,Menlo,Consolas,monospace"
_DASH = {"goto": "1.5 3", "denied": "7 4", "dynamic": "6 3 1.5 3", "unconditional": "4 3"}
_TONE_ROLE = {"plain": "fg", "ok": "ok", "warn": "warn", "bad": "bad"}
_NOTE_CHAR_W = 6.6  # 11px sans-serif


def _key(source: str, target: str) -> str:
    return f"{source}\u2192{target}"


def _edges_fired(counts: Mapping[str, int], known: set[str]) -> list[dict[str, Any]]:
    """The edges ``counts`` took between two nodes drawn, as ``{"from", "to"}`` (a key's
    ends are found where an arrow splits it into two names the graph has)."""
    found = []
    for key in counts:
        at = key.find("\u2192")
        while at >= 0:
            source, target = key[:at], key[at + 1 :]
            if source in known and target in known:
                found.append({"from": source, "to": target, "label": "", "unconditional": True, "dynamic": True})
                break
            at = key.find("\u2192", at + 1)
    return found


def _count(taken: int, counted: bool) -> str:
    """What an edge's label says of the times it was taken: a batch's runs, a run's repeats."""
    if counted:
        return f"{taken} run{'s' if taken != 1 else ''}" if taken else ""
    return f"\u00d7{taken}" if taken > 1 else ""


def _style(route: Route) -> str:
    """How an edge is drawn when not taken: a ``goto`` dotted, a ``denied`` one long-dashed, a
    ``dynamic`` one dash-dot, an unconditional one dashed (as the live view draws them)."""
    edges = route.edges
    for kind in ("denied", "goto", "dynamic"):
        if edges and all(edge.get(kind) for edge in edges):
            return kind
    return "unconditional" if edges and all(e.get("unconditional") and not e.get("each") for e in edges) else ""


def _path_d(points: Sequence[tuple[float, float]], loop: bool) -> str:
    (x0, y0), rest = points[0], points[1:]
    if loop:
        (x1, y1), (x2, y2), (x3, y3) = rest
        return f"M{x0:.1f},{y0:.1f} C{x1:.1f},{y1:.1f} {x2:.1f},{y2:.1f} {x3:.1f},{y3:.1f}"
    d = f"M{x0:.1f},{y0:.1f}"
    previous = points[0]
    for x, y in rest:  # each bend a curve leaving and arriving vertically
        middle = (previous[1] + y) / 2
        d += f" C{previous[0]:.1f},{middle:.1f} {x:.1f},{middle:.1f} {x:.1f},{y:.1f}"
        previous = (x, y)
    return d


def _arrow(points: Sequence[tuple[float, float]], loop: bool) -> str:
    (x, y) = points[-1]
    if loop:
        return f"{x:.1f},{y:.1f} {x + 6:.1f},{y + 1:.1f} {x + 4:.1f},{y + 5.5:.1f}"
    down = 1.0 if y >= points[-2][1] else -1.0
    return f"{x:.1f},{y:.1f} {x - 4:.1f},{y - 7 * down:.1f} {x + 4:.1f},{y - 7 * down:.1f}"


def _attribute(value: Any) -> str:
    return escape(f"{value:.1f}" if isinstance(value, float) else str(value), {'"': "&quot;"})


class _Svg:
    """SVG elements as text, coloured by role: the light colour as an attribute, the dark one
    by a class the stylesheet gives it where the reader prefers dark."""

    def __init__(self) -> None:
        self.parts: list[str] = []

    def add(self, tag: str, text: str | None = None, *, fill: str = "", stroke: str = "", **attrs: Any) -> None:
        classes = [f"f-{fill}"] if fill else []
        if stroke:
            classes.append(f"s-{stroke}")
        shown = {
            "class": " ".join([*classes, *([attrs.pop("class_")] if "class_" in attrs else [])]) or None,
            "fill": _LIGHT[fill] if fill else attrs.pop("fill_", None),
            "stroke": _LIGHT[stroke] if stroke else None,
            **attrs,
        }
        body = " ".join(f'{name.replace("_", "-")}="{_attribute(v)}"' for name, v in shown.items() if v is not None)
        self.parts.append(f"<{tag} {body}/>" if text is None else f"<{tag} {body}>{escape(text)}</{tag}>")


def _css() -> str:
    """The dark scheme's colours, over the light ones the elements carry (a reader without
    styles, or preferring light, gets those)."""
    rules = "".join(f".f-{role}{{fill:{colour}}}.s-{role}{{stroke:{colour}}}" for role, colour in _DARK.items())
    return "@media (prefers-color-scheme: dark){" + rules + "}"


def caption(dag: Mapping[str, Any], frame: Frame = Frame(), *, title: str | None = None) -> str:
    """The picture in words: the graph's name, how the run stands and why (its headline and note)."""
    name = title if title is not None else str(dag.get("name") or "graph")
    head = name + (f" \u00b7 {frame.headline}" if frame.headline else "")
    return head + (f". {' '.join(frame.note.split())}" if frame.note else "")


def to_svg(dag: Mapping[str, Any], frame: Frame = Frame(), *, title: str | None = None) -> str:
    """The picture: ``dag``'s graph laid out (:func:`layout`) with ``frame`` on it, as SVG text.

    ``title``: the name shown first (default: the graph's). The picture says what it shows
    in words too (its ``<title>`` and ``aria-label``, :func:`caption`), for a reader who
    cannot see it.
    """
    nodes = {str(node["id"]): node for node in dag.get("nodes") or ()}
    drawn = {(str(e["from"]), str(e["to"])) for e in dag.get("edges") or ()}
    extra = [e for e in _edges_fired({**frame.other, **frame.fired}, set(nodes)) if (e["from"], e["to"]) not in drawn]
    badges = {n: 8 + len(f"\u00d7{c}") * _CHAR_W for n, c in frame.visits.items() if c > 1 and n in nodes}
    for name, node in nodes.items():
        if node.get("approval"):
            badges[name] = badges.get(name, 0.0) + 12
    notes = {key: note for key, taken in frame.fired.items() if (note := _count(taken, frame.counted))}
    placed = layout(dag, extra_edges=extra, badges=badges, notes=notes)

    head = _Svg()
    bottom, needed = _head(head, str(title if title is not None else dag.get("name") or "graph"), frame)
    width = max(placed.width, needed, 160.0)
    height = placed.height + bottom
    graph = _Svg()
    labels = _edges(graph, placed, frame)
    _nodes(graph, placed, nodes, frame)
    for box, text, role in labels:  # over the edges and nodes (they keep clear of the nodes)
        graph.add(
            "rect",
            fill="bg",
            fill_opacity=0.9,
            rx=3,
            x=box.x - box.w / 2,
            y=box.y - box.h / 2,
            width=box.w,
            height=box.h,
        )
        graph.add(
            "text", text, fill=role, x=box.x, y=box.y + 3.5, text_anchor="middle", font_family=_MONO, font_size=10.5
        )
    words = escape(caption(dag, frame, title=title), {'"': "&quot;"})
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0f}" height="{height:.0f}" '
        f'viewBox="0 0 {width:.1f} {height:.1f}" role="img" aria-label="{words}" font-family="{_FONT}" font-size="12">'
        f"<title>{words}</title><style>{_css()}</style>"
        f'<rect class="f-bg s-border" x="0.5" y="0.5" width="{width - 1:.1f}" height="{height - 1:.1f}" rx="6" '
        f'fill="{_LIGHT["bg"]}" stroke="{_LIGHT["border"]}"/>'
        + "".join(head.parts)
        + f'<g transform="translate({(width - placed.width) / 2:.1f},{bottom:.1f})">'
        + "".join(graph.parts)
        + "</g></svg>"
    )


def _head(svg: _Svg, name: str, frame: Frame) -> tuple[float, float]:
    """The lines above the graph: its name and how the run stands, why, and the key to the
    paths drawn. Returns where the graph starts, and the width the lines need."""
    y = _MARGIN / 2 + 13
    headline = name + (f" \u00b7 {frame.headline}" if frame.headline else "")
    svg.add("text", headline, fill=_TONE_ROLE[frame.tone], x=_MARGIN, y=y, font_weight=600)
    widths = [len(headline) * _CHAR_W]
    if frame.note:
        y += _HEAD_LINE
        note = _short(frame.note, 110)
        svg.add("text", note, fill="muted", x=_MARGIN, y=y, font_size=11)
        widths.append(len(note) * _NOTE_CHAR_W)
    if frame.legend:
        y += _HEAD_LINE
        x = float(_MARGIN)
        for role, what in frame.legend:
            svg.add("line", stroke=role, x1=x, y1=y - 4.0, x2=x + 18, y2=y - 4.0, stroke_width=3)
            svg.add("text", what, fill="fg", x=x + 24, y=y, font_size=11)
            x += 42 + len(what) * _NOTE_CHAR_W
        widths.append(x - _MARGIN)
    return y + _HEAD_LINE / 2 + 4, max(widths) + 2 * _MARGIN


def _edges(svg: _Svg, placed: Layout, frame: Frame) -> list[tuple[Box, str, str]]:
    """Draw the edges: taken ones in the path's colour (a second path under them in its own),
    the others thin and dashed by kind. Returns their labels, to be drawn over everything."""
    most = max([*frame.fired.values(), 1]) if frame.counted else 1
    labels: list[tuple[Box, str, str]] = []
    for route in placed.routes:
        key = _key(route.source, route.target)
        taken = frame.fired.get(key, 0)
        d = _path_d(route.points, route.loop)
        style = _style(route)
        if frame.other.get(key):
            svg.add("path", stroke="other", d=d, fill_="none", stroke_width=5, stroke_opacity=0.55)
        role = "path" if taken else "bad" if style == "denied" else "edge"
        width = (1.6 + 3.4 * taken / most if frame.counted else 2.6) if taken else 1.3
        dash = None if taken else _DASH.get(style)
        svg.add(
            "path",
            stroke=role,
            class_="edge",
            d=d,
            fill_="none",
            stroke_width=width,
            stroke_dasharray=dash,
            data_edge=key,
            data_taken=taken or None,
        )
        svg.add("polygon", fill=role, points=_arrow(route.points, route.loop))
        text_role = "path" if taken else "muted"
        if route.loop and route.label:
            x, y = route.points[1][0] + 4, route.points[1][1] + 16
            svg.add("text", route.label, fill=text_role, x=x, y=y, font_family=_MONO, font_size=10.5)
        elif route.label_box is not None:
            labels.append((route.label_box, route.label, text_role))
    return labels


def _nodes(svg: _Svg, placed: Layout, nodes: Mapping[str, Mapping[str, Any]], frame: Frame) -> None:
    """Draw the nodes: those the run visited filled, with their count; those it runs or waits at
    outlined dashed, failed ones in red; END in the outcome's colour once the run ended there."""
    ended_at_end = any(key.endswith(f"\u2192{END}") for key in frame.fired)
    end_role = _TONE_ROLE[frame.tone] if frame.headline and not frame.current else "path"
    for name, box in placed.boxes.items():
        node = nodes[name]
        visits = frame.visits.get(name, 0)
        visited = visits > 0 or (name == START and bool(frame.fired))
        stroke = (
            "bad"
            if name in frame.failed
            else "warn"
            if name in frame.current
            else (end_role if end_role != "fg" else "path")
            if name == END and ended_at_end
            else "path"
            if visited
            else "edge"
        )
        left, top = box.x - box.w / 2, box.y - box.h / 2
        svg.add(
            "rect",
            fill="visited" if visited else "node",
            stroke=stroke,
            x=left,
            y=top,
            width=box.w,
            height=box.h,
            rx=box.h / 2 if name in (START, END) else 6,
            stroke_width=1.2 if stroke == "edge" else 2.5,
            stroke_dasharray="5 3" if name in frame.current else None,
            data_node=name,
            data_visits=visits or None,
        )
        if node.get("kind") == "graph":  # a sub-graph: a frame inside the frame
            svg.add(
                "rect",
                stroke=stroke,
                fill_="none",
                x=left + 3,
                y=top + 3,
                width=box.w - 6,
                height=box.h - 6,
                rx=4,
                stroke_width=0.8,
            )
        label = _title(name)
        badge = f"\u00d7{visits}" if visits > 1 else ""
        mark = 12.0 if node.get("approval") else 0.0
        x = box.x - (len(label) * _CHAR_W + mark + (len(badge) * _CHAR_W + 8 if badge else 0)) / 2
        if mark:  # a person approves this node: a pause sign before its name
            for bar in (0.0, 4.5):
                svg.add("rect", fill="warn", x=x + bar, y=box.y - 5, width=2.5, height=10)
        svg.add("text", label, fill="fg", x=x + mark, y=box.y + 4, font_weight=600 if visited else None)
        if badge:
            svg.add("text", badge, fill="path", x=x + mark + len(label) * _CHAR_W + 8, y=box.y + 4, font_size=11)
