"""Levels: the run's own graph, and the sub-graphs it runs as nodes, each walked on its own.

A level has its own frames, visits, step count (so a sub-graph's ``max_steps``
applies to it alone), records and values: a sub-graph on its parent's state walks
a copy of the parent's values and its steps fold into the parent's when it ends;
one with ``input``/``output`` mappings starts from what ``input`` gives it. While the run is inside a sub-graph, a checkpoint keeps the sub-graph's
level (its frames and progress), so a resume enters it where it stopped instead of
running it again from its start.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from ..errors import InvalidUpdate
from ..history import NO_PAYLOAD, FiredEdge, Frame, Step
from ..plan import Hop, NodePlan, Plan
from .slots import Called, Failed, Outcome, Parked, Slot, settled_entry

__all__ = ["Level", "enter", "level_key"]


class Level:
    """One graph's walk inside a run."""

    __slots__ = (
        "arrived",
        "branch",
        "frames",
        "last_node",
        "path",
        "placed",
        "plan",
        "records",
        "same",
        "scope",
        "settled",
        "steps",
        "values",
        "visits",
    )

    def __init__(
        self,
        plan: Plan,
        path: str = "",
        values: dict[str, Any] | None = None,
        branch: str | None = None,
        placed: dict[tuple[str, str, str | None], Frame] | None = None,
        scope: str = "",
    ) -> None:
        self.plan = plan
        self.path = path
        """Where the level is: "" for the run's graph, ``research`` inside node research."""
        self.branch = branch
        """The branch the level runs in: its main line's frames carry it, and branches
        it starts are numbered under it, so two branches running one sub-graph never
        share a pause slot, a level key or an event's place."""
        self.placed = placed if placed is not None else {}
        """Frames placed at a path and branch, shared by the run's levels: a sub-graph
        called a thousand times places its nodes once."""
        self.scope = scope
        """Which call of its sub-graph the level is (``research#2/`` inside the second
        visit of node research; "" for the run's graph): a person's answers are kept
        per call, so the next call of the sub-graph asks again."""
        self.values: dict[str, Any] = values if values is not None else {}
        self.frames: tuple[Frame, ...] = ()
        self.visits: dict[str, int] = {}
        self.last_node: str | None = None
        self.same = 0
        self.steps = 0
        """Steps taken at this level (a sub-graph counts its own)."""
        self.records: list[Step] = []
        self.arrived: dict[str, set[str]] = {}
        """Join targets, and the sources that finished since each last ran."""
        self.settled: list[Mapping[str, Any]] = []
        """Branches of a superstep under way that finished while others wait (JSON), kept by checkpoints."""

    # -- the walk's verbs: the only writers of a level ----------------------------------

    def at(self, frames: tuple[Frame, ...]) -> None:
        """The walk is at ``frames``: its next step runs them (a resume too)."""
        self.frames = frames

    def streak(self, frames: tuple[Frame, ...]) -> int:
        """Count the step of ``frames`` in the streak of one node run again and again: how many
        times in a row its lone node has now run, when it ran just before too (0 otherwise;
        branches break a streak)."""
        if len(frames) != 1:
            self.last_node, self.same = None, 0
            return 0
        name = frames[0].node
        if name != self.last_node:
            self.last_node, self.same = name, 1
            return 0
        self.same += 1
        return self.same

    def commit(self, values: dict[str, Any], step: int, records: Sequence[Step], frames: tuple[Frame, ...]) -> None:
        """A step closed: the state after it, the level's step count, its records, the frames its next step runs."""
        self.values = values
        self.steps = step
        self.records.extend(records)
        self.frames = frames

    def record(self, records: Sequence[Step]) -> None:
        """Records of steps that did not close (a failure's), kept in the history."""
        self.records.extend(records)

    def unrecord(self, count: int) -> None:
        """Take back the last ``count`` records (a step whose save failed)."""
        del self.records[-count:]

    def reroute_last(self, edge: FiredEdge) -> Step:
        """The last record, routed along ``edge`` instead (a fork's first step): the new record."""
        record = self.records[-1] = self.records[-1]._replace(edge=edge)
        return record

    def swap_plan(self, plan: Plan) -> None:
        self.plan = plan

    def resume(
        self,
        values: dict[str, Any],
        steps: int,
        frames: tuple[Frame, ...],
        settled: Sequence[Mapping[str, Any]],
        records: list[Step],
        visits: Mapping[str, int],
        streak: tuple[str | None, int],
    ) -> None:
        """Go on from where a thread's checkpoint left the run's own graph."""
        self.values = values
        self.steps = steps
        self.frames = frames
        self.settled = list(settled)
        self.records = records
        self.visits = dict(visits)
        self.last_node, self.same = streak

    def here(self, frames: tuple[Frame, ...], branch: str | None = None) -> tuple[Frame, ...]:
        """Frames of this level's plan, placed at its path (and on ``branch``, by default the level's)."""
        if branch is None:
            branch = self.branch
        path = self.path
        if not path and branch is None:
            return frames
        placed = self.placed
        out: list[Frame] = []
        for f in frames:
            if f.payload is NO_PAYLOAD and f.branch is None:
                key = (path, f.node, branch)
                here = placed.get(key)
                if here is None:
                    here = placed[key] = f._replace(path=f"{path}/{f.node}" if path else f.node, branch=branch)
            else:  # a payload's frame is made once, used once
                here = f._replace(
                    path=f"{path}/{f.node}" if path else f.node, branch=branch if f.branch is None else f.branch
                )
            out.append(here)
        return tuple(out)

    def next_frames(self, taken: Sequence[tuple[Frame, Hop]]) -> tuple[Frame, ...]:
        """The frames the hops lead to: placed at the level's path, a branch kept along its
        own line, a join target only once all its sources have finished, no frame twice."""
        if len(taken) == 1 and not self.path:
            frame, hop = taken[0]
            if hop.join is None and frame.branch is None:
                return hop.frames  # (the commonest step: nothing to place, no join to wait at)
        out: list[Frame] = []
        seen: set[tuple[str, str | None]] = set()
        for frame, hop in taken:
            if hop.join is not None:
                arrived = self.arrived.setdefault(hop.edge.target, set())
                arrived.add(frame.node)
                if not arrived >= hop.join:
                    continue
                del self.arrived[hop.edge.target]
                frames = self.here(hop.frames)  # the branches meet: back on the main line
            else:
                branch = frame.branch if len(hop.frames) == 1 else None
                frames = self.here(hop.frames, branch)
            for next_frame in frames:
                key = (next_frame.node, next_frame.branch)
                if next_frame.payload is NO_PAYLOAD:
                    if key in seen:
                        continue
                    seen.add(key)
                out.append(next_frame)
        return tuple(out)

    def number(self, frames: tuple[Frame, ...]) -> list[Slot]:
        """The step's slots: each frame with its step, its visit (counted now) and, when the step
        has several, a branch id; inside a branch, ids are numbered under its own."""
        base = self.steps
        visits = self.visits
        if len(frames) == 1:
            frame = frames[0]
            visit = visits[frame.node] = visits.get(frame.node, 0) + 1
            return [Slot(frame, base + 1, visit)]
        own = self.branch
        prefix = f"{own}/" if own is not None else ""
        many = Counter(frame.node for frame in frames if frame.branch == own)
        index: Counter[str] = Counter()
        slots: list[Slot] = []
        for i, frame in enumerate(frames):
            if frame.branch == own:
                node = frame.node
                if frame.payload is not NO_PAYLOAD or many[node] > 1:
                    frame = frame._replace(branch=f"{prefix}{node}[{index[node]}]")
                    index[node] += 1
                else:
                    frame = frame._replace(branch=prefix + node)
            visit = visits[frame.node] = visits.get(frame.node, 0) + 1
            slots.append(Slot(frame, base + 1 + i, visit))
        return slots

    def undo(self, slots: Sequence[Slot], base: int, before: dict[str, Any]) -> None:
        """The step did not complete: its visits are not counted, its frames run again, the
        state is as it was before it."""
        for slot in slots:
            self.visits[slot.frame.node] = self.visits.get(slot.frame.node, 1) - 1
        self.steps = base
        self.values = before
        self.frames = tuple(slot.frame for slot in slots)

    def take_settled(self) -> dict[int, Mapping[str, Any]]:
        """The slots of the step under way that a checkpoint kept as finished, by step (taken once)."""
        kept = {entry["step"]: entry for entry in self.settled}
        self.settled = []
        return kept

    def keep(self, slots: Sequence[Slot], outcomes: Sequence[Outcome | None]) -> InvalidUpdate | None:
        """What a checkpoint keeps of the slots that finished, so a resume does not run them again.

        A slot whose step cannot be stored as JSON is not kept (a resume runs it again); the
        first such is returned, for a run that must stop now to say why.
        """
        unstorable = None
        for slot, outcome in zip(slots, outcomes, strict=True):
            try:
                if type(outcome) is Parked:
                    if outcome.called is not None:
                        self.settled.append(settled_entry(slot.step, outcome.called, outcome.pauses[0]))
                elif type(outcome) is Failed:
                    if outcome.records and self.plan.settle == "all":  # with "all" a failure is how the branch settled
                        entry = settled_entry(slot.step, Called(outcome.records, None, None, None), None)
                        entry["error"] = outcome.records[-1].error
                        self.settled.append(entry)
                elif type(outcome) is Called:
                    self.settled.append(settled_entry(slot.step, outcome, None))
            except InvalidUpdate as exc:
                unstorable = unstorable or exc
        return unstorable

    def snapshot(self) -> dict[str, Any]:
        """What a checkpoint keeps of a sub-graph level the run is inside (JSON)."""
        data: dict[str, Any] = {
            "frames": [frame.to_json() for frame in self.frames],
            "visits": dict(self.visits),
            "streak": [self.last_node, self.same],
            "steps": self.steps,
            "records": [record.to_json() for record in self.records],
            "arrived": {target: sorted(sources) for target, sources in self.arrived.items()},
            "settled": list(self.settled),
            "values": self.plan.schema.encode(self.values),
        }
        return data

    def restore(self, data: Mapping[str, Any]) -> None:
        self.frames = tuple(Frame.from_json(f) for f in data.get("frames") or ())
        self.visits = dict(data.get("visits") or {})
        self.last_node, self.same = data.get("streak") or (None, 0)
        self.steps = int(data.get("steps") or 0)
        self.records = [Step.from_json(r) for r in data.get("records") or ()]
        arrived: Mapping[str, list[str]] = data.get("arrived") or {}
        self.arrived = {target: set(sources) for target, sources in arrived.items()}
        self.settled = list(data.get("settled") or ())
        if "values" in data:
            self.values = self.plan.schema.decode(data["values"])


def level_key(frame: Frame) -> str:
    """How a checkpoint names a sub-graph level: its path, and its branch when it has one."""
    return frame.path if frame.branch is None else f"{frame.path}@{frame.branch}"


def enter(parent: Level, frame: Frame, node: NodePlan, visit: int, kept: Mapping[str, Any] | None) -> Level:
    """The level of the sub-graph ``node`` runs on its ``visit``: the one a checkpoint ``kept``, or a new one."""
    plan = node.subplan
    assert plan is not None
    spec = node.spec
    if spec.input is None:
        if frame.payload is not NO_PAYLOAD:
            raise InvalidUpdate(
                f"node {node.name!r} runs sub-graph {plan.name!r} on this graph's state, so a Send's payload "
                "has nowhere to go; give the node input= and output= mappings",
                node=node.name,
            )
        # On a copy of the parent's state: its steps fold into the parent's when it ends.
        values = dict(parent.values)
    elif kept is not None:
        values = None
    else:
        given = frame.payload if frame.payload is not NO_PAYLOAD else parent.plan.schema.view(parent.values)
        values = plan.schema.initial(spec.input(given))
    where = frame.node if frame.branch is None else f"{frame.node}@{frame.branch}"
    scope = f"{parent.scope}{where}#{visit}/"
    level = Level(plan, frame.path, values=values, branch=frame.branch, placed=parent.placed, scope=scope)
    if kept is not None:
        level.restore(kept)
    return level
