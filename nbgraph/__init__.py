"""nbgraph: a Jupyter-native engine for LLM agent graphs.

The engine (this package's top level) imports neither IPython nor any widget
library; ``%load_ext nbgraph`` and :mod:`nbgraph.widget` add the notebook layer.
The LLM layer and the SQLite, Redis and Postgres checkpointers load on first use, so
``import nbgraph`` stays cheap.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._running import sweep_deadlines
from .answering import set_identity
from .checkpoint.base import Checkpoint, Checkpointer, Lease
from .checkpoint.memory import MemoryCheckpointer
from .compiler import GraphWarning
from .deadlines import Deadline
from .engine import Budget, Context, Fork, Outcome, Resume, Run, RunResult, default_checkpointer
from .errors import (
    CannotWaitHere,
    CheckpointError,
    GraphSyntaxError,
    GraphValidationError,
    InvalidUpdate,
    LeaseLost,
    MaxStepsExceeded,
    NbgraphError,
    NoEdgeMatched,
    NoPendingRequest,
    ResumeError,
    RoutingError,
    RunFailed,
    RunStillRunning,
    ThreadBusy,
    ThreadExists,
)
from .graph import Graph
from .history import BranchState, FiredEdge, Frame, Step
from .names import END, START, End, Goto, Send
from .plan import Breakpoints, RouteDecision
from .reducers import Reducer, accumulate, append, merge, overwrite
from .secrets import register_secret
from .state import StateView
from .storable import set_answer_limit

if TYPE_CHECKING:
    from .batch import Batch, BatchProgress, BatchRow, compare
    from .checkpoint.postgres import PostgresCheckpointer
    from .checkpoint.redis import RedisCheckpointer
    from .checkpoint.sqlite import SQLiteCheckpointer
    from .decision import decisions
    from .events import Event, parse_ndjson
    from .llm import MessagesState, OpenAIModel, ScriptedModel, llm_node, recorded, tool
    from .pauses import Approval, Pause

__version__ = "0.1.0"

__all__ = [
    "Approval",
    "Batch",
    "BatchProgress",
    "BatchRow",
    "BranchState",
    "Breakpoints",
    "Budget",
    "CannotWaitHere",
    "Checkpoint",
    "CheckpointError",
    "Checkpointer",
    "Context",
    "Deadline",
    "END",
    "End",
    "Event",
    "FiredEdge",
    "Fork",
    "Frame",
    "Goto",
    "Graph",
    "GraphSyntaxError",
    "GraphValidationError",
    "GraphWarning",
    "InvalidUpdate",
    "Lease",
    "LeaseLost",
    "MaxStepsExceeded",
    "MemoryCheckpointer",
    "MessagesState",
    "NbgraphError",
    "NoEdgeMatched",
    "NoPendingRequest",
    "OpenAIModel",
    "Outcome",
    "Pause",
    "PostgresCheckpointer",
    "RedisCheckpointer",
    "Reducer",
    "Resume",
    "ResumeError",
    "RouteDecision",
    "RoutingError",
    "Run",
    "RunFailed",
    "RunResult",
    "RunStillRunning",
    "SQLiteCheckpointer",
    "START",
    "ScriptedModel",
    "Send",
    "StateView",
    "Step",
    "ThreadBusy",
    "ThreadExists",
    "accumulate",
    "append",
    "compare",
    "decisions",
    "default_checkpointer",
    "llm_node",
    "merge",
    "overwrite",
    "parse_ndjson",
    "recorded",
    "register_secret",
    "set_answer_limit",
    "set_identity",
    "sweep_deadlines",
    "tool",
]

_LAZY = {
    "Batch": "batch",
    "BatchProgress": "batch",
    "BatchRow": "batch",
    "compare": "batch",
    "decisions": "decision",
    "Approval": "pauses",
    "Event": "events",
    "Pause": "pauses",
    "parse_ndjson": "events",
    "MessagesState": "llm",
    "OpenAIModel": "llm",
    "ScriptedModel": "llm",
    "llm_node": "llm",
    "recorded": "llm",
    "tool": "llm",
    "PostgresCheckpointer": "checkpoint.postgres",
    "RedisCheckpointer": "checkpoint.redis",
    "SQLiteCheckpointer": "checkpoint.sqlite",
}


def __getattr__(name: str) -> Any:
    # The LLM layer, the durable stores and the pydantic models of events, pauses and
    # decisions load when first named, not on `import nbgraph`.
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'nbgraph' has no attribute {name!r}")
    from importlib import import_module

    imported = import_module(f".{module}", __name__)
    value = getattr(imported, name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


def load_ipython_extension(ipython):  # type: ignore[no-untyped-def]
    """``%load_ext nbgraph``: register the magics (imported only now, so the engine stays light)."""
    from .magics import load_ipython_extension as load

    load(ipython)
