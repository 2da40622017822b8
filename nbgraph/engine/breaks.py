"""Breakpoints: where a run pauses for a person to look, and step mode.

A run's breakpoints come from its plan (``g.breakpoints(...)``, resolved to node
paths by ``compile()``) or, on a resume, from its thread. They travel with the
thread's checkpoints in the answers, under a reserved slot, so a resume in another
process with a fresh graph object pauses where the run would have. A run without
breakpoints or step mode never builds one of these: its walker checks one
attribute per step.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..names import new_id
from .limits import Aborted

if TYPE_CHECKING:
    from ..history import Frame
    from ..pauses import Pause
    from ..plan import Breakpoints

__all__ = ["SLOT", "Breaks", "Stopped", "break_pause"]

SLOT = "__breakpoints__"
"""Where a thread's checkpoints keep its breakpoints, among the answers (a reserved slot)."""


class Stopped(Aborted):
    """A person answered ``stop`` at a breakpoint: it unwinds every sub-graph and branch the
    run is inside (each keeps where it is), and the run ends ``aborted``."""


class Breaks:
    """A live run's breakpoints (node paths) and whether it is stepping."""

    __slots__ = ("after", "before", "stepping")

    def __init__(self, before: frozenset[str] = frozenset(), after: frozenset[str] = frozenset(), stepping: bool = False) -> None:
        self.before = before
        self.after = after
        self.stepping = stepping
        """Pause before every node, wherever it runs (sub-graphs and branches included)."""

    @classmethod
    def of(cls, breakpoints: Breakpoints | None, stepping: bool = False) -> Breaks:
        if breakpoints is None:
            return cls(stepping=stepping)
        return cls(breakpoints.before, breakpoints.after, stepping)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Breaks:
        return cls(frozenset(data.get("before") or ()), frozenset(data.get("after") or ()), bool(data.get("step")))

    def to_json(self) -> dict[str, Any]:
        return {"before": sorted(self.before), "after": sorted(self.after), "step": self.stepping}

    @property
    def idle(self) -> bool:
        """Nothing to pause at."""
        return not (self.before or self.after or self.stepping)

    def stops_before(self, path: str) -> bool:
        return self.stepping or path in self.before

    def stops_after(self, path: str) -> bool:
        return path in self.after

    def __repr__(self) -> str:
        return f"Breaks(before={sorted(self.before)}, after={sorted(self.after)}, stepping={self.stepping})"


def break_pause(at: str, frame: Frame, step: int, update: Any = None, pause_id: str | None = None) -> Pause:
    """The pause a breakpoint opens ``before`` or ``after`` the node of ``frame``."""
    from ..pauses import BREAK_ANSWERS, Pause
    from ..state import to_jsonable

    return Pause(
        id=pause_id or new_id(),
        kind="breakpoint",
        node=frame.node,
        step=step,
        path=frame.path,
        branch=frame.branch,
        prompt=f"Paused {at} {frame.path!r}" + (f" in branch {frame.branch!r}" if frame.branch else ""),
        options=BREAK_ANSWERS,
        input_kind="choice",
        at=at,  # type: ignore[arg-type]
        update=None if update is None else to_jsonable(update, strict=False),
    )
