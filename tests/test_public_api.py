"""The public names, and that the engine stays free of the notebook stack."""

from __future__ import annotations

import subprocess
import sys

import nbgraph

EXPECTED_NAMES = {
    "END",
    "START",
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
    "Deadline",
    "Context",
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
    "Reducer",
    "RedisCheckpointer",
    "Resume",
    "ResumeError",
    "RouteDecision",
    "RoutingError",
    "Run",
    "RunFailed",
    "RunResult",
    "RunStillRunning",
    "SQLiteCheckpointer",
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
}


def test_exported_names_are_exactly_the_public_api():
    # Adding or dropping a public name is a decision: update this set with it.
    assert set(nbgraph.__all__) == EXPECTED_NAMES


def test_all_names_exist_and_are_unique():
    assert len(set(nbgraph.__all__)) == len(nbgraph.__all__)
    for name in nbgraph.__all__:
        assert hasattr(nbgraph, name), name
    # `from nbgraph import *` binds exactly these names.
    namespace: dict = {}
    exec("from nbgraph import *", namespace)
    assert set(namespace) - {"__builtins__"} == EXPECTED_NAMES


def test_a_graph_runs_by_verb_and_where_a_run_starts_is_its_input():
    # Resume and Fork are inputs every verb takes, so no method names a way to start.
    g = nbgraph.Graph("verbs")
    for verb in ("invoke", "ainvoke", "start", "astream", "batch", "abatch"):
        assert callable(getattr(g, verb)), verb
    for gone in ("resume", "aresume", "fork", "start_fork", "start_resume"):
        assert not hasattr(g, gone), f"Graph.{gone} is gone: pass Resume(...) or Fork(...) to a verb"
    # A run's pauses are answered with answer(); they are listed as `pauses`, on a Run and its RunResult.
    for gone in ("resume", "respond", "go_on", "step_once", "raise_budget", "pending"):
        assert not hasattr(nbgraph.Run, gone), f"Run.{gone} is gone"
    assert not hasattr(nbgraph.RunResult, "pending")


def test_all_is_sorted():
    # Python's own sorted(): case-sensitive, so capitalised names come before lowercase ones.
    names = list(nbgraph.__all__)
    inversions = [f"{a!r} before {b!r}" for a, b in zip(names, names[1:], strict=False) if a > b]
    assert names == sorted(names), "__all__ is not sorted: " + ", ".join(inversions)


def test_import_loads_neither_the_llm_layer_nor_the_durable_stores_nor_pydantics_models():
    # (pydantic's model machinery is most of an import's time: the first graph compiled loads it.)
    code = (
        "import sys, nbgraph\n"
        "loaded = [m for m in ('nbgraph.llm', 'nbgraph.checkpoint.sqlite', 'nbgraph.checkpoint.redis', "
        "'nbgraph.checkpoint.postgres', 'sqlite3', 'psycopg', 'pydantic.main', 'pydantic.fields') if m in sys.modules]\n"
        "print(','.join(loaded))\n"
        "nbgraph.ScriptedModel, nbgraph.SQLiteCheckpointer\n"
        "print('nbgraph.llm' in sys.modules, 'nbgraph.checkpoint.sqlite' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.splitlines() == ["", "True True"]


def test_reserved_names():
    assert (nbgraph.START, nbgraph.END) == ("__start__", "__end__")


def test_engine_imports_no_notebook_or_model_libraries():
    # The MCP SDK too: nbgraph.llm exports mcp_tools, which imports it only when called;
    # LangGraph only through nbgraph.langgraph.
    code = (
        "import sys, nbgraph, nbgraph.engine, nbgraph.export, nbgraph.checkpoint, nbgraph.llm, nbgraph.llm.mcp, nbgraph.prebuilt, nbgraph.dsl\n"
        "heavy = [m for m in ('IPython', 'ipywidgets', 'anywidget', 'openai', 'ipykernel', 'mcp', 'langgraph', 'langchain_core', 'marimo') if m in sys.modules]\n"
        "print(','.join(heavy))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def test_errors_subclass_the_builtins_users_catch():
    assert issubclass(nbgraph.GraphValidationError, ValueError)
    assert issubclass(nbgraph.InvalidUpdate, TypeError)
    assert issubclass(nbgraph.NoEdgeMatched, nbgraph.RoutingError)
    for name in ("GraphValidationError", "InvalidUpdate", "NoEdgeMatched", "MaxStepsExceeded", "ResumeError"):
        assert issubclass(getattr(nbgraph, name), nbgraph.NbgraphError)
