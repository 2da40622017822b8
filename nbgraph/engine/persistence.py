"""Persistence: checkpoints a run writes, restoring from them, forks, and the thread lock.

Every checkpoint of a run is built by :meth:`Persistence.save` (the state after a
step, the frames to run next, the open pauses) or :meth:`Persistence.mark` (the
last checkpoint with a new status). A run without a store takes no snapshots; if it
stops short, :func:`keep_for_resume` rebuilds them once, so ``g.resume`` works.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..checkpoint.base import Checkpoint, Checkpointer
from ..checkpoint.memory import MemoryCheckpointer
from ..errors import ResumeError
from ..history import Frame, Step
from ..names import START, new_id
from ..plan import Plan

if TYPE_CHECKING:
    from ..pauses import Pause
    from .ending import Ending
    from .walker import Walker

__all__ = ["Persistence", "default_checkpointer", "forget", "fork_thread", "open_thread", "restore", "store_for"]

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
    """Where one run keeps its progress: its store, the lock it holds, its last checkpoint."""

    __slots__ = ("_walker", "store", "last", "_lock")

    def __init__(self, walker: Walker, store: Checkpointer | None) -> None:
        self._walker = walker
        self.store = store
        self.last: Checkpoint | None = None
        self._lock: Any = None

    def save(
        self,
        record: Step | None,
        frames: tuple[Frame, ...],
        *,
        status: Any = "running",
        reason: str | None = None,
        pauses: tuple[Pause, ...] = (),
    ) -> None:
        """Checkpoint the state after the walker's current step."""
        if self.store is None:
            return
        walker = self._walker
        checkpoint = Checkpoint(
            walker.thread, walker.plan.name, walker.step, walker.values, frames,
            status, reason, pauses, walker.pauses.answers_copy(), record,
        )
        self.store.put(walker.thread, checkpoint)
        self.last = checkpoint

    def mark(self, status: Any, reason: str | None) -> None:
        """Give the last checkpoint a new status; the state in it stays as it was."""
        if self.store is None or self.last is None:
            return
        walker = self._walker
        checkpoint = self.last.with_status(status, reason=reason, frames=walker.frames, answers=walker.pauses.answers_copy())
        self.store.put(walker.thread, checkpoint)
        self.last = checkpoint

    def finish(self, ending: Ending) -> None:
        """Record how the run ended, so a resume knows where to go on from."""
        outcome = ending.outcome
        if self.store is None:
            if outcome not in ("done", "denied"):
                keep_for_resume(self._walker, ending)
        elif self.last is not None and self.last.status != outcome:
            if outcome in ("done", "denied") or (outcome == "aborted" and self.last.status == "running"):
                self.mark(outcome, ending.reason)

    # -- the lock ---------------------------------------------------------------------

    def take_lock(self) -> None:
        if self.store is not None and self._lock is None:
            lock = self.store.lock(self._walker.thread)
            lock.__enter__()
            self._lock = lock

    def release_lock(self) -> None:
        lock, self._lock = self._lock, None
        if lock is not None:
            lock.__exit__(None, None, None)

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
            if record.step > step:
                break
            if record.error is None:
                values = replay(schema, values, record)
        return values


def replay(schema: Any, values: dict[str, Any], record: Step) -> dict[str, Any]:
    """The values after ``record``'s update (and a person's edit) are folded in."""
    if record.update:
        values = schema.apply(values, record.update, record.node)
    if record.edit:
        values = schema.apply(values, record.edit, record.node)
    return values


def keep_for_resume(walker: Walker, ending: Ending) -> None:
    """A run without a store stopped short: keep what ``g.resume`` needs, in the default store.

    The fast path takes no per-step snapshots, so the states are rebuilt here by
    replaying the recorded updates; this happens once, only for such runs.
    """
    plan, thread = walker.plan, walker.thread
    store = walker.persistence.store = _DEFAULT
    start = plan.frames_to(walker.start_edge.target) if walker.start_edge else walker.frames
    values = walker.input
    store.put(thread, Checkpoint(thread, plan.name, 0, values, start))
    for record in walker.history:
        if record.error is not None:
            continue
        values = replay(plan.schema, values, record)
        frames = plan.frames_to(record.edge.target) if record.edge else ()
        store.put(thread, Checkpoint(thread, plan.name, record.step, values, frames, record=record))
    last = store.get(thread)
    assert last is not None
    last = last.with_status(
        ending.outcome, reason=ending.reason, frames=walker.frames, pauses=ending.pauses,
        answers=walker.pauses.answers_copy(),
    )
    store.put(thread, last)
    walker.persistence.last = last


def open_thread(plan: Plan, store: Checkpointer, thread: str, answer: Any) -> tuple[Checkpoint, tuple[Pause, Any] | None]:
    """The checkpoint to resume ``thread`` from, and the answer to its open pause.

    Raises:
        ResumeError: nothing to resume, the run has finished, or the answer is missing or does not fit.
    """
    last = store.get(thread)
    if last is None:
        raise ResumeError(f"no checkpoint for thread {thread!r} in {store!r}; pass the checkpointer the run used")
    if last.status in ("done", "denied"):
        raise ResumeError(f"thread {thread!r} already finished ({last.status}); fork it to run again")
    pause = last.pending
    if pause is None:
        return last, None
    from ..pauses import read_approval, read_input

    if answer is None:
        raise ResumeError(
            f"thread {thread!r} is waiting for {'an approval' if pause.kind == 'approval' else 'input'} "
            f"at node {pause.node!r} ({pause.prompt!r}); pass answer="
        )
    if pause.kind == "input":
        return last, (pause, read_input(pause, answer))
    return last, (pause, read_approval(answer))


def restore(walker: Walker, last: Checkpoint, resuming: tuple[Pause, Any] | None) -> None:
    """Put ``walker`` where ``last`` left its run: state, frames, history, usage, answers."""
    persistence = walker.persistence
    assert persistence.store is not None
    walker.values = walker.plan.schema.decode(last.state)
    walker.input = None
    walker.step = last.step
    walker.frames = last.frames
    walker.pauses.answers.update(last.answers)
    walker.resuming = resuming
    if resuming is not None and resuming[0].kind == "input":
        walker.pauses.answers[resuming[0].slot or ""] = resuming[1]
    persistence.last = last
    meter = walker.meter
    for checkpoint in persistence.store.list(walker.thread):
        if checkpoint.step == 0 and checkpoint.frames:
            walker.start_edge = walker.plan.start_edge(checkpoint.frames[0].node)
        record = checkpoint.record
        if record is None or checkpoint.step > last.step:
            continue
        walker.history.append(record)
        walker.visits[record.node] = record.visit
        meter.add(record.tokens, record.cost, record.turns)
        meter.prior_seconds += record.duration
        if record.node == walker.last_node:
            walker.same += 1
        else:
            walker.last_node, walker.same = record.node, 1


def fork_thread(
    plan: Plan, store: Checkpointer, thread: str, step: int, update: Mapping[str, Any] | None, new_thread: str | None
) -> str:
    """Start a new thread from ``thread``'s checkpoint after ``step``; returns its id.

    The step's routing is left undone: the forked run routes it with the graph as
    defined now.
    """
    checkpoints = [c for c in store.list(thread) if c.step <= step]
    if not checkpoints or checkpoints[-1].step != step:
        raise ResumeError(f"thread {thread!r} has no checkpoint for step {step} in {store!r}")
    new_thread = new_thread or new_id()
    for checkpoint in checkpoints[:-1]:
        store.put(new_thread, checkpoint._replace(thread=new_thread, status="running", pauses=()))
    base = checkpoints[-1]
    schema = plan.schema
    values = schema.decode(base.state)
    record = base.record
    if update:
        values = schema.apply(values, update, record.node if record else START)
        if record is not None:
            record = record._replace(edit={**(record.edit or {}), **update})
    if record is not None:
        record = record._replace(edge=None)
    store.put(new_thread, Checkpoint(new_thread, plan.name, step, values, (), answers=base.answers, record=record))
    return new_thread
