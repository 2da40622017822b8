"""Running a step's slots: each one's node with the pauses around it, several at once as
branches.

A slot runs its node (or takes what a checkpoint kept of it), with a breakpoint's pause or an
approval before, and an approval or a breakpoint's pause after, and settles as one
:data:`~nbgraph.engine.slots.Outcome`. Several slots run as tasks of the run's loop (at
most ``max_concurrency`` at once), each numbered before any starts; with
``settle="fail_fast"`` the first to fail cancels the others, and only the slots that failed
of themselves are named. Nothing here writes a run's state: the step folds the outcomes in.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Coroutine, Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from ..history import Step
from ..plan import NodePlan
from .breaks import Breaks, pause_after, pause_before, stop_reason
from .calls import Activity, Caller
from .ending import Ending
from .folds import fold
from .limits import Aborted
from .listeners import Listeners, answered, error_event, interrupt, node_exit
from .people import Asking, PauseRequested, approval_pause, by_deadline, gate_pause, judge, stored_answer
from .slots import Called, ChildFailed, Ended, Failed, Halted, Outcome, Parked, Settled, Slot, kept_pause, restored
from .stops import Stopped

if TYPE_CHECKING:
    from ..pauses import Change, Pause
    from .levels import Level

__all__ = ["Slots", "as_branch"]

_NOTHING_KEPT: Mapping[int, Mapping[str, Any]] = MappingProxyType({})


class Slots:
    """Runs the slots of one run's steps: calls their nodes (``caller``) and asks people
    around them (``asking``, ``breaks``)."""

    __slots__ = ("activity", "asking", "breaks", "caller", "listeners", "resumption")

    def __init__(self, caller: Caller, asking: Asking, breaks: Breaks) -> None:
        self.caller = caller
        self.asking = asking
        self.breaks = breaks
        self.listeners: Listeners = caller.listeners
        self.activity: Activity = caller.activity
        self.resumption = caller.resumption

    def settle(
        self, level: Level, slots: list[Slot], outcomes: list[Outcome | None], failed: list[int]
    ) -> list[Outcome] | Coroutine[Any, Any, list[Outcome]]:
        """Run a step's slots: how each settled, in slot order, or the coroutine that runs them
        when one awaits. Each outcome is put in ``outcomes`` as it settles, so that a stop in the
        middle keeps what finished; the slots that failed of themselves go in ``failed`` (in the
        order they failed; a branch cancelled because another failed is not one).

        Raises:
            Aborted: a person stopped the run, or its budget is spent (those that finished are
                in ``outcomes``).
            asyncio.CancelledError: the run was cancelled.
        """
        kept = level.take_settled() if level.settled else _NOTHING_KEPT
        if len(slots) > 1:
            return self.run_together(level, slots, kept, outcomes, failed)
        slot = slots[0]
        frame = slot.frame
        if kept or level.plan.nodes[frame.node].gated or self.breaks.armed or frame.branch != level.branch:
            outcome = self._around(level, slot, kept.get(slot.step))
        else:  # (nothing around the node: it is called at once, and a plain node returns at once)
            outcome = self.call(level, slot)
        if not isinstance(outcome, tuple):  # (all outcomes are; a coroutine is not)
            return self._settle_one(outcome, outcomes, failed)
        if type(outcome) is Failed:
            failed.append(0)
        return [outcome]

    async def _settle_one(
        self, running: Coroutine[Any, Any, Outcome], outcomes: list[Outcome | None], failed: list[int]
    ) -> list[Outcome]:
        outcome = outcomes[0] = await running
        if type(outcome) is Failed:
            failed.append(0)
        return [outcome]

    async def _around(self, level: Level, slot: Slot, entry: Mapping[str, Any] | None) -> Outcome:
        """One slot of a step: its node's call (or what a checkpoint kept of it) and the pauses
        before and after it (a slot with nothing around it, not a branch, is called at once:
        :meth:`settle`).

        Raises:
            Aborted: a person stopped the run, or its budget is spent.
            asyncio.CancelledError: the run was cancelled (a branch's cancellation by a failed
                sibling comes back as a failure instead).
        """
        frame = slot.frame
        node = level.plan.nodes[frame.node]
        branch = frame.branch != level.branch
        if entry is not None:
            called = restored(entry)
            if entry.get("error") is not None:
                return Failed(called.records, Settled(entry["error"]))
            pause = entry.get("pause")
            return called if pause is None else await self._after(level, slot, node, called, kept_pause(pause))
        held: tuple[Any, ...] | None = None
        breaks = self.breaks
        if breaks.armed:
            held = ()
            try:
                got = await pause_before(breaks, self.asking, self.resumption, frame, slot.step)
            except PauseRequested as paused:
                return Parked(paused.pauses)
            except asyncio.CancelledError:
                if branch:
                    raise
                return Ended(Ending("aborted", f"cancelled at the breakpoint before {frame.path!r} (step {slot.step})"))
            if got is not None:
                held, stop = got
                if stop is not None:
                    raise Stopped(stop)
        if node.approval_before:
            asked: list[Any] = []
            refused = await self._gate(level, slot, node, asked)
            if refused is not None:
                return refused
            held = (*(held or ()), *asked)
        try:
            outcome = self.call(level, slot, held)
            if not isinstance(outcome, tuple):
                outcome = await outcome
        except asyncio.CancelledError:
            if not branch:
                raise
            return Failed((), asyncio.CancelledError())  # cancelled by a sibling's failure
        if type(outcome) is not Called:
            return outcome
        if node.approval:  # (its approval stands in for a breakpoint after it)
            return await self._after(level, slot, node, outcome, None)
        if held is not None and breaks.stops_after(frame.path):
            return await self._after(level, slot, node, outcome, None)
        return outcome

    def call(
        self, level: Level, slot: Slot, held: tuple[Any, ...] | None = None
    ) -> Outcome | Coroutine[Any, Any, Outcome]:
        """Call the slot's node: what it gave, or the coroutine that calls it when its call is
        awaited or it asks a person (``ctx.ask`` in a synchronous node: in a live run, wait for
        the answer and call it again, from its start, until it has every answer it asks for). A
        node that cannot wait is parked at what it asks."""
        try:
            called = self.caller.call(level, slot, held)
        except PauseRequested as paused:
            return self._answered(level, slot, held, paused.pauses)
        if isinstance(called, tuple):
            return called
        return self._awaited(called, level, slot, held)

    async def _awaited(
        self, calling: Coroutine[Any, Any, Outcome], level: Level, slot: Slot, held: tuple[Any, ...] | None
    ) -> Outcome:
        try:
            return await calling
        except PauseRequested as paused:
            return await self._answered(level, slot, held, paused.pauses)

    async def _answered(
        self, level: Level, slot: Slot, held: tuple[Any, ...] | None, asked: tuple[Pause, ...]
    ) -> Outcome:
        """Call the node again once a person answered what it ``asked``, until it asks no more."""
        asking = self.asking
        while True:
            if not asking.live:
                return Parked(asked)
            for pause in asked:
                try:
                    answer = await asking.wait(pause)
                except PauseRequested as unwound:  # nobody will answer after all
                    return Parked(unwound.pauses)
                asking.pauses.record(pause.slot or "", stored_answer(pause, answer))
            try:
                called = self.caller.call(level, slot, held)
                return called if isinstance(called, tuple) else await called
            except PauseRequested as paused:
                asked = paused.pauses

    async def _after(self, level: Level, slot: Slot, node: NodePlan, called: Called, pause: Pause | None) -> Outcome:
        """The pause after a slot's node ran, an approval or a breakpoint: answered now (live),
        by the resume that brought ``pause`` back, or parked with the step it waits on."""
        record = called.records[-1]
        answer: Any = None
        if pause is not None:
            answer = self.resumption.verdict(pause.id)
            if answer is None:
                return Parked((pause,), called)
            record = self._answered_here(record, pause, answer)
        branch = slot.frame.branch != level.branch
        self.activity.wait_after(level, slot, called)  # the state shows its update while a person looks
        try:
            if node.approval:
                if pause is None:
                    pause = approval_pause(node, record, *self._verdict_shown(level, slot, node, called))
                    if not self.asking.live:
                        return Parked((pause,), called)
                    # The node has finished: say so before the interrupt, so live listeners see
                    # node-exit, interrupt, answer, route in that order (the trace has the same).
                    listeners = self.listeners
                    listeners.emit_step_if(lambda: node_exit(listeners.thread, record))
                    events: list[Any] = []
                    try:
                        answer = await self.asking.wait(pause, None, events)
                    except PauseRequested as paused:
                        return Parked(paused.pauses, called)
                    record = record._replace(approval_events=tuple(events))
                from ..pauses import read_approval

                verdict = judge(node, level.plan, record, read_approval(answer))
                records = (*called.records[:-1], verdict.record)
                if verdict.refused and not branch:
                    reason = f"approval of {node.name!r} was denied{by_deadline(record.approval_events)}"
                    return Ended(Ending("denied", reason), records=(*called.records[:-1], record))
                # A denial with nowhere to go drops the update: the fold must drop it too.
                return called._replace(records=records, update=verdict.record.update, hop=verdict.hop or called.hop)
            if pause is not None:
                self.breaks.take(answer)
                stop = stop_reason(pause) if answer == "stop" else None
            else:
                events = []
                try:
                    stop = await pause_after(self.breaks, self.asking, record, called.update, events)
                except PauseRequested as paused:
                    return Parked(paused.pauses, called)
                except asyncio.CancelledError:
                    if branch:
                        raise
                    stop = f"cancelled at the breakpoint after {record.path!r} (step {record.step})"  # the step is kept
                record = record._replace(approval_events=tuple(events))
        finally:
            self.activity.answered_after(level, slot)
        called = called._replace(records=(*called.records[:-1], record))
        return called if stop is None else Halted(called, stop)

    async def _gate(self, level: Level, slot: Slot, node: NodePlan, events: list[Any]) -> Outcome | None:
        """The approval before a slot's node runs: None when approved (its pause's events are put
        in ``events``, for the step's record), or how the slot settles when it is denied (the
        node does not run) or parked (nobody can wait, or the resume that brought it back has
        no answer)."""
        frame = slot.frame
        kept = self.resumption.gate((frame.path, frame.branch))
        if kept is not None and kept[1] is not None:
            pause, answer = kept
            thread = self.listeners.thread
            events += (
                interrupt(thread, slot.step, pause),
                answered(thread, slot.step, pause, answer, self.resumption.decision(pause.id)),
            )
            for event in events:
                self.listeners.emit(event)
        else:
            pause = gate_pause(frame, slot.step, level.values, node, kept[0] if kept is not None else None)
            if not self.asking.live:
                return Parked((pause,))
            try:
                answer = await self.asking.wait(pause, None, events)
            except PauseRequested as paused:
                return Parked(paused.pauses)
        from ..pauses import read_approval

        approval = read_approval(answer)
        if approval.approved:
            return None
        record = Step(slot.step, node.name, slot.visit, time.time(), 0.0, None, None, frame.path, frame.branch)
        record = record._replace(approval_events=tuple(events))
        verdict = judge(node, level.plan, record, approval)
        if verdict.refused and frame.branch == level.branch:
            return Ended(
                Ending("denied", f"approval before {node.name!r} was denied{by_deadline(events)}; it did not run"),
                records=(record,),
            )
        return Called((verdict.record,), None, verdict.hop, None)

    def _verdict_shown(
        self, level: Level, slot: Slot, node: NodePlan, called: Called
    ) -> tuple[tuple[Change, ...], tuple[str, ...] | None]:
        """What a step's update changes in the state, and where the run goes next if it is
        approved, for the person asked (nothing that fails here stops the run: routing runs
        again, on the approved state, as the step closes)."""
        from ..pauses import state_changes

        plan, before = level.plan, level.values
        try:
            after = fold(plan, before, called.update, called.records[:-1], slot.frame)
        except Exception:
            return (), None
        changes = state_changes(before, after, (called.update or {}).keys())
        hop = called.hop or node.fixed
        if hop is None:
            try:
                hop = node.route(plan.schema.view(after), called.ctx)
            except Exception:
                return changes, None
        # (a hop with no frames ends the run: its edge goes to END)
        return changes, tuple(dict.fromkeys(frame.node for frame in hop.frames)) or (hop.edge.target,)

    def _answered_here(self, record: Step, pause: Pause, answer: Any) -> Step:
        """A pause after a node that a resume answered: announced, and kept in the step's record,
        where a live pause's are."""
        listeners = self.listeners
        thread = listeners.thread
        listeners.emit_step_if(lambda: node_exit(thread, record))
        events = (
            interrupt(thread, record.step, pause),
            answered(thread, record.step, pause, answer, self.resumption.decision(pause.id)),
        )
        for event in events:
            listeners.emit(event)
        return record._replace(approval_events=events)

    # -- several at once -----------------------------------------------------------------

    async def run_together(
        self,
        level: Level,
        slots: list[Slot],
        kept: Mapping[int, Mapping[str, Any]],
        outcomes: list[Outcome | None],
        raised: list[int],
    ) -> list[Outcome]:
        """Run every slot as a branch: how each settled, in slot order. Each one's outcome is put in
        ``outcomes`` as it settles, and the slots that failed of themselves in ``raised`` (in the
        order they failed; a branch cancelled because another failed is not one).

        Raises:
            Aborted: a person stopped the run at a branch's breakpoint, or its budget is spent
                (the other branches are cancelled; those that finished are in ``outcomes``).
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
                    outcome = await self._around(level, slot, kept.get(slot.step))
                else:
                    async with limit:
                        statuses[i] = "running"
                        outcome = await self._around(level, slot, kept.get(slot.step))
                if type(outcome) is Halted:
                    # Stopped after its node ran: the branch is done (kept for a resume), the run stops.
                    outcomes[i] = outcome.called
                    raise Stopped(outcome.reason)
                outcome = outcomes[i] = as_branch(outcome)
            except Aborted:
                statuses[i] = "done" if outcomes[i] is not None else "failed"
                cancel_others()  # the run's budget is spent (or a person stopped it): no branch goes on
                raise
            statuses[i] = "failed" if type(outcome) is Failed else "paused" if type(outcome) is Parked else "done"
            if type(outcome) is Failed and not isinstance(outcome.error, asyncio.CancelledError):
                raised.append(i)
                if fail_fast:
                    cancel_others()
                elif outcome.records:
                    outcomes[i] = _listed(self.listeners, outcome)

        activity = self.activity
        activity.superstep(level, slots, statuses)
        done: list[BaseException | None] = []
        try:
            # No node can wait (none is async, and nobody is waited for: a durable run's pauses end
            # it): one after the other, in order. A live run's plain nodes wait for people together.
            if not self.asking.live and not any(plan.nodes[slot.frame.node].is_async for slot in slots):
                for i, slot in enumerate(slots):
                    await run(i, slot)
                    outcome = outcomes[i]
                    if type(outcome) is Failed:
                        if isinstance(outcome.error, asyncio.CancelledError):
                            raise asyncio.CancelledError  # no sibling cancels here: the run itself was
                        if fail_fast:
                            break
            else:
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
            activity.superstep_over(level)
        for result in done:
            if isinstance(result, Aborted):
                raise result
        # (A branch that never started, its step failing fast before its turn, is one a sibling cancelled.)
        return [Failed((), asyncio.CancelledError()) if outcome is None else outcome for outcome in outcomes]


def as_branch(outcome: Outcome) -> Outcome:
    """What a slot's outcome is as one of several branches: a stop of its own is the branch's
    failure (or its pause, or the whole run's abort when a time budget ran out).

    Raises:
        Aborted: the run's time budget ran out during the branch.
    """
    if type(outcome) is not Ended:
        return outcome
    ending = outcome.ending
    if ending.outcome == "interrupted":
        return Parked(ending.pauses)
    if outcome.timed_out and ending.outcome == "aborted":
        raise Aborted(ending.reason or "the run's time budget ran out")
    return Failed(outcome.records, ChildFailed(ending))


def _listed(listeners: Listeners, failed: Failed) -> Failed:
    """A branch that failed with ``settle="all"``: its step goes on without it, and its record
    carries an error event naming it (live now, and in every trace rebuilt from the history)."""
    record = failed.records[-1]
    event = error_event(
        listeners.thread,
        record.step,
        record.node,
        record.path,
        record.branch,
        f"branch {record.branch!r} (node {record.path!r}) failed at step {record.step}: {record.error}",
        type(failed.error).__name__,
    )
    listeners.emit(event)
    return failed._replace(records=(*failed.records[:-1], record._replace(events=(*record.events, event))))
