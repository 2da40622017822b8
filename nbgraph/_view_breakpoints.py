"""The breakpoints a graph view draws, and the graph a click sets them on.

A view draws its plan's breakpoints (sub-graphs' own included), or those a graph still being
built has declared so far. A click on a node it draws (:meth:`GraphView.toggle_breakpoint
<nbgraph.widget.GraphView.toggle_breakpoint>`) toggles the one before it on the ``Graph`` the
view was made from (or the builder its plan came from), and removes one a sub-graph set itself
from that sub-graph.
"""

from __future__ import annotations

import warnings
from typing import Any

from .errors import NbgraphError

__all__ = ["breakpoints_json", "builder_of", "drop_inner_breakpoint", "node_paths", "shown_breakpoints"]


def shown_breakpoints(graph: Any, builder: Any) -> Any:
    """The breakpoints a view draws: its plan's (sub-graphs' own included), or those the
    graph declared while it cannot compile yet."""
    if graph is not builder:
        return getattr(graph, "breakpoints", None)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return graph.compile().breakpoints
    except (NbgraphError, TypeError, ValueError):  # a graph still being built: what it declared so far
        return graph.declared_breakpoints


def drop_inner_breakpoint(graph: Any, path: str) -> None:
    """Remove the breakpoint before ``path`` that the sub-graph it is in declared itself."""
    head, _, rest = path.partition("/")
    spec = graph.nodes.get(head)
    child = getattr(spec, "graph", None)
    if child is None or not rest:
        return
    declared = child.declared_breakpoints
    if declared is not None and rest in declared.before:
        child.breakpoints(before=sorted(set(declared.before) - {rest}), after=sorted(declared.after))
    else:
        drop_inner_breakpoint(child, rest)


def builder_of(graph: Any) -> Any:
    """The Graph a view sets breakpoints on: the graph itself, or the builder a plan came from."""
    if graph is None or hasattr(graph, "declared_breakpoints"):
        return graph
    builder = getattr(graph, "graph", None)
    return builder if hasattr(builder, "declared_breakpoints") else None


def breakpoints_json(breakpoints: Any) -> dict[str, list[str]]:
    if breakpoints is None:
        return {"before": [], "after": []}
    return {"before": sorted(breakpoints.before), "after": sorted(breakpoints.after)}


def node_paths(dag: dict[str, Any], prefix: str = "") -> set[str]:
    paths: set[str] = set()
    for node in dag.get("nodes") or ():
        if node.get("kind") in ("start", "end"):
            continue
        path = prefix + node["id"]
        paths.add(path)
        if node.get("graph"):
            paths |= node_paths(node["graph"], path + "/")
    return paths
