"""The event models: what a run reports as it goes, and the NDJSON wire protocol.

Every event has a ``type`` (``run-start``, ``node-enter``, ``text-delta``,
``tool-call``, ``tool-result``, ``node-exit``, ``route``, ``interrupt``, ``answer``,
``error``, ``done``), the run's ``thread``, the ``step`` it belongs to, and where it
happened: the ``path`` of the node (``research/search`` inside a sub-graph) and its
parallel ``branch``. Events are only built when someone listens, so an unobserved
run pays nothing for them; the engine builds its own without re-validating them.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from functools import cache
from typing import Annotated, Any, Literal, TypeVar

import pydantic

from .pauses import Pause

__all__ = [
    "Done",
    "ErrorEvent",
    "Event",
    "Interrupt",
    "NodeEnter",
    "NodeExit",
    "Answer",
    "Route",
    "RunStart",
    "TextDelta",
    "ToolCall",
    "ToolResult",
    "checked",
    "event_from_dict",
    "parse_ndjson",
    "to_ndjson",
]


class _Event(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(frozen=True, extra="forbid", defer_build=True)

    thread: str
    """The run's thread id."""
    step: int
    """The step the event belongs to (0 before the first node runs)."""
    path: str = ""
    """Where it happened: the node's name, ``outer/inner/node`` inside sub-graphs, "" for the run."""
    branch: str | None = None
    """The parallel branch it happened in (None on the main line)."""


class RunStart(_Event):
    type: Literal["run-start"] = "run-start"
    graph: str
    resumed: bool = False
    """True when the run continues from a checkpoint."""


class NodeEnter(_Event):
    type: Literal["node-enter"] = "node-enter"
    node: str
    visit: int
    """1 on the node's first execution in this run, 2 on the next, ..."""
    rerun: bool = False
    """True when a resume runs the node again from its start: its code up to the pause
    it stopped at runs a second time (``request_input`` then returns the stored answer)."""


class TextDelta(_Event):
    type: Literal["text-delta"] = "text-delta"
    node: str
    text: str


class ToolCall(_Event):
    type: Literal["tool-call"] = "tool-call"
    node: str
    call_id: str
    name: str
    args: Any = None


class ToolResult(_Event):
    type: Literal["tool-result"] = "tool-result"
    node: str
    call_id: str
    name: str
    result: Any = None
    is_error: bool = False


class NodeExit(_Event):
    type: Literal["node-exit"] = "node-exit"
    node: str
    duration: float
    """Seconds the node ran, not counting time spent waiting for a person."""
    update: Any = None
    tokens: int = 0
    cost: float = 0.0


class Route(_Event):
    type: Literal["route"] = "route"
    source: str
    target: str
    label: str | None = None
    unconditional: bool = False


class Interrupt(_Event):
    type: Literal["interrupt"] = "interrupt"
    pause: Pause


class Answer(_Event):
    """A pause got its answer (live, or brought by a resume), and the run goes on."""

    type: Literal["answer"] = "answer"
    pause_id: str
    answer: Any = None


class ErrorEvent(_Event):
    type: Literal["error"] = "error"
    node: str | None = None
    error: str
    """The error message, naming the node, edge or field at fault."""
    error_type: str = ""


class Done(_Event):
    type: Literal["done"] = "done"
    outcome: str
    reason: str | None = None
    hit_max_steps: bool = False


Event = Annotated[
    RunStart
    | NodeEnter
    | TextDelta
    | ToolCall
    | ToolResult
    | NodeExit
    | Route
    | Interrupt
    | Answer
    | ErrorEvent
    | Done,
    pydantic.Field(discriminator="type"),
]
"""Any event; discriminated by ``type``."""

EVENT_TYPES: dict[str, type[pydantic.BaseModel]] = {
    cls.model_fields["type"].default: cls
    for cls in (
        RunStart,
        NodeEnter,
        TextDelta,
        ToolCall,
        ToolResult,
        NodeExit,
        Route,
        Interrupt,
        Answer,
        ErrorEvent,
        Done,
    )
}
"""Event classes by their ``type``."""


_E = TypeVar("_E", bound=pydantic.BaseModel)
_new_object = object.__new__
_set = object.__setattr__


def checked(cls: type[_E], values: dict[str, Any]) -> _E:
    """An event of ``values`` already checked, every field given in the model's order: what
    ``model_construct`` makes, at a fifth of its cost (the engine builds one per node and
    per route while anyone listens)."""
    event = _new_object(cls)
    _set(event, "__dict__", values)
    _set(event, "__pydantic_fields_set__", set(values))
    _set(event, "__pydantic_extra__", None)
    _set(event, "__pydantic_private__", None)
    return event


@cache
def _adapter() -> pydantic.TypeAdapter[Any]:
    # Built on first use: a union adapter takes milliseconds that `import nbgraph` need not pay.
    return pydantic.TypeAdapter(Event)


def event_from_dict(data: Any) -> Any:
    """Validate one event from its JSON form (a dict with a ``type``)."""
    return _adapter().validate_python(data)


def to_ndjson(events: Iterable[pydantic.BaseModel]) -> str:
    """Serialize events as newline-delimited JSON, one event per line."""
    return "".join(event.model_dump_json() + "\n" for event in events)


def parse_ndjson(text: str) -> Iterator[Any]:
    """Parse NDJSON back into event models (the inverse of :func:`to_ndjson`).

    Lines end at ``\\n`` only (a ``\\r`` before it is JSON whitespace): JSON writes U+2028,
    U+0085 and the like as they are, and ``str.splitlines()`` would cut a string there.
    """
    for number, line in enumerate(text.split("\n"), start=1):
        if not line.strip(" \t\r"):  # JSON's whitespace only: a line of U+2028 is not blank
            continue
        try:
            yield _adapter().validate_json(line)
        except pydantic.ValidationError as exc:
            raise ValueError(f"line {number} is not an nbgraph event: {exc}") from None
