"""Stopping short: the endings of a run that cannot go on (a pause it cannot wait for, its
max_steps, a failure, a deadline, a cancel, a person's ``stop``).

Each is called where the run stops, never per step, and only says how the run ends: the
step driver keeps the frames a resume runs again.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from ..errors import MaxStepsExceeded, NbgraphError, RunFailed
from ..secrets import redact
from .ending import Ending
from .limits import Aborted
from .listeners import error_event

if TYPE_CHECKING:
    from ..history import Frame
    from ..pauses import Pause
    from ..plan import Plan
    from .listeners import Listeners

__all__ = ["Stopped", "cancelled", "failure", "hit_max_steps", "interrupted", "timed_out"]


class Stopped(Aborted):
    """A person answered ``stop`` at a breakpoint inside a sub-graph or a branch: it unwinds
    every level the run is inside (each keeps where it is), and the run ends ``aborted``."""


def interrupted(pauses: tuple[Pause, ...], *, thread: str, live: bool, unanswered: str | None) -> Ending:
    """A pause nobody can wait for now: the run ends ``interrupted``; its checkpoint is written as it ends."""
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
    if unanswered is not None:
        reason += f" — {unanswered}"
    elif not live:
        answer = {"breakpoint": "'continue'", "budget": "{'tokens': ...}"}.get(first.kind, "answer")
        how = (
            f"g.invoke(Resume(result, {answer})) or g.invoke(Resume({thread!r}, {answer}, pause={first.id!r}))"
            if len(pauses) == 1
            else "g.invoke(Resume(result, {pause.id: answer, ...})) for the pauses in result.pauses"
        )
        if first.kind == "breakpoint":
            how += " ('step' pauses before the next node, 'stop' ends the run)"
        elif first.kind == "budget":
            how += " (the raised limits; 'stop' ends the run)"
        reason += f" — answer with {how}; for live answers use run = g.start(...) and `await run`"
    return Ending("interrupted", reason, pauses=pauses)


def hit_max_steps(plan: Plan, path: str, node: str) -> Ending:
    """The level at ``path`` reached its ``plan``'s max_steps before ``node``: as its ``on_max_steps`` says.

    Raises:
        MaxStepsExceeded: ``on_max_steps="raise"``.
    """
    reason = f"max_steps={plan.max_steps} reached before END (next node: {node!r})"
    if path:
        reason = f"sub-graph {path!r}: {reason}"
    if plan.on_max_steps == "raise":
        raise MaxStepsExceeded(plan.name, plan.max_steps, node, Ending("aborted", reason))
    return Ending("done", reason, hit_max_steps=plan.on_max_steps == "flag")


def failure(listeners: Listeners, frame: Frame | None, exc: BaseException, step: int) -> Ending:
    """End ``failed`` (at ``frame``'s node, or the run as a whole): said in an error event."""
    if isinstance(exc, RunFailed):
        reason = exc.reason
    elif isinstance(exc, NbgraphError):
        reason = str(exc)
    elif frame is not None:
        reason = f"node {frame.path!r} failed at step {step}: {type(exc).__name__}: {exc}"
    else:
        reason = f"the run failed: {type(exc).__name__}: {exc}"
    reason = redact(reason)  # (a message may quote a credential: the reason goes everywhere)
    listeners.emit_if(
        lambda: error_event(
            listeners.thread,
            step,
            frame.node if frame else None,
            frame.path if frame else "",
            frame.branch if frame else None,
            reason,
            type(exc).__name__,
        )
    )
    return Ending("failed", reason, error=exc)


def timed_out(listeners: Listeners, frame: Frame, step: int, ending: Ending) -> Ending:
    """``frame``'s node ran past its time (``ending`` says how the run takes it): said in an error event."""
    reason = ending.reason or ""
    listeners.emit_if(
        lambda: error_event(listeners.thread, step, frame.node, frame.path, frame.branch, reason, "TimeoutError")
    )
    return ending


def cancelled(stop: BaseException, during: str) -> Ending:
    """The run was cancelled (or interrupted from the keyboard) ``during`` a node or a step."""
    why = "cancelled" if isinstance(stop, asyncio.CancelledError) else "interrupted (KeyboardInterrupt)"
    return Ending("aborted", f"{why} during {during}")
