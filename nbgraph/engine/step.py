"""A step: the frames of a level's frontier run as one step, one frame or several branches,
in three phases that each return a value.

1. :func:`prepare`: the limits (``max_steps``, the budget, which may ask a person to raise
   it, the streak of one node run again and again), then each frame numbered as a slot
   with its step, its visit and (several at once) its branch.
2. :func:`run`: the slots run (``branches``), each settling as one
   :data:`~nbgraph.engine.slots.Outcome`; a lone synchronous node is called here and now,
   without a coroutine (what ``bench/engine.py`` measures as the fast path).
3. :func:`close`: what the outcomes mean for the step. A stop, a failure or a pause ends it
   here: the slots that finished are kept for a resume, and the step is undone. Otherwise
   the updates fold into the state in slot order, whatever order the slots finished in;
   routing goes on from each (a map once, after its last branch); the step is recorded,
   saved and announced. A fold, a route or a save that fails undoes it all.

A step of one slot and a step of several differ only in :func:`close`, in what a slot's
own stop means (the run ends so, or the branch fails) and in how a failure is named.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple, assert_never

from ..errors import InvalidUpdate, NbgraphError
from ..history import NO_PAYLOAD, FiredEdge, Frame, Step
from ..plan import Hop, Plan
from ..state import close_coroutines
from .branches import Slots
from .calls import error_text
from .context import Context, RunDoor
from .ending import Ending
from .folds import fold
from .limits import Aborted, Meter
from .listeners import Listeners, route_event, step_end_events
from .people import Asking, PauseRequested, budget_pause, raised
from .slots import Called, ChildFailed, Ended, Failed, Halted, Outcome, Parked, Slot
from .stops import Stopped, cancelled, failure, hit_max_steps, timed_out

if TYPE_CHECKING:
    from ..pauses import Pause
    from .levels import Level
    from .walker import Walker

__all__ = ["FAST_PATH", "Ran", "close", "prepare", "route_forked", "run", "run_awaiting", "take_step"]

FAST_PATH = True
"""Whether a lone synchronous node is called without a coroutine (``bench/engine.py`` turns it
off to measure what that saves)."""


async def take_step(walker: Walker, level: Level, frames: tuple[Frame, ...]) -> tuple[Frame, ...] | Ending:
    """Take one step of ``level``: the frames that come next, or how the run stops."""
    base, before = level.steps, level.values
    prepared = prepare(walker.meter, level, frames)
    if isinstance(prepared, Ending):
        if prepared is not ASK_BUDGET:
            return prepared
        prepared = await raise_budget(walker.meter, walker.asking, level, frames)
        if isinstance(prepared, Ending):
            return prepared
    ran = run(walker.slots, level, prepared, base, before)
    if not isinstance(ran, Ran):
        ran = ran if isinstance(ran, Ending) else await ran
        if isinstance(ran, Ending):
            return ran
    return close(walker, level, prepared, ran, base, before)


# -- 1. prepare ----------------------------------------------------------------------


ASK_BUDGET = Ending("aborted", "the budget is about to be exceeded")
"""What :func:`prepare` gives when a budget with ``ask=True`` wants a person first."""


def prepare(meter: Meter, level: Level, frames: tuple[Frame, ...]) -> list[Slot] | Ending:
    """The step's slots, numbered, once the limits allow it (``max_steps``, the budget, the
    streak of one node run again and again); or how the run stops before it
    (:data:`ASK_BUDGET`: a person is to raise the budget first, :func:`raise_budget`)."""
    plan = level.plan
    count = len(frames)
    if level.steps + count > plan.max_steps:
        return hit_max_steps(plan, level.path, frames[0].node)
    budget = meter.budget
    if budget is not None:
        if budget.ask and meter.ahead(count):
            return ASK_BUDGET
        reason = meter.out_of_time() if budget.ask else meter.over()
        if reason is not None:
            return Ending("aborted", reason)
    if count > 1:
        level.last_node, level.same = None, 0  # branches break a streak
    elif (name := frames[0].node) != level.last_node:
        level.last_node, level.same = name, 1
    else:
        level.same += 1
        if level.same > plan.max_same_node:
            return Ending(
                "aborted", f"node {name!r} ran {plan.max_same_node} times in a row (max_same_node={plan.max_same_node})"
            )
    return level.number(frames)


async def raise_budget(meter: Meter, asking: Asking, level: Level, frames: tuple[Frame, ...]) -> list[Slot] | Ending:
    """Ask a person to raise the budget before the step: its slots once they did, or how the
    run stops (they said stop, or nobody can wait: the step's frames run on resume)."""
    while True:
        pause = budget_pause(meter, frames, level.steps + 1, meter.ahead(len(frames)))
        if not asking.live:
            level.frames = frames
            return asking.interrupted(pause)
        try:
            decided = raised(meter, pause, await asking.wait(pause))
        except PauseRequested:  # nobody will answer (run.stop_waiting): it ends as a durable run's would
            level.frames = frames
            return asking.interrupted(pause)
        prepared = decided if isinstance(decided, Ending) else prepare(meter, level, frames)
        if prepared is not ASK_BUDGET:
            return prepared


# -- 2. run --------------------------------------------------------------------------

_FIRST = (0,)
"""The ``raised`` of a step of one slot that failed."""
_new_tuple: Callable[..., Any] = tuple.__new__  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]


class Ran(NamedTuple):
    """How a step's slots settled."""

    outcomes: Sequence[Outcome]
    """In slot order."""
    raised: Sequence[int]
    """The slots that failed of themselves, in the order they failed (not those a failed sibling cancelled)."""


def run(
    slots: Slots, level: Level, prepared: list[Slot], base: int, before: dict[str, Any]
) -> Ran | Ending | Coroutine[Any, Any, Ran | Ending]:
    """Run the step's slots: how each settled; or how the run stops in the middle (a person's
    stop, a spent budget, a cancel), the slots that finished kept for a resume.

    A lone synchronous node (no sub-graph, approval, breakpoint or kept slot) is called here
    and now, without a coroutine; every other step gives the coroutine that runs it
    (:func:`run_awaiting`), for the caller to await.

    Raises:
        Stopped: a person stopped the run inside this sub-graph: up to the run's own level.
    """
    if len(prepared) != 1 or level.settled or slots.breaks.armed or not FAST_PATH:
        return run_awaiting(slots, level, prepared, base, before)
    slot = prepared[0]
    node = level.plan.nodes[slot.frame.node]
    if node.is_async or node.subplan is not None or node.approval or node.approval_before:
        return run_awaiting(slots, level, prepared, base, before)
    try:
        outcome = slots.caller.call_now(level, slot)
    except PauseRequested as paused:  # (ctx.ask in a synchronous node: it is called again, and waits)
        return run_awaiting(slots, level, prepared, base, before, asked=paused.pauses)
    except (Aborted, KeyboardInterrupt) as stop:
        return _stopped_inside(level, prepared, [None], base, before, stop)
    return _new_tuple(Ran, ((outcome,), _FIRST if type(outcome) is Failed else ()))  # (half a Ran(...): once a step)


async def run_awaiting(
    slots: Slots, level: Level, prepared: list[Slot], base: int, before: dict[str, Any], asked: tuple[Pause, ...] = ()
) -> Ran | Ending:
    """:func:`run` for the steps that await: a node that is async, runs a sub-graph, is asked
    about before or after it runs, or one of several branches; ``asked`` is the question a
    synchronous node asked when called at once."""
    count = len(prepared)
    kept = level.take_settled() if level.settled else {}
    outcomes: list[Outcome | None] = [None] * count
    raised: list[int] = []
    try:
        if count == 1:
            slot = prepared[0]
            node = level.plan.nodes[slot.frame.node]
            if kept or slots.breaks.armed or node.subplan is not None or node.approval or node.approval_before:
                outcome = await slots.run(level, slot, kept.get(slot.step))
            else:
                outcome = await slots.call(level, slot, asked=asked)
            return Ran((outcome,), _FIRST if type(outcome) is Failed else ())
        await slots.run_together(level, prepared, kept, outcomes, raised)
    except (Aborted, asyncio.CancelledError, KeyboardInterrupt) as stop:
        return _stopped_inside(level, prepared, outcomes, base, before, stop)
    # (A branch that never started, its step failing fast before its turn, is one a sibling cancelled.)
    return Ran([Failed((), asyncio.CancelledError()) if outcome is None else outcome for outcome in outcomes], raised)


def _stopped_inside(
    level: Level,
    prepared: list[Slot],
    outcomes: list[Outcome | None],
    base: int,
    before: dict[str, Any],
    stop: BaseException,
) -> Ending:
    """The run stopped in the middle of the step (a person's stop, a spent budget, a cancel):
    what finished is kept for a resume, the step is undone.

    Raises:
        Stopped: a person stopped the run inside this sub-graph: up to the run's own level.
    """
    level.keep(prepared, outcomes)  # what finished before the stop is not run again on resume
    level.undo(prepared, base, before)
    if isinstance(stop, Aborted):
        if type(stop) is Stopped and level.path:
            raise stop  # a person stopped the run: up to its own level
        return Ending("aborted", stop.reason)
    first = prepared[0]
    during = f"node {first.frame.path!r}" if len(prepared) == 1 else f"{len(prepared)} branches"
    return cancelled(stop, f"{during} at step {base + 1}")


# -- 3. close ------------------------------------------------------------------------


def close(
    walker: Walker, level: Level, slots: list[Slot], ran: Ran, base: int, before: dict[str, Any]
) -> tuple[Frame, ...] | Ending:
    """What the outcomes mean for the step: the frames that come next, once it is folded,
    routed, recorded, saved and announced; or how the run stops, the step undone."""
    listeners = walker.listeners
    outcomes: Sequence[Outcome] = ran.outcomes
    halt: str | None = None
    if len(slots) == 1:
        slot = slots[0]
        outcome = outcomes[0]
        match outcome:
            case Called():
                pass
            case Failed(records=records, error=error):
                level.records.extend(records)
                level.undo(slots, base, before)
                return failure(listeners, slot.frame, error, slot.step)
            case Parked():
                return _park(walker.asking, level, slots, outcomes, base, before)
            case Halted(called=called, reason=reason):
                halt, outcomes = reason, [called]
            case Ended(ending=ending, records=records, timed_out=late):
                level.undo(slots, base, before)
                if ending.outcome == "denied" and records:  # the step is kept with its verdict: the run ends there
                    if level is not walker.root:  # the steps the sub-graph took before it end with it
                        records = (*level.records, *records)
                    walker.root.records.extend(records)
                    walker.save_denied(level, slot.step, records, ending)
                elif late:
                    timed_out(listeners, slot.frame, slot.step, ending)
                return ending
            case _:
                assert_never(outcome)
    else:
        if ran.raised and level.plan.settle == "fail_fast":
            slot, first = slots[ran.raised[0]], outcomes[ran.raised[0]]
            assert type(first) is Failed
            level.records.extend(first.records)
            level.keep(slots, outcomes)
            level.undo(slots, base, before)
            return failure(listeners, None, _BranchFailed(slot, first.error), slot.step)
        if any(type(outcome) is Parked for outcome in outcomes):
            return _park(walker.asking, level, slots, outcomes, base, before)
    try:
        if len(slots) == 1:
            values, records, next_frames = _settled_one(walker.door, level, slots[0], outcomes[0], before)
        else:
            values, records, next_frames = _settled_many(walker.door, level, slots, outcomes, before)
    except NbgraphError as exc:
        return _rolled_back(listeners, level, slots, outcomes, base, before, exc, None)
    level.values = values
    level.steps = slots[-1].step  # (base + len(slots): the int the records hold, not another one per step)
    level.records.extend(records)
    if walker.persistence.store is not None:
        try:
            walker.save_step(level, records, next_frames)
        except NbgraphError as exc:
            del level.records[-len(records) :]
            return _rolled_back(listeners, level, slots, outcomes, base, before, exc, records)
    meter = walker.meter
    for record in records:
        meter.step_seconds += record.duration
    if listeners.steps:
        _announce(listeners, slots, records)
    if halt is not None:
        level.frames = next_frames  # the step is routed and saved: a resume goes on from here
        if level.path:
            raise Stopped(halt)
        return Ending("aborted", halt)
    return next_frames


def _park(
    asking: Asking, level: Level, slots: list[Slot], outcomes: Sequence[Outcome], base: int, before: dict[str, Any]
) -> Ending:
    """Slots wait for people and the run cannot wait here: the slots that finished are kept for
    a resume (``settled``), the step is undone, and the run ends ``interrupted`` at every pause."""
    unstorable = level.keep(slots, outcomes)
    level.undo(slots, base, before)
    if unstorable is not None:  # (the pauses cannot wait in a checkpoint beside it)
        return failure(asking.listeners, None, unstorable, base + 1)
    return asking.interrupted(*(pause for o in outcomes if type(o) is Parked for pause in o.pauses))


def _rolled_back(
    listeners: Listeners,
    level: Level,
    slots: list[Slot],
    outcomes: Sequence[Outcome],
    base: int,
    before: dict[str, Any],
    exc: NbgraphError,
    records: list[Step] | None,
) -> Ending:
    """A fold, a route or the save failed: the step is undone as a whole (its updates dropped,
    its frames run again on resume); a step of one slot's record says why it failed."""
    level.undo(slots, base, before)
    if len(slots) > 1:
        return failure(listeners, None, exc, base + len(slots))
    called = outcomes[0]
    assert type(called) is Called
    failed = (records or called.records)[-1]._replace(update=None, edge=None, error=error_text(exc))
    level.records.extend((*called.records[:-1], failed))
    slot = slots[0]
    return failure(listeners, slot.frame, exc, slot.step)


def _settled_one(
    door: RunDoor, level: Level, slot: Slot, called: Outcome, before: dict[str, Any]
) -> tuple[dict[str, Any], list[Step], tuple[Frame, ...]]:
    """A step of one slot, folded and routed: the state after it, its records, the frames
    that come next. (:func:`_settled_many` for one slot, unrolled: this is the hot path.)

    Raises:
        NbgraphError: the update does not fit the state (InvalidUpdate), or routing failed.
    """
    assert type(called) is Called
    plan = level.plan
    frame = slot.frame
    records = called.records
    own = records[-1]
    values = fold(plan, before, called.update, records[:-1], frame) if len(records) > 1 else before
    if len(records) == 1 and called.update:
        values = plan.schema.apply(values, called.update, frame.node)
    if own.edit:
        values = plan.schema.apply(values, own.edit, frame.node)
    hop = called.hop or plan.nodes[frame.node].fixed or _routed(door, level, slot, called.ctx, plan.schema.view(values))
    if own.edge is not hop.edge:
        own = own.routed(hop.edge)
    if hop.join is None and frame.branch is None and not level.path:
        next_frames = hop.frames  # (the commonest case: no join to wait at, nothing to place)
    else:
        next_frames = level.next_frames(((frame, hop),))
    return values, [*records[:-1], own] if len(records) > 1 else [own], next_frames


def _settled_many(
    door: RunDoor, level: Level, slots: list[Slot], outcomes: Sequence[Outcome], before: dict[str, Any]
) -> tuple[dict[str, Any], list[Step], tuple[Frame, ...]]:
    """A step of several slots, folded in slot order (whatever order they finished in) and
    routed (a map once, after its last branch): the state after it, its records, the frames
    that come next.

    Raises:
        NbgraphError: an update does not fit the state (InvalidUpdate: every update's
            coroutines are closed), or routing failed.
    """
    plan = level.plan
    values = _folded(plan, before, slots, outcomes)
    view = plan.schema.view(values)
    # A map routes once, after the last of its branches that did not route themselves (a
    # Goto) or fail; after its last failed one if every one failed: "all" goes on regardless.
    last_of_map: dict[str, int] = {}
    last_failed: dict[str, int] = {}
    for i, (slot, outcome) in enumerate(zip(slots, outcomes, strict=True)):
        if slot.frame.payload is not NO_PAYLOAD:
            if type(outcome) is Failed:
                last_failed[slot.frame.node] = i
            elif type(outcome) is Called and outcome.hop is None:
                last_of_map[slot.frame.node] = i
    for name, i in last_failed.items():
        last_of_map.setdefault(name, i)
    records: list[Step] = []
    taken: list[tuple[Frame, Hop]] = []
    for i, (slot, outcome) in enumerate(zip(slots, outcomes, strict=True)):
        frame = slot.frame
        mapped = frame.payload is not NO_PAYLOAD
        if type(outcome) is Failed:
            if not (outcome.records and mapped and last_of_map.get(frame.node) == i):
                records.extend(outcome.records)
                if not mapped:
                    taken.extend(_arrivals(plan, frame))
                continue
            hop = None
            ctx = None
        elif type(outcome) is Called:
            hop = outcome.hop
            ctx = outcome.ctx
        else:
            raise AssertionError(f"a step closes over Called and Failed slots, not {type(outcome).__name__}")
        if hop is None and mapped and last_of_map.get(frame.node) != i:
            records.extend(outcome.records)
            continue
        if hop is not None and not hop.frames and hop.edge.label == "denied" and not mapped:
            taken.extend(_arrivals(plan, frame))
        if hop is None:
            hop = plan.nodes[frame.node].fixed or _routed(door, level, slot, ctx, view)
        records.extend(outcome.records[:-1])
        records.append(outcome.records[-1].routed(hop.edge))
        taken.append((frame._replace(branch=None) if mapped else frame, hop))
    return values, records, level.next_frames(tuple(taken))


def _folded(plan: Plan, before: dict[str, Any], slots: list[Slot], outcomes: Sequence[Outcome]) -> dict[str, Any]:
    """The state after the step: every slot's update and edit folded in slot order.

    Raises:
        InvalidUpdate: an update (or an edit) does not fit the state; every update's
            coroutines are closed.
    """
    values = before
    try:
        for slot, outcome in zip(slots, outcomes, strict=True):
            if type(outcome) is Called:
                values = fold(plan, values, outcome.update, outcome.records[:-1], slot.frame)
                edit = outcome.records[-1].edit
                if edit:
                    values = plan.schema.apply(values, edit, slot.frame.node)
    except InvalidUpdate:
        for outcome in outcomes:  # (the failed fold closed its own update's coroutines; the rest are dropped too)
            if type(outcome) is Called and outcome.update:
                close_coroutines(outcome.update.values())
        raise
    return values


def _routed(door: RunDoor, level: Level, slot: Slot, ctx: Context | None, view: Any) -> Hop:
    """Where the slot's node goes by its edges (or its router), seeing the state after the step."""
    plan = level.plan
    node = plan.nodes[slot.frame.node]
    if ctx is None and node.wants_ctx:
        frame = slot.frame
        ctx = Context(door, plan, frame.node, slot.step, slot.visit, frame.path, frame.branch, level.scope)
    return node.route(view, ctx)


def _arrivals(plan: Plan, frame: Frame) -> list[tuple[Frame, Hop]]:
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


def _announce(listeners: Listeners, slots: Sequence[Slot], records: list[Step]) -> None:
    """The step's events, once it is saved: its nodes' exits and the routes they took (a
    sub-graph's own steps, and pauses, were announced as they happened)."""
    thread = listeners.thread
    own = {slot.frame.path for slot in slots}
    for record in records:
        if record.path not in own or record.error is not None:
            continue
        if record.approval_events:  # (its node-exit and the pause were announced as they happened)
            if record.edge is not None:  # (a map's branch before its last routes with that one)
                listeners.emit_step(route_event(thread, record.step, record.edge, record.path, record.branch))
        else:
            for event in step_end_events(thread, record):
                listeners.emit_step(event)


class _BranchFailed(NbgraphError):
    """A branch failed and, with ``settle="fail_fast"``, failed its step."""

    def __init__(self, slot: Slot, error: BaseException) -> None:
        frame = slot.frame
        payload = "" if frame.payload is NO_PAYLOAD else f", payload {frame.payload!r:.80}"
        cause = error.reason if isinstance(error, ChildFailed) else f"{type(error).__name__}: {error}"
        super().__init__(f"branch {frame.branch!r} (node {frame.path!r}{payload}) failed at step {slot.step}: {cause}")


# -- a fork's first step -----------------------------------------------------------------


def route_forked(walker: Walker) -> None:
    """A fork's first step: the last step of the thread it branched from, routed with the graph
    as defined now (its node does not run again)."""
    root = walker.root
    record = root.records.pop()
    plan = walker.plan
    hop = plan.hop_of(record.edge) if record.edge is not None else walker.route_from(record)
    record = record._replace(edge=hop.edge)
    root.records.append(record)
    root.frames = hop.frames
    walker.save_step(root, [record], hop.frames)
    listeners = walker.listeners
    listeners.emit_step_if(lambda: route_event(listeners.thread, record.step, hop.edge, record.path, record.branch))
