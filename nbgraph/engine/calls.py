"""Calling a node: what it gives, how a call ends short, and how a step's update folds in
(shared by one-frame steps and branches); a node that is a graph walks its level here."""

from __future__ import annotations

import asyncio
import time
import traceback
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, NamedTuple

from ..history import NO_PAYLOAD, FiredEdge, Frame, Step
from ..plan import Hop, NodePlan, Plan
from .context import Context
from .ending import Ending
from .levels import enter, level_key
from .limits import Deadline, branch_waits, node_deadline
from .listeners import node_enter
from .outputs import read_output

if TYPE_CHECKING:
    from .levels import Level
    from .walker import Walker

__all__ = [
    "Called",
    "ChildStopped",
    "TimedOut",
    "call",
    "enter_event",
    "error_text",
    "fold",
    "invoke",
    "make_step",
    "replay",
    "shares_state",
    "walk_child",
    "within",
]


class Called(NamedTuple):
    """What calling one frame's node gave, before it is folded into the state."""

    records: tuple[Step, ...]
    """A sub-graph's own steps, then this node's step (its edge still to be routed)."""
    update: Mapping[str, Any] | None
    hop: Hop | None
    """Where a ``Goto``, ``End`` or ``Send`` the node returned leads (None: route by the edges)."""
    ctx: Context | None
    error: Exception | None = None


class ChildStopped(BaseException):
    """A sub-graph stopped inside (a pause, a failure): its parent stops with the same ending."""

    def __init__(self, ending: Ending) -> None:
        self.ending = ending
        super().__init__(ending.reason)


class TimedOut(BaseException):
    """Carries a deadline that fired out of the node it cancelled."""

    def __init__(self, deadline: Deadline) -> None:
        self.deadline = deadline
        super().__init__(deadline.reason)


def fold(
    plan: Plan, values: dict[str, Any], update: Mapping[str, Any] | None, inner: tuple[Step, ...], frame: Frame
) -> dict[str, Any]:
    """The values after a step's ``update`` (and a sub-graph's ``inner`` steps) are folded in.

    A sub-graph on this graph's state worked on a copy of it: its steps' updates are
    replayed here, in order, as if it had run inline, so branches that each ran one
    fold the same way whatever order they finished in.
    """
    if inner:
        node = plan.nodes[frame.node]
        if node.subplan is not None and node.spec.input is None:
            prefix = len(frame.path) + 1
            for record in inner:
                if record.error is None and shares_state(node.subplan, record.path[prefix:]):
                    values = replay(plan.schema, values, record)
    if update:
        values = plan.schema.apply(values, update, frame.node)
    return values


def replay(schema: Any, values: dict[str, Any], record: Step) -> dict[str, Any]:
    """The values after ``record``'s update (and a person's edit) are folded in."""
    if record.update:
        values = schema.apply(values, record.update, record.node)
    if record.edit:
        values = schema.apply(values, record.edit, record.node)
    return values


def shares_state(plan: Plan, path: str) -> bool:
    """Whether a record at ``path`` (below ``plan``) changed ``plan``'s state: every sub-graph on the way shares it."""
    *containers, _ = path.split("/")
    for name in containers:
        node = plan.nodes.get(name)
        if node is None or node.subplan is None or node.spec.input is not None:
            return False
        plan = node.subplan
    return True


def make_step(
    step: int,
    frame: Frame,
    visit: int,
    started: float,
    duration: float,
    update: Mapping[str, Any] | None,
    edge: FiredEdge | None,
    ctx: Context | None,
    error: BaseException | None = None,
) -> Step:
    if ctx is None or not (ctx.tokens or ctx.cost or ctx.turns or ctx._events):
        record = Step(step, frame.node, visit, started, duration, update, edge, frame.path, frame.branch)
    else:
        record = Step(
            step,
            frame.node,
            visit,
            started,
            duration,
            update,
            edge,
            frame.path,
            frame.branch,
            tokens=ctx.tokens,
            cost=ctx.cost,
            turns=ctx.turns,
            events=tuple(ctx._events or ()),
        )
    return record if error is None else record._replace(error=error_text(error))


def error_text(exc: BaseException) -> str:
    return "".join(traceback.format_exception_only(type(exc), exc)).strip()


def call_sync(
    plan: Plan, frame: Frame, node: NodePlan, ctx: Context | None, values: dict[str, Any]
) -> tuple[Mapping[str, Any] | None, Hop | None]:
    """Call a synchronous node: its update, and its command's hop (no coroutine on the hot path)."""
    given = plan.schema.view(values) if frame.payload is NO_PAYLOAD else frame.payload
    out = node.fn(given, ctx) if node.takes_ctx else node.fn(given)
    if out is None:
        return None, None
    if type(out) is dict:
        return out, None
    return read_output(out, node, plan)


async def within(work: Any, deadline: Deadline) -> Any:
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


def enter_event(walker: Walker, step: int, frame: Frame, visit: int) -> Any:
    """The node-enter event of ``frame``'s call (``rerun``: a resumed run's node that stopped at an input)."""
    resumed = walker.resumed
    rerun = resumed is not None and resumed.rerun((frame.path, frame.branch))
    return node_enter(walker.thread, step, frame.node, visit, frame.path, frame.branch, rerun)


async def call(
    walker: Walker, level: Level, frame: Frame, step: int, visit: int, held: tuple[Any, ...] | None = None
) -> Called:
    """Call ``frame``'s node (or walk the sub-graph it is) as ``step`` and say what it gave.

    A node's own exception comes back in ``error``, with the step's record; a pause, a
    budget, a deadline, a stop and a stopped sub-graph are raised. ``held`` are the
    events of a breakpoint's pause before the node, for its record. Time a person spent
    answering inside the call does not count in its duration.
    """
    plan = level.plan
    name = frame.node
    node = plan.nodes[name]
    ctx = None
    if node.wants_ctx or held:
        ctx = Context(walker, plan, name, step, visit, frame.path, frame.branch, level.scope)
        if held:
            ctx._events = list(held)
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


async def invoke(
    walker: Walker, level: Level, frame: Frame, node: NodePlan, ctx: Context | None, visit: int
) -> tuple[Mapping[str, Any] | None, Hop | None, tuple[Step, ...]]:
    """Run the node's function (or walk its sub-graph): its update, its command's hop, a sub-graph's steps."""
    if node.subplan is not None:
        update, inner = await walk_child(walker, level, frame, node, visit)
        return update, None, inner
    if not node.is_async:
        return (*call_sync(level.plan, frame, node, ctx, level.values), ())
    given = level.plan.schema.view(level.values) if frame.payload is NO_PAYLOAD else frame.payload
    work = node.fn(given, ctx) if node.takes_ctx else node.fn(given)
    meter = walker.meter
    deadline = meter.deadline(node.name, node.timeout) if node.timeout is not None or meter.timed else None
    out = await (work if deadline is None else within(work, deadline))
    return (*read_output(out, node, level.plan), ())


async def walk_child(
    walker: Walker, parent: Level, frame: Frame, node: NodePlan, visit: int
) -> tuple[Mapping[str, Any] | None, tuple[Step, ...]]:
    """Walk the sub-graph ``node`` runs; its update for the parent, and the sub-graph's records."""
    child = enter(walker, parent, frame, node, visit)
    key = level_key(frame)
    walker.open_levels[key] = child
    ending = await walker.walk(child)
    if ending is not None:
        if ending.outcome != "done":
            raise ChildStopped(ending)  # the level stays open: a checkpoint keeps where it stopped
        if ending.hit_max_steps and walker.flagged is None:
            walker.flagged = ending  # on_max_steps="flag": the run's result says which sub-graph hit it
    del walker.open_levels[key]
    walker.pauses.forget(child.scope)
    output = node.spec.output
    update = output(child.plan.schema.view(child.values)) if output is not None else None
    return update, tuple(child.records)  # a shared sub-graph's steps are replayed by fold()
