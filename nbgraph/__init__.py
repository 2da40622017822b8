"""nbgraph: a Jupyter-native engine for LLM agent graphs.

The engine (this package's top level) imports neither IPython nor any widget
library; ``%load_ext nbgraph`` and :mod:`nbgraph.widget` add the notebook layer.
"""

from __future__ import annotations

from .checkpoint import Checkpoint, Checkpointer, MemoryCheckpointer, RedisCheckpointer, SQLiteCheckpointer
from .engine import Budget, Context, Outcome, Run, RunResult, default_checkpointer
from .errors import (
    GraphValidationError,
    InvalidUpdate,
    MaxStepsExceeded,
    NbgraphError,
    NoEdgeMatched,
    NoPendingRequest,
    ResumeError,
    RoutingError,
    RunFailed,
    RunStillRunning,
    ThreadBusy,
)
from .events import Event, parse_ndjson
from .graph import END, START, End, Goto, Graph, GraphWarning, RouteDecision
from .history import FiredEdge, Step
from .interrupts import Approval, Pause
from .llm import MessagesState, OpenAIModel, ScriptedModel, llm_node, tool
from .state import Reducer, StateView, accumulate, append, merge, overwrite

__version__ = "0.1.0"

__all__ = [
    "END",
    "START",
    "Approval",
    "Budget",
    "Checkpoint",
    "Checkpointer",
    "Context",
    "End",
    "Event",
    "FiredEdge",
    "Goto",
    "Graph",
    "GraphValidationError",
    "GraphWarning",
    "InvalidUpdate",
    "MaxStepsExceeded",
    "MemoryCheckpointer",
    "MessagesState",
    "NbgraphError",
    "NoEdgeMatched",
    "NoPendingRequest",
    "OpenAIModel",
    "Outcome",
    "Pause",
    "Reducer",
    "ResumeError",
    "RedisCheckpointer",
    "RouteDecision",
    "RoutingError",
    "Run",
    "RunFailed",
    "RunResult",
    "RunStillRunning",
    "SQLiteCheckpointer",
    "ScriptedModel",
    "StateView",
    "Step",
    "ThreadBusy",
    "accumulate",
    "append",
    "default_checkpointer",
    "llm_node",
    "merge",
    "overwrite",
    "tool",
    "parse_ndjson",
]


def load_ipython_extension(ipython):  # type: ignore[no-untyped-def]
    """``%load_ext nbgraph``: register the magics (imported only now, so the engine stays light)."""
    from .magics import load_ipython_extension as load

    load(ipython)
