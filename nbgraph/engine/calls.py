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
from collections.abc import Awaitable, Callable, Coroutine, Mapping
from typing import TYPE_CHECKING, Any

from ..history import NO_PAYLOAD, FiredEdge, Frame, Step
from ..plan import Hop, NodePlan
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

WalkSubgraph = Callable[
    ["Level", Frame, NodePlan, int], Awaitable["Ending | tuple[Mapping[str, Any] | None, tuple[Step, ...]]"]
]
"""Walk the sub-graph a node runs: its update and its steps, or how it stopped inside."""


class Activity:
    """What a run is doing now, for those who watch it, besides the calls under way (the
    caller's): each superstep's branches and their status, and the steps that finished and
    wait for a person after their node (shown in the state meanwhile)."""

    __slots__ = ("supersteps", "waiting")

    def __init__(self) -> None:
        self.supersteps: dict[Level, tuple[list[Slot], list[str]]] = {}
        self.waiting: dict[Level, dict[int, Called]] = {}

    def superstep(self, level: Level, slots: list[Slot], statuses: list[str]) -> None:
        """``level``'s branches are running as ``slots``, their status in ``statuses`` as they settle."""
        self.supersteps[level] = (slots, statuses)

    def superstep_over(self, level: Level) -> None:
        del self.supersteps[level]

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

    __slots__ = ("activity", "door", "give_up", "listeners", "meter", "resumption", "under_way", "walk_subgraph")

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
        self.under_way: list[Frame] = []
        """The frames whose nodes are being called now, in the order they started."""

    def call(
        self, level: Level, slot: Slot, held: tuple[Any, ...] | None = None
    ) -> Called | Failed | Coroutine[Any, Any, Called | Failed | Ended]:
        """Call ``slot``'s node (or walk the sub-graph it is) and say what it gave: at once for a
        plain node (synchronous, no sub-graph: ``compile()`` said so), or as the coroutine that
        calls a node whose call is awaited.

        ``held`` are the events of a breakpoint's pause before the node, for its record. Time
        a person spent answering inside the call does not count in its duration.

        Raises:
            PauseRequested: the node asked a person and nobody can wait (or it asked with ``ctx.ask``).
            Aborted: a budget is spent, or a person stopped the run inside the sub-graph.
        """
        plan = level.plan
        frame = slot.frame
        node = plan.nodes[frame.node]
        if node.awaited:
            return self._awaited(level, slot, node, held)
        listeners = self.listeners
        if node.wants_ctx or held or listeners.steps or self.resumption.decided:
            ctx = self._begin(level, slot, node, held)
        else:
            ctx = None  # (nothing to announce, no context to build)
        under_way = self.under_way
        under_way.append(frame)
        started = time.time()
        t0 = time.perf_counter()
        try:
            given = plan.schema.view(level.values) if frame.payload is NO_PAYLOAD else frame.payload
            out = node.fn(given, ctx) if node.takes_ctx else node.fn(given)
            update: Mapping[str, Any] | None
            hop: Hop | None
            if out is None or out.__class__ is dict:  # (a plain update, as most nodes return)
                update = out
                hop = None
            else:
                update, hop = read_output(out, node, plan)
        except Exception as exc:
            return Failed((make_step(slot, started, time.perf_counter() - t0, None, None, ctx, exc),), exc)
        finally:
            under_way.remove(frame)
        return self._called(slot, node, started, time.perf_counter() - t0, update, hop, ctx, ())

    async def _awaited(
        self, level: Level, slot: Slot, node: NodePlan, held: tuple[Any, ...] | None
    ) -> Called | Failed | Ended:
        """:meth:`call` for an async node, with its deadline, or a sub-graph, walked."""
        plan = level.plan
        frame = slot.frame
        ctx = self._begin(level, slot, node, held)
        under_way = self.under_way
        under_way.append(frame)
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
            else:
                given = plan.schema.view(level.values) if frame.payload is NO_PAYLOAD else frame.payload
                work = node.fn(given, ctx) if node.takes_ctx else node.fn(given)
                meter = self.meter
                deadline = meter.deadline(node.name, node.timeout) if node.timeout is not None or meter.timed else None
                out = await (work if deadline is None else _within(work, deadline))
                update, hop = read_output(out, node, plan)
        except TimedOut as timed:
            deadline = timed.deadline
            ending = Ending(deadline.outcome, f"{deadline.reason} at step {slot.step}")
            return Ended(ending, self._given_up(level, slot, ending, started, t0), timed_out=True)
        except Exception as exc:
            record = make_step(slot, started, time.perf_counter() - t0 - waits.seconds, None, None, ctx, exc)
            return Failed((*inner, record), exc)
        finally:
            under_way.remove(frame)
            branch_waits.reset(token)
        return self._called(slot, node, started, time.perf_counter() - t0 - waits.seconds, update, hop, ctx, inner)

    def _begin(self, level: Level, slot: Slot, node: NodePlan, held: tuple[Any, ...] | None) -> Context | None:
        """A call begins: announced, with the questions earlier resumes answered inside it
        (the thread kept them while the node stopped at later ones: its record, once it
        finishes, holds every answer it ran on); the node's context, if it needs one."""
        frame = slot.frame
        listeners = self.listeners
        before: tuple[Any, ...] = ()
        if self.resumption.decided:
            thread = listeners.thread
            for pause, value, decision in self.resumption.earlier(frame.path, frame.branch, slot.step):
                before += (interrupt(thread, slot.step, pause), answered(thread, slot.step, pause, value, decision))
        held = (*held, *before) if held and before else held or before
        ctx = None
        if node.wants_ctx or held:
            ctx = Context(
                self.door, level.plan, frame.node, slot.step, slot.visit, frame.path, frame.branch, level.scope, held
            )
        if listeners.steps:
            rerun = self.resumption.rerun((frame.path, frame.branch))
            listeners.emit_step(
                node_enter(listeners.thread, slot.step, frame.node, slot.visit, frame.path, frame.branch, rerun)
            )
        for event in before:
            listeners.emit(event)
        return ctx

    def _called(
        self,
        slot: Slot,
        node: NodePlan,
        started: float,
        duration: float,
        update: Mapping[str, Any] | None,
        hop: Hop | None,
        ctx: Context | None,
        inner: tuple[Step, ...],
    ) -> Called:
        """What a call that returned gave: its records (a sub-graph's, then its own) and update.
        A node with one way out and no person to ask after it, not a map's branch, is routed
        already (its record holds the edge; the step's close finds it in place)."""
        if self.resumption.decided:
            frame = slot.frame
            self.resumption.finished(frame.path, frame.branch, slot.step)
        if hop is not None:
            edge = hop.edge
        else:  # (a map's branch routes only if it is its last: the step's close says)
            fixed = node.fixed
            edge = fixed.edge if fixed is not None and not node.gated and slot.frame.payload is NO_PAYLOAD else None
        if ctx is None:  # (make_step's commonest case, here: once a step)
            frame = slot.frame
            record = Step(slot.step, frame.node, slot.visit, started, duration, update, edge, frame.path, frame.branch)
        else:
            record = make_step(slot, started, duration, update, edge, ctx)
        return Called((*inner, record) if inner else (record,), update, hop, ctx)

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
