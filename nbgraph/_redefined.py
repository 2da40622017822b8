"""Cells that change a graph while a run of it waits for a person.

A re-run ``%%node`` cell swaps its code into those runs (hot swap), every live run of the
graph whether a view shows it or not; a re-run ``%%graph`` cell becomes "the graph as
defined now", which the views of those runs offer to fork onto.
"""

from __future__ import annotations

import weakref
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from .engine import live_runs

if TYPE_CHECKING:
    from .widget import GraphView

__all__ = ["graph_redefined", "latest_definition", "node_redefined", "run_views"]

run_views: weakref.WeakSet[GraphView] = weakref.WeakSet()
"""Views bound to a run."""
_definitions: dict[str, weakref.ref[Any]] = {}
"""The latest ``%%graph`` definition of each name."""


def latest_definition(name: str) -> Any:
    """The graph the latest ``%%graph`` cell named ``name`` defined, if it is still alive."""
    ref = _definitions.get(name)
    return ref() if ref is not None else None


def _waiting(graphs: set[str]) -> Iterator[tuple[GraphView, Any]]:
    """The views whose run, of one of ``graphs``, waits for a person."""
    for view in list(run_views):
        run = view.observer.run if view.observer is not None else None
        if run is not None and not run.done and run.pauses and run.plan.name in graphs:
            yield view, run


def graph_redefined(graph: Any) -> list[str]:
    """A ``%%graph`` cell defined ``graph`` anew: runs of it that wait for a person are
    offered a fork onto it. Returns their threads."""
    _definitions[graph.name] = weakref.ref(graph)
    offered = []
    for view, run in _waiting({graph.name}):
        if run.checkpointer is None:
            continue
        step = run.step
        view.redefined = {
            "graph": graph.name,
            "step": step,
            "note": f"graph {graph.name!r} was redefined while this run waits: fork it after step {step} onto the new definition",
        }
        offered.append(run.thread)
    return offered


def node_redefined(name: str, fn: Any, graphs: set[str]) -> list[str]:
    """A ``%%node`` cell defined node ``name`` anew: runs of ``graphs`` that wait for a person,
    shown in a view or not, take the new code from the node's next call (hot swap); their
    views say so. Returns their threads."""
    swapped = []
    for run in live_runs():
        if not run.pauses or run.plan.name not in graphs or name not in run.plan.nodes:
            continue
        run.replace_node(name, fn)
        for view in list(run_views):
            if view.observer is not None and view.observer.run is run.viewed:
                view.observer.note(f"node {name}: new code from the re-run cell, from its next call on")
        swapped.append(run.thread)
    return swapped
