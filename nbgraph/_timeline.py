"""A run's records read back: grouped by the level and the superstep they ran in, and
folded from a level's first state through the reducers; no node runs.

A history lists a sub-graph's steps before the step of the node that ran it, and a
superstep's branches one after the other. A store checkpoints a superstep once, so its
records come together; a history without a store does not say where a superstep ends,
so :func:`supersteps` tells them apart. :class:`Walk` folds one level and says, for
each of its steps, the state its node saw and the state routing saw.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, NamedTuple

from .engine.context import Context
from .engine.folds import fold_record, shares_state
from .history import Step
from .plan import FirstMatch, Plan

__all__ = [
    "Entry",
    "Walk",
    "describe",
    "entries",
    "fold_entry",
    "payload_branch",
    "record_key",
    "routing_ctx",
    "supersteps",
]


class Entry(NamedTuple):
    """A record at one level, with the steps of the sub-graph it ran (before it in the history)."""

    record: Step
    inner: tuple[Step, ...] = ()


def entries(records: Sequence[Step], prefix: str) -> list[Entry]:
    """The records at the level under ``prefix``, each with its sub-graph's records.

    A sub-graph's records come before the record of the node that ran it; branches
    running sub-graphs at once may interleave theirs, so each goes to its own node by
    path and branch.
    """
    cut = len(prefix)
    out: list[Entry] = []
    pending: list[Step] = []
    for record in records:
        if "/" in record.path[cut:]:
            pending.append(record)
            continue
        inner: tuple[Step, ...] = ()
        if pending:
            mine = [r for r in pending if _inside(r, record)]
            if mine:
                inner = tuple(mine)
                pending = [r for r in pending if not _inside(r, record)]
        out.append(Entry(record, inner))
    return out


def _inside(record: Step, container: Step) -> bool:
    if not record.path.startswith(container.path + "/"):
        return False
    own = container.branch
    return own is None or record.branch == own or (record.branch or "").startswith(own + "/")


def supersteps(entries: Sequence[Entry], own: str | None) -> list[list[int]]:
    """The supersteps of a level's entries, as lists of indexes.

    A store keeps a superstep's records together; a history without one does not, so
    they are told apart here: a superstep's branches have consecutive steps and distinct
    branch ids other than the level's own, and none of them runs where another one's
    edge led.
    """
    groups: list[list[int]] = []
    current: list[int] = []
    ids: set[str] = set()
    for i, entry in enumerate(entries):
        record = entry.record
        branch = record.branch
        if (
            current
            and branch is not None
            and branch != own
            and branch not in ids
            and record.step == entries[current[-1]].record.step + 1
            and not any(_feeds(entries[j].record, record) for j in current)
        ):
            current.append(i)
            ids.add(branch)
            continue
        if current:
            groups.append(current)
        current = [i]
        ids = {branch} if branch is not None and branch != own else set()
        if not ids:
            groups.append(current)
            current = []
    if current:
        groups.append(current)
    return groups


def _feeds(earlier: Step, record: Step) -> bool:
    """Whether ``record`` runs where ``earlier``'s edge led as a new branch (so in a later superstep)."""
    edge = earlier.edge
    if edge is None or record.node not in edge.targets or record.branch is None:
        return False
    last = record.branch.rpartition("/")[2]
    return len(edge.targets) > 1 or last == record.node or last.startswith(record.node + "[")


def fold_entry(plan: Plan, values: dict[str, Any], entry: Entry) -> dict[str, Any]:
    """The values after ``entry``'s step: a shared sub-graph's steps, then the node's update and edit."""
    record = entry.record
    if record.error is not None:
        return values
    if entry.inner:
        node = plan.nodes.get(record.node)
        if node is not None and node.subplan is not None and node.spec.input is None:
            cut = len(record.path) + 1
            for inner in entry.inner:
                if inner.error is None and shares_state(node.subplan, inner.path[cut:]):
                    values = fold_record(plan.schema, values, inner)
    return fold_record(plan.schema, values, record)


class Walk:
    """A level's entries folded from the state it began with: for each, the state its
    node saw (its superstep's start) and the state routing saw (its superstep's end)."""

    def __init__(
        self,
        plan: Plan,
        records: Sequence[Step],
        values: dict[str, Any],
        *,
        prefix: str = "",
        own: str | None = None,
        whole: bool = False,
        before: Sequence[Step] = (),
        missing: Sequence[str] = (),
    ) -> None:
        """``whole``: the records are one superstep (from a checkpoint); ``before``: the records
        of the superstep before them (where a map's items came from)."""
        self.plan = plan
        self.prefix = prefix
        self.missing = list(missing)
        self.entries = entries(records, prefix)
        groups = [list(range(len(self.entries)))] if whole else supersteps(self.entries, own)
        n = len(self.entries)
        self.seen: list[dict[str, Any]] = [values] * n
        self.routing: list[dict[str, Any]] = [values] * n
        self.groups: list[list[int]] = [[]] * n
        self.previous: list[Sequence[Step]] = [before] * n
        prior: Sequence[Step] = before
        for group in groups:
            base = values
            for i in group:
                self.seen[i] = base
                values = fold_entry(plan, values, self.entries[i])
            members = [self.entries[i].record for i in group]
            for i in group:
                self.routing[i] = values
                self.groups[i] = group
                self.previous[i] = prior
            prior = members
        self.values = values

    def find(self, target: Step) -> tuple[int, bool] | None:
        """Where ``target`` is: its entry, and whether it is inside that entry's sub-graph."""
        key = record_key(target)
        for i, entry in enumerate(self.entries):
            if entry.record is target or record_key(entry.record) == key:
                return i, False
            if any(inner is target or record_key(inner) == key for inner in entry.inner):
                return i, True
        return None

    def descend(self, i: int) -> Walk:
        """The walk of the sub-graph entry ``i`` ran, from the state it began with."""
        entry = self.entries[i]
        record = entry.record
        node = self.plan.nodes[record.node]
        subplan = node.subplan
        assert subplan is not None
        missing = list(self.missing)
        seen = self.seen[i]
        if node.spec.input is None:
            values = dict(seen)
        else:
            known, payload = self.payload(i)
            try:
                if known:
                    given = payload
                elif payload_branch(record):
                    raise LookupError("the payload its node was sent is not recorded")
                else:
                    given = self.plan.schema.view(seen)
                values = subplan.schema.initial(node.spec.input(given))
            except Exception as exc:
                missing.append(
                    f"the state sub-graph {record.path!r} began with could not be rebuilt ({describe(exc)}); it is shown from its own steps' updates only"
                )
                values = {}
        return Walk(subplan, entry.inner, values, prefix=record.path + "/", own=record.branch, missing=missing)

    def payload(self, i: int) -> tuple[bool, Any]:
        """The item a map gave entry ``i``'s node (known, value); a ``Send``'s payload is not recorded."""
        record = self.entries[i].record
        match = _INDEX.search(record.branch or "")
        if match is None or not record.branch or not record.branch.rpartition("/")[2].startswith(record.node + "["):
            return False, None
        index = int(match.group(1))
        for source in self.previous[i]:
            edge = source.edge
            if edge is None or record.node not in edge.targets or edge.label == "send":
                continue
            node = self.plan.nodes.get(source.node)
            owner = getattr(node.decide, "__self__", None) if node is not None else None
            if not isinstance(owner, FirstMatch):
                continue
            for candidate in owner.candidates:
                if candidate.each is not None and candidate.target == record.node and candidate.label == edge.label:
                    view = self.plan.schema.view(self.seen[i])
                    ctx = routing_ctx(self.plan, source) if candidate.each_ctx else None
                    try:
                        items = list(candidate.each(view, ctx) if candidate.each_ctx else candidate.each(view))
                    except Exception:
                        return False, None
                    return (True, items[index]) if index < len(items) else (False, None)
        return False, None


_INDEX = re.compile(r"\[(\d+)\]$")


def payload_branch(record: Step) -> bool:
    return bool(record.branch) and record.branch.rpartition("/")[2].startswith(record.node + "[")  # type: ignore[union-attr]


def record_key(record: Step) -> tuple[Any, ...]:
    return (record.path, record.branch, record.step, record.node, record.visit, record.started)


def routing_ctx(plan: Plan, record: Step) -> Context:
    return Context(None, plan, record.node, record.step, record.visit, record.path, record.branch)


def describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"
