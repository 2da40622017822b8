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
from typing import TYPE_CHECKING, Any

from ._loose_plan import loose_plan
from ._replay_frame import ReplayFrame
from ._timeline import Walk, record_key
from ._trace_records import read_trace, records_from_events
from .decision import Decision
from .engine.folds import fold_record, shares_state
from .errors import InvalidUpdate
from .history import Step, tally_by_path
from .inspection import Inspection, inspect_step
from .inspection._sources import _plan, _stored, _top, _values
from .inspection._step import _inspect
from .plan import Plan
from .reducers import AppendLog, append
from .state import Schema

if TYPE_CHECKING:
    from .checkpoint.base import Checkpointer

__all__ = ["Replay", "ReplayFrame", "replay"]


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
        plan = _plan(graph) if graph is not None else loose_plan(latest.graph)
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

        numbered = list(numbered_events(read_trace(source)))
        records, info = records_from_events(numbered)
        known = graph is not None
        plan = _plan(graph) if known else loose_plan(info.get("graph") or "trace")
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


# -- what a source lacks, and a trace that does not fit ---------------------------------------

_NO_GRAPH = "no graph was given: updates fold as a dict state's would, and the inspector shows no edges"


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
