"""A compiled LangGraph graph as nbgraph's view draws graphs: DAG JSON from ``app.get_graph()``.

Each level is read with ``get_graph()`` (the nodes and edges LangGraph declares there);
a node that holds a sub-graph (a compiled graph added as a node, or a function that
calls one, as ``app.get_subgraphs()`` finds them) becomes a frame that opens onto that
sub-graph's own drawing, ``xray`` levels deep, as ``get_graph(xray=...)`` would show it.
Nothing is run and nothing is fetched.

What ``get_graph()`` cannot know is not drawn: a conditional edge's ``Send`` without a path
map, a ``Command(goto=...)`` without a return annotation or ``destinations=``. The view
draws such an edge the first time a run takes it, marked as discovered (:func:`discovered`).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any, NamedTuple

from ..export import DAG_SCHEMA_VERSION
from ..names import END, START
from ..plan import Breakpoints

__all__ = ["Shape", "discovered", "shape_of"]

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
    routers: Mapping[str, Mapping[str, str]] = {}
    """Level path -> node -> the names of the routing functions of its conditional edges."""
    max_steps: int | None = None
    """The run's ``recursion_limit`` (supersteps), once a run is set (``None``: LangGraph's default)."""
    mermaid: str = ""


def shape_of(app: Any, xray: bool | int = True) -> Shape:
    """The drawing of ``app`` (a compiled LangGraph graph), sub-graphs ``xray`` levels deep
    (``True``: all of them, ``False`` or 0: none)."""
    depth = -1 if xray is True else int(xray)
    routes: dict[str, dict[str, dict[str, str | None]]] = {}
    routers: dict[str, dict[str, str]] = {}
    before: set[str] = set()
    after: set[str] = set()
    level = _level(app, "", depth, routes, routers, before, after)
    dag = {"version": DAG_SCHEMA_VERSION, "mode": "graph", **level}
    mermaid = app.get_graph(xray=xray).draw_mermaid()
    breakpoints = Breakpoints(frozenset(before), frozenset(after))
    return Shape(app.name, dag, routes, breakpoints, routers, mermaid=mermaid)


def discovered(source: str, target: str, router: str | None) -> dict[str, Any]:
    """The DAG JSON edge a run took from ``source`` to ``target`` that the drawing did not
    have (``dynamic``), with a ``note`` saying how to declare it: ``router`` names the
    routing functions of ``source``'s conditional edges (None: it has none, so a node's
    ``Command(goto=...)`` took it)."""
    if router is not None:
        how = f"declare it with a path map: add_conditional_edges({source!r}, {router}, [{target!r}, ...])"
    else:
        how = (
            f"declare it with a Command[Literal[{target!r}, ...]] return annotation on {source!r}, "
            f"or add_node({source!r}, ..., destinations=({target!r}, ...))"
        )
    return {
        "from": source,
        "to": target,
        "unconditional": False,
        "label": None,
        "dynamic": True,
        "note": f"discovered while running: {how}",
    }


def _level(
    app: Any,
    path: str,
    depth: int,
    routes: dict[str, dict[str, dict[str, str | None]]],
    routers: dict[str, dict[str, str]],
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
            node["graph"] = _level(sub, prefix + name, depth - 1, routes, routers, before, after)
        nodes.append(node)
    nodes.append({"id": END, "kind": "end"})
    routers[path] = named = _routers(app)
    edges: list[dict[str, Any]] = []
    leads = routes[path] = {}
    for edge in drawn.edges:
        drawn_edge: dict[str, Any] = {"from": edge.source, "to": edge.target, "unconditional": not edge.conditional}
        if not edge.conditional:
            drawn_edge["label"] = None
        elif edge.data is not None:  # a path-map key
            drawn_edge.update(label=str(edge.data), router=True)
        elif edge.source in named:
            drawn_edge.update(label=named[edge.source], router=True)
        else:  # a node's Command(goto=...), declared by its return annotation
            drawn_edge.update(label="goto", goto=True)
        edges.append(drawn_edge)
    known = {START, END, *names}
    for declared in _declared(app, named):
        pair = (declared["from"], declared["to"])
        if pair[0] in known and pair[1] in known and all((e["from"], e["to"]) != pair for e in edges):
            edges.append(declared)
    leaving = {edge["from"] for edge in edges}
    for name in names:
        if name not in leaving:  # as get_graph() ends a node it reaches that nothing leaves
            edges.append({"from": name, "to": END, "unconditional": True, "label": None})
    for drawn_edge in edges:
        leads.setdefault(drawn_edge["from"], {})[drawn_edge["to"]] = drawn_edge["label"]
    return {"name": path.rpartition("/")[2] or app.name, "nodes": nodes, "edges": edges, "problems": []}


def _declared(app: Any, routers: Mapping[str, str]) -> Iterator[dict[str, Any]]:
    """The edges ``app``'s builder declares, as DAG JSON. ``get_graph()`` draws the edges its walk
    from START reaches, so it leaves out those of a node only an undeclared ``Send`` or
    ``Command(goto=...)`` leads to: they are declared all the same."""
    builder = getattr(app, "builder", None)
    plain: Iterable[tuple[str, str]] = getattr(builder, "edges", None) or ()
    joins: Iterable[tuple[tuple[str, ...], str]] = getattr(builder, "waiting_edges", None) or ()
    for source, target in sorted(plain):
        yield {"from": source, "to": target, "unconditional": True, "label": None}
    for sources, target in sorted(joins):
        for source in sources:
            yield {"from": source, "to": target, "unconditional": True, "label": None}
    for source, named in (getattr(builder, "branches", None) or {}).items():
        for branch in named.values():
            for key, target in (getattr(branch, "ends", None) or {}).items():
                label = str(key) if key != target else routers.get(source, "")
                yield {"from": source, "to": target, "unconditional": False, "label": label, "router": True}
    for name, spec in (getattr(builder, "nodes", None) or {}).items():
        for target in getattr(spec, "ends", None) or ():  # Command[Literal[...]], destinations=
            yield {"from": name, "to": target, "unconditional": False, "label": "goto", "goto": True}


def _routers(app: Any) -> dict[str, str]:
    """Node -> the names of the routing functions of its conditional edges."""
    builder = getattr(app, "builder", None)
    branches = getattr(builder, "branches", None) or {}
    return {source: ", ".join(named) for source, named in branches.items() if named}
