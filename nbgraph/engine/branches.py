"""Running a step's slots: each one's node with the pauses around it, several at once as
branches.

A slot runs its node (or takes what a checkpoint kept of it), with a breakpoint's pause
before and an approval or a breakpoint's pause after, and settles as :mod:`slots`
describes. Several slots run as tasks of the run's loop (at most ``max_concurrency`` at
once), each numbered before any starts; with ``settle="fail_fast"`` the first to fail
cancels the others, and only the slots that failed of themselves are named.

A lone slot's update folds into the state as soon as its node returns, so the state a
person approves shows it; branches fold together once all have settled (``step``).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..errors import InvalidUpdate
from ..plan import NodePlan
from .breaks import pause_after, pause_before, stop_reason, take_break_answer
from .calls import Called, ChildStopped, TimedOut, call, fold, make_step
from .ending import Ending
from .limits import Aborted
from .listeners import answered, error_event, interrupt, node_exit
from .people import PauseRequested, apply_verdict, approve_step, wait_for_person
from .slots import ChildFailed, Ended, Failed, Halted, Parked, Settled, Slot, kept_pause, restored
from .stops import Stopped, timed_out

if TYPE_CHECKING:
    from ..pauses import Pause
    from .levels import Level
    from .listeners import Listeners
    from .walker import Walker

__all__ = ["run_slot", "run_together"]


async def run_slot(walker: Walker, level: Level, slot: Slot, entry: Mapping[str, Any] | None, *, lone: bool) -> Any:
    """One slot of a step: its node's call (or what a checkpoint kept of it) and the pauses
    before and after it; how it settled (:class:`Called`, ``Failed``, ``Parked``, ``Halted``,
    and for a lone slot ``Ended``).

    Raises:
        Aborted: a person stopped the run, or its budget is spent.
        asyncio.CancelledError: the run was cancelled (a branch's cancellation by a failed
            sibling settles it as failed instead).
    """
    frame = slot.frame
    node = level.plan.nodes[frame.node]
    if entry is not None:
        called = restored(entry)
        if entry.get("error") is not None:
            return Failed(called.records, Settled(entry["error"]))
        if lone:
            failed = _fold_lone(level, slot, called)
            if failed is not None:
                return failed
        pause = entry.get("pause")
        return called if pause is None else await _after(walker, level, node, called, kept_pause(pause), lone)
    held: tuple[Any, ...] | None = None
    if walker.breaks is not None:
        held = ()
        try:
            got = await pause_before(walker, frame, slot.step)
        except PauseRequested as paused:
            return Parked((paused.pause,))
        except asyncio.CancelledError:
            if not lone:
                raise
            return Ended(Ending("aborted", f"cancelled at the breakpoint before {frame.path!r} (step {slot.step})"))
        if got is not None:
            held, stop = got
            if stop is not None:
                raise Stopped(stop)
    started, t0 = time.time(), time.perf_counter()
    try:
        called = await _call_until_answered(walker, level, slot, held)
    except PauseRequested as paused:
        return Parked((paused.pause,))
    except ChildStopped as child:
        if lone:
            return Ended(child.ending)
        if child.ending.outcome == "interrupted":
            return Parked(child.ending.pauses)
        error = ChildFailed(child.ending)
        return Failed(_given_up(walker, level, slot, started, t0, error), error)
    except TimedOut as timed:
        deadline = timed.deadline
        if lone:
            return Ended(timed_out(walker.listeners, level, frame, slot.step, deadline))
        if deadline.outcome == "aborted":
            raise Aborted(f"{deadline.reason} at step {slot.step}") from None
        error = ChildFailed(Ending("failed", f"{deadline.reason} at step {slot.step}"))
        return Failed(_given_up(walker, level, slot, started, t0, error), error)
    except asyncio.CancelledError:
        if lone:
            raise
        return Failed((), asyncio.CancelledError())  # cancelled by a sibling's failure
    if called.error is not None:
        return Failed(called.records, called.error)
    if lone:
        failed = _fold_lone(level, slot, called)
        if failed is not None:
            return failed
    if node.approval:  # (its approval stands in for a breakpoint after it)
        return await _after(walker, level, node, called, None, lone)
    if held is not None and walker.breaks is not None and walker.breaks.stops_after(frame.path):
        return await _after(walker, level, node, called, None, lone)
    return called


async def _call_until_answered(walker: Walker, level: Level, slot: Slot, held: tuple[Any, ...] | None) -> Called:
    """Call the slot's node; when a synchronous node asks (``ctx.ask``) in a live run, wait for
    the answer and call it again, from its start, until it has every answer it asks for.

    Raises:
        PauseRequested: the run cannot wait (a durable run ends ``interrupted`` here).
    """
    frame = slot.frame
    while True:
        try:
            return await call(walker, level, frame, slot.step, slot.visit, held)
        except PauseRequested as paused:
            if not walker.live:
                raise
            pause = paused.pause
            answer = await wait_for_person(walker, pause, None)
            walker.pauses.answers[pause.slot or ""] = answer


def _fold_lone(level: Level, slot: Slot, called: Called) -> Failed | None:
    """Fold a lone slot's update in now, so a pause after its node shows the state with it;
    None, or the slot failed (its update did not fit the state)."""
    frame = slot.frame
    try:
        level.values = fold(level.plan, level.values, called.update, called.records[:-1], frame)
    except InvalidUpdate as exc:
        record = called.records[-1]
        failed = make_step(
            record.step, frame, record.visit, record.started, record.duration, None, None, called.ctx, exc
        )
        return Failed((*called.records[:-1], failed), exc)
    level.steps = slot.step
    return None


async def _after(walker: Walker, level: Level, node: NodePlan, called: Called, pause: Pause | None, lone: bool) -> Any:
    """The pause after a slot's node ran, an approval or a breakpoint: answered now (live),
    by the resume that brought ``pause`` back, or parked with the step it waits on."""
    record = called.records[-1]
    if pause is not None:
        resumed = walker.resumed
        answer = resumed.verdict(pause.id) if resumed is not None else None
        if answer is None:
            return Parked((pause,), called)
        record = _answered_here(walker.listeners, record, pause, answer)
    if node.approval:
        if pause is not None:
            from ..pauses import read_approval

            settled = apply_verdict(walker, node, record, read_approval(answer), level, in_branch=not lone)
        else:
            try:
                settled = await approve_step(walker, node, record, level, in_branch=not lone)
            except PauseRequested as paused:
                return Parked((paused.pause,), called)
        if isinstance(settled, Ending):
            return Ended(settled) if lone else Failed(called.records, ChildFailed(settled))
        record, denied = settled
        # A denial with nowhere to go cleared the record's update: the fold must drop it too.
        return called._replace(records=(*called.records[:-1], record), update=record.update, hop=denied or called.hop)
    if pause is not None:
        take_break_answer(walker, answer)
        stop = stop_reason(pause) if answer == "stop" else None
    else:
        events: list[Any] = []
        try:
            stop = await pause_after(walker, record, called.update, events)
        except PauseRequested as paused:
            return Parked((paused.pause,), called)
        except asyncio.CancelledError:
            if not lone:
                raise
            stop = f"cancelled at the breakpoint after {record.path!r} (step {record.step})"  # the step is kept
        record = record._replace(approval_events=tuple(events))
    called = called._replace(records=(*called.records[:-1], record))
    return called if stop is None else Halted(called, stop)


def _answered_here(listeners: Listeners, record: Any, pause: Pause, answer: Any) -> Any:
    """A pause after a node that a resume answered: announced, and kept in the step's record,
    where a live pause's are."""
    thread = listeners.thread
    listeners.emit_step_if(lambda: node_exit(thread, record))
    events = (interrupt(thread, record.step, pause), answered(thread, record.step, pause, answer))
    for event in events:
        listeners.emit(event)
    return record._replace(approval_events=events)


def _given_up(
    walker: Walker, level: Level, slot: Slot, started: float, t0: float, error: ChildFailed
) -> tuple[Any, ...]:
    """The records of a branch that ended short (its sub-graph failed, its node timed out).

    With ``settle="fail_fast"`` the step fails and a resume re-enters the sub-graph
    where it stopped, so nothing is recorded here. With ``"all"`` the branch is over:
    the sub-graph levels it left open close, their steps and its own failed step go
    into the history.
    """
    from ..history import Step

    if level.plan.settle != "all":
        return ()
    frame = slot.frame
    inner: list[Any] = []
    for key in sorted(key for key in walker.open_levels if _inside(key, frame)):  # outer levels first
        inner.extend(walker.open_levels.pop(key).records)
    duration = time.perf_counter() - t0
    return (
        *inner,
        Step(
            slot.step,
            frame.node,
            slot.visit,
            started,
            duration,
            path=frame.path,
            branch=frame.branch,
            error=error.reason,
        ),
    )


def _inside(key: str, frame: Any) -> bool:
    """Whether the level ``key`` names is ``frame``'s sub-graph or one nested in it."""
    path, _, branch = key.partition("@")
    own = frame.branch or ""
    return (path == frame.path or path.startswith(frame.path + "/")) and (branch == own or branch.startswith(own + "/"))


# -- several at once ---------------------------------------------------------------------


async def run_together(
    walker: Walker, level: Level, slots: list[Slot], kept: dict[int, Any], results: list[Any], raised: list[int]
) -> None:
    """Run every slot as a branch, putting each one's result in ``results`` (in slot order) as
    it settles, and the slots that failed of themselves in ``raised`` (in the order they
    failed; a branch cancelled because another failed is not one).

    Raises:
        Aborted: a person stopped the run at a branch's breakpoint, or its budget is spent
            (the other branches are cancelled; those that finished are in ``results``).
    """
    plan = level.plan
    statuses = ["waiting"] * len(slots)
    tasks: list[asyncio.Task[None]] = []
    limit = asyncio.Semaphore(plan.max_concurrency) if plan.max_concurrency else None
    fail_fast = plan.settle == "fail_fast"

    def cancel_others() -> None:
        for task in tasks:
            if task is not asyncio.current_task():
                task.cancel()

    async def run(i: int, slot: Slot) -> None:
        try:
            if limit is None:
                statuses[i] = "running"
                results[i] = await run_slot(walker, level, slot, kept.get(slot.step), lone=False)
            else:
                async with limit:
                    statuses[i] = "running"
                    results[i] = await run_slot(walker, level, slot, kept.get(slot.step), lone=False)
            result = results[i]
            if type(result) is Halted:
                # Stopped after its node ran: the branch is done (kept for a resume), the run stops.
                results[i] = result.called
                raise Stopped(result.reason)
        except Aborted:
            statuses[i] = "done" if results[i] is not None else "failed"
            cancel_others()  # the run's budget is spent (or a person stopped it): no branch goes on
            raise
        result = results[i]
        statuses[i] = "failed" if isinstance(result, Failed) else "paused" if isinstance(result, Parked) else "done"
        if isinstance(result, Failed) and not isinstance(result.error, asyncio.CancelledError):
            raised.append(i)
            if fail_fast:
                cancel_others()
            elif result.records:
                results[i] = _listed(walker.listeners, result)

    walker.supersteps[level] = (slots, statuses)
    try:
        # No node can wait (none is async, and nobody is waited for: a durable run's pauses end
        # it): one after the other, in order. A live run's plain nodes wait for people together.
        if not walker.live and not any(plan.nodes[slot.frame.node].is_async for slot in slots):
            for i, slot in enumerate(slots):
                await run(i, slot)
                result = results[i]
                if isinstance(result, Failed):
                    if isinstance(result.error, asyncio.CancelledError):
                        raise asyncio.CancelledError  # no sibling cancels here: the run itself was
                    if fail_fast:
                        break
            return
        loop = asyncio.get_running_loop()
        tasks.extend(loop.create_task(run(i, slot)) for i, slot in enumerate(slots))
        try:
            done = await asyncio.gather(*tasks, return_exceptions=True)
        except BaseException:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            raise
    finally:
        del walker.supersteps[level]
    for outcome in done:
        if isinstance(outcome, Aborted):
            raise outcome


def _listed(listeners: Listeners, result: Failed) -> Failed:
    """A branch that failed with ``settle="all"``: its step goes on without it, and its record
    carries an error event naming it (live now, and in every trace rebuilt from the history)."""
    record = result.records[-1]
    event = error_event(
        listeners.thread,
        record.step,
        record.node,
        record.path,
        record.branch,
        f"branch {record.branch!r} (node {record.path!r}) failed at step {record.step}: {record.error}",
        type(result.error).__name__,
    )
    listeners.emit(event)
    return result._replace(records=(*result.records[:-1], record._replace(events=(*record.events, event))))
