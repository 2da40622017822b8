"""A step: the frames of a level's frontier run as one step, one frame or several branches,
through one lifecycle.

1. Limits: ``max_steps``, the budget (which may ask a person to raise it), the streak
   of one node run again and again.
2. Slots: each frame numbered with its step, its visit and (several at once) its branch
   before any runs, then run (``branches``): a breakpoint's pause before the node, the
   call, an approval or a breakpoint's pause after it.
3. Settling: a stop, a cancel, a failure (``settle="fail_fast"``) or a pause ends the
   step here; the slots that finished are kept for a resume, and the step is undone.
4. Closing: the updates fold into the state in slot order, whatever order the slots
   finished in; routing goes on from each (a map once, after its last branch); the step
   is recorded, saved and announced. A route or a save that fails undoes it all.

A lone frame differs for the person watching it: its update folds in as soon as its node
returns (so an approval shows the state with it), a pause after it at the run's own
level saves the step with its routing left to do, and a failure names the node rather
than a branch. :func:`plain` is the same lifecycle specialised for the commonest step, a
lone synchronous function with nothing to pause at; ``bench/engine.py`` measures what it
saves. A step the run was stopped inside is taken up again by :func:`route_restored`.
"""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING, Any

from ..errors import InvalidUpdate, NbgraphError
from ..history import NO_PAYLOAD, FiredEdge, Frame, Step
from ..plan import Hop
from ..state import close_coroutines
from .branches import run_slot, run_together
from .breaks import stop_reason, take_break_answer
from .calls import enter_event, error_text, fold, make_step
from .context import Context
from .ending import Ending
from .limits import Aborted, Meter
from .listeners import answered, interrupt, route_event, step_end_events
from .outputs import read_output
from .people import ASK_BUDGET, PauseRequested, apply_verdict, ask_budget, wait_for_person
from .slots import ChildFailed, Ended, Failed, Halted, Parked, Slot, keep, number, undo
from .stops import Stopped, failure, hit_max_steps, interrupted, stop_here, stopped

if TYPE_CHECKING:
    from ..pauses import Pause
    from ..plan import NodePlan
    from .levels import Level
    from .walker import Walker

__all__ = ["FAST_PATH", "answered_then_again", "plain", "route_restored", "take_step"]

FAST_PATH = True
"""Whether a lone plain synchronous step takes :func:`plain` (``bench/engine.py`` turns it
off to measure what it saves)."""


async def take_step(walker: Walker, level: Level, frames: tuple[Frame, ...]) -> tuple[Frame, ...] | Ending:
    """Take one step of ``level``: the frames that come next, or how the run stops."""
    stop = limits(walker.meter, level, frames)
    while stop is ASK_BUDGET:  # (a person raises the budget, or stops the run)
        stop = await ask_budget(walker, level, frames) or limits(walker.meter, level, frames)
    if stop is not None:
        return stop
    if len(frames) == 1 and FAST_PATH and walker.breaks is None and not level.settled:
        frame = frames[0]
        node = level.plan.nodes[frame.node]
        if not (node.is_async or node.subplan is not None or node.approval):
            while True:
                try:
                    return plain(walker, level, frame, node)
                except PauseRequested as paused:  # (ctx.ask in a synchronous node)
                    stop = await answered_then_again(walker, level, frame, paused.pause)
                    if stop is not None:
                        return stop
    return await _slots(walker, level, frames)


async def answered_then_again(walker: Walker, level: Level, frame: Frame, pause: Pause) -> Ending | None:
    """A synchronous node asked a person (``ctx.ask``) and stopped: None once a live run has
    the answer (the node runs again from its start and finds it), or how the run stops."""
    try:
        answer = await wait_for_person(walker, pause, None)
    except PauseRequested as paused:
        level.frames = (frame,)  # the node runs again on resume, from its start
        return interrupted(walker, paused.pause)
    except asyncio.CancelledError as stop:
        return stopped(level, frame, level.steps + 1, stop)
    walker.pauses.answers[pause.slot or ""] = answer
    return None


def limits(meter: Meter, level: Level, frames: tuple[Frame, ...]) -> Ending | None:
    """Why ``level`` must not take a step of ``frames`` (:data:`ASK_BUDGET`: a person is
    asked to raise the budget first), or None."""
    plan = level.plan
    count = len(frames)
    if level.steps + count > plan.max_steps:
        return hit_max_steps(level, frames[0].node)
    budget = meter.budget
    if budget is not None:
        if budget.ask and meter.ahead(count):
            return ASK_BUDGET
        reason = meter.out_of_time() if budget.ask else meter.over()
        if reason is not None:
            return Ending("aborted", reason)
    if count > 1:
        level.last_node, level.same = None, 0  # branches break a streak
        return None
    name = frames[0].node
    if name != level.last_node:
        level.last_node, level.same = name, 1
        return None
    level.same += 1
    if level.same > plan.max_same_node:
        return Ending(
            "aborted", f"node {name!r} ran {plan.max_same_node} times in a row (max_same_node={plan.max_same_node})"
        )
    return None


# -- the lifecycle -----------------------------------------------------------------------


async def _slots(walker: Walker, level: Level, frames: tuple[Frame, ...]) -> tuple[Frame, ...] | Ending:
    n = len(frames)
    lone = n == 1
    base = level.steps
    before = level.values
    slots = number(level, frames, base)
    kept = {entry["step"]: entry for entry in level.settled}
    level.settled = []
    results: list[Any] = [None] * n
    raised: list[int] = []
    try:
        if lone:
            result = results[0] = await run_slot(walker, level, slots[0], kept.get(slots[0].step), lone=True)
            if isinstance(result, Failed):
                raised.append(0)
        else:
            await run_together(walker, level, slots, kept, results, raised)
    except Aborted as aborted:
        keep(level, slots, results)  # what finished before the stop is not run again on resume
        level.values = before
        ending = undo(level, slots, base, Ending("aborted", aborted.reason), keep_frames=lone)
        if type(aborted) is Stopped and level is not walker.root:
            raise  # a person stopped the run: up to its own level
        return ending
    except (asyncio.CancelledError, KeyboardInterrupt) as stop:
        keep(level, slots, results)
        level.values = before
        if lone:
            return undo(level, slots, base, stopped(level, frames[0], base + 1, stop), keep_frames=True)
        why = "cancelled" if isinstance(stop, asyncio.CancelledError) else "interrupted (KeyboardInterrupt)"
        return undo(level, slots, base, Ending("aborted", f"{why} during {n} branches at step {base + 1}"))
    if lone and type(results[0]) is Ended:
        level.values = before
        return undo(level, slots, base, results[0].ending, keep_frames=True)
    if raised and (lone or level.plan.settle == "fail_fast"):
        first = raised[0]
        slot, result = slots[first], results[first]
        level.records.extend(result.records)
        keep(level, slots, results)
        level.values = before
        if lone:
            ending = failure(walker.listeners, level, slot.frame, result.error, slot.step)
        else:
            ending = failure(walker.listeners, level, None, _BranchFailed(slot, result.error), slot.step)
        return undo(level, slots, base, ending, keep_frames=True)
    parked = [result for result in results if isinstance(result, Parked)]
    if parked:
        if lone and parked[0].called is not None and level is walker.root:
            return _park(walker, level, parked[0])
        unstorable = keep(level, slots, results)
        level.values = before
        if unstorable is not None:  # (the pauses cannot wait in a checkpoint beside it)
            return undo(
                level, slots, base, failure(walker.listeners, level, None, unstorable, base + 1), keep_frames=True
            )
        return undo(level, slots, base, interrupted(walker, *(p for r in parked for p in r.pauses)), keep_frames=True)
    halt = None
    if lone and type(results[0]) is Halted:
        halt, results[0] = results[0].reason, results[0].called
    closed = _close(walker, level, slots, results, base, before, lone)
    if halt is not None and not isinstance(closed, Ending):
        level.frames = closed  # the step is routed and saved: a resume goes on from here
        return stop_here(walker, level, halt)
    return closed


def _park(walker: Walker, level: Level, parked: Parked) -> Ending:
    """A lone step at the run's own level waits for an answer after its node ran (an
    approval, a breakpoint): it is recorded and saved with its routing left to do, and the
    run ends ``interrupted``. A resume routes it on (:func:`route_restored`)."""
    called = parked.called
    assert called is not None
    level.records.extend(called.records)
    for record in called.records:
        walker.seconds += record.duration
    walker.save(called.records, ())
    return interrupted(walker, *parked.pauses)


def _close(
    walker: Walker, level: Level, slots: list[Slot], results: list[Any], base: int, before: dict[str, Any], lone: bool
) -> tuple[Frame, ...] | Ending:
    """Fold (a lone slot's update is in already), route, record, save and announce a step
    whose slots have all settled; or undo it when the fold, a route or the save fails."""
    plan = level.plan
    if not lone:
        values = before
        try:
            for slot, result in zip(slots, results, strict=True):
                if not isinstance(result, Failed):
                    values = fold(plan, values, result.update, result.records[:-1], slot.frame)
                    edit = result.records[-1].edit
                    if edit:
                        values = plan.schema.apply(values, edit, slot.frame.node)
        except InvalidUpdate as exc:
            for result in results:  # (the failed fold closed its own update's coroutines; the rest are dropped too)
                if not isinstance(result, Failed) and result.update:
                    close_coroutines(result.update.values())
            return undo(level, slots, base, failure(walker.listeners, level, None, exc, base + 1), keep_frames=True)
        level.values = values
    level.steps = base + len(slots)
    try:
        records, taken = _route(walker, level, slots, results)
    except NbgraphError as exc:
        return _rolled_back(walker, level, slots, results, base, before, exc, None)
    level.records.extend(records)
    next_frames = level.next_frames(tuple(taken))
    if walker.persistence.store is not None:
        try:
            walker.save(tuple(records), next_frames) if level is walker.root else walker.persistence.progress()
        except NbgraphError as exc:
            del level.records[-len(records) :]
            return _rolled_back(walker, level, slots, results, base, before, exc, records)
    for record in records:
        walker.seconds += record.duration
    listeners = walker.listeners
    if listeners.steps:
        thread = walker.thread
        own = {slot.frame.path for slot in slots}  # (a sub-graph's own steps were announced as they happened)
        for record in records:
            if record.path not in own or record.error is not None:
                continue
            if record.approval_events:  # (its node-exit and the pause were announced as they happened)
                if record.edge is not None:  # (a map's branch before its last routes with that one)
                    listeners.emit_step(route_event(thread, record.step, record.edge, record.path, record.branch))
            else:
                for event in step_end_events(thread, record):
                    listeners.emit_step(event)
    return next_frames


def _rolled_back(
    walker: Walker,
    level: Level,
    slots: list[Slot],
    results: list[Any],
    base: int,
    before: dict[str, Any],
    exc: NbgraphError,
    records: list[Step] | None,
) -> Ending:
    """A route or the save failed: the step is undone as a whole (its updates dropped, its
    frames run again on resume); a lone step's record says why it failed."""
    level.values = before
    if len(slots) > 1:
        return undo(
            level, slots, base, failure(walker.listeners, level, None, exc, base + len(slots)), keep_frames=True
        )
    called = results[0]
    failed = (records or called.records)[-1]._replace(update=None, edge=None, error=error_text(exc))
    level.records.extend((*called.records[:-1], failed))
    slot = slots[0]
    return undo(level, slots, base, failure(walker.listeners, level, slot.frame, exc, slot.step), keep_frames=True)


def _route(
    walker: Walker, level: Level, slots: list[Slot], results: list[Any]
) -> tuple[list[Step], list[tuple[Frame, Hop]]]:
    """Route every slot that settled (a map once, after its last branch); their records."""
    plan = level.plan
    view = plan.schema.view(level.values)
    # A map routes once, after the last of its branches that did not route themselves (a
    # Goto) or fail; after its last failed one if every one failed: "all" goes on regardless.
    last_of_map: dict[str, int] = {}
    last_failed: dict[str, int] = {}
    for i, (slot, result) in enumerate(zip(slots, results, strict=True)):
        if slot.frame.payload is not NO_PAYLOAD:
            if isinstance(result, Failed):
                last_failed[slot.frame.node] = i
            elif result.hop is None:
                last_of_map[slot.frame.node] = i
    for name, i in last_failed.items():
        last_of_map.setdefault(name, i)
    records: list[Step] = []
    taken: list[tuple[Frame, Hop]] = []
    for i, (slot, result) in enumerate(zip(slots, results, strict=True)):
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


def _arrivals(plan: Any, frame: Frame) -> list[tuple[Frame, Hop]]:
    """A branch that settled without routing (failed, or denied) still arrives at the joins it
    feeds: they must not wait for it for ever."""
    return [
        (
            frame,
            Hop(
                FiredEdge(frame.node, edge.target, edge.label, edge.when is None),
                plan.frames_to(edge.target),
                frozenset(edge.join),
            ),
        )
        for edge in plan.edges
        if edge.source == frame.node and edge.join
    ]


class _BranchFailed(NbgraphError):
    """A branch failed and, with ``settle="fail_fast"``, failed its step."""

    def __init__(self, slot: Slot, error: BaseException) -> None:
        frame = slot.frame
        payload = "" if frame.payload is NO_PAYLOAD else f", payload {frame.payload!r:.80}"
        cause = error.reason if isinstance(error, ChildFailed) else f"{type(error).__name__}: {error}"
        super().__init__(f"branch {frame.branch!r} (node {frame.path!r}{payload}) failed at step {slot.step}: {cause}")


# -- the commonest step, specialised ------------------------------------------------------


def plain(walker: Walker, level: Level, frame: Frame, node: NodePlan) -> tuple[Frame, ...] | Ending:
    """The lifecycle of a lone step whose node is a synchronous function, with no breakpoint,
    approval or kept branch to deal with: no coroutine, no slot, the same order of things."""
    plan = level.plan
    name = frame.node
    visit = level.visits.get(name, 0) + 1
    step = level.steps + 1
    before = level.values
    ctx = Context(walker, plan, name, step, visit, frame.path, frame.branch, level.scope) if node.wants_ctx else None
    listeners = walker.listeners
    if listeners.steps:
        listeners.emit_step(enter_event(walker, step, frame, visit))
    calls = walker.calls
    calls.append(frame)
    started = time.time()
    t0 = time.perf_counter()
    try:
        given = plan.schema.view(before) if frame.payload is NO_PAYLOAD else frame.payload
        out = node.fn(given, ctx) if node.takes_ctx else node.fn(given)
        if out is None or type(out) is dict:
            update, hop = out, None
        else:
            update, hop = read_output(out, node, plan)
        values = plan.schema.apply(before, update, name) if update else before
    except Aborted as aborted:  # (a node that checks the budget itself)
        return Ending("aborted", aborted.reason)
    except KeyboardInterrupt as stop:
        return stopped(level, frame, step, stop)
    except Exception as exc:
        level.records.append(make_step(step, frame, visit, started, time.perf_counter() - t0, None, None, ctx, exc))
        return failure(walker.listeners, level, frame, exc, step)
    finally:
        calls.remove(frame)
    duration = time.perf_counter() - t0
    if hop is None:
        hop = node.fixed
        if hop is None:
            try:
                hop = node.route(plan.schema.view(values), ctx)
            except NbgraphError as exc:
                # The step fails as a whole: its update is dropped, the node runs again on resume.
                level.records.append(make_step(step, frame, visit, started, duration, None, None, ctx, exc))
                return failure(walker.listeners, level, frame, exc, step)
    record = make_step(step, frame, visit, started, duration, update, hop.edge, ctx)
    if hop.join is not None or frame.branch is not None or level.path:
        frames = level.next_frames(((frame, hop),))
    else:
        frames = hop.frames
    level.visits[name] = visit
    level.steps = step
    level.values = values
    level.records.append(record)
    if walker.persistence.store is not None:
        try:
            walker.save((record,), frames) if level is walker.root else walker.persistence.progress()
        except NbgraphError as exc:
            # Not saved, not done: the store keeps the step before, and so does the run.
            level.steps, level.values = step - 1, before
            level.visits[name] = visit - 1
            level.records[-1] = record._replace(update=None, edge=None, error=error_text(exc))
            return failure(walker.listeners, level, frame, exc, step)
    walker.seconds += duration
    if listeners.steps:
        for event in step_end_events(walker.thread, record):
            listeners.emit_step(event)
    return frames


# -- a step the run was stopped inside ----------------------------------------------------


def route_restored(walker: Walker, pause: Pause | None = None, answer: Any = None) -> Ending | None:
    """Take up the run's own last step where its thread stopped it, before its routing: a
    fork's first step (routed with the graph as defined now), or a step whose node ran and
    then paused (an approval, a breakpoint), with the answer a resume brought.

    The answer's pause is kept in the step's record, where a live pause's is, so the
    thread's trace shows it in the same place.
    """
    record = walker.history.pop()
    if pause is not None:
        thread = walker.thread
        events = (interrupt(thread, record.step, pause), answered(thread, record.step, pause, answer))
        for event in events:
            walker.listeners.emit(event)
        record = record._replace(approval_events=events)
    hop = None
    if pause is not None and pause.kind == "approval":
        settled = apply_verdict(walker, walker.plan.nodes[record.node], record, answer)  # (a denial keeps the record)
        if isinstance(settled, Ending):
            return settled
        record, hop = settled
    elif pause is not None:
        take_break_answer(walker, answer)
    if hop is None:
        hop = walker.plan.hop_of(record.edge) if record.edge is not None else walker.route_from(record)
    record = record._replace(edge=hop.edge)
    walker.history.append(record)
    walker.root.frames = hop.frames
    walker.save((record,), hop.frames)
    walker.listeners.emit_step_if(lambda: route_event(walker.thread, record.step, hop.edge, record.path, record.branch))
    if pause is not None and pause.kind == "breakpoint" and answer == "stop":
        return Ending("aborted", stop_reason(pause))
    return None
