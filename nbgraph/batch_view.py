"""The notebook view of a batch: its counts and the route histogram drawn on the graph, or two versions compared.

``BatchView`` is an anywidget. Bound to a batch (:meth:`BatchView.for_batch`) it shows
done / failed / running / waiting, throughput, tokens and cost, and on the graph how
many runs took each edge (the edge's label, its width by count); a click on an edge
lists the inputs that took it. Its updates are coalesced: at most ``max_rate``
messages a second however many runs end, and one at once when the batch finishes.
Built from :func:`nbgraph.batch.compare`'s table (:meth:`BatchView.for_comparison`)
it draws the edges only the old version took, only the new one, both, and lists the
inputs that changed path, outcome or cost.

It is drawn by the graph view's ES module (one bundle, one layout); its messages are the
``batch`` ones of ``static/protocol.json``.

Import this module only where widgets are wanted: anywidget reads the bundled ES
module when the class is created.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Mapping
from typing import Any

import traitlets

from ._module import ModuleView
from ._observer import Browser
from ._pictured import batch_frame
from ._protocol import MessageError, checked, handlers_of
from .export import to_dag, to_mermaid
from .names import END, START
from .picture import caption, to_svg
from .secrets import redact

__all__ = ["BatchView", "show_batch", "show_comparison"]

_log = logging.getLogger("nbgraph.view")
_LISTED = 500
"""The most input ids one edge's list sends (the count says how many there are)."""


class BatchView(ModuleView):
    """A batch on its graph: counts, throughput, tokens, cost and how many runs took each edge."""

    kind = traitlets.Unicode("batch", read_only=True).tag(sync=True)
    """Which view the shared ES module draws."""
    mode = traitlets.Unicode("batch").tag(sync=True)
    """``batch`` (one batch's progress) or ``compare`` (two versions of a graph on the same inputs)."""
    dag = traitlets.Dict().tag(sync=True)
    """DAG JSON of the graph (nodes, edges with labels), as the graph view draws it."""
    counts = traitlets.Dict().tag(sync=True)
    """total, ended, done, failed, running, waiting, outcomes, tokens, cost, throughput
    (runs ended a second), elapsed, finished, stopped."""
    edges = traitlets.Dict().tag(sync=True)
    """``"source→target"`` -> how many runs took the edge (once per run)."""
    stoppable = traitlets.Bool(False).tag(sync=True)
    """The view follows a batch it can stop: it shows **Stop** until the batch ends."""
    compared = traitlets.Dict().tag(sync=True)
    """In compare mode: ``edges`` (``"source→target"`` -> ``{"a": runs, "b": runs}``), ``rows``
    (the inputs that changed: id, changed, path, outcome and cost of each side), ``total``."""

    def __init__(self, graph: Any = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._graph_name = getattr(graph, "name", None) or "graph"
        self._ids: dict[str, list[Any]] = {}
        self._sides: dict[str, dict[str, list[Any]]] = {}
        self._progress: Any = None
        self._batch: Any = None
        self._unsubscribe: Any = None
        self._interval = 0.1
        self._last = float("-inf")
        self._timer: asyncio.TimerHandle | None = None
        self.sent = 0
        """How many updates the view has sent while following a batch."""
        if graph is not None:
            self.dag = to_dag(graph)
        self.on_msg(self._on_message)

    # -- a batch under way ---------------------------------------------------------

    @classmethod
    def for_batch(cls, batch: Any, *, max_rate: float = 10.0) -> BatchView:
        """A view that follows ``batch`` (a :class:`~nbgraph.batch.Batch`) as its runs start and end.

        At most ``max_rate`` updates a second reach the browser however many runs end
        meanwhile; the batch finishing sends one at once.

        >>> view = BatchView.for_batch(Batch(g, inputs))   # doctest: +SKIP
        """
        view = cls(batch.graph)
        view._batch = batch
        view.stoppable = True
        view.watch(batch.progress, max_rate=max_rate)
        return view

    def watch(self, progress: Any, *, max_rate: float = 10.0) -> None:
        """Follow a :class:`~nbgraph.batch.BatchProgress` (replacing the one followed before)."""
        if not max_rate > 0:
            raise ValueError(f"max_rate is updates a second and must be above 0, got {max_rate!r}")
        self.unwatch()
        self._interval = 1.0 / max_rate
        self._progress = progress
        self._unsubscribe = progress.subscribe(self._changed)
        self.flush()

    def unwatch(self) -> None:
        """Stop following the batch (the view keeps what it shows)."""
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None
        self._cancel_timer()

    def _changed(self, progress: Any, event: Any) -> None:
        if event.kind == "finish":
            self.flush()
            return
        wait = self._last + self._interval - time.perf_counter()
        if wait <= 0:
            self.flush()
        elif self._timer is None:
            # Whatever ends meanwhile is sent together when the interval is up (the batch
            # finishing sends it at once instead).
            try:
                loop = asyncio.get_running_loop()
            except RuntimeError:
                return
            self._timer = loop.call_later(wait, self._due)

    def _due(self) -> None:
        self._timer = None
        self.flush()

    def _cancel_timer(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def flush(self) -> None:
        """Send the batch's counts and edge counts now."""
        self._cancel_timer()
        progress = self._progress
        if progress is None:
            return
        self._last = time.perf_counter()
        self._ids = {_edge_key(*edge): ids for edge, ids in progress.edges.items()}
        with self.hold_sync():
            self.counts = {
                "total": progress.total,
                "ended": progress.ended,
                "done": progress.done,
                "failed": progress.failed,
                "running": progress.running,
                "waiting": progress.waiting,
                "outcomes": dict(progress.outcomes),
                "tokens": progress.tokens,
                "cost": progress.cost,
                "throughput": round(progress.throughput, 3),
                "elapsed": round(progress.elapsed, 3),
                "finished": progress.finished,
                "stopped": progress.stopped,
            }
            self.edges = {key: len(ids) for key, ids in self._ids.items()}
            if progress.finished:
                self.settle()  # (its output updated before the browser hears the batch has finished)
        self.sent += 1
        if progress.finished:
            self.unwatch()

    # -- two versions compared -----------------------------------------------------

    @classmethod
    def for_comparison(cls, table: Any, graph: Any = None, before: Any = None) -> BatchView:
        """A view of :func:`nbgraph.batch.compare`'s table: the edges only the old version
        (``a``) took, only the new one (``b``), both, with counts, and the inputs that changed.

        ``graph`` is the graph drawn (the new version; ``before``, the old one, adds the
        edges it alone has). Without a graph, the nodes and edges come from the paths.
        Edges are read from each input's path (one node to the next, START to the first,
        the last to END for a run that ended ``done``).
        """
        from .batch._table import Difference, rows_of

        rows = rows_of(table, Difference)
        view = cls(graph)
        view.mode = "compare"
        dag = view.dag if graph is not None else {"name": "compared", "nodes": [], "edges": []}
        if before is not None:
            dag = _merged(to_dag(before), dag)
        sides: dict[str, dict[str, list[Any]]] = {}
        changed = []
        for row in rows:
            for side, path, outcome in (("a", row.path_a, row.outcome_a), ("b", row.path_b, row.outcome_b)):
                for edge in _path_edges(path, outcome):
                    sides.setdefault(_edge_key(*edge), {"a": [], "b": []})[side].append(row.input_id)
            if row.changed:
                changed.append(
                    {
                        "id": _jsonable(row.input_id),
                        "changed": list(row.changed),
                        "path_a": list(row.path_a),
                        "path_b": list(row.path_b),
                        "outcome_a": row.outcome_a,
                        "outcome_b": row.outcome_b,
                        "cost_a": float(row.cost_a),
                        "cost_b": float(row.cost_b),
                    }
                )
        view._sides = sides
        view.dag = _with_edges(dag, sides)
        view.compared = {
            "edges": {key: {"a": len(ids["a"]), "b": len(ids["b"])} for key, ids in sides.items()},
            "rows": changed,
            "total": len(rows),
        }
        return view

    # -- clicks from the browser ---------------------------------------------------

    def _on_message(self, _widget: Any, content: Any, _buffers: Any) -> None:
        try:
            reply = self.handle(content)
        except MessageError as exc:
            _log.warning("refused a message: %s", redact(str(exc)))
            reply = {"type": "error", "message": redact(str(exc))}
        except ValueError as exc:
            reply = {"type": "error", "message": redact(str(exc))}
        if reply is not None:
            self.send(checked("batch", "to_view", reply))

    def handle(self, content: Any) -> dict[str, Any] | None:
        """Answer one message from the view (a kind of ``static/protocol.json``'s ``batch``):
        ``{"type": "inputs", "edge": key}`` asks which inputs took an edge; ``{"type": "stop"}``
        stops the batch (no run starts, those under way end ``aborted``, resumable: the same
        batch called again goes on); ``hello`` says a browser shows the view. Returns the reply.

        Raises :class:`~nbgraph._protocol.MessageError` for a message the protocol does not
        allow, ValueError for one that does not fit the view.
        """
        kind = checked("batch", "to_kernel", content)["type"]
        return _BATCH_HANDLERS[kind](self, content)

    def _hello(self, content: dict[str, Any]) -> None:
        Browser.seen = True

    def _stop(self, content: dict[str, Any]) -> dict[str, Any]:
        if self._batch is None:
            raise ValueError("this view follows no batch it can stop")
        self._batch.stop("stopped from the view")
        self.stoppable = False
        return {"type": "stopped"}

    def _inputs_through(self, content: dict[str, Any]) -> dict[str, Any]:
        key = content["edge"]
        if self.mode == "compare":
            ids = self._sides.get(key, {"a": [], "b": []})
            return {
                "type": "inputs",
                "edge": key,
                "a": [_jsonable(i) for i in ids["a"][:_LISTED]],
                "b": [_jsonable(i) for i in ids["b"][:_LISTED]],
                "count_a": len(ids["a"]),
                "count_b": len(ids["b"]),
            }
        taken = self._ids.get(key, [])
        return {"type": "inputs", "edge": key, "ids": [_jsonable(i) for i in taken[:_LISTED]], "count": len(taken)}

    def __repr__(self) -> str:
        # Deterministic (no memory address), so saved notebooks compare cleanly.
        return f"BatchView(graph={self._graph_name!r}, mode={self.mode!r})"

    def picture(self) -> tuple[str, str]:
        """The view as a picture (SVG), and its caption: how many runs took each edge and how
        the batch stands (or the two versions' edges, compared)."""
        frame = batch_frame(self.mode, self.counts, self.edges, self.compared)
        return to_svg(self.dag, frame), caption(self.dag, frame)


_BATCH_HANDLERS: Mapping[str, Callable[[BatchView, dict[str, Any]], dict[str, Any] | None]] = handlers_of(
    "batch", {"hello": BatchView._hello, "inputs": BatchView._inputs_through, "stop": BatchView._stop}
)


def _edge_key(source: str, target: str) -> str:
    return f"{source}\u2192{target}"


def _jsonable(value: Any) -> Any:
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    return repr(value)


def _path_edges(path: Any, outcome: str) -> list[tuple[str, str]]:
    """The edges a path of nodes walked, each once, START's and (a run that ended done) END's included."""
    nodes = [START, *path] + ([END] if outcome == "done" else [])
    edges: dict[tuple[str, str], None] = {}
    for source, target in zip(nodes, nodes[1:], strict=False):
        edges[(source, target)] = None
    return list(edges) if path else []


def _merged(old: dict[str, Any], new: dict[str, Any]) -> dict[str, Any]:
    """The new graph's DAG with the nodes and edges only the old one has added (top level)."""
    ids = {node["id"] for node in new.get("nodes", [])}
    pairs = {(edge["from"], edge["to"]) for edge in new.get("edges", [])}
    nodes = list(new.get("nodes", [])) + [node for node in old.get("nodes", []) if node["id"] not in ids]
    edges = list(new.get("edges", [])) + [
        {**edge, "old": True} for edge in old.get("edges", []) if (edge["from"], edge["to"]) not in pairs
    ]
    return {**new, "nodes": nodes, "edges": edges}


def _with_edges(dag: dict[str, Any], sides: dict[str, Any]) -> dict[str, Any]:
    """``dag`` with a node for every node and an edge for every edge the paths walked that it lacks."""
    nodes = list(dag.get("nodes", []))
    ids = {node["id"] for node in nodes}
    edges = list(dag.get("edges", []))
    pairs = {_edge_key(edge["from"], edge["to"]) for edge in edges}
    for key in sides:
        source, target = key.split("\u2192", 1)
        for node in (source, target):
            if node not in ids:
                ids.add(node)
                kind = "start" if node == START else "end" if node == END else "function"
                nodes.append({"id": node, "kind": kind, "approval": False})
        if key not in pairs:
            pairs.add(key)
            edges.append({"from": source, "to": target, "label": "", "unconditional": True, "walked": True})
    return {**dag, "nodes": nodes, "edges": edges}


def _show(view: BatchView, mermaid: str | None) -> None:
    view.show({"text/markdown": f"```mermaid\n{mermaid}```\n"} if mermaid else {})


def show_batch(batch: Any) -> BatchView:
    """Display a view that follows ``batch`` below the current cell (with a mermaid fallback)."""
    view = BatchView.for_batch(batch)
    graph = batch.graph
    _show(view, to_mermaid(graph) if hasattr(graph, "compile") else None)
    return view


def show_comparison(table: Any, a: Any, b: Any) -> BatchView:
    """Display the view of a comparison's ``table`` (``a`` and ``b``: the graphs, or tables)."""
    graph = b if hasattr(b, "compile") else None
    before = a if hasattr(a, "compile") and graph is not None else None
    view = BatchView.for_comparison(table, graph, before)
    _show(view, None)
    return view
