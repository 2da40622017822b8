"""The engine: it walks a compiled :class:`~nbgraph.plan.Plan`, never the builder.

Its rooms, one concern each:

- ``walker``: the step loop over frames;
- ``branches``: several frames run together as one superstep;
- ``slots``: a superstep's bookkeeping (numbering, settled entries, undoing one);
- ``levels``: the run's graph and each sub-graph it is inside;
- ``calls``: calling a node (or walking its sub-graph), folding its update in;
- ``outputs``: what a node's return value means;
- ``stops``: the ways a run stops short (a pause, max_steps, a failure, a deadline, a cancel);
- ``context``: what a node gets besides the state;
- ``people``: pauses and approvals;
- ``breaks``: breakpoints and step mode;
- ``limits``: budgets and usage;
- ``listeners``: events and who hears them;
- ``persistence``: checkpoints, restore, fork, the thread lock;
- ``runner``: running from synchronous code;
- ``run``: the public ``Run`` handle;
- ``result``: how a run ended, ``RunResult``.

One async implementation serves every entry point: the functions below drive it
from synchronous code, ``Run.launch`` runs it as a task, ``Run.stream`` feeds its
events to an async iterator.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..plan import Plan
from .context import Context
from .ending import Ending, Outcome
from .limits import Budget
from .persistence import default_checkpointer, fork_thread, store_for
from .result import RunResult
from .run import Run, live_runs
from .runner import run_blocking

__all__ = [
    "Budget",
    "Context",
    "Ending",
    "Outcome",
    "Run",
    "RunResult",
    "default_checkpointer",
    "fork",
    "forked",
    "invoke",
    "live_runs",
    "reopen",
    "resume",
]


def invoke(plan: Plan, input: Any = None, **options: Any) -> RunResult:
    """Run ``plan`` to the end, synchronously; see :meth:`Graph.invoke <nbgraph.Graph.invoke>`.

    Works in scripts and inside a running notebook loop. Never waits for a person:
    a pause ends the run ``interrupted``, resumable with ``g.resume``.
    """
    options.pop("live", None)
    return run_blocking(Run(plan, input, **options).execute(), all_sync=plan.all_sync)


def reopen(
    plan: Plan, run_or_thread: Any, answer: Any = None, *, pause: str | None = None, checkpointer: Any = None, **options: Any
) -> Run:
    """A run that continues ``run_or_thread`` (a thread id, a ``Run`` or its result), holding its lease."""
    from ..pauses import answers_by_id

    thread, store, pauses = _where(plan, run_or_thread, checkpointer)
    if pause is None and answer is not None and len(pauses) == 1 and not answers_by_id(answer):
        pause = pauses[0].id  # the answer is for the pause the caller saw
    return Run.resume(plan, thread, answer, pause=pause, checkpointer=store, **options)


def resume(plan: Plan, run_or_thread: Any, answer: Any = None, **options: Any) -> RunResult:
    """Continue a run from its last checkpoint, synchronously; see :meth:`Graph.resume <nbgraph.Graph.resume>`."""
    options.pop("live", None)
    return run_blocking(reopen(plan, run_or_thread, answer, **options).execute(), all_sync=plan.all_sync)


def _where(plan: Plan, run_or_thread: Any, checkpointer: Any) -> tuple[str, Any, tuple[Any, ...]]:
    """The thread, its store, and the pauses the caller saw open."""
    if isinstance(run_or_thread, str):
        return run_or_thread, store_for(plan, checkpointer), ()
    if isinstance(run_or_thread, RunResult):
        run, pauses = run_or_thread._run, run_or_thread.pauses
    elif isinstance(run_or_thread, Run):
        run, pauses = run_or_thread, run_or_thread.pending or (run_or_thread.result().pauses if run_or_thread.done else ())
    else:
        raise TypeError(f"expected a thread id, a Run or a RunResult, got {type(run_or_thread).__name__}")
    return run.thread, checkpointer or run.checkpointer or store_for(plan, None), pauses


def fork(
    plan: Plan,
    run_or_thread: Any,
    *,
    step: int,
    update: Mapping[str, Any] | None = None,
    checkpointer: Any = None,
    **options: Any,
) -> RunResult:
    """Start a new thread from the checkpoint after ``step`` and run it to the end."""
    options.pop("live", None)
    run = forked(plan, run_or_thread, step=step, update=update, checkpointer=checkpointer, **options)
    return run_blocking(run.execute(), all_sync=plan.all_sync)


def forked(
    plan: Plan,
    run_or_thread: Any,
    *,
    step: int,
    update: Mapping[str, Any] | None = None,
    checkpointer: Any = None,
    **options: Any,
) -> Run:
    """A run of a new thread that starts from the checkpoint after ``step``, holding its lease."""
    thread, store, _ = _where(plan, run_or_thread, checkpointer)
    new_thread = fork_thread(plan, store, thread, step, update, options.pop("thread", None))
    return Run.resume(plan, new_thread, checkpointer=store, **options)
