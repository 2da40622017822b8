"""Running a graph: the verbs of :class:`~nbgraph.Graph`, apart from declaring one.

How a run goes is the verb: :meth:`~Running.invoke` (synchronous),
:meth:`~Running.ainvoke` (awaited), :meth:`~Running.start` (a task of the running loop,
live in a notebook), :meth:`~Running.astream` (its events as they happen), and
:meth:`~Running.batch` / :meth:`~Running.abatch` for many inputs. Where it starts is
the input: a new input, :class:`~nbgraph.Resume` (a thread a run stopped on, with the
answer to its pause) or :class:`~nbgraph.Fork` (a step of a thread, with the graph as
defined now). Every verb takes every start.

Every method compiles the graph (cached until it changes) and hands the plan to the
engine, or to the batch package; ``Graph`` inherits them, so ``g.invoke(...)`` reads as
one object while the builder's module keeps to declaring and checking.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from . import engine, hooks

if TYPE_CHECKING:
    from .checkpoint.base import Checkpointer
    from .engine import Budget, Run, RunResult
    from .plan import Plan

__all__ = ["Running", "sweep_deadlines"]

Listener = Callable[[Any], Any]


class Running:
    """What a :class:`~nbgraph.Graph` can run; it only needs ``compile()``."""

    compile: Callable[[], Plan]

    def invoke(
        self,
        input: Any = None,
        *,
        thread: str | None = None,
        checkpointer: Checkpointer | None = None,
        budget: Budget | None = None,
        on_event: Listener | None = None,
        stepping: bool = False,
        replace: bool = False,
    ) -> RunResult:
        """Run to the end, synchronously, and return the :class:`RunResult`.

        Args:
            input: the state to start from (a dict or the state model); or
                ``Resume(paused, answer)`` to continue a thread a run stopped on; or
                ``Fork(result, step=k)`` to start a new thread after step ``k``.
            thread: the new run's thread id (a fresh one by default); a Fork's new thread.
            checkpointer: where the run keeps its checkpoints (default: the graph's; a
                resumable run without one keeps what a resume needs in the process).
            budget: limits on turns, tokens, cost and seconds (default: the graph's).
            on_event: called with each event as it happens.
            stepping: pause before every node (see :meth:`breakpoints`).
            replace: replace a run the given ``thread`` already holds (otherwise that
                is a :class:`ThreadExists` error).

        Works in scripts and inside a running notebook loop. Never waits for a person: a
        pause ends the run ``interrupted``; ``g.invoke(Resume(result, answer))`` goes on.

        Raises:
            ResumeError: a Resume with nothing to resume, or an answer that does not fit.
            ThreadBusy: another live run holds the thread.
        """
        options = _options(thread, checkpointer, budget, on_event, stepping, replace)
        return engine.invoke(self.compile(), input, **options)

    async def ainvoke(
        self,
        input: Any = None,
        *,
        thread: str | None = None,
        checkpointer: Checkpointer | None = None,
        budget: Budget | None = None,
        on_event: Listener | None = None,
        stepping: bool = False,
        replace: bool = False,
    ) -> RunResult:
        """:meth:`invoke`, awaited on the running loop (its nodes may await)."""
        options = _options(thread, checkpointer, budget, on_event, stepping, replace)
        return await engine.execute(engine.open_run(self.compile(), input, **options))

    def start(
        self,
        input: Any = None,
        *,
        thread: str | None = None,
        checkpointer: Checkpointer | None = None,
        budget: Budget | None = None,
        on_event: Listener | None = None,
        stepping: bool = False,
        replace: bool = False,
        durable: bool = False,
        display: bool | None = None,
        pace: float | None = None,
    ) -> Run:
        """Start a run as a task in the running event loop and return its :class:`Run` handle.

        ``input`` is any start :meth:`invoke` takes. The run waits for answers at its
        pauses (``run.answer(...)``, ``run.approve()``, ``run.deny()``, or the view's
        buttons); ``durable=True`` makes it end ``interrupted`` there instead. In a Jupyter
        kernel a live view of the run is displayed (``display=False`` turns that off).
        ``pace=0.5`` is slow motion: the run waits half a second before each step after the
        first, so each node shows in the view before the next runs (for teaching and demos;
        the wait counts against no budget). ``await run`` gives the :class:`RunResult`.
        """
        if pace is not None and (isinstance(pace, bool) or not isinstance(pace, (int, float)) or not 0 <= pace <= 60):
            raise ValueError(f"pace is the seconds to wait before each step, between 0 and 60, got {pace!r}")
        options = _options(thread, checkpointer, budget, on_event, stepping, replace)
        run = engine.open_run(self.compile(), input, live=not durable, pace=float(pace or 0.0), **options)
        engine.launch(run)
        if display is not False:
            hooks.run_started(run)
        return run

    def astream(
        self,
        input: Any = None,
        *,
        thread: str | None = None,
        checkpointer: Checkpointer | None = None,
        budget: Budget | None = None,
        on_event: Listener | None = None,
        stepping: bool = False,
        replace: bool = False,
    ) -> AsyncIterator[Any]:
        """The run's events as they happen (``async for event in g.astream(...)``); ``input``
        is any start :meth:`invoke` takes."""
        options = _options(thread, checkpointer, budget, on_event, stepping, replace)
        return engine.stream(engine.open_run(self.compile(), input, **options))

    def batch(
        self,
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
    ) -> Any:
        """Run every input (a list, or a dict ``{input id: input}``) at once and return a table
        with a row per input: ``input_id``, ``outcome``, ``path``, ``tokens``, ``cost``,
        ``duration``, ``error``, ``thread`` (a DataFrame when pandas is installed).

        At most ``concurrency`` runs at a time, each with ``budget``; an input that fails
        (or does not fit the state) is a ``failed`` row and the batch goes on. ``total``
        bounds the whole batch; ``batch="id"`` with a ``checkpointer`` makes it resumable
        (``retry=True`` runs its failed inputs again); see :class:`nbgraph.batch.Batch`.
        """
        from .batch import batch as run_batch

        return run_batch(
            self,
            inputs,
            concurrency=concurrency,
            budget=budget,
            total=total,
            checkpointer=checkpointer,
            batch=batch,
            retry=retry,
            executor=executor,
            progress=progress,
            table=table,
            results=results,
        )

    async def abatch(
        self,
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
    ) -> Any:
        """:meth:`batch`, awaited on the running loop (the kernel's, in a notebook)."""
        from .batch import abatch

        return await abatch(
            self,
            inputs,
            concurrency=concurrency,
            budget=budget,
            total=total,
            checkpointer=checkpointer,
            batch=batch,
            retry=retry,
            executor=executor,
            progress=progress,
            table=table,
            results=results,
        )


def sweep_deadlines(graph: Running, store: Checkpointer | None = None) -> list[RunResult]:
    """Resume every thread of ``graph`` in ``store`` (default: the graph's checkpointer) that
    stopped at a pause whose deadline has passed: each pause takes its deadline's answer,
    recorded as decided by the deadline (``Decision.by == "deadline"``), and the run goes on
    as a durable run (to its end, or its next pause).

    Run it now and then (a scheduled job, a cell) for durable runs nobody resumes; a thread
    held by a live run is left to it. Returns the results of the runs it resumed.

    >>> for result in nbgraph.sweep_deadlines(g, SQLiteCheckpointer("runs.db")):  # doctest: +SKIP
    ...     print(result.thread, result.outcome)
    """
    return engine.sweep_deadlines(graph.compile(), store)


def _options(
    thread: str | None, checkpointer: Any, budget: Any, on_event: Listener | None, stepping: bool, replace: bool
) -> dict[str, Any]:
    return {
        "thread": thread,
        "checkpointer": checkpointer,
        "budget": budget,
        "on_event": on_event,
        "stepping": stepping,
        "replace": replace,
    }
