"""In-process checkpoints: no serialization, nothing survives the process."""

from __future__ import annotations

from ..errors import CheckpointError, LeaseLost, ResumeError, ThreadBusy, ThreadExists
from ..history import Step
from .base import Checkpoint
from .leases import Lease, busy_message, lost_message, new_lease

__all__ = ["MemoryCheckpointer"]


class MemoryCheckpointer:
    """Keeps every checkpoint in a dict, by reference.

    The engine never mutates a state dict once built, so storing references is as
    safe as storing copies and costs nothing per step. Leases are held in this
    process only; they last until released or unlocked.

    Args:
        max_threads: keep at most this many threads; writing a new one past the limit
            drops the thread written least recently (None: no limit).
    """

    name = "memory store"

    def __init__(self, *, max_threads: int | None = None) -> None:
        self.max_threads = max_threads
        # Ordered by last write: the first thread is the one to drop.
        self._threads: dict[str, dict[int, Checkpoint]] = {}
        self._leases: dict[str, Lease] = {}

    # -- leases -----------------------------------------------------------------------

    def acquire(self, thread: str, run: str | None = None, *, force: bool = False) -> Lease:
        held = self._leases.get(thread)
        if held is not None and not force:
            raise ThreadBusy(busy_message(thread, held, "in this process"), holder=held)
        lease = self._leases[thread] = new_lease(thread, run, None)
        return lease

    def renew(self, lease: Lease) -> Lease | None:
        return lease if self._leases.get(lease.thread) == lease else None

    def release(self, lease: Lease) -> None:
        if self._leases.get(lease.thread) == lease:
            del self._leases[lease.thread]

    def unlock(self, thread: str) -> None:
        """Take ``thread`` over from whoever holds it: that run's next write is refused."""
        self._leases.pop(thread, None)

    # -- checkpoints ------------------------------------------------------------------

    def put(self, thread: str, checkpoint: Checkpoint, *, lease: Lease | None = None) -> None:
        if lease is not None and self._leases.get(thread) != lease:
            raise LeaseLost(lost_message(thread, "in this process"))
        threads = self._threads
        steps = threads.get(thread)
        if steps is None:
            steps = threads[thread] = {}
            if self.max_threads is not None and len(threads) > self.max_threads:
                self._drop_oldest()
        else:
            latest = next(reversed(steps))
            if checkpoint.step < latest:
                raise CheckpointError(
                    f"memory store: thread {thread!r} is at step {latest}, so step {checkpoint.step} cannot be written after it",
                    store=self.name,
                    thread=thread,
                    step=checkpoint.step,
                )
            if next(reversed(threads)) != thread:
                threads[thread] = threads.pop(thread)
        steps[checkpoint.step] = checkpoint

    def _drop_oldest(self) -> None:
        for thread in self._threads:
            if thread not in self._leases:
                del self._threads[thread]
                return

    def get(self, thread: str, step: int | None = None) -> Checkpoint | None:
        steps = self._threads.get(thread)
        if not steps:
            return None
        if step is None:
            return steps[next(reversed(steps))]
        return steps.get(step)

    def history(self, thread: str) -> list[Step]:
        steps = self._threads.get(thread, {})
        return [record for checkpoint in steps.values() for record in checkpoint.steps]

    def fork(self, thread: str, step: int, new_thread: str, *, graph: str | None = None) -> None:
        if new_thread in self._threads:
            raise ThreadExists(f"thread {new_thread!r} already exists in the memory store; fork into a new thread id")
        steps = self._threads.get(thread, {})
        base = steps.get(step)
        if base is None:
            raise ResumeError(f"thread {thread!r} has no checkpoint for step {step} in {self!r}")
        copied = {k: c._replace(thread=new_thread) for k, c in steps.items() if k < step}
        copied[step] = base._replace(
            thread=new_thread,
            graph=graph or base.graph,
            frames=_refork(base),
            status="running",
            reason=None,
            pauses=(),
            **_unrouted(base),
            settled=(),
            levels={},
        )
        self._threads[new_thread] = copied

    def threads(self) -> list[str]:
        return list(self._threads)

    def delete(self, thread: str) -> None:
        self._threads.pop(thread, None)

    def __repr__(self) -> str:
        return f"MemoryCheckpointer({len(self._threads)} threads)"


def _unrouted(base: Checkpoint) -> dict[str, Step | None]:
    """A fork routes its step again with the graph as defined now: one record's edge is left to do."""
    if base.record is None or base.inner:
        return {}  # several branches: their routing stays as it was
    return {"record": base.record._replace(edge=None)}


def _refork(base: Checkpoint) -> tuple:
    return base.frames if base.inner else ()
