"""A step: the frames of a level's frontier run as one step, one frame or several branches,
in three phases that each return a value.

1. :func:`prepare`: the limits (``max_steps``, the budget, which may ask a person to raise
   it, the streak of one node run again and again), then each frame numbered as a slot
   with its step, its visit and (several at once) its branch.
2. run: the slots run (:meth:`~nbgraph.engine.branches.Slots.settle`), each settling as one
   :data:`~nbgraph.engine.slots.Outcome`. A step gives a coroutine only when it awaits
   something (an async node, a sub-graph, a person, several branches): a plain node's step
   is taken here and now, by the same code, because ``compile()`` said which nodes are plain.
3. :meth:`Stepper.close`: what the outcomes mean for the step. A stop, a failure or a pause
   ends it here: the slots that finished are kept for a resume, and the step is undone. Otherwise
   the updates fold into the state in slot order, whatever order the slots finished in;
   routing goes on from each (a map once, after its last branch); the step is recorded,
   saved (:class:`~nbgraph.engine.persistence.Persistence` builds the checkpoint from what
   the step hands it) and announced. A fold, a route or a save that fails undoes it all.

A step of one slot and a step of several differ only in :meth:`Stepper.close`, in what a
slot's own stop means (the run ends so, or the branch fails) and in how a failure is named.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine, Sequence
from typing import TYPE_CHECKING, Any, assert_never

from ..errors import InvalidUpdate, NbgraphError
from ..history import NO_PAYLOAD, FiredEdge, Frame, Step
from ..plan import Hop, Plan
from ..state import close_coroutines
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
    from .branches import Slots
    from .levels import Level
    from .persistence import Persistence

__all__ = ["ASK_BUDGET", "Stepper", "prepare", "raise_budget"]

Taken = tuple[Frame, ...] | Ending
"""What a step gives: the frames that come next, or how the run stops."""


class Stepper:
    """Takes the steps of one run: its slots run them, its persistence keeps them, and its
    root level takes the steps a sub-graph's denial ends the run with. It holds nothing of
    its own; every write goes through the level's, the meter's and the persistence's verbs."""

    __slots__ = ("asking", "door", "listeners", "meter", "persistence", "root", "slots")

    def __init__(self, slots: Slots, persistence: Persistence, root: Level) -> None:
        self.slots = slots
        self.persistence = persistence
        self.root = root
        self.asking = slots.asking
        self.listeners = slots.listeners
        self.door = slots.caller.door
        self.meter = self.door.meter

    def take(self, level: Level, frames: tuple[Frame, ...]) -> Taken | Coroutine[Any, Any, Taken]:
        """Take one step of ``level``: the frames that come next or how the run stops, or the
        coroutine that takes the step when it awaits something."""
        base, before = level.steps, level.values
        prepared = prepare(self.meter, level, frames)
        if not isinstance(prepared, list):
            if prepared is not ASK_BUDGET:
                return prepared
            return self._take_asking(level, frames)
        outcomes: list[Outcome | None] = [None] * len(prepared)
        failed: list[int] = []
        try:
            settled = self.slots.settle(level, prepared, outcomes, failed)
        except (Aborted, KeyboardInterrupt) as stop:  # (a plain node checked a spent budget, or ^C)
            return _stopped_inside(level, prepared, outcomes, base, before, stop)
        if not isinstance(settled, list):
            return self._take_settling(settled, level, prepared, outcomes, failed, base, before)
        return self.close(level, prepared, settled, failed, base, before)

    async def _take_asking(self, level: Level, frames: tuple[Frame, ...]) -> Taken:
        """The step, once a person raised the budget it would pass (asked again while it would)."""
        ending = await raise_budget(self.meter, self.asking, level, frames)
        if ending is not None:
            return ending
        taken = self.take(level, frames)
        return taken if isinstance(taken, tuple) else await taken

    async def _take_settling(
        self,
        settling: Coroutine[Any, Any, list[Outcome]],
        level: Level,
        prepared: list[Slot],
        outcomes: list[Outcome | None],
        failed: list[int],
        base: int,
        before: dict[str, Any],
    ) -> Taken:
        """The step, once its slots that await have settled."""
        try:
            settled = await settling
        except (Aborted, asyncio.CancelledError, KeyboardInterrupt) as stop:
            return _stopped_inside(level, prepared, outcomes, base, before, stop)
        return self.close(level, prepared, settled, failed, base, before)

    def close(
        self,
        level: Level,
        slots: list[Slot],
        outcomes: Sequence[Outcome],
        failed: Sequence[int],
        base: int,
        before: dict[str, Any],
    ) -> Taken:
        """What the outcomes mean for the step: the frames that come next, once it is folded,
        routed, recorded, saved and announced; or how the run stops, the step undone (``failed``:
        the slots that failed of themselves, in the order they failed)."""
        listeners = self.listeners
        halt: str | None = None
        if len(slots) == 1:
            slot = slots[0]
            outcome = outcomes[0]
            match outcome:
                case Called():
                    pass
                case Failed(records=records, error=error):
                    level.record(records)
                    level.undo(slots, base, before)
                    return failure(listeners, slot.frame, error, slot.step)
                case Parked():
                    return _park(self.asking, level, slots, outcomes, base, before)
                case Halted(called=called, reason=reason):
                    halt, outcomes = reason, [called]
                case Ended(ending=ending, records=records, timed_out=late):
                    level.undo(slots, base, before)
                    if ending.outcome == "denied" and records:  # the step is kept with its verdict: the run ends there
                        if level is not self.root:  # the steps the sub-graph took before it end with it
                            records = (*level.records, *records)
                        self.root.record(records)
                        self.persistence.save_denied(level, slot.step, records, ending)
                    elif late:
                        timed_out(listeners, slot.frame, slot.step, ending)
                    return ending
                case _:
                    assert_never(outcome)
        else:
            if failed and level.plan.settle == "fail_fast":
                slot, first = slots[failed[0]], outcomes[failed[0]]
                assert type(first) is Failed
                level.record(first.records)
                level.keep(slots, outcomes)
                level.undo(slots, base, before)
                return failure(listeners, None, _BranchFailed(slot, first.error), slot.step)
            if any(type(outcome) is Parked for outcome in outcomes):
                return _park(self.asking, level, slots, outcomes, base, before)
        try:
            values, records, next_frames = _settled(self.door, level, slots, outcomes, before)
        except NbgraphError as exc:
            return _rolled_back(listeners, level, slots, outcomes, base, before, exc, None)
        level.commit(
            values, slots[-1].step, records, next_frames
        )  # (the step: base + len(slots), the int the records hold)
        persistence = self.persistence
        if persistence.store is not None:
            try:
                persistence.save_step(level, records, next_frames)
            except NbgraphError as exc:
                level.unrecord(len(records))
                return _rolled_back(listeners, level, slots, outcomes, base, before, exc, records)
        if listeners.steps:
            _announce(listeners, slots, records)
        if halt is not None:  # (the step is routed and saved: a resume goes on from its frames)
            if level.path:
                raise Stopped(halt)
            return Ending("aborted", halt)
        return next_frames


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
    if level.streak(frames) > plan.max_same_node:
        return Ending(
            "aborted",
            f"node {frames[0].node!r} ran {plan.max_same_node} times in a row (max_same_node={plan.max_same_node})",
        )
    return level.number(frames)


async def raise_budget(meter: Meter, asking: Asking, level: Level, frames: tuple[Frame, ...]) -> Ending | None:
    """Ask a person to raise the budget before the step: None once they did, or how the run
    stops (they said stop, or nobody can wait: the step's frames run on resume)."""
    pause = budget_pause(meter, frames, level.steps + 1, meter.ahead(len(frames)))
    meter.keep()
    if not asking.live:
        level.at(frames)
        return asking.interrupted(pause)
    try:
        decided = raised(meter, pause, await asking.wait(pause))
    except PauseRequested:  # nobody will answer (run.stop_waiting): it ends as a durable run's would
        level.at(frames)
        return asking.interrupted(pause)
    return decided if isinstance(decided, Ending) else None


# -- 2. run (the slots settle: ``Slots.settle``) -------------------------------------


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
    level.record((*called.records[:-1], failed))
    slot = slots[0]
    return failure(listeners, slot.frame, exc, slot.step)


def _settled(
    door: RunDoor, level: Level, slots: list[Slot], outcomes: Sequence[Outcome], before: dict[str, Any]
) -> tuple[dict[str, Any], list[Step], tuple[Frame, ...]]:
    """The step folded in slot order (whatever order its slots finished in) and routed (a map
    once, after its last branch): the state after it, its records, the frames that come next.

    Raises:
        NbgraphError: an update does not fit the state (InvalidUpdate: every update's
            coroutines are closed), or routing failed.
    """
    plan = level.plan
    # Every slot's update and edit, folded in slot order.
    values = before
    try:
        for slot, outcome in zip(slots, outcomes, strict=True):
            if type(outcome) is Called:
                own, update = outcome.records, outcome.update
                edit = own[-1].edit
                if len(own) > 1:  # (a sub-graph's steps, folded first when it shares the state)
                    values = fold(plan, values, update, own[:-1], slot.frame)
                elif update:
                    values = plan.schema.apply(values, update, slot.frame.node)
                if edit:
                    values = plan.schema.apply(values, edit, slot.frame.node)
    except InvalidUpdate:
        for outcome in outcomes:  # (the failed fold closed its own update's coroutines; the rest are dropped too)
            if type(outcome) is Called and outcome.update:
                close_coroutines(outcome.update.values())
        raise
    # Then each routed, seeing the state after the step.
    # (a map's branches carry a payload: the commonest step has one slot with none)
    mapping = len(slots) > 1 or slots[0].frame.payload is not NO_PAYLOAD
    last_of_map = _last_of_maps(slots, outcomes) if mapping else _NO_MAPS
    view: Any = None
    records: list[Step] = []
    taken: list[tuple[Frame, Hop]] = []
    for i, slot in enumerate(slots):
        outcome = outcomes[i]
        frame = slot.frame
        mapped = frame.payload is not NO_PAYLOAD
        if type(outcome) is Called:
            hop = outcome.hop
            ctx = outcome.ctx
        elif type(outcome) is Failed:
            if not (outcome.records and mapped and last_of_map.get(frame.node) == i):
                records.extend(outcome.records)
                if not mapped:
                    taken.extend(_arrivals(plan, frame))
                continue
            hop = None
            ctx = None
        else:
            raise AssertionError(f"a step closes over Called and Failed slots, not {type(outcome).__name__}")
        own = outcome.records
        if hop is None:
            if mapped and last_of_map.get(frame.node) != i:
                records.extend(own)
                continue
            hop = plan.nodes[frame.node].fixed
            if hop is None:
                if view is None:
                    view = plan.schema.view(values)
                hop = _routed(door, level, slot, ctx, view)
        elif not hop.frames and hop.edge.label == "denied" and not mapped:
            taken.extend(_arrivals(plan, frame))
        last = own[-1]
        if len(own) > 1:
            records.extend(own[:-1])
        records.append(last if last.edge is hop.edge else last.routed(hop.edge))
        taken.append((frame._replace(branch=None) if mapped else frame, hop))
    return values, records, level.next_frames(taken)


_NO_MAPS: dict[str, int] = {}


def _last_of_maps(slots: list[Slot], outcomes: Sequence[Outcome]) -> dict[str, int]:
    """Where each map routes: after the last of its branches that did not route themselves (a
    Goto) or fail; after its last failed one if every one failed ("all" goes on regardless)."""
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
    return last_of_map


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
