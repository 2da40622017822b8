"""The live graph view: ``GraphView``, an anywidget that draws a graph and a run on it.

A view is bound to one run at a time (a :class:`~nbgraph._observer.RunObserver` feeds it).
It can be bound to another in place: a fork made by a click ("Fork from here", or onto a
graph redefined while its run waited), or the resume that an answer to an ended,
``interrupted`` run starts. A fork keeps the run it came from drawn beside it
(``previous``), so both paths show on the same graph.

The messages between a view and the kernel are declared once, in ``static/protocol.json``
(:mod:`nbgraph._protocol` checks them); what each click does is in :mod:`nbgraph._graph_clicks`,
and the breakpoints a view draws and sets in :mod:`nbgraph._view_breakpoints`.

Import this module only where widgets are wanted: anywidget reads the bundled ES
module when the class is created.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import anywidget
import traitlets

from ._graph_clicks import GRAPH_HANDLERS
from ._inspector import inspection_message
from ._module import ModuleView
from ._observer import RunObserver, place
from ._pictured import run_frame
from ._protocol import MessageError, checked
from ._redefined import graph_redefined, latest_definition, node_redefined, run_views
from ._shown import edge_key, ended_traits, pack_frames
from ._view_breakpoints import breakpoints_json, builder_of, drop_inner_breakpoint, node_paths, shown_breakpoints
from .engine import Fork, Resume, Run
from .errors import NbgraphError
from .export import to_dag, to_mermaid
from .picture import caption, to_svg
from .secrets import redact

if TYPE_CHECKING:
    from .answering import Given
    from .viewed import ViewedRun

__all__ = [
    "GraphView",
    "MessageError",
    "RunObserver",
    "graph_mimebundle",
    "graph_redefined",
    "node_redefined",
    "show_run",
    "view_of",
]

_log = logging.getLogger("nbgraph.view")


class GraphView(ModuleView):
    """A graph drawn top to bottom, and the state of a run on it when bound to one."""

    dag = traitlets.Dict().tag(sync=True)
    """DAG JSON of the graph (nodes, edges with labels)."""
    status = traitlets.Dict().tag(sync=True)
    """state, outcome, reason, step, max_steps, tokens, cost, elapsed, current; and ``clock``, the
    kernel's time (seconds since the epoch) when sent, which a pause's deadline is counted down from."""
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
    frames = traitlets.Dict().tag(sync=True)
    """The run's replay frames for the step slider, packed (see ``pack_frames``): each frame as
    what changed since the one before: step, path, branch, error, and the new counts of the
    visits and fired edges it changed (never the state: the inspector asks for a step's).
    Empty until a run has ended."""
    kind = traitlets.Unicode("graph", read_only=True).tag(sync=True)
    """Which view the shared ES module draws (the batch view's is ``batch``)."""
    can_fork = traitlets.Bool(False).tag(sync=True)
    """The view's run has checkpoints to fork from: the inspector offers "Fork from here"."""
    previous = traitlets.Dict().tag(sync=True)
    """After a fork: the run it came from, drawn beside the new one: ``thread``, ``step`` (the
    fork's), ``visits`` and ``fired`` as in the traits of those names; empty otherwise."""
    swapped = traitlets.List().tag(sync=True)
    """Paths of the nodes whose code was swapped into this run (``run.replace_node``, a
    ``%%node`` cell re-run while it waited)."""
    redefined = traitlets.Dict().tag(sync=True)
    """The run's graph was redefined while it waited: ``graph``, ``step`` (where a fork onto the
    new definition starts) and ``note``; the view offers that fork. Empty otherwise."""
    decisions = traitlets.Dict().tag(sync=True)
    """The run's decision log: ``rows``, the latest decisions (who, verdict, where, when, via,
    reason, edits, the replay ``frame`` that keeps each once there are frames), and ``earlier``,
    how many are left out (``run.decisions`` has them all)."""
    standing = traitlets.List().tag(sync=True)
    """The standing approvals in force while the run goes on (``run.standing``): id, tool,
    scope, by, at, reason, when; each with a Revoke button."""
    can_stand = traitlets.Bool(False).tag(sync=True)
    """The view's run takes standing approvals: a tool call's box offers "Approve every later
    <tool> call in this run"."""
    identity = traitlets.Unicode("").tag(sync=True)
    """Who answers from this kernel (:func:`nbgraph.answering.identity`), as a pause's box says."""
    sides = traitlets.Dict().tag(sync=True)
    """Two runs drawn together (:meth:`side_by_side`): the comparison's JSON
    (:meth:`~nbgraph.side_by_side.SideBySide.to_json`) and ``runs``, each run's ``visits`` and
    ``fired`` as in the traits of those names; empty otherwise."""

    def __init__(self, graph: Any = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._graph_name = getattr(graph, "name", None) or self.dag.get("name", "graph")
        self.observer: RunObserver | None = None
        self.engine_run: Run | None = None
        """The engine's run the view shows (None: a run of another engine, or none)."""
        self._max_rate = 20.0
        self._replay: Any = None  # the frames the slider scrubs, once there are any
        self._builder = builder_of(graph)
        if graph is not None:
            self.dag = to_dag(graph)
            self.breakpoints = breakpoints_json(shown_breakpoints(graph, self._builder))
        self.on_msg(self._on_message)

    @classmethod
    def for_run(cls, run: Run | ViewedRun, *, max_rate: float = 20.0) -> GraphView:
        """A view bound to a started run: it animates the run and answers its pauses."""
        view = cls(run.plan)  # what the run walks, even if the graph is redefined meanwhile
        view._max_rate = max_rate
        view._bind(run)
        return view

    def _bind(self, run: Run | ViewedRun, carry: RunObserver | None = None, seen: int | None = None) -> RunObserver:
        """Show ``run`` from now on (its observer); ``carry``: the observer of the run it
        continues (its counts and log go on), ``seen``: the thread's steps already shown (None:
        those before the run)."""
        if self.observer is not None:
            self.observer.detach()
        # An engine run is also inspected, forked and resumed here, and its standing approvals
        # listed and revoked: those go to the run itself.
        self.engine_run = run if isinstance(run, Run) else None
        viewed = run.viewed if isinstance(run, Run) else run
        observer = self.observer = RunObserver(
            self, viewed, max_rate=self._max_rate, carry=carry, seen=seen, approvals=self.engine_run
        )
        self.can_fork = run.checkpointer is not None
        self.can_stand = self.engine_run is not None
        run_views.add(self)
        return observer

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
        view.show_ended(frames)
        view.can_fork = frames.origin is not None
        return view

    @classmethod
    def side_by_side(cls, a: Any, b: Any, *, labels: tuple[str, str] = ("a", "b")) -> GraphView:
        """Two runs drawn on one graph (``b``'s): each run's path in its colour, the step where
        they part marked, and the frame table with the first state difference and the diff.

        ``a``, ``b``, ``labels``: as :func:`nbgraph.side_by_side.side_by_side`; ``a`` may also
        be a :class:`~nbgraph.side_by_side.SideBySide` already made (then no ``b``).

        >>> GraphView.side_by_side(run, fork, labels=("run", "fork"))  # doctest: +SKIP
        """
        from .side_by_side import SideBySide, side_by_side

        both = a if isinstance(a, SideBySide) and b is None else side_by_side(a, b, labels=labels)
        first, second = both.replays
        view = cls(second.plan)
        view.sides = {**both.to_json(), "runs": [_path_json(first), _path_json(second)]}
        return view

    def show_ended(self, frames: Any) -> None:
        """Show the run ``frames`` replays as it ended, with the slider at its last frame; no node runs.

        ``frames``: its ``frames``, ``records``, ``outcome``, ``reason`` and ``plan`` (a
        :class:`~nbgraph.replay.Replay`, or another engine's frames of the same shape).
        """
        self._replay = frames
        for name, value in ended_traits(frames).items():
            setattr(self, name, value)

    def show_frames(self, frames: Any) -> None:
        """Give the slider these replay frames (sent as changes from frame to frame, no state)."""
        self._replay = frames
        self.frames = pack_frames(frames)

    def __repr__(self) -> str:
        # Deterministic (no memory address), so saved notebooks compare cleanly.
        return f"GraphView(graph={self._graph_name!r})"

    def picture(self) -> tuple[str, str]:
        """The view as a picture (SVG), and its caption: the graph, and the run's path, where
        it waits and how it ended (or two runs' paths side by side)."""
        frame = run_frame(
            self.status,
            self.visits,
            self.fired,
            pending=self.pending,
            running=self.running,
            frames=self.frames,
            previous=self.previous,
            sides=self.sides,
        )
        return to_svg(self.dag, frame), caption(self.dag, frame)

    # -- clicks from the browser -----------------------------------------------------

    def _on_message(self, _widget: Any, content: Any, _buffers: Any) -> None:
        # A refused answer names its pause, so the box that sent it says why.
        pause_id = content.get("pause_id") if isinstance(content, dict) else None
        about = {"pause_id": pause_id} if isinstance(pause_id, str) else {}
        try:
            self.handle(content)
        except MessageError as exc:
            _log.warning("refused a message: %s", redact(str(exc)))
            self.reply({"type": "error", "message": redact(str(exc)), **about})
        except (NbgraphError, ValueError, TypeError) as exc:
            self.reply({"type": "error", "message": redact(str(exc)), **about})

    def reply(self, message: dict[str, Any]) -> None:
        """Send the browser ``message`` (a kind of ``static/protocol.json``'s ``graph`` to the view)."""
        self.send(checked("graph", "to_view", message))

    def handle(self, content: Any) -> bool:
        """Apply one message from the view (a kind of ``static/protocol.json``'s ``graph``).

        Returns False for an answer to a pause that is no longer open (a stale or
        duplicate click, ignored). Raises :class:`MessageError` for a message the
        protocol does not allow, ValueError for one that does not fit the view's run.
        """
        kind = checked("graph", "to_kernel", content)["type"]
        return GRAPH_HANDLERS[kind](self, content)

    # -- runs started from the view ----------------------------------------------------

    def fork(self, step: int, graph: Any = None, update: Any = None) -> Any:
        """Fork the view's run after ``step`` (what "Fork from here" does) and show the fork here.

        The new run starts live with ``graph`` (default: the graph as defined now, so a
        routing cell re-run since is taken), reusing steps 1 to ``step`` (nothing before
        the fork runs again). The run it came from stays drawn beside it (``previous``); one
        still waiting for a person is stopped (``aborted``, resumable). Returns the new ``Run``.

        Raises:
            ValueError: the view shows no run with checkpoints, or ``step`` is not one of its steps.
        """
        old = self.observer
        source: Any = self.engine_run if old is not None else self._replay.origin if self._replay is not None else None
        if source is None:
            raise ValueError("this view shows no run with checkpoints to fork (a graph, or an NDJSON trace)")
        store = None
        if isinstance(source, tuple):
            store, source = source
        graph = graph if graph is not None else self.current_graph()
        if graph is None:
            raise ValueError("this view has no graph to fork with: pass graph=")
        records = self._replay.records if self._replay is not None else []
        top = source.step if hasattr(source, "step") else records[-1].step if records else 0
        if not 0 <= step <= top:
            raise ValueError(f"the run has steps 0 to {top} to fork from, not {step}")
        run = graph.start(Fork(source, step=step, update=update), checkpointer=store, display=False)
        thread = source if isinstance(source, str) else source.thread
        self.previous = {"thread": thread, "step": step, "visits": dict(self.visits), "fired": dict(self.fired)}
        if old is not None and not old.run.done:
            old.detach()
            old.run.cancel()  # it waited for a person; its fork goes on instead
        self.redefined = {}
        self.dag = to_dag(run.plan)
        self.frames = {}
        self._replay = None
        self.problems = []
        observer = self._bind(run, seen=0)  # the shared steps first, then the fork's own
        observer.note(f"fork of {thread} after step {step}: steps up to {step} are reused, nothing before runs again")
        return run

    def current_graph(self) -> Any:
        """The view's graph as defined now: the latest ``%%graph`` cell of its name, or the
        ``Graph`` it was made from (which ``g.add_edge`` and friends change in place)."""
        graph = latest_definition(self._graph_name)
        return graph if graph is not None else self._builder

    def resume(self, pause_id: str, value: Any, given: Given) -> bool:
        """Resume the view's ended ``interrupted`` run live, here, with ``value`` for ``pause_id``,
        recorded as ``given`` (and refused if the pause shows something else than ``given.shown``);
        a view of another engine's runs resumes them its own way.

        As the pause's ``reruns`` said, the node it stopped in runs again from its start.
        False when the pause is not one the run ended waiting for (a stale click).
        """
        observer = self.observer
        assert observer is not None
        result = observer.run.result()
        if result.outcome != "interrupted" or all(pause.id != pause_id for pause in result.pauses):
            return False
        graph = self.current_graph()
        if graph is None:
            raise ValueError("this view has no graph to resume with")
        resume = Resume(result, value, pause=pause_id, reason=given.reason, shown=given.shown, via=given.via)
        run = graph.start(resume, display=False)
        self._bind(run, carry=observer).note(f"resumed from its checkpoint with the answer to {pause_id}")
        return True

    def inspection(self, content: dict[str, Any]) -> dict[str, Any]:
        """The inspector's message for ``{"type": "inspect", ...}``: a step of the run.

        The step is named by ``step`` (a step of the run's own graph; with ``where``, the
        log line's place: ``research/search`` or ``ask[1]``), ``node`` (its latest step)
        or ``frame`` (a frame of the slider). Nothing runs. Raises ValueError for a step
        the run does not have.
        """
        from .inspection import inspect_step

        source: Any = self.engine_run if self.observer is not None else self._replay
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
                record = next(
                    (r for r in reversed(records) if r.step == step and place(r.path, r.branch) == where), None
                )
                if record is None:
                    raise ValueError(f"the run has no step {step} at {where!r} to inspect")
                seen = inspect_step(source, record)
            else:
                seen = inspect_step(source, step)
        else:
            raise ValueError("an 'inspect' message needs a step (a number), a node (a path) or a frame")
        return inspection_message(seen)

    def toggle_breakpoint(self, path: Any) -> bool:
        """Add the breakpoint before node ``path`` (``research/search`` inside a sub-graph), or remove it.

        It is set on the view's graph (``g.breakpoints``), so the graph's next runs pause
        there, and a live run under way pauses there from its next node on. Removing one a
        sub-graph set itself removes it from that sub-graph. Returns whether the breakpoint
        is set now.

        Raises:
            ValueError: ``path`` is not the path of a node drawn in this view.
        """
        if not isinstance(path, str) or not path:
            raise ValueError(f"a 'toggle-breakpoint' message needs a node's path, got {path!r}")
        if path not in node_paths(self.dag):
            raise ValueError(f"no breakpoint at {path!r}: graph {self._graph_name!r} has no node there")
        builder = self._builder
        if builder is None:
            raise ValueError("this view has no graph to set a breakpoint on")
        declared = builder.declared_breakpoints
        before = set(declared.before) if declared is not None else set()
        after = sorted(declared.after) if declared is not None else []
        shown = set(self.breakpoints.get("before") or ())
        on = path not in shown
        if not on and path not in before:
            drop_inner_breakpoint(builder, path)  # (one the sub-graph set itself)
        (before.add if on else before.discard)(path)
        builder.breakpoints(before=sorted(before), after=after)
        observer = self.observer
        run = observer.run if observer is not None else None
        if observer is not None and run is not None and run.live:
            now = run.breakpoints
            before_now = (now.before | {path}) if on else (now.before - {path})
            run.breakpoints = now._replace(before=before_now)
            after = sorted(now.after)
        shown = (shown | {path}) if on else (shown - {path})
        self.breakpoints = {
            "before": sorted(shown),
            "after": sorted(set(self.breakpoints.get("after") or ()) | set(after)),
        }
        if observer is not None and run is not None:
            later = "" if run.live or run.done else " from the next run (this run cannot wait for a person)"
            observer.note(f"breakpoint before {path} {'set' if on else 'removed'}{later}")
        return on


def widget_bundle(view: anywidget.AnyWidget) -> tuple[dict[str, Any], dict[str, Any]]:
    """The mimebundle that displays ``view``: its data, and the metadata anywidget adds (on Colab,
    where its widget manager finds the view's module)."""
    bundle: Any = view._repr_mimebundle_()
    data, metadata = bundle if isinstance(bundle, tuple) else (bundle, None)
    shown: Mapping[str, Any] = data
    return {str(kind): value for kind, value in shown.items()}, dict(metadata or {})


def view_of(shown: Any) -> GraphView:
    """The view marimo shows for ``shown`` as a cell's output: a graph's, two runs side by side, or
    a run's (the view that shows it already, if one does)."""
    from .side_by_side import SideBySide

    if isinstance(shown, Run):
        shows = (view for view in run_views if view.observer is not None and view.observer.run is shown.viewed)
        return next(shows, None) or GraphView.for_run(shown)
    return GraphView.side_by_side(shown, None) if isinstance(shown, SideBySide) else GraphView(shown)


def graph_mimebundle(shown: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """The widget part of a displayed Graph's mimebundle, or of two runs side by side, and its
    metadata."""
    from .side_by_side import SideBySide

    both = isinstance(shown, SideBySide)
    view = GraphView.side_by_side(shown, None) if both else GraphView(shown)
    data, metadata = widget_bundle(view)
    # Two runs keep their own HTML, the table of their frames, beside the picture.
    return {k: v for k, v in data.items() if k != "text/plain" and not (both and k == "text/html")}, metadata


def show_run(run: Any) -> GraphView:
    """Display a live view of ``run`` below the current cell (with its picture and a mermaid
    fallback), its output updated when the run ends."""
    view = GraphView.for_run(run)
    view.show({"text/markdown": f"```mermaid\n{to_mermaid(run.plan)}```\n"})
    return view


def _path_json(frames: Any) -> dict[str, Any]:
    """The path a run took, as the view draws it: its last frame's visits and fired edges."""
    last = frames.frames[-1]
    return {"visits": dict(last.visits), "fired": {edge_key(*edge): count for edge, count in last.fired.items()}}
