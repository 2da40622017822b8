"""The engine: it walks a compiled :class:`~nbgraph.plan.Plan`, never the builder.

Its rooms, one concern each:

- ``walker``: the step loop over frames;
- ``context``: what a node gets besides the state;
- ``people``: pauses and approvals;
- ``limits``: budgets and usage;
- ``listeners``: events and who hears them;
- ``persistence``: checkpoints, restore, fork, the thread lock;
- ``runner``: running from synchronous code;
- ``run``: the public ``Run`` handle and ``RunResult``.

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
from .run import Run, RunResult
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
    "invoke",
    "resume",
]


def invoke(plan: Plan, input: Any = None, **options: Any) -> RunResult:
    """Run ``plan`` to the end, synchronously; see :meth:`Graph.invoke <nbgraph.Graph.invoke>`.

    Works in scripts and inside a running notebook loop. Never waits for a person:
    a pause ends the run ``interrupted``, resumable with ``g.resume``.
    """
    options.pop("live", None)
    return run_blocking(Run(plan, input, **options).execute(), all_sync=plan.all_sync)


def resume(plan: Plan, thread: str, answer: Any = None, **options: Any) -> RunResult:
    """Continue ``thread`` from its last checkpoint, synchronously."""
    options.pop("live", None)
    return run_blocking(Run.resume(plan, thread, answer, **options).execute(), all_sync=plan.all_sync)


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
    if isinstance(run_or_thread, str):
        thread, store = run_or_thread, store_for(plan, checkpointer)
    else:
        run = run_or_thread if isinstance(run_or_thread, Run) else run_or_thread._run
        thread = run.thread
        store = checkpointer or run.checkpointer or store_for(plan, None)
    new_thread = fork_thread(plan, store, thread, step, update, options.pop("thread", None))
    options.pop("live", None)
    return run_blocking(Run.resume(plan, new_thread, checkpointer=store, **options).execute(), all_sync=plan.all_sync)
