"""What a view's picture shows, read from the view's own traits: a run's last frame (how it
stands or ended, its path, the nodes it waits at), two runs side by side, a batch's counts.

Pure functions from the JSON the views send their module to a :class:`~nbgraph.picture.Frame`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .picture import Frame, Tone

__all__ = ["batch_frame", "run_frame"]

_TONES: Mapping[str, Tone] = {"done": "ok", "failed": "bad"}


def _top(counts: Mapping[str, Any]) -> dict[str, int]:
    """The counts of the graph's own nodes (those inside a sub-graph are drawn with it)."""
    return {key: int(value) for key, value in counts.items() if "/" not in key and isinstance(value, (int, float))}


def _spent(status: Mapping[str, Any]) -> str:
    tokens, cost = status.get("tokens") or 0, status.get("cost") or 0.0
    parts = [f"{tokens:,} tokens"] if tokens else []
    if cost:
        parts.append(f"${cost:.4f}")
    return "".join(f" \u00b7 {part}" for part in parts)


def _steps(count: int) -> str:
    return f"{count} step{'s' if count != 1 else ''}"


def _failed(frames: Mapping[str, Any]) -> frozenset[str]:
    """The nodes (the graph's own; a sub-graph's for a step inside it) whose steps failed."""
    names: Sequence[str] = frames.get("names") or ()
    failed = set()
    for row in frames.get("rows") or ():
        if row[3] and row[1] is not None:
            failed.add(str(names[row[1]]).split("/")[0])
    return frozenset(failed)


def run_frame(
    status: Mapping[str, Any],
    visits: Mapping[str, Any],
    fired: Mapping[str, Any],
    *,
    pending: Sequence[Mapping[str, Any]] = (),
    running: Sequence[str] = (),
    frames: Mapping[str, Any] = {},
    previous: Mapping[str, Any] = {},
    sides: Mapping[str, Any] = {},
) -> Frame:
    """A graph view's picture: its run as it stands or ended (nothing for a graph alone), or
    two runs side by side."""
    if sides:
        return _sides_frame(sides)
    if not status:
        return Frame()
    state, step = status.get("state"), int(status.get("step") or 0)
    waiting = [str(p.get("path") or p.get("node")) for p in pending]
    current = frozenset(
        p.split("/")[0] for p in [*waiting, *running, *([status["current"]] if status.get("current") else [])]
    )
    note, tone = "", "plain"
    if state == "done":
        outcome = str(status.get("outcome") or "ended")
        headline = f"{outcome} after {_steps(step)}" if outcome == "done" else f"{outcome} at step {step}"
        tone = _TONES.get(outcome, "warn")
        note = str(status.get("reason") or "")
        if waiting:
            note = f"{note}; waits at {', '.join(waiting)}" if note else f"waits at {', '.join(waiting)}"
        current = frozenset(w.split("/")[0] for w in waiting)
    elif state == "paused" and pending:
        first = pending[0]
        headline = f"waiting at {waiting[0]} \u00b7 step {step}"
        note = str(first.get("prompt") or first.get("kind") or "")
        tone = "warn"
    else:
        limit = status.get("max_steps")
        headline = f"running \u00b7 step {step}" + (f"/{limit}" if limit else "")
    legend: tuple[tuple[str, str], ...] = ()
    other: dict[str, int] = {}
    if previous:
        other = _top(previous.get("fired") or {})
        legend = (("other", f"before the fork (after step {previous.get('step')})"), ("path", "the fork"))
    return Frame(
        headline=headline + _spent(status),
        note=note,
        tone=tone,
        visits=_top(visits),
        fired=_top(fired),
        other=other,
        current=current,
        failed=_failed(frames),
        legend=legend,
    )


def _sides_frame(sides: Mapping[str, Any]) -> Frame:
    labels = list(sides.get("labels") or ("a", "b"))
    outcomes = [outcome or "running" for outcome in sides.get("outcomes") or ("", "")]
    runs = list(sides.get("runs") or ({}, {}))
    parted = sides.get("parted_at")
    visits = {**_top(runs[0].get("visits") or {}), **_top(runs[1].get("visits") or {})}
    headline = f"{labels[0]} ({outcomes[0]}) | {labels[1]} ({outcomes[1]})"
    return Frame(
        headline=headline,
        note="their paths never part" if parted is None else f"their paths part at frame {parted}",
        visits=visits,
        fired=_top(runs[1].get("fired") or {}),
        other=_top(runs[0].get("fired") or {}),
        legend=(("other", labels[0]), ("path", labels[1])),
    )


def batch_frame(mode: str, counts: Mapping[str, Any], edges: Mapping[str, Any], compared: Mapping[str, Any]) -> Frame:
    """A batch view's picture: how many runs took each edge, and how the batch stands; or two
    versions of a graph compared on the same inputs."""
    if mode == "compare":
        taken = compared.get("edges") or {}
        changed = len(compared.get("rows") or ())
        return Frame(
            headline=f"{changed} of {compared.get('total', 0)} inputs changed",
            fired={key: int(runs.get("b") or 0) for key, runs in taken.items()},
            other={key: int(runs.get("a") or 0) for key, runs in taken.items()},
            counted=True,
            legend=(("other", "the old version (a)"), ("path", "the new version (b)")),
        )
    if not counts:
        return Frame(counted=True)
    total, ended = counts.get("total", 0), counts.get("ended", 0)
    done, failed = counts.get("done", 0), counts.get("failed", 0)
    headline = f"{ended} of {total} runs ended \u00b7 {done} done \u00b7 {failed} failed"
    if counts.get("stopped"):
        headline += " \u00b7 stopped"
    finished = bool(counts.get("finished"))
    tone: Tone = ("bad" if failed else "ok") if finished else "plain"
    outcomes = counts.get("outcomes") or {}
    note = ", ".join(f"{count} {outcome}" for outcome, count in sorted(outcomes.items()) if outcome != "done")
    return Frame(headline=headline + _spent(counts), note=note, tone=tone, fired=_top(edges), counted=True)
