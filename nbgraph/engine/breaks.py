"""Breakpoints: where a run pauses for a person to look, and step mode.

A run's breakpoints come from its plan (``g.breakpoints(...)``, resolved to node
paths by ``compile()``) or, on a resume, from its thread. They travel with the
thread's checkpoints in the answers, under a reserved slot, so a resume in another
process with a fresh graph object pauses where the run would have. A run without
breakpoints or step mode never builds one of these: its walker checks one
attribute per step. Here too: setting a run's breakpoints, and the pauses before and
after a node.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal

from ..history import Frame
from ..names import new_id
from .listeners import answered, interrupt, node_exit
from .people import PauseRequested, wait_for_person

if TYPE_CHECKING:
    from ..history import Step
    from ..pauses import Pause
    from ..plan import Breakpoints
    from .walker import Walker

__all__ = [
    "SLOT",
    "Breaks",
    "break_pause",
    "pause_after",
    "pause_before",
    "set_breaks",
    "stop_reason",
    "take_break_answer",
]

SLOT = "__breakpoints__"
"""Where a thread's checkpoints keep its breakpoints, among the answers (a reserved slot)."""


class Breaks:
    """A live run's breakpoints (node paths) and whether it is stepping."""

    __slots__ = ("after", "before", "stepping")

    def __init__(
        self, before: frozenset[str] = frozenset(), after: frozenset[str] = frozenset(), stepping: bool = False
    ) -> None:
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


def break_pause(
    at: Literal["before", "after"], frame: Frame, step: int, update: Any = None, pause_id: str | None = None
) -> Pause:
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
        at=at,
        update=None if update is None else to_jsonable(update, strict=False),
    )


# -- a run's breakpoints --------------------------------------------------------------


def set_breaks(walker: Walker, breaks: Breaks | None) -> None:
    """Pause at ``breaks`` from now on; the thread's checkpoints keep them (in a reserved
    slot of the answers), so a resume elsewhere pauses at the same places."""
    answers = walker.pauses.answers
    if breaks is None or breaks.idle:
        answers.pop(SLOT, None)
        # Pauses a resume answered still need the check that finds them.
        resumed = walker.resumed
        walker.breaks = (breaks or Breaks()) if resumed is not None and resumed.breaks_waiting else None
    else:
        answers[SLOT] = breaks.to_json()
        walker.breaks = breaks


def take_break_answer(walker: Walker, answer: str) -> None:
    """A breakpoint was answered: ``step`` pauses before the next node, ``continue`` at the next breakpoint."""
    breaks = walker.breaks or Breaks()
    breaks.stepping = answer == "step"
    set_breaks(walker, breaks)


# -- pausing at them -----------------------------------------------------------------------


def stop_reason(pause: Pause) -> str:
    """Why a run answered ``stop`` at breakpoint ``pause`` ended."""
    where = f" in branch {pause.branch!r}" if pause.branch else ""
    return f"stopped at the breakpoint {pause.at} {pause.path!r}{where} (step {pause.step})"


async def pause_before(walker: Walker, frame: Frame, step: int) -> tuple[tuple[Any, ...], str | None] | None:
    """A breakpoint before ``frame``'s node, which runs as ``step``: the pause's interrupt and
    resume events, and why the run stops if the answer was ``stop``; None when the run
    does not stop here.

    A resumed run that was paused here takes the answer the resume brought (its events
    go into the step's record, where a live run's are), or pauses again with the same id.

    Raises:
        PauseRequested: a durable run cannot wait; the node has not run.
    """
    resumed = walker.resumed
    kept = resumed.break_before((frame.path, frame.branch)) if resumed is not None else None
    if kept is not None and kept[1] is not None:
        pause, answer = kept
        events: Any = (interrupt(walker.thread, step, pause), answered(walker.thread, step, pause, answer))
        for event in events:
            walker.listeners.emit(event)
    else:
        breaks = walker.breaks
        if breaks is None or not breaks.stops_before(frame.path):
            return None
        pause = break_pause("before", frame, step, pause_id=kept[0].id if kept is not None else None)
        events = []
        answer = await wait_for_person(walker, pause, None, events)
    take_break_answer(walker, answer)
    return tuple(events), stop_reason(pause) if answer == "stop" else None


async def pause_after(walker: Walker, record: Step, update: Any, events: list[Any]) -> str | None:
    """A breakpoint after ``record``'s node ran (its routing still to do): why the run stops
    if the answer was ``stop``. The pause's events go into ``events`` as they happen.

    Raises:
        PauseRequested: a durable run cannot wait; the pause carries the step.
    """
    frame = Frame(record.node, record.path, record.branch)
    pause = break_pause("after", frame, record.step, update)
    if not walker.live:
        raise PauseRequested(pause)
    walker.listeners.emit_step_if(lambda: node_exit(walker.thread, record))
    answer = await wait_for_person(walker, pause, None, events)
    take_break_answer(walker, answer)
    return stop_reason(pause) if answer == "stop" else None
