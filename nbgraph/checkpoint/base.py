"""The checkpointer interface and the checkpoint record."""

from __future__ import annotations

import json
from collections.abc import Mapping
from contextlib import AbstractContextManager
from types import MappingProxyType
from typing import Any, Literal, NamedTuple, Protocol, runtime_checkable

import pydantic_core

from ..history import Step
from ..interrupts import Pause

__all__ = ["Checkpoint", "Checkpointer", "Status"]

Status = Literal["running", "interrupted", "failed", "aborted", "denied", "done"]


_NO_ANSWERS: Mapping[str, Any] = MappingProxyType({})


class Checkpoint(NamedTuple):
    """The state after ``step`` and where the run goes from there.

    ``next`` is the node to run next (None when an approval must be settled first,
    or the run is over). ``answers`` holds every input answered so far, by slot, so
    a node re-run after a resume gets its answers back. A named tuple, like
    :class:`~nbgraph.Step`, because a run with a store builds one per step.
    """

    thread: str
    graph: str
    step: int
    state: Mapping[str, Any]
    next: str | None
    status: Status = "running"
    reason: str | None = None
    pending: Pause | None = None
    answers: Mapping[str, Any] = _NO_ANSWERS
    record: Step | None = None

    def with_status(self, status: Status, **changes: Any) -> Checkpoint:
        return self._replace(status=status, **changes)

    def to_json(self) -> str:
        """JSON text (pydantic's serializer; a value it cannot serialize is an error, never pickled)."""
        return json.dumps(
            {
                "thread": self.thread,
                "graph": self.graph,
                "step": self.step,
                "state": pydantic_core.to_jsonable_python(dict(self.state)),
                "next": self.next,
                "status": self.status,
                "reason": self.reason,
                "pending": None if self.pending is None else self.pending.model_dump(mode="json"),
                "answers": pydantic_core.to_jsonable_python(dict(self.answers)),
                "record": None if self.record is None else self.record.to_json(),
            },
            separators=(",", ":"),
        )

    @classmethod
    def from_json(cls, text: str | bytes) -> Checkpoint:
        data = json.loads(text)
        return cls(
            thread=data["thread"],
            graph=data["graph"],
            step=data["step"],
            state=data["state"],
            next=data["next"],
            status=data["status"],
            reason=data.get("reason"),
            pending=None if data.get("pending") is None else Pause.model_validate(data["pending"]),
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
