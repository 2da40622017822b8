"""Pauses for a person: input requests, approvals and breakpoints, and how answers are read.

A pause has an id. Answers name that id, so an answer meant for a pause that has
already been answered, or that belongs to an earlier run, is ignored rather than
applied to the wrong question.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

import pydantic

from .errors import ResumeError

__all__ = ["Approval", "BREAK_ANSWERS", "Pause", "read_approval", "read_break", "read_input"]

BREAK_ANSWERS = ("continue", "step", "stop")
"""What a breakpoint pause takes: go on to the next breakpoint, pause before the next
node wherever it runs, or end the run ``aborted``."""


class Pause(pydantic.BaseModel):
    """An open request for a person: ``kind="input"``, ``"approval"`` or ``"breakpoint"``."""

    model_config = pydantic.ConfigDict(frozen=True, defer_build=True)

    id: str
    """Unique per pause; answers must carry it."""
    kind: Literal["input", "approval", "breakpoint"]
    node: str
    step: int
    """The step the node runs as (input, a breakpoint before it) or ran as (approval, a breakpoint after it)."""
    path: str = ""
    """Where the node is: its name, or ``outer/inner/node`` inside sub-graphs."""
    branch: str | None = None
    """The parallel branch the node runs in (None on the main line)."""
    prompt: str = ""
    options: tuple[str, ...] | None = None
    """Choices to offer as buttons; None for free text."""
    input_kind: str = "text"
    """For input pauses: "text", "number", "choice", ... (a hint for the UI)."""
    slot: str | None = None
    """Input pauses: where the answer is stored, so a re-run node gets it back."""
    at: Literal["before", "after"] | None = None
    """Breakpoint pauses: the node has not run yet (before), or has run and its routing waits (after)."""
    update: Any = None
    """Breakpoint pauses after a node: the update it returned (as JSON)."""


class Approval(pydantic.BaseModel):
    """A person's verdict on an approval pause; ``update`` is their correction to the state."""

    model_config = pydantic.ConfigDict(frozen=True, extra="forbid", defer_build=True)

    approved: bool
    update: dict[str, Any] | None = None


def read_approval(answer: Any) -> Approval:
    """Accept ``True`` / ``False`` / ``{"approved": ..., "update": {...}}`` / an Approval."""
    if isinstance(answer, Approval):
        return answer
    if isinstance(answer, bool):
        return Approval(approved=answer)
    if isinstance(answer, Mapping):
        try:
            return Approval.model_validate(answer)
        except pydantic.ValidationError as exc:
            raise ResumeError(
                f"an approval answer must look like {{'approved': bool, 'update': {{...}}}}: {exc}"
            ) from None
    raise ResumeError(
        f"an approval answer must be True, False or {{'approved': bool, 'update': {{...}}}}; got {answer!r}"
    )


def read_break(answer: Any) -> str:
    """Accept ``"continue"``, ``"step"`` or ``"stop"`` (any case) for a breakpoint pause."""
    word = answer.strip().lower() if isinstance(answer, str) else None
    if word not in BREAK_ANSWERS:
        raise ResumeError(f"a breakpoint is answered with 'continue', 'step' or 'stop'; got {answer!r}")
    return word


def read_input(pause: Pause, answer: Any) -> Any:
    """Check an input answer against the pause's options."""
    if pause.options is not None and answer not in pause.options:
        raise ResumeError(
            f"{answer!r} is not one of the options for {pause.prompt!r}: {', '.join(map(repr, pause.options))}"
        )
    return answer
