"""The walker: the step loop over frames, and the state of one run while it walks.

A frame is a node waiting to run at a path, on a branch. The walker takes a level's
frames one step at a time (``step``: one frame or several branches, the same lifecycle)
until none is left or the run must stop. Everything that can be known in advance
(calling conventions, edges, the frames a hop leads to) was resolved by ``compile()``;
events are built only when someone listens; checkpoints only when there is a store. A
node that is a graph walks a level of its own (``levels``); the ways a run stops short
are ``stops``'; what a resume brings is a :class:`~nbgraph.engine.resumption.Resumption`.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from ..errors import MaxStepsExceeded, NbgraphError
from ..history import FiredEdge, Frame, Step
from ..names import START
from ..plan import Hop, Plan
from .breaks import Breaks, set_breaks
from .context import Context
from .ending import Ending
from .levels import Level
from .limits import Budget, Meter
from .listeners import Listeners, route_event, run_start
from .people import Pauses, raise_budget
from .persistence import Persistence
from .resumption import Resumption
from .step import route_restored, take_step
from .stops import failure, stopped

if TYPE_CHECKING:
    from ..checkpoint.base import Checkpointer

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
        pace: float = 0.0,
    ) -> None:
        self.plan = plan
        self.thread = thread
        self.live = live
        self.pace = pace
        """Seconds a live run waits before each step after its first (slow motion)."""
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
        self.closers: list[Callable[[], Awaitable[object]]] = []
        """What nodes opened for the whole run (``ctx.at_run_end``), closed as the run ends."""
        self.calls: list[Frame] = []
        """The frames whose node is being called now, in the order they started."""
        self.supersteps: dict[Level, tuple[list[Any], list[str]]] = {}
        """The supersteps under way, by level: their slots, and each branch's status."""
        self.start_edge: FiredEdge | None = None
        self.resumed: Resumption | None = None
        """What a resume brought, when the run continues a thread."""
        self.open_levels: dict[str, Level] = {}
        """The sub-graph levels being walked now, by path (and branch)."""
        self.flagged: Ending | None = None
        """How the first sub-graph that hit its max_steps with on_max_steps="flag" ended."""
        self.breaks: Breaks | None = None
        """Where the run pauses (breakpoints, step mode); None when nowhere, and the step loop
        then checks nothing else."""
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
            "visits": dict(root.visits),
            "tokens": meter.tokens,
            "cost": meter.cost,
            "turns": meter.turns,
            "seconds": self.seconds,
            "streak": [root.last_node, root.same],
            "peak": meter.peak,
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
            at_step = self.resumed.at_step if self.resumed is not None else None
            if at_step is not None and at_step[0].kind == "budget":
                return raise_budget(self, *at_step) or Ending("aborted")  # (stop)
            if at_step is not None:
                # (An input pause is answered inside its node, when the node asks again.)
                ending = route_restored(self, *at_step)
                if ending is not None:
                    return ending
            elif restored is None or (restored.step == 0 and not self.frames):
                self._route_from_start(self.root)  # a new run, or a fork of a run's start
            elif not self.frames and not self.root.records:
                return Ending("done", restored.reason)
            elif not self.frames:
                if self.history[-1].edge is not None:  # (stopped after its last step: nothing is left to run)
                    return Ending("done", restored.reason if restored.status == "done" else None)
                route_restored(self)  # a fork: its first step is routed with the graph as defined now
            return await self.walk(self.root) or self.flagged or Ending("done")
        except MaxStepsExceeded:
            raise
        except NbgraphError as exc:
            return failure(self.listeners, self.root, None, exc)
        finally:
            while self.closers:
                await self.closers.pop()()

    def _route_from_start(self, level: Level) -> None:
        plan = level.plan
        start = plan.start
        ctx = (
            Context(self, plan, START, 0, 1, f"{level.path}/{START}" if level.path else START)
            if start.wants_ctx
            else None
        )
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
        ctx = (
            Context(self, self.plan, record.node, record.step, record.visit, record.path, record.branch)
            if node.wants_ctx
            else None
        )
        return node.route(self.plan.schema.view(self.values), ctx)

    # -- the loop ---------------------------------------------------------------------

    async def walk(self, level: Level) -> Ending | None:
        """Run ``level``'s frames until none is left (None) or the run has to stop (why)."""
        if not level.frames and level is not self.root and not level.steps:
            self._route_from_start(level)  # (a sub-graph a checkpoint kept after its last step has none left)
        live = self.live
        pace = self.pace if live else 0.0
        last_turn = time.perf_counter()
        frames: tuple[Frame, ...] = level.frames
        while frames:
            level.frames = frames
            frame = frames[0]
            if pace and level.steps:
                try:
                    await asyncio.sleep(pace)  # slow motion: each node shows before the next one runs
                except asyncio.CancelledError as stop:
                    return stopped(level, frame, level.steps + 1, stop)
                self.meter.waited += pace  # (not the run's own time: no budget counts it)
            if live and (now := time.perf_counter()) - last_turn > _LOOP_TURN_INTERVAL:
                # Nodes that never await would hold the kernel's loop for the whole run:
                # give it a turn so the view redraws and a Stop click gets in.
                try:
                    await asyncio.sleep(0)
                except asyncio.CancelledError as stop:
                    return stopped(level, frame, level.steps + 1, stop)
                last_turn = now
            taken = await take_step(self, level, frames)
            if isinstance(taken, Ending):
                return taken
            frames = taken
        level.frames = ()
        return None

    # -- checkpoints ------------------------------------------------------------------

    def save(self, records: tuple[Step, ...], frames: tuple[Frame, ...], **status: Any) -> None:
        self.persistence.save(records, frames, **status)
