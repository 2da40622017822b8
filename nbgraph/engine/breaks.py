"""Breakpoints: where a run pauses for a person to look, and step mode.

A run's breakpoints come from its plan (``g.breakpoints(...)``, resolved to node paths by
``compile()``) or, on a resume, from its thread, whose checkpoints keep them so a resume in
another process with a fresh graph object pauses where the run would have. A run with
none is not *armed*: its step loop checks one flag per step. Here too: the pauses before
and after a node.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal

from ..history import Frame
from ..names import new_id
from .listeners import answered, interrupt, node_exit
from .people import PauseRequested

if TYPE_CHECKING:
    from ..history import Step
    from ..pauses import Pause
    from ..plan import Breakpoints
    from .people import Asking
    from .resumption import Resumption

__all__ = ["Breaks", "break_pause", "pause_after", "pause_before", "stop_reason"]


class Breaks:
    """A run's breakpoints (node paths) and whether it is stepping."""

    __slots__ = ("after", "armed", "before", "stepping", "waiting")

    def __init__(
        self, before: frozenset[str] = frozenset(), after: frozenset[str] = frozenset(), stepping: bool = False
    ) -> None:
        self.before = before
        self.after = after
        self.stepping = stepping
        """Pause before every node, wherever it runs (sub-graphs and branches included)."""
        self.waiting = False
        """A resume brought the answer to a breakpoint before a node (or asks it again)."""
        self.armed = not self.idle
        """Whether the step loop looks for a breakpoint at all."""

    @classmethod
    def of(cls, breakpoints: Breakpoints | None, stepping: bool = False) -> Breaks:
        if breakpoints is None:
            return cls(stepping=stepping)
        return cls(breakpoints.before, breakpoints.after, stepping)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Breaks:
        return cls(frozenset(data.get("before") or ()), frozenset(data.get("after") or ()), bool(data.get("step")))

    def to_json(self) -> dict[str, Any] | None:
        """What a checkpoint keeps of them (None: nothing to pause at)."""
        if self.idle:
            return None
        return {"before": sorted(self.before), "after": sorted(self.after), "step": self.stepping}

    @property
    def idle(self) -> bool:
        """Nothing to pause at."""
        return not (self.before or self.after or self.stepping)

    def set(self, before: frozenset[str], after: frozenset[str], stepping: bool) -> None:
        """Pause at these from the next step on."""
        self.before, self.after, self.stepping = before, after, stepping
        self._arm()

    def take(self, answer: str) -> None:
        """A breakpoint was answered: ``step`` pauses before the next node, ``continue`` at the next breakpoint."""
        self.stepping = answer == "step"
        self._arm()

    def expect(self, resumption: Resumption) -> None:
        """A resume brought (or asks again) a breakpoint before a node: look for it."""
        self.waiting = resumption.breaks_waiting
        self._arm()

    def _arm(self) -> None:
        self.armed = self.waiting or not self.idle

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


def stop_reason(pause: Pause) -> str:
    """Why a run answered ``stop`` at breakpoint ``pause`` ended."""
    where = f" in branch {pause.branch!r}" if pause.branch else ""
    return f"stopped at the breakpoint {pause.at} {pause.path!r}{where} (step {pause.step})"


async def pause_before(
    breaks: Breaks, asking: Asking, resumption: Resumption, frame: Frame, step: int
) -> tuple[tuple[Any, ...], str | None] | None:
    """A breakpoint before ``frame``'s node, which runs as ``step``: the pause's interrupt and
    resume events, and why the run stops if the answer was ``stop``; None when the run
    does not stop here.

    A resumed run that was paused here takes the answer the resume brought (its events
    go into the step's record, where a live run's are), or pauses again with the same id.

    Raises:
        PauseRequested: a durable run cannot wait; the node has not run.
    """
    kept = resumption.break_before((frame.path, frame.branch))
    if kept is not None and kept[1] is not None:
        pause, answer = kept
        thread = asking.listeners.thread
        events: Any = (
            interrupt(thread, step, pause),
            answered(thread, step, pause, answer, resumption.decision(pause.id)),
        )
        for event in events:
            asking.listeners.emit(event)
    else:
        if not breaks.stops_before(frame.path):
            return None
        pause = break_pause("before", frame, step, pause_id=kept[0].id if kept is not None else None)
        events = []
        answer = await asking.wait(pause, None, events)
    breaks.take(answer)
    return tuple(events), stop_reason(pause) if answer == "stop" else None


async def pause_after(breaks: Breaks, asking: Asking, record: Step, update: Any, events: list[Any]) -> str | None:
    """A breakpoint after ``record``'s node ran (its routing still to do): why the run stops
    if the answer was ``stop``. The pause's events go into ``events`` as they happen.

    Raises:
        PauseRequested: a durable run cannot wait; the pause carries the step.
    """
    frame = Frame(record.node, record.path, record.branch)
    pause = break_pause("after", frame, record.step, update)
    if not asking.live:
        raise PauseRequested(pause)
    listeners = asking.listeners
    listeners.emit_step_if(lambda: node_exit(listeners.thread, record))
    answer = await asking.wait(pause, None, events)
    breaks.take(answer)
    return stop_reason(pause) if answer == "stop" else None
