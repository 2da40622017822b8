"""The inspector: one step of a run seen whole, read back without running any node.

A step's record holds what its node returned; the state the node saw is rebuilt from
the checkpoint before it (so inspecting step 2,000 of a stored thread reads two
checkpoints, not 2,000 steps) or by folding the updates before it through the
reducers. Routing is looked at again on the state routing saw: every edge out of the
node, with what its condition gives there. Conditions, maps and routers are pure by
contract, so evaluating them again runs no node; one that raises is reported with its
error, not raised.

Sources: a :class:`~nbgraph.RunResult` (``result.inspect(step)``), a live
:class:`~nbgraph.Run`, a thread in a checkpointer (:func:`inspect_step` with
``checkpointer=`` and ``graph=``), or a :class:`~nbgraph.replay.Replay` of any of them
or of an NDJSON trace (``replay.inspect(frame)``).

Its modules, one concern each: ``_models`` (what an inspection holds), ``_diff`` (what
a step changed in the state), ``_candidates`` (every edge out of the node, evaluated
again), ``_step`` (one step read from a walk of its records), ``_sources`` (where the
walk comes from: a run, a stored thread, the checkpoints around the step) and
``_problems`` (what went wrong in a whole run).
"""

from ._diff import diff_states
from ._models import (
    Candidate,
    Change,
    EdgeTaken,
    Inspection,
    LLMExchange,
    PauseSeen,
    Problem,
    Replaced,
    StateDiff,
    ToolUse,
)
from ._problems import run_problems
from ._sources import inspect_step

__all__ = [
    "Candidate",
    "Change",
    "EdgeTaken",
    "Inspection",
    "LLMExchange",
    "PauseSeen",
    "Problem",
    "Replaced",
    "StateDiff",
    "ToolUse",
    "diff_states",
    "inspect_step",
    "run_problems",
]
