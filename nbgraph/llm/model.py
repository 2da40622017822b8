"""The model interface, the offline ``ScriptedModel``, and how a node finds its model.

A model is anything with ``name`` and ``async complete(request, on_text) ->
Completion``: it sends the conversation, calls ``on_text`` with each streamed piece
of text, and returns the whole reply with its token usage and cost.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from .messages import ToolCallRequest, estimate_tokens

__all__ = [
    "PRICES",
    "ChatModel",
    "ChatRequest",
    "Completion",
    "ModelError",
    "Reply",
    "ScriptedModel",
]

PRICES: dict[str, tuple[float, float]] = {
    # US dollars per million tokens: (prompt, completion). Extend or override freely:
    # ``nbgraph.llm.PRICES["my-model"] = (0.5, 1.5)``. Unknown models cost 0.
    "gpt-4o": (2.50, 10.00),
    "gpt-4o-mini": (0.15, 0.60),
    "gpt-4.1": (2.00, 8.00),
    "gpt-4.1-mini": (0.40, 1.60),
    "gpt-4.1-nano": (0.10, 0.40),
    "o4-mini": (1.10, 4.40),
}


class ModelError(RuntimeError):
    """The model could not be reached or used: says which model and what to fix."""


@dataclass(frozen=True, slots=True)
class ChatRequest:
    messages: Sequence[Any]
    """The conversation, system prompt first (message models)."""
    tools: Sequence[dict[str, Any]] = ()
    """Tool definitions in the chat-completions ``tools`` format."""
    tool_choice: str = "auto"
    """``auto``, ``required`` or ``none``."""
    node: str | None = None
    """The graph node that asks, by path (an LLM node fills it in); not sent to the model: a recording
    names it, and a request it cannot answer says which node asked."""


@dataclass(frozen=True, slots=True)
class Completion:
    text: str = ""
    tool_calls: tuple[ToolCallRequest, ...] = ()
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float = 0.0
    finish_reason: str | None = None

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


@runtime_checkable
class ChatModel(Protocol):
    name: str

    async def complete(self, request: ChatRequest, on_text: Callable[[str], None]) -> Completion: ...


def cost_of(model: str, prompt_tokens: int, completion_tokens: int, prices: tuple[float, float] | None = None) -> float:
    """Dollars for a call, from ``prices`` or the :data:`PRICES` table (0 if unknown)."""
    per_million = prices or PRICES.get(model)
    if per_million is None:
        return 0.0
    return (prompt_tokens * per_million[0] + completion_tokens * per_million[1]) / 1_000_000


@dataclass(frozen=True, slots=True)
class Reply:
    """One scripted model reply: text, tool calls, or both."""

    text: str = ""
    tool_calls: Sequence[tuple[str, dict[str, Any]]] = field(default_factory=tuple)


class ScriptedModel:
    """A deterministic offline model with the same interface as :class:`OpenAIModel`.

    ``replies`` is a list used in order (a string is a text reply; ``Reply`` adds tool
    calls) or a function of the conversation returning one. Text streams in pieces of
    ``chunk_chars`` characters; tokens are estimated at four characters each.
    """

    def __init__(
        self,
        replies: Sequence[str | Reply] | Callable[[Sequence[Any]], str | Reply],
        *,
        name: str = "scripted",
        chunk_chars: int = 8,
        prices: tuple[float, float] | None = None,
    ) -> None:
        if chunk_chars < 1:
            raise ValueError("chunk_chars must be at least 1")
        self.name = name
        self.chunk_chars = chunk_chars
        self.prices = prices
        self.calls: list[ChatRequest] = []
        """Every request received, for tests and teaching."""
        self._replies = replies if callable(replies) else list(replies)

    def __repr__(self) -> str:
        return f"ScriptedModel(name={self.name!r})"

    async def complete(self, request: ChatRequest, on_text: Callable[[str], None]) -> Completion:
        self.calls.append(request)
        reply = self._next_reply(request)
        if isinstance(reply, str):
            reply = Reply(text=reply)
        text = reply.text
        for start in range(0, len(text), self.chunk_chars):
            on_text(text[start : start + self.chunk_chars])
        calls = tuple(
            ToolCallRequest(id=f"call_{len(self.calls)}_{i}", name=name, arguments=dict(arguments))
            for i, (name, arguments) in enumerate(reply.tool_calls)
        )
        prompt = sum(estimate_tokens(getattr(m, "content", "") or "") for m in request.messages)
        completion = (estimate_tokens(text) if text else 0) + 10 * len(calls)
        return Completion(
            text=text,
            tool_calls=calls,
            prompt_tokens=prompt,
            completion_tokens=completion,
            cost=cost_of(self.name, prompt, completion, self.prices),
            finish_reason="tool_calls" if calls else "stop",
        )

    def _next_reply(self, request: ChatRequest) -> str | Reply:
        if callable(self._replies):
            return self._replies(request.messages)
        if len(self.calls) > len(self._replies):
            raise ModelError(
                f"ScriptedModel {self.name!r} ran out of replies: it was given {len(self._replies)} "
                f"and this is call {len(self.calls)}"
            )
        return self._replies[len(self.calls) - 1]
