"""Replay: a run as frames to scrub through, rebuilt from what it recorded; no node runs.

Frame 0 is the run's input; frame ``i`` is the run after the ``i``-th record of its
history (a step of its own graph, of a sub-graph inside it, or of one branch):
which node ran (with its ``path`` and ``branch``), how many times each node has run,
how many times each edge has fired, and the state after it, folded from the input
through the reducers one recorded update at a time. A frame's step opens in the
inspector with :meth:`Replay.inspect`.

Each frame also holds the answers people gave at its step (``decided``: who, when, through
which door, what and why) and how many were given up to it (``decisions_so_far``), so a
slider shows the decisions made up to where it stands (:meth:`Replay.decisions_up_to`).

Sources: a finished ``RunResult`` or a ``Run`` (live: the frames so far), a thread in
a checkpointer (memory, SQLite, Redis), or an NDJSON trace (``result.to_ndjson()``,
or events written as they came). A trace does not carry the run's input, so its
frames start from the state's defaults and show what the nodes' updates set.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from ._timeline import Walk, record_key
from .decision import Decision, decided_in
from .engine.folds import fold_record, shares_state
from .errors import InvalidUpdate
from .history import FiredEdge, Frame, Step, tally_by_path
from .inspection import Inspection, inspect_step
from .inspection._sources import _plan, _stored, _top, _values
from .inspection._step import _inspect
from .names import START
from .plan import NodePlan, NodeSpec, Plan
from .reducers import AppendLog, append
from .state import Schema, to_jsonable

if TYPE_CHECKING:
    from .checkpoint.base import Checkpointer

__all__ = ["Replay", "ReplayFrame", "replay"]


class ReplayFrame(NamedTuple):
    """The run as it was after one record (frame 0: before any).

    ``visits`` counts each node's finished executions by path (``research/search``
    inside a sub-graph); ``fired`` counts each edge taken by (source, target), the
    names inside a sub-graph prefixed with its path, as the live view counts them.
    """

    index: int
    step: int
    """The record's step (a sub-graph counts its own); 0 for frame 0."""
    node: str | None
    path: str | None
    branch: str | None
    visit: int
    edge: FiredEdge | None
    error: str | None
    visits: Mapping[str, int]
    fired: Mapping[tuple[str, str], int]
    values: Mapping[str, Any]
    """The state after the record, as the engine keeps it (field -> value)."""
    decided: tuple[Decision, ...] = ()
    """The answers given to the pauses of the record's step (who, when, how, what, why)."""
    decisions_so_far: int = 0
    """How many answers were given up to this frame, its own included: they are the first
    ``decisions_so_far`` of :attr:`Replay.decisions` (:meth:`Replay.decisions_up_to`)."""

    @classmethod
    def after(
        cls,
        index: int,
        record: Step,
        visits: Mapping[str, int],
        fired: Mapping[tuple[str, str], int],
        values: Mapping[str, Any],
        so_far: int = 0,
    ) -> ReplayFrame:
        """The frame after ``record``, the counts copied as they stand (``so_far``: the
        answers given before it)."""
        decided = tuple(decided_in((record,))) if record.events or record.approval_events else ()
        return cls(
            index,
            record.step,
            record.node,
            record.path,
            record.branch,
            record.visit,
            record.edge,
            record.error,
            dict(visits),
            dict(fired),
            values,
            decided,
            so_far + len(decided),
        )

    @property
    def state(self) -> dict[str, Any]:
        """The state after the record, as JSON."""
        return to_jsonable(dict(self.values), strict=False)

    def to_json(self, *, state: bool = True) -> dict[str, Any]:
        """The frame as the view takes it: ``fired`` keyed ``"source→target"``."""
        edge = self.edge
        data: dict[str, Any] = {
            "index": self.index,
            "step": self.step,
            "node": self.node,
            "path": self.path,
            "branch": self.branch,
            "visit": self.visit,
            "error": self.error,
            "edge": None
            if edge is None
            else {
                "source": edge.source,
                "target": edge.target,
                "targets": list(edge.targets),
                "label": edge.label,
            },
            "visits": dict(self.visits),
            "fired": {f"{source}\u2192{target}": count for (source, target), count in self.fired.items()},
            "decided": [decision.model_dump(mode="json") for decision in self.decided],
            "decisions_so_far": self.decisions_so_far,
        }
        if state:
            data["state"] = self.state
        return data


class Replay:
    """A run's frames, from a result, a run, a thread or a trace; see :func:`replay`.

    ``len(replay)`` frames, ``replay[i]`` one of them, ``replay.inspect(i)`` the step
    that made frame ``i``. Building one folds every recorded update once (a step of a
    10,000-message conversation costs the same as one of ten); no node runs.
    """

    def __init__(
        self,
        plan: Plan,
        records: Sequence[Step],
        values: Mapping[str, Any],
        *,
        thread: str | None = None,
        outcome: str | None = None,
        reason: str | None = None,
        missing: Sequence[str] = (),
        origin: Any = None,
        known: bool = True,
    ) -> None:
        self.plan = plan
        """The compiled graph the frames are read with."""
        self.thread = thread
        self.outcome = outcome
        self.reason = reason
        self.missing = tuple(missing)
        """What the source does not record (an NDJSON trace has no input state, ...)."""
        self.records = tuple(records)
        self.origin = origin
        """Where the frames come from: the ``Run``, or ``(checkpointer, thread)``; None for a trace."""
        self._known = known
        self._input = dict(values)
        self._walk: Walk | None = None
        self.frames = tuple(self._frames(plan, self.records, self._input, known))
        self.decisions: tuple[Decision, ...] = tuple(decision for frame in self.frames for decision in frame.decided)
        """Every answer given in the run, in the order of its records: who decided what, when."""

    # -- sources --------------------------------------------------------------------------

    @classmethod
    def from_result(cls, result: Any) -> Replay:
        """The frames of a finished ``RunResult``, or of a ``Run`` so far (live or finished)."""
        run = getattr(result, "run", result)  # (a RunResult's run; the result module loads this one)
        if not all(hasattr(run, name) for name in _RUN_READS):
            raise TypeError(f"expected a RunResult or a Run, got {type(result).__name__}")
        missing: list[str] = []
        values = run.input
        store = run.checkpointer
        if values is None:
            first = store.get(run.thread, 0) if store is not None else None
            if store is None or first is None:
                missing.append("the run's input is not in its store any more: frames start from an empty state")
                values = {}
            else:
                values = _values(store, run.plan, first)
        ending = run.result() if run.done else None
        return cls(
            run.plan,
            run.history,
            values,
            thread=run.thread,
            origin=run,
            missing=missing,
            outcome=ending.outcome if ending is not None else None,
            reason=ending.reason if ending is not None else None,
        )

    @classmethod
    def from_thread(cls, checkpointer: Checkpointer, thread: str, graph: Any = None) -> Replay:
        """The frames of ``thread`` in ``checkpointer``, read with ``graph`` (a ``Graph`` or its plan).

        Without ``graph`` the updates fold as a dict state would (the latest value wins,
        ``messages`` appends), the sub-graphs are taken to share the state, and no edge
        can be shown in the inspector. Its failed steps are not in a store: read a
        failed run's result for them.

        Raises:
            ValueError: the store has no such thread, or it was run by another graph.
        """
        latest = checkpointer.get(thread)
        if latest is None:
            raise ValueError(f"no thread {thread!r} in {checkpointer!r}")
        plan = _plan(graph) if graph is not None else _loose(latest.graph)
        known = graph is not None
        if known and latest.graph != plan.name:
            raise ValueError(
                f"thread {thread!r} holds a run of graph {latest.graph!r}, not {plan.name!r}; give that graph"
            )
        first = checkpointer.get(thread, 0)
        missing = [] if known else [_NO_GRAPH]
        if first is None:
            missing.append("the thread's first checkpoint is gone: frames start from an empty state")
        records = checkpointer.history(thread)
        return cls(
            plan,
            records,
            _values(checkpointer, plan, first) if first is not None else {},
            thread=thread,
            outcome=None if latest.status == "running" else latest.status,
            reason=latest.reason,
            missing=missing,
            origin=(checkpointer, thread),
            known=known,
        )

    @classmethod
    def from_ndjson(cls, source: str | os.PathLike[str], graph: Any = None) -> Replay:
        """The frames of an NDJSON trace: its text, or the path of a file holding it.

        A trace has each step's update (in its ``node-exit`` event), where routing went
        and a person's edits, but not the run's input: the frames start from the state's
        defaults. Without ``graph`` the updates fold as a dict state would.

        Raises:
            ValueError: a line is not an nbgraph event, or a file's bytes are not UTF-8 (the
                error names the line), or the trace is of another graph than ``graph``.
            FileNotFoundError: a path that names no file.
        """
        from .events import numbered_events, quoted

        numbered = list(numbered_events(_read(source)))
        records, info = _records_from_events(numbered)
        known = graph is not None
        plan = _plan(graph) if known else _loose(info.get("graph") or "trace")
        if known and info.get("graph") not in (None, plan.name):
            raise ValueError(f"the trace is of graph {quoted(info['graph'])}, not {plan.name!r}; give that graph")
        missing = [
            "an NDJSON trace does not carry the run's input: frames start from the state's defaults, "
            "and show a field the input set only once a node updates it",
            "an NDJSON trace has no start times or LLM call counts",
            *info["missing"],
        ]
        if not known:
            missing.append(_NO_GRAPH)
        values = _defaults(plan.schema)
        try:
            return cls(
                plan,
                records,
                values,
                thread=info.get("thread"),
                outcome=info.get("outcome"),
                reason=info.get("reason"),
                missing=missing,
                known=known,
            )
        except InvalidUpdate as exc:
            raise _misfit(exc, plan, records, values, known, info["lines"]) from None

    # -- reading it ------------------------------------------------------------------------

    def __len__(self) -> int:
        return len(self.frames)

    def __getitem__(self, index: int) -> ReplayFrame:
        return self.frames[index]

    def __iter__(self) -> Iterator[ReplayFrame]:
        return iter(self.frames)

    def __repr__(self) -> str:
        ended = f", {self.outcome}" if self.outcome else ""
        return f"<Replay of graph {self.plan.name!r}, thread {self.thread!r}: {len(self.frames)} frames{ended}>"

    def index_of(self, at: int | Step) -> int:
        """The frame a step made: ``at`` is a step number of the run's own graph, or a ``Step`` record.

        Raises:
            ValueError: no record of the run is that step.
        """
        if isinstance(at, Step):
            key = record_key(at)
            for i, record in enumerate(self.records):
                if record is at or record_key(record) == key:
                    return i + 1
            raise ValueError(f"step {at.step} at {at.path!r} is not a record of this replay")
        top, _ = _top(at, None)
        for i in range(len(self.records) - 1, -1, -1):
            record = self.records[i]
            if record.step == top and "/" not in record.path:
                return i + 1
        raise ValueError(f"the replay has no step {top} of graph {self.plan.name!r}")

    def inspect(self, frame: int) -> Inspection:
        """The inspector's view of the step that made ``frame`` (1 to ``len(replay) - 1``).

        Raises:
            IndexError: there is no such frame; ValueError: frame 0 (the input: no node ran).
        """
        if not isinstance(frame, int) or isinstance(frame, bool):
            raise TypeError(f"a frame is an index, got {type(frame).__name__}")
        if frame < 0:
            frame += len(self.frames)
        if frame == 0:
            raise ValueError(f"frame 0 is the run's input: no node ran; inspect frames 1 to {len(self.frames) - 1}")
        if not 0 < frame < len(self.frames):
            raise IndexError(f"the replay has frames 0 to {len(self.frames) - 1}, not {frame}")
        record = self.records[frame - 1]
        origin = self.origin
        if origin is not None and not isinstance(origin, tuple):
            return inspect_step(origin, record)
        if isinstance(origin, tuple) and self._known:
            store, thread = origin
            top, _ = _top(record, self.records)
            found = _stored(self.plan, store, thread, top, record)
            if found is not None:
                return found
        if self._walk is None:
            self._walk = Walk(self.plan, self.records, self._input)
        return _inspect(self._walk, record, self.thread, self.missing)

    def decisions_up_to(self, frame: int) -> tuple[Decision, ...]:
        """The answers given up to ``frame``, its own included (what the slider shows there)."""
        return self.decisions[: self.frames[frame].decisions_so_far]

    def to_json(self, *, states: bool = False) -> dict[str, Any]:
        """The frames as JSON for a view (without the states unless asked: they can be large)."""
        return {
            "graph": self.plan.name,
            "thread": self.thread,
            "outcome": self.outcome,
            "reason": self.reason,
            "missing": list(self.missing),
            "frames": [frame.to_json(state=states) for frame in self.frames],
        }

    def to_html(self, path: str | os.PathLike[str]) -> Path:
        """Write one self-contained HTML file that replays the run with the step slider and the
        inspector, offline, in any browser (see :mod:`nbgraph.share`); returns its path.

        >>> replay("run.ndjson", graph=g).to_html("run.html")   # doctest: +SKIP
        """
        from .share import write_html

        return write_html(self, path)

    # -- building the frames ----------------------------------------------------------------

    @staticmethod
    def _frames(plan: Plan, records: Sequence[Step], values: dict[str, Any], known: bool) -> Iterator[ReplayFrame]:
        schema = plan.schema
        visits: dict[str, int] = {}
        fired: dict[tuple[str, str], int] = {}
        yield ReplayFrame(0, 0, None, None, None, 0, None, None, {}, {}, values)
        so_far = 0
        for index, record in enumerate(records, start=1):
            tally_by_path((record,), visits, fired)
            if record.error is None and (not known or shares_state(plan, record.path)):
                values = fold_record(schema, values, record)
            frame = ReplayFrame.after(index, record, visits, fired, values, so_far)
            so_far = frame.decisions_so_far
            yield frame


def replay(source: Any, *, checkpointer: Checkpointer | None = None, graph: Any = None) -> Replay:
    """A run's frames to scrub through, without running any node.

    Args:
        source: a ``RunResult`` or ``Run``; a thread id (with ``checkpointer``); an NDJSON
            trace's text, or the path of a file holding one.
        checkpointer: the store holding the thread.
        graph: the ``Graph`` that ran it (a thread or a trace; a result knows its own).

    >>> frames = replay(result)                      # doctest: +SKIP
    >>> frames[3].node, frames[3].visits             # doctest: +SKIP
    ('review', {'draft': 2, 'review': 1})
    """
    if checkpointer is not None:
        if not isinstance(source, str):
            raise TypeError(f"with checkpointer=, the source is a thread id, got {type(source).__name__}")
        return Replay.from_thread(checkpointer, source, graph)
    if isinstance(source, (str, os.PathLike)):
        return Replay.from_ndjson(source, graph)
    if not all(hasattr(getattr(source, "run", source), name) for name in _RUN_READS):
        raise TypeError(
            f"cannot replay {type(source).__name__}: give a RunResult, a Run, a thread id with checkpointer=, "
            "or an NDJSON trace (text or a file path)"
        )
    return Replay.from_result(source)


_RUN_READS = ("thread", "plan", "input", "checkpointer", "history", "done", "result")
"""What a replay reads of a run (an engine ``Run``, or a ``RunResult``'s)."""


# -- helpers ---------------------------------------------------------------------------------

_NO_GRAPH = "no graph was given: updates fold as a dict state's would, and the inspector shows no edges"


def _loose(name: str) -> Plan:
    """A plan with no nodes: a dict state's schema, for frames of a graph nobody gave (its
    START leads nowhere: nothing is routed or run with it)."""
    start = NodePlan(
        name=START,
        fn=_nowhere,
        takes_ctx=False,
        is_async=False,
        approval=False,
        approval_before=False,
        timeout=None,
        wants_ctx=False,
        fixed=None,
        route=_nowhere,
        decide=_nowhere,
        frame=Frame(START, START),
        spec=NodeSpec(START, _nowhere, False, False),
    )
    return Plan(
        name=name,
        schema=Schema(None),
        nodes={},
        start=start,
        edges=(),
        routers={},
        max_steps=1,
        on_max_steps="return_last",
        max_same_node=1,
        all_sync=True,
    )


def _nowhere(*_: Any) -> Any:
    raise RuntimeError("a replay of a graph nobody gave routes nowhere: give the graph to route or run it")


def _defaults(schema: Schema) -> dict[str, Any]:
    """The state's fields that have defaults, as a run would start without input."""
    values: dict[str, Any] = {}
    if schema.model is None:
        return values  # a dict state has only what its input gave
    for name, info in schema.model.model_fields.items():
        if not info.is_required():
            values[name] = info.get_default(call_default_factory=True)
    for name, reducer in schema.reducers.items():
        if reducer is append and name in values:
            values[name] = AppendLog(values[name] or ())
    return values


_LONGEST_PATH = 32_767
"""The longest path any system opens (Windows' long paths): a longer one-line text is no path."""


def _read(source: str | os.PathLike[str]) -> str:
    from .events import decode_trace, quoted

    if isinstance(source, str) and ("\n" in source or source.lstrip().startswith("{")):
        return source
    path = os.fspath(source)
    if len(path) > _LONGEST_PATH:
        raise ValueError(
            f"line 1 is not an nbgraph event, and at {len(path):,} characters the text is too long to be "
            f"the path of a trace file (the line starts: {quoted(path)})"
        )
    if not os.path.exists(path):
        raise FileNotFoundError(
            f"no NDJSON trace at {quoted(path)} (give the trace's text, or the path of a file holding it)"
        )
    try:
        # As bytes: parse_ndjson splits at "\n" alone, and a byte that is not UTF-8 is reported by line.
        with open(path, "rb") as handle:
            data = handle.read()
    except OSError as exc:  # (its own message would quote the whole path)
        raise OSError(exc.errno, f"cannot read the NDJSON trace at {quoted(path)}: {exc.strerror}") from None
    return decode_trace(data, f"the NDJSON trace at {quoted(path)}")


class _Open:
    """A node entered in a trace, not yet known to have finished."""

    __slots__ = ("enter", "events", "record", "container", "line", "edit_line")

    def __init__(self, enter: Any, line: int) -> None:
        self.enter = enter
        self.line = line
        """The trace line of its update (its ``node-exit``; its ``node-enter`` until then)."""
        self.edit_line: int | None = None
        """The trace line of a person's edit of its update."""
        self.events: list[Any] = []
        self.record: Step | None = None
        self.container = False


def _records_from_events(numbered: Sequence[tuple[int, Any]]) -> tuple[list[Step], dict[str, Any]]:
    """The step records a trace's events (each with its line) tell of, in the order a history
    keeps them, and what the trace says of the run (``info["lines"]``: the lines of each
    record's update and of a person's edit of it).

    A node's record goes where it was entered (branches in the order they started,
    as their steps are numbered), a sub-graph node's where it finished (after its own
    steps); a node entered and never exited failed.
    """
    info: dict[str, Any] = {"missing": []}
    slots: list[_Open | None] = []
    opened: dict[tuple[str, str | None], tuple[int, _Open]] = {}
    finished: dict[tuple[str, str | None], _Open] = {}
    failures: list[Any] = []
    unexplained = 0
    for line, event in numbered:
        kind = event.type
        where = (event.path, event.branch)
        if kind == "run-start":
            info.setdefault("thread", event.thread)
            info.setdefault("graph", event.graph)
        elif kind == "node-enter":
            for _, slot in opened.values():
                if event.path.startswith(slot.enter.path + "/"):
                    slot.container = True
            if where in opened:  # entered again with no exit between: it failed (a resume runs it again)
                _, stale = opened.pop(where)
                error = next((f for f in reversed(failures) if (f.path, f.branch) == where), None)
                unexplained += error is None
                stale.record = _failed(stale, error)
            opened[where] = (len(slots), _Open(event, line))
            slots.append(opened[where][1])
        elif kind == "node-exit" and where in opened:
            position, slot = opened.pop(where)
            slot.line = line
            enter = slot.enter
            slot.record = Step(
                step=event.step,
                node=event.node,
                visit=enter.visit,
                started=0.0,
                duration=event.duration,
                update=event.update,
                path=event.path or event.node,
                branch=event.branch,
                tokens=event.tokens,
                cost=event.cost,
                events=tuple(slot.events),
            )
            if slot.container:  # a sub-graph node's record comes after its steps'
                slots[position] = None
                slots.append(slot)
            finished[where] = slot
        elif kind == "route":
            slot = finished.get(where)
            if slot is not None and slot.record is not None and slot.record.step == event.step and event.path:
                slot.record = slot.record._replace(
                    edge=FiredEdge(event.source, event.target, event.label, event.unconditional)
                )
        elif kind in ("interrupt", "answer"):
            if where in opened:
                opened[where][1].events.append(event)
            elif where in finished and finished[where].record is not None:
                slot = finished[where]
                record = slot.record
                assert record is not None
                edit = record.edit
                answer = getattr(event, "answer", None)
                if (
                    kind == "answer"
                    and isinstance(answer, Mapping)
                    and answer.get("approved")
                    and isinstance(answer.get("update"), Mapping)  # (an approval's edit; other answers are any JSON)
                    and answer["update"]
                ):
                    edit = answer["update"]
                    slot.edit_line = line
                slot.record = record._replace(approval_events=(*record.approval_events, event), edit=edit)
        elif kind in ("tool-call", "tool-result", "error"):
            if where in opened:
                if kind == "error" and event.node is not None and event.error_type != "ToolCallsNotRun":
                    failures.append(event)
                opened[where][1].events.append(event)
            elif kind == "error":
                failures.append(event)
        elif kind == "done":
            info["outcome"], info["reason"] = event.outcome, event.reason
    for where, (_, slot) in list(opened.items()):
        error = next((f for f in failures if (f.path, f.branch) == where), None)
        if error is None:
            unexplained += 1
        slot.record = _failed(slot, error)
    if unexplained:
        info["missing"].append(
            f"{unexplained} step(s) entered and never exited in the trace failed, but the trace does not say why"
        )
    kept = [slot for slot in slots if slot is not None and slot.record is not None]
    info["lines"] = [(slot.line, slot.edit_line) for slot in kept]
    return [slot.record for slot in kept if slot.record is not None], info


def _misfit(
    exc: InvalidUpdate,
    plan: Plan,
    records: Sequence[Step],
    values: dict[str, Any],
    known: bool,
    lines: Sequence[tuple[int, int | None]],
) -> ValueError:
    """A trace whose update does not fit the graph's state, named by its line. The frames are
    folded again to find the record they stopped at: only a failing replay pays for it."""
    from .events import quoted

    made = 0
    try:
        for _ in Replay._frames(plan, records, values, known):
            made += 1
    except InvalidUpdate:
        pass
    update_line, edit_line = lines[made - 1] if 0 < made <= len(lines) else (0, None)
    edited = f" (or the edit of it on line {edit_line})" if edit_line is not None else ""
    reason = str(exc)
    shown = reason if len(reason) <= 300 else reason[:300] + "\u2026"
    return ValueError(f"line {update_line}{edited} does not fit graph {quoted(plan.name)}: {shown}")


def _failed(slot: _Open, error: Any) -> Step:
    enter = slot.enter
    events = tuple(e for e in slot.events if e is not error)
    return Step(
        step=enter.step,
        node=enter.node,
        visit=enter.visit,
        started=0.0,
        duration=0.0,
        path=enter.path or enter.node,
        branch=enter.branch,
        error=error.error if error is not None else "failed (the trace does not say why)",
        events=events,
    )
