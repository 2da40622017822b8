"""What the view shows of a run's records, as plain data: an edge's key, where a step ran, a
log line, the frames packed for the slider, and every trait the view of an ended run is given.

The notebook's view (``GraphView.show_ended``) and a run's HTML page (:mod:`nbgraph.share`)
both take an ended run's traits from :func:`ended_traits`, so a shared run shows what its
replay shows in a notebook.
"""

from __future__ import annotations

from typing import Any

from ._decided import DecisionLog

__all__ = ["LOG_LINES", "edge_key", "ended_traits", "exit_line", "graph_known", "pack_frames", "place"]

LOG_LINES = 200
"""The last lines of a run's log the view lists."""


def edge_key(source: str, target: str) -> str:
    return f"{source}\u2192{target}"


def place(path: str, branch: str | None) -> str:
    # A map's branch is named after its node (ask[1]): say it once.
    return path if not branch else branch if branch.startswith(f"{path}[") else f"{path} [{branch}]"


def exit_line(step: int, path: str, branch: str | None, duration: float) -> str:
    return f"{step:>4}  {place(path, branch)}  {duration * 1000:.1f} ms"


def ended_traits(frames: Any) -> dict[str, Any]:
    """The view's traits for the run ``frames`` replays, as it ended, the slider at its last frame.

    ``frames``: its ``frames``, ``records``, ``outcome``, ``reason`` and ``plan`` (a
    :class:`~nbgraph.replay.Replay`, or another engine's frames of the same shape). Returns
    ``frames`` (packed), ``decisions``, ``status``, ``visits``, ``fired`` and ``log``, in the
    order the view is given them.
    """
    every = frames.frames  # (read once: another engine's frames may be built on each read)
    records = frames.records
    log = DecisionLog()
    log.place(records)
    top = [record for record in records if "/" not in record.path]
    last = every[-1]
    return {
        "frames": _packed(every),
        "decisions": log.rows(),
        "status": {
            "state": "done",
            "outcome": frames.outcome,
            "reason": frames.reason,
            "step": top[-1].step if top else 0,
            "max_steps": frames.plan.max_steps if graph_known(frames.plan) else None,
            "tokens": sum(record.tokens for record in records),
            "cost": sum(record.cost for record in records),
            "elapsed": round(sum(record.duration for record in top), 2),
            "current": None,
        },
        "visits": dict(last.visits),
        "fired": {edge_key(*edge): count for edge, count in last.fired.items()},
        "log": [exit_line(r.step, r.path, r.branch, r.duration) for r in records[-LOG_LINES:]],
    }


def graph_known(plan: Any) -> bool:
    """Whether ``plan`` is the graph that ran: a trace replayed without it is read with a plan of
    no nodes, whose limits say nothing of the run."""
    return getattr(plan, "nodes", None) != {}


def pack_frames(frames: Any) -> dict[str, Any]:
    """Replay frames as the slider takes them, packed: each frame a row of only the counts it
    changed, every path and edge named once (a 10,000-step run's frames make one message
    of a few hundred kilobytes).

    ``{"names": [path or edge key, ...], "rows": [[step, path, branch, error, visits, fired]]}``
    where ``path`` indexes ``names`` (None for frame 0, the input) and ``visits`` / ``fired``
    are flat ``[name index, count, ...]`` lists.
    """
    return _packed(frames.frames)


def _packed(every: Any) -> dict[str, Any]:
    names: list[str] = []
    index: dict[str, int] = {}

    def name(text: str) -> int:
        at = index.get(text)
        if at is None:
            at = index[text] = len(names)
            names.append(text)
        return at

    rows: list[list[Any]] = []
    visits: Any = {}
    fired: Any = {}
    for frame in every:
        changed_visits = [x for k, v in frame.visits.items() if visits.get(k) != v for x in (name(k), v)]
        changed_fired = [x for k, v in frame.fired.items() if fired.get(k) != v for x in (name(edge_key(*k)), v)]
        path = None if frame.path is None else name(frame.path)
        rows.append([frame.step, path, frame.branch, frame.error, changed_visits, changed_fired])
        visits, fired = frame.visits, frame.fired
    return {"names": names, "rows": rows}
