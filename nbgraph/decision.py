"""Who decided what, when, and on what they were shown: the record every answer leaves.

Each answer to a pause, however it is given (the view's buttons, ``run.answer``,
``Resume``, a magic, the LangGraph door, a deadline that passed, a standing approval),
becomes one :class:`Decision`. It travels in the pause's ``answer`` event, so a run's
result, its NDJSON trace, its checkpoint history, the replay, the inspector and the
OpenTelemetry spans all carry it.

``nbgraph.decisions(store)`` is the table of every decision kept in a store,
``nbgraph.decisions(store, thread)`` of one thread's, and ``nbgraph.decisions(result)`` of a
run's (:func:`decisions`).
"""

from __future__ import annotations

import datetime
import html
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import pydantic

from .answering import Via, identity
from .names import new_id
from .state import to_jsonable

if TYPE_CHECKING:
    from .checkpoint.base import Checkpointer
    from .pauses import Pause

__all__ = ["Decision", "DecisionTable", "FieldEdit", "decided_in", "decision_of", "decisions", "now", "recorded"]


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
    tools: tuple[str, ...] = ()
    """A tool pause's calls, by tool name (what its ``verdict`` words are about)."""

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
    verdict, edits, said = _verdict(pause, answer)
    if standing is None and pause.kind == "tool" and any(getattr(d, "standing", None) for d in answer):
        standing = new_id()  # the standing approval this answer sets up takes this id
    # Built from checked values, unvalidated: every answer a pause takes makes one.
    return Decision.model_construct(
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
        tools=tuple(call.name for call in pause.tool_calls),
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


# -- a table of decisions ----------------------------------------------------------------------


class DecisionTable:
    """Decisions as a table: iterate it for its :class:`Decision` records (``len``, ``[i]``),
    :meth:`rows` for plain dicts (``pandas.DataFrame(table.rows())``), ``str()`` for text;
    a notebook shows it as an HTML table."""

    __slots__ = ("_decisions", "_threads")

    COLUMNS = ("thread", "step", "node", "kind", "verdict", "by", "at", "via", "reason", "edits", "shown", "pause")

    def __init__(self, decisions: Iterable[Decision], threads: Iterable[str | None] | None = None) -> None:
        self._decisions = tuple(decisions)
        self._threads: tuple[str | None, ...] = (
            tuple(threads) if threads is not None else (None,) * len(self._decisions)
        )
        if len(self._threads) != len(self._decisions):
            raise ValueError(f"{len(self._threads)} threads for {len(self._decisions)} decisions")

    def __iter__(self) -> Iterator[Decision]:
        return iter(self._decisions)

    def __len__(self) -> int:
        return len(self._decisions)

    def __getitem__(self, index: int) -> Decision:
        return self._decisions[index]

    def __repr__(self) -> str:
        threads = len({thread for thread in self._threads if thread is not None})
        where = f" in {threads} thread{'s' if threads != 1 else ''}" if threads else ""
        return f"<DecisionTable: {len(self._decisions)} decision{'s' if len(self._decisions) != 1 else ''}{where}>"

    def rows(self) -> list[dict[str, Any]]:
        """One dict per decision: its thread and every field of its record (JSON)."""
        return [
            {"thread": thread, **decision.model_dump(mode="json")}
            for thread, decision in zip(self._threads, self._decisions, strict=True)
        ]

    def _cells(self) -> list[tuple[str, ...]]:
        return [
            (
                thread or "",
                str(decision.step),
                decision.path + (f" [{decision.branch}]" if decision.branch else ""),
                decision.kind,
                decision.verdict,
                decision.by,
                decision.at[:19].replace("T", " "),
                decision.via + (f" {decision.standing}" if decision.standing else ""),
                decision.reason or "",
                "; ".join(f"{edit.field}: {_short(edit.before)} -> {_short(edit.after)}" for edit in decision.edits),
                decision.shown[:12],
                decision.pause_id[:12],
            )
            for thread, decision in zip(self._threads, self._decisions, strict=True)
        ]

    def _columns(self) -> tuple[int, ...]:
        """The columns shown: the thread only when some row has one."""
        first = 0 if any(self._threads) else 1
        return tuple(range(first, len(self.COLUMNS)))

    def __str__(self) -> str:
        if not self._decisions:
            return "no decisions\n"
        shown = self._columns()
        rows = [tuple(self.COLUMNS[i] for i in shown), *(tuple(row[i] for i in shown) for row in self._cells())]
        widths = [max(len(row[i]) for row in rows) for i in range(len(shown))]
        lines = ("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip() for row in rows)
        return "\n".join(lines) + "\n"

    def _repr_html_(self) -> str:
        if not self._decisions:
            return "<p>no decisions</p>"
        shown = self._columns()
        head = "".join(f"<th>{self.COLUMNS[i]}</th>" for i in shown)
        body = "".join(
            "<tr>" + "".join(f"<td>{html.escape(row[i])}</td>" for i in shown) + "</tr>" for row in self._cells()
        )
        return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def decisions(source: Any, thread: str | None = None) -> DecisionTable:
    """The decisions of a run (a ``Run`` or ``RunResult``), of ``thread`` in a store, or of
    every thread in a store, in the order each thread's steps were taken.

    A store's thread also shows the decisions given inside a node that has not finished (a
    tool call decided while another call of the same reply waits).

    Raises:
        ValueError: the store has no such thread.
        TypeError: ``source`` is neither a store nor a run.
    """
    if _is_store(source):
        store: Checkpointer = source
        threads = [thread] if thread is not None else store.threads()
        rows: list[tuple[str, Decision]] = []
        for name in threads:
            rows += [(name, decision) for decision in _kept_in(store, name, must=thread is not None)]
        return DecisionTable((decision for _, decision in rows), (name for name, _ in rows))
    found = getattr(source, "decisions", None)
    if thread is not None or not isinstance(found, Sequence):
        raise TypeError(
            f"nbgraph.decisions() reads a store (with thread=, one thread of it) or a Run or RunResult, "
            f"not {type(source).__name__}"
        )
    made = list(found)  # pyright: ignore[reportUnknownArgumentType]
    return DecisionTable(made, [getattr(source, "thread", None)] * len(made))


def _is_store(source: Any) -> bool:
    return all(callable(getattr(source, name, None)) for name in ("threads", "history", "get"))


def _kept_in(store: Checkpointer, thread: str, *, must: bool) -> list[Decision]:
    """The decisions kept in ``thread``: its history's, then those given inside a node that
    has not finished (its latest checkpoint keeps them until the node's record does)."""
    last = store.get(thread)
    if last is None:
        if must:
            raise ValueError(f"no thread {thread!r} in {store!r}")
        return []
    decisions = decided_in(store.history(thread))
    pending = last.meta.get("decided")
    if isinstance(pending, Mapping):
        seen = {decision.pause_id for decision in decisions}
        for entry in pending.values():  # pyright: ignore[reportUnknownVariableType]
            decision = Decision.model_validate(entry["decision"])
            if decision.pause_id not in seen:
                decisions.append(decision)
    return decisions
