"""Persistence: the checkpoints a run writes, its lease, restoring, forking.

Every checkpoint of a run is built by :meth:`Persistence.save` (the state after a
step, the frames to run next, the open pauses) or :meth:`Persistence.mark` (the
last checkpoint with a new status), and every write carries the run's lease. A
store that fails (a full disk, a server gone) or a lease that was lost makes the
write raise; the walker then ends the run ``failed`` and the last good checkpoint
stays as it was. A run without a store takes no snapshots; if it stops short,
:func:`keep_in_memory` rebuilds them once, so a ``Resume`` or a ``Fork`` works.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..checkpoint.base import Checkpoint, Checkpointer, taken
from ..checkpoint.leases import Lease
from ..checkpoint.memory import MemoryCheckpointer
from ..errors import InvalidUpdate, ResumeError, ThreadExists, did_you_mean
from ..history import Frame, Step
from ..names import END, START, new_id
from ..plan import Plan
from ..state import to_jsonable
from .breaks import SLOT, Breaks, set_breaks
from .calls import replay, shares_state
from .limits import BUDGET_SLOT, Budget
from .people import check_storable, raise_budget
from .resumption import Resumption

if TYPE_CHECKING:
    from ..pauses import Pause
    from .ending import Ending
    from .walker import Walker

__all__ = [
    "Persistence",
    "default_checkpointer",
    "forget",
    "fork_thread",
    "open_thread",
    "restore",
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


class Persistence:
    """Where one run keeps its progress: its store, its lease, its last checkpoint."""

    __slots__ = ("_totals", "_walker", "last", "lease", "run", "store")

    def __init__(self, walker: Walker, store: Checkpointer | None) -> None:
        self._walker = walker
        self.store = store
        # A store that writes rows gets the run's totals with each, so a resume reads one
        # row, not every step; the memory store holds its records already.
        self._totals = store is not None and not isinstance(store, MemoryCheckpointer)
        self.last: Checkpoint | None = None
        self.lease: Lease | None = None
        self.run = new_id(size=8)
        """This run's id, written with its checkpoints."""

    def save(
        self,
        records: tuple[Step, ...],
        frames: tuple[Frame, ...],
        *,
        status: Any = "running",
        reason: str | None = None,
    ) -> None:
        """Checkpoint the state after the walker's current step, which ``records`` took.

        Raises:
            CheckpointError: the store failed; LeaseLost: the thread is no longer ours;
            InvalidUpdate: a state field cannot be stored as JSON.
        """
        if self.store is None:
            return
        walker = self._walker
        checkpoint = Checkpoint(
            walker.thread,
            walker.plan.name,
            walker.step,
            walker.values,
            frames,
            status,
            reason,
            (),
            walker.pauses.answers_copy(),
            records[-1] if records else None,
            records[:-1],
            self.run,
            walker.totals() if self._totals else None,
        )
        self._put(checkpoint)

    def progress(self) -> None:
        """A sub-graph took a step: keep where it is (and the state it changed) with the current step."""
        if self.store is None or self.last is None:
            return
        walker = self._walker
        self._put(self.last._replace(state=walker.values, levels=walker.levels(), answers=walker.pauses.answers_copy()))

    def _stop(self, ending: Ending) -> None:
        """Write how the run stopped, with what a resume must not redo: the frames to run,
        the pauses open, the branches that finished, the sub-graphs it is inside."""
        if self.store is None or self.last is None:
            return
        walker = self._walker
        finished = ending.outcome in ("done", "denied")
        checkpoint = self.last._replace(
            state=walker.values,
            frames=walker.frames,
            status=ending.outcome,
            reason=ending.reason,
            pauses=ending.pauses,
            answers=walker.pauses.answers_copy(),
            settled=() if finished else tuple(walker.root.settled),
            levels={} if finished else walker.levels(),
        )
        try:
            self._put(checkpoint)
        except Exception:
            # The run is ending on its own account; a store that cannot take the status
            # leaves the last good checkpoint, which a resume continues from.
            pass

    def _put(self, checkpoint: Checkpoint) -> None:
        assert self.store is not None
        try:
            self.store.put(checkpoint.thread, checkpoint, lease=self.lease)
        except (TypeError, ValueError) as exc:
            raise _unsaveable(checkpoint.state, checkpoint.record, exc) from exc
        self.last = checkpoint

    def finish(self, ending: Ending) -> None:
        """Record how the run ended, so a resume knows where to go on from."""
        if self.store is None:
            if ending.outcome not in ("done", "denied"):
                keep_in_memory(self._walker, ending)
        elif self.last is not None and not (self.last.status == ending.outcome == "denied"):
            self._stop(ending)

    # -- the lease --------------------------------------------------------------------

    def earlier(self, first: Step) -> list[Step]:
        """The thread's step records before ``first`` (the record a resumed run began with), from the store."""
        assert self.store is not None
        records = self.store.history(self._walker.thread)
        for i in range(len(records) - 1, -1, -1):
            if records[i] == first:
                return records[:i]
        return records

    def take_lease(self, *, force: bool = False) -> None:
        """Hold the run's thread until :meth:`release_lease`, renewed in the background.

        Raises:
            ThreadBusy: another live run holds it (unless ``force``).
        """
        if self.store is None or self.lease is not None:
            return
        self.lease = self.store.acquire(self._walker.thread, self.run, force=force)

    def release_lease(self) -> None:
        lease, self.lease = self.lease, None
        if lease is None or self.store is None:
            return
        try:
            self.store.release(lease)
        except Exception:
            pass  # a store that cannot be reached lets the lease lapse on its own

    def claim(self, *, overwrite: bool) -> None:
        """A new run on a thread id it was given: the thread must be new, or replaced on purpose.

        Raises:
            ThreadExists: the thread already holds a run and ``overwrite`` is false.
        """
        store, thread = self.store, self._walker.thread
        if store is None:
            return
        held = store.get(thread)
        if held is None:
            return
        if not overwrite:
            raise ThreadExists(
                f"thread {thread!r} already holds a run of graph {held.graph!r} ({held.status} at step {held.step}) "
                f"in {store!r}. Start this run on a new thread, continue that one with Resume({thread!r}), "
                f"branch it with Fork({thread!r}, step=...), or pass overwrite=True to replace it"
            )
        store.delete(thread)

    # -- reading back -----------------------------------------------------------------

    def state_at(self, step: int) -> dict[str, Any]:
        """The field values after ``step`` (0: the input), from the store or by replay."""
        walker = self._walker
        if step < 0 or step > walker.step:
            raise ValueError(f"step must be between 0 and {walker.step}, got {step}")
        schema = walker.plan.schema
        if self.store is not None:
            checkpoint = self.store.get(walker.thread, step)
            if checkpoint is not None:
                return schema.decode(checkpoint.state)
        if walker.input is None:
            raise ValueError("this run was resumed from a checkpoint; read earlier states from its checkpointer")
        values = walker.input
        for record in walker.history:
            if "/" not in record.path and record.step > step:
                break
            if record.error is None and shares_state(walker.plan, record.path):
                values = replay(schema, values, record)
        return values


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


def keep_in_memory(walker: Walker, ending: Ending) -> None:
    """A run without a store: keep its checkpoints in the default store, for a ``Resume`` (a run
    that stopped short, as it ends) or a ``Fork`` (asked for once it has ended).

    The fast path takes no per-step snapshots, so the states are rebuilt here by
    replaying the recorded updates; this happens once, only for such runs.
    """
    plan, thread = walker.plan, walker.thread
    store = walker.persistence.store = _DEFAULT
    store.delete(thread)
    start = (
        tuple(f for t in walker.start_edge.targets if t in plan.nodes for f in plan.frames_to(t))
        if walker.start_edge
        else walker.frames
    )
    values = walker.input
    assert values is not None  # (a run without a store started from an input: a resume has one)
    store.put(thread, Checkpoint(thread, plan.name, 0, values, start))
    records: list[Step] = []
    for record in walker.history:
        if record.error is not None:
            continue
        records.append(record)
        if shares_state(plan, record.path):
            values = replay(plan.schema, values, record)
        if "/" in record.path:
            continue  # a sub-graph's step is kept with the step of the node that ran it
        frames = plan.frames_to(record.edge.target) if record.edge and record.edge.target in (*plan.nodes, END) else ()
        store.put(thread, Checkpoint(thread, plan.name, record.step, values, frames, **taken(records)))
        records = []
    last = store.get(thread)
    assert last is not None
    last = last._replace(
        state=walker.values,
        status=ending.outcome,
        reason=ending.reason,
        frames=walker.frames,
        pauses=ending.pauses,
        answers=walker.pauses.answers_copy(),
        settled=tuple(walker.root.settled),
        levels=walker.levels(),
    )
    store.put(thread, last)
    walker.persistence.last = last


def open_thread(
    plan: Plan, store: Checkpointer, thread: str, answer: Any, pause_id: str | None = None
) -> tuple[Checkpoint, tuple[tuple[Pause, Any], ...]]:
    """The checkpoint to resume ``thread`` from, and the answers to its open pauses.

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
    from ..pauses import bind, read_answer

    story = lambda pid: _answered(store, thread, last, pid)  # noqa: E731
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
        return last, ()
    given = bind(last.pauses, answer, pause_id, thread=thread, story=story)
    open_ = {pause.id: pause for pause in last.pauses}
    answered = []
    for pid, value in given.items():
        pause = open_[pid]
        if value is None and pause.kind == "breakpoint":
            value = "continue"
        elif value is None:
            _ask_for_answer(thread, pause)
        check_storable(value, pause)
        answered.append((pause, read_answer(pause, value)))
    return last, tuple(answered)


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
    raise ResumeError(
        f"thread {thread!r} is waiting for {'an approval' if pause.kind == 'approval' else 'input'} "
        f"at node {pause.node!r} ({pause.prompt!r}); pass answer="
    )


def _answered(store: Checkpointer, thread: str, last: Checkpoint, pause_id: str) -> str | None:
    """How the thread answered ``pause_id``: read from the steps of the superstep under way
    (its finished branches), then from the thread's history. Only a refused answer asks."""
    from ..pauses import answered_in

    kept = [Step.from_json(record) for entry in last.settled for record in entry["records"]]
    return answered_in(kept, pause_id) or answered_in(reversed(store.history(thread)), pause_id)


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


def restore(walker: Walker, last: Checkpoint, answered: tuple[tuple[Pause, Any], ...]) -> None:
    """Put ``walker`` where ``last`` left its run: state, frames, history, usage, answers,
    the branches that finished and the sub-graphs it is inside."""
    persistence = walker.persistence
    assert persistence.store is not None
    walker.root.values = walker.plan.schema.decode(last.state)
    walker.input = None
    walker.root.steps = last.step
    walker.root.frames = last.frames
    walker.root.settled = list(last.settled)
    walker.pauses.answers.update(last.answers)
    resumed = walker.resumed = Resumption(last.pauses, last.levels)
    _restore_budget(walker, last)
    for pause, value in answered:
        if pause.kind == "budget":
            if value == "stop":
                resumed.answer(pause, value)  # the run ends as it starts
            else:
                raise_budget(walker, pause, value)
            if pause.reruns is not None:
                resumed.rerunning.add((pause.path, pause.branch))
        else:
            if pause.kind == "input":
                walker.pauses.answers[pause.slot or ""] = value
            resumed.answer(pause, value)
    _restore_breaks(walker, last)
    persistence.last = last
    if last.step == 0 and last.frames:
        walker.start_edge = walker.plan.start_edge(last.frames[0].node)
    # The run goes on from its last step; the ones before it are read only when asked for.
    kept = [record for record in last.steps if "/" not in record.path]
    walker.root.records = list(last.steps)
    walker.earlier = kept[0].step - 1 if kept else last.step
    totals = last.totals
    if totals is None:
        totals = _totals(persistence.store.history(walker.thread), last.step)
    walker.root.visits = dict(totals["visits"])
    walker.meter.add(totals["tokens"], totals["cost"], totals["turns"])
    walker.meter.mark()
    walker.meter.peak = list(totals.get("peak") or walker.meter.peak)
    walker.seconds = walker.meter.prior_seconds = totals["seconds"]
    walker.root.last_node, walker.root.same = totals["streak"]


def _restore_budget(walker: Walker, last: Checkpoint) -> None:
    """Limits a person raised earlier in the thread hold for the rest of it, unless this
    resume was given a budget of its own."""
    kept = last.answers.get(BUDGET_SLOT)
    if isinstance(kept, Mapping) and not walker.meter.chosen:
        walker.meter.budget = Budget(**{key: kept[key] for key in Budget._fields if key in kept})


def _restore_breaks(walker: Walker, last: Checkpoint) -> None:
    """The breakpoints a resumed run pauses at: its graph's own if it set any, else those its
    thread was started with; step mode if the resume asks for it or the run was stepping."""
    kept = last.answers.get(SLOT)
    stored = Breaks.from_json(kept) if isinstance(kept, Mapping) else None
    plan = walker.plan
    breaks = Breaks.of(plan.breakpoints) if plan.breakpoints is not None else stored or Breaks()
    breaks.stepping = (walker.breaks is not None and walker.breaks.stepping) or (stored is not None and stored.stepping)
    set_breaks(walker, breaks)


def _totals(history: list[Step], upto: int) -> dict[str, Any]:
    """What a run had used by step ``upto``, summed from its records."""
    visits: dict[str, int] = {}
    tokens = turns = same = 0
    cost = seconds = 0.0
    last: str | None = None
    peak = [0, 0, 0.0]
    for record in history:
        if record.step > upto:
            break
        peak = [max(peak[0], record.turns), max(peak[1], record.tokens), max(peak[2], record.cost)]
        visits[record.node] = record.visit
        tokens, cost, turns = tokens + record.tokens, cost + record.cost, turns + record.turns
        seconds += record.duration
        last, same = record.node, same + 1 if record.node == last else 1
    return {
        "visits": visits,
        "tokens": tokens,
        "cost": cost,
        "turns": turns,
        "seconds": seconds,
        "streak": [last, same],
        "peak": peak,
    }


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
