"""Folding: how a step's update, a person's edit and a sub-graph's steps go into the state.

Pure functions of values and records, shared by the step that runs and by everything that
reads a run back (a replay, an inspection, a store without snapshots).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..history import Frame, Step
from ..plan import Plan
from ..state import Schema

__all__ = ["fold", "fold_record", "shares_state"]


def fold(
    plan: Plan, values: dict[str, Any], update: Mapping[str, Any] | None, inner: tuple[Step, ...], frame: Frame
) -> dict[str, Any]:
    """The values after a step's ``update`` (and a sub-graph's ``inner`` steps) are folded in.

    A sub-graph on this graph's state worked on a copy of it: its steps' updates are
    folded here, in order, as if it had run inline, so branches that each ran one
    fold the same way whatever order they finished in.

    Raises:
        InvalidUpdate: the update does not fit the state.
    """
    if inner:
        node = plan.nodes[frame.node]
        if node.subplan is not None and node.spec.input is None:
            prefix = len(frame.path) + 1
            for record in inner:
                if record.error is None and shares_state(node.subplan, record.path[prefix:]):
                    values = fold_record(plan.schema, values, record)
    if update:
        values = plan.schema.apply(values, update, frame.node)
    return values


def fold_record(schema: Schema, values: dict[str, Any], record: Step) -> dict[str, Any]:
    """The values after ``record``'s update (and a person's edit) are folded in."""
    if record.update:
        values = schema.apply(values, record.update, record.node)
    if record.edit:
        values = schema.apply(values, record.edit, record.node)
    return values


def shares_state(plan: Plan, path: str) -> bool:
    """Whether a record at ``path`` (below ``plan``) changed ``plan``'s state: every sub-graph on the way shares it."""
    *containers, _ = path.split("/")
    for name in containers:
        node = plan.nodes.get(name)
        if node is None or node.subplan is None or node.spec.input is not None:
            return False
        plan = node.subplan
    return True
