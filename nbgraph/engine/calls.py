"""What calling a node gives, and how a call ends short (shared by one-frame steps and branches)."""

from __future__ import annotations

import traceback
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, NamedTuple

from ..history import FiredEdge, Frame, Step
from ..plan import Hop, Plan
from .ending import Ending
from .limits import Deadline

if TYPE_CHECKING:
    from .context import Context

__all__ = ["Called", "ChildStopped", "TimedOut", "error_text", "fold", "make_step"]


class Called(NamedTuple):
    """What calling one frame's node gave, before it is folded into the state."""

    records: tuple[Step, ...]
    """A sub-graph's own steps, then this node's step (its edge still to be routed)."""
    update: Mapping[str, Any] | None
    hop: Hop | None
    """Where a ``Goto``, ``End`` or ``Send`` the node returned leads (None: route by the edges)."""
    ctx: Context | None
    error: Exception | None = None


class ChildStopped(BaseException):
    """A sub-graph stopped inside (a pause, a failure): its parent stops with the same ending."""

    def __init__(self, ending: Ending) -> None:
        self.ending = ending
        super().__init__(ending.reason)


class TimedOut(BaseException):
    """Carries a deadline that fired out of the node it cancelled."""

    def __init__(self, deadline: Deadline) -> None:
        self.deadline = deadline
        super().__init__(deadline.reason)


def fold(plan: Plan, values: dict[str, Any], called: Called) -> dict[str, Any]:
    """The values after ``called``'s update (and a person's edit of it) are folded in."""
    if called.update:
        values = plan.schema.apply(values, called.update, called.records[-1].node)
    return values


def make_step(
    step: int, frame: Frame, visit: int, started: float, duration: float,
    update: Mapping[str, Any] | None, edge: FiredEdge | None, ctx: Context | None,
    error: BaseException | None = None,
) -> Step:
    if ctx is None or not (ctx.tokens or ctx.cost or ctx.turns or ctx._events):
        record = Step(step, frame.node, visit, started, duration, update, edge, frame.path, frame.branch)
    else:
        record = Step(
            step, frame.node, visit, started, duration, update, edge, frame.path, frame.branch,
            tokens=ctx.tokens, cost=ctx.cost, turns=ctx.turns, events=tuple(ctx._events or ()),
        )
    return record if error is None else record._replace(error=error_text(error))


def error_text(exc: BaseException) -> str:
    return "".join(traceback.format_exception_only(type(exc), exc)).strip()
