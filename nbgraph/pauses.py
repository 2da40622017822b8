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

__all__ = [
    "Approval", "BREAK_ANSWERS", "BudgetFigures", "Pause", "Rerun", "read_approval", "read_break", "read_budget", "read_input",
]

BREAK_ANSWERS = ("continue", "step", "stop")
"""What a breakpoint pause takes: go on to the next breakpoint, pause before the next
node wherever it runs, or end the run ``aborted``."""


class Rerun(pydantic.BaseModel):
    """What a resume runs again when it continues a pause from a checkpoint: the node's
    code from its start up to the pause, with the model and tool calls made on the way.

    A live run answered where it waits runs nothing again; a run resumed from its
    checkpoint (``g.resume``, after a kernel restart, or a view's answer to a run that
    has ended ``interrupted``) does, so these calls are made a second time.
    """

    model_config = pydantic.ConfigDict(frozen=True, defer_build=True)

    path: str
    """The node that runs again (``outer/inner`` inside sub-graphs)."""
    model_calls: int = 0
    tool_calls: tuple[str, ...] = ()
    """The tools called before the pause, by name, in call order."""
    answered: int = 0
    """Earlier questions of this call already answered: a resume gives them their answers back."""

    @pydantic.computed_field  # type: ignore[prop-decorator]
    @property
    def note(self) -> str:
        """One sentence for a person about to answer."""
        made = []
        if self.model_calls:
            made.append(f"{self.model_calls} model call{'s' if self.model_calls != 1 else ''}")
        if self.tool_calls:
            made.append(f"tool{'s' if len(self.tool_calls) != 1 else ''} {', '.join(self.tool_calls)}")
        done = f", making {' and '.join(made)} again" if made else ""
        kept = f" (its {self.answered} earlier answer{'s' if self.answered != 1 else ''} kept)" if self.answered else ""
        return f"a resume runs {self.path!r} again from its start{done}{kept}"


class BudgetFigures(pydantic.BaseModel):
    """A budget pause's figures: what the run has used, its limits, what the next step may
    take (the most one step has taken so far), and limits that would let it go on."""

    model_config = pydantic.ConfigDict(frozen=True, defer_build=True)

    used: dict[str, int | float]
    limits: dict[str, int | float]
    next: dict[str, int | float]
    over: tuple[str, ...]
    """The limits the next step would pass (or has passed): ``turns``, ``tokens``, ``cost``."""
    suggested: dict[str, int | float]
    """Raised limits that leave room for about as many steps again as the run has taken."""


class Pause(pydantic.BaseModel):
    """An open request for a person: ``kind="input"``, ``"approval"``, ``"breakpoint"`` or ``"budget"``."""

    model_config = pydantic.ConfigDict(frozen=True, defer_build=True)

    id: str
    """Unique per pause; answers must carry it."""
    kind: Literal["input", "approval", "breakpoint", "budget"]
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
    reruns: Rerun | None = None
    """What a resume from a checkpoint runs again to come back here (None: nothing, the
    node had not started or had finished)."""
    budget: BudgetFigures | None = None
    """Budget pauses: the figures; answered with raised limits (``{"tokens": 5000}``) or ``"stop"``."""


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


_LIMITS = ("turns", "tokens", "cost")


def read_budget(pause: Pause, answer: Any) -> dict[str, float] | str:
    """Accept raised limits (``{"tokens": 5000, "cost": 0.5}``, a ``Budget``) or ``"stop"``.

    Each raised limit must be a number above what the run has used; limits not named keep
    their value.
    """
    if isinstance(answer, str) and answer.strip().lower() == "stop":
        return "stop"
    if hasattr(answer, "_asdict"):  # a Budget
        answer = {key: value for key, value in answer._asdict().items() if value is not None and key != "ask"}
    if not isinstance(answer, Mapping) or not answer:
        raise ResumeError(
            f"a budget pause is answered with raised limits such as {{'tokens': 5000}} or 'stop'; got {answer!r}"
        )
    figures = pause.budget
    raised: dict[str, float] = {}
    for key, value in answer.items():
        if key == "seconds" or key not in _LIMITS:
            raise ResumeError(f"a budget pause raises {', '.join(_LIMITS)}; not {key!r}")
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value:
            raise ResumeError(f"the raised {key} limit must be a number, not {value!r}")
        used = figures.used.get(key, 0) if figures is not None else 0
        if value <= used:
            raise ResumeError(f"the raised {key} limit {value:g} is not above what the run has used ({used:g})")
        raised[key] = int(value) if key != "cost" else float(value)
    return raised


def read_input(pause: Pause, answer: Any) -> Any:
    """Check an input answer against the pause's options."""
    if pause.options is not None and answer not in pause.options:
        raise ResumeError(
            f"{answer!r} is not one of the options for {pause.prompt!r}: {', '.join(map(repr, pause.options))}"
        )
    return answer
