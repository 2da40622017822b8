"""Who decided what, when, and on what they were shown: the record every answer leaves.

Each answer to a pause, however it is given (the view's buttons, ``run.answer``,
``Resume``, a magic, the LangGraph door, a deadline that passed, a standing approval),
becomes one :class:`Decision`. It travels in the pause's ``answer`` event, so a run's
result, its NDJSON trace, its checkpoint history, the replay, the inspector and the
OpenTelemetry spans all carry it.
"""

from __future__ import annotations

import datetime
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

import pydantic

from .answering import Via, identity

if TYPE_CHECKING:
    from .pauses import Pause

__all__ = ["Decision", "FieldEdit", "decided_in", "decision_of", "now", "recorded"]


class FieldEdit(pydantic.BaseModel):
    """One value a person changed: an argument of a tool call (``send_email.to``) or a field of
    the state (an approval's correction)."""

    model_config = pydantic.ConfigDict(frozen=True, defer_build=True)

    field: str
    before: Any = None
    after: Any = None


class Decision(pydantic.BaseModel):
    """One answer to one pause: who gave it, when, how, on what they were shown, and what it decided."""

    model_config = pydantic.ConfigDict(frozen=True, defer_build=True)

    pause_id: str
    kind: str
    """The pause's kind: input, approval, tool, breakpoint, budget."""
    path: str
    branch: str | None = None
    step: int
    shown: str
    """The digest of what the pause showed (:attr:`nbgraph.pauses.Pause.shown`)."""
    by: str
    """Who decided (:func:`identity`; ``deadline`` when a deadline passed)."""
    at: str
    """When, as ISO 8601 in UTC."""
    via: Via
    verdict: str
    """What was decided, in a word or a few: ``approved``, ``denied``, ``edited``, ``rejected``,
    ``responded``, ``answered``, ``continue``, ``raised``, ``stop``, one per call of a tool pause."""
    answer: Any = None
    """The answer as it was given (JSON)."""
    edits: tuple[FieldEdit, ...] = ()
    """What the person changed from what they were shown."""
    reason: str | None = None
    standing: str | None = None
    """The standing approval that gave this answer, or that this answer set up."""

    def line(self) -> str:
        """One line for a person: ``alice approved send_email at 12:03:04 (view): looks right``."""
        when = self.at[11:19] if len(self.at) >= 19 else self.at
        why = f": {self.reason}" if self.reason else ""
        return f"{self.by} {self.verdict} {self.path} at {when} ({self.via}){why}"


def now() -> str:
    """The time now, as a decision records it."""
    return datetime.datetime.now(datetime.UTC).isoformat(timespec="milliseconds")


def decision_of(
    pause: Pause,
    answer: Any,
    *,
    via: Via,
    by: str | None = None,
    reason: str | None = None,
    standing: str | None = None,
) -> Decision:
    """The record of ``answer`` (as the door read it) given to ``pause``."""
    from .state import to_jsonable

    verdict, edits, said = _verdict(pause, answer)
    return Decision(
        pause_id=pause.id,
        kind=pause.kind,
        path=pause.path or pause.node,
        branch=pause.branch,
        step=pause.step,
        shown=pause.shown,
        by=by or identity(),
        at=now(),
        via=via,
        verdict=verdict,
        answer=to_jsonable(answer, strict=False),
        edits=edits,
        reason=reason if reason is not None else said,
        standing=standing,
    )


def _verdict(pause: Pause, answer: Any) -> tuple[str, tuple[FieldEdit, ...], str | None]:
    """What ``answer`` decided at ``pause``, what it changed, and the reason it carried."""
    kind = pause.kind
    if kind == "tool" and isinstance(answer, (list, tuple)):
        words: list[str] = []
        edits: list[FieldEdit] = []
        reasons: list[str] = []
        for call, decision in zip(pause.tool_calls, answer, strict=False):  # pyright: ignore[reportUnknownVariableType, reportUnknownArgumentType]
            words.append(_TOOL_WORDS.get(getattr(decision, "type", ""), "decided"))
            if getattr(decision, "type", None) == "edit" and decision.arguments is not None:
                edits.extend(_changed(call.arguments, decision.arguments, f"{call.name}."))
            if getattr(decision, "reason", None):
                reasons.append(decision.reason)
        return ", ".join(words), tuple(edits), "; ".join(reasons) or None
    if kind == "approval":
        approved = bool(getattr(answer, "approved", answer))
        update = getattr(answer, "update", None)
        shown = {change.field: change.after for change in pause.changes}
        changed = tuple(
            FieldEdit(field=key, before=shown.get(key), after=value) for key, value in (update or {}).items()
        )
        word = ("approved with an edit" if changed else "approved") if approved else "denied"
        return word, changed, getattr(answer, "reason", None)
    if kind == "breakpoint":
        return str(answer), (), None
    if kind == "budget":
        if answer == "stop":
            return "stop", (), None
        limits = pause.budget.limits if pause.budget is not None else {}
        raised = answer if isinstance(answer, Mapping) else {}
        changed = tuple(FieldEdit(field=key, before=limits.get(key), after=value) for key, value in raised.items())  # pyright: ignore[reportUnknownVariableType, reportUnknownArgumentType]
        return "raised", changed, None
    return "answered", (), None


_TOOL_WORDS = {"approve": "approved", "edit": "edited", "reject": "rejected", "respond": "responded"}


def _changed(before: Mapping[str, Any], after: Mapping[str, Any], prefix: str) -> list[FieldEdit]:
    keys = list(dict.fromkeys([*before, *after]))
    return [
        FieldEdit(field=prefix + key, before=before.get(key), after=after.get(key))
        for key in keys
        if before.get(key) != after.get(key) or (key in before) != (key in after)
    ]


def recorded(events: Iterable[Any]) -> list[Decision]:
    """The decisions in ``events`` (a run's, a step's, a trace's), in the order they were made."""
    return [event.decision for event in events if getattr(event, "type", None) == "answer" and event.decision]


def decided_in(history: Iterable[Any]) -> list[Decision]:
    """The decisions kept in step records (a run's or a thread's history), step by step."""
    return [decision for record in history for decision in recorded((*record.events, *record.approval_events))]
