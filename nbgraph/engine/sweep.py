"""Deadlines that passed while no run held their thread: a sweep resumes every thread of a
graph whose open pauses are past their deadline, so that each takes its deadline's answer
(recorded as decided by the deadline) and the run goes on."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..deadlines import overdue
from ..errors import ResumeError, ThreadBusy
from .persistence import store_for
from .run import execute
from .runner import run_blocking
from .starts import Resume, open_run

if TYPE_CHECKING:
    from ..checkpoint.base import Checkpointer
    from ..plan import Plan
    from .result import RunResult

__all__ = ["overdue_threads", "sweep_deadlines"]


def overdue_threads(plan: Plan, store: Checkpointer) -> list[str]:
    """The threads of ``plan``'s graph in ``store`` that stopped at a pause whose deadline has passed."""
    return [thread for thread in store.threads() if _waits_past_deadline(plan, store, thread)]


def _waits_past_deadline(plan: Plan, store: Checkpointer, thread: str) -> bool:
    last = store.get(thread)
    return last is not None and last.graph == plan.name and last.status == "interrupted" and bool(overdue(last.pauses))


def sweep_deadlines(plan: Plan, store: Checkpointer | None = None) -> list[RunResult]:
    """Resume each thread of ``plan``'s graph in ``store`` (default: the graph's) whose open
    pauses are past their deadline; the results of those runs, in the store's order of threads.

    A thread that a run holds is left to it (a live run answers its own deadlines; a run
    that goes on from it applies them).
    """
    store = store_for(plan, store)
    results: list[RunResult] = []
    for thread in overdue_threads(plan, store):
        try:
            run = open_run(plan, Resume(thread), checkpointer=store)
        except ThreadBusy:
            continue
        except ResumeError:
            if _waits_past_deadline(plan, store, thread):
                raise
            continue  # another sweep, or an answer, got there first
        results.append(run_blocking(execute(run), all_sync=plan.all_sync))
    return results
