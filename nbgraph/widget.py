"""The live graph view: ``GraphView`` (an anywidget) and the observer that feeds it a run.

The engine runs as a task in the kernel's event loop. The observer wakes on a timer
(``max_rate`` times a second), reads the steps recorded since it last looked, and
sends one update, so the browser gets the same few messages a second however fast
the graph runs, and a step costs the run nothing extra. Pauses and the end of the
run are sent at once. What a flush sends is cumulative (visit counts, fired edges,
the pending requests, the final state), so coalescing never loses a node's entry or
exit, an interrupt, or the outcome.

Import this module only where widgets are wanted: anywidget reads the bundled ES
module when the class is created.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections import deque
from pathlib import Path
from typing import Any

import anywidget
import traitlets

from .errors import NbgraphError
from .export import to_dag, to_mermaid
from .history import tally

__all__ = ["GraphView", "RunObserver", "graph_mimebundle", "show_run"]

_STATIC = Path(__file__).parent / "static"
_LOG_LINES = 200
_TEXT_CHARS = 4000


class GraphView(anywidget.AnyWidget):
    """A graph drawn top to bottom, and the state of a run on it when bound to one."""

    _esm = _STATIC / "widget.js"
    _css = _STATIC / "widget.css"

    dag = traitlets.Dict().tag(sync=True)
    """DAG JSON of the graph (nodes, edges with labels)."""
    status = traitlets.Dict().tag(sync=True)
    """state, outcome, reason, step, max_steps, tokens, cost, elapsed, current."""
    visits = traitlets.Dict().tag(sync=True)
    """node -> completed executions."""
    fired = traitlets.Dict().tag(sync=True)
    """"source→target" -> times the edge fired."""
    pending = traitlets.List().tag(sync=True)
    """Open requests (Pause dicts) the panel offers to answer."""
    text = traitlets.Unicode("").tag(sync=True)
    """The running node's streamed text."""
    log = traitlets.List().tag(sync=True)
    """The last lines of the run's log."""

    def __init__(self, graph: Any = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._graph_name = getattr(graph, "name", None) or self.dag.get("name", "graph")
        self.observer: RunObserver | None = None
        if graph is not None:
            self.dag = to_dag(graph)
        self.on_msg(self._on_message)

    @classmethod
    def for_run(cls, run: Any, *, max_rate: float = 20.0) -> GraphView:
        """A view bound to a started run: it animates the run and answers its pauses."""
        view = cls(run.plan)  # what the run walks, even if the graph is redefined meanwhile
        view.observer = RunObserver(view, run, max_rate=max_rate)
        return view

    def __repr__(self) -> str:
        # Deterministic (no memory address), so saved notebooks compare cleanly.
        return f"GraphView(graph={self._graph_name!r})"

    # -- clicks from the browser -----------------------------------------------------

    def _on_message(self, _widget: Any, content: Any, _buffers: Any) -> None:
        try:
            self.handle(content)
        except (NbgraphError, ValueError, TypeError) as exc:
            self.send({"type": "error", "message": str(exc)})

    def handle(self, content: Any) -> bool:
        """Apply one message from the view: answer, approve, deny, stop or steer.

        Returns False for an answer to a pause that is no longer open (a stale or
        duplicate click, ignored). Raises ValueError for a malformed message.
        """
        if not isinstance(content, dict) or not isinstance(content.get("type"), str):
            raise ValueError(f"the view sent a message without a type: {json.dumps(content, default=str)[:200]}")
        observer = self.observer
        if observer is None:
            raise ValueError("this view shows a graph, not a run: there is nothing to answer")
        run = observer.run
        kind = content["type"]
        if kind in ("answer", "approve", "deny"):
            pause_id = content.get("pause_id")
            if not isinstance(pause_id, str):
                raise ValueError(f"a {kind!r} message needs a pause_id")
            if kind == "answer":
                if "value" not in content:
                    raise ValueError("an 'answer' message needs a value")
                value: Any = content["value"]
            elif kind == "approve":
                update = content.get("update")
                if update is not None and not isinstance(update, dict):
                    raise ValueError("an approval's update must be an object of state fields")
                value = {"approved": True, "update": update}
            else:
                value = False
            return run.respond(pause_id, value)
        if kind == "stop":
            run.cancel()
            return True
        if kind == "steer":
            text = content.get("text")
            if not isinstance(text, str):
                raise ValueError("a 'steer' message needs text")
            run.steer(text)
            observer.note(f"steer: {text}")
            return True
        raise ValueError(f"unknown message type {kind!r}; expected answer, approve, deny, stop or steer")


def _edge_key(source: str, target: str) -> str:
    return f"{source}\u2192{target}"


def _exit_line(step: int, node: str, duration: float) -> str:
    return f"{step:>4}  {node}  {duration * 1000:.1f} ms"


class RunObserver:
    """Feeds a :class:`GraphView` the progress of a run, at most ``max_rate`` times a second.

    It reads the steps from ``run.history`` when it flushes, so a step costs the run
    nothing; it listens only for the rare events (streamed text, tool calls, pauses,
    errors, the end), and flushes at once on pauses and at the end.
    """

    def __init__(self, view: GraphView, run: Any, *, max_rate: float = 20.0) -> None:
        self.view = view
        self.run = run
        self.interval = 1.0 / max_rate
        self.flushes = 0
        self._loop = asyncio.get_running_loop()
        self._t0 = time.perf_counter()
        self._status: dict[str, Any] = {
            "state": "running",
            "outcome": None,
            "reason": None,
            "step": run.step,
            "max_steps": run.plan.max_steps,
            "tokens": 0,
            "cost": 0.0,
            "elapsed": 0.0,
            "current": None,
        }
        self._seen = run.recorded  # steps before this view (a resumed run's) are not replayed
        self._visits: dict[str, int] = {}
        self._fired: dict[tuple[str, str], int] = {}
        self._log: deque[str | tuple[int, str, float]] = deque(maxlen=_LOG_LINES)
        self._text: list[str] = []
        self._text_len = 0
        self._text_step = -1
        self._dirty = False
        self._done = False
        self._last_flush = 0.0
        self._handle: asyncio.TimerHandle | None = None
        self._unsubscribe = run.subscribe(self.on_event, steps=False)
        self._flush()

    def on_event(self, event: Any) -> None:
        kind = event.type
        status = self._status
        if kind == "text-delta":
            if event.step != self._text_step:
                self._text, self._text_len, self._text_step = [], 0, event.step
            if self._text_len < _TEXT_CHARS:
                self._text.append(event.text)
                self._text_len += len(event.text)
                self._dirty = True
            return
        self._catch_up()  # keep the log in order: the steps so far come first
        self._dirty = True
        if kind == "tool-call":
            self._log.append(f"      tool {event.name}({json.dumps(event.args, default=str)[:80]})")
        elif kind == "tool-result" and event.is_error:
            self._log.append(f"      tool {event.name} failed: {str(event.result)[:80]}")
        elif kind == "interrupt":
            status["state"] = "paused"
            # An approval waits on a node that has already run: keep it highlighted.
            status["current"] = event.pause.node
            self._log.append(f"      waiting: {event.pause.prompt}")
            self._flush()
        elif kind == "resume":
            status["state"] = "running"
            self._log.append("      answered")
            self._flush()
        elif kind == "error":
            self._log.append(f"      error: {event.error}")
        elif kind == "done":
            status.update(state="done", outcome=event.outcome, reason=event.reason)
            self._done = True
            self._unsubscribe()
            self._flush()

    def note(self, line: str) -> None:
        """Add a line to the view's log."""
        self._catch_up()
        self._log.append(f"      {line}")
        self._flush()

    def _catch_up(self) -> None:
        """Count the steps recorded since the last look."""
        fresh = self.run.history_since(self._seen)
        if not fresh:
            return
        tally(fresh, self._visits, self._fired)
        status, log = self._status, self._log
        for record in fresh:
            status["tokens"] += record.tokens
            status["cost"] += record.cost
            log.append((record.step, record.path, record.duration))  # formatted when sent
        self._seen += len(fresh)

    def _tick(self) -> None:
        self._handle = None
        if self._done or self._status["state"] == "paused":
            return  # the resume or the end flushes and restarts the timer
        idle = not self._dirty and self.run.step == self._status["step"]
        if idle and time.perf_counter() - self._last_flush < 1.0:
            # Nothing new (a long node, a slow model): just the clock, once a second.
            self._handle = self._loop.call_later(self.interval, self._tick)
        else:
            self._flush()

    def _flush(self) -> None:
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None
        self._catch_up()
        run, status, view = self.run, self._status, self.view
        self._last_flush = now = time.perf_counter()
        self._dirty = False
        status["elapsed"] = round(now - self._t0, 2)
        status["step"] = run.step
        if status["state"] == "running":
            status["current"] = run.upcoming
        elif status["state"] == "done":
            status["current"] = None
        pending = [pause.model_dump(mode="json") for pause in run.pending]
        with view.hold_sync():  # one comm message for all the traits that changed
            view.status = dict(status)
            view.visits = dict(self._visits)
            view.fired = {_edge_key(*edge): count for edge, count in self._fired.items()}
            view.pending = pending
            view.text = "".join(self._text)
            view.log = [line if type(line) is str else _exit_line(*line) for line in self._log]
        self.flushes += 1
        if not self._done and status["state"] != "paused":
            self._handle = self._loop.call_later(self.interval, self._tick)


def graph_mimebundle(graph: Any) -> dict[str, Any]:
    """The widget part of a displayed Graph's mimebundle."""
    bundle = GraphView(graph)._repr_mimebundle_()
    data = bundle[0] if isinstance(bundle, tuple) else bundle
    return {k: v for k, v in data.items() if k != "text/plain"}


def show_run(run: Any) -> GraphView:
    """Display a live view of ``run`` below the current cell (with a mermaid fallback)."""
    from IPython.display import display

    view = GraphView.for_run(run)
    bundle = view._repr_mimebundle_()
    data = dict(bundle[0] if isinstance(bundle, tuple) else bundle)
    data["text/markdown"] = f"```mermaid\n{to_mermaid(run.plan)}```\n"
    display(data, raw=True)
    return view
