"""Every edge out of a step's node, evaluated again on the state routing saw.

Conditions, maps and routers are pure by contract, so this runs no node; one that
raises becomes a :class:`Problem` and the candidate's ``error``, never an exception.
"""

from __future__ import annotations

from typing import Any, Literal

from .._timeline import describe, routing_ctx
from ..export import routing_problems
from ..history import Step
from ..plan import FirstMatch, Plan, RoutedBy
from ._models import Candidate, Problem

_COMMANDS: dict[str | None, Literal["goto", "end", "send", "denied"]] = {
    "goto": "goto",
    "end": "end",
    "send": "send",
    "denied": "denied",
}
"""The labels of edges a node's command (or a denial) took instead of its own edges, as candidate kinds."""


def _candidates(
    plan: Plan, node: Any, record: Step, values: dict[str, Any], routed: bool, prefix: str
) -> tuple[list[Candidate], list[Problem]]:
    """Every edge out of ``record``'s node; evaluated on ``values`` when the step routed."""
    if node is None:
        return [], []
    path = prefix[:-1]
    view = plan.schema.view(values)
    ctx = routing_ctx(plan, record) if node.wants_ctx else None
    edge = record.edge
    command = edge is not None and edge.label in _COMMANDS
    out: list[Candidate] = []
    problems: list[Problem] = []
    owner = getattr(node.decide, "__self__", None)
    if isinstance(owner, FirstMatch):
        chosen = False
        for c in owner.candidates:
            targets = list(c.hop.edge.targets)
            kind = "map" if c.each is not None else "fanout" if len(targets) > 1 else "edge"
            label = c.label or "always"
            value = holds = error = items = None
            if routed:
                if c.when is None:
                    holds = True
                else:
                    try:
                        value = holds = bool(c.when(view, ctx) if c.takes_ctx else c.when(view))
                    except Exception as exc:
                        error = describe(exc)
                        problems.append(
                            Problem(
                                kind="condition-raised",
                                edge={"from": record.node, "to": c.target},
                                path=path,
                                message=f"the condition of edge {record.node} -> {c.target} [{c.label}] raised {error}",
                            )
                        )
                if holds and c.each is not None:
                    try:
                        items = len(list(c.each(view, ctx) if c.each_ctx else c.each(view)))
                    except Exception as exc:
                        error = describe(exc)
                        problems.append(
                            Problem(
                                kind="map-raised",
                                edge={"from": record.node, "to": c.target},
                                path=path,
                                message=f"the map of edge {record.node} -> {c.target} [{c.label}] raised {error}",
                            )
                        )
            pick = bool(holds) and not chosen and error is None
            chosen = chosen or pick
            fired = (
                edge is not None
                and not command
                and edge.source == record.node
                and edge.target == c.target
                and edge.label == c.label
                and tuple(edge.targets) == tuple(targets)
            )
            out.append(
                Candidate(
                    target=c.target,
                    targets=targets,
                    label=label,
                    kind=kind,
                    unconditional=c.when is None,
                    value=value,
                    holds=holds,
                    error=error,
                    items=items,
                    chosen=pick,
                    fired=fired,
                )
            )
    elif isinstance(owner, RoutedBy):
        returned: Any = None
        error = None
        if routed:
            try:
                returned = owner.fn(view, ctx) if owner.takes_ctx else owner.fn(view)
            except Exception as exc:
                error = describe(exc)
            else:
                if not isinstance(returned, str) or returned not in owner.valid:
                    error = f"returned {returned!r}, which is not one of its targets: {', '.join(owner.valid)}"
            if error is not None:
                problems.append(
                    Problem(
                        kind="router-raised",
                        node=record.node,
                        path=path,
                        message=f"router {owner.label!r} of node {record.node!r} {'raised ' if 'returned' not in error else ''}{error}",
                    )
                )
        for target in owner.valid:
            holds = None if not routed or error is not None else returned == target
            out.append(
                Candidate(
                    target=target,
                    targets=[target],
                    label=owner.label,
                    kind="router",
                    value=returned if routed and error is None else None,
                    holds=holds,
                    error=error,
                    chosen=bool(holds),
                    fired=edge is not None and not command and edge.target == target,
                )
            )
    spec = node.spec
    for target in spec.destinations or ():
        fired = command and edge is not None and target in edge.targets
        out.append(Candidate(target=target, targets=[target], label="goto", kind="goto", fired=fired))
    if edge is not None and command and not any(c.fired for c in out):
        kind = _COMMANDS[edge.label]
        out.append(Candidate(target=edge.target, targets=list(edge.targets), label=kind, kind=kind, fired=True))
    if record.error is not None:
        problems.extend(Problem(**{**found, "path": path}) for found in routing_problems(plan, record.error))
        for found in problems:
            for i, candidate in enumerate(out):
                if found.edge == {"from": record.node, "to": candidate.target} or (
                    found.node == record.node and candidate.kind == "router"
                ):
                    out[i] = candidate.model_copy(update={"error": found.message})
    return out, problems
