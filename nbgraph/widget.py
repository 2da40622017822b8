"""The live graph view: ``GraphView`` (an anywidget) and the observer that feeds it a run.

The engine runs as a task in the kernel's event loop. The observer wakes on a timer
(``max_rate`` times a second), reads the steps recorded since it last looked, and
sends one update, so the browser gets the same few messages a second however fast
the graph runs, and a step costs the run nothing extra. Pauses and the end of the
run are sent at once. What a flush sends is cumulative (visit counts, fired edges,
the pending requests, the final state), so coalescing never loses a node's entry or
exit, an interrupt, or the outcome.

Parallel branches and sub-graphs: a flush sends every node being called now (several
while branches run), each branch target's progress (a map's 3 of 4 done, 1 failed) and
the counts inside sub-graphs keyed by path (``research/search``), so an opened frame
shows its own. A resumed run re-runs the nodes its pauses stopped in from their start;
the view hears of it through ``node-enter`` events, which it takes only during the
resumed run's first step, the only step in which a node can run again that way.

Nobody to click: a notebook executed headless (nbconvert, papermill, nbval) shows its
views to no browser, so a run waiting there for a person would wait for ever. Each
view's module says hello from the browser when it loads; a run whose pause has waited
``NBGRAPH_HEADLESS_WAIT`` seconds (default 30, 0: for ever) in a kernel no browser has
said hello to ends ``interrupted``, with a reason that says how to answer from code.

Import this module only where widgets are wanted: anywidget reads the bundled ES
module when the class is created.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections import deque
from pathlib import Path
from typing import Any

import anywidget
import traitlets

from .errors import NbgraphError
from .export import to_dag, to_mermaid
from .history import tally, tally_within

__all__ = ["GraphView", "RunObserver", "graph_mimebundle", "show_run"]

_STATIC = Path(__file__).parent / "static"
_HEADLESS_WAIT = 30.0
_NO_BROWSER = (
    "nobody answered within {wait:g} s and no browser shows this notebook (a headless run: nbconvert, "
    "papermill, nbval?); answer from code before `await run` with run.answer(value), run.approve() or "
    "run.respond(pause.id, value), or run the notebook with NBGRAPH_AUTO_ANSWER=1 if it answers its own "
    "pauses; NBGRAPH_HEADLESS_WAIT sets the wait (0: for ever); g.resume(result, answer) goes on from here"
)


class _Browser:
    """Whether a browser has loaded an nbgraph view in this kernel (it then says hello)."""

    seen = False


def _headless_wait() -> float:
    """Seconds a pause waits for a browser before a run gives up on being answered."""
    text = os.environ.get("NBGRAPH_HEADLESS_WAIT")
    if text is None:
        return _HEADLESS_WAIT
    try:
        wait = float(text)
    except ValueError:
        wait = -1.0
    if not wait >= 0:
        raise ValueError(f"NBGRAPH_HEADLESS_WAIT must be a number of seconds (0: wait for ever), not {text!r}")
    return wait
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
    """node path -> completed executions (``research/search`` inside a sub-graph)."""
    fired = traitlets.Dict().tag(sync=True)
    """"source→target" -> times the edge fired ("research/a→research/b" inside a sub-graph)."""
    pending = traitlets.List().tag(sync=True)
    """Open requests (Pause dicts) the panel offers to answer."""
    text = traitlets.Unicode("").tag(sync=True)
    """The running node's streamed text."""
    log = traitlets.List().tag(sync=True)
    """The last lines of the run's log."""
    running = traitlets.List().tag(sync=True)
    """Paths of the nodes being called now (several while branches run, ``outer/inner`` too)."""
    branches = traitlets.Dict().tag(sync=True)
    """path -> progress of the branches run there last: total, done, failed, running, paused, waiting."""
    reruns = traitlets.Dict().tag(sync=True)
    """path -> times a resume ran the node again from its start up to an answered pause."""
    breakpoints = traitlets.Dict().tag(sync=True)
    """``{"before": [paths], "after": [paths]}``: where runs pause; a click on a node's left
    edge (or "b" on it) toggles the one before it."""
    problems = traitlets.List().tag(sync=True)
    """What the run found wrong once it has ended (``result.problems()``: kind, message, node
    or edge, path); the graph's own problems are in ``dag``."""
    costs = traitlets.Dict().tag(sync=True)
    """node path -> ``{"tokens", "cost"}`` its steps have used so far (nodes that used some)."""
    frames = traitlets.List().tag(sync=True)
    """The run's replay frames for the step slider, each as what changed since the one before:
    step, path, branch, error, and the new counts of the visits and fired edges it changed
    (never the state: the inspector asks for a step's). Empty until a run has ended."""

    def __init__(self, graph: Any = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._graph_name = getattr(graph, "name", None) or self.dag.get("name", "graph")
        self.observer: RunObserver | None = None
        self._replay: Any = None  # the frames the slider scrubs, once there are any
        self._builder = _builder_of(graph)
        if graph is not None:
            self.dag = to_dag(graph)
            shown = graph.declared_breakpoints if graph is self._builder else getattr(graph, "breakpoints", None)
            self.breakpoints = _breakpoints_json(shown)
        self.on_msg(self._on_message)

    @classmethod
    def for_run(cls, run: Any, *, max_rate: float = 20.0) -> GraphView:
        """A view bound to a started run: it animates the run and answers its pauses."""
        view = cls(run.plan)  # what the run walks, even if the graph is redefined meanwhile
        view.observer = RunObserver(view, run, max_rate=max_rate)
        return view

    @classmethod
    def replay(cls, source: Any, graph: Any = None, *, checkpointer: Any = None) -> GraphView:
        """A view of a run that has ended, with a step slider at its last frame; no node runs.

        ``source``: a ``RunResult`` or ``Run``, a :class:`~nbgraph.replay.Replay`, a thread
        id with ``checkpointer=`` (or a ``(checkpointer, thread)`` pair), or an NDJSON
        trace (its text or a file's path). ``graph`` is the graph a thread or trace ran.

        >>> GraphView.replay("run.ndjson", g)      # doctest: +SKIP
        """
        from .replay import Replay, replay

        if isinstance(source, tuple) and len(source) == 2 and checkpointer is None:
            checkpointer, source = source
        frames = source if isinstance(source, Replay) else replay(source, checkpointer=checkpointer, graph=graph)
        view = cls(frames.plan)
        view.show_frames(frames)
        records = frames.records
        top = [record for record in records if "/" not in record.path]
        view.status = {
            "state": "done", "outcome": frames.outcome, "reason": frames.reason,
            "step": top[-1].step if top else 0, "max_steps": frames.plan.max_steps,
            "tokens": sum(record.tokens for record in records), "cost": sum(record.cost for record in records),
            "elapsed": round(sum(record.duration for record in top), 2), "current": None,
        }
        last = frames.frames[-1]
        view.visits = dict(last.visits)
        view.fired = {_edge_key(*edge): count for edge, count in last.fired.items()}
        view.log = [_exit_line(r.step, r.path, r.branch, r.duration) for r in records[-_LOG_LINES:]]
        return view

    def show_frames(self, frames: Any) -> None:
        """Give the slider these replay frames (sent as changes from frame to frame, no state)."""
        self._replay = frames
        self.frames = _compact(frames)

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
        kind = content["type"]
        if kind == "hello":
            _Browser.seen = True  # a browser shows this kernel's views: its people can answer
            return True
        if kind == "inspect":
            self.send(self.inspection(content))
            return True
        if kind == "toggle-breakpoint":
            return self.toggle_breakpoint(content.get("path"))
        observer = self.observer
        if observer is None:
            raise ValueError("this view shows a graph, not a run: there is nothing to answer")
        run = observer.run
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
        raise ValueError(f"unknown message type {kind!r}; expected hello, inspect, toggle-breakpoint, answer, approve, deny, stop or steer")

    def inspection(self, content: dict[str, Any]) -> dict[str, Any]:
        """The inspector's message for ``{"type": "inspect", ...}``: a step of the run.

        The step is named by ``step`` (a step of the run's own graph; with ``where``, the
        log line's place: ``research/search`` or ``ask[1]``), ``node`` (its latest step)
        or ``frame`` (a frame of the slider). Nothing runs. Raises ValueError for a step
        the run does not have.
        """
        from .inspection import inspect_step

        source: Any = self.observer.run if self.observer is not None else self._replay
        if source is None:
            raise ValueError("this view shows a graph, not a run: there is no step to inspect")
        records = source.history if self.observer is not None else source.records
        frame = content.get("frame")
        node = content.get("node")
        step = content.get("step")
        if frame is not None:
            if self._replay is None or not isinstance(frame, int) or isinstance(frame, bool):
                raise ValueError(f"an 'inspect' message's frame must be a frame index of an ended run, not {frame!r}")
            if not 0 < frame < len(self._replay.frames):
                raise ValueError(f"the run has frames 1 to {len(self._replay.frames) - 1} to inspect, not {frame}")
            seen = self._replay.inspect(frame)
        elif isinstance(node, str):
            record = next((r for r in reversed(records) if r.path == node), None)
            if record is None:
                raise ValueError(f"node {node!r} has not run in this run: there is no step of it to inspect")
            seen = inspect_step(source, record)
        elif isinstance(step, int) and not isinstance(step, bool):
            where = content.get("where")
            if isinstance(where, str):
                record = next((r for r in reversed(records) if r.step == step and _where(r.path, r.branch) == where), None)
                if record is None:
                    raise ValueError(f"the run has no step {step} at {where!r} to inspect")
                seen = inspect_step(source, record)
            else:
                seen = inspect_step(source, step)
        else:
            raise ValueError("an 'inspect' message needs a step (a number), a node (a path) or a frame")
        return {"type": "inspection", **seen.model_dump(mode="json")}

    def toggle_breakpoint(self, path: Any) -> bool:
        """Add the breakpoint before node ``path`` (``research/search`` inside a sub-graph), or remove it.

        It is set on the view's graph (``g.breakpoints``), so the graph's next runs pause
        there. A run under way that was started with breakpoints pauses there from its next
        node on; one started without any is not watched for them, so the breakpoint waits for
        the next run (the view's log says so). Returns whether the breakpoint is set now.

        Raises:
            ValueError: ``path`` is not the path of a node drawn in this view.
        """
        if not isinstance(path, str) or not path:
            raise ValueError(f"a 'toggle-breakpoint' message needs a node's path, got {path!r}")
        if path not in _node_paths(self.dag):
            raise ValueError(f"no breakpoint at {path!r}: graph {self._graph_name!r} has no node there")
        builder = self._builder
        if builder is None:
            raise ValueError("this view has no graph to set a breakpoint on")
        declared = builder.declared_breakpoints
        before = set(declared.before) if declared is not None else set()
        after = sorted(declared.after) if declared is not None else []
        shown = set(self.breakpoints.get("before") or ())
        on = path not in shown
        (before.add if on else before.discard)(path)
        builder.breakpoints(before=sorted(before), after=after)
        observer = self.observer
        breaks = observer.live_breaks() if observer is not None else None
        if breaks is not None:
            from .engine.breaks import Breaks

            now = set(breaks.before)
            (now.add if on else now.discard)(path)
            observer.run._walker.set_breaks(Breaks(frozenset(now), breaks.after, breaks.stepping))
            after = sorted(breaks.after)
        shown = (shown | {path}) if on else (shown - {path})
        self.breakpoints = {"before": sorted(shown), "after": sorted(set(self.breakpoints.get("after") or ()) | set(after))}
        if observer is not None:
            later = "" if breaks is not None or observer._done else " from the next run (this run was started without breakpoints)"
            observer.note(f"breakpoint before {path} {'set' if on else 'removed'}{later}")
        return on


def _builder_of(graph: Any) -> Any:
    """The Graph a view sets breakpoints on: the graph itself, or the builder a plan came from."""
    if graph is None or hasattr(graph, "declared_breakpoints"):
        return graph
    builder = getattr(graph, "graph", None)
    return builder if hasattr(builder, "declared_breakpoints") else None


def _breakpoints_json(breakpoints: Any) -> dict[str, list[str]]:
    if breakpoints is None:
        return {"before": [], "after": []}
    return {"before": sorted(breakpoints.before), "after": sorted(breakpoints.after)}


def _node_paths(dag: dict[str, Any], prefix: str = "") -> set[str]:
    paths: set[str] = set()
    for node in dag.get("nodes") or ():
        if node.get("kind") in ("start", "end"):
            continue
        path = prefix + node["id"]
        paths.add(path)
        if node.get("graph"):
            paths |= _node_paths(node["graph"], path + "/")
    return paths


def _edge_key(source: str, target: str) -> str:
    return f"{source}\u2192{target}"


def _where(path: str, branch: str | None) -> str:
    # A map's branch is named after its node (ask[1]): say it once.
    return path if not branch else branch if branch.startswith(f"{path}[") else f"{path} [{branch}]"


def _compact(frames: Any) -> list[dict[str, Any]]:
    """Replay frames as the slider takes them: each with only the counts it changed."""
    out: list[dict[str, Any]] = []
    visits: Any = {}
    fired: Any = {}
    for frame in frames.frames:
        out.append({
            "step": frame.step, "path": frame.path, "branch": frame.branch, "error": frame.error,
            "visits": {k: v for k, v in frame.visits.items() if visits.get(k) != v},
            "fired": {_edge_key(*k): v for k, v in frame.fired.items() if fired.get(k) != v},
        })
        visits, fired = frame.visits, frame.fired
    return out


def _exit_line(step: int, path: str, branch: str | None, duration: float) -> str:
    return f"{step:>4}  {_where(path, branch)}  {duration * 1000:.1f} ms"


_FINAL = ("done", "failed")
_COUNTS = ("done", "failed", "running", "paused", "waiting")


def _counts(statuses: dict[str, str]) -> dict[str, int]:
    counts = dict.fromkeys(_COUNTS, 0)
    for status in statuses.values():
        counts[status] = counts.get(status, 0) + 1
    return {"total": len(statuses), **counts}


class RunObserver:
    """Feeds a :class:`GraphView` the progress of a run, at most ``max_rate`` times a second.

    It reads the steps from ``run.history`` and the nodes under way from
    ``run.running`` / ``run.branches`` when it flushes, so a step costs the run
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
        self._progress: dict[str, dict[str, str]] = {}  # path -> branch -> status, the latest superstep there
        self._live: frozenset[str] = frozenset()  # paths with a superstep under way at the last flush
        self._reruns: dict[str, int] = {}
        self._costs: dict[str, list[Any]] = {}  # path -> [tokens, cost] of its steps
        walker = getattr(run, "_walker", None)
        # A run started with breakpoints is watched for them at every node: a click can add one.
        self._watched = walker is not None and walker.breaks is not None
        self._sent: tuple[Any, ...] = ()  # what run.running / run.branches / run.pending were when last sent
        self._log: deque[str | tuple[int, str, str | None, float]] = deque(maxlen=_LOG_LINES)
        self._text: list[str] = []
        self._text_len = 0
        self._text_step = -1
        self._dirty = False
        self._done = False
        self._ended: Any = None
        self._last_flush = 0.0
        self._handle: asyncio.TimerHandle | None = None
        self._headless_wait = _headless_wait()
        self._no_browser: asyncio.TimerHandle | None = None
        self._unsubscribe = run.subscribe(self.on_event, steps=False)
        self._unwatch: Any = None
        self._flush()

    def on_event(self, event: Any) -> None:
        kind = event.type
        if kind == "text-delta":
            if event.step != self._text_step:
                self._text, self._text_len, self._text_step = [], 0, event.step
            if self._text_len < _TEXT_CHARS:
                self._text.append(event.text)
                self._text_len += len(event.text)
                self._dirty = True
            return
        if kind == "run-start":
            if event.resumed:
                # Only the first step of a resumed run can run a node again from its start:
                # hear node-enter events until that step has routed on.
                self._unwatch = self.run.subscribe(self._watch_reruns)
            return
        self._catch_up()  # keep the log in order: the steps so far come first
        self._dirty = True
        if kind == "tool-call":
            self._log.append(f"      tool {event.name}({json.dumps(event.args, default=str)[:80]})")
        elif kind == "tool-result" and event.is_error:
            self._log.append(f"      tool {event.name} failed: {str(event.result)[:80]}")
        elif kind == "interrupt":
            pause = event.pause
            where = ", ".join(filter(None, ("/" in pause.path and pause.path, pause.branch)))
            self._log.append(f"      waiting{f' ({where})' if where else ''}: {pause.prompt}")
            if not _Browser.seen and self._no_browser is None and self._headless_wait > 0:
                self._no_browser = self._loop.call_later(self._headless_wait, self._give_up, True)
            self._flush()
        elif kind == "resume":
            where = ", ".join(filter(None, ("/" in event.path and event.path, event.branch)))
            self._log.append(f"      answered{f' ({where})' if where else ''}")
            self._flush()
        elif kind == "error":
            self._log.append(f"      error: {event.error}")
        elif kind == "done":
            self._status.update(state="done", outcome=event.outcome, reason=event.reason)
            self._done = True
            self._unsubscribe()
            self._stop_watching()
            if self._no_browser is not None:
                self._no_browser.cancel()
            self._show_problems()
            self._loop.call_soon(self._show_problems)  # once the run has its result: how it ended too
            self._frames()
            self._flush()

    def _frames(self) -> None:
        """The run has ended: give the view's slider its frames (built once, no node runs)."""
        from .replay import Replay

        try:
            frames = Replay.from_result(self.run)
        except (NbgraphError, ValueError, TypeError) as exc:  # the view still shows the run without a slider
            self._log.append(f"      no replay: {exc}")
            return
        self._ended = frames  # sent with the final flush, in the same message

    def _show_problems(self) -> None:
        """The problems the run met (``result.problems()``), on the drawing."""
        from .inspection import run_problems

        self.view.problems = [problem.model_dump(mode="json") for problem in run_problems(self.run)]

    def live_breaks(self) -> Any:
        """The breakpoints of the run under way, if it is watched for them (None: it is not, or it has ended)."""
        if not self._watched or self._done:
            return None
        from .engine.breaks import Breaks

        return self.run._walker.breaks or Breaks()

    def _give_up(self, first_look: bool) -> None:
        """A pause has waited its time and no browser has said hello: nobody can answer."""
        self._no_browser = None
        if _Browser.seen or self._done or not self.run.pending:
            return
        if first_look:
            # A cell that kept the loop busy may have held the hello back: let the kernel read it.
            self._no_browser = self._loop.call_later(0.5, self._give_up, False)
            return
        self.run.stop_waiting(_NO_BROWSER.format(wait=self._headless_wait))

    def _watch_reruns(self, event: Any) -> None:
        kind = event.type
        if kind == "node-enter":
            if event.rerun:
                path = event.path or event.node
                self._reruns[path] = self._reruns.get(path, 0) + 1
                self._catch_up()
                self._log.append(f"      rerun: {_where(path, event.branch)} runs again from its start, up to its answered pause")
                self._dirty = True
        elif kind == "route" and event.path and "/" not in event.path:
            self._stop_watching()  # the first step has routed on: no node can re-run any more

    def _stop_watching(self) -> None:
        if self._unwatch is not None:
            self._unwatch()
            self._unwatch = None

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
        visits, fired = self._visits, self._fired
        tally(fresh, visits, fired)
        status, log = self._status, self._log
        levels: set[str] = set()
        batches: dict[str, dict[str, str]] = {}
        for record in fresh:
            status["tokens"] += record.tokens
            status["cost"] += record.cost
            if record.tokens or record.cost:
                spent = self._costs.setdefault(record.path, [0, 0.0])
                spent[0] += record.tokens
                spent[1] += record.cost
            log.append((record.step, record.path, record.branch, record.duration))  # formatted when sent
            if "/" in record.path:
                levels.add(record.path.rpartition("/")[0])
            if record.branch is not None:
                # A superstep's records arrive together when it settles: its branches' final states.
                batch = batches.setdefault(record.path, {})
                if record.branch in batch:
                    batch.clear()  # the same branch again: a later superstep at the same node
                batch[record.branch] = "failed" if record.error else "done"
        for level in levels:  # counts inside sub-graphs, keyed by path
            inner_visits: dict[str, int] = {}
            inner_fired: dict[tuple[str, str], int] = {}
            tally_within(fresh, level, inner_visits, inner_fired)
            for node, count in inner_visits.items():
                key = f"{level}/{node}"
                visits[key] = visits.get(key, 0) + count
            for (source, target), count in inner_fired.items():
                edge = (f"{level}/{source}", f"{level}/{target}")
                fired[edge] = fired.get(edge, 0) + count
        for path, batch in batches.items():
            if path in self._live and path in self._progress:
                self._progress[path].update(batch)  # the superstep seen under way at the last flush
            else:
                self._progress[path] = batch
        self._seen += len(fresh)

    def _snapshot(self) -> tuple[tuple[str, ...], tuple[Any, ...], tuple[Any, ...]]:
        run = self.run
        return tuple(dict.fromkeys(run.running)), tuple(run.branches), run.pending

    def _tick(self) -> None:
        self._handle = None
        if self._done:
            return
        run = self.run
        idle = not self._dirty and run.step == self._status["step"] and self._snapshot() == self._sent
        if idle and (run.pending or time.perf_counter() - self._last_flush < 1.0):
            # Nothing new (a long node, a slow model, a person thinking): the clock, once a second.
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
        self._sent = running, branches, pending = self._snapshot()
        if not self._done:
            status["state"] = "paused" if pending else "running"
            # An approval waits on a node that has already run: keep it highlighted.
            status["current"] = (pending[0].path or pending[0].node) if pending else run.upcoming
        else:
            status["current"] = None
        live: dict[str, dict[str, str]] = {}
        for state in branches:
            live.setdefault(state.path, {})[state.branch] = state.status
        self._progress.update(live)
        self._live = frozenset(live)
        if self._done:  # branches cut short by the end (a failure, a stop) did not finish
            waiting = {(pause.path or pause.node, pause.branch) for pause in pending}
            for path, statuses in self._progress.items():
                for branch, state in statuses.items():
                    if state not in _FINAL and (path, branch) not in waiting:
                        statuses[branch] = "failed"
        with view.hold_sync():  # one comm message for all the traits that changed
            view.status = dict(status)
            view.visits = dict(self._visits)
            view.fired = {_edge_key(*edge): count for edge, count in self._fired.items()}
            view.pending = [pause.model_dump(mode="json") for pause in pending]
            view.running = list(running)
            view.branches = {path: _counts(statuses) for path, statuses in self._progress.items()}
            view.reruns = dict(self._reruns)
            view.costs = {path: {"tokens": tokens, "cost": round(cost, 6)} for path, (tokens, cost) in self._costs.items()}
            view.text = "".join(self._text)
            view.log = [line if type(line) is str else _exit_line(*line) for line in self._log]
            if self._ended is not None:
                view.show_frames(self._ended)
                self._ended = None
        self.flushes += 1
        if not self._done:
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
