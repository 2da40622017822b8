"""Many runs of one graph at once: concurrency, budgets, per-input failures, resuming."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

from ..engine import Budget
from ..engine.runner import run_blocking
from ..hooks import in_notebook, notebook_layer
from ..names import new_id
from ._executor import Executor, Finished, Job, executor_named
from ._progress import BatchProgress, terminal_bar
from ._table import BatchRow, to_table

if TYPE_CHECKING:
    from ..checkpoint.base import Checkpointer
    from ..engine import RunResult

__all__ = ["Batch", "abatch", "batch", "register_view"]

_views: list[Callable[[Batch], Any]] = []
_compare_views: list[Callable[[Any, Any, Any], Any]] = []


def register_view(show: Callable[[Batch], Any], *, compare: Callable[[Any, Any, Any], Any] | None = None) -> None:
    """Install what shows a batch started inside a Jupyter kernel (the notebook layer calls this);
    ``compare(table, a, b)`` shows what :func:`~nbgraph.batch.compare` found."""
    _views[:] = [show]
    _compare_views[:] = [compare] if compare is not None else []


class Batch:
    """A batch of runs of one graph: its inputs, its limits, its progress and its rows.

    ``g.batch(...)`` and ``await g.abatch(...)`` make one and run it. Build one yourself
    to watch its :attr:`progress` (``batch.progress.subscribe(fn)``) or :meth:`stop` it
    while it runs, then ``table = await batch.run()``.

    Args:
        graph: the :class:`~nbgraph.Graph` to run (anything with ``compile()``).
        inputs: a list of inputs (their ids are their positions) or a dict
            ``{input id: input}`` (ids that stay the same when the inputs change).
        concurrency: the most runs under way at once.
        budget: each run's own :class:`~nbgraph.Budget` (None: the graph's).
        total: a :class:`~nbgraph.Budget` for the whole batch (``tokens``, ``cost``):
            once the rows so far reach it, no new run starts; runs under way end on
            their own, and the inputs left get ``skipped`` rows.
        checkpointer: where the runs keep their checkpoints (None: the graph's, if any).
        batch: the batch's id; every input's thread is ``"{batch}/{input id}"``. Called
            again with the same id and store, a batch reads back the inputs that
            finished, continues the ones a crash or a Stop left mid-way and starts the
            rest (needs a checkpointer). None: a fresh id.
        retry: also run again the inputs whose stored run failed.
        executor: None or ``"local"`` (runs on this loop), ``"ray"``, or an
            :class:`~nbgraph.batch.Executor`.
        progress: None shows progress where people look (a tqdm bar in a terminal when
            tqdm is installed; the notebook view in a kernel, once one is registered);
            False shows nothing; a callable is subscribed to :attr:`progress`.
        table: ``"auto"`` (a DataFrame when pandas imports, else the rows), ``"rows"``
            (always the list of :class:`BatchRow`) or ``"pandas"``.
        results: keep each input's :class:`~nbgraph.RunResult` in :attr:`results` (each
            holds its run's state and history: off by default, so a large batch keeps
            only its rows).
    """

    def __init__(
        self,
        graph: Any,
        inputs: Iterable[Any] | Mapping[Any, Any],
        *,
        concurrency: int = 32,
        budget: Budget | None = None,
        total: Budget | None = None,
        checkpointer: Checkpointer | None = None,
        batch: str | None = None,
        retry: bool = False,
        executor: Any = None,
        progress: Any = None,
        table: str = "auto",
        results: bool = False,
    ) -> None:
        if not isinstance(concurrency, int) or isinstance(concurrency, bool) or concurrency < 1:
            raise ValueError(f"concurrency must be a whole number of runs, at least 1, got {concurrency!r}")
        for name, value in (("budget", budget), ("total", total)):
            if value is not None and not isinstance(value, Budget):
                raise TypeError(f"{name} must be a nbgraph.Budget, got {type(value).__name__}")
        if total is not None and (total.turns is not None or total.seconds is not None):
            raise ValueError("a batch-wide total counts tokens and cost: Budget(tokens=..., cost=...)")
        if table not in ("auto", "rows", "pandas"):
            raise ValueError(f"table must be 'auto', 'rows' or 'pandas', got {table!r}")
        store = checkpointer if checkpointer is not None else getattr(graph, "checkpointer", None)
        if batch is not None and store is None:
            raise ValueError(
                f"batch={batch!r} makes the batch resumable from its checkpoints, and needs a store to keep them: "
                "pass checkpointer=SQLiteCheckpointer(path) (or any checkpointer)"
            )
        if retry and store is None:
            raise ValueError(
                "retry=True runs again the failed runs a batch's store kept: pass checkpointer= and batch="
            )
        self.graph = graph
        self.id = batch if batch is not None else new_id(size=8)
        """The batch id, the prefix of every input's thread."""
        self.inputs = _by_id(inputs)
        self.concurrency = concurrency
        self.budget = budget
        self.total = total
        self.checkpointer = store
        self.retry = retry
        self.executor: Executor = executor_named(executor)
        check = getattr(self.executor, "check", None)
        if check is not None:
            check(graph, store)  # an executor that cannot run with this store says why, before any run starts
        self.progress = BatchProgress(len(self.inputs))
        self._show = progress
        self._table = table
        self.rows: dict[Any, BatchRow] = {}
        """Each input's row, as its run ends."""
        self.results: dict[Any, RunResult] = {}
        """Each input's :class:`~nbgraph.RunResult`, for runs that ended in this process (with ``results=True``)."""
        self._keep = results
        self.table: Any = None
        """The table, once the batch has ended (also when the task awaiting it was cancelled)."""
        self._jobs: Iterator[Job] | None = None
        self._workers: list[asyncio.Task[None]] = []
        self._halt: str | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def thread(self, input_id: Any) -> str:
        """The thread of an input's run."""
        return f"{self.id}/{input_id}"

    def stop(self, why: str = "stopped") -> None:
        """Start no more runs and cancel the ones under way: they end ``aborted`` with their
        checkpoints intact (the same batch called again continues them)."""
        self._halt = self._halt or why
        loop = self._loop
        if loop is not None and not loop.is_closed():
            try:
                running = asyncio.get_running_loop()
            except RuntimeError:
                running = None
            if running is not loop:
                # From another thread (a view's Stop while a synchronous batch runs on nbgraph's own loop).
                loop.call_soon_threadsafe(self._cancel_workers)
                return
        self._cancel_workers()

    def _cancel_workers(self) -> None:
        for worker in self._workers:
            worker.cancel()

    async def run(self) -> Any:
        """Run every input and return the table (see ``table=``), in the order of the inputs.

        Cancelling the task that awaits it stops the batch as :meth:`stop` does, then lets the
        cancellation through; the table is then in :attr:`table`.
        """
        if self._jobs is not None:
            raise RuntimeError("this batch has run already; call g.batch(...) again (with batch= to continue it)")
        checkpointer, budget, retry = self.checkpointer, self.budget, self.retry
        self._jobs = (
            Job(input_id, value, self.thread(input_id), checkpointer, budget, retry)
            for input_id, value in self.inputs.items()
        )
        close = self._watch()
        cancelled = False
        try:
            count = min(self.concurrency, len(self.inputs))
            loop = self._loop = asyncio.get_running_loop()
            self._workers = [loop.create_task(self._work()) for _ in range(count)]
            try:
                await asyncio.gather(*self._workers, return_exceptions=True)
            except asyncio.CancelledError:
                # Whoever awaits the batch was cancelled (a kernel interrupt, a timeout): stop, keep the rows.
                cancelled = True
                self.stop("cancelled")
                await asyncio.gather(*self._workers, return_exceptions=True)
            why = self._halt or "stopped"
            for job in self._jobs:
                self._record(
                    Finished(BatchRow(job.input_id, "skipped", (), 0, 0.0, 0.0, f"not started: {why}", None)), False
                )
            self.progress.stopped = self._halt
            self.progress._finish()
        finally:
            if close is not None:
                close()
        rows = [self.rows[input_id] for input_id in self.inputs]
        pandas = {"auto": None, "rows": False, "pandas": True}[self._table]
        self.table = to_table(rows, BatchRow._fields, pandas=pandas, batch=self.id)
        if cancelled:
            raise asyncio.CancelledError
        return self.table

    async def _work(self) -> None:
        jobs, executor, graph, progress = self._jobs, self.executor, self.graph, self.progress
        assert jobs is not None
        while self._halt is None:
            over = self._over_total()
            if over is not None:
                self._halt = over
                return
            job = next(jobs, None)
            if job is None:
                return
            progress._start(job.input_id)
            t0 = time.perf_counter()
            try:
                done = await executor.run(graph, job)
            except asyncio.CancelledError:
                # (The local executor's run turns a cancel into an aborted result; another executor may not.)
                self._record(
                    Finished(
                        BatchRow(
                            job.input_id,
                            "aborted",
                            (),
                            0,
                            0.0,
                            time.perf_counter() - t0,
                            f"cancelled: {self._halt or 'stopped'}",
                            job.thread,
                        )
                    )
                )
                return
            except Exception as exc:
                # An executor's own failure (a lost worker): this input fails, the batch goes on.
                self._record(
                    Finished(
                        BatchRow(
                            job.input_id,
                            "failed",
                            (),
                            0,
                            0.0,
                            time.perf_counter() - t0,
                            f"input {job.input_id!r}: executor {self.executor!r} failed: {type(exc).__name__}: {exc}",
                            job.thread,
                        )
                    )
                )
                continue
            self._record(done)
            cancelling = getattr(asyncio.current_task(), "cancelling", None)  # (Python 3.11 and later)
            if cancelling is not None and cancelling():
                # Cancelled during the run, which ended aborted and swallowed the cancel: start no more.
                self._halt = self._halt or "cancelled"
                return

    def _record(self, done: Finished, started: bool = True) -> None:
        row = done.row
        self.rows[row.input_id] = row
        if done.result is not None and self._keep:
            self.results[row.input_id] = done.result
        self.progress._end(row, done.edges, started)

    def _over_total(self) -> str | None:
        total = self.total
        if total is None:
            return None
        progress = self.progress
        if total.tokens is not None and progress.tokens >= total.tokens:
            return f"batch budget exceeded: tokens {progress.tokens} >= {total.tokens}"
        if total.cost is not None and progress.cost >= total.cost:
            return f"batch budget exceeded: cost {progress.cost:.6g} >= {total.cost:.6g}"
        return None

    def _watch(self) -> Callable[[], None] | None:
        show = self._show
        if show is False:
            return None
        if callable(show):
            return self.progress.subscribe(show)
        if show is not None:
            raise TypeError(f"progress must be None, False or a callable(progress, event), got {type(show).__name__}")
        if in_notebook():
            if not _views:
                notebook_layer()  # (loads the notebook layer, which registers the view)
            if _views:
                _views[0](self)
            return None
        return terminal_bar(self.progress, f"{getattr(self.graph, 'name', 'batch')} batch")

    def __repr__(self) -> str:
        return f"<Batch {self.id!r} of graph {getattr(self.graph, 'name', '?')!r}: {self.progress!r}>"


def _by_id(inputs: Any) -> dict[Any, Any]:
    if isinstance(inputs, Mapping):
        seen: dict[str, Any] = {}
        for key in inputs:
            other = seen.setdefault(str(key), key)
            if other is not key and other != key:
                raise ValueError(
                    f"input ids {other!r} and {key!r} would share the thread of one run: give every input an id of its own"
                )
        return dict(inputs)
    if isinstance(inputs, (str, bytes)) or not isinstance(inputs, Iterable):
        raise TypeError(f"inputs must be a list of inputs or a dict {{input id: input}}, got {type(inputs).__name__}")
    return dict(enumerate(inputs))


async def abatch(graph: Any, inputs: Iterable[Any] | Mapping[Any, Any], **options: Any) -> Any:
    """Run ``graph`` on every input at once and return the table; see :class:`Batch`."""
    return await Batch(graph, inputs, **options).run()


def batch(graph: Any, inputs: Iterable[Any] | Mapping[Any, Any], **options: Any) -> Any:
    """:func:`abatch` from synchronous code (a script, or a notebook cell: it runs on nbgraph's own loop).

    A KeyboardInterrupt (a kernel interrupt) stops the batch: the runs under way end
    ``aborted`` with their checkpoints, and the table of what happened is returned.
    """
    return run_blocking(_settled(Batch(graph, inputs, **options)), all_sync=False)


async def _settled(batch: Batch) -> Any:
    try:
        return await batch.run()
    except asyncio.CancelledError:
        if batch.table is None:
            raise
        return batch.table
