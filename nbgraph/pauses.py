"""Pauses for a person: input requests, approvals, breakpoints and budget raises, and how
answers are bound to them and read.

A pause has an id. Answers name that id, so an answer meant for a pause that has
already been answered, or that belongs to an earlier run, is refused with that pause's
story rather than applied to the wrong question: :func:`bind` holds the one rule every
way of answering follows.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Literal, TypeGuard, cast

import pydantic

from .errors import ResumeError
from .schema_check import schema_problems
from .storable import storable_problem

__all__ = [
    "Approval",
    "BREAK_ANSWERS",
    "BudgetFigures",
    "Change",
    "Pause",
    "Rerun",
    "TOOL_DECISIONS",
    "ToolCallAsk",
    "ToolDecision",
    "answers_by_id",
    "bind",
    "read_answer",
    "answered_here",
    "answered_in",
    "describe",
    "read_approval",
    "read_break",
    "read_budget",
    "read_input",
    "read_timeout",
    "read_tool_decisions",
    "state_changes",
]

BREAK_ANSWERS = ("continue", "step", "stop")
"""What a breakpoint pause takes: go on to the next breakpoint, pause before the next
node wherever it runs, or end the run ``aborted``."""


class Rerun(pydantic.BaseModel):
    """What a resume runs again when it continues a pause from a checkpoint: the node's
    code from its start up to the pause, with the model and tool calls made on the way.

    A live run answered where it waits runs nothing again; a run resumed from its
    checkpoint (``Resume``, after a kernel restart, or a view's answer to a run that
    has ended ``interrupted``) does, so these calls are made a second time.
    """

    # (pydantic before 2.10 reserves every name that starts with "model_" without this)
    model_config = pydantic.ConfigDict(frozen=True, defer_build=True, protected_namespaces=())

    path: str
    """The node that runs again (``outer/inner`` inside sub-graphs)."""
    model_calls: int = 0
    tool_calls: tuple[str, ...] = ()
    """The tools called before the pause, by name, in call order."""
    answered: int = 0
    """Earlier questions of this call already answered: a resume gives them their answers back."""
    live: bool = False
    """An answer given while the run waits runs the node again too (a LangGraph run resumes
    every interrupted node from its start), not only a resume from a checkpoint."""

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


TOOL_DECISIONS = ("approve", "edit", "reject", "respond")
"""What a person may decide about a tool call before it runs: run it as asked, run it with
other arguments, refuse it with a message the model reads as its result, or give the result
in the tool's place."""


class ToolCallAsk(pydantic.BaseModel):
    """A tool call that waits for a person's decision before it runs."""

    model_config = pydantic.ConfigDict(frozen=True, defer_build=True)

    call_id: str
    """The model's id for the call (the tool message that answers it carries it)."""
    name: str
    description: str = ""
    arguments: dict[str, Any]
    """The arguments the model asked for."""
    parameters: dict[str, Any] = pydantic.Field(default_factory=dict)
    """The tool's JSON schema for its arguments: an edit is checked against it, a view builds its form from it."""
    decisions: tuple[str, ...] = TOOL_DECISIONS
    """The decisions this call takes (a subset of :data:`TOOL_DECISIONS`)."""
    deciders: tuple[str, ...] = ()
    """Who may decide on it (empty: anyone); its pause waits for one of them."""


class ToolDecision(pydantic.BaseModel):
    """A person's decision on one tool call.

    ``approve`` runs it as asked; ``edit`` runs it with ``arguments``; ``reject`` does not run
    it, and the model reads ``message`` as its result; ``respond`` does not run it either, and
    ``message`` is the result, as if the tool had given it.
    """

    model_config = pydantic.ConfigDict(frozen=True, extra="forbid", defer_build=True)

    type: Literal["approve", "edit", "reject", "respond"]
    arguments: dict[str, Any] | None = None
    message: str | None = None
    reason: str | None = pydantic.Field(default=None, exclude=True)
    """Why the person decided so, for the decision's record (the model never reads it; the
    decision itself is kept without it)."""
    standing: Literal["run", "thread"] | None = None
    """Approve every later call of this tool without asking, for the rest of the run or the
    thread (an ``approve`` only): a standing approval, recorded, shown and revocable."""


class Change(pydantic.BaseModel):
    """One field a node's update changes, as an approval shows it: its value before and after
    (for a list the update appended to, ``after`` holds only what it appended)."""

    model_config = pydantic.ConfigDict(frozen=True, defer_build=True)

    field: str
    before: Any = None
    after: Any = None
    appended: bool = False


class Pause(pydantic.BaseModel):
    """An open request for a person: ``kind="input"``, ``"approval"``, ``"tool"`` (a tool call
    waiting for a decision), ``"breakpoint"`` or ``"budget"``."""

    model_config = pydantic.ConfigDict(frozen=True, defer_build=True)

    id: str
    """Unique per pause; answers must carry it."""
    kind: Literal["input", "approval", "tool", "breakpoint", "budget"]
    node: str
    step: int
    """The step the node runs as (input, a breakpoint before it) or ran as (approval, a breakpoint after it)."""
    path: str = ""
    """Where the node is: its name, or ``outer/inner/node`` inside sub-graphs."""
    branch: str | None = None
    """The parallel branch the node runs in (None on the main line)."""
    prompt: str = ""
    """The question as text (a question given as data shows here as JSON)."""
    question: Any = None
    """The question as the node gave it: text, or any JSON value (as LangGraph's ``interrupt(value)`` takes)."""
    options: tuple[str, ...] | None = None
    """Choices to offer as buttons; None for free text."""
    input_kind: str = "text"
    """For input pauses: "text", "number", "choice", ... (a hint for the UI)."""
    slot: str | None = None
    """Input and tool pauses: where the answer is stored, so a re-run node gets it back."""
    at: Literal["before", "after"] | None = None
    """Breakpoint and approval pauses: the node has not run yet (before), or has run and its routing waits (after)."""
    update: Any = None
    """Breakpoint and approval pauses after a node: the update it returned (as JSON)."""
    changes: tuple[Change, ...] = ()
    """Approval pauses after a node: what its update changes in the state, field by field."""
    next: tuple[str, ...] | None = None
    """Approval pauses after a node: where the run goes if it is approved (None: not known before it routes)."""
    input: Any = None
    """Approval pauses before a node: the state it would run on (as JSON)."""
    takes_update: bool = False
    """Breakpoint pauses of a LangGraph run: the answer may carry a correction to the state,
    ``{"answer": "continue", "update": {...}}`` (LangGraph's ``Command(update=...)``)."""
    tool_calls: tuple[ToolCallAsk, ...] = ()
    """Tool pauses: the calls waiting for a decision (one for a tool with an approval policy;
    several in a LangGraph review interrupt). Answered with a decision for each."""
    reruns: Rerun | None = None
    """What a resume from a checkpoint runs again to come back here (None: nothing, the
    node had not started or had finished)."""
    budget: BudgetFigures | None = None
    """Budget pauses: the figures; answered with raised limits (``{"tokens": 5000}``) or ``"stop"``."""
    deadline: float | None = None
    """When the pause stops waiting (seconds since the epoch, UTC); None: it waits as long as it takes."""
    on_timeout: Any = None
    """What the deadline answers (recorded as decided by the deadline): None denies an approval
    and rejects a tool call; an input pause with a deadline always has one."""
    deciders: tuple[str, ...] = ()
    """Who may answer (identities, :func:`nbgraph.decision.identity`); empty: anyone."""
    shown: str = ""
    """The digest of what a person is shown (:func:`shown_digest`): every field above but the id,
    the slot and what a resume runs again. An answer may name it (``shown=``), and is refused when
    it differs; a decision kept for a re-asked question is used only when it matches."""

    @pydantic.model_validator(mode="after")
    def _digest(self) -> Pause:
        if not self.shown:
            object.__setattr__(self, "shown", shown_digest(self))
        return self


_SHOWN_FIELDS = (
    "kind", "node", "step", "path", "branch", "prompt", "question", "options", "input_kind", "at",
    "update", "changes", "next", "input", "tool_calls", "budget", "deadline", "on_timeout", "deciders",
)  # fmt: skip


def shown_digest(pause: Pause) -> str:
    """A digest of what ``pause`` shows a person: the question, the tool and its arguments, the
    state it changes and where the run goes next, the deadline and who may decide.

    Two pauses that show the same thing have the same digest; any change to what is shown
    changes it (a mapping's keys in another order too: the digest errs on the side of asking).
    """
    from pydantic_core import to_json

    # (pydantic's serializer, in Rust: a pause is digested each time one opens)
    fields = [getattr(pause, name) if name != "tool_calls" else _calls_shown(pause) for name in _SHOWN_FIELDS]
    shown = to_json(fields, fallback=repr)
    return hashlib.blake2b(shown, digest_size=16).hexdigest()


def _calls_shown(pause: Pause) -> list[tuple[Any, ...]]:
    # Not the provider's call id: it is not shown, and a provider may send one again.
    return [(c.name, c.description, c.arguments, c.parameters, c.decisions, c.deciders) for c in pause.tool_calls]


class Approval(pydantic.BaseModel):
    """A person's verdict on an approval pause; ``update`` is their correction to the state,
    ``reason`` why they decided so (kept in the decision's record)."""

    model_config = pydantic.ConfigDict(frozen=True, extra="forbid", defer_build=True)

    approved: bool
    update: dict[str, Any] | None = None
    reason: str | None = pydantic.Field(default=None, exclude=True)
    """Why, for the decision's record (which keeps it: the answer itself is kept without it)."""


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
    as_dict: Callable[[], Mapping[str, Any]] | None = getattr(answer, "_asdict", None)  # a Budget
    if as_dict is not None:
        answer = {key: value for key, value in as_dict().items() if value is not None and key != "ask"}
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


def state_changes(before: Mapping[str, Any], after: Mapping[str, Any], fields: Iterable[str]) -> tuple[Change, ...]:
    """What changed in ``fields`` from ``before`` to ``after``, as an approval shows it (JSON).

    A list the update appended to shows only what was appended: an approval of one message
    in a 10,000-message conversation shows that message, not the conversation.
    """
    from .state import to_jsonable

    changes: list[Change] = []
    for field in fields:
        old, new = before.get(field), after.get(field)
        if new is old:
            continue
        if _is_list(old) and _is_list(new) and _extends(new, old):
            added = [new[i] for i in range(len(old), len(new))]
            changes.append(Change(field=field, after=to_jsonable(added, strict=False), appended=True))
            continue
        shown_old, shown_new = to_jsonable(old, strict=False), to_jsonable(new, strict=False)
        if shown_old != shown_new:
            changes.append(Change(field=field, before=shown_old, after=shown_new))
    return tuple(changes)


def _is_list(value: Any) -> TypeGuard[Sequence[Any]]:
    return isinstance(value, Sequence) and not isinstance(value, (str, bytes))  # (a list, an append log)


def _extends(new: Sequence[Any], old: Sequence[Any]) -> bool:
    # Identity, not equality: a reducer that appends keeps the old items themselves.
    return len(new) > len(old) and all(a is b for a, b in zip(old, new, strict=False))


def read_tool_decisions(pause: Pause, answer: Any) -> tuple[ToolDecision, ...]:
    """Accept decisions on a tool pause's calls, one per call, in their order.

    ``"approve"`` / ``True``, ``"reject"`` / ``False`` decide every call; a decision
    (``{"type": "edit", "arguments": {...}}``, a :class:`ToolDecision`) decides the one call;
    a list gives one decision per call. An edit's arguments are checked against the call's
    schema, and refused naming the field.
    """
    calls = pause.tool_calls
    if answer is True or answer == "approve":
        answer = [_APPROVE] * len(calls)
    elif answer is False or answer == "reject":
        answer = [_REJECT] * len(calls)
    elif isinstance(answer, (Mapping, ToolDecision)):
        answer = [answer]
    if not isinstance(answer, (list, tuple)):
        raise ResumeError(
            f"a tool call is answered with 'approve', 'reject' or a decision such as "
            f"{{'type': 'edit', 'arguments': {{...}}}}; got {answer!r:.200}"
        )
    given = cast("list[Any] | tuple[Any, ...]", answer)
    if len(given) != len(calls):
        raise ResumeError(f"the pause at {pause.path!r} asks about {len(calls)} tool calls; got {len(given)} decisions")
    decisions: list[ToolDecision] = []
    for call, item in zip(calls, given, strict=True):
        try:
            decision = item if isinstance(item, ToolDecision) else ToolDecision.model_validate(item)
        except pydantic.ValidationError as exc:
            raise ResumeError(
                f"a decision on {call.name} must look like {{'type': 'approve' | 'edit' | 'reject' | 'respond', "
                f"'arguments': {{...}}, 'message': '...'}}: {_first_problem(exc)}"
            ) from None
        if decision.type not in call.decisions:
            raise ResumeError(f"{call.name} takes {', '.join(call.decisions)}; not {decision.type!r}")
        if decision.type == "edit":
            if decision.arguments is None:
                raise ResumeError(f"an edit of {call.name} needs its new 'arguments'")
            problems = schema_problems(call.parameters, decision.arguments)
            if problems:
                raise ResumeError(f"the edited arguments of {call.name} do not fit its schema: {'; '.join(problems)}")
        elif decision.type == "respond" and decision.message is None:
            raise ResumeError(f"a response in place of {call.name} needs its 'message': the result the model reads")
        decisions.append(decision)
    return tuple(decisions)


_APPROVE = ToolDecision(type="approve")
_REJECT = ToolDecision(type="reject")


def _first_problem(exc: pydantic.ValidationError) -> str:
    error = exc.errors()[0]
    return f"{'.'.join(map(str, error['loc'])) or 'decision'}: {error['msg']}"


def read_answer(pause: Pause, answer: Any) -> Any:
    """Check ``answer`` against what ``pause`` takes, in the form the engine applies it.

    Every answer must also be something a checkpoint can keep and read back the same
    (:func:`nbgraph.storable.storable_problem`: JSON, finite numbers, within the size bound).

    Raises:
        ResumeError: the answer does not fit the pause.
    """
    problem = storable_problem(_plain(answer))
    if problem is not None:
        raise ResumeError(f"the answer to {pause.prompt!r} at node {pause.path!r} cannot be stored: {problem}")
    if pause.kind == "tool":
        return read_tool_decisions(pause, answer)
    if pause.kind == "approval":
        approval = read_approval(answer)
        if approval.update and pause.at == "before":
            raise ResumeError(
                f"an approval before {pause.path!r} runs takes no update (the node has not run); approve or deny it"
            )
        return approval
    if pause.kind == "breakpoint":
        return read_break(answer)
    if pause.kind == "budget":
        return read_budget(pause, answer)
    return read_input(pause, answer)


def read_timeout(pause: Pause) -> Any:
    """The answer ``pause`` takes when its deadline passes (:attr:`Pause.on_timeout`), in the form
    the engine applies it: an approval denied unless its deadline approves; a tool call rejected,
    the model told nobody decided in time, unless its deadline decides otherwise; an input its
    default.

    Raises:
        ResumeError: an input pause with no answer for its deadline to give.
    """
    then = pause.on_timeout
    if pause.kind == "approval":
        return Approval(approved=then is True)
    if pause.kind == "tool":
        if then is None:
            return tuple(
                ToolDecision(
                    type="reject", message=f"Nobody decided on this call of {call.name} in time; it did not run."
                )
                for call in pause.tool_calls
            )
        return read_tool_decisions(pause, then if then == "approve" else [then] * len(pause.tool_calls))
    if then is None:
        raise ResumeError(f"the deadline of the pause at node {pause.path!r} passed, and it names no answer to take")
    return read_answer(pause, then)


def _plain(answer: Any) -> Any:
    """An answer with the decision models in it as the dicts a checkpoint keeps."""
    if isinstance(answer, pydantic.BaseModel):
        return answer.model_dump(exclude_none=True)
    if isinstance(answer, (list, tuple)) and any(isinstance(item, pydantic.BaseModel) for item in answer):  # pyright: ignore[reportUnknownVariableType]
        return [_plain(item) for item in answer]  # pyright: ignore[reportUnknownVariableType]
    as_dict: Callable[[], Mapping[str, Any]] | None = getattr(answer, "_asdict", None)  # a Budget
    return dict(as_dict()) if as_dict is not None else answer


_PAUSE_ID = re.compile(r"[0-9a-f]{32}")
"""What ``Pause.id`` looks like (``names.new_id()``)."""


def answers_by_id(answer: Any) -> bool:
    """Whether ``answer`` is a mapping of pause ids to answers: a mapping with a key shaped
    like a pause id (32 hex digits)."""
    return isinstance(answer, Mapping) and any(isinstance(key, str) and _PAUSE_ID.fullmatch(key) for key in answer)


def bind(
    pauses: Iterable[Pause],
    answer: Any,
    pause_id: str | None,
    *,
    thread: str,
    story: Callable[[str], str | None],
    shown: str | None = None,
) -> dict[str, Any]:
    """Bind an answer to one of the open ``pauses``; the answers by pause id.

    The one rule every way of answering follows (``Resume(run, answer)``, ``run.answer``; a
    view's click answers with ``pause=`` its pause's id):

    - with ``pause_id``, ``answer`` is that pause's answer, whatever its shape;
    - a mapping keyed by pause ids (:func:`answers_by_id`) answers each pause it names,
      some or all of those open;
    - any other answer is the answer to the one open pause; with several open it is
      refused, since it cannot say which, unless all of them are breakpoints (which ask
      nothing but whether to go on: each takes it).

    An answer is never applied to a pause it does not name: an id that is not open is
    refused with that pause's story (answered already, and with what, where ``story``
    knows; otherwise not a pause of this thread). To give an input an answer that is
    itself a mapping keyed by such ids, name the pause with ``pause_id``. With ``shown``
    (the digest of what the person saw, :attr:`Pause.shown`), an answer is refused unless
    its pause shows exactly that.

    Raises:
        ResumeError: the answer names a pause that is not open, or cannot say which.
    """
    open_ = {pause.id: pause for pause in pauses}
    if pause_id is not None:
        given = {pause_id: answer}
    elif answers_by_id(answer):
        given = dict(answer)
    elif len(open_) > 1 and any(pause.kind != "breakpoint" for pause in open_.values()):
        raise ResumeError(
            f"thread {thread!r} waits for {len(open_)} answers; give them by pause id, "
            f"{{pause_id: answer, ...}}. Open now: {describe(open_.values())}"
        )
    else:
        given = {pause.id: answer for pause in open_.values()}
    closed = [key for key in given if key not in open_]
    if closed:
        said = "; ".join(_not_open(key, story, thread) for key in closed)
        raise ResumeError(f"{said}. Nothing was answered. Open now: {describe(open_.values()) or 'none'}")
    if shown is not None:
        for key in given:
            if open_[key].shown != shown:
                raise ResumeError(
                    f"pause {key!r} at node {open_[key].path!r} shows something else than what was decided on "
                    f"(digest {shown!r}, the pause's is {open_[key].shown!r}): look at it again and answer that. "
                    "Nothing was answered"
                )
    return given


def _not_open(key: Any, story: Callable[[str], str | None], thread: str) -> str:
    if not isinstance(key, str) or not _PAUSE_ID.fullmatch(key):
        return f"{key!r} is not a pause id (answer pauses by their pause.id)"
    told = story(key)
    if told is not None:
        return f"pause {key!r} is not open: it was {told}"
    return f"pause {key!r} is not a pause of thread {thread!r} (it belongs to another run or thread)"


def describe(pauses: Iterable[Pause]) -> str:
    """The pauses, for a message: each id, node and prompt."""
    return "; ".join(f"{p.id!r} at node {p.node!r} ({p.prompt!r})" for p in pauses)


def answered_in(records: Iterable[Any], pause_id: str) -> str | None:
    """How ``pause_id`` was answered (``"answered already, with 'yes', at node ..."``), read
    from step records (their ``answer`` events); None if no record of these answered it."""
    for record in records:
        for event in (*record.events, *record.approval_events):
            if event.type == "answer" and event.pause_id == pause_id:
                timed_out = event.decision is not None and event.decision.via == "deadline"
                return _told(event.answer, record.path, record.branch, record.step, timed_out)
    return None


def answered_here(pause: Pause, answer: Any, *, timed_out: bool = False) -> str:
    """How ``pause`` was answered (``timed_out``: by its deadline), in the words
    :func:`answered_in` reads from a record."""
    from .state import to_jsonable

    return _told(to_jsonable(answer, strict=False), pause.path, pause.branch, pause.step, timed_out)


_APPROVAL_KEYS = {"approved", "update", "reason"}


def _told(answer: Any, path: str, branch: str | None, step: int, timed_out: bool = False) -> str:
    where = f"node {path!r}" + (f" in branch {branch!r}" if branch else "")
    how = "answered already by its deadline" if timed_out else "answered already"
    return f"{how}, {_shown(answer)}, at {where} (step {step})"


def _shown(answer: Any) -> str:
    if isinstance(answer, Mapping) and {"approved", "update"} <= set(answer) <= _APPROVAL_KEYS:  # an Approval, as kept
        verdict = "approved" if answer["approved"] else "denied"
        return f"{verdict} with an edit" if answer["update"] else verdict
    if isinstance(answer, list) and answer and all(isinstance(d, Mapping) and "type" in d for d in answer):
        return "decided: " + ", ".join(str(cast("Mapping[str, Any]", d)["type"]) for d in answer)  # a tool pause's
    return f"with {answer!r:.200}"
