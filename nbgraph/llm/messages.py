"""Conversation messages: what LLM nodes read from ``state.messages`` and append to it.

Every message has an ``id`` (the append reducer deduplicates by it, so a replayed
checkpoint never repeats a message) and assistant and tool messages name the
``node`` that produced them, so a shared conversation says who said what.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Annotated, Any, Literal

import pydantic

from ..names import new_id
from ..reducers import append, merge

__all__ = [
    "AssistantMessage",
    "Message",
    "MessagesState",
    "SystemMessage",
    "ToolCallRequest",
    "ToolMessage",
    "UserMessage",
    "as_messages",
    "estimate_tokens",
    "identify",
    "state_field",
    "to_openai",
    "window_start",
]


def _new_id() -> str:
    return new_id("msg_", 8)


class _Message(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(frozen=True, extra="forbid")

    id: str = pydantic.Field(default_factory=_new_id)
    content: str = ""


class SystemMessage(_Message):
    role: Literal["system"] = "system"


class UserMessage(_Message):
    role: Literal["user"] = "user"


class ToolCallRequest(pydantic.BaseModel):
    """A call the model asked for: ``arguments`` is the parsed JSON object it sent."""

    model_config = pydantic.ConfigDict(frozen=True, extra="forbid")

    id: str
    name: str
    arguments: dict[str, Any] = {}
    raw_arguments: str | None = None
    """The argument text as sent, when it was not a JSON object (reported back as an error)."""


class AssistantMessage(_Message):
    role: Literal["assistant"] = "assistant"
    tool_calls: tuple[ToolCallRequest, ...] = ()
    node: str | None = None
    """The graph node whose model call produced this message."""


class ToolMessage(_Message):
    role: Literal["tool"] = "tool"
    tool_call_id: str
    name: str
    is_error: bool = False
    node: str | None = None


Message = Annotated[
    SystemMessage | UserMessage | AssistantMessage | ToolMessage,
    pydantic.Field(discriminator="role"),
]
"""Any conversation message; discriminated by ``role``."""

_MESSAGE: pydantic.TypeAdapter[Any] = pydantic.TypeAdapter(Message)


def _text_is_a_user_message(value: Any) -> Any:
    return UserMessage(content=value) if isinstance(value, str) else value


_Incoming = Annotated[Message, pydantic.BeforeValidator(_text_is_a_user_message)]


class MessagesState(pydantic.BaseModel):
    """A state base for conversational graphs: subclass it and add your fields.

    ``messages`` appends (deduplicated by id) and takes plain strings as user
    messages; ``guard`` is where :func:`nbgraph.prebuilt.input_guard` leaves its
    findings.
    """

    messages: Annotated[list[_Incoming], append] = []
    guard: Annotated[dict[str, Any], merge] = {}


def as_messages(items: Iterable[Any]) -> list[Any]:
    """Messages from state: models pass through; dicts (a restored checkpoint) and
    plain strings become models. A graph's state gives every message its id when it
    enters (:func:`identify`); an id-less item read here gets a new one each time."""
    out = []
    for item in items:
        if isinstance(item, _Message):
            out.append(item)
        elif isinstance(item, str):
            out.append(UserMessage(content=item))
        else:
            out.append(_MESSAGE.validate_python(item))
    return out


def identify(item: Any) -> Any:
    """A message without an id as the model, with an id, that a dict state keeps (what
    ``MessagesState`` stores): a plain string is a user message, a dict is validated;
    anything else (a dict that is no message) is returned as it is."""
    if isinstance(item, str):
        return UserMessage(content=item)
    try:
        return _MESSAGE.validate_python(item)
    except pydantic.ValidationError:
        return item


def state_field(state: Any, name: str) -> Any:
    """A field of any state (a dict, a dict view or a model), or None; lets the
    conversational nodes and their pure conditions run on any of them."""
    if isinstance(state, Mapping):
        return state.get(name)
    return getattr(state, name, None)


def estimate_tokens(text: str) -> int:
    """A rough token count (four characters a token) for offline models and trimming."""
    return len(text) // 4 + 1


def window_start(messages: Sequence[Any], max_tokens: int) -> int:
    """Where the newest messages that fit in ``max_tokens`` (estimated) begin.

    The newest message always counts, and the window never opens on a tool reply
    whose call it would cut off.
    """
    total = 0
    start = len(messages)
    for i in range(len(messages) - 1, -1, -1):
        total += estimate_tokens(messages[i].content or "")
        if total > max_tokens and start < len(messages):
            break
        start = i
    while start < len(messages) - 1 and messages[start].role == "tool":
        start += 1
    return start


def to_openai(message: Any) -> dict[str, Any]:
    """The chat-completions wire form of a message."""
    role = message.role
    if role == "assistant":
        wire: dict[str, Any] = {"role": "assistant", "content": message.content or None}
        if message.tool_calls:
            wire["tool_calls"] = [
                {
                    "id": call.id,
                    "type": "function",
                    "function": {
                        "name": call.name,
                        "arguments": call.raw_arguments
                        if call.raw_arguments is not None
                        else json.dumps(call.arguments),
                    },
                }
                for call in message.tool_calls
            ]
        return wire
    if role == "tool":
        return {"role": "tool", "tool_call_id": message.tool_call_id, "content": message.content}
    return {"role": role, "content": message.content}
