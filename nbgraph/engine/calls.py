"""Calling a node: what it gives (a slot's :data:`~nbgraph.engine.slots.Outcome`), which
calls are under way, and the record of a step.

:class:`Caller` is what calling needs of a run and nothing more: the door its nodes' contexts
go through, its listeners and meter, what a resume brought, the registry of calls under
way, and the walk of a sub-graph (the walker's own). It never writes a run's state: it
returns what the call gave, and the step folds it in.
"""

from __future__ import annotations

import asyncio
import time
import traceback
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, cast

from ..history import NO_PAYLOAD, FiredEdge, Frame, Step
from ..plan import Hop, NodePlan, Plan
from ..secrets import redact
from .context import Context, RunDoor
from .ending import Ending
from .limits import Deadline, Waits, branch_waits, node_deadline
from .listeners import answered, interrupt, node_enter
from .outputs import read_output
from .slots import Called, Ended, Failed, Slot

if TYPE_CHECKING:
    from .levels import Level

__all__ = ["Activity", "Caller", "error_text", "make_step"]

_new_tuple: Callable[..., Any] = tuple.__new__  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]

WalkSubgraph = Callable[
    ["Level", Frame, NodePlan, int], Awaitable["Ending | tuple[Mapping[str, Any] | None, tuple[Step, ...]]"]
]
"""Walk the sub-graph a node runs: its update and its steps, or how it stopped inside."""


class Activity:
    """What a run is doing now, for those who watch it: the calls under way (in the order they
    started), each superstep's branches and their status, and the steps that finished and
    wait for a person after their node (shown in the state meanwhile)."""

    __slots__ = ("calls", "supersteps", "waiting")

    def __init__(self) -> None:
        self.calls: list[Frame] = []
        self.supersteps: dict[Level, tuple[list[Slot], list[str]]] = {}
        self.waiting: dict[Level, dict[int, Called]] = {}

    def wait_after(self, level: Level, slot: Slot, called: Called) -> None:
        self.waiting.setdefault(level, {})[slot.step] = called

    def answered_after(self, level: Level, slot: Slot) -> None:
        waiting = self.waiting.get(level)
        if waiting is not None:
            waiting.pop(slot.step, None)
            if not waiting:
                del self.waiting[level]


class TimedOut(BaseException):
    """Carries a deadline that fired out of the node it cancelled (caught by the call)."""

    def __init__(self, deadline: Deadline) -> None:
        self.deadline = deadline
        super().__init__(deadline.reason)


class Caller:
    """Calls the nodes of one run."""

    __slots__ = ("activity", "door", "give_up", "listeners", "meter", "resumption", "walk_subgraph")

    def __init__(
        self,
        door: RunDoor,
        activity: Activity,
        walk_subgraph: WalkSubgraph,
        give_up: Callable[[Frame], tuple[Step, ...]],
    ) -> None:
        self.door = door
        self.listeners = door.listeners
        self.meter = door.meter
        self.resumption = door.resumption
        self.activity = activity
        self.walk_subgraph = walk_subgraph
        self.give_up = give_up
        """Close the sub-graph levels a branch given up leaves open: their records."""

    def context(self, level: Level, slot: Slot, held: tuple[Any, ...] = ()) -> Context:
        frame = slot.frame
        return Context(
            self.door, level.plan, frame.node, slot.step, slot.visit, frame.path, frame.branch, level.scope, held
        )

    def _enter(self, slot: Slot) -> None:
        frame = slot.frame
        rerun = self.resumption.rerun((frame.path, frame.branch))
        self.listeners.emit_step(
            node_enter(self.listeners.thread, slot.step, frame.node, slot.visit, frame.path, frame.branch, rerun)
        )

    def _answered_before(self, slot: Slot) -> tuple[Any, ...]:
        """The events of the questions inside this call of the node that earlier resumes
        answered (the thread kept them while the node stopped at later ones), announced as
        it runs again: its record, once it finishes, holds every answer it ran on."""
        frame = slot.frame
        thread = self.listeners.thread
        events: list[Any] = []
        for pause, value, decision in self.resumption.earlier(frame.path, frame.branch, slot.step):
            events += (interrupt(thread, slot.step, pause), answered(thread, slot.step, pause, value, decision))
        return tuple(events)

    def _finished(self, slot: Slot) -> None:
        frame = slot.frame
        self.resumption.finished(frame.path, frame.branch, slot.step)

    def call_now(self, level: Level, slot: Slot) -> Called | Failed:
        """Call a synchronous node that runs no sub-graph, here and now (no coroutine: the hot path).

        Raises:
            PauseRequested: the node asked a person (``ctx.ask``).
            Aborted: a budget the node checked is spent.
        """
        frame = slot.frame
        plan = level.plan
        node = plan.nodes[frame.node]
        before = self._answered_before(slot) if self.resumption.decided else ()
        ctx = self.context(level, slot, before) if node.wants_ctx else None
        if self.listeners.steps:
            self._enter(slot)
        for event in before:
            self.listeners.emit(event)
        calls = self.activity.calls
        calls.append(frame)
        started = time.time()
        t0 = time.perf_counter()
        try:
            given = plan.schema.view(level.values) if frame.payload is NO_PAYLOAD else frame.payload
            out = node.fn(given, ctx) if node.takes_ctx else node.fn(given)
            update: Mapping[str, Any] | None
            hop: Hop | None
            if out is None or type(out) is dict:
                update, hop = cast("Mapping[str, Any] | None", out), None
            else:
                update, hop = read_output(out, node, plan)
        except Exception as exc:
            record = make_step(slot, started, time.perf_counter() - t0, None, None, ctx, exc)
            return Failed((record,), exc)
        finally:
            calls.remove(frame)
        duration = time.perf_counter() - t0
        if self.resumption.decided:
            self._finished(slot)
        if ctx is None:  # (make_step's commonest case, unrolled: this is the hot path)
            # A node with one way out is routed already: close finds the edge in place.
            edge = hop.edge if hop is not None else node.fixed.edge if node.fixed is not None else None
            record = Step(slot.step, frame.node, slot.visit, started, duration, update, edge, frame.path, frame.branch)
        else:
            record = make_step(slot, started, duration, update, hop.edge if hop else None, ctx)
        return _new_tuple(Called, ((record,), update, hop, ctx))  # (half the cost of Called(...): once a step)

    async def call(self, level: Level, slot: Slot, held: tuple[Any, ...] | None = None) -> Called | Failed | Ended:
        """Call ``slot``'s node (or walk the sub-graph it is) and say what it gave.

        ``held`` are the events of a breakpoint's pause before the node, for its record. Time
        a person spent answering inside the call does not count in its duration.

        Raises:
            PauseRequested: the node asked a person and nobody can wait (or it asked with ``ctx.ask``).
            Aborted: a budget is spent, or a person stopped the run inside the sub-graph.
        """
        frame = slot.frame
        plan = level.plan
        node = plan.nodes[frame.node]
        before = self._answered_before(slot) if self.resumption.decided else ()
        held = (*held, *before) if held and before else held or before
        ctx = None
        if node.wants_ctx or held:
            ctx = self.context(level, slot, held or ())
        if self.listeners.steps:
            self._enter(slot)
        for event in before:
            self.listeners.emit(event)
        calls = self.activity.calls
        calls.append(frame)
        waits = Waits(branch_waits.get())
        token = branch_waits.set(waits)
        started = time.time()
        t0 = time.perf_counter()
        inner: tuple[Step, ...] = ()
        hop: Hop | None = None
        try:
            if node.subplan is not None:
                walked = await self.walk_subgraph(level, frame, node, slot.visit)
                if isinstance(walked, Ending):  # stopped inside: the sub-graph keeps where it is
                    return Ended(walked, self._given_up(level, slot, walked, started, t0))
                update, inner = walked
            elif node.is_async:
                given = plan.schema.view(level.values) if frame.payload is NO_PAYLOAD else frame.payload
                work = node.fn(given, ctx) if node.takes_ctx else node.fn(given)
                meter = self.meter
                deadline = meter.deadline(node.name, node.timeout) if node.timeout is not None or meter.timed else None
                out = await (work if deadline is None else _within(work, deadline))
                update, hop = read_output(out, node, plan)
            else:
                update, hop = _call_sync(plan, frame, node, ctx, level.values)
        except TimedOut as timed:
            deadline = timed.deadline
            ending = Ending(deadline.outcome, f"{deadline.reason} at step {slot.step}")
            return Ended(ending, self._given_up(level, slot, ending, started, t0), timed_out=True)
        except Exception as exc:
            record = make_step(slot, started, time.perf_counter() - t0 - waits.seconds, None, None, ctx, exc)
            return Failed((*inner, record), exc)
        finally:
            calls.remove(frame)
            branch_waits.reset(token)
        duration = time.perf_counter() - t0 - waits.seconds
        if self.resumption.decided:
            self._finished(slot)
        record = make_step(slot, started, duration, update, hop.edge if hop else None, ctx)
        return Called((*inner, record), update, hop, ctx)

    def _given_up(self, level: Level, slot: Slot, ending: Ending, started: float, t0: float) -> tuple[Step, ...]:
        """The records of a branch that ended short (its sub-graph failed, its node timed out).

        Under ``settle="fail_fast"`` the step fails and a resume re-enters the sub-graph where
        it stopped, so nothing is recorded; nor for a step of one slot, nor for a pause. Under
        ``"all"`` the branch is over: the sub-graph levels it left open close, and their steps
        and its own failed step go into the history.
        """
        frame = slot.frame
        if level.plan.settle != "all" or frame.branch == level.branch or ending.outcome == "interrupted":
            return ()
        duration = time.perf_counter() - t0
        failed = Step(
            slot.step,
            frame.node,
            slot.visit,
            started,
            duration,
            path=frame.path,
            branch=frame.branch,
            error=ending.reason or ending.outcome,
        )
        return (*self.give_up(frame), failed)


def _call_sync(
    plan: Plan, frame: Frame, node: NodePlan, ctx: Context | None, values: dict[str, Any]
) -> tuple[Mapping[str, Any] | None, Hop | None]:
    """Call a synchronous node: its update, and its command's hop."""
    given = plan.schema.view(values) if frame.payload is NO_PAYLOAD else frame.payload
    out = node.fn(given, ctx) if node.takes_ctx else node.fn(given)
    if out is None:
        return None, None
    if type(out) is dict:
        return cast("Mapping[str, Any]", out), None
    return read_output(out, node, plan)


async def _within(work: Any, deadline: Deadline) -> Any:
    """Await an async node's ``work``, cancelling it if it overruns ``deadline``."""
    token = node_deadline.set(deadline)
    deadline.start()
    try:
        out = await work
    except asyncio.CancelledError:
        if deadline.fired:
            raise TimedOut(deadline) from None
        raise
    finally:
        deadline.stop()
        node_deadline.reset(token)
    if deadline.fired:  # the node swallowed the cancellation, but its time was up
        raise TimedOut(deadline)
    return out


def make_step(
    slot: Slot,
    started: float,
    duration: float,
    update: Mapping[str, Any] | None,
    edge: FiredEdge | None,
    ctx: Context | None,
    error: BaseException | None = None,
) -> Step:
    """The record of ``slot``'s step (its edge, when routing has not happened yet, None)."""
    frame = slot.frame
    if ctx is None or not (ctx.tokens or ctx.cost or ctx.turns or ctx.emitted):
        record = Step(slot.step, frame.node, slot.visit, started, duration, update, edge, frame.path, frame.branch)
    else:
        record = Step(
            slot.step,
            frame.node,
            slot.visit,
            started,
            duration,
            update,
            edge,
            frame.path,
            frame.branch,
            tokens=ctx.tokens,
            cost=ctx.cost,
            turns=ctx.turns,
            events=ctx.emitted,
        )
    return record if error is None else record._replace(error=error_text(error))


def error_text(exc: BaseException) -> str:
    """What a step's record says of ``exc``: its type and message, without a secret it quotes."""
    return redact("".join(traceback.format_exception_only(type(exc), exc)).strip())
