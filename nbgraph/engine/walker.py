"""The walker: the step loop over frames, and the state of one run while it walks.

A frame is a node waiting to run at a path, on a branch. Per step the walker does
only what cannot be known in advance: call the node, fold its update through the
reducers, take the hop routing chooses, and record the step. Everything else
(calling conventions, edges, the frames a hop leads to) was resolved by
``compile()``; events are built only when someone listens; checkpoints only when
there is a store.
"""

from __future__ import annotations

import asyncio
import time
import traceback
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..errors import (
    InvalidUpdate,
    MaxStepsExceeded,
    NbgraphError,
    RunFailed,
    did_you_mean,
)
from ..history import FiredEdge, Frame, Step
from ..names import END, START, End, Goto
from ..plan import Hop, NodePlan, Plan
from .context import Context
from .ending import Ending
from .limits import Aborted, Budget, Deadline, Meter
from .listeners import (
    Listeners,
    error_event,
    node_enter,
    route_event,
    run_start,
    step_end_events,
)
from .people import (
    PauseRequested,
    Pauses,
    approve_step,
    settle_resumed_approval,
    wait_for_person,
)
from .persistence import Persistence

if TYPE_CHECKING:
    from ..checkpoint.base import Checkpointer
    from ..pauses import Pause

__all__ = ["Walker"]

_LOOP_TURN_INTERVAL = 0.02
"""Seconds a live run may hold the event loop between steps."""


class Walker:
    """Walks one run of a plan: its state, its frames, its history."""

    def __init__(
        self,
        plan: Plan,
        thread: str,
        *,
        input: Any = None,
        store: Checkpointer | None,
        budget: Budget | None,
        live: bool,
        listeners: Listeners,
    ) -> None:
        self.plan = plan
        self.thread = thread
        self.live = live
        self.listeners = listeners
        self.meter = Meter(budget)
        self.pauses = Pauses()
        self.persistence = Persistence(self, store)
        self.history: list[Step] = []
        """This run's step records (a resumed run's start with the step it continues from)."""
        self.earlier = 0
        """How many of the thread's records come before ``history`` (read on demand)."""
        self._earlier: list[Step] | None = None
        self.seconds = 0.0
        """The seconds the thread's steps took, earlier runs' included."""
        self.visits: dict[str, int] = {}
        self.steering: list[str] = []
        self.step = 0
        self.frames: tuple[Frame, ...] = ()
        """The frames to run next (the frontier)."""
        self.node: str | None = None
        """The node running now."""
        self.last_node: str | None = None
        self.same = 0
        self.start_edge: FiredEdge | None = None
        self.resuming: tuple[Pause, Any] | None = None
        """The pause a resumed run was stopped at, and its answer."""
        self.deadline: Deadline | None = None
        """The time limit of the async node running now, if it has one."""
        self.values: dict[str, Any] = plan.schema.initial(input)
        self.input: dict[str, Any] | None = self.values

    def full_history(self) -> list[Step]:
        """Every step record of the thread, reading the earlier ones from the store once."""
        if not self.earlier:
            return self.history
        if self._earlier is None:
            first = self.history[0].step if self.history else self.step + 1
            self._earlier = self.persistence.earlier(first)
        return self._earlier + self.history

    def totals(self) -> dict[str, Any]:
        """What the run has used so far, as a checkpoint keeps it."""
        meter = self.meter
        return {
            "visits": dict(self.visits), "tokens": meter.tokens, "cost": meter.cost, "turns": meter.turns,
            "seconds": self.seconds, "streak": [self.last_node, self.same],
        }

    # -- starting ---------------------------------------------------------------------

    async def execute(self) -> Ending:
        """Walk from where the run is (its start, or a restored checkpoint) to an ending."""
        self.meter.t0 = time.perf_counter()
        restored = self.persistence.last
        self.listeners.emit_if(lambda: run_start(self.thread, self.step, self.plan.name, restored is not None))
        try:
            if self.resuming is not None and self.resuming[0].kind == "approval":
                # (An input pause is answered inside its node, when the node asks again.)
                ending = settle_resumed_approval(self, *self.resuming)
                if ending is not None:
                    return ending
            elif restored is None or (restored.step == 0 and not self.frames):
                self._route_from_start()  # a new run, or a fork of a run's start
            elif not self.frames:
                record = restored.record
                if record is None or record.edge is not None:
                    return Ending("done", restored.reason)
                # A fork: its first step is routed with the graph as defined now.
                hop = self.route_from(record)
                record = record._replace(edge=hop.edge)
                self.history[-1] = record
                self.frames = hop.frames
                self.save(record, hop.frames)
                self.listeners.emit_step_if(lambda: route_event(self.thread, record.step, hop.edge, record.path, record.branch))
            return await self.walk()
        except MaxStepsExceeded:
            raise
        except NbgraphError as exc:
            return self.failure(None, exc)

    def _route_from_start(self) -> None:
        start = self.plan.start
        ctx = Context(self, self.plan, START, 0, 1) if start.wants_ctx else None
        hop = start.fixed or start.route(self.plan.schema.view(self.values), ctx)
        self.start_edge = hop.edge
        self.frames = hop.frames
        self.listeners.emit_step_if(lambda: route_event(self.thread, 0, hop.edge))
        self.save(None, hop.frames)

    def route_from(self, record: Step) -> Hop:
        """Route out of a step already taken, with a context like the step's own."""
        node = self.plan.nodes[record.node]
        if node.fixed is not None:
            return node.fixed
        ctx = Context(self, self.plan, record.node, record.step, record.visit, record.path, record.branch) if node.wants_ctx else None
        return node.route(self.plan.schema.view(self.values), ctx)

    # -- the loop ---------------------------------------------------------------------

    async def walk(self) -> Ending:
        """Run frames until none is left, or the run has to stop."""
        live = self.live
        last_turn = time.perf_counter()
        frames = self.frames
        while frames:
            self.frames = frames
            frame = frames[0]
            stop = self._limit(frame.node)
            if stop is not None:
                return stop
            if live and (now := time.perf_counter()) - last_turn > _LOOP_TURN_INTERVAL:
                # Nodes that never await would hold the kernel's loop for the whole run:
                # give it a turn so the view redraws and a Stop click gets in.
                try:
                    await asyncio.sleep(0)
                except asyncio.CancelledError as stop:
                    return self._stopped(frame, self.step + 1, stop)
                last_turn = now
            hop = await self.advance(frame)
            if type(hop) is Ending:
                return hop
            frames = hop.frames
        self.frames = ()
        return Ending("done")

    def _limit(self, name: str) -> Ending | None:
        """Why the run must stop before running ``name``, or None."""
        plan = self.plan
        if self.step >= plan.max_steps:
            return self._hit_max_steps(name)
        if self.meter.budget is not None and (reason := self.meter.over()) is not None:
            return Ending("aborted", reason)
        if name != self.last_node:
            self.last_node, self.same = name, 1
            return None
        self.same += 1
        if self.same > plan.max_same_node:
            return Ending(
                "aborted", f"node {name!r} ran {plan.max_same_node} times in a row (max_same_node={plan.max_same_node})"
            )
        return None

    async def advance(self, frame: Frame) -> Hop | Ending:
        """Run one frame's node, fold its update in, route, record and save the step."""
        plan = self.plan
        view = plan.schema.view
        name = frame.node
        node = plan.nodes[name]
        visit = self.visits.get(name, 0) + 1
        step = self.step + 1
        before = self.values
        ctx = Context(self, plan, name, step, visit, frame.path, frame.branch) if node.wants_ctx else None
        listeners = self.listeners
        listening = bool(listeners.steps)
        if listening:
            listeners.emit_step(node_enter(self.thread, step, name, visit, frame.path, frame.branch))
        self.node = name
        meter = self.meter
        started = time.time()
        t0 = time.perf_counter()
        waited0 = meter.waited
        try:
            out = node.fn(view(before), ctx) if node.takes_ctx else node.fn(view(before))
            if node.is_async:
                deadline = meter.deadline(name, node.timeout) if node.timeout is not None or meter.timed else None
                out = await (out if deadline is None else self._within(out, deadline))
            if out is None:
                update, hop = None, None
            elif type(out) is dict:
                update, hop = out, None
            else:
                update, hop = _read_command(out, node, plan)
            values = plan.schema.apply(before, update, name) if update else before
        except PauseRequested as paused:
            return self.interrupt(paused.pause, (frame,))
        except Aborted as aborted:
            return Ending("aborted", aborted.reason)
        except _TimedOut as timed:
            return self._timed_out(frame, step, timed.deadline)
        except (asyncio.CancelledError, KeyboardInterrupt) as stop:
            return self._stopped(frame, step, stop)
        except Exception as exc:
            self.history.append(_step(step, frame, visit, started, time.perf_counter() - t0, None, None, ctx, exc))
            return self.failure(frame, exc, step)
        finally:
            self.node = None
        duration = time.perf_counter() - t0 - (meter.waited - waited0)
        self.visits[name] = visit
        self.seconds += duration
        self.step = step
        self.values = values
        record = None
        if node.approval:
            record = _step(step, frame, visit, started, duration, update, hop.edge if hop else None, ctx)
            verdict = await approve_step(self, node, record)
            if type(verdict) is Ending:
                return verdict
            record, denied = verdict
            hop = denied or hop
            values = self.values
        if hop is None:
            hop = node.fixed
            if hop is None:
                try:
                    hop = node.route(view(values), ctx)
                except NbgraphError as exc:
                    # The step fails as a whole: its update is dropped, the node re-runs on resume.
                    self.step, self.values = step - 1, before
                    self.visits[name] = visit - 1
                    self.history.append(_step(step, frame, visit, started, duration, None, None, ctx, exc))
                    return self.failure(frame, exc, step)
        if record is None:
            record = _step(step, frame, visit, started, duration, update, hop.edge, ctx)
        else:
            record = record._replace(edge=hop.edge)
        self.history.append(record)
        if self.persistence.store is not None:
            try:
                self.save(record, hop.frames)
            except NbgraphError as exc:
                # Not saved, not done: the store keeps the step before, and so does the run.
                self.step, self.values = step - 1, before
                self.visits[name] = visit - 1
                self.history[-1] = record._replace(update=None, edge=None, error=_error_text(exc))
                return self.failure(frame, exc, step)
        if listening:
            if node.approval:  # node-exit and the verdict were announced while waiting
                listeners.emit_step(route_event(self.thread, step, hop.edge, frame.path, frame.branch))
            else:
                for event in step_end_events(self.thread, record):
                    listeners.emit_step(event)
        return hop

    async def _within(self, work: Any, deadline: Deadline) -> Any:
        """Await an async node's ``work``, cancelling it if it overruns ``deadline``."""
        self.deadline = deadline
        deadline.start()
        try:
            out = await work
        except asyncio.CancelledError:
            if deadline.fired:
                raise _TimedOut(deadline) from None
            raise
        finally:
            deadline.stop()
            self.deadline = None
        if deadline.fired:  # the node swallowed the cancellation, but its time was up
            raise _TimedOut(deadline)
        return out

    # -- people -----------------------------------------------------------------------

    async def wait_for_person(self, pause: Pause, ctx: Context | None) -> Any:
        return await wait_for_person(self, pause, ctx)

    def interrupt(self, pause: Pause, frames: tuple[Frame, ...], record: Step | None = None) -> Ending:
        """A durable pause: save what resume needs and end the run ``interrupted``."""
        self.frames = frames
        self.save(record if record is not None else (self.history[-1] if self.history else None), frames, status="interrupted", pauses=(pause,))
        what = "approval of" if pause.kind == "approval" else "input at"
        reason = f"waiting for {what} node {pause.node!r}: {pause.prompt}"
        if not self.live:
            reason += (
                f" — answer with g.resume(result, answer) or g.resume({self.thread!r}, answer, pause={pause.id!r}); "
                "for live answers use "
                "run = g.start(...) and `await run`"
            )
        return Ending("interrupted", reason, pauses=(pause,))

    # -- stopping short ---------------------------------------------------------------

    def _hit_max_steps(self, node: str) -> Ending:
        plan = self.plan
        reason = f"max_steps={plan.max_steps} reached before END (next node: {node!r})"
        if plan.on_max_steps == "raise":
            raise MaxStepsExceeded(plan.name, plan.max_steps, node, Ending("aborted", reason))
        return Ending("done", reason, hit_max_steps=plan.on_max_steps == "flag")

    def failure(self, frame: Frame | None, exc: BaseException, step: int | None = None) -> Ending:
        """End ``failed``: the failing frame runs again on resume, the last checkpoint stays intact."""
        if frame is not None:
            self.frames = (frame,)
        node = frame.node if frame is not None else None
        if isinstance(exc, RunFailed):
            reason = exc.reason
        elif isinstance(exc, NbgraphError):
            reason = str(exc)
        else:
            where = f"node {node!r} failed at step {step}" if node else "the run failed"
            reason = f"{where}: {type(exc).__name__}: {exc}"
        self.listeners.emit_if(lambda: error_event(
            self.thread, step or self.step, node, frame.path if frame else "", frame.branch if frame else None,
            reason, type(exc).__name__,
        ))
        self.persistence.mark("failed", reason)
        return Ending("failed", reason, error=exc)

    def _timed_out(self, frame: Frame, step: int, deadline: Deadline) -> Ending:
        self.frames = (frame,)
        reason = f"{deadline.reason} at step {step}"
        self.listeners.emit_if(lambda: error_event(
            self.thread, step, frame.node, frame.path, frame.branch, reason, "TimeoutError"
        ))
        self.persistence.mark(deadline.outcome, reason)
        return Ending(deadline.outcome, reason)  # type: ignore[arg-type]

    def _stopped(self, frame: Frame, step: int, stop: BaseException) -> Ending:
        self.frames = (frame,)
        why = "cancelled" if isinstance(stop, asyncio.CancelledError) else "interrupted (KeyboardInterrupt)"
        reason = f"{why} during node {frame.node!r} at step {step}"
        self.persistence.mark("aborted", reason)
        return Ending("aborted", reason)

    # -- checkpoints ------------------------------------------------------------------

    def save(self, record: Step | None, frames: tuple[Frame, ...], **status: Any) -> None:
        self.persistence.save(record, frames, **status)


class _TimedOut(BaseException):
    """Carries a deadline that fired out of the node it cancelled."""

    def __init__(self, deadline: Deadline) -> None:
        self.deadline = deadline
        super().__init__(deadline.reason)


def _step(
    step: int, frame: Frame, visit: int, started: float, duration: float,
    update: Mapping[str, Any] | None, edge: FiredEdge | None, ctx: Context | None,
    error: BaseException | None = None,
) -> Step:
    if ctx is None or not (ctx.tokens or ctx.cost or ctx.turns or ctx._events):
        record = Step(step, frame.node, visit, started, duration, update, edge, frame.path, frame.branch)
    else:
        record = Step(
            step, frame.node, visit, started, duration, update, edge, frame.path, frame.branch,
            tokens=ctx.tokens, cost=ctx.cost, turns=ctx.turns, events=tuple(ctx._events or ()),
        )
    return record if error is None else record._replace(error=_error_text(error))


def _error_text(exc: BaseException) -> str:
    return "".join(traceback.format_exception_only(type(exc), exc)).strip()


def _read_command(out: Any, node: NodePlan, plan: Plan) -> tuple[Mapping[str, Any] | None, Hop | None]:
    if isinstance(out, Mapping):
        return out, None
    name = node.name
    if isinstance(out, Goto):
        target = out.node
        allowed = node.spec.destinations
        if target != END and target not in plan.nodes:
            raise InvalidUpdate(
                f"node {name!r} returned Goto({target!r}), which is not a node of the graph"
                f"{did_you_mean(target, plan.nodes)}",
                node=name,
            )
        if allowed is not None and target not in allowed:
            raise InvalidUpdate(
                f"node {name!r} returned Goto({target!r}), but it declares destinations="
                f"{list(allowed)!r}; add {target!r} there",
                node=name,
            )
        return out.update, plan.goto(name, target)
    if isinstance(out, End):
        return out.update, plan.goto(name, END)
    raise InvalidUpdate(
        f"node {name!r} returned {type(out).__name__} {out!r:.80}; a node must return a dict of "
        "state updates, None, Goto(node, update=...) or End(update=...)",
        node=name,
    )
