"""A replay's frame: the run as it was after one record of its history (frame 0: before any).

Which node ran (with its ``path`` and ``branch``), how many times each node has run and each
edge has fired, the state after it, and the answers people gave at its step; and the frame as
JSON, the shape the view's step slider takes (another engine's frames are built in it too).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

from .decision import Decision, decided_in
from .history import FiredEdge, Step
from .state import to_jsonable

__all__ = ["ReplayFrame"]


class ReplayFrame(NamedTuple):
    """The run as it was after one record (frame 0: before any).

    ``visits`` counts each node's finished executions by path (``research/search``
    inside a sub-graph); ``fired`` counts each edge taken by (source, target), the
    names inside a sub-graph prefixed with its path, as the live view counts them.
    """

    index: int
    step: int
    """The record's step (a sub-graph counts its own); 0 for frame 0."""
    node: str | None
    path: str | None
    branch: str | None
    visit: int
    edge: FiredEdge | None
    error: str | None
    visits: Mapping[str, int]
    fired: Mapping[tuple[str, str], int]
    values: Mapping[str, Any]
    """The state after the record, as the engine keeps it (field -> value)."""
    decided: tuple[Decision, ...] = ()
    """The answers given to the pauses of the record's step (who, when, how, what, why)."""
    decisions_so_far: int = 0
    """How many answers were given up to this frame, its own included: they are the first
    ``decisions_so_far`` of :attr:`Replay.decisions` (:meth:`Replay.decisions_up_to`)."""

    @classmethod
    def after(
        cls,
        index: int,
        record: Step,
        visits: Mapping[str, int],
        fired: Mapping[tuple[str, str], int],
        values: Mapping[str, Any],
        so_far: int = 0,
    ) -> ReplayFrame:
        """The frame after ``record``, the counts copied as they stand (``so_far``: the
        answers given before it)."""
        decided = tuple(decided_in((record,))) if record.events or record.approval_events else ()
        return cls(
            index,
            record.step,
            record.node,
            record.path,
            record.branch,
            record.visit,
            record.edge,
            record.error,
            dict(visits),
            dict(fired),
            values,
            decided,
            so_far + len(decided),
        )

    @property
    def state(self) -> dict[str, Any]:
        """The state after the record, as JSON."""
        return to_jsonable(dict(self.values), strict=False)

    def to_json(self, *, state: bool = True) -> dict[str, Any]:
        """The frame as the view takes it: ``fired`` keyed ``"source→target"``."""
        edge = self.edge
        data: dict[str, Any] = {
            "index": self.index,
            "step": self.step,
            "node": self.node,
            "path": self.path,
            "branch": self.branch,
            "visit": self.visit,
            "error": self.error,
            "edge": None
            if edge is None
            else {
                "source": edge.source,
                "target": edge.target,
                "targets": list(edge.targets),
                "label": edge.label,
            },
            "visits": dict(self.visits),
            "fired": {f"{source}\u2192{target}": count for (source, target), count in self.fired.items()},
            "decided": [decision.model_dump(mode="json") for decision in self.decided],
            "decisions_so_far": self.decisions_so_far,
        }
        if state:
            data["state"] = self.state
        return data
