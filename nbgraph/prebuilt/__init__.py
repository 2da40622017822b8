"""Reusable nodes for conversational graphs.

- :func:`input_guard`: the first node of a chat pipeline; cleans the newest user
  message, flags prompt-injection patterns and keeps the prompt's window within a
  token budget.
- :func:`nudge`: the anti-premature-finish reminder, capped, with the pure
  :func:`needs_nudge` for the routing condition.
- :func:`heartbeat`: a graph that runs an agent graph once per cycle, a fresh run
  each time, until it is done, blocked or out of cycles.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

from ..llm.messages import UserMessage, as_messages, state_field, window_start
from .heartbeat import CycleOutcome, HeartbeatState, heartbeat, read_outcome

__all__ = [
    "INJECTION_PATTERNS",
    "MAX_NUDGES",
    "CycleOutcome",
    "HeartbeatState",
    "heartbeat",
    "input_guard",
    "needs_nudge",
    "nudge",
    "read_outcome",
]

INJECTION_PATTERNS: tuple[str, ...] = (
    r"ignore\s+(?:all\s+|any\s+)?(?:the\s+)?(?:previous|prior|above|earlier)\s+(?:instructions|prompts?|rules)",
    r"disregard\s+(?:all\s+|any\s+)?(?:the\s+)?(?:previous|prior|above|earlier|your)\s+(?:instructions|prompts?|rules)",
    r"forget\s+(?:all\s+|everything\s+)?(?:your|the|previous)\s+(?:instructions|rules)",
    r"you\s+are\s+now\s+(?:in\s+)?(?:developer|dan|jailbreak|unrestricted)",
    r"(?:reveal|print|show|repeat)\s+(?:me\s+)?(?:your|the)\s+(?:system\s+prompt|hidden\s+instructions)",
    r"</?\s*(?:system|assistant)\s*>",
)
"""Regular expressions (case-insensitive) that flag a user message as a likely injection."""

# Control characters, except tab, newline and carriage return.
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u200b-\u200f\u2028-\u202e\u2060-\u2064\ufeff]")

MAX_NUDGES = 3
NUDGE_TEXT = (
    "You responded with text, but the task is not complete yet. "
    "Continue by calling the tools; finish only when the work is done."
)


def input_guard(
    *,
    max_tokens: int | None = 96_000,
    patterns: Sequence[str] = INJECTION_PATTERNS,
    strip: bool = True,
) -> Callable[[Any], dict[str, Any]]:
    """A node that checks the conversation before an LLM node sees it.

    It strips control and invisible formatting characters from the newest user
    message (replacing it by id), flags it when it matches a prompt-injection
    pattern, and moves the prompt's window start so the newest messages fit in
    ``max_tokens`` (estimated). Findings go to ``state.guard``: ``flagged`` (the
    patterns matched), ``window_start`` (the id of the oldest message LLM nodes
    show) and ``dropped`` (messages outside the window). It never removes anything
    from the state. Route on ``state.guard["flagged"]`` to refuse flagged input.
    """
    compiled = [re.compile(p, re.IGNORECASE) for p in patterns]

    def guard(state: Any) -> dict[str, Any]:
        messages = as_messages(state_field(state, "messages") or ())
        update: dict[str, Any] = {}
        flagged: list[str] = []
        newest = next((m for m in reversed(messages) if m.role == "user"), None)
        if newest is not None:
            text = newest.content
            if strip:
                text = _CONTROL.sub("", text)
            flagged = [p.pattern for p in compiled if p.search(text)]
            if text != newest.content:
                cleaned = newest.model_copy(update={"content": text})
                update["messages"] = [cleaned]
                messages = [cleaned if m.id == newest.id else m for m in messages]
        dropped = window_start(messages, max_tokens) if max_tokens is not None and messages else 0
        start = messages[dropped].id if messages else None
        update["guard"] = {"flagged": flagged, "window_start": start, "dropped": dropped}
        return update

    guard.__name__ = "input_guard"
    return guard


def needs_nudge(state: Any, *, max_nudges: int = MAX_NUDGES) -> bool:
    """Pure routing condition: the last assistant message is text only and the
    nudge budget is not spent (after it is, the model may finish)."""
    messages = as_messages(state_field(state, "messages") or ())
    last = next((m for m in reversed(messages) if m.role == "assistant"), None)
    if last is None or last.tool_calls:
        return False
    return (state_field(state, "nudge_count") or 0) < max_nudges


def nudge(state: Any) -> dict[str, Any]:
    """Remind the model that the work is not done, and count the reminder.

    Pair it with :func:`needs_nudge`: ``agent -> nudge if needs_nudge(state)``,
    ``nudge -> agent``. The count stops the loop after :data:`MAX_NUDGES`.
    """
    return {"messages": [UserMessage(content=NUDGE_TEXT)], "nudge_count": (state_field(state, "nudge_count") or 0) + 1}
