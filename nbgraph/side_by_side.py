"""Two runs side by side: where their paths part, the first step whose state differs, and how.

:func:`side_by_side` lines the records of two runs up frame by frame, as the replay slider
numbers them (frame 0 is the input, frame ``i`` the run after its ``i``-th record): a fork
beside the run it came from, two versions of a graph on one input, a recorded run beside its
replay. States are compared as JSON, without the ids of messages (every run makes its own).
The result is plain data a view can draw (:meth:`SideBySide.to_json`) and a table (text, and
HTML); in a notebook it shows as the graph view with both paths drawn
(``GraphView.side_by_side``).
"""

from __future__ import annotations

import html
import json
from collections.abc import Mapping
from typing import Any, Literal, NamedTuple

from ._replay_frame import ReplayFrame
from .replay import Replay

__all__ = ["Change", "Row", "Side", "SideBySide", "side_by_side"]


class Side(NamedTuple):
    """One run's record at a frame."""

    step: int
    node: str
    path: str
    """Where the node is: its name, ``outer/inner/node`` inside sub-graphs."""
    branch: str | None
    error: str | None
    """Why the node failed there (None: it finished)."""


class Row(NamedTuple):
    """One frame of both runs."""

    frame: int
    """The frame's number (0: the input)."""
    a: Side | None
    """Run a's record (None at frame 0, and where run a has ended)."""
    b: Side | None
    same_node: bool
    """Both ran the same node (path and branch), and both finished it or both failed."""
    same_state: bool
    """The states after the frame are equal."""


class Change(NamedTuple):
    """How one field of the state differs at :attr:`SideBySide.differs_at`."""

    field: str
    kind: Literal["changed", "only_a", "only_b"]
    """``changed``: both have it, with different values; ``only_a``/``only_b``: one run has it."""
    a: Any
    """Its value in run a (None when ``only_b``), as JSON."""
    b: Any
    at: int | None
    """For two lists: the first item where they differ (the shorter one's length if one begins the other)."""


class SideBySide:
    """Two runs lined up frame by frame; see :func:`side_by_side`."""

    def __init__(self, a: Replay, b: Replay, labels: tuple[str, str]) -> None:
        self.labels = labels
        """What the runs are called (``("a", "b")`` unless given)."""
        self.replays = (a, b)
        """The two runs' frames, as compared."""
        self.threads = (a.thread, b.thread)
        self.outcomes = (a.outcome, b.outcome)
        """How each run ended (None for one still going)."""
        states_a = [_comparable(frame.state) for frame in a]
        states_b = [_comparable(frame.state) for frame in b]
        rows = []
        for index in range(max(len(a), len(b))):
            side_a = _side(a[index]) if index < len(a) else None
            side_b = _side(b[index]) if index < len(b) else None
            state_a = states_a[min(index, len(a) - 1)]
            state_b = states_b[min(index, len(b) - 1)]
            rows.append(Row(index, side_a, side_b, _same(side_a, side_b), state_a == state_b))
        self.rows = tuple(rows)
        """A row per frame of the longer run (the shorter one's last state held after its end)."""
        self.parted_at = next((row.frame for row in self.rows if not row.same_node), None)
        """The first frame whose nodes differ (or where one run has ended): where the paths part. None: they never do."""
        self.differs_at = next((row.frame for row in self.rows if not row.same_state), None)
        """The first frame whose states differ. None: they never do."""
        self.changes: tuple[Change, ...] = ()
        """How the states differ at :attr:`differs_at`, field by field."""
        if self.differs_at is not None:
            at = self.differs_at
            self.changes = _changes(states_a[min(at, len(a) - 1)], states_b[min(at, len(b) - 1)])

    def to_json(self) -> dict[str, Any]:
        """The comparison as JSON, for a view to draw."""
        return {
            "labels": list(self.labels),
            "threads": list(self.threads),
            "outcomes": list(self.outcomes),
            "parted_at": self.parted_at,
            "differs_at": self.differs_at,
            "rows": [
                {
                    "frame": row.frame,
                    "a": None if row.a is None else row.a._asdict(),
                    "b": None if row.b is None else row.b._asdict(),
                    "same_node": row.same_node,
                    "same_state": row.same_state,
                }
                for row in self.rows
            ],
            "changes": [change._asdict() for change in self.changes],
        }

    def __repr__(self) -> str:
        parted = "never part" if self.parted_at is None else f"part at frame {self.parted_at}"
        differs = "states never differ" if self.differs_at is None else f"states differ from frame {self.differs_at}"
        return (
            f"<SideBySide {self.labels[0]!r} | {self.labels[1]!r}: {len(self.rows)} frames, paths {parted}, {differs}>"
        )

    def __str__(self) -> str:
        width = max(
            12,
            *(len(_shown(row.a, row.frame)) for row in self.rows),
            *(len(_shown(row.b, row.frame)) for row in self.rows),
        )
        name_a, name_b = (f"{label} ({thread}, {outcome or 'running'})" for label, thread, outcome in self._runs())
        lines = [f"side by side: {name_a} | {name_b}", f"     #  {self.labels[0]:<{width}}  {self.labels[1]}"]
        for row in self.rows:
            note = self._note(row)
            cells = f"{_shown(row.a, row.frame):<{width}}  {_shown(row.b, row.frame):<{width}}"
            lines.append(f"  {'>' if note else ' '}{row.frame:>3}  {cells}  {note}".rstrip())
        lines.extend(self._changes_text())
        return "\n".join(lines)

    def _runs(self) -> list[tuple[str, str | None, str | None]]:
        return list(zip(self.labels, self.threads, self.outcomes, strict=True))

    def _note(self, row: Row) -> str:
        notes = []
        if row.frame == self.parted_at:
            notes.append("paths part")
        if row.frame == self.differs_at:
            notes.append("first state difference")
        return ", ".join(notes)

    def _changes_text(self) -> list[str]:
        if self.differs_at is None:
            return ["the states never differ"]
        lines = [f"the state after frame {self.differs_at}:"]
        for change in self.changes:
            where = f"{change.field}[{change.at}]" if change.at is not None else change.field
            a, b = _item(change.a, change.at), _item(change.b, change.at)
            if change.kind == "only_a":
                lines.append(f"  {change.field}: only in {self.labels[0]}, {a}")
            elif change.kind == "only_b":
                lines.append(f"  {change.field}: only in {self.labels[1]}, {b}")
            else:
                lines.append(f"  {where}: {self.labels[0]} {a}, {self.labels[1]} {b}")
        return lines

    def _repr_mimebundle_(
        self, include: Any = None, exclude: Any = None
    ) -> dict[str, Any] | tuple[dict[str, Any], dict[str, Any]]:
        """In a notebook, the two runs drawn on the graph (``GraphView.side_by_side``); the
        table as text and HTML for a front-end without widgets."""
        from .hooks import view_mimebundle

        return view_mimebundle(self, {"text/plain": str(self), "text/html": self._repr_html_()})

    def _display_(self) -> Any:
        """In marimo, the two runs drawn on the graph as the cell's output."""
        from .hooks import displayed

        return displayed(self, self._repr_mimebundle_)

    def _repr_html_(self) -> str:
        runs = " | ".join(
            f"<b>{html.escape(label)}</b> ({html.escape(str(thread))}, {html.escape(outcome or 'running')})"
            for label, thread, outcome in self._runs()
        )
        cells = []
        for row in self.rows:
            style = ""
            if row.frame == self.parted_at:
                style = ' style="background:var(--jp-warn-color3,#fff3cd)"'
            elif row.frame == self.differs_at:
                style = ' style="background:var(--jp-info-color3,#e3f2fd)"'
            cells.append(
                f"<tr{style}><td>{row.frame}</td><td>{html.escape(_shown(row.a, row.frame))}</td>"
                f"<td>{html.escape(_shown(row.b, row.frame))}</td><td>{html.escape(self._note(row))}</td></tr>"
            )
        changes = "".join(f"<li>{html.escape(line.strip())}</li>" for line in self._changes_text()[1:])
        tail = (
            f"<p>The state after frame {self.differs_at}:</p><ul>{changes}</ul>"
            if self.differs_at is not None
            else "<p>The states never differ.</p>"
        )
        return (
            f"<div><p>Side by side: {runs}</p><table><tr><th>#</th><th>{html.escape(self.labels[0])}</th>"
            f"<th>{html.escape(self.labels[1])}</th><th></th></tr>{''.join(cells)}</table>{tail}</div>"
        )


def side_by_side(a: Any, b: Any, *, labels: tuple[str, str] = ("a", "b")) -> SideBySide:
    """Two runs lined up: where their paths part, the first frame whose state differs, the difference.

    Args:
        a: a ``RunResult``, a ``Run`` (the frames so far) or a
            :class:`~nbgraph.replay.Replay` (of a thread in a store:
            ``replay(thread, checkpointer=store, graph=g)``; of a trace).
        b: the other run, as ``a``.
        labels: what to call the two runs in the table.

    Example::

        fork = g.invoke(Fork(result, step=2, update={"tone": "kind"}))
        side_by_side(result, fork, labels=("run", "fork"))  # states differ from frame 2
    """
    if len(labels) != 2 or not all(isinstance(label, str) for label in labels):
        raise TypeError(f"labels must be two strings, got {labels!r}")
    return SideBySide(_replay_of(a, "a"), _replay_of(b, "b"), (labels[0], labels[1]))


def _replay_of(source: Any, which: str) -> Replay:
    if isinstance(source, Replay):
        return source
    try:
        return Replay.from_result(source)
    except TypeError:
        raise TypeError(
            f"side_by_side() takes a RunResult, a Run or a Replay as {which}, got {type(source).__name__}"
        ) from None


def _side(frame: ReplayFrame) -> Side | None:
    if frame.node is None:
        return None  # (frame 0: the input)
    return Side(frame.step, frame.node, frame.path or frame.node, frame.branch, frame.error)


def _same(a: Side | None, b: Side | None) -> bool:
    if a is None or b is None:
        return a is b
    return a.path == b.path and a.branch == b.branch and (a.error is None) == (b.error is None)


def _comparable(value: Any) -> Any:
    """JSON without the ids of messages: two runs of one conversation make different ones."""
    if isinstance(value, Mapping):
        message = "role" in value
        return {key: _comparable(item) for key, item in value.items() if not (message and key == "id")}
    if isinstance(value, list):
        return [_comparable(item) for item in value]
    return value


def _changes(a: Mapping[str, Any], b: Mapping[str, Any]) -> tuple[Change, ...]:
    found = []
    for field in [*a, *(key for key in b if key not in a)]:
        if field not in b:
            found.append(Change(field, "only_a", a[field], None, None))
        elif field not in a:
            found.append(Change(field, "only_b", None, b[field], None))
        elif a[field] != b[field]:
            found.append(Change(field, "changed", a[field], b[field], _first_difference(a[field], b[field])))
    return tuple(found)


def _first_difference(a: Any, b: Any) -> int | None:
    if not (isinstance(a, list) and isinstance(b, list)):
        return None
    for index, (x, y) in enumerate(zip(a, b, strict=False)):
        if x != y:
            return index
    return min(len(a), len(b))


def _item(value: Any, at: int | None) -> str:
    """A value as the table shows it, cut short: for a list compared item by item, the item there."""
    if at is not None and isinstance(value, list):
        if at >= len(value):
            return "(no item)"
        value = value[at]
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= 60 else text[:59] + "\u2026"


def _shown(side: Side | None, index: int) -> str:
    if side is None:
        return "(input)" if index == 0 else "(ended)"
    where = side.path + (f" [{side.branch}]" if side.branch else "")
    return where + (" (failed)" if side.error else "")
