"""The live graph view: ``GraphView``, an anywidget that draws a graph and a run on it.

A view is bound to one run at a time (a :class:`~nbgraph._observer.RunObserver` feeds it).
It can be bound to another in place: a fork made by a click ("Fork from here", or onto a
graph redefined while its run waited), or the resume that an answer to an ended,
``interrupted`` run starts. A fork keeps the run it came from drawn beside it
(``previous``), so both paths show on the same graph.

The messages between a view and the kernel are declared once, in ``static/protocol.json``
(the bundled ES module carries the same file): :func:`checked` refuses one it does not allow,
naming what is wrong, and each view handles exactly the kinds declared for it.

Import this module only where widgets are wanted: anywidget reads the bundled ES
module when the class is created.
"""

from __future__ import annotations

import json
import logging
import warnings
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anywidget
import traitlets

from ._module import ModuleView
from ._observer import Browser, RunObserver, place
from ._pictured import run_frame
from ._redefined import graph_redefined, latest_definition, node_redefined, run_views
from ._shown import edge_key, ended_traits, pack_frames
from .answering import Given
from .engine import Fork, Resume, Run
from .errors import NbgraphError
from .export import to_dag, to_mermaid
from .picture import caption, to_svg
from .secrets import redact

if TYPE_CHECKING:
    from .inspection import Inspection
    from .viewed import ViewedRun

__all__ = [
    "PROTOCOL",
    "GraphView",
    "MessageError",
    "RunObserver",
    "checked",
    "graph_mimebundle",
    "graph_redefined",
    "handlers_of",
    "inspection_message",
    "node_redefined",
    "show_run",
    "view_of",
]

_STATIC = Path(__file__).parent / "static"
_INPUT_CHARS = 4000
_log = logging.getLogger("nbgraph.view")

PROTOCOL: dict[str, Any] = json.loads((_STATIC / "protocol.json").read_text(encoding="utf-8"))
"""The views' messages: ``PROTOCOL[view]["to_kernel" | "to_view"][kind]`` is that kind's
``required`` and ``optional`` fields (name -> type) and ``one_of`` (fields it needs one of)."""

_TYPES: dict[str, tuple[str, Callable[[Any], bool]]] = {
    "string": ("a string", lambda v: isinstance(v, str)),
    "integer": ("a whole number", lambda v: isinstance(v, int) and not isinstance(v, bool)),
    "number": ("a number", lambda v: isinstance(v, (int, float)) and not isinstance(v, bool)),
    "boolean": ("true or false", lambda v: isinstance(v, bool)),
    "object": ("an object", lambda v: isinstance(v, dict)),
    "array": ("a list", lambda v: isinstance(v, list)),
    "any": ("a value", lambda v: True),
}


class MessageError(NbgraphError, ValueError):
    """A message between a view and the kernel that ``static/protocol.json`` does not allow."""


def _shown(value: Any) -> str:
    text = json.dumps(value, default=str)
    return f"{text[:80]}\u2026" if len(text) > 80 else text


def checked(view: str, direction: str, content: Any) -> dict[str, Any]:
    """``content`` if the protocol allows it as a message of ``view`` ("graph", "batch") going
    ``direction`` ("to_kernel", "to_view"); else :class:`MessageError` says what is wrong."""
    kinds = PROTOCOL[view][direction]
    who = f"the {view} view" if direction == "to_kernel" else "the kernel"
    if not isinstance(content, dict) or not isinstance(content.get("type"), str):
        raise MessageError(f"{who} sent a message without a type: {_shown(content)}")
    kind = content["type"]
    spec = kinds.get(kind)
    if spec is None:
        raise MessageError(f"{who} sent an unknown message type {kind!r}; expected one of: {', '.join(kinds)}")
    present = {field for field, value in content.items() if value is not None}
    fields = {**spec.get("required", {}), **spec.get("optional", {})}
    for field, type_ in spec.get("required", {}).items():
        if field not in present:
            raise MessageError(f"{who} sent {kind!r} without {field!r} ({_TYPES[type_][0]})")
    for field, type_ in fields.items():
        if field in present and not _TYPES[type_][1](content[field]):
            raise MessageError(
                f"{who} sent {kind!r} whose {field!r} is not {_TYPES[type_][0]}: {_shown(content[field])}"
            )
    one_of = spec.get("one_of")
    if one_of and not present & set(one_of):
        raise MessageError(f"{who} sent {kind!r} without any of {', '.join(map(repr, one_of))}")
    return content


def handlers_of(view: str, handlers: Mapping[str, Any]) -> Mapping[str, Any]:
    """``handlers``, once they are one for each kind the protocol lets ``view`` send the kernel."""
    declared = set(PROTOCOL[view]["to_kernel"])
    if set(handlers) != declared:
        raise RuntimeError(f"the {view} view handles {sorted(handlers)}, but its protocol declares {sorted(declared)}")
    return handlers


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
        self._run: Run | None = None
        """The engine's run the view shows (None: a run of another engine, or none)."""
        self._max_rate = 20.0
        self._replay: Any = None  # the frames the slider scrubs, once there are any
        self._builder = _builder_of(graph)
        if graph is not None:
            self.dag = to_dag(graph)
            self.breakpoints = _breakpoints_json(_shown_breakpoints(graph, self._builder))
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
        self._run = run if isinstance(run, Run) else None
        viewed = run.viewed if isinstance(run, Run) else run
        observer = self.observer = RunObserver(
            self, viewed, max_rate=self._max_rate, carry=carry, seen=seen, approvals=self._run
        )
        self.can_fork = run.checkpointer is not None
        self.can_stand = self._run is not None
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
            self._reply({"type": "error", "message": redact(str(exc)), **about})
        except (NbgraphError, ValueError, TypeError) as exc:
            self._reply({"type": "error", "message": redact(str(exc)), **about})

    def _reply(self, message: dict[str, Any]) -> None:
        self.send(checked("graph", "to_view", message))

    def handle(self, content: Any) -> bool:
        """Apply one message from the view (a kind of ``static/protocol.json``'s ``graph``).

        Returns False for an answer to a pause that is no longer open (a stale or
        duplicate click, ignored). Raises :class:`MessageError` for a message the
        protocol does not allow, ValueError for one that does not fit the view's run.
        """
        kind = checked("graph", "to_kernel", content)["type"]
        return _GRAPH_HANDLERS[kind](self, content)

    def _hello(self, content: dict[str, Any]) -> bool:
        Browser.seen = True  # a browser shows this kernel's views: its people can answer
        return True

    def _inspect(self, content: dict[str, Any]) -> bool:
        self._reply(self.inspection(content))
        return True

    def _toggle_breakpoint(self, content: dict[str, Any]) -> bool:
        return self.toggle_breakpoint(content["path"])

    def _fork(self, content: dict[str, Any]) -> bool:
        step = content.get("step")
        if content.get("onto") == "new":
            if not self.redefined:
                return False  # (a second click: the fork has been made)
            step = self.redefined["step"]
        if step is None:
            raise MessageError(f"a 'fork' message forks from a step or onto 'new', not onto {content.get('onto')!r}")
        self.fork(step)
        return True

    def _answer(self, content: dict[str, Any]) -> bool:
        return self._answer_pause(content, content["value"])

    def _approve(self, content: dict[str, Any]) -> bool:
        return self._answer_pause(content, {"approved": True, "update": content.get("update")})

    def _deny(self, content: dict[str, Any]) -> bool:
        return self._answer_pause(content, False)

    def _revoke(self, content: dict[str, Any]) -> bool:
        observer = self._observed()
        if self._run is None:
            raise ValueError("this view's run has no standing approvals to revoke")
        revoked = next((s for s in self._run.standing if s.id == content["standing"]), None)
        self._run.revoke(content["standing"])  # (one not in force is refused, naming those that are)
        if revoked is not None:
            observer.note(f"standing approval of {revoked.tool} revoked: its next call waits for a person")
        return True

    def _stop(self, content: dict[str, Any]) -> bool:
        self._observed().run.cancel()
        return True

    def _steer(self, content: dict[str, Any]) -> bool:
        observer = self._observed()
        observer.run.steer(content["text"])
        observer.note(f"steer: {content['text']}")
        return True

    def _observed(self) -> RunObserver:
        if self.observer is None:
            raise ValueError("this view shows a graph, not a run: there is nothing to answer")
        return self.observer

    def _answer_pause(self, content: dict[str, Any], value: Any) -> bool:
        """Give ``value`` to the pause ``content`` names, as decided on what it showed
        (``shown``, its digest) and why (``reason``), recorded as given in the view.

        False for a pause that is not open (a stale or duplicate click, ignored). A pause that
        shows something else now than what was decided on is refused, and says so."""
        pause_id: str = content["pause_id"]
        given = Given("view", None, _reason(content.get("reason")), content.get("shown"))
        run = self._observed().run
        if run.done:
            return self._resume(pause_id, value, given)
        if all(pause.id != pause_id for pause in run.pauses):
            return False  # a stale click: that pause was answered already
        run.answer(value, pause=pause_id, shown=given.shown, reason=given.reason, via=given.via)
        return True

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
        source: Any = self._run if old is not None else self._replay.origin if self._replay is not None else None
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

    def _resume(self, pause_id: str, value: Any, given: Given) -> bool:
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

        source: Any = self._run if self.observer is not None else self._replay
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
        if not on and path not in before:
            _drop_inner_breakpoint(builder, path)  # (one the sub-graph set itself)
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


_GRAPH_HANDLERS: Mapping[str, Callable[[GraphView, dict[str, Any]], bool]] = handlers_of(
    "graph",
    {
        "hello": GraphView._hello,
        "inspect": GraphView._inspect,
        "toggle-breakpoint": GraphView._toggle_breakpoint,
        "fork": GraphView._fork,
        "answer": GraphView._answer,
        "approve": GraphView._approve,
        "deny": GraphView._deny,
        "revoke": GraphView._revoke,
        "stop": GraphView._stop,
        "steer": GraphView._steer,
    },
)


_REASON_CHARS = 2000


def _reason(text: Any) -> str | None:
    """The reason typed in a pause's box (None when left empty)."""
    if not isinstance(text, str) or not text.strip():
        return None
    if len(text) > _REASON_CHARS:
        raise ValueError(
            f"a reason is at most {_REASON_CHARS:,} characters, this one has {len(text):,}: say why in fewer words"
        )
    return text.strip()


def _shown_breakpoints(graph: Any, builder: Any) -> Any:
    """The breakpoints a view draws: its plan's (sub-graphs' own included), or those the
    graph declared while it cannot compile yet."""
    if graph is not builder:
        return getattr(graph, "breakpoints", None)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return graph.compile().breakpoints
    except (NbgraphError, TypeError, ValueError):  # a graph still being built: what it declared so far
        return graph.declared_breakpoints


def _drop_inner_breakpoint(graph: Any, path: str) -> None:
    """Remove the breakpoint before ``path`` that the sub-graph it is in declared itself."""
    head, _, rest = path.partition("/")
    spec = graph.nodes.get(head)
    child = getattr(spec, "graph", None)
    if child is None or not rest:
        return
    declared = child.declared_breakpoints
    if declared is not None and rest in declared.before:
        child.breakpoints(before=sorted(set(declared.before) - {rest}), after=sorted(declared.after))
    else:
        _drop_inner_breakpoint(child, rest)


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


def inspection_message(seen: Inspection) -> dict[str, Any]:
    """The view's ``inspection`` message for an :class:`~nbgraph.inspection.Inspection`."""
    data = seen.model_dump(mode="json")
    # The panel shows the start of the input state: a 10,000-message conversation is not sent whole.
    text = json.dumps(data["input"], default=str)
    if len(text) > _INPUT_CHARS:
        data["input"] = f"{text[:_INPUT_CHARS]}\u2026"
        data["missing"] = [
            *data.get("missing", ()),
            f"the view shows the first {_INPUT_CHARS:,} of the input state's {len(text):,} characters; "
            f"result.inspect({seen.step}).input has all of it",
        ]
    return {"type": "inspection", **data}


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
