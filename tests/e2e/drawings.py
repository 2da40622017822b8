"""Graphs to draw: every notebook's, read from its cells as they are now, and hard ones.

A notebook's graphs are rebuilt without running it: each ``%%graph`` cell is parsed with
every name it uses standing for a plain node function (so a cell that would fail in the
notebook, and draw nothing there, is left out), and each Python cell that builds a
``Graph("name", ...)`` is read call by call (``add_node``, ``add_edge``, ``add_router``
with literal names; conditions and functions stand as what they are named). ``%%node
--llm`` cells and ``llm_node(...)`` nodes are LLM nodes, with their tools, as in the notebook.
"""

from __future__ import annotations

import ast
import json
import shlex
import warnings
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pydantic

from nbgraph import END, START, Graph
from nbgraph.dsl import parse
from nbgraph.errors import NbgraphError
from nbgraph.export import to_dag

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = ROOT / "notebooks"


def _node(name: str, kind: str = "function", tools: tuple[str, ...] = ()) -> Any:
    """A node function that stands for ``name`` (an LLM node with ``tools`` when ``kind`` says so)."""

    def node(state: Any) -> None:
        return None

    node.__name__ = node.__qualname__ = name
    if kind == "llm":
        node.nbgraph_kind = "llm"  # type: ignore[attr-defined]
        node.nbgraph_tools = list(tools)  # type: ignore[attr-defined]
    return node


class _Names(Mapping[str, Any]):
    """A notebook's namespace as a ``%%graph`` cell sees it: every name is a node function."""

    def __init__(self, llm: Mapping[str, tuple[str, ...]]) -> None:
        self._llm = llm

    def __getitem__(self, name: str) -> Any:
        return _node(name, "llm" if name in self._llm else "function", self._llm.get(name, ()))

    def __iter__(self) -> Iterator[str]:
        return iter(())

    def __len__(self) -> int:
        return 0


def _llm_nodes(cells: list[str]) -> dict[str, tuple[str, ...]]:
    """The LLM nodes a notebook defines (``%%node NAME --llm --tools a,b``, ``NAME = llm_node(..., tools=[a, b])``)."""
    found: dict[str, tuple[str, ...]] = {}
    for source in cells:
        first, _, _ = source.lstrip().partition("\n")
        if first.startswith("%%node"):
            words = shlex.split(first)[1:]
            if "--llm" in words:
                tools = words[words.index("--tools") + 1].split(",") if "--tools" in words else []
                found[words[0]] = tuple(tools)
            continue
        try:
            tree = ast.parse(source)
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Assign) and _is_llm_node(node.value):
                for target in node.targets:
                    if isinstance(target, ast.Name):
                        found[target.id] = _tools_of(node.value)
    return found


def _is_llm_node(expr: ast.AST) -> bool:
    return isinstance(expr, ast.Call) and isinstance(expr.func, ast.Name) and expr.func.id == "llm_node"


def _tools_of(call: ast.Call) -> tuple[str, ...]:
    for keyword in call.keywords:
        if keyword.arg == "tools" and isinstance(keyword.value, (ast.List, ast.Tuple)):
            return tuple(item.id for item in keyword.value.elts if isinstance(item, ast.Name))
    return ()


class _Reader:
    """Rebuilds the graphs a Python cell builds, one literal call at a time."""

    _NAMES = {"START": START, "END": END}

    def __init__(self, llm: Mapping[str, tuple[str, ...]]) -> None:
        self.llm = llm
        self.graphs: list[Graph] = []
        self._bound: dict[str, Graph] = {}

    def bind(self, name: str, graph: Graph) -> None:
        """``name`` holds ``graph`` (a ``%%graph`` cell's) in the cells that follow."""
        self._bound[name] = graph

    def read(self, source: str) -> None:
        try:
            tree = ast.parse(source)
        except SyntaxError:  # IPython syntax (magics, top-level await in odd places): nothing to read
            return
        for node in ast.walk(tree):
            if isinstance(node, ast.Assign) and self._new_graph(node.value) is not None:
                graph = self._new_graph(node.value)
                for target in node.targets:
                    if isinstance(target, ast.Name):
                        self._bound[target.id] = graph
                self.graphs.append(graph)
            elif (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and isinstance(node.func.value, ast.Name)
            ):
                graph = self._bound.get(node.func.value.id)
                if graph is not None and node.func.attr in ("add_node", "add_edge", "add_router"):
                    self._call(graph, node.func.attr, node)

    def _new_graph(self, expr: ast.AST) -> Graph | None:
        if not (isinstance(expr, ast.Call) and isinstance(expr.func, ast.Name) and expr.func.id == "Graph"):
            return None
        name = self._literal(expr.args[0]) if expr.args else "graph"
        return Graph(name if isinstance(name, str) and name else "graph")

    def _literal(self, expr: ast.AST) -> Any:
        if isinstance(expr, ast.Name) and expr.id in self._NAMES:
            return self._NAMES[expr.id]
        if isinstance(expr, (ast.List, ast.Tuple)):
            return [self._literal(item) for item in expr.elts]
        try:
            return ast.literal_eval(expr)
        except ValueError:
            return None

    def _function(self, expr: ast.AST, name: str) -> Any:
        if isinstance(expr, ast.Name) and isinstance(self._bound.get(expr.id), Graph):
            return self._bound[expr.id]  # a sub-graph
        if _is_llm_node(expr):
            return _node(name, "llm", _tools_of(expr))  # type: ignore[arg-type]
        if isinstance(expr, ast.Name):
            return _node(expr.id, "llm" if expr.id in self.llm else "function", self.llm.get(expr.id, ()))
        return _node("<lambda>" if isinstance(expr, ast.Lambda) else name)

    def _call(self, graph: Graph, method: str, call: ast.Call) -> None:
        args = [self._literal(arg) for arg in call.args[:2]]
        keywords = {k.arg: k.value for k in call.keywords if k.arg}
        try:
            if method == "add_node" and isinstance(args[0], str):
                fn = self._function(call.args[1], args[0]) if len(call.args) > 1 else _node(args[0])
                approval = self._literal(keywords["approval"]) if "approval" in keywords else False
                graph.add_node(args[0], fn, approval=bool(approval))
            elif method == "add_edge" and len(args) == 2 and all(isinstance(a, (str, list)) for a in args):
                options: dict[str, Any] = {}
                if "when" in keywords:
                    options["when"] = self._function(keywords["when"], "condition")
                if "each" in keywords:
                    options["each"] = self._function(keywords["each"], "item")
                if "label" in keywords and isinstance(self._literal(keywords["label"]), str):
                    options["label"] = self._literal(keywords["label"])
                graph.add_edge(args[0], args[1], **options)
            elif method == "add_router" and isinstance(args[0], str) and len(call.args) > 1:
                targets = self._literal(keywords["targets"]) if "targets" in keywords else None
                graph.add_router(args[0], self._function(call.args[1], "router"), targets=targets)
        except (NbgraphError, ValueError, TypeError, IndexError):
            pass  # a call the notebook makes to show its error: it draws nothing


def notebook_dags(folder: Path = NOTEBOOKS) -> list[tuple[str, dict[str, Any]]]:
    """``(where, dag)`` for each graph the notebooks in ``folder`` build, ``where`` naming the notebook and graph."""
    found: list[tuple[str, dict[str, Any]]] = []
    for path in sorted(folder.glob("*.ipynb")):
        cells = [
            "".join(cell["source"])
            for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]
            if cell["cell_type"] == "code"
        ]
        llm = _llm_nodes(cells)
        reader = _Reader(llm)
        for source in cells:
            first, _, body = source.lstrip().partition("\n")
            if first.startswith("%%graph"):
                words = shlex.split(first)[1:]
                if not words or words[0].startswith("-"):
                    continue
                try:
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")  # what a graph's shape warns of is drawn, not said
                        graph = parse(body, _Names(llm), words[0])
                except NbgraphError:
                    continue  # the cell fails in the notebook too: nothing is drawn there
                reader.bind(words[0], graph)
                found.append((f"{path.stem}: %%graph {words[0]}", to_dag(graph)))
            elif "Graph(" in source:
                reader.read(source)
        found += [(f"{path.stem}: Graph({graph.name!r})", to_dag(graph)) for graph in reader.graphs if graph.nodes]
    return found


class Agent(pydantic.BaseModel):
    status: str = "continue"
    tool_calls: int = 0
    nudges: int = 0
    retries: int = 0
    pending: bool = False


def hard_dags() -> list[tuple[str, dict[str, Any], list[str]]]:
    """``(name, dag, frames to open)``: graphs that are hard to draw well, built with the Python API."""
    agent = Graph("agent_graph", state=Agent)
    agent.add_node("input_handler", _node("input_handler"))
    agent.add_node("agent", _node("agent", "llm", ("look_up", "send_mail")))
    agent.add_node("wrapper_nudge", _node("wrapper_nudge"))
    agent.add_edge(START, "input_handler")
    agent.add_edge("input_handler", "agent")
    agent.add_edge("agent", END, when=_node("c"), label='state.status in ("done", "blocked")')
    agent.add_edge(
        "agent",
        "wrapper_nudge",
        when=_node("c"),
        label='state.status == "in_progress" and not state.tool_calls and state.nudges < 1',
    )
    agent.add_edge("agent", "agent", when=_node("c"), label='state.status == "continue" or state.tool_calls > 0')
    agent.add_edge("agent", END)
    agent.add_edge("wrapper_nudge", "agent")

    review = Graph("review")
    review.add_node("read", _node("read"))
    review.add_node("score", _node("score", "llm"))
    review.add_edge(START, "read")
    review.add_edge("read", "score")
    review.add_edge("score", "score", when=_node("c"), label="state.confidence < 0.8 and state.rounds < 3")
    review.add_edge("score", END)

    loops = Graph("loops", state=Agent)
    loops.add_node("run_step", _node("run_step"), destinations=["run_step", "audit"])
    loops.add_node("audit", _node("audit"))
    loops.add_node("report", _node("report"), approval=True)
    loops.add_node("review", review)
    loops.add_edge(START, "run_step")
    loops.add_edge("run_step", "report")
    loops.add_edge("run_step", "run_step", when=_node("c"), label="state.retries < 3")
    loops.add_edge("audit", "audit", when=_node("c"), label="state.pending")
    loops.add_edge("audit", "run_step")
    loops.add_edge("report", "review")
    loops.add_router("review", _node("route_after_review"), targets=["run_step", END])

    words = Graph("long_labels")
    names = ["plan", "search", "read", "rank", "answer"]
    for name in names:
        words.add_node(name, _node(name))
    words.add_edge(START, "plan")
    for a, b in zip(names, names[1:], strict=False):
        words.add_edge(
            a, b, when=_node("c"), label=f"state.{a}_finished and not state.{b}_skipped and len(state.{a}_notes) > 3"
        )
        words.add_edge(a, END, when=_node("c"), label=f"state.{a}_failed or state.budget_left < 0.25 * state.budget")
    words.add_edge("answer", END)
    return [
        ("an agent that calls itself, with long conditions", to_dag(agent), []),
        ("two loops on one node, a goto loop, a loop in an open sub-graph", to_dag(loops), ["review"]),
        ("long conditions side by side", to_dag(words), []),
    ]
