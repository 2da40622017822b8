"""What an inspection holds: frozen pydantic models, JSON in and out."""

from __future__ import annotations

from typing import Any, Literal

import pydantic

from ..decision import Decision

__all__ = [
    "Candidate",
    "Change",
    "EdgeTaken",
    "Inspection",
    "LLMExchange",
    "PauseSeen",
    "Problem",
    "Replaced",
    "StateDiff",
    "ToolUse",
]


class _Model(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(frozen=True, extra="forbid", defer_build=True)


class Change(_Model):
    """A field's value before and after the step."""

    before: Any = None
    after: Any = None


class Replaced(_Model):
    """An item of an ``append`` field replaced in place (an item with the same id came again)."""

    index: int
    before: Any = None
    after: Any = None


class StateDiff(_Model):
    """What a step changed in the state, field by field, in JSON form.

    An ``append`` field that grew shows only its new items under ``appended`` (a
    10,000-message conversation that got one message shows that message), and items it
    replaced by id under ``replaced``; any other field that changed shows its value
    before and after under ``changed``.
    """

    added: dict[str, Any] = {}
    """Fields the state did not have before (a dict state), with their value."""
    changed: dict[str, Change] = {}
    removed: list[str] = []
    appended: dict[str, list[Any]] = {}
    replaced: dict[str, list[Replaced]] = {}

    @property
    def fields(self) -> list[str]:
        """Every field the step changed."""
        return sorted({*self.added, *self.changed, *self.removed, *self.appended, *self.replaced})


class EdgeTaken(_Model):
    """The edge routing took after the step."""

    source: str
    target: str
    targets: list[str]
    """Every target (several for a fan-out or ``Send`` items to several nodes)."""
    label: str | None = None
    """The condition's text, the router's name, or ``goto``, ``end``, ``send``, ``denied``."""
    unconditional: bool = False


class Candidate(_Model):
    """An edge out of the node, and what its condition gives on the state routing saw."""

    target: str
    targets: list[str]
    label: str
    kind: Literal["edge", "fanout", "map", "router", "goto", "send", "end", "denied"]
    """``edge``, ``fanout`` or ``map`` (declared with ``add_edge``), ``router`` (one
    candidate per target of ``add_router``), ``goto`` (a declared destination of the
    node's ``Goto``/``Send``), or a command's edge the run took without declaring it
    (``goto``, ``send``, ``end``), or where a denial went (``denied``)."""
    unconditional: bool = False
    value: Any = None
    """What the condition returned (as a bool), or the name the router returned; None
    when nothing was evaluated (a ``goto`` is the node's own choice)."""
    holds: bool | None = None
    """Whether this candidate matches on that state (None: not evaluated)."""
    error: str | None = None
    """The condition, map or router raised (``ValueError: ...``), or the step's failure names it."""
    items: int | None = None
    """For a map: how many items ``each`` gives (a branch each)."""
    chosen: bool = False
    """Evaluating the edges again picks this one (the first that holds, in declaration order)."""
    fired: bool = False
    """The run took it."""


class ToolUse(_Model):
    call_id: str
    name: str
    args: Any = None
    result: Any = None
    is_error: bool = False


class LLMExchange(_Model):
    """What an LLM node's step recorded of its talk with the model."""

    messages: list[Any] = []
    """The messages the step added to the conversation: the model's replies, tool
    results, nudges (from its update)."""
    tool_calls: list[ToolUse] = []
    errors: list[str] = []
    """Error events the node reported (tool calls left out, ...)."""
    sent: list[Any] | None = None
    """The request sent to the model; None: a step does not record it (see ``missing``)."""


class PauseSeen(_Model):
    """A pause during the step (an input, an approval, a tool call, a breakpoint) and its
    answer: who decided, when, through which door, what, why, and what they changed."""

    id: str
    kind: str
    prompt: str = ""
    answered: bool = False
    answer: Any = None
    decision: Decision | None = None
    """The answer's record (None: unanswered, or a trace older than the record)."""


class Problem(_Model):
    """Something wrong a run or an inspection found: ``node`` or ``edge`` names where."""

    kind: str
    """``condition-raised``, ``map-raised``, ``router-raised``, ``no-edge-matched``."""
    message: str
    node: str | None = None
    edge: dict[str, str] | None = None
    """``{"from": ..., "to": ...}``, as DAG JSON names an edge."""
    path: str = ""
    """The sub-graph node it is inside ("" for the run's graph), as ``to_dag(problems=)`` takes it."""


class Inspection(_Model):
    """One step of a run: what it saw, what it did, where it went and why."""

    thread: str | None
    graph: str
    step: int
    node: str
    path: str
    branch: str | None = None
    visit: int
    started: float | None = None
    """Wall-clock start (seconds since the epoch); None when the source does not record it."""
    duration: float = 0.0
    tokens: int = 0
    cost: float = 0.0
    turns: int = 0
    """LLM calls made during the step (an NDJSON trace does not record them)."""
    error: str | None = None
    payload: Any = None
    """The item a map, or the payload a ``Send``, gave the node instead of the state (JSON)."""
    has_payload: bool = False
    input: dict[str, Any]
    """The state the node saw, as JSON (a map's or a ``Send``'s node got ``payload`` instead)."""
    update: Any = None
    """What the node returned, as JSON."""
    edit: Any = None
    """A person's correction made when approving the step."""
    change: StateDiff
    """What the step's update (and edit) did to the state it saw."""
    edge: EdgeTaken | None = None
    candidates: list[Candidate] = []
    routed_on: Literal["step", "superstep", "none"] = "step"
    """Which state the candidates were evaluated on: the state after this step, after the
    whole superstep (branches route once all have settled), or none (the step did not route)."""
    llm: LLMExchange | None = None
    pauses: list[PauseSeen] = []
    problems: list[Problem] = []
    missing: list[str] = []
    """What the source does not record, so the inspection cannot show it."""
