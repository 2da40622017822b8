"""Step records: what each step did, kept as the run's history and in checkpoints."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple

import pydantic_core

__all__ = ["FiredEdge", "Step"]


@dataclass(frozen=True, slots=True)
class FiredEdge:
    """The edge routing took after a step; ``label`` is the condition or router name."""

    source: str
    target: str
    label: str | None = None
    unconditional: bool = False


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

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "step": self.step,
            "node": self.node,
            "visit": self.visit,
            "started": self.started,
            "duration": self.duration,
            "update": pydantic_core.to_jsonable_python(self.update, serialize_unknown=False),
            "edge": None
            if self.edge is None
            else {
                "source": self.edge.source,
                "target": self.edge.target,
                "label": self.edge.label,
                "unconditional": self.edge.unconditional,
            },
            "tokens": self.tokens,
            "cost": self.cost,
            "turns": self.turns,
            "error": self.error,
            "edit": pydantic_core.to_jsonable_python(self.edit, serialize_unknown=False),
            "events": [event.model_dump(mode="json") for event in self.events],
            "approval_events": [event.model_dump(mode="json") for event in self.approval_events],
        }
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Step:
        from .events import _EVENT_ADAPTER

        edge = data.get("edge")
        return cls(
            step=data["step"],
            node=data["node"],
            visit=data["visit"],
            started=data["started"],
            duration=data["duration"],
            update=data.get("update"),
            edge=None if edge is None else FiredEdge(**edge),
            tokens=data.get("tokens", 0),
            cost=data.get("cost", 0.0),
            turns=data.get("turns", 0),
            error=data.get("error"),
            edit=data.get("edit"),
            events=tuple(_EVENT_ADAPTER.validate_python(e) for e in data.get("events", ())),
            approval_events=tuple(
                _EVENT_ADAPTER.validate_python(e) for e in data.get("approval_events", ())
            ),
        )
