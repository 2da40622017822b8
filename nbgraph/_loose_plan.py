"""The plan a replay reads a thread or a trace with when nobody gave its graph: no nodes, a
dict state's schema (the latest value wins, ``messages`` appends), and a START that leads nowhere.
"""

from __future__ import annotations

from typing import Any

from .history import Frame
from .names import START
from .plan import NodePlan, NodeSpec, Plan
from .state import Schema

__all__ = ["loose_plan"]


def loose_plan(name: str) -> Plan:
    """A plan with no nodes: a dict state's schema, for frames of a graph nobody gave (its
    START leads nowhere: nothing is routed or run with it)."""
    start = NodePlan(
        name=START,
        fn=_nowhere,
        takes_ctx=False,
        is_async=False,
        approval=False,
        approval_before=False,
        timeout=None,
        wants_ctx=False,
        fixed=None,
        route=_nowhere,
        decide=_nowhere,
        frame=Frame(START, START),
        spec=NodeSpec(START, _nowhere, False, False),
    )
    return Plan(
        name=name,
        schema=Schema(None),
        nodes={},
        start=start,
        edges=(),
        routers={},
        max_steps=1,
        on_max_steps="return_last",
        max_same_node=1,
        all_sync=True,
    )


def _nowhere(*_: Any) -> Any:
    raise RuntimeError("a replay of a graph nobody gave routes nowhere: give the graph to route or run it")
