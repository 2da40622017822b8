"""A run's step records read back from an NDJSON trace: the trace's text (given, or read from
the file a path names) and the records its events tell of, in the order a history keeps them,
with what the trace says of the run and the trace lines each record's update came from.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

from .history import FiredEdge, Step

__all__ = ["read_trace", "records_from_events"]


_LONGEST_PATH = 32_767
"""The longest path any system opens (Windows' long paths): a longer one-line text is no path."""


def read_trace(source: str | os.PathLike[str]) -> str:
    """The trace's text: ``source`` itself when it is one, else the file it names, decoded by line."""
    from .events import decode_trace, quoted

    if isinstance(source, str) and ("\n" in source or source.lstrip().startswith("{")):
        return source
    path = os.fspath(source)
    if len(path) > _LONGEST_PATH:
        raise ValueError(
            f"line 1 is not an nbgraph event, and at {len(path):,} characters the text is too long to be "
            f"the path of a trace file (the line starts: {quoted(path)})"
        )
    if not os.path.exists(path):
        raise FileNotFoundError(
            f"no NDJSON trace at {quoted(path)} (give the trace's text, or the path of a file holding it)"
        )
    try:
        # As bytes: parse_ndjson splits at "\n" alone, and a byte that is not UTF-8 is reported by line.
        with open(path, "rb") as handle:
            data = handle.read()
    except OSError as exc:  # (its own message would quote the whole path)
        raise OSError(exc.errno, f"cannot read the NDJSON trace at {quoted(path)}: {exc.strerror}") from None
    return decode_trace(data, f"the NDJSON trace at {quoted(path)}")


class _Open:
    """A node entered in a trace, not yet known to have finished."""

    __slots__ = ("enter", "events", "record", "container", "line", "edit_line")

    def __init__(self, enter: Any, line: int) -> None:
        self.enter = enter
        self.line = line
        """The trace line of its update (its ``node-exit``; its ``node-enter`` until then)."""
        self.edit_line: int | None = None
        """The trace line of a person's edit of its update."""
        self.events: list[Any] = []
        self.record: Step | None = None
        self.container = False


def records_from_events(numbered: Sequence[tuple[int, Any]]) -> tuple[list[Step], dict[str, Any]]:
    """The step records a trace's events (each with its line) tell of, in the order a history
    keeps them, and what the trace says of the run (``info["lines"]``: the lines of each
    record's update and of a person's edit of it).

    A node's record goes where it was entered (branches in the order they started,
    as their steps are numbered), a sub-graph node's where it finished (after its own
    steps); a node entered and never exited failed.
    """
    info: dict[str, Any] = {"missing": []}
    slots: list[_Open | None] = []
    opened: dict[tuple[str, str | None], tuple[int, _Open]] = {}
    finished: dict[tuple[str, str | None], _Open] = {}
    failures: list[Any] = []
    unexplained = 0
    for line, event in numbered:
        kind = event.type
        where = (event.path, event.branch)
        if kind == "run-start":
            info.setdefault("thread", event.thread)
            info.setdefault("graph", event.graph)
        elif kind == "node-enter":
            for _, slot in opened.values():
                if event.path.startswith(slot.enter.path + "/"):
                    slot.container = True
            if where in opened:  # entered again with no exit between: it failed (a resume runs it again)
                _, stale = opened.pop(where)
                error = next((f for f in reversed(failures) if (f.path, f.branch) == where), None)
                unexplained += error is None
                stale.record = _failed(stale, error)
            opened[where] = (len(slots), _Open(event, line))
            slots.append(opened[where][1])
        elif kind == "node-exit" and where in opened:
            position, slot = opened.pop(where)
            slot.line = line
            enter = slot.enter
            slot.record = Step(
                step=event.step,
                node=event.node,
                visit=enter.visit,
                started=0.0,
                duration=event.duration,
                update=event.update,
                path=event.path or event.node,
                branch=event.branch,
                tokens=event.tokens,
                cost=event.cost,
                events=tuple(slot.events),
            )
            if slot.container:  # a sub-graph node's record comes after its steps'
                slots[position] = None
                slots.append(slot)
            finished[where] = slot
        elif kind == "route":
            slot = finished.get(where)
            if slot is not None and slot.record is not None and slot.record.step == event.step and event.path:
                slot.record = slot.record._replace(
                    edge=FiredEdge(event.source, event.target, event.label, event.unconditional)
                )
        elif kind in ("interrupt", "answer"):
            if where in opened:
                opened[where][1].events.append(event)
            elif where in finished and finished[where].record is not None:
                slot = finished[where]
                record = slot.record
                assert record is not None
                edit = record.edit
                answer = getattr(event, "answer", None)
                if (
                    kind == "answer"
                    and isinstance(answer, Mapping)
                    and answer.get("approved")
                    and isinstance(answer.get("update"), Mapping)  # (an approval's edit; other answers are any JSON)
                    and answer["update"]
                ):
                    edit = answer["update"]
                    slot.edit_line = line
                slot.record = record._replace(approval_events=(*record.approval_events, event), edit=edit)
        elif kind in ("tool-call", "tool-result", "error"):
            if where in opened:
                if kind == "error" and event.node is not None and event.error_type != "ToolCallsNotRun":
                    failures.append(event)
                opened[where][1].events.append(event)
            elif kind == "error":
                failures.append(event)
        elif kind == "done":
            info["outcome"], info["reason"] = event.outcome, event.reason
    for where, (_, slot) in list(opened.items()):
        error = next((f for f in failures if (f.path, f.branch) == where), None)
        if error is None:
            unexplained += 1
        slot.record = _failed(slot, error)
    if unexplained:
        info["missing"].append(
            f"{unexplained} step(s) entered and never exited in the trace failed, but the trace does not say why"
        )
    kept = [slot for slot in slots if slot is not None and slot.record is not None]
    info["lines"] = [(slot.line, slot.edit_line) for slot in kept]
    return [slot.record for slot in kept if slot.record is not None], info


def _failed(slot: _Open, error: Any) -> Step:
    enter = slot.enter
    events = tuple(e for e in slot.events if e is not error)
    return Step(
        step=enter.step,
        node=enter.node,
        visit=enter.visit,
        started=0.0,
        duration=0.0,
        path=enter.path or enter.node,
        branch=enter.branch,
        error=error.error if error is not None else "failed (the trace does not say why)",
        events=events,
    )
