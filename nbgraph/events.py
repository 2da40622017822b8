"""The event models: what a run reports as it goes, and the NDJSON wire protocol.

Every event has a ``type`` (``run-start``, ``node-enter``, ``text-delta``,
``tool-call``, ``tool-result``, ``node-exit``, ``route``, ``interrupt``, ``answer``,
``error``, ``done``), the run's ``thread``, the ``step`` it belongs to, and where it
happened: the ``path`` of the node (``research/search`` inside a sub-graph) and its
parallel ``branch``. Events are only built when someone listens, so an unobserved
run pays nothing for them; the engine builds its own without re-validating them.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from functools import cache
from typing import Annotated, Any, Literal, TypeVar

import pydantic

from .decision import Decision
from .pauses import Pause

__all__ = [
    "Custom",
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
    update: dict[str, Any] | None = None
    """What the node returned (a node's update is a mapping or None): a replay folds it into the state."""
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
    decision: Decision | None = None
    """Who answered, when, how, on what they were shown (None in traces older than the record)."""


class ErrorEvent(_Event):
    type: Literal["error"] = "error"
    node: str | None = None
    error: str
    """The error message, naming the node, edge or field at fault."""
    error_type: str = ""


class Custom(_Event):
    """Data a node streams for whoever listens (``ctx.emit("custom", data=...)``; a LangGraph
    node's ``get_stream_writer()``): shown in the view's log, kept in the step's record."""

    type: Literal["custom"] = "custom"
    node: str | None = None
    data: Any = None


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
    | Custom
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
        Custom,
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


def parse_ndjson(text: str | bytes) -> Iterator[Any]:
    """Parse NDJSON back into event models (the inverse of :func:`to_ndjson`).

    Lines end at ``\\n`` only (a ``\\r`` before it is JSON whitespace): JSON writes U+2028,
    U+0085 and the like as they are, and ``str.splitlines()`` would cut a string there.

    Raises:
        ValueError: a line is not an nbgraph event, or the bytes are not UTF-8. The error
            names the line (and the column, where one is at fault) and quotes at most about
            80 characters of it, however long the line.
    """
    for _, event in numbered_events(text):
        yield event


def numbered_events(text: str | bytes) -> Iterator[tuple[int, Any]]:
    """:func:`parse_ndjson`'s events, each with the number of the line it was read from."""
    if isinstance(text, (bytes, bytearray)):
        text = decode_trace(bytes(text), "the NDJSON text")
    elif not isinstance(text, str):
        raise TypeError(f"parse_ndjson reads NDJSON text (str or bytes), got {type(text).__name__}")
    adapter = _adapter()
    for number, line in enumerate(text.split("\n"), start=1):
        if not line.strip(" \t\r"):  # JSON's whitespace only: a line of U+2028 is not blank
            continue
        try:
            yield number, adapter.validate_json(line)
        except pydantic.ValidationError as exc:
            raise ValueError(f"line {number} is not an nbgraph event: {_fault(exc, line)}") from None


def decode_trace(data: bytes, source: str) -> str:
    """``data`` as text, or a ValueError naming the line and column of its first byte that is
    not UTF-8 (``source`` says whose bytes they are: "the NDJSON trace at 'run.ndjson'")."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line_start = data.rfind(b"\n", 0, exc.start) + 1
        line = data.count(b"\n", 0, exc.start) + 1
        column = len(data[line_start : exc.start].decode("utf-8")) + 1  # (valid: the first bad byte is at exc.start)
        bad = data[exc.start : min(exc.end, exc.start + 4)].hex()
        raise ValueError(
            f"line {line}, column {column} of {source} is not UTF-8: byte 0x{bad} at offset {exc.start} ({exc.reason})"
        ) from None


def quoted(text: str, limit: int = 80) -> str:
    """``text`` as a Python literal cut to about ``limit`` characters, escapes included: an
    error about a megabyte line must not be a megabyte long."""
    shown = repr(text[:limit])
    if len(text) <= limit and len(shown) <= limit + 2:
        return shown
    return shown[: limit + 1] + "\u2026" + shown[0]


_JSON_ERROR = re.compile(r"(.*) at line \d+ column (\d+)", re.DOTALL)
_SURROGATE = re.compile("[\ud800-\udfff]")
_SHOWN_ERRORS = 3


def _fault(exc: pydantic.ValidationError, line: str) -> str:
    """What is wrong with ``line`` and where, in a few bounded words (pydantic's own message
    quotes the input, and an unknown type or field name can be any length)."""
    errors = exc.errors(include_url=False)
    first = errors[0]
    kind = first["type"]
    if kind == "json_invalid":
        found = _JSON_ERROR.fullmatch(str(first.get("ctx", {}).get("error", "")))
        if found is None:
            return f"not valid JSON; {_excerpt(line)}"
        column = _character_column(line, int(found.group(2)))
        return f"at column {column}, not valid JSON ({found.group(1)}); {_excerpt(line, column)}"
    if kind == "string_unicode":  # a str holding a lone surrogate, which JSON text cannot be
        found = _SURROGATE.search(line)
        column = found.start() + 1 if found is not None else None
        where = f"at column {column}, " if column is not None else ""
        return f"{where}a lone surrogate, not text; {_excerpt(line, column)}"
    if not first["loc"]:
        if kind == "union_tag_not_found":
            return f'the object has no "type" naming the event; {_excerpt(line)}'
        if kind == "union_tag_invalid":
            tag = first["input"].get("type") if isinstance(first["input"], dict) else None
            named = quoted(tag, 40) if isinstance(tag, str) else _json_kind(tag)
            return f"unknown event type {named} (one of {', '.join(EVENT_TYPES)}); {_excerpt(line)}"
        return f"an event is a JSON object, not {_json_kind(first['input'])}; {_excerpt(line)}"
    faults = [_field_fault(error) for error in errors[:_SHOWN_ERRORS]]
    if len(errors) > _SHOWN_ERRORS:
        faults.append(f"and {len(errors) - _SHOWN_ERRORS} more")
    return f"{'; '.join(faults)}; {_excerpt(line)}"


def _field_fault(error: Any) -> str:
    event, *inside = error["loc"]
    field = quoted(".".join(str(part) for part in inside), 40)
    if error["type"] == "missing":
        return f"a {event} event needs field {field}"
    if error["type"] == "extra_forbidden":
        return f"a {event} event has no field {field}"
    if error["type"] in ("dict_type", "model_type"):
        return f"field {field} of a {event} event must be a JSON object, not {_json_kind(error['input'])}"
    message = str(error["msg"]).removeprefix("Input ")
    return f"field {field} of a {event} event {message[:100]}"


def _json_kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true or false"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, (list, tuple)):
        return "an array"
    return "an object" if isinstance(value, dict) else type(value).__name__


def _character_column(line: str, byte_column: int) -> int:
    """The character column of a 1-based UTF-8 byte column (pydantic counts bytes), reading
    no more of the line than the column: a column near the start of a long line is cheap."""
    head = line[:byte_column].encode("utf-8", "surrogatepass")[: byte_column - 1]
    return len(head.decode("utf-8", "ignore")) + 1


def _excerpt(line: str, column: int | None = None) -> str:
    """The start of ``line``, or, for a column far along it, the text around that column."""
    if column is None or column <= 60:
        return f"the line starts: {quoted(line)}"
    start = column - 41
    return f"near column {column}: \u2026{quoted(line[start : start + 81])}"  # (81: quoted marks the cut)
