"""The engine: it walks a compiled :class:`~nbgraph.plan.Plan`, never the builder.

Its rooms, one concern each:

- ``walker``: the step loop over frames, and the run's state;
- ``step``: one step as prepare -> run -> close, one frame or several;
- ``slots``: a slot and the closed union of how it settles (``Outcome``), settled entries;
- ``branches``: running a step's slots, several at once as branches;
- ``calls``: calling a node (or walking its sub-graph);
- ``levels``: the run's graph and each sub-graph it is inside;
- ``folds``: folding updates and records into a state (pure);
- ``outputs``: what a node's return value means;
- ``stops``: the ways a run stops short (max_steps, a failure, a deadline, a cancel);
- ``context``: what a node gets besides the state (``RunDoor``);
- ``people``: pauses, approvals and verdicts (``Asking``);
- ``breaks``: breakpoints and step mode;
- ``limits``: budgets and usage (``Meter``);
- ``listeners``: events and who hears them;
- ``persistence``: checkpoints, the snapshot a resume reads, fork, the thread lock;
- ``resumption``: what a resume brings to the run it continues;
- ``runner``: running from synchronous code;
- ``starts``: where a run starts (an input, ``Resume``, ``Fork``);
- ``sweep``: resuming threads whose pauses are past their deadline;
- ``run``: the public ``Run`` handle, and ``RunView`` for the view;
- ``ending``: how a run ended, as a value (``Ending``);
- ``result``: how a run ended, ``RunResult``.

One async implementation serves every entry point: :func:`execute` awaits a run to its
end (:func:`invoke` drives that from synchronous code), :func:`launch` runs it as a task,
:func:`stream` feeds its events to an async iterator.
"""

from __future__ import annotations

from typing import Any

from ..plan import Plan
from .context import Context
from .ending import Ending, Outcome
from .limits import Budget
from .persistence import default_checkpointer
from .result import RunResult
from .run import Run, RunView, execute, launch, live_runs, stream
from .runner import run_blocking
from .starts import Fork, Resume, open_run
from .sweep import sweep_deadlines

__all__ = [
    "Budget",
    "Context",
    "Ending",
    "Fork",
    "Outcome",
    "Resume",
    "Run",
    "RunResult",
    "RunView",
    "default_checkpointer",
    "execute",
    "invoke",
    "launch",
    "live_runs",
    "open_run",
    "stream",
    "sweep_deadlines",
]


def invoke(plan: Plan, source: Any = None, **options: Any) -> RunResult:
    """Run ``plan`` from ``source`` to the end, synchronously; see :meth:`Graph.invoke <nbgraph.Graph.invoke>`.

    Works in scripts and inside a running notebook loop. Never waits for a person:
    a pause ends the run ``interrupted``, resumable with ``Resume(result, answer)``.
    """
    return run_blocking(execute(open_run(plan, source, **options)), all_sync=plan.all_sync)
