"""Stopping short: the endings of a run that cannot go on (a pause it cannot wait for, its
max_steps, a failure, a deadline, a cancel, a person's ``stop``), and what each leaves
for a resume.

Each is called where the run stops, never per step: the step loop only returns what
they give.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from ..errors import MaxStepsExceeded, NbgraphError, RunFailed
from .ending import Ending
from .limits import Aborted
from .listeners import error_event

if TYPE_CHECKING:
    from ..history import Frame
    from ..pauses import Pause
    from .levels import Level
    from .limits import Deadline
    from .listeners import Listeners
    from .walker import Walker

__all__ = ["Stopped", "failure", "hit_max_steps", "interrupted", "stop_here", "stopped", "timed_out"]


class Stopped(Aborted):
    """A person answered ``stop`` at a breakpoint: it unwinds every sub-graph and branch the
    run is inside (each keeps where it is), and the run ends ``aborted``."""


def interrupted(walker: Walker, *pauses: Pause) -> Ending:
    """A durable pause: end the run ``interrupted``; the checkpoint is written as it ends."""
    first = pauses[0]
    if first.kind == "breakpoint":
        what = f"the breakpoint {first.at}"
        reason = f"paused at {what} {first.path!r}" + (f" in branch {first.branch!r}" if first.branch else "")
    elif first.kind == "budget":
        what = "a budget raise before"
        reason = f"paused before {first.path!r}: {first.prompt}"
    else:
        what = "approval of" if first.kind == "approval" else "input at"
        reason = f"waiting for {what} node {first.node!r}: {first.prompt}"
    if len(pauses) > 1:
        reason = f"waiting for {len(pauses)} answers, first {what} node {first.node!r}: {first.prompt}"
    if walker.unanswered is not None:
        reason += f" — {walker.unanswered}"
    elif not walker.live:
        answer = {"breakpoint": "'continue'", "budget": "{'tokens': ...}"}.get(first.kind, "answer")
        how = (
            f"g.invoke(Resume(result, {answer})) or g.invoke(Resume({walker.thread!r}, {answer}, pause={first.id!r}))"
            if len(pauses) == 1
            else "g.invoke(Resume(result, {pause.id: answer, ...})) for the pauses in result.pauses"
        )
        if first.kind == "breakpoint":
            how += " ('step' pauses before the next node, 'stop' ends the run)"
        elif first.kind == "budget":
            how += " (the raised limits; 'stop' ends the run)"
        reason += f" — answer with {how}; for live answers use run = g.start(...) and `await run`"
    return Ending("interrupted", reason, pauses=pauses)


def hit_max_steps(level: Level, node: str) -> Ending:
    """``level`` reached its plan's max_steps before ``node``: as its ``on_max_steps`` says."""
    plan = level.plan
    reason = f"max_steps={plan.max_steps} reached before END (next node: {node!r})"
    if level.path:
        reason = f"sub-graph {level.path!r}: {reason}"
    if plan.on_max_steps == "raise":
        raise MaxStepsExceeded(plan.name, plan.max_steps, node, Ending("aborted", reason))
    return Ending("done", reason, hit_max_steps=plan.on_max_steps == "flag")


def failure(
    listeners: Listeners, level: Level, frame: Frame | None, exc: BaseException, step: int | None = None
) -> Ending:
    """End ``failed``: the failing frame runs again on resume, the last checkpoint stays intact."""
    if frame is not None:
        level.frames = (frame,)
    node = frame.node if frame is not None else None
    if isinstance(exc, RunFailed):
        reason = exc.reason
    elif isinstance(exc, NbgraphError):
        reason = str(exc)
    else:
        where = f"node {frame.path if frame else node!r} failed at step {step}" if node else "the run failed"
        if frame is not None:
            where = f"node {frame.path!r} failed at step {step}"
        reason = f"{where}: {type(exc).__name__}: {exc}"
    listeners.emit_if(
        lambda: error_event(
            listeners.thread,
            step or level.steps,
            node,
            frame.path if frame else "",
            frame.branch if frame else None,
            reason,
            type(exc).__name__,
        )
    )
    return Ending("failed", reason, error=exc)


def timed_out(listeners: Listeners, level: Level, frame: Frame, step: int, deadline: Deadline) -> Ending:
    """``frame``'s node ran past ``deadline``: it runs again on resume."""
    level.frames = (frame,)
    reason = f"{deadline.reason} at step {step}"
    listeners.emit_if(
        lambda: error_event(listeners.thread, step, frame.node, frame.path, frame.branch, reason, "TimeoutError")
    )
    return Ending(deadline.outcome, reason)


def stopped(level: Level, frame: Frame, step: int, stop: BaseException) -> Ending:
    """The run was cancelled (or interrupted from the keyboard) during ``frame``'s node: it runs again on resume."""
    level.frames = (frame,)
    why = "cancelled" if isinstance(stop, asyncio.CancelledError) else "interrupted (KeyboardInterrupt)"
    return Ending("aborted", f"{why} during node {frame.path!r} at step {step}")


def stop_here(walker: Walker, level: Level, reason: str) -> Ending:
    """A person stopped the run at a breakpoint: it ends ``aborted``, from inside any
    sub-graph or branch (as a spent budget does), each level resumable where it is."""
    if level is walker.root:
        return Ending("aborted", reason)
    raise Stopped(reason)
