"""The walker: the state of one run and the loop that walks it, step by step.

A frame is a node waiting to run at a path, on a branch. The walker takes a level's frames
one step at a time (:func:`~nbgraph.engine.step.take_step`: prepare, run, close) until none
is left or the run must stop. Everything that can be known in advance (calling conventions,
edges, the frames a hop leads to) was resolved by ``compile()``; events are built only when
someone listens; checkpoints only when there is a store. A node that is a graph walks a
level of its own (``levels``). Each part of a run's state is written by its own methods only:
the walker orders them (what a resume brings is applied here, in :meth:`Walker.restore`), the
step hands :class:`~nbgraph.engine.persistence.Persistence` what it took, and helpers take what
they read and return what they decide.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, cast

from ..errors import MaxStepsExceeded, NbgraphError
from ..history import FiredEdge, Frame, Step
from ..names import START
from ..plan import Hop, NodePlan, Plan
from .branches import Slots
from .breaks import Breaks
from .calls import Activity, Caller
from .context import Context, RunDoor
from .ending import Ending
from .folds import fold, fold_record, shares_state
from .levels import Level, enter, level_key
from .limits import Budget, Meter
from .listeners import Listeners, answered, interrupt, route_event, run_start
from .people import Asking, raised, stored_answer
from .persistence import Persistence, Snapshot
from .resumption import Resumption
from .slots import Called, restored
from .step import Stepper
from .stops import failure

if TYPE_CHECKING:
    from ..checkpoint.base import Checkpointer
    from ..decision import Decision
    from ..pauses import Pause

__all__ = ["Walker"]

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
        chosen: bool = False,
        live: bool,
        listeners: Listeners,
        stepping: bool = False,
        pace: float = 0.0,
        resuming: bool = False,
    ) -> None:
        self.plan = plan
        self.thread = thread
        self.pace = pace
        """Seconds a live run waits before each step after its first (slow motion)."""
        self.listeners = listeners
        self.meter = Meter(budget, chosen=chosen)
        """(``chosen``: the budget was given to this run, not taken from its graph.)"""
        self.asking = Asking(listeners, self.meter, live=live)
        self.resumption = Resumption()
        self.breaks = Breaks.of(plan.breakpoints, stepping)
        # (A run that continues a thread gets its state from the checkpoint: no input to check.)
        self.root = Level(plan, values={} if resuming else plan.schema.initial(input))
        self.input: dict[str, Any] | None = None if resuming else self.root.values
        """The values the run started from (None: it continued a thread)."""
        self.start_edge: FiredEdge | None = None
        self.open_levels: dict[str, Level] = {}
        """The sub-graph levels being walked now, by path (and branch)."""
        self.persistence = Persistence(
            store,
            thread,
            root=self.root,
            meter=self.meter,
            asking=self.asking,
            breaks=self.breaks,
            resumption=self.resumption,
            open_levels=self.open_levels,
        )
        self.flagged: Ending | None = None
        """How the first sub-graph that hit its max_steps with on_max_steps="flag" ended."""
        self.activity = Activity()
        self.door = RunDoor(listeners, self.meter, self.asking, self.resumption)
        self.caller = Caller(self.door, self.activity, self.walk_subgraph, self.give_up)
        self.stepper = Stepper(Slots(self.caller, self.asking, self.breaks), self.persistence, self.root)

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
        calls = self.caller.under_way
        return calls[-1].node if calls else None

    @property
    def under_way(self) -> list[Frame]:
        """The frames whose nodes are being called now, in the order they started."""
        return self.caller.under_way

    @property
    def trace(self) -> dict[str, str]:
        """The trace context a tracer keeps with the thread (``Run.trace_context``)."""
        return self.persistence.trace

    def keep_trace(self, carrier: Mapping[str, str]) -> None:
        self.persistence.keep_trace(carrier)

    def steer(self, text: str) -> None:
        """Queue ``text`` for the run's next LLM step (``Run.steer``)."""
        self.door.steer(text)

    @property
    def recorded(self) -> int:
        """How many step records the thread has, without reading the earlier ones."""
        return self.persistence.earlier + len(self.root.records)

    def full_history(self) -> list[Step]:
        """Every step record of the thread, reading the earlier ones from the store once."""
        records = self.root.records
        if not self.persistence.earlier:
            return records
        return self.persistence.earlier_records(records[0] if records else None) + records

    def state_shown(self) -> dict[str, Any]:
        """The state as a person sees it: with the updates of the nodes that ran and wait for a
        verdict (an approval, a breakpoint after them), in slot order; folded as their step closes.
        Branches that finished beside a branch still waiting are not shown until the step closes."""
        root = self.root
        values = root.values
        pending: list[tuple[int, Called]] = [
            (entry["step"], restored(entry)) for entry in root.settled if entry["pause"] is not None
        ]
        pending += list(self.activity.waiting.get(root, {}).items())
        for _, called in sorted(pending, key=lambda item: item[0]):
            record = called.records[-1]
            if record.error is None:
                values = fold(self.plan, values, called.update, called.records[:-1], Frame(record.node, record.path))
                if record.edit:
                    values = fold_record(self.plan.schema, values, record._replace(update=None))
        return values

    def state_at(self, step: int) -> dict[str, Any]:
        """The field values after ``step`` (0: the input), from the store or by folding."""
        if step < 0 or step > self.step:
            raise ValueError(f"step must be between 0 and {self.step}, got {step}")
        schema = self.plan.schema
        store = self.persistence.store
        if store is not None:
            checkpoint = store.get(self.thread, step)
            if checkpoint is not None:
                return schema.decode(checkpoint.state)
        if self.input is None:
            raise ValueError("this run was resumed from a checkpoint; read earlier states from its checkpointer")
        values = self.input
        for record in self.history:
            if "/" not in record.path and record.step > step:
                break
            if record.error is None and shares_state(self.plan, record.path):
                values = fold_record(schema, values, record)
        return values

    # -- starting ---------------------------------------------------------------------

    async def execute(self) -> Ending:
        """Walk from where the run is (its start, or a restored checkpoint) to an ending."""
        self.meter.start()
        restored_from = self.persistence.last
        self.listeners.emit_if(lambda: run_start(self.thread, self.step, self.plan.name, restored_from is not None))
        listeners = self.listeners
        for pause, value, decision in self.resumption.settled:
            listeners.emit(interrupt(self.thread, pause.step, pause))
            listeners.emit(answered(self.thread, pause.step, pause, value, decision))
        try:
            budget = self.resumption.budget
            if budget is not None:  # (a budget pause answered 'stop': raised limits applied as the run began)
                decided = raised(self.meter, *budget)
                return decided if isinstance(decided, Ending) else Ending("aborted")
            if restored_from is None or (restored_from.step == 0 and not self.frames):
                self._route_from_start(self.root)  # a new run, or a fork of a run's start
            elif not self.frames and not self.root.records and not self.root.settled:
                return Ending("done", restored_from.reason)
            elif not self.frames and not self.root.settled:
                if self.history[-1].edge is not None:  # (stopped after its last step: nothing is left to run)
                    return Ending("done", restored_from.reason if restored_from.status == "done" else None)
                self._route_forked()  # a fork: its first step is routed with the graph as defined now
            return await self.walk(self.root) or self.flagged or Ending("done")
        except MaxStepsExceeded:
            raise
        except NbgraphError as exc:
            return failure(self.listeners, None, exc, self.step)
        finally:
            await self.door.close()

    def _route_from_start(self, level: Level) -> None:
        plan = level.plan
        start = plan.start
        ctx = (
            Context(self.door, plan, START, 0, 1, f"{level.path}/{START}" if level.path else START)
            if start.wants_ctx
            else None
        )
        hop = start.fixed or start.route(plan.schema.view(level.values), ctx)
        level.at(level.here(hop.frames))
        if level is self.root:  # (a sub-graph's first step says where it began)
            self.start_edge = hop.edge
            self.persistence.save_start(hop.frames)
            listeners = self.listeners
            listeners.emit_step_if(lambda: route_event(self.thread, 0, hop.edge))

    def route_from(self, record: Step) -> Hop:
        """Route out of a step already taken, with a context like the step's own."""
        node = self.plan.nodes[record.node]
        if node.fixed is not None:
            return node.fixed
        ctx = (
            Context(self.door, self.plan, record.node, record.step, record.visit, record.path, record.branch)
            if node.wants_ctx
            else None
        )
        return node.route(self.plan.schema.view(self.values), ctx)

    # -- the loop ---------------------------------------------------------------------

    def swap(self, name: str, fn: Callable[..., Any]) -> Plan:
        """Call ``fn`` as node ``name`` from its next call on (``Run.replace_node``): the plan now.

        Raises:
            ValueError: the plan has no such node, or it runs a sub-graph.
        """
        self.plan = self.plan.with_function(name, fn)
        self.root.swap_plan(self.plan)
        return self.plan

    async def walk(self, level: Level) -> Ending | None:
        """Run ``level``'s frames until none is left (None) or the run has to stop (why)."""
        if not level.frames and level is not self.root and not level.steps and not level.settled:
            self._route_from_start(level)  # (a sub-graph a checkpoint kept after its last step has none left)
        live = self.asking.live
        pace = self.pace if live else 0.0
        last_turn = time.perf_counter()
        frames: tuple[Frame, ...] = level.frames
        take_step = self.stepper.take
        while frames:  # (level.frames is where the walk is: a step that closes sets them)
            if pace and level.steps:
                try:
                    await asyncio.sleep(pace)  # slow motion: each node shows before the next one runs
                except asyncio.CancelledError:
                    return Ending("aborted", f"cancelled during node {frames[0].path!r} at step {level.steps + 1}")
                self.meter.slowed(pace)
            if live and (now := time.perf_counter()) - last_turn > _LOOP_TURN_INTERVAL:
                # Nodes that never await would hold the kernel's loop for the whole run:
                # give it a turn so the view redraws and a Stop click gets in.
                try:
                    await asyncio.sleep(0)
                except asyncio.CancelledError:
                    return Ending("aborted", f"cancelled during node {frames[0].path!r} at step {level.steps + 1}")
                last_turn = now
            taken = take_step(level, frames)
            if not isinstance(taken, tuple):  # (the step awaits: a node is async, a person is asked, ...)
                taken = await taken
            if isinstance(taken, Ending):
                return taken
            frames = taken
        level.at(())
        return None

    async def walk_subgraph(
        self, parent: Level, frame: Frame, node: NodePlan, visit: int
    ) -> Ending | tuple[Mapping[str, Any] | None, tuple[Step, ...]]:
        """Walk the sub-graph ``node`` runs: its update for the parent and its records, or how it
        stopped inside (its level stays open: a checkpoint keeps where it stopped)."""
        key = level_key(frame)
        child = enter(parent, frame, node, visit, self.resumption.level(key))
        self.open_levels[key] = child
        ending = await self.walk(child)
        if ending is not None:
            if ending.outcome != "done":
                return ending
            if ending.hit_max_steps and self.flagged is None:
                self.flagged = ending  # on_max_steps="flag": the run's result says which sub-graph hit it
        del self.open_levels[key]
        self.asking.pauses.forget(child.scope)
        output = node.spec.output
        update = output(child.plan.schema.view(child.values)) if output is not None else None
        return update, tuple(child.records)  # a shared sub-graph's steps are folded with its node's

    def give_up(self, frame: Frame) -> tuple[Step, ...]:
        """Close the sub-graph levels ``frame``'s branch leaves open as it is given up: their records."""
        records: list[Step] = []
        for key in sorted(key for key in self.open_levels if _inside(key, frame)):  # outer levels first
            records.extend(self.open_levels.pop(key).records)
        return tuple(records)

    # -- how it ends ------------------------------------------------------------------

    def finish(self, ending: Ending) -> None:
        """Record how the run ended, so a resume knows where to go on from."""
        if self.persistence.store is not None:
            self.persistence.finish(ending)
        elif ending.outcome not in ("done", "denied"):
            self.keep_in_memory(ending)

    def keep_in_memory(self, ending: Ending) -> None:
        """A run without a store: keep its checkpoints in the default store, for a ``Resume`` (a
        run that stopped short, as it ends) or a ``Fork`` (asked for once it has ended)."""
        self.persistence.keep_in_memory(ending, self._start_frames(), self.input)

    def _start_frames(self) -> tuple[Frame, ...]:
        """The frames the run's first step ran."""
        start_edge, plan = self.start_edge, self.plan
        if start_edge is None:
            return self.frames
        return tuple(f for t in start_edge.targets if t in plan.nodes for f in plan.frames_to(t))

    def _route_forked(self) -> None:
        """A fork's first step: the last step of the thread it branched from, routed with the
        graph as defined now (its node does not run again)."""
        root = self.root
        record = root.records[-1]
        hop = self.plan.hop_of(record.edge) if record.edge is not None else self.route_from(record)
        record = root.reroute_last(hop.edge)
        root.at(hop.frames)
        persistence = self.persistence  # (the step was taken, and its time counted, in the thread it forks)
        persistence.put(persistence.checkpoint([record], hop.frames))
        listeners = self.listeners
        listeners.emit_step_if(lambda: route_event(listeners.thread, record.step, hop.edge, record.path, record.branch))

    # -- resuming ---------------------------------------------------------------------

    def restore(self, snapshot: Snapshot, answered: tuple[tuple[Pause, Any, Decision], ...]) -> None:
        """Put the run where ``snapshot`` left its thread, with the answers a resume brought:
        state, frames, history, usage, answers, the slots that finished and the sub-graphs it
        is inside."""
        last = snapshot.checkpoint
        totals = snapshot.totals
        self.root.resume(
            snapshot.values, last.step, last.frames, last.settled, snapshot.records, totals.visits, totals.streak
        )
        self.persistence.restored(snapshot)
        self.start_edge = snapshot.start_edge
        pauses = self.asking.pauses
        pauses.restore(last.answers)
        meta = last.meta
        kept = meta.get("budget")
        # Limits a person raised earlier in the thread hold for the rest of it, unless this
        # resume was given a budget of its own.
        meter = self.meter
        meter.restore(
            cast("Mapping[str, Any]", kept) if isinstance(kept, Mapping) else None,
            (totals.tokens, totals.cost, totals.turns),
            totals.peak,
            totals.seconds,
        )
        resumption = self.resumption
        resumption.begin(last.pauses, last.levels)
        self.asking.restore_standing(meta.get("standing"))
        resumption.take_up(meta.get("decided"))  # (given before this resume's answers: shown first)
        for pause, value, decision in answered:
            if pause.kind == "budget" and value != "stop":
                raised(meter, pause, value)
            if pause.slot is not None:
                # (Without its record: the resumption keeps it with the thread until the node's
                # record shows it, whichever way the node runs again.)
                pauses.record(pause.slot, stored_answer(pause, value))
            resumption.answer(pause, value, decision)
        self._restore_breaks(meta.get("breakpoints"))

    def _restore_breaks(self, kept: Any) -> None:
        """The breakpoints a resumed run pauses at: its graph's own if it set any, else those its
        thread was started with; step mode if the resume asks for it or the run was stepping."""
        stored = Breaks.from_json(cast("Mapping[str, Any]", kept)) if isinstance(kept, Mapping) else None
        breaks = self.breaks
        plan = self.plan
        source = Breaks.of(plan.breakpoints) if plan.breakpoints is not None else stored or Breaks()
        stepping = breaks.stepping or (stored is not None and stored.stepping)
        breaks.set(source.before, source.after, stepping)
        breaks.expect(self.resumption)


def _inside(key: str, frame: Frame) -> bool:
    """Whether the level ``key`` names is ``frame``'s sub-graph or one nested in it."""
    path, _, branch = key.partition("@")
    own = frame.branch or ""
    return (path == frame.path or path.startswith(frame.path + "/")) and (branch == own or branch.startswith(own + "/"))
