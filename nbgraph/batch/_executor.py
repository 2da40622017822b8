"""Running one input of a batch as one engine run, and the seam where other executors plug in.

:func:`run_job` is the per-input function: given the graph and a :class:`Job` (the
input, its thread, the store), it starts the run, or continues the thread a killed or
stopped batch left, or reads back a row the store already holds, and returns a
:class:`Finished`: plain data that can travel between processes. The local executor
awaits it on the running loop; a remote executor runs the same function elsewhere.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol, runtime_checkable

from .. import engine
from ..history import Step
from ..names import START
from ._table import BatchRow

if TYPE_CHECKING:
    from ..checkpoint.base import Checkpoint, Checkpointer
    from ..engine import Budget, RunResult

__all__ = ["Executor", "Finished", "Job", "LocalExecutor", "executor_named", "run_job"]

_KEPT = frozenset({"done", "denied", "interrupted"})
"""Stored outcomes a batch run again leaves as they are (an interrupted run waits for a person:
``g.invoke(Resume(thread, answer))``)."""


class Job(NamedTuple):
    """One input of a batch, as an executor receives it."""

    input_id: Any
    input: Any
    thread: str
    """Derived from the batch id and the input id, so any process can find the run again."""
    checkpointer: Checkpointer | None = None
    budget: Budget | None = None
    """The per-run budget (None: the graph's)."""
    retry: bool = False
    """Run a stored failed run again (otherwise its failure is the row)."""


class Finished(NamedTuple):
    """What running a :class:`Job` gave: its row, the edges its run took, and (local runs) the result."""

    row: BatchRow
    edges: tuple[tuple[str, str], ...] = ()
    result: RunResult | None = None
    """The run's :class:`~nbgraph.RunResult`, when it ran in this process."""


@runtime_checkable
class Executor(Protocol):
    """Runs the inputs of a batch. The batch calls :meth:`run` once per input, from as many
    tasks of the running loop as its concurrency allows, and never more at once.

    An executor may also have ``check(graph, checkpointer)``, which the batch calls before
    any run starts: it raises when the executor cannot run this graph with this store (a
    remote one needs a store its workers can reach).
    """

    async def run(self, graph: Any, job: Job) -> Finished:
        """Run ``job`` on ``graph`` (what :func:`run_job` does) and return its :class:`Finished`."""
        ...


class LocalExecutor:
    """Runs every input as a run on the running event loop, in this process."""

    async def run(self, graph: Any, job: Job) -> Finished:
        return await run_job(graph, job)

    def __repr__(self) -> str:
        return "LocalExecutor()"


_NAMED = {
    "local": ("nbgraph.batch._executor", "LocalExecutor", None),
    "ray": ("nbgraph.batch.ray", "RayExecutor", "pip install 'nbgraph[ray]'"),
}


def executor_named(executor: Any) -> Executor:
    """The executor ``executor`` names (None or ``"local"``, ``"ray"``), or ``executor`` itself.

    Raises:
        ValueError: an unknown name; ImportError: a known one whose extra is not installed;
        TypeError: an object that is no :class:`Executor`.
    """
    if executor is None:
        return LocalExecutor()
    if isinstance(executor, str):
        named = _NAMED.get(executor)
        if named is None:
            raise ValueError(
                f"unknown executor {executor!r}: expected one of {', '.join(map(repr, _NAMED))}, or an Executor object"
            )
        module, name, extra = named
        from importlib import import_module

        try:
            cls = getattr(import_module(module), name)
        except ImportError as exc:
            raise ImportError(f"executor={executor!r} is not available here ({exc}); {extra}") from exc
        return cls()
    if not isinstance(executor, Executor):
        raise TypeError(
            f"executor must be None, 'local', 'ray' or an object with an async run(graph, job) method, "
            f"got {type(executor).__name__}"
        )
    return executor


async def run_job(graph: Any, job: Job) -> Finished:
    """Run one input of a batch and return its row: the per-input function every executor runs.

    With a store, the thread is looked up first: a run that finished (or waits for a
    person) is read back, not run again; one a crash or a Stop left mid-way continues
    from its last checkpoint; a failed one runs again only with ``job.retry``. Whatever
    goes wrong with this input (an input that does not fit the state, a busy thread)
    becomes its ``failed`` row: a batch never stops for one input.
    """
    t0 = time.perf_counter()
    store = job.checkpointer
    thread: str | None = None  # until the run exists, there is no thread to point at
    try:
        plan = graph.compile()
        if store is not None:
            last = store.get(job.thread)
            if last is not None:
                thread = job.thread
                if last.status in _KEPT or (last.status == "failed" and not job.retry):
                    return _stored(job, store, last)
                run = engine.open_run(plan, engine.Resume(job.thread), checkpointer=store, budget=job.budget)
            else:
                run = engine.open_run(plan, job.input, thread=job.thread, checkpointer=store, budget=job.budget)
        else:
            run = engine.open_run(plan, job.input, thread=job.thread, budget=job.budget)
        thread = job.thread
        result = await engine.execute(run)
    except Exception as exc:
        return Finished(
            BatchRow(
                job.input_id,
                "failed",
                (),
                0,
                0.0,
                time.perf_counter() - t0,
                f"input {job.input_id!r}: {exc}",
                thread,
            )
        )
    return finished(job.input_id, result, time.perf_counter() - t0)


def finished(input_id: Any, result: RunResult, duration: float) -> Finished:
    """The :class:`Finished` of a run that ended in this process."""
    path, edges = _walked(result.history)
    error = None if result.outcome == "done" else result.reason
    row = BatchRow(input_id, result.outcome, path, result.tokens, result.cost, duration, error, result.thread)
    return Finished(row, edges, result)


def _stored(job: Job, store: Checkpointer, last: Checkpoint) -> Finished:
    """The row of a run an earlier call finished, read back from its thread."""
    history = store.history(job.thread)
    path, edges = _walked(history)
    tokens = sum(record.tokens for record in history)
    cost = sum(record.cost for record in history)
    seconds = sum(record.duration for record in history)
    error = None if last.status == "done" else last.reason
    return Finished(BatchRow(job.input_id, last.status, path, tokens, cost, seconds, error, job.thread), edges)


def _walked(history: tuple[Step, ...] | list[Step]) -> tuple[tuple[str, ...], tuple[tuple[str, str], ...]]:
    """The nodes a run executed (as ``RunResult.path``) and the edges it took at the top level,
    START's included, each once (as :func:`~nbgraph.history.tally` counts them), in one pass."""
    path = []
    fired: dict[tuple[str, str], None] = {}
    for record in history:
        if record.error is None:
            path.append(record.node)
        if "/" in record.path:
            continue  # a sub-graph's own step
        if record.step == 1:
            fired[(START, record.node)] = None
        edge = record.edge
        if edge is not None:
            if edge.fanout:
                for target in edge.fanout:
                    fired[(edge.source, target)] = None
            else:
                fired[(edge.source, edge.target)] = None
    return tuple(path), tuple(fired)
