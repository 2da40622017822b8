"""Running a graph: the ``invoke`` / ``start`` / ``resume`` / ``fork`` / ``batch`` family of
:class:`~nbgraph.Graph`, apart from declaring one.

Every method compiles the graph (cached until it changes) and hands the plan to the
engine, or to the batch package; ``Graph`` inherits them, so ``g.invoke(...)`` reads as
one object while the builder's module keeps to declaring and checking.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from . import engine, hooks

if TYPE_CHECKING:
    from .checkpoint.base import Checkpointer
    from .engine import Budget, Run, RunResult
    from .plan import Plan

__all__ = ["Running"]


class Running:
    """What a :class:`~nbgraph.Graph` can run; it only needs ``compile()``."""

    compile: Callable[[], Plan]

    def invoke(self, input: Any = None, **options: Any) -> RunResult:
        """Run to the end, synchronously, and return the :class:`RunResult`.

        Options: ``thread``, ``checkpointer``, ``budget``, ``on_event``,
        ``stepping=True`` to pause before every node (see :meth:`breakpoints`), and
        ``overwrite=True`` to replace a run the given thread already holds (otherwise
        that is a :class:`ThreadExists` error). Works in scripts and inside a running
        notebook loop. Never waits for a person: a pause ends the run
        ``interrupted``, resumable with :meth:`resume`.
        """
        return engine.invoke(self.compile(), input, **options)

    async def ainvoke(self, input: Any = None, **options: Any) -> RunResult:
        """Async :meth:`invoke`."""
        return await engine.Run(self.compile(), input, **options).execute()

    def start(self, input: Any = None, *, display: bool | None = None, **options: Any) -> Run:
        """Start a run as a task in the running event loop and return its :class:`Run` handle.

        In a Jupyter kernel a live view of the run is displayed (``display=False``
        turns that off). Pauses wait for answers from the view or from
        ``run.answer`` / ``run.approve`` / ``run.deny`` (breakpoints: ``run.go_on`` /
        ``run.step_once``); ``await run`` gives the result. ``stepping=True`` pauses
        before every node.
        """
        return self._launched(engine.Run(self.compile(), input, live=True, **options), display)

    def astream(self, input: Any = None, **options: Any) -> Any:
        """Async-iterate the run's events as they happen."""
        return engine.Run(self.compile(), input, **options).stream()

    def resume(
        self,
        run_or_thread: Any,
        answer: Any = None,
        *,
        pause: str | None = None,
        force: bool = False,
        checkpointer: Checkpointer | None = None,
        **options: Any,
    ) -> RunResult:
        """Continue an interrupted, failed or aborted run from its last checkpoint.

        ``run_or_thread`` is the paused run's result (or ``Run``) or its thread id.
        ``answer`` answers its open pause; passing the result binds the answer to that
        pause, so sending it twice cannot answer a later pause (name a pause by its id
        with ``pause=`` when passing a thread id). ``force=True`` takes the thread over
        from a run whose process is gone.

        Raises:
            ResumeError: nothing to resume, or the answer is missing, stale or does not fit.
            ThreadBusy: another live run holds the thread.
        """
        return engine.resume(
            self.compile(), run_or_thread, answer, pause=pause, force=force, checkpointer=checkpointer, **options
        )

    async def aresume(
        self,
        run_or_thread: Any,
        answer: Any = None,
        *,
        pause: str | None = None,
        force: bool = False,
        checkpointer: Checkpointer | None = None,
        **options: Any,
    ) -> RunResult:
        """Async :meth:`resume`."""
        run = engine.reopen(self.compile(), run_or_thread, answer, pause=pause, force=force, checkpointer=checkpointer, **options)
        return await run.execute()

    def fork(self, run_or_thread: Any, *, step: int, update: Mapping[str, Any] | None = None, checkpointer: Checkpointer | None = None, **options: Any) -> RunResult:
        """Start a new run from the checkpoint after ``step`` with the graph as defined now.

        Nothing up to ``step`` runs again: the new thread shares those steps with the old
        one, and routing out of ``step`` is done afresh, with the edges as defined now.
        ``update`` edits the state at that point (through the reducers).
        """
        return engine.fork(self.compile(), run_or_thread, step=step, update=update, checkpointer=checkpointer, **options)

    def start_fork(
        self,
        run_or_thread: Any,
        *,
        step: int,
        update: Mapping[str, Any] | None = None,
        checkpointer: Checkpointer | None = None,
        display: bool | None = None,
        **options: Any,
    ) -> Run:
        """:meth:`fork` as a live run: a task in the running loop, like :meth:`start` (shown in a
        view inside a kernel unless ``display=False``)."""
        run = engine.forked(self.compile(), run_or_thread, step=step, update=update, checkpointer=checkpointer, live=True, **options)
        return self._launched(run, display)

    def start_resume(
        self,
        run_or_thread: Any,
        answer: Any = None,
        *,
        pause: str | None = None,
        force: bool = False,
        checkpointer: Checkpointer | None = None,
        display: bool | None = None,
        **options: Any,
    ) -> Run:
        """:meth:`resume` as a live run: a task in the running loop whose later pauses wait for
        answers, like :meth:`start`."""
        run = engine.reopen(
            self.compile(), run_or_thread, answer, pause=pause, force=force, checkpointer=checkpointer, live=True, **options
        )
        return self._launched(run, display)

    def _launched(self, run: Run, display: bool | None) -> Run:
        run.launch()
        if display is not False:
            hooks.run_started(run)
        return run

    def batch(
        self,
        inputs: Any,
        concurrency: int = 32,
        budget: Budget | None = None,
        checkpointer: Checkpointer | None = None,
        executor: Any = None,
        **options: Any,
    ) -> Any:
        """Run every input (a list, or a dict ``{input id: input}``) at once and return a table
        with a row per input: ``input_id``, ``outcome``, ``path``, ``tokens``, ``cost``,
        ``duration``, ``error``, ``thread`` (a DataFrame when pandas is installed).

        At most ``concurrency`` runs at a time, each with ``budget``; an input that fails
        (or does not fit the state) is a ``failed`` row and the batch goes on. Options:
        ``total=Budget(tokens=, cost=)`` for the whole batch, ``batch="id"`` with a
        ``checkpointer`` to make it resumable, ``retry=True``, ``progress=``, ``table=``;
        see :class:`nbgraph.batch.Batch`.
        """
        from .batch import batch

        return batch(self, inputs, concurrency=concurrency, budget=budget, checkpointer=checkpointer, executor=executor, **options)

    async def abatch(
        self,
        inputs: Any,
        concurrency: int = 32,
        budget: Budget | None = None,
        checkpointer: Checkpointer | None = None,
        executor: Any = None,
        **options: Any,
    ) -> Any:
        """Async :meth:`batch`, on the running loop (the kernel's, in a notebook)."""
        from .batch import abatch

        return await abatch(self, inputs, concurrency=concurrency, budget=budget, checkpointer=checkpointer, executor=executor, **options)
