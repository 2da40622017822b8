"""Run records: the steps a run took (its history) and the frames waiting to run."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, NamedTuple

from .names import START
from .state import to_jsonable

__all__ = ["NO_PAYLOAD", "BranchState", "FiredEdge", "Frame", "Step", "tally", "tally_within"]


class _NoPayload:
    """The payload of a frame that runs its node on the state, not on a ``Send``'s payload."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "NO_PAYLOAD"


NO_PAYLOAD: Any = _NoPayload()


class Frame(NamedTuple):
    """A node waiting to run: where a run (or a sub-graph inside it) goes next.

    A checkpoint keeps the frames it resumes from; a sub-graph's frames are kept with
    its level, under the frame of the node that runs it.
    """

    node: str
    path: str
    """The node's location: its name, or ``outer/inner/node`` inside sub-graphs."""
    branch: str | None = None
    """The parallel branch the node runs in (None on the main line)."""
    payload: Any = NO_PAYLOAD
    """What a ``Send`` gave the node to run on, instead of the state."""

    def to_json(self) -> dict[str, Any]:
        data = {"node": self.node, "path": self.path, "branch": self.branch}
        if self.payload is not NO_PAYLOAD:
            data["payload"] = to_jsonable(self.payload)
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Frame:
        return cls(data["node"], data.get("path") or data["node"], data.get("branch"), data.get("payload", NO_PAYLOAD))


class BranchState(NamedTuple):
    """Where one branch of a superstep under way is (``Run.branches``)."""

    node: str
    path: str
    branch: str
    status: str
    """``waiting`` (for a free slot under ``max_concurrency``), ``running``, ``paused``, ``done`` or ``failed``."""


class FiredEdge(NamedTuple):
    """The edge routing took after a step; ``label`` is the condition or router name."""

    source: str
    target: str
    label: str | None = None
    unconditional: bool = False
    fanout: tuple[str, ...] = ()
    """Every target, when the edge led to several at once (``target`` is the first)."""

    @property
    def targets(self) -> tuple[str, ...]:
        return self.fanout or (self.target,)


class Step(NamedTuple):
    """One executed node.

    ``update`` is what the node returned (before reducers), so replaying every
    step's update through the reducers from the input rebuilds any later state.
    A named tuple rather than a frozen dataclass: as immutable, and one is built per
    step, where the dataclass's per-field ``object.__setattr__`` cost a fifth of an
    unobserved step. Change one with ``step._replace(field=value)``.
    """

    step: int
    node: str
    visit: int
    started: float
    """Wall-clock start (seconds since the epoch)."""
    duration: float
    """Seconds the node ran, not counting time spent waiting for a person."""
    update: Mapping[str, Any] | None = None
    edge: FiredEdge | None = None
    path: str = ""
    """Where the node ran: its name, or ``outer/inner/node`` inside sub-graphs."""
    branch: str | None = None
    """The parallel branch it ran in (None on the main line)."""
    tokens: int = 0
    cost: float = 0.0
    turns: int = 0
    """LLM calls made during the step."""
    error: str | None = None
    edit: Mapping[str, Any] | None = None
    """A person's correction made when approving this step, applied after ``update``."""
    events: tuple[Any, ...] = ()
    """Events the node emitted while running (text deltas, tool calls, live input pauses)."""
    approval_events: tuple[Any, ...] = ()
    """The approval's interrupt and resume events, which come after the node exits."""

    def routed(self, edge: FiredEdge) -> Step:
        """This record with the edge routing took (``_replace`` at half its cost: one per step)."""
        return Step(*self[:6], edge, *self[7:])

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "step": self.step,
            "node": self.node,
            "visit": self.visit,
            "started": self.started,
            "duration": self.duration,
            "update": to_jsonable(self.update),
            "path": self.path,
            "branch": self.branch,
            "edge": None
            if self.edge is None
            else {
                "source": self.edge.source,
                "target": self.edge.target,
                "label": self.edge.label,
                "unconditional": self.edge.unconditional,
                **({"fanout": list(self.edge.fanout)} if self.edge.fanout else {}),
            },
            "tokens": self.tokens,
            "cost": self.cost,
            "turns": self.turns,
            "error": self.error,
            "edit": to_jsonable(self.edit),
            "events": [event.model_dump(mode="json") for event in self.events],
            "approval_events": [event.model_dump(mode="json") for event in self.approval_events],
        }
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Step:
        from .events import event_from_dict

        edge = data.get("edge")
        return cls(
            step=data["step"],
            node=data["node"],
            visit=data["visit"],
            started=data["started"],
            duration=data["duration"],
            update=data.get("update"),
            edge=None if edge is None else FiredEdge(**{**edge, "fanout": tuple(edge.get("fanout", ()))}),
            path=data.get("path") or data["node"],
            branch=data.get("branch"),
            tokens=data.get("tokens", 0),
            cost=data.get("cost", 0.0),
            turns=data.get("turns", 0),
            error=data.get("error"),
            edit=data.get("edit"),
            events=tuple(event_from_dict(e) for e in data.get("events", ())),
            approval_events=tuple(event_from_dict(e) for e in data.get("approval_events", ())),
        )


def tally(steps: Iterable[Step], visits: dict[str, int], fired: dict[tuple[str, str], int]) -> None:
    """Add to ``visits`` (node -> completed executions) and ``fired`` ((source, target) ->
    times taken) what ``steps`` did; step 1 also counts the edge out of START. Steps
    inside sub-graphs (a path with ``/``) are counted by :func:`tally_within`.

    Feed it a run's steps all at once (an export) or a few at a time (a live view).
    """
    for record in steps:
        if "/" in record.path:
            continue
        if record.step == 1:
            fired[(START, record.node)] = fired.get((START, record.node), 0) + 1
        if record.error is None:
            visits[record.node] = visits.get(record.node, 0) + 1
        edge = record.edge
        if edge is not None:
            for target in edge.targets:
                key = (edge.source, target)
                fired[key] = fired.get(key, 0) + 1


def tally_by_path(steps: Iterable[Step], visits: dict[str, int], fired: dict[tuple[str, str], int]) -> None:
    """:func:`tally` for the steps of every level at once, keyed by path: a node inside a
    sub-graph counts as ``research/search``, and its edges with both ends so written (as the
    replay slider counts them)."""
    for record in steps:
        level = record.path.rpartition("/")[0]
        prefix = f"{level}/" if level else ""
        if record.step == 1:
            key = (prefix + START, record.path)
            fired[key] = fired.get(key, 0) + 1
        if record.error is None:
            visits[record.path] = visits.get(record.path, 0) + 1
        edge = record.edge
        if edge is not None:
            for target in edge.targets:
                key = (prefix + edge.source, prefix + target)
                fired[key] = fired.get(key, 0) + 1


def tally_within(steps: Iterable[Step], path: str, visits: dict[str, int], fired: dict[tuple[str, str], int]) -> None:
    """:func:`tally` for the steps of the sub-graph at ``path`` (``research``, ``research/deep``)."""
    prefix = path + "/"
    inner = [r._replace(path=r.path[len(prefix) :]) for r in steps if r.path.startswith(prefix)]
    tally(inner, visits, fired)
