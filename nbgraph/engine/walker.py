"""The walker: the step loop over frames, and the state of one run while it walks.

A frame is a node waiting to run at a path, on a branch. Per step the walker does
only what cannot be known in advance: call the node, fold its update through the
reducers, take the hop routing chooses, and record the step. Everything else
(calling conventions, edges, the frames a hop leads to) was resolved by
``compile()``; events are built only when someone listens; checkpoints only when
there is a store. One frame takes the short path here; several run together as a
superstep (``branches``); a node that is a graph walks a level of its own (``levels``).
The ways a run stops short are ``stops``'; a step with breakpoints goes through ``breaks``.
"""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING, Any

from ..errors import MaxStepsExceeded, NbgraphError
from ..history import NO_PAYLOAD, FiredEdge, Frame, Step
from ..names import START
from ..plan import Hop, Plan
from .branches import superstep
from .breaks import (
    Breaks,
    advance_watched,
    pause_after,
    set_breaks,
    settle_resumed_break,
)
from .calls import (
    Called,
    ChildStopped,
    TimedOut,
    enter_event,
    error_text,
    fold,
    invoke,
    make_step,
)
from .context import Context
from .ending import Ending
from .levels import Level
from .limits import Aborted, Budget, Meter
from .listeners import Listeners, route_event, run_start, step_end_events
from .outputs import read_output
from .people import (
    ASK_BUDGET,
    PauseRequested,
    Pauses,
    approve_step,
    ask_budget,
    park,
    raise_budget,
    settle_resumed_approval,
)
from .persistence import Persistence
from .stops import Stopped, failure, hit_max_steps, interrupted, stopped, timed_out

if TYPE_CHECKING:
    from ..checkpoint.base import Checkpointer
    from ..pauses import Pause

__all__ = ["RESTORED", "Walker"]

RESTORED: Any = object()
"""The input of a run that continues a thread: its state comes from the checkpoint."""

_LOOP_TURN_INTERVAL = 0.02
"""Seconds a live run may hold the event loop between steps."""


class Walker:
    """Walks one run of a plan: its levels, its frames, its history."""

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
        stepping: bool = False,
    ) -> None:
        self.plan = plan
        self.thread = thread
        self.live = live
        self.unanswered: str | None = None
        """Why nobody will answer this run's pauses, once a live run was told so."""
        self.listeners = listeners
        self.meter = Meter(budget)
        self.pauses = Pauses()
        self.persistence = Persistence(self, store)
        # (A run restored from a checkpoint gets its state from there: no input to check.)
        self.root = Level(plan, values={} if input is RESTORED else plan.schema.initial(input))
        self.input: dict[str, Any] | None = self.root.values
        self.earlier = 0
        """How many of the thread's records come before ``history`` (read on demand)."""
        self._earlier: list[Step] | None = None
        self.seconds = 0.0
        """The seconds the thread's steps took, earlier runs' included."""
        self.steering: list[str] = []
        self.calls: list[Frame] = []
        """The frames whose node is being called now, in the order they started."""
        self.supersteps: dict[Level, tuple[list[Any], list[str]]] = {}
        """The supersteps under way, by level: their slots, and each branch's status."""
        self.start_edge: FiredEdge | None = None
        self.resuming: tuple[Pause, Any] | None = None
        """The pause a resumed run was stopped at, and its answer."""
        self.answered: dict[str, Any] = {}
        """Verdicts a resume brought for approvals in branches and sub-graphs, by pause id."""
        self.resumed_inputs: dict[str, tuple[Pause, Any]] = {}
        """Input pauses a resume answered, by slot: their node shows them when it asks again."""
        self.reasked: dict[str, str] = {}
        """Input pauses a resumed run left open, by slot: asked again, they keep their id."""
        self.rerunning: set[tuple[str, str | None]] = set()
        """Where a resumed run's nodes stopped at an input (path, branch): they run again from their start."""

        self.open_levels: dict[str, Level] = {}
        """The sub-graph levels being walked now, by path (and branch)."""
        self.restored_levels: dict[str, Any] = {}
        """Sub-graph levels a checkpoint kept, waiting to be entered again."""
        self.flagged: Ending | None = None
        """How the first sub-graph that hit its max_steps with on_max_steps="flag" ended."""
        self.breaks: Breaks | None = None
        """Where the run pauses (breakpoints, step mode); None when nowhere, and the step loop
        then checks nothing else."""
        self.passing: dict[tuple[str, str | None], tuple[Pause, Any]] = {}
        """Breakpoint pauses a resumed run stopped at before a node, by (path, branch), with the
        answer the resume brought (None: not answered, the node pauses again)."""
        self.halt: str | None = None
        """Why the run stops once the step under way is routed and saved (``stop`` after a node)."""
        if plan.breakpoints is not None or stepping:
            set_breaks(self, Breaks.of(plan.breakpoints, stepping))

    # The run's own graph is the root level: what the rest of the engine reads as the
    # run's state, step, frames and history is the root level's (and is set there).

    @property
    def values(self) -> dict[str, Any]:
        return self.root.values

    @property
    def step(self) -> int:
        return self.root.steps

    @property
    def frames(self) -> tuple[Frame, ...]:
        return self.root.frames

    @property
    def history(self) -> list[Step]:
        """This run's step records (a resumed run's start with the step it continues from)."""
        return self.root.records

    @property
    def node(self) -> str | None:
        """The node running now (the latest to start, when branches run together)."""
        return self.calls[-1].node if self.calls else None

    @property
    def visits(self) -> dict[str, int]:
        return self.root.visits

    def full_history(self) -> list[Step]:
        """Every step record of the thread, reading the earlier ones from the store once."""
        if not self.earlier:
            return self.history
        if self._earlier is None:
            self._earlier = self.persistence.earlier(self.history[0]) if self.history else []
        return self._earlier + self.history

    def totals(self) -> dict[str, Any]:
        """What the run has used so far, as a checkpoint keeps it."""
        meter, root = self.meter, self.root
        return {
            "visits": dict(root.visits), "tokens": meter.tokens, "cost": meter.cost, "turns": meter.turns,
            "seconds": self.seconds, "streak": [root.last_node, root.same], "peak": meter.peak,
        }

    def levels(self) -> dict[str, Any]:
        """The sub-graph levels the run is inside now, as a checkpoint keeps them."""
        return {key: level.snapshot(self) for key, level in self.open_levels.items()}

    # -- starting ---------------------------------------------------------------------

    async def execute(self) -> Ending:
        """Walk from where the run is (its start, or a restored checkpoint) to an ending."""
        self.meter.t0 = time.perf_counter()
        restored = self.persistence.last
        self.listeners.emit_if(lambda: run_start(self.thread, self.step, self.plan.name, restored is not None))
        try:
            if self.resuming is not None and self.resuming[0].kind == "budget":
                return raise_budget(self, *self.resuming) or Ending("aborted")  # (stop)
            if self.resuming is not None and self.resuming[0].branch is None:
                # (An input pause is answered inside its node, when the node asks again.)
                pause, answer = self.resuming
                if pause.kind == "breakpoint":
                    ending = settle_resumed_break(self, pause, answer)
                else:
                    ending = settle_resumed_approval(self, pause, answer)
                if ending is not None:
                    return ending
            elif restored is None or (restored.step == 0 and not self.frames):
                self._route_from_start(self.root)  # a new run, or a fork of a run's start
            elif not self.frames and not self.root.records:
                return Ending("done", restored.reason)
            elif not self.frames:
                record = self.history[-1]
                if record.edge is not None:  # (stopped after its last step: nothing is left to run)
                    return Ending("done", restored.reason if restored.status == "done" else None)
                # A fork: its first step is routed with the graph as defined now.
                hop = self.route_from(record)
                record = record._replace(edge=hop.edge)
                self.history[-1] = record
                self.root.frames = hop.frames
                self.save((record,), hop.frames)
                self.listeners.emit_step_if(lambda: route_event(self.thread, record.step, hop.edge, record.path, record.branch))
            return await self.walk(self.root) or self.flagged or Ending("done")
        except MaxStepsExceeded:
            raise
        except NbgraphError as exc:
            return failure(self, self.root, None, exc)

    def _route_from_start(self, level: Level) -> None:
        plan = level.plan
        start = plan.start
        ctx = Context(self, plan, START, 0, 1, f"{level.path}/{START}" if level.path else START) if start.wants_ctx else None
        hop = start.fixed or start.route(plan.schema.view(level.values), ctx)
        level.frames = level.here(hop.frames)
        if level is self.root:  # (a sub-graph's first step says where it began)
            self.start_edge = hop.edge
            self.save((), hop.frames)
            self.listeners.emit_step_if(lambda: route_event(self.thread, 0, hop.edge))

    def route_from(self, record: Step) -> Hop:
        """Route out of a step already taken, with a context like the step's own."""
        node = self.plan.nodes[record.node]
        if node.fixed is not None:
            return node.fixed
        ctx = Context(self, self.plan, record.node, record.step, record.visit, record.path, record.branch) if node.wants_ctx else None
        return node.route(self.plan.schema.view(self.values), ctx)

    # -- the loop ---------------------------------------------------------------------

    async def walk(self, level: Level) -> Ending | None:
        """Run ``level``'s frames until none is left (None) or the run has to stop (why)."""
        if not level.frames and level is not self.root and not level.steps:
            self._route_from_start(level)  # (a sub-graph a checkpoint kept after its last step has none left)
        live = self.live
        # Breakpoints are set before a run walks, or (a click in a live run's view) while it
        # waits at an await: only a live run checks for new ones at every step.
        watched = self.breaks is not None
        last_turn = time.perf_counter()
        frames = level.frames
        while frames:
            level.frames = frames
            frame = frames[0]
            if live and (now := time.perf_counter()) - last_turn > _LOOP_TURN_INTERVAL:
                # Nodes that never await would hold the kernel's loop for the whole run:
                # give it a turn so the view redraws and a Stop click gets in.
                try:
                    await asyncio.sleep(0)
                except asyncio.CancelledError as stop:
                    return stopped(level, frame, level.steps + 1, stop)
                last_turn = now
            if len(frames) == 1 and not level.settled:
                stop = self._limit(level, frame.node, 1)
                while stop is ASK_BUDGET:  # (a person raises the budget, or stops the run)
                    stop = await ask_budget(self, level, frames) or self._limit(level, frame.node, 1)
                if stop is not None:
                    return stop
                if watched or (live and self.breaks is not None):
                    frames = await advance_watched(self, level, frame)
                else:
                    frames = await self.advance(level, frame)
            else:
                frames = await superstep(self, level, frames)
            if type(frames) is Ending:
                return frames
        level.frames = ()
        return None

    def _limit(self, level: Level, name: str, count: int) -> Ending | None:
        """Why ``level`` must stop before running ``count`` frames (``name`` first), or None."""
        plan = level.plan
        if level.steps + count > plan.max_steps:
            return hit_max_steps(level, name)
        if self.meter.budget is not None and (stop := self.budget_stop(count)) is not None:
            return stop
        if name != level.last_node:
            level.last_node, level.same = name, 1
            return None
        level.same += 1
        if level.same > plan.max_same_node:
            return Ending(
                "aborted", f"node {name!r} ran {plan.max_same_node} times in a row (max_same_node={plan.max_same_node})"
            )
        return None

    def budget_stop(self, count: int) -> Ending | None:
        """Why the next ``count`` steps must not start (:data:`ASK_BUDGET`: a person is asked), or None."""
        meter = self.meter
        budget = meter.budget
        assert budget is not None
        if not budget.ask:
            reason = meter.over()
            return None if reason is None else Ending("aborted", reason)
        if meter.ahead(count):
            return ASK_BUDGET
        reason = meter.out_of_time()
        return None if reason is None else Ending("aborted", reason)

    async def advance(self, level: Level, frame: Frame, held: tuple[Any, ...] | None = None) -> tuple[Frame, ...] | Ending:
        """Run one frame's node, fold its update in, route, record and save the step.

        ``held`` (a run with breakpoints) holds the events of a pause before the node; the
        step's record keeps them.
        """
        plan = level.plan
        name = frame.node
        node = plan.nodes[name]
        visit = level.visits.get(name, 0) + 1
        step = level.steps + 1
        before = level.values
        ctx = Context(self, plan, name, step, visit, frame.path, frame.branch, level.scope) if node.wants_ctx else None
        if held:  # (a breakpoint's pause before the node: its record keeps the events)
            if ctx is None:
                ctx = Context(self, plan, name, step, visit, frame.path, frame.branch, level.scope)
            ctx._events = list(held)
        listeners = self.listeners
        if listeners.steps:
            listeners.emit_step(enter_event(self, step, frame, visit))
        calls = self.calls
        calls.append(frame)
        meter = self.meter
        started = time.time()
        t0 = time.perf_counter()
        waited0 = meter.waited
        inner: tuple[Step, ...] = ()
        try:
            if node.is_async or node.subplan is not None:
                update, hop, inner = await invoke(self, level, frame, node, ctx, visit)
            else:  # the common case, inline: a sync function's call costs no coroutine
                given = plan.schema.view(before) if frame.payload is NO_PAYLOAD else frame.payload
                out = node.fn(given, ctx) if node.takes_ctx else node.fn(given)
                if out is None or type(out) is dict:
                    update, hop = out, None
                else:
                    update, hop = read_output(out, node, plan)
            values = fold(plan, before, update, inner, frame) if inner else (
                plan.schema.apply(before, update, name) if update else before
            )
        except PauseRequested as paused:
            level.frames = (frame,)  # the node runs again on resume, from its start
            return interrupted(self, paused.pause)
        except Aborted as aborted:
            if type(aborted) is Stopped and level is not self.root:
                raise  # (up to the run's own level, through every branch on the way)
            return Ending("aborted", aborted.reason)
        except TimedOut as timed:
            return timed_out(self, level, frame, step, timed.deadline)
        except ChildStopped as child:
            return child.ending
        except (asyncio.CancelledError, KeyboardInterrupt) as stop:
            return stopped(level, frame, step, stop)
        except Exception as exc:
            level.records.extend(inner)
            level.records.append(make_step(step, frame, visit, started, time.perf_counter() - t0, None, None, ctx, exc))
            return failure(self, level, frame, exc, step)
        finally:
            calls.remove(frame)
        duration = time.perf_counter() - t0 - (meter.waited - waited0)
        level.visits[name] = visit
        level.steps = step
        level.values = values
        self.seconds += duration
        record = None
        if node.approval:
            record = make_step(step, frame, visit, started, duration, update, hop.edge if hop else None, ctx)
            try:
                verdict = await approve_step(self, node, record, level)
            except PauseRequested as paused:
                return park(self, level, frame, step, visit, before, Called((*inner, record), update, hop, ctx), paused.pause)
            if type(verdict) is Ending:
                return verdict
            record, denied = verdict
            hop = denied or hop
            values = level.values
        elif held is not None and self.breaks is not None and frame.path in self.breaks.after:
            # (A node that asks for approval pauses after it runs already: its approval stands in.)
            record = make_step(step, frame, visit, started, duration, update, hop.edge if hop else None, ctx)
            try:
                record, self.halt = await pause_after(self, record, update)
            except PauseRequested as paused:
                return park(self, level, frame, step, visit, before, Called((*inner, record), update, hop, ctx), paused.pause)
            except asyncio.CancelledError:
                self.halt = f"cancelled at the breakpoint after {frame.path!r} (step {step})"
        if hop is None:
            hop = node.fixed
            if hop is None:
                try:
                    hop = node.route(plan.schema.view(values), ctx)
                except NbgraphError as exc:
                    # The step fails as a whole: its update is dropped, the node re-runs on resume.
                    level.steps, level.values = step - 1, before
                    level.visits[name] = visit - 1
                    level.records.extend(inner)
                    level.records.append(make_step(step, frame, visit, started, duration, None, None, ctx, exc))
                    return failure(self, level, frame, exc, step)
        if record is None:
            record = make_step(step, frame, visit, started, duration, update, hop.edge, ctx)
        else:
            record = record._replace(edge=hop.edge)
        if inner:
            level.records.extend(inner)
        level.records.append(record)
        if hop.join is not None:
            frames = level.next_frames(((frame, hop),))
        elif level.path:
            frames = level.here(hop.frames, frame.branch if len(hop.frames) == 1 else None)
        else:
            frames = hop.frames
        if self.persistence.store is not None:
            try:
                self.save((*inner, record), frames) if level is self.root else self.persistence.progress()
            except NbgraphError as exc:
                # Not saved, not done: the store keeps the step before, and so does the run.
                level.steps, level.values = step - 1, before
                level.visits[name] = visit - 1
                del level.records[-1 - len(inner):]
                level.records.append(record._replace(update=None, edge=None, error=error_text(exc)))
                return failure(self, level, frame, exc, step)
        if listeners.steps:
            if node.approval or record.approval_events or self.halt is not None:
                # (node-exit and the answer were announced while waiting)
                listeners.emit_step(route_event(self.thread, step, hop.edge, frame.path, frame.branch))
            else:
                for event in step_end_events(self.thread, record):
                    listeners.emit_step(event)
        return frames

    # -- checkpoints ------------------------------------------------------------------

    def save(self, records: tuple[Step, ...], frames: tuple[Frame, ...], **status: Any) -> None:
        self.persistence.save(records, frames, **status)

