"""Branches: several frames run together as one superstep, and settle together.

A static fan-out, a map, or ``Send`` items put several frames in a level's frontier.
They run as tasks of the run's loop (at most ``max_concurrency`` at once), each
numbered in frontier order before any starts. When all have settled, their updates
fold into the state in that order, whatever order they finished in, and routing
goes on: once per branch for a fan-out, once for all the branches of a map. With
``settle="fail_fast"`` the first failure cancels the others and fails the step; with
``"all"`` every branch runs to its end and a failed one only leaves its record.

A branch that pauses in a durable run does not stop the others: when they have all
settled the run ends ``interrupted`` with every open pause, and the branches that
finished are kept in the checkpoint (``settled``), so a resume runs only the rest.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..errors import InvalidUpdate, NbgraphError
from ..history import NO_PAYLOAD, FiredEdge, Frame, Step
from ..plan import Hop
from ..state import close_coroutines
from .breaks import pause_after, pause_before, stop_reason, take_break_answer
from .calls import Called, ChildStopped, TimedOut, enter_event, fold, invoke, make_step
from .context import Context
from .ending import Ending
from .limits import Aborted, branch_waits
from .listeners import error_event, interrupt, resume, step_end_events
from .people import ASK_BUDGET, PauseRequested, apply_verdict, approve_step, ask_budget
from .slots import Failed, Halted, Parked, Slot, keep, kept_pause, number, restored, undo
from .stops import Stopped, failure, hit_max_steps, interrupted

if TYPE_CHECKING:
    from ..pauses import Pause
    from .levels import Level
    from .walker import Walker

__all__ = ["superstep"]


async def superstep(walker: Walker, level: Level, frames: tuple[Frame, ...]) -> tuple[Frame, ...] | Ending:
    """Run ``frames`` together; the frames that come next, or why the run stops."""
    plan = level.plan
    n = len(frames)
    if level.steps + n > plan.max_steps:
        return hit_max_steps(level, frames[0].node)
    if walker.meter.budget is not None:
        stop = walker.budget_stop(n)
        while stop is ASK_BUDGET:
            stop = await ask_budget(walker, level, frames) or walker.budget_stop(n)
        if stop is not None:
            return stop
    level.last_node, level.same = None, 0
    base = level.steps
    slots = number(level, frames, base)
    settled = {entry["step"]: entry for entry in level.settled}
    level.settled = []
    results: list[Any] = [None] * n
    raised: list[int] = []
    try:
        await _run(walker, level, slots, settled, results, raised)
    except Aborted as aborted:
        keep(level, slots, results)  # what finished before the stop is not run again on resume
        ending = undo(level, slots, base, Ending("aborted", aborted.reason))
        if type(aborted) is Stopped and level is not walker.root:
            raise  # a person stopped the run: up to its own level
        return ending
    except (asyncio.CancelledError, KeyboardInterrupt) as stop:
        keep(level, slots, results)
        why = "cancelled" if isinstance(stop, asyncio.CancelledError) else "interrupted (KeyboardInterrupt)"
        return undo(level, slots, base, Ending("aborted", f"{why} during {n} branches at step {base + 1}"))
    if raised and plan.settle == "fail_fast":
        first = raised[0]
        slot, result = slots[first], results[first]
        level.records.extend(result.records)
        keep(level, slots, results)
        ending = failure(walker, level, None, _BranchFailed(slot, result.error), slot.step)
        return undo(level, slots, base, ending, keep_frames=True)
    parked = [r for r in results if isinstance(r, Parked)]
    if parked:
        unstorable = keep(level, slots, results)
        if unstorable is not None:  # (the pauses cannot wait in a checkpoint beside it)
            return undo(level, slots, base, failure(walker, level, None, unstorable, base + 1), keep_frames=True)
        return undo(level, slots, base, interrupted(walker, *(p for r in parked for p in r.pauses)), keep_frames=True)
    # Every branch settled: fold in frontier order, then route.
    values = level.values
    try:
        for slot, result in zip(slots, results):
            if not isinstance(result, Failed):
                values = fold(plan, values, result.update, result.records[:-1], slot.frame)
                edit = result.records[-1].edit
                if edit:
                    values = plan.schema.apply(values, edit, slot.frame.node)
    except InvalidUpdate as exc:
        for result in results:  # (the failed fold closed its own update's coroutines; the rest are dropped too)
            if not isinstance(result, Failed) and result.update:
                close_coroutines(result.update.values())
        return undo(level, slots, base, failure(walker, level, None, exc, base + 1), keep_frames=True)
    before = level.values
    level.values = values
    level.steps = base + n
    try:
        records, taken = _route(walker, level, slots, results)
    except NbgraphError as exc:
        level.values = before
        return undo(level, slots, base, failure(walker, level, None, exc, base + n), keep_frames=True)
    level.records.extend(records)
    for record in records:
        walker.seconds += record.duration
    next_frames = level.next_frames(tuple(taken))
    if walker.persistence.store is not None:
        try:
            walker.save(tuple(records), next_frames) if level is walker.root else walker.persistence.progress()
        except NbgraphError as exc:
            level.values = before
            del level.records[-len(records):]
            return undo(level, slots, base, failure(walker, level, None, exc, base + n), keep_frames=True)
    listeners = walker.listeners
    if listeners.steps:
        for record in records:
            for event in step_end_events(walker.thread, record):
                listeners.emit_step(event)
    return next_frames


async def _run(
    walker: Walker, level: Level, slots: list[Slot], settled: dict[int, Any], results: list[Any], raised: list[int]
) -> None:
    """Run every slot's node, putting each one's result in ``results`` (in slot order) as it
    settles, and the slots that failed of themselves in ``raised`` (in the order they failed;
    a branch cancelled because another failed is not one)."""
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
                results[i] = await _branch(walker, level, slot, settled.get(slot.step))
            else:
                async with limit:
                    statuses[i] = "running"
                    results[i] = await _branch(walker, level, slot, settled.get(slot.step))
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
                results[i] = _listed(walker, slot, result)

    walker.supersteps[level] = (slots, statuses)
    try:
        if not any(plan.nodes[slot.frame.node].is_async for slot in slots):
            for i, slot in enumerate(slots):  # no node can wait: one after the other, in order
                await run(i, slot)
                if fail_fast and isinstance(results[i], Failed):
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


async def _branch(walker: Walker, level: Level, slot: Slot, entry: Mapping[str, Any] | None) -> Any:
    """One branch: its node's call (or what a checkpoint kept of it), its approval, and the
    breakpoints before and after it."""
    node = level.plan.nodes[slot.frame.node]
    if entry is not None:
        called = restored(entry)
        if entry.get("error") is not None:
            return Failed(called.records, _Settled(entry["error"]))
        pause = entry.get("pause")
        if pause is None:
            return called
        pause = kept_pause(pause)
        if pause.kind == "breakpoint":
            return await _break_after(walker, called, pause)
        return await _approve(walker, level, node, called, pause)
    held: tuple[Any, ...] | None = None
    breaks = walker.breaks
    if breaks is not None:
        held, got = (), None
        if walker.passing or breaks.stops_before(slot.frame.path):
            try:
                got = await pause_before(walker, slot.frame, slot.step)
            except PauseRequested as paused:
                return Parked((paused.pause,))
        if got is not None:
            held, stop = got
            if stop is not None:
                raise Stopped(stop)
    started, t0 = time.time(), time.perf_counter()
    try:
        called = await _call(walker, level, slot.frame, slot.step, slot.visit, held)
    except PauseRequested as paused:
        return Parked((paused.pause,))
    except ChildStopped as child:
        if child.ending.outcome == "interrupted":
            return Parked(child.ending.pauses)
        error = _ChildFailed(child.ending)
        return Failed(_given_up(walker, level, slot, started, t0, error), error)
    except TimedOut as timed:
        deadline = timed.deadline
        if deadline.outcome == "aborted":
            raise Aborted(f"{deadline.reason} at step {slot.step}") from None
        error = _ChildFailed(Ending("failed", f"{deadline.reason} at step {slot.step}"))
        return Failed(_given_up(walker, level, slot, started, t0, error), error)
    except asyncio.CancelledError:
        return Failed((), asyncio.CancelledError())
    if called.error is not None:
        return Failed(called.records, called.error)
    if node.approval:  # (its approval stands in for a breakpoint after it)
        return await _approve(walker, level, node, called, None)
    if held is not None and walker.breaks is not None and walker.breaks.stops_after(slot.frame.path):
        return await _break_after(walker, called, None)
    return called


async def _call(
    walker: Walker, level: Level, frame: Frame, step: int, visit: int, held: tuple[Any, ...] | None = None
) -> Called:
    """Call a branch's node (or walk the sub-graph it is) and say what it gave.

    A node's own exception comes back in ``error``; a pause, a budget, a deadline, a
    stop and a stopped sub-graph are raised. ``held`` are the events of a breakpoint's
    pause before the node, for its record.
    """
    plan = level.plan
    name = frame.node
    node = plan.nodes[name]
    ctx = Context(walker, plan, name, step, visit, frame.path, frame.branch, level.scope) if node.wants_ctx or held else None
    if held:
        ctx._events = list(held)  # type: ignore[union-attr]
    listeners = walker.listeners
    if listeners.steps:
        listeners.emit_step(enter_event(walker, step, frame, visit))
    calls = walker.calls
    calls.append(frame)
    waits = [0.0, branch_waits.get()]
    token = branch_waits.set(waits)
    started = time.time()
    t0 = time.perf_counter()
    inner: tuple[Step, ...] = ()
    try:
        update, hop, inner = await invoke(walker, level, frame, node, ctx, visit)
    except Exception as exc:
        record = make_step(step, frame, visit, started, time.perf_counter() - t0 - waits[0], None, None, ctx, exc)
        return Called((*inner, record), None, None, ctx, exc)
    finally:
        calls.remove(frame)
        branch_waits.reset(token)
    duration = time.perf_counter() - t0 - waits[0]
    record = make_step(step, frame, visit, started, duration, update, hop.edge if hop else None, ctx)
    return Called((*inner, record), update, hop, ctx)


def _given_up(walker: Walker, level: Level, slot: Slot, started: float, t0: float, error: _ChildFailed) -> tuple[Step, ...]:
    """The records of a branch that ended short (its sub-graph failed, its node timed out).

    With ``settle="fail_fast"`` the step fails and a resume re-enters the sub-graph
    where it stopped, so nothing is recorded here. With ``"all"`` the branch is over:
    the sub-graph levels it left open close, their steps and its own failed step go
    into the history.
    """
    if level.plan.settle != "all":
        return ()
    frame = slot.frame
    inner: list[Step] = []
    for key in sorted(key for key in walker.open_levels if _inside(key, frame)):  # outer levels first
        inner.extend(walker.open_levels.pop(key).records)
    duration = time.perf_counter() - t0
    return (*inner, Step(slot.step, frame.node, slot.visit, started, duration, path=frame.path, branch=frame.branch, error=error.reason))


def _inside(key: str, frame: Frame) -> bool:
    """Whether the level ``key`` names is ``frame``'s sub-graph or one nested in it."""
    path, _, branch = key.partition("@")
    own = frame.branch or ""
    return (path == frame.path or path.startswith(frame.path + "/")) and (branch == own or branch.startswith(own + "/"))


def _arrivals(plan: Any, frame: Frame) -> list[tuple[Frame, Hop]]:
    """A branch that settled without routing (failed, or denied) still arrives at the joins it
    feeds: they must not wait for it for ever."""
    return [
        (frame, Hop(FiredEdge(frame.node, edge.target, edge.label, edge.when is None), plan.frames_to(edge.target), frozenset(edge.join)))
        for edge in plan.edges
        if edge.source == frame.node and edge.join
    ]


async def _approve(walker: Walker, level: Level, node: Any, called: Called, pause: Pause | None) -> Any:
    """A branch's approval: answered now (live, or by a resume), or parked with its step."""
    record = called.records[-1]
    if pause is not None:
        verdict = walker.answered.pop(pause.id, None)
        if verdict is None:
            return Parked((pause,), called)
        from ..pauses import read_approval

        settled = apply_verdict(walker, node, record, read_approval(verdict), level, in_branch=True)
    else:
        try:
            settled = await approve_step(walker, node, record, level, in_branch=True)
        except PauseRequested as paused:
            return Parked((paused.pause,), called)
    if isinstance(settled, Ending):
        return Failed(called.records, _ChildFailed(settled))
    record, denied = settled
    # A denial with nowhere to go cleared the record's update: the fold must drop it too.
    return called._replace(records=(*called.records[:-1], record), update=record.update, hop=denied or called.hop)


async def _break_after(walker: Walker, called: Called, pause: Pause | None) -> Any:
    """A branch's breakpoint after its node ran: answered now (live, or by a resume), or
    parked with its step; ``stop`` halts the run once the branch is kept."""
    record = called.records[-1]
    if pause is not None:
        answer = walker.answered.pop(pause.id, None)
        if answer is None:
            return Parked((pause,), called)
        thread = walker.thread
        events = (interrupt(thread, record.step, pause), resume(thread, record.step, pause, answer))
        for event in events:
            walker.listeners.emit(event)
        take_break_answer(walker, answer)
        record = record._replace(approval_events=events)
        stop = stop_reason(pause) if answer == "stop" else None
    else:
        try:
            record, stop = await pause_after(walker, record, called.update)
        except PauseRequested as paused:
            return Parked((paused.pause,), called)
    called = called._replace(records=(*called.records[:-1], record))
    return called if stop is None else Halted(called, stop)


def _route(walker: Walker, level: Level, slots: list[Slot], results: list[Any]) -> tuple[list[Step], list[tuple[Frame, Hop]]]:
    """Route every branch that settled (a map once, after its last branch); their records."""
    plan = level.plan
    view = plan.schema.view(level.values)
    # A map routes once, after the last of its branches that did not route themselves (a
    # Goto) or fail; after its last failed one if every one failed: "all" goes on regardless.
    last_of_map: dict[str, int] = {}
    last_failed: dict[str, int] = {}
    for i, (slot, result) in enumerate(zip(slots, results)):
        if slot.frame.payload is not NO_PAYLOAD:
            if isinstance(result, Failed):
                last_failed[slot.frame.node] = i
            elif result.hop is None:
                last_of_map[slot.frame.node] = i
    for name, i in last_failed.items():
        last_of_map.setdefault(name, i)
    records: list[Step] = []
    taken: list[tuple[Frame, Hop]] = []
    for i, (slot, result) in enumerate(zip(slots, results)):
        frame = slot.frame
        failed = isinstance(result, Failed)
        if failed and not (result.records and frame.payload is not NO_PAYLOAD and last_of_map.get(frame.node) == i):
            records.extend(result.records)
            if frame.payload is NO_PAYLOAD:
                taken.extend(_arrivals(plan, frame))
            continue
        node = plan.nodes[frame.node]
        hop = None if failed else result.hop
        if hop is None and frame.payload is not NO_PAYLOAD and last_of_map.get(frame.node) != i:
            records.extend(result.records)
            continue
        if hop is not None and not hop.frames and hop.edge.label == "denied" and frame.payload is NO_PAYLOAD:
            taken.extend(_arrivals(plan, frame))
        if hop is None:
            hop = node.fixed
            if hop is None:
                ctx = (None if failed else result.ctx) or (
                    Context(walker, plan, frame.node, slot.step, slot.visit, frame.path, frame.branch, level.scope)
                    if node.wants_ctx
                    else None
                )
                hop = node.route(view, ctx)
        records.extend(result.records[:-1])
        records.append(result.records[-1]._replace(edge=hop.edge))
        taken.append((frame._replace(branch=None) if frame.payload is not NO_PAYLOAD else frame, hop))
    return records, taken


def _listed(walker: Walker, slot: Slot, result: Failed) -> Failed:
    """A branch that failed with ``settle="all"``: its step goes on without it, and its record
    carries an error event naming it (live now, and in every trace rebuilt from the history)."""
    record = result.records[-1]
    event = error_event(
        walker.thread, record.step, record.node, record.path, record.branch,
        f"branch {record.branch!r} (node {record.path!r}) failed at step {record.step}: {record.error}",
        type(result.error).__name__,
    )
    walker.listeners.emit(event)
    return result._replace(records=(*result.records[:-1], record._replace(events=(*record.events, event))))


class _BranchFailed(NbgraphError):
    """A branch failed and, with ``settle="fail_fast"``, failed its step."""

    def __init__(self, slot: Slot, error: BaseException) -> None:
        frame = slot.frame
        payload = "" if frame.payload is NO_PAYLOAD else f", payload {frame.payload!r:.80}"
        cause = error.reason if isinstance(error, _ChildFailed) else f"{type(error).__name__}: {error}"
        super().__init__(f"branch {frame.branch!r} (node {frame.path!r}{payload}) failed at step {slot.step}: {cause}")


class _Settled(Exception):
    """A branch that failed before a checkpoint, with ``settle="all"``: its error, as recorded."""


class _ChildFailed(Exception):
    """A branch ended with an ending of its own (a sub-graph failed, a deadline, a denial)."""

    def __init__(self, ending: Ending) -> None:
        self.reason = ending.reason or ending.outcome
        super().__init__(self.reason)
