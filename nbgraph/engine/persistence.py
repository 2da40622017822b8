"""Persistence: what a run keeps in its store (checkpoints, under its lease), and what it reads
back from there (a :class:`Snapshot` of a stopped run, a fork, the steps before a resume).

:class:`Persistence` owns a run's checkpoints: it builds each one from what the step hands it
(the level, its records, the frames that come next) and from what it reads of the run's
parts (the root level, the meter, the answers, the breakpoints, the sub-graphs open now),
which it never writes.

Every write carries the run's lease. A store that fails (a full disk, a server gone) or a
lease that was lost makes the write raise; the step driver then ends the run ``failed`` and
the last good checkpoint stays as it was. A run without a store takes no snapshots; if it
stops short, :func:`remembered` rebuilds its checkpoints once, so a ``Resume`` or a ``Fork``
works.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, NamedTuple, cast

from ..answering import IN_CODE, Given
from ..checkpoint.base import Checkpoint, Checkpointer, Status, taken
from ..checkpoint.leases import Lease
from ..checkpoint.memory import MemoryCheckpointer
from ..deadlines import overdue
from ..errors import InvalidUpdate, ResumeError, ThreadExists, did_you_mean
from ..history import FiredEdge, Frame, Step
from ..names import END, START, new_id
from ..plan import Plan
from ..state import to_jsonable
from .folds import fold_record, shares_state
from .people import check_decider

if TYPE_CHECKING:
    from ..decision import Decision
    from ..pauses import Pause
    from .breaks import Breaks
    from .ending import Ending
    from .levels import Level
    from .limits import Meter
    from .people import Asking
    from .resumption import Resumption

__all__ = [
    "Persistence",
    "Snapshot",
    "default_checkpointer",
    "forget",
    "fork_thread",
    "open_thread",
    "remembered",
    "store_for",
]

_DEFAULT = MemoryCheckpointer(max_threads=1000)


def default_checkpointer() -> MemoryCheckpointer:
    """The process-wide memory store used by ``start()`` and by resumable ``invoke()`` runs.

    It forgets a finished run once nothing references its ``Run`` or ``RunResult``,
    and keeps at most 1,000 threads (the oldest go first).
    """
    return _DEFAULT


def forget(store: MemoryCheckpointer, thread: str, last: Checkpoint | None) -> None:
    """Drop a finished thread, unless a newer run has written to it since."""
    if store.get(thread) is last:
        store.delete(thread)


def store_for(plan: Plan, checkpointer: Checkpointer | None) -> Checkpointer:
    if checkpointer is not None:
        return checkpointer
    if plan.checkpointer is not None:
        return plan.checkpointer
    return _DEFAULT


_NO_META: Mapping[str, Any] = MappingProxyType({})


class Persistence:
    """Where one run keeps its progress: its store, its lease, its last checkpoint, the trace
    context kept with the thread, and the thread's steps before those this run holds (read
    from the store when first asked)."""

    __slots__ = (
        "_asking",
        "_breaks",
        "_earlier",
        "_meter",
        "_open_levels",
        "_resumption",
        "_root",
        "earlier",
        "last",
        "lease",
        "rows",
        "run",
        "step_seconds",
        "store",
        "thread",
        "trace",
    )

    def __init__(
        self,
        store: Checkpointer | None,
        thread: str,
        *,
        root: Level,
        meter: Meter,
        asking: Asking,
        breaks: Breaks,
        resumption: Resumption,
        open_levels: Mapping[str, Level],
    ) -> None:
        self._root = root
        self._meter = meter
        self._asking = asking
        self._breaks = breaks
        self._resumption = resumption
        self._open_levels = open_levels
        self.trace: dict[str, str] = {}
        """The trace context a tracer keeps with the thread (``Run.trace_context``)."""
        self.step_seconds = 0.0
        """The seconds the thread's saved steps took, earlier runs' included (a store that
        writes rows keeps them with each checkpoint)."""
        self.store = store
        self.thread = thread
        # A store that writes rows gets the run's totals with each, so a resume reads one
        # row, not every step; the memory store holds its records already.
        self.rows = store is not None and not isinstance(store, MemoryCheckpointer)
        self.last: Checkpoint | None = None
        self.lease: Lease | None = None
        self.run = new_id(size=8)
        """This run's id, written with its checkpoints."""
        self.earlier = 0
        """How many of the thread's records come before the run's own (read on demand)."""
        self._earlier: list[Step] | None = None

    def put(self, checkpoint: Checkpoint) -> None:
        """Write ``checkpoint``, under the run's lease.

        Raises:
            CheckpointError: the store failed; LeaseLost: the thread is no longer ours;
            InvalidUpdate: a state field cannot be stored as JSON.
        """
        assert self.store is not None
        try:
            self.store.put(checkpoint.thread, checkpoint, lease=self.lease)
        except (TypeError, ValueError) as exc:
            raise _unsaveable(checkpoint.state, checkpoint.record, exc) from exc
        self.last = checkpoint

    def restored(self, snapshot: Snapshot) -> None:
        """Go on from ``snapshot``: its checkpoint is the last, the trace context its thread kept."""
        self.earlier = snapshot.earlier
        self.last = snapshot.checkpoint
        self.step_seconds = snapshot.totals.seconds
        self.trace = dict(snapshot.checkpoint.meta.get("trace") or {})

    def keep_trace(self, carrier: Mapping[str, str]) -> None:
        self.trace = dict(carrier)

    def earlier_records(self, first: Step | None) -> list[Step]:
        """The thread's records before ``first`` (the record the run's own began with), read once."""
        if self._earlier is None:
            if self.store is None or first is None:
                return []
            records = self.store.history(self.thread)
            self._earlier = records
            for i in range(len(records) - 1, -1, -1):
                if records[i] == first:
                    self._earlier = records[:i]
                    break
        return self._earlier

    # -- the run's checkpoints -----------------------------------------------------------

    def checkpoint(
        self, records: Sequence[Step], frames: tuple[Frame, ...], seconds: float | None = None
    ) -> Checkpoint:
        """The checkpoint after the run's current step, which ``records`` took (``seconds``: the
        thread's steps' time with theirs)."""
        root = self._root
        return Checkpoint(
            self.thread,
            root.plan.name,
            root.steps,
            root.values,
            frames,
            "running",
            None,
            (),
            self._asking.pauses.answers_copy(),
            records[-1] if records else None,
            tuple(records[:-1]),
            self.run,
            self.totals(seconds) if self.rows else None,
            meta=self.meta(),
        )

    def save_start(self, frames: tuple[Frame, ...]) -> None:
        """Checkpoint a new run's start: its input, and the frames its first step runs."""
        if self.store is not None:
            self.put(self.checkpoint((), frames))

    def save_step(self, level: Level, records: Sequence[Step], frames: tuple[Frame, ...]) -> None:
        """Checkpoint the step ``level`` took (a sub-graph's: where it is now, with the run's current step).

        Raises:
            CheckpointError, LeaseLost, InvalidUpdate: as :meth:`put`.
        """
        seconds = self.step_seconds
        for record in records:
            seconds += record.duration
        if level is self._root:
            self.put(self.checkpoint(records, frames, seconds))
        elif self.last is not None:
            self.put(
                self.last._replace(
                    state=self._root.values, levels=self.levels_json(), answers=self._asking.pauses.answers_copy()
                )
            )
        self.step_seconds = seconds

    def save_denied(self, level: Level, step: int, records: Sequence[Step], ending: Ending) -> None:
        """Step ``step`` of ``level``, whose approval was denied with nowhere to go: kept, and
        the thread ends there (inside a sub-graph, at the run's step that entered it)."""
        if self.store is None:
            return
        checkpoint = self.checkpoint(records, ())._replace(
            step=step if level is self._root else self._root.steps + 1, status="denied", reason=ending.reason
        )
        self.put(checkpoint)

    def totals(self, seconds: float | None = None) -> dict[str, Any]:
        """What the run has used so far, as a checkpoint keeps it (``seconds``: its steps' time,
        when it is not yet :attr:`step_seconds`)."""
        meter, root = self._meter, self._root
        return Totals(
            dict(root.visits),
            meter.tokens,
            meter.cost,
            meter.turns,
            self.step_seconds if seconds is None else seconds,
            (root.last_node, root.same),
            list(meter.peak),
        ).to_json()

    def meta(self) -> Mapping[str, Any]:
        """What the thread keeps about itself (see ``Checkpoint.meta``)."""
        breakpoints = self._breaks.to_json()
        budget = self._meter.kept_limits()
        asking, resumption = self._asking, self._resumption
        standing = asking.kept_standing() if asking.standing else None
        decided = resumption.kept_decided() if resumption.decided else None
        if breakpoints is None and budget is None and not self.trace and standing is None and decided is None:
            return _NO_META  # (shared: a checkpoint per step keeps no dict of its own)
        meta: dict[str, Any] = {"breakpoints": breakpoints, "budget": budget, "trace": dict(self.trace) or None}
        if standing is not None:
            meta["standing"] = standing
        if decided is not None:
            meta["decided"] = decided
        return meta

    def levels_json(self) -> dict[str, Any]:
        """The sub-graph levels the run is inside now, as a checkpoint keeps them."""
        return {key: level.snapshot() for key, level in self._open_levels.items()}

    def finish(self, ending: Ending) -> None:
        """Record how the run ended in its store, so a resume knows where to go on from."""
        if self.last is not None and not (self.last.status == ending.outcome == "denied"):
            try:
                self.put(self.stopped(self.last, ending))
            except Exception:
                # The run is ending on its own account; a store that cannot take the status
                # leaves the last good checkpoint, which a resume continues from.
                pass

    def stopped(self, last: Checkpoint, ending: Ending) -> Checkpoint:
        """``last`` with how the run stopped, and what a resume must not redo: the frames to run,
        the pauses open, the slots that finished, the sub-graphs it is inside."""
        finished = ending.outcome in ("done", "denied")
        status: Status = ending.outcome
        root = self._root
        return last._replace(
            state=root.values,
            frames=root.frames,
            status=status,
            reason=ending.reason,
            pauses=ending.pauses,
            answers=self._asking.pauses.answers_copy(),
            settled=() if finished else tuple(root.settled),
            levels={} if finished else self.levels_json(),
            meta=self.meta(),
        )

    def keep_in_memory(self, ending: Ending, start: tuple[Frame, ...], input: dict[str, Any] | None) -> None:
        """A run without a store: keep its checkpoints in the default store, for a ``Resume`` (a run
        that stopped short, as it ends) or a ``Fork`` (asked for once it has ended), rebuilt from
        ``input`` and the frames it ran first (``start``)."""
        root, thread = self._root, self.thread
        store = self.store = default_checkpointer()
        store.delete(thread)
        assert input is not None  # (a run without a store started from an input: a resume has one)
        for checkpoint in remembered(root.plan, thread, start, input, root.records):
            store.put(thread, checkpoint)
        last = store.get(thread)
        assert last is not None
        last = self.stopped(last, ending)
        store.put(thread, last)
        self.last = last

    # -- the lease --------------------------------------------------------------------

    def take_lease(self, *, force: bool = False) -> None:
        """Hold the run's thread until :meth:`release_lease`, renewed in the background.

        Raises:
            ThreadBusy: another live run holds it (unless ``force``).
        """
        if self.store is None or self.lease is not None:
            return
        self.lease = self.store.acquire(self.thread, self.run, force=force)

    def release_lease(self) -> None:
        lease, self.lease = self.lease, None
        if lease is None or self.store is None:
            return
        try:
            self.store.release(lease)
        except Exception:
            pass  # a store that cannot be reached lets the lease lapse on its own

    def claim(self, *, replace: bool) -> None:
        """A new run on a thread id it was given: the thread must be new, or replaced on purpose.

        Raises:
            ThreadExists: the thread already holds a run and ``replace`` is false.
        """
        store, thread = self.store, self.thread
        if store is None:
            return
        held = store.get(thread)
        if held is None:
            return
        if not replace:
            raise ThreadExists(
                f"thread {thread!r} already holds a run of graph {held.graph!r} ({held.status} at step {held.step}) "
                f"in {store!r}. Start this run on a new thread, continue that one with Resume({thread!r}), "
                f"branch it with Fork({thread!r}, step=...), or pass replace=True to replace it"
            )
        store.delete(thread)


def _unsaveable(values: Mapping[str, Any], record: Step | None, exc: Exception) -> InvalidUpdate:
    """Name the state field that could not be written to the checkpoint."""
    node = record.node if record is not None else START
    for field, value in values.items():
        try:
            to_jsonable(value)
        except Exception as field_exc:
            return InvalidUpdate(
                f"the state after node {node!r} cannot be checkpointed: field {field!r} holds "
                f"{type(value).__name__}, which is not JSON-serializable ({field_exc}); store plain "
                "data or pydantic models in the state",
                node=node,
                field=field,
            )
    return InvalidUpdate(f"the checkpoint after node {node!r} could not be saved: {exc}", node=node)


# -- what a resume reads back --------------------------------------------------------------


class Totals(NamedTuple):
    """What a thread had used by a step: visits per node, tokens, cost, LLM turns, step seconds,
    the streak of one node run again and again, and the most one step used (turns, tokens, cost)."""

    visits: dict[str, int]
    tokens: int
    cost: float
    turns: int
    seconds: float
    streak: tuple[str | None, int]
    peak: list[float]

    @classmethod
    def of(cls, data: Mapping[str, Any]) -> Totals:
        last, same = data["streak"]
        return cls(
            dict(data["visits"]),
            data["tokens"],
            data["cost"],
            data["turns"],
            data["seconds"],
            (last, same),
            list(data.get("peak") or [0, 0, 0.0]),
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "visits": self.visits,
            "tokens": self.tokens,
            "cost": self.cost,
            "turns": self.turns,
            "seconds": self.seconds,
            "streak": list(self.streak),
            "peak": self.peak,
        }


class Snapshot(NamedTuple):
    """Everything a run needs to go on from a thread's latest checkpoint, read once."""

    checkpoint: Checkpoint
    values: dict[str, Any]
    """The state, decoded."""
    records: list[Step]
    """The records of the step that led here (the run's own history starts with them)."""
    earlier: int
    """How many of the thread's records come before them."""
    totals: Totals
    start_edge: FiredEdge | None
    """The edge out of START, for a thread still at step 0."""


def snapshot(plan: Plan, store: Checkpointer, last: Checkpoint) -> Snapshot:
    """What a run going on from ``last`` (a checkpoint of ``store``) starts from."""
    records = list(last.steps)
    kept = [record for record in records if "/" not in record.path]
    totals = Totals.of(last.totals) if last.totals is not None else _totals(store.history(last.thread), last.step)
    return Snapshot(
        last,
        plan.schema.decode(last.state),
        records,
        kept[0].step - 1 if kept else last.step,
        totals,
        plan.start_edge(last.frames[0].node) if last.step == 0 and last.frames else None,
    )


def _totals(history: list[Step], upto: int) -> Totals:
    """What a run had used by step ``upto``, summed from its records."""
    visits: dict[str, int] = {}
    tokens = turns = same = 0
    cost = seconds = 0.0
    last: str | None = None
    peak: list[float] = [0, 0, 0.0]
    for record in history:
        if record.step > upto:
            break
        peak = [max(peak[0], record.turns), max(peak[1], record.tokens), max(peak[2], record.cost)]
        visits[record.node] = record.visit
        tokens, cost, turns = tokens + record.tokens, cost + record.cost, turns + record.turns
        seconds += record.duration
        last, same = record.node, same + 1 if record.node == last else 1
    return Totals(visits, tokens, cost, turns, seconds, (last, same), peak)


def open_thread(
    plan: Plan, store: Checkpointer, thread: str, answer: Any, pause_id: str | None = None, given: Given = IN_CODE
) -> tuple[Snapshot, tuple[tuple[Pause, Any, Decision], ...]]:
    """The snapshot to resume ``thread`` from, and the answers to its open pauses with their
    records (``given``: how they were given).

    An answer is bound to the pause it answers as :func:`nbgraph.pauses.bind` says; one
    for a pause that is no longer open (a duplicate, or a stale one) is refused.

    Raises:
        ResumeError: nothing to resume, the run has finished, it was made by another
            graph or stopped at a node this graph lacks, or the answer is missing,
            does not fit, answers another pause, or cannot be stored as JSON.
    """
    last = store.get(thread)
    if last is None:
        raise ResumeError(
            f"no checkpoint for thread {thread!r} in {store!r}: pass the checkpointer the run used; if it was "
            "this one, the thread was deleted or the store lost its data"
        )
    if last.graph != plan.name:
        raise ResumeError(
            f"thread {thread!r} holds a run of graph {last.graph!r}, not {plan.name!r}; resume it with that graph, "
            f"or start from its state in this one with Fork({thread!r}, step=...)"
        )
    from ..decision import decision_of
    from ..pauses import bind, read_answer

    def story(pid: str) -> str | None:
        return _answered(store, thread, last, pid)

    if last.status in ("done", "denied"):
        raise ResumeError(
            f"thread {thread!r} already finished ({last.status}){_told(answer, pause_id, story)}; fork it to run again"
        )
    _check_nodes(plan, thread, last)
    if not last.pauses:
        if answer is not None or pause_id is not None:
            why = f" ({last.reason})" if last.reason else ""
            raise ResumeError(
                f"thread {thread!r} is not waiting for an answer: it stopped {last.status}{why}"
                f"{_told(answer, pause_id, story)}; resume it without one"
            )
        return snapshot(plan, store, last), ()
    open_ = {pause.id: pause for pause in last.pauses}
    answered: list[tuple[Pause, Any, Decision]] = []
    late = overdue(last.pauses)
    if late and answer is None and pause_id is None:
        # Their deadlines answer the pauses past them; the others wait on (a breakpoint goes on).
        bound = {pid: None for pid, pause in open_.items() if pid not in late and pause.kind == "breakpoint"}
    else:
        bound = bind(last.pauses, answer, pause_id, thread=thread, story=story, shown=given.shown)
        if late:
            bound = _in_time(open_, late, bound)
    answered.extend(_timed_out(open_[pid]) for pid in open_ if pid in late)
    for pid, value in bound.items():
        pause = open_[pid]
        if value is None and pause.kind == "breakpoint":
            value = "continue"
        elif value is None:
            _ask_for_answer(thread, pause)
        check_decider(pause, given.by)
        read = read_answer(pause, value)
        answered.append((pause, read, decision_of(pause, read, via=given.via, by=given.by, reason=given.reason)))
    return snapshot(plan, store, last), tuple(answered)


def _in_time(open_: Mapping[str, Pause], late: frozenset[str], bound: dict[str, Any]) -> dict[str, Any]:
    """The answers ``bound`` gives pauses still in time; one for a pause whose deadline has
    passed is refused: its deadline decides it.

    Raises:
        ResumeError: an answer names a pause past its deadline.
    """
    from ..deadlines import moment, said

    for pid, value in bound.items():
        if pid in late and value is not None:
            pause = open_[pid]
            raise ResumeError(
                f"pause {pid!r} at node {pause.path!r} is past its deadline ({moment(pause.deadline or 0.0)}): "
                f"its deadline decides it, {said(pause)}. Nothing was answered; resume without an answer to apply "
                "that (or nbgraph.sweep_deadlines)"
            )
    return {pid: value for pid, value in bound.items() if pid not in late}


def _timed_out(pause: Pause) -> tuple[Pause, Any, Decision]:
    """The answer ``pause`` takes as its deadline has passed, and its record."""
    from ..deadlines import BY_DEADLINE, passed_reason
    from ..decision import decision_of
    from ..pauses import read_timeout

    value = read_timeout(pause)
    reason = passed_reason(pause.deadline or 0.0)
    return pause, value, decision_of(pause, value, via="deadline", by=BY_DEADLINE, reason=reason)


def _told(answer: Any, pause_id: str | None, story: Any) -> str:
    """What the thread says of the pauses an answer names, for a thread that waits for none."""
    from ..pauses import answers_by_id

    named = [pause_id] if pause_id is not None else list(answer) if answers_by_id(answer) else []
    told = [f"pause {pid!r} was {said}" for pid in named if isinstance(pid, str) and (said := story(pid))]
    return f"; {'; '.join(told)}" if told else ""


def _ask_for_answer(thread: str, pause: Pause) -> None:
    """A resume without an answer, of a thread whose pause asks a question: say what to pass."""
    if pause.kind == "budget":
        raise ResumeError(
            f"thread {thread!r} is paused before {pause.path!r}: {pause.prompt}; pass the raised limits, "
            f"answer={{'tokens': ...}} (suggested: {pause.budget.suggested if pause.budget else {}}), or 'stop'"
        )
    wanted = {"approval": "an approval", "tool": "a decision on a tool call"}.get(pause.kind, "input")
    later = ""
    if pause.deadline is not None:
        from ..deadlines import moment, said

        later = f" (or resume without one once its deadline has passed, {moment(pause.deadline)}: {said(pause)})"
    raise ResumeError(
        f"thread {thread!r} is waiting for {wanted} at node {pause.node!r} ({pause.prompt!r}); pass answer={later}"
    )


def _answered(store: Checkpointer, thread: str, last: Checkpoint, pause_id: str) -> str | None:
    """How the thread answered ``pause_id``: read from the steps of the superstep under way
    (its finished branches), from the answers a resume gave inside a node that stopped at a
    later question (a tool call decided while another call of the reply waits), from the
    thread's history, then from the decisions kept at tool calls. Only a refused answer asks."""
    from ..pauses import answered_here, answered_in

    kept = [Step.from_json(record) for entry in last.settled for record in entry["records"]]
    told = answered_in(kept, pause_id)
    if told is not None:
        return told
    decided: Mapping[str, Mapping[str, Any]] = last.meta.get("decided") or {}
    entry = decided.get(pause_id)  # (kept by pause id)
    if entry is not None:
        from ..pauses import Pause

        return answered_here(Pause.model_validate(entry["pause"]), entry["decision"]["answer"])
    told = answered_in(reversed(store.history(thread)), pause_id)
    if told is not None:
        return told
    for value in last.answers.values():  # (a decision kept from a live run, which keeps no record of it)
        record = cast("Mapping[str, Any]", value) if isinstance(value, Mapping) else None
        if record is not None and record.get("pause") == pause_id:
            given: list[Mapping[str, Any]] = record.get("decisions") or []
            return f"answered already, decided: {', '.join(str(decision.get('type')) for decision in given)}"
    return None


def _check_nodes(plan: Plan, thread: str, last: Checkpoint) -> None:
    wanted = [frame.node for frame in last.frames] + [p.node for p in last.pauses if "/" not in p.path]
    if last.record is not None and last.record.edge is None:
        wanted.append(last.record.node)  # routing out of it is still to do
    for name in wanted:
        if name not in plan.nodes:
            raise ResumeError(
                f"thread {thread!r} stopped at node {name!r}, which graph {plan.name!r} does not have"
                f"{did_you_mean(name, plan.nodes)}; put the node back, or start from an earlier step with "
                f"Fork({thread!r}, step=...)"
            )


def remembered(
    plan: Plan, thread: str, start: tuple[Frame, ...], values: dict[str, Any], history: Sequence[Step]
) -> list[Checkpoint]:
    """The checkpoints of a run that had no store, rebuilt from its ``history`` and the ``values``
    it started from: the one before its first step (``start`` are its frames), then one per step.

    The fast path takes no per-step snapshots, so the states are rebuilt here by folding the
    recorded updates; this happens once, only for a run that stopped short or is forked.
    """
    checkpoints = [Checkpoint(thread, plan.name, 0, values, start)]
    records: list[Step] = []
    for record in history:
        if record.error is not None:
            continue
        records.append(record)
        if shares_state(plan, record.path):
            values = fold_record(plan.schema, values, record)
        if "/" in record.path:
            continue  # a sub-graph's step is kept with the step of the node that ran it
        frames = plan.frames_to(record.edge.target) if record.edge and record.edge.target in (*plan.nodes, END) else ()
        checkpoints.append(Checkpoint(thread, plan.name, record.step, values, frames, **taken(records)))
        records = []
    return checkpoints


def fork_thread(
    plan: Plan, store: Checkpointer, thread: str, step: int, update: Mapping[str, Any] | None, new_thread: str | None
) -> str:
    """Start a new thread from ``thread``'s checkpoint after ``step``; returns its id.

    The new thread shares what came before (the store points at it). The step's
    routing is left undone: the forked run routes it with the graph as defined now.
    """
    new_thread = new_thread or new_id()
    store.fork(thread, step, new_thread, graph=plan.name)
    if update:
        base = store.get(new_thread)
        assert base is not None
        schema = plan.schema
        record = base.record
        values = schema.apply(
            schema.decode(base.state), update, record.node if record else START, by="Fork(update=...)"
        )
        if record is not None:
            record = record._replace(edit={**(record.edit or {}), **update})
        store.put(new_thread, base._replace(state=values, record=record))
    return new_thread
