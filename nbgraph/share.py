"""A run as one HTML file that replays it: the view, its step slider and its inspector, no kernel.

``result.to_html(path)``, ``replay.to_html(path)`` (a :class:`~nbgraph.replay.Replay` of a
result, a stored thread or an NDJSON trace) and ``nbgraph html TRACE.ndjson`` write it. The
file holds, inline:

- the view's own ES module (``static/widget.js``) and its stylesheet;
- the traits a replay of the run gives the view in a notebook (:func:`nbgraph._shown.ended_traits`)
  and the inspection of every frame, as JSON;
- ``static/share.js``: a model that plays anywidget's part over those traits and answers the
  inspector from the inspections, and the variables of a light and a dark look, as the
  reader's system prefers.

Nothing is fetched: it opens from ``file://``, from any web server, or inside another page
that includes it (the view is drawn in a shadow root: no style goes in or out, no id is
shared). Nothing in it needs a kernel: answering, forking and resuming are left out. Every
text in it passes through :func:`~nbgraph.secrets.redact`, and a long text is clipped, so
a state of megabytes makes a page of kilobytes.
"""

from __future__ import annotations

import hashlib
import html
import json
import math
import os
import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ._shown import ended_traits, graph_known, place
from .export import DAG_SCHEMA_VERSION, to_dag
from .names import END, START
from .secrets import redact

__all__ = ["TEXT_CHARS", "page", "write_html"]

_STATIC = Path(__file__).parent / "static"

TEXT_CHARS = 2000
"""The longest text a page keeps whole (the inspector shows less of a value than this)."""
_SHORT_CHARS = 200
"""The longest text kept once the inspections would pass :data:`_BUDGET` at :data:`TEXT_CHARS`."""
_BUDGET = 8_000_000
"""Characters of inspections a page holds at most: a long run's later frames are left out past it."""

_LEFT_OUT = ("update", "edit", "payload")
"""Inspection fields the inspector does not show (the update and the edit show as ``change``)."""

_UNAVAILABLE = "unavailable"
"""The key of what the page says in place of an inspection it does not hold (share.js reads it)."""

_NO_KERNEL_PARTS = "answering, forking and resuming need the notebook it ran in"


def write_html(
    frames: Any,
    path: str | os.PathLike[str],
    *,
    dag: Mapping[str, Any] | None = None,
    inspect: Callable[[int], Any] | None = None,
) -> Path:
    """Write :func:`page` to ``path`` (UTF-8) and return the path."""
    target = Path(path)
    target.write_text(page(frames, dag=dag, inspect=inspect), encoding="utf-8", newline="\n")
    return target


def page(
    frames: Any,
    *,
    dag: Mapping[str, Any] | None = None,
    inspect: Callable[[int], Any] | None = None,
) -> str:
    """One self-contained HTML page that replays the run ``frames`` holds.

    Args:
        frames: a :class:`~nbgraph.replay.Replay`, or another engine's frames of that shape
            (``frames``, ``records``, ``outcome``, ``reason``, ``plan``, ``thread``).
        dag: the drawing (DAG JSON); by default the graph's (``to_dag(frames.plan)``), or,
            for a trace read without its graph, the nodes that ran and the edges taken.
        inspect: frame index -> its :class:`~nbgraph.inspection.Inspection`; by default
            ``frames.inspect``.
    """
    plan = frames.plan
    drawn = graph_known(plan)
    if dag is None:
        dag = getattr(plan, "dag", None) or (to_dag(plan) if drawn else _taken(frames))
    traits = {**_QUIET, "dag": dag, **ended_traits(frames)}
    every = frames.frames
    inspections, keys = _inspections(frames.records, len(every), inspect or frames.inspect)
    name = str(getattr(plan, "name", "graph"))
    outcome = frames.outcome or "ended"
    thread = getattr(frames, "thread", None)
    run = f"run {thread} of graph {name}" if thread else f"a run of graph {name}"
    steps = len(every) - 1
    note = f"A replay of {run} ({outcome}, {steps} step{'' if steps == 1 else 's'}), shared as one file: {_NO_KERNEL_PARTS}."
    if not drawn:
        note += " Drawn from the trace without its graph: only the nodes that ran and the edges taken."
    data = {
        "traits": _kept(traits, TEXT_CHARS, []),
        "inspections": inspections,
        "keys": keys,
        "css": (_STATIC / "widget.css").read_text(encoding="utf-8"),
        "note": redact(note),
    }
    text = _script_json(data)
    token = hashlib.sha256(text.encode()).hexdigest()[:16]
    view = _inlined((_STATIC / "widget.js").read_text(encoding="utf-8"), "widget.js")
    share = _inlined((_STATIC / "share.js").read_text(encoding="utf-8"), "share.js")
    title = html.escape(redact(f"{name} \u00b7 {outcome} \u00b7 nbgraph"))
    return _PAGE.format(
        title=title,
        token=token,
        noscript=html.escape(redact(f"This page replays {run} step by step; it needs JavaScript.")),
        data=text,
        script=f"const nbgraphView = {view};\nconst nbgraphShare = {share};\n"
        f"nbgraphShare.mountShared(nbgraphView.default, {json.dumps(token)});",
    )


_PAGE = """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light dark">
<meta name="generator" content="nbgraph">
<title>{title}</title>
</head>
<body>
<div class="nbgraph-shared" data-nbgraph-shared="{token}">
<noscript>{noscript}</noscript>
<script type="application/json">{data}</script>
</div>
<script type="module">
{script}
</script>
</body>
</html>
"""

_QUIET: dict[str, Any] = {
    "kind": "graph",
    "pending": [],
    "text": "",
    "running": [],
    "branches": {},
    "reruns": {},
    "breakpoints": {"before": [], "after": []},
    "problems": [],
    "costs": {},
    "can_fork": False,
    "previous": {},
    "swapped": [],
    "redefined": {},
    "standing": [],
    "can_stand": False,
    "identity": "",
    "sides": {},
}
"""The traits of a view with no kernel behind it: nothing pending, running or to fork."""


# -- the inspector's answers ------------------------------------------------------------------


def _inspections(
    records: Sequence[Any], count: int, inspect: Callable[[int], Any]
) -> tuple[list[dict[str, Any] | None], dict[str, dict[str, int]]]:
    """Each frame's inspection as the view shows it (frame 0, the input, has none), and the keys
    the view names a step by: a node's latest frame, a top-level step's, a log line's place's."""
    seen: list[Any] = [None]
    for frame in range(1, count):
        try:
            seen.append(inspect(frame).model_dump(mode="json"))
        except (ValueError, TypeError, LookupError) as exc:  # (the kernel's view says so too)
            seen.append({_UNAVAILABLE: str(exc)})
    shown: list[dict[str, Any] | None] = []
    for limit in (TEXT_CHARS, _SHORT_CHARS):
        shown = [None if data is None else _shown_inspection(data, limit) for data in seen]
        if sum(len(json.dumps(data)) for data in shown) <= _BUDGET:
            break
    else:
        shown = _within_budget(shown)
    keys: dict[str, dict[str, int]] = {"node": {}, "step": {}, "where": {}}
    for frame, record in enumerate(records[: count - 1], start=1):  # (later records win: the latest)
        keys["node"][record.path] = frame
        keys["where"][f"{record.step} {place(record.path, record.branch)}"] = frame
        if "/" not in record.path:
            keys["step"][str(record.step)] = frame
    return shown, keys


def _shown_inspection(data: Mapping[str, Any], limit: int) -> dict[str, Any]:
    """An inspection as the page keeps it: redacted, its texts and input state clipped to
    ``limit`` characters, saying so when it is."""
    clipped: list[int] = []
    kept = {key: value for key, value in data.items() if key not in _LEFT_OUT and key != "input"}
    kept = _kept(kept, limit, clipped)
    state = data.get("input")
    if state is not None:
        dumped = json.dumps(state, default=str, ensure_ascii=False)
        text = _redacted(dumped, limit)
        if len(text) > limit:
            clipped.append(len(dumped))
            kept["input"] = f"{text[:limit]}\u2026"
        else:
            kept["input"] = _kept(state, limit, [])
    if clipped:
        kept["missing"] = [
            *kept.get("missing", ()),
            f"the shared file keeps the first {limit:,} characters of each text (the longest here has "
            f"{max(clipped):,}): the run's own result has all of it",
        ]
    return kept


def _within_budget(shown: list[dict[str, Any] | None]) -> list[dict[str, Any] | None]:
    """The inspections up to the budget; the later frames say they were left out."""
    total = 0
    for frame, data in enumerate(shown):
        total += len(json.dumps(data))
        if total > _BUDGET:
            left = {
                _UNAVAILABLE: f"the shared file holds the inspections of frames 1 to {frame - 1} only "
                f"(to stay under {_BUDGET // 1_000_000} MB): the run's own result has the rest"
            }
            return [*shown[:frame], *([left] * (len(shown) - frame))]
    return shown


def _kept(value: Any, limit: int, clipped: list[int]) -> Any:
    """``value`` as JSON the page can hold: every text redacted and clipped to ``limit``
    characters (its length noted in ``clipped``), a number JSON has no word for as text."""
    if isinstance(value, str):
        text = _redacted(value, limit)
        if len(text) > limit:
            clipped.append(len(value))
            return f"{text[:limit]}\u2026"
        return text
    if isinstance(value, bool) or value is None or isinstance(value, int):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else repr(value)
    if isinstance(value, Mapping):
        return {str(key): _kept(item, limit, clipped) for key, item in value.items()}  # pyright: ignore[reportUnknownVariableType]
    if isinstance(value, (list, tuple)):
        return [_kept(item, limit, clipped) for item in value]  # pyright: ignore[reportUnknownVariableType]
    return _kept(str(value), limit, clipped)


_MARGIN = 512
"""Characters past a clip that are redacted with the text kept: a secret the clip cuts through is
redacted whole (a credential is shorter), and no time goes on text the page leaves out."""


def _redacted(text: str, limit: int) -> str:
    """``text`` redacted, as far as its first ``limit`` characters are kept (the rest clipped)."""
    if len(text) > limit + _MARGIN:
        return redact(text[: limit + _MARGIN])
    return redact(text)


# -- the page's parts -------------------------------------------------------------------------


def _script_json(data: Any) -> str:
    """``data`` as JSON that a ``<script>`` element holds safely: no ``<`` (so no ``</script>``
    and no ``<!--`` in it), no ``>`` or ``&``, and no line separator a parser could trip on."""
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    for char in "<>&\u2028\u2029":
        text = text.replace(char, f"\\u{ord(char):04x}")
    return text


_EXPORTS = re.compile(r"export\s*\{([^{}]*)\}\s*;?")
_TRAILING = re.compile(r"(?:\s|/\*.*?\*/|//[^\n]*)*", re.DOTALL)
_UNSAFE = re.compile(r"</script|<!--|<script", re.IGNORECASE)


def _inlined(module: str, name: str) -> str:
    """An esbuild ES module bundle as an expression of its exports (``{default: ..., ...}``),
    to run inside the page's one inline module: its export clause becomes a return.

    Raises:
        RuntimeError: the bundle is not of that shape (an import, no final export clause) or
            holds text that would end or confuse the page's script element.
    """
    found = list(_EXPORTS.finditer(module))
    last = found[-1] if found else None
    if last is None or _TRAILING.fullmatch(module, last.end()) is None:
        raise RuntimeError(
            f"nbgraph/static/{name} does not end with an export clause: rebuild it (cd js && npm run build)"
        )
    if re.search(r"(?:^|[;}])\s*import\s*[\w{*\"']", module[: last.start()]):
        raise RuntimeError(f"nbgraph/static/{name} imports another module: a page can only inline a whole bundle")
    unsafe = _UNSAFE.search(module)
    if unsafe is not None:
        raise RuntimeError(f"nbgraph/static/{name} holds {unsafe.group()!r}, which would break the page's script")
    exported = []
    for item in last.group(1).split(","):
        local, _, alias = (part.strip() for part in item.strip().partition(" as "))
        exported.append(f"{json.dumps(alias or local)}: {local}")
    return f"(() => {{\n{module[: last.start()]}\nreturn {{{', '.join(exported)}}};\n}})()"


# -- a trace read without its graph ----------------------------------------------------------------


def _taken(frames: Any) -> dict[str, Any]:
    """A drawing of the path a run took, for frames read without the graph that ran (an NDJSON
    trace): each node that ran (a sub-graph's inside its frame) and each edge taken."""
    levels: dict[str, dict[str, Any]] = {}

    def level(path: str) -> dict[str, Any]:
        held = levels.get(path)
        if held is None:
            held = levels[path] = {"nodes": {}, "edges": {}}
            if path:
                parent, _, name = path.rpartition("/")
                level(parent)["nodes"][name] = "graph"
        return held

    def node(path: str) -> None:
        parent, _, name = path.rpartition("/")
        if name not in (START, END):
            level(parent)["nodes"].setdefault(name, "function")

    level("")
    labels = {
        (r.path.rpartition("/")[0], r.edge.source, target): r.edge.label
        for r in frames.records
        if r.edge is not None
        for target in r.edge.targets
    }
    for record in frames.records:
        node(record.path)
    for source, target in frames.frames[-1].fired:
        node(source)
        node(target)
        where = source.rpartition("/")[0]
        ends = (source.rpartition("/")[2], target.rpartition("/")[2])
        level(where)["edges"][ends] = labels.get((where, *ends))

    def drawn(path: str, name: str) -> dict[str, Any]:
        held = levels[path]
        nodes: list[dict[str, Any]] = [{"id": START, "kind": "start"}]
        for node_name, kind in held["nodes"].items():
            entry: dict[str, Any] = {"id": node_name, "kind": kind, "approval": False}
            if kind == "graph":
                entry["graph"] = drawn(f"{path}/{node_name}" if path else node_name, node_name)
            nodes.append(entry)
        nodes.append({"id": END, "kind": "end"})
        edges = [
            {"from": source, "to": target, "label": label, "unconditional": label is None}
            for (source, target), label in held["edges"].items()
        ]
        return {"name": name, "nodes": nodes, "edges": edges, "problems": []}

    return {"version": DAG_SCHEMA_VERSION, "mode": "graph", **drawn("", str(frames.plan.name))}
