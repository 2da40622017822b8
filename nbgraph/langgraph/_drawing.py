"""A compiled LangGraph graph as nbgraph's view draws graphs: DAG JSON from ``app.get_graph()``.

Each level is read with ``get_graph()`` (the nodes and edges LangGraph declares there);
a node that holds a sub-graph (a compiled graph added as a node, or a function that
calls one, as ``app.get_subgraphs()`` finds them) becomes a frame that opens onto that
sub-graph's own drawing, ``xray`` levels deep, as ``get_graph(xray=...)`` would show it.
Nothing is run and nothing is fetched.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

from ..export import DAG_SCHEMA_VERSION
from ..names import END, START
from ..plan import Breakpoints

__all__ = ["Shape", "shape_of"]

_ANY_NODE = "*"  # interrupt_before="*": a breakpoint before every node


class Shape(NamedTuple):
    """A compiled LangGraph graph as the view reads it (the view's ``plan``)."""

    name: str
    dag: dict[str, Any]
    """DAG JSON, as :func:`nbgraph.export.to_dag` makes it for an nbgraph graph."""
    routes: Mapping[str, Mapping[str, Mapping[str, str | None]]]
    """Level path ("" for the graph itself, ``outer/inner`` for a sub-graph) -> node -> the
    nodes an edge drawn there leads to -> its label: where a step's routing went is read from it."""
    breakpoints: Breakpoints
    """The static breakpoints compiled in (``interrupt_before`` / ``interrupt_after``), by path."""
    max_steps: int | None = None
    """The run's ``recursion_limit`` (supersteps), once a run is set (``None``: LangGraph's default)."""
    mermaid: str = ""


def shape_of(app: Any, xray: bool | int = True) -> Shape:
    """The drawing of ``app`` (a compiled LangGraph graph), sub-graphs ``xray`` levels deep
    (``True``: all of them, ``False`` or 0: none)."""
    depth = -1 if xray is True else int(xray)
    routes: dict[str, dict[str, dict[str, str | None]]] = {}
    before: set[str] = set()
    after: set[str] = set()
    level = _level(app, "", depth, routes, before, after)
    dag = {"version": DAG_SCHEMA_VERSION, "mode": "graph", **level}
    mermaid = app.get_graph(xray=xray).draw_mermaid()
    return Shape(app.name, dag, routes, Breakpoints(frozenset(before), frozenset(after)), mermaid=mermaid)


def _level(
    app: Any,
    path: str,
    depth: int,
    routes: dict[str, dict[str, dict[str, str | None]]],
    before: set[str],
    after: set[str],
) -> dict[str, Any]:
    drawn = app.get_graph()
    inner = dict(app.get_subgraphs()) if depth != 0 else {}
    prefix = f"{path}/" if path else ""
    names = [node_id for node_id in drawn.nodes if node_id not in (START, END)]
    for names_set, declared in ((before, app.interrupt_before_nodes), (after, app.interrupt_after_nodes)):
        chosen = names if declared == _ANY_NODE else [name for name in declared if name in names]
        names_set.update(prefix + name for name in chosen)
    nodes: list[dict[str, Any]] = [{"id": START, "kind": "start"}]
    for name in names:
        node: dict[str, Any] = {"id": name, "kind": "function", "approval": False}
        tools = getattr(drawn.nodes[name].data, "tools_by_name", None)
        if tools:
            node["tools"] = list(tools)
        sub = inner.get(name)
        if sub is not None:
            node["kind"] = "graph"
            node["graph"] = _level(sub, prefix + name, depth - 1, routes, before, after)
        nodes.append(node)
    nodes.append({"id": END, "kind": "end"})
    routers = _routers(app)
    edges: list[dict[str, Any]] = []
    leads = routes[path] = {}
    for edge in drawn.edges:
        drawn_edge: dict[str, Any] = {"from": edge.source, "to": edge.target, "unconditional": not edge.conditional}
        if not edge.conditional:
            drawn_edge["label"] = None
        elif edge.data is not None:  # a path-map key
            drawn_edge.update(label=str(edge.data), router=True)
        elif edge.source in routers:
            drawn_edge.update(label=routers[edge.source], router=True)
        else:  # a node's Command(goto=...), declared by its return annotation
            drawn_edge.update(label="goto", goto=True)
        edges.append(drawn_edge)
        leads.setdefault(edge.source, {})[edge.target] = drawn_edge["label"]
    return {"name": path.rpartition("/")[2] or app.name, "nodes": nodes, "edges": edges, "problems": []}


def _routers(app: Any) -> dict[str, str]:
    """Node -> the names of the routing functions of its conditional edges."""
    builder = getattr(app, "builder", None)
    branches = getattr(builder, "branches", None) or {}
    return {source: ", ".join(named) for source, named in branches.items() if named}
