"""The public names, and that the engine stays free of the notebook stack."""

from __future__ import annotations

import subprocess
import sys

import nbgraph

DESIGN_NAMES = {
    "Graph", "START", "END", "Goto", "End", "Budget", "append", "merge", "accumulate",
    "MemoryCheckpointer", "SQLiteCheckpointer", "RunResult", "Run", "NoEdgeMatched", "MessagesState",
}


def test_design_names_are_exported():
    assert DESIGN_NAMES <= set(nbgraph.__all__)


def test_all_names_exist_and_are_sorted_uniquely():
    assert len(set(nbgraph.__all__)) == len(nbgraph.__all__)
    for name in nbgraph.__all__:
        assert hasattr(nbgraph, name), name


def test_reserved_names():
    assert (nbgraph.START, nbgraph.END) == ("__start__", "__end__")


def test_engine_imports_no_notebook_or_model_libraries():
    code = (
        "import sys, nbgraph, nbgraph.engine, nbgraph.export, nbgraph.checkpoint, nbgraph.llm, nbgraph.prebuilt\n"
        "try:\n    import nbgraph.dsl\nexcept ImportError:\n    pass\n"
        "heavy = [m for m in ('IPython', 'ipywidgets', 'anywidget', 'openai', 'ipykernel') if m in sys.modules]\n"
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
