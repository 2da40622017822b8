"""In-process checkpoints: no serialization, nothing survives the process."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from ..errors import ThreadBusy
from .base import Checkpoint

__all__ = ["MemoryCheckpointer"]


class MemoryCheckpointer:
    """Keeps every checkpoint in a dict, by reference.

    The engine never mutates a state dict once built, so storing references is as
    safe as storing copies and costs nothing per step.

    Args:
        max_threads: keep at most this many threads; writing a new one past the limit
            drops the thread written least recently (None: no limit).
    """

    def __init__(self, *, max_threads: int | None = None) -> None:
        self.max_threads = max_threads
        # Ordered by last write: the first thread is the one to drop.
        self._threads: dict[str, dict[int, Checkpoint]] = {}
        self._locked: set[str] = set()

    def put(self, thread: str, checkpoint: Checkpoint) -> None:
        threads = self._threads
        steps = threads.get(thread)
        if steps is None:
            steps = threads[thread] = {}
            if self.max_threads is not None and len(threads) > self.max_threads:
                self._drop_oldest()
        elif next(reversed(threads)) != thread:
            threads[thread] = threads.pop(thread)
        steps[checkpoint.step] = checkpoint

    def _drop_oldest(self) -> None:
        for thread in self._threads:
            if thread not in self._locked:
                del self._threads[thread]
                return

    def get(self, thread: str, step: int | None = None) -> Checkpoint | None:
        steps = self._threads.get(thread)
        if not steps:
            return None
        if step is None:
            return steps[max(steps)]
        return steps.get(step)

    def list(self, thread: str) -> list[Checkpoint]:
        steps = self._threads.get(thread, {})
        return [steps[k] for k in sorted(steps)]

    def threads(self) -> list[str]:
        return list(self._threads)

    def delete(self, thread: str) -> None:
        self._threads.pop(thread, None)

    @contextmanager
    def lock(self, thread: str) -> Iterator[None]:
        if thread in self._locked:
            raise ThreadBusy(f"thread {thread!r} is already being run; wait for that run or cancel it")
        self._locked.add(thread)
        try:
            yield
        finally:
            self._locked.discard(thread)

    def __repr__(self) -> str:
        return f"MemoryCheckpointer({len(self._threads)} threads)"
