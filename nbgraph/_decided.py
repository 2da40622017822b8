"""What the live view shows of a run's decisions: the decision log and the standing approvals.

The log reads events only: the ``decision`` each ``answer`` event carries, heard live as the
run announces it, or kept in the step records of a run read back (:func:`~nbgraph.decision.decided_in`).
The same decision heard both ways is listed once. Once the run has replay frames, each
decision names the frame of the record that keeps it, so the slider shows the decisions
made up to the frame it shows.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from .decision import decided_in

if TYPE_CHECKING:
    from .decision import Decision
    from .history import Step

__all__ = ["DecisionLog", "standing_rows"]

_ROWS = 200
"""The most decisions a view lists (the latest); ``run.decisions`` has them all."""
_VALUE_CHARS = 200
_REASON_CHARS = 500


def _key(decision: Decision) -> tuple[str, str, str, str]:
    return (decision.pause_id, decision.at, decision.via, decision.verdict)


def _clipped(value: Any) -> Any:
    """A value as the view shows it: itself, or the start of its JSON when that is long."""
    text = json.dumps(value, default=str, ensure_ascii=False)
    return value if len(text) <= _VALUE_CHARS else f"{text[:_VALUE_CHARS]}\u2026"


def _stands(decision: Decision) -> str | None:
    """The scope of the standing approval a tool decision set up ("run", "thread"), if it did."""
    if decision.kind != "tool" or not isinstance(decision.answer, list):
        return None
    for item in decision.answer:  # pyright: ignore[reportUnknownVariableType]
        if isinstance(item, Mapping) and item.get("standing"):  # pyright: ignore[reportUnknownMemberType]
            return str(item["standing"])  # pyright: ignore[reportUnknownArgumentType]
    return None


class DecisionLog:
    """A run's decisions as the view lists them, oldest first, each once.

    A decision names its pause, not the tools it decided on: the log reads their names from
    the pauses asked (``interrupt`` events) and from the standing approvals it was shown."""

    def __init__(self, decisions: Iterable[Decision] = ()) -> None:
        self._decisions: dict[tuple[str, str, str, str], Decision] = {}
        self._frames: dict[tuple[str, str, str, str], int] = {}
        self._tools: dict[str, tuple[str, ...]] = {}
        """Pause id or standing approval id -> the tools it is about."""
        self.version = 0
        """Bumped at each change: a view sends its rows again only then."""
        self.add(decisions)

    def asked(self, pause: Any) -> None:
        """Note the tools a pause asks about (a tool pause's calls)."""
        calls = getattr(pause, "tool_calls", ())
        if calls and pause.id not in self._tools:
            self._tools[pause.id] = tuple(call.name for call in calls)
            self.version += 1

    def standing(self, rows: Iterable[Mapping[str, Any]]) -> None:
        """Note the tool of each standing approval shown (a call it let through names it)."""
        for row in rows:
            if row["id"] not in self._tools:
                self._tools[row["id"]] = (row["tool"],)
                self.version += 1

    def add(self, decisions: Iterable[Decision]) -> None:
        """Take ``decisions`` (those already listed are left as they are)."""
        for decision in decisions:
            key = _key(decision)
            if key not in self._decisions:
                self._decisions[key] = decision
                self.version += 1

    def place(self, records: Sequence[Step]) -> None:
        """Name each decision's replay frame: frame ``i`` is the run after ``records[i - 1]``
        (taking the decisions those records keep that the log does not list yet)."""
        for index, record in enumerate(records, start=1):
            for event in (*record.events, *record.approval_events):
                if event.type == "interrupt":
                    self.asked(event.pause)
            for decision in decided_in((record,)):
                key = _key(decision)
                self._decisions.setdefault(key, decision)
                self._frames[key] = index
        self._decisions = dict(sorted(self._decisions.items(), key=lambda item: item[1].at))
        self.version += 1

    @property
    def decisions(self) -> list[Decision]:
        return list(self._decisions.values())

    def rows(self) -> dict[str, Any]:
        """What the view's ``decisions`` trait holds: ``{"rows": [...], "earlier": n}``, the
        latest decisions (``earlier`` of them left out), each as JSON with its ``frame``
        (None until the run has frames, or when no record keeps it)."""
        kept = list(self._decisions.items())
        shown = kept[-_ROWS:]
        return {"rows": [self._row(key, decision) for key, decision in shown], "earlier": len(kept) - len(shown)}

    def _row(self, key: tuple[str, str, str, str], decision: Decision) -> dict[str, Any]:
        reason = decision.reason
        if reason is not None and len(reason) > _REASON_CHARS:
            reason = f"{reason[:_REASON_CHARS]}\u2026"
        return {
            "pause_id": decision.pause_id,
            "kind": decision.kind,
            "path": decision.path,
            "branch": decision.branch,
            "step": decision.step,
            "by": decision.by,
            "at": decision.at,
            "via": decision.via,
            "verdict": decision.verdict,
            "reason": reason,
            "edits": [
                {"field": edit.field, "before": _clipped(edit.before), "after": _clipped(edit.after)}
                for edit in decision.edits
            ],
            "standing": decision.standing,
            "stands": _stands(decision),
            "tools": list(self._tools.get(decision.pause_id) or self._tools.get(decision.standing or "", ())),
            "frame": self._frames.get(key),
        }


def standing_rows(standing: Iterable[Any]) -> list[dict[str, Any]]:
    """The standing approvals in force (:class:`~nbgraph.engine.people.Standing`), as the
    view lists them: id, tool, scope, by, at, reason, and ``when``, the calls it covers in
    words (None: every call of the tool)."""
    return [
        {
            "id": item.id,
            "tool": item.tool,
            "scope": item.scope,
            "by": item.by,
            "at": item.at,
            "reason": item.reason,
            "when": _when(item.when),
        }
        for item in standing
    ]


def _when(when: Mapping[str, Any] | Callable[..., Any] | None) -> str | None:
    if when is None:
        return None
    if isinstance(when, Mapping):
        return ", ".join(f"{key}={_clipped(value)!r}" if isinstance(value, str) else f"{key}={_clipped(value)}" for key, value in when.items())  # fmt: skip
    name = getattr(when, "__name__", "")
    return f"calls {name} allows" if name and name != "<lambda>" else "calls a function of the arguments allows"
