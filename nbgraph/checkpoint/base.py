"""The checkpoint record and the checkpointer interface."""

from __future__ import annotations

import json
from collections.abc import Mapping
from contextlib import AbstractContextManager
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Literal, NamedTuple, Protocol, runtime_checkable

from ..history import Frame, Step
from ..state import to_jsonable

if TYPE_CHECKING:
    from ..pauses import Pause

__all__ = ["Checkpoint", "Checkpointer", "Status"]

Status = Literal["running", "interrupted", "failed", "aborted", "denied", "done"]


_NO_ANSWERS: Mapping[str, Any] = MappingProxyType({})


class Checkpoint(NamedTuple):
    """The state after ``step`` and where the run goes from there.

    ``frames`` are the nodes to run next (none when an approval must be settled
    first, or the run is over); ``pauses`` the requests open when the run stopped
    (several at once when parallel branches wait). ``answers`` holds every input
    answered so far, by slot, so a node re-run after a resume gets its answers back.
    A named tuple, like :class:`~nbgraph.Step`, because a run with a store builds one
    per step.
    """

    thread: str
    graph: str
    step: int
    state: Mapping[str, Any]
    frames: tuple[Frame, ...] = ()
    status: Status = "running"
    reason: str | None = None
    pauses: tuple[Pause, ...] = ()
    answers: Mapping[str, Any] = _NO_ANSWERS
    record: Step | None = None

    @property
    def next(self) -> str | None:
        """The node to run next on the main line, or None."""
        return self.frames[0].node if self.frames else None

    @property
    def pending(self) -> Pause | None:
        """The first open request, or None."""
        return self.pauses[0] if self.pauses else None

    def with_status(self, status: Status, **changes: Any) -> Checkpoint:
        return self._replace(status=status, **changes)

    def to_json(self) -> str:
        """JSON text (pydantic's serializer; a value it cannot serialize is an error, never pickled)."""
        return json.dumps(
            {
                "thread": self.thread,
                "graph": self.graph,
                "step": self.step,
                "state": to_jsonable(dict(self.state)),
                "frames": [frame.to_json() for frame in self.frames],
                "status": self.status,
                "reason": self.reason,
                "pauses": [pause.model_dump(mode="json") for pause in self.pauses],
                "answers": to_jsonable(dict(self.answers)),
                "record": None if self.record is None else self.record.to_json(),
            },
            separators=(",", ":"),
        )

    @classmethod
    def from_json(cls, text: str | bytes) -> Checkpoint:
        from ..pauses import Pause

        data = json.loads(text)
        return cls(
            thread=data["thread"],
            graph=data["graph"],
            step=data["step"],
            state=data["state"],
            frames=tuple(Frame.from_json(f) for f in data.get("frames") or ()),
            status=data["status"],
            reason=data.get("reason"),
            pauses=tuple(Pause.model_validate(p) for p in data.get("pauses") or ()),
            answers=data.get("answers") or {},
            record=None if data.get("record") is None else Step.from_json(data["record"]),
        )


@runtime_checkable
class Checkpointer(Protocol):
    """Where runs save their progress, one checkpoint per step, keyed by thread.

    ``put`` replaces any checkpoint already stored for the same ``(thread, step)``.
    ``lock`` is held by a run for its whole life: one writer per thread.
    """

    def put(self, thread: str, checkpoint: Checkpoint) -> None: ...

    def get(self, thread: str, step: int | None = None) -> Checkpoint | None: ...

    def list(self, thread: str) -> list[Checkpoint]: ...

    def lock(self, thread: str) -> AbstractContextManager[None]: ...
