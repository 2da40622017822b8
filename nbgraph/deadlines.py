"""Deadlines on pauses: how long a question waits for a person, and what answers it once that
time has passed.

A deadline is declared where the question is (an approval of a node, a tool's approval,
``ctx.request_input``) as a :class:`Deadline`; a pause asked under it carries the moment
it passes (:attr:`nbgraph.pauses.Pause.deadline`) and its answer then
(:attr:`~nbgraph.pauses.Pause.on_timeout`). Light enough for ``import nbgraph``.
"""

from __future__ import annotations

import datetime
import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

__all__ = [
    "BY_DEADLINE",
    "Deadline",
    "approval_deadline",
    "as_deadline",
    "due",
    "input_deadline",
    "moment",
    "overdue",
    "passed_reason",
    "said",
    "tool_deadline",
]

BY_DEADLINE = "deadline"
"""Who a decision records as its decider when a deadline gave it (``Decision.by``)."""


@dataclass(frozen=True, slots=True)
class Deadline:
    """How long a pause waits for a person, and the answer it takes once that time has passed.

    ``then`` is that answer, recorded as decided by the deadline (``by="deadline"``):

    - an approval (``Graph.add_node(..., approval=True, deadline=...)``): None denies it
      (the default); ``"approve"`` approves it, and only when you say so;
    - a tool call (``tool(..., approval=True, deadline=...)``): None rejects it (the model
      reads that nobody decided in time); ``"approve"`` runs it; a decision such as
      ``{"type": "respond", "message": "..."}`` gives the model that result instead;
    - an input (``ctx.request_input(..., deadline=...)``): the answer it takes, which it
      must name.

    A live run is answered when the time passes; a durable one that stopped at the pause
    takes the answer when it is next resumed after that, or swept
    (:func:`nbgraph.sweep_deadlines`). A plain number of seconds is ``Deadline(seconds)``.

    >>> g.add_node("publish", publish, approval=True, deadline=Deadline(3600))  # doctest: +SKIP
    """

    seconds: float
    """How long the pause waits, from when it is asked."""
    then: Any = None
    """The answer the pause takes when the time has passed (see above)."""

    def __post_init__(self) -> None:
        seconds = self.seconds
        if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or not math.isfinite(seconds):
            raise ValueError(f"a Deadline waits a number of seconds, got {seconds!r}")
        if seconds <= 0:
            raise ValueError(f"a Deadline waits more than 0 seconds, got {seconds!r}")


def as_deadline(value: Any, where: str) -> Deadline | None:
    """``value`` (a :class:`Deadline`, a number of seconds or None) as a Deadline, checked.

    Raises:
        TypeError: ``value`` is neither; ValueError: it waits no time.
    """
    if value is None or isinstance(value, Deadline):
        return value
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{where}: deadline= is a Deadline(seconds, then=...) or a number of seconds, got {value!r}")
    try:
        return Deadline(value)
    except ValueError as exc:
        raise ValueError(f"{where}: {exc}") from None


def approval_deadline(value: Any, where: str) -> Deadline | None:
    """The deadline of an approval, its ``then`` as a pause keeps it: None (deny) or True (approve).

    Raises:
        ValueError: ``then`` is neither a denial nor an approval.
    """
    deadline = as_deadline(value, where)
    if deadline is None:
        return None
    then = deadline.then
    if then is None or then is False or then == "deny":
        return Deadline(deadline.seconds)
    if then is True or then == "approve":
        return Deadline(deadline.seconds, True)
    raise ValueError(
        f"{where}: when its deadline passes an approval is denied (then=None, the default) or approved "
        f"(then='approve'); got then={then!r}"
    )


def tool_deadline(value: Any, where: str) -> Deadline | None:
    """The deadline of a tool's approval, its ``then`` as a pause keeps it: None (reject with a
    message saying nobody decided in time), ``"approve"``, or a decision as a dict.

    Raises:
        ValueError: ``then`` is not a decision a deadline can make (an edit is not one).
    """
    deadline = as_deadline(value, where)
    if deadline is None:
        return None
    then = deadline.then
    if then is None or then is False or then == "reject":
        return Deadline(deadline.seconds)
    if then is True or then == "approve":
        return Deadline(deadline.seconds, "approve")
    import pydantic

    from .pauses import ToolDecision

    said = (
        f"{where}: when its deadline passes a tool call is rejected (then=None, the default), approved "
        "(then='approve') or answered in the tool's place (then={'type': 'respond', 'message': '...'})"
    )
    if not isinstance(then, (Mapping, ToolDecision)):
        raise ValueError(f"{said}; got then={then!r}")
    try:
        decision = then if isinstance(then, ToolDecision) else ToolDecision.model_validate(then)
    except pydantic.ValidationError as exc:
        raise ValueError(f"{said}; got then={then!r}: {exc.errors()[0]['msg']}") from None
    if decision.type == "edit" or decision.standing is not None:
        raise ValueError(f"{said}; a deadline cannot edit a call nor approve later ones, got then={then!r}")
    if decision.type == "respond" and decision.message is None:
        raise ValueError(f"{said}; a response needs its 'message', the result the model reads")
    return Deadline(deadline.seconds, decision.model_dump(exclude_none=True))


def input_deadline(value: Any, where: str, options: Sequence[str] | None) -> Deadline | None:
    """The deadline of a question for input: its ``then`` is the answer, and must be given.

    Raises:
        ValueError: no answer given, one not among ``options``, or one a checkpoint cannot keep.
    """
    deadline = as_deadline(value, where)
    if deadline is None:
        return None
    then = deadline.then
    if then is None:
        raise ValueError(
            f"{where}: a question with a deadline needs the answer it takes when the deadline passes: "
            f"Deadline({deadline.seconds!r}, then=...)"
        )
    if options is not None and then not in options:
        raise ValueError(
            f"{where}: the deadline's answer {then!r} is not one of the options: {', '.join(map(repr, options))}"
        )
    from .storable import storable_problem

    problem = storable_problem(then, f"{where}: the deadline's answer")
    if problem is not None:
        raise ValueError(problem)
    return deadline


def due(deadline: Deadline) -> float:
    """When a pause asked now under ``deadline`` stops waiting (seconds since the epoch)."""
    return time.time() + deadline.seconds


def overdue(pauses: Sequence[Any], now: float | None = None) -> frozenset[str]:
    """The ids of those ``pauses`` whose deadline has passed (by ``now``, default: now)."""
    if not any(pause.deadline is not None for pause in pauses):
        return frozenset()
    at = time.time() if now is None else now
    return frozenset(pause.id for pause in pauses if pause.deadline is not None and pause.deadline <= at)


def moment(deadline: float) -> str:
    """A deadline for a person to read: ``2025-06-01 12:00:30 UTC``."""
    return f"{datetime.datetime.fromtimestamp(deadline, datetime.UTC):%Y-%m-%d %H:%M:%S} UTC"


def passed_reason(deadline: float) -> str:
    """The reason a deadline's decision records: ``no answer by its deadline, 2025-06-01 12:00:30 UTC``."""
    return f"no answer by its deadline, {moment(deadline)}"


def said(pause: Any) -> str:
    """What ``pause``'s deadline decides, in a word or a few: ``denied``, ``rejected``, ``answered 'Paris'``."""
    then = pause.on_timeout
    if pause.kind == "approval":
        return "approved" if then is True else "denied"
    if pause.kind == "tool":
        if then is None or then == "approve":
            return "rejected" if then is None else "approved"
        kind = str(cast("Mapping[str, Any]", then).get("type"))
        return {"respond": "answered in the tool's place", "approve": "approved"}.get(kind, "rejected")
    return f"answered {then!r:.80}"
