"""A batch's progress as runs start and end, for whoever watches: a terminal bar, a notebook view."""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable
from typing import Any, Literal, NamedTuple

from ._table import BatchRow

__all__ = ["BatchProgress", "ProgressEvent"]


class ProgressEvent(NamedTuple):
    """What just happened in a batch: an input's run ``start``-ed or ``end``-ed, or the batch ``finish``-ed."""

    kind: Literal["start", "end", "finish"]
    input_id: Any = None
    row: BatchRow | None = None
    """The input's row, on ``end``."""
    edges: tuple[tuple[str, str], ...] = ()
    """The edges (source, target) the input's run took, on ``end``, each once."""


class BatchProgress:
    """Counts of a batch under way, updated as its runs start and end.

    ``subscribe(callback)`` calls ``callback(progress, event)`` after each change; the
    counts are read from the progress itself. ``edges`` maps each fired edge
    ``(source, target)`` to the ids of the inputs whose run took it (once per run),
    which a drawing of the graph turns into a route histogram.
    """

    __slots__ = (
        "_listeners",
        "cost",
        "done",
        "edges",
        "ended",
        "failed",
        "finished",
        "outcomes",
        "running",
        "started_at",
        "stopped",
        "tokens",
        "total",
    )

    def __init__(self, total: int) -> None:
        self.total = total
        """How many inputs the batch has."""
        self.running = 0
        self.ended = 0
        """Inputs that have a row (any outcome, skipped ones included)."""
        self.done = 0
        self.failed = 0
        self.outcomes: dict[str, int] = {}
        """Rows by outcome."""
        self.tokens = 0
        self.cost = 0.0
        self.edges: dict[tuple[str, str], list[Any]] = {}
        self.started_at = time.perf_counter()
        self.finished = False
        self.stopped: str | None = None
        """Why the batch stopped starting runs early (its budget, a Stop), or None."""
        self._listeners: list[Callable[[BatchProgress, ProgressEvent], Any]] = []

    @property
    def waiting(self) -> int:
        """Inputs not started yet."""
        return self.total - self.ended - self.running

    @property
    def elapsed(self) -> float:
        return time.perf_counter() - self.started_at

    @property
    def throughput(self) -> float:
        """Runs ended per second so far."""
        elapsed = self.elapsed
        return self.ended / elapsed if elapsed > 0 else 0.0

    def edge_counts(self) -> dict[tuple[str, str], int]:
        """How many runs took each edge."""
        return {edge: len(ids) for edge, ids in self.edges.items()}

    def subscribe(self, callback: Callable[[BatchProgress, ProgressEvent], Any]) -> Callable[[], None]:
        """Call ``callback(progress, event)`` after every change; returns the function that unsubscribes.

        A callback that raises is unsubscribed with a warning, so a broken view never
        stops the batch.
        """
        self._listeners.append(callback)

        def unsubscribe() -> None:
            if callback in self._listeners:
                self._listeners.remove(callback)

        return unsubscribe

    # -- fed by the batch -------------------------------------------------------------

    def _start(self, input_id: Any) -> None:
        self.running += 1
        if self._listeners:
            self._tell(ProgressEvent("start", input_id))

    def _end(self, row: BatchRow, edges: tuple[tuple[str, str], ...], started: bool = True) -> None:
        if started:
            self.running -= 1
        self.ended += 1
        outcome = row.outcome
        self.outcomes[outcome] = self.outcomes.get(outcome, 0) + 1
        if outcome == "done":
            self.done += 1
        elif outcome == "failed":
            self.failed += 1
        self.tokens += row.tokens
        self.cost += row.cost
        table = self.edges
        for edge in edges:
            ids = table.get(edge)
            if ids is None:
                table[edge] = [row.input_id]
            else:
                ids.append(row.input_id)
        if self._listeners:
            self._tell(ProgressEvent("end", row.input_id, row, edges))

    def _finish(self) -> None:
        self.finished = True
        if self._listeners:
            self._tell(ProgressEvent("finish"))

    def _tell(self, event: ProgressEvent) -> None:
        for callback in list(self._listeners):
            try:
                callback(self, event)
            except Exception as exc:
                self._listeners.remove(callback)
                warnings.warn(
                    f"batch progress callback {getattr(callback, '__qualname__', callback)!r} raised "
                    f"{type(exc).__name__}: {exc}; it is unsubscribed and the batch goes on",
                    RuntimeWarning,
                    stacklevel=2,
                )

    def __repr__(self) -> str:
        return (
            f"<BatchProgress {self.ended}/{self.total} ended ({self.done} done, {self.failed} failed), "
            f"{self.running} running, {self.tokens} tokens, ${self.cost:.4f}>"
        )


def terminal_bar(progress: BatchProgress, description: str) -> Callable[[], None] | None:
    """A tqdm bar that follows ``progress`` (tqdm installed, not in a Jupyter kernel); its closer, or None."""
    try:
        from tqdm import tqdm
    except ImportError:
        return None
    bar = tqdm(total=progress.total, desc=description, unit="run", leave=True)

    def follow(progress: BatchProgress, event: ProgressEvent) -> None:
        if event.kind != "end":
            return
        bar.update(1)
        bar.set_postfix(
            failed=progress.failed,
            running=progress.running,
            tokens=progress.tokens,
            cost=f"{progress.cost:.4f}",
            refresh=False,
        )

    unsubscribe = progress.subscribe(follow)

    def close() -> None:
        unsubscribe()
        bar.close()

    return close
