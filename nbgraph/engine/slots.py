"""A step's bookkeeping: its slots (each frame numbered with its step, its visit and its
branch id before any runs), how each slot settled, what a checkpoint keeps of the slots
that finished (``settled`` entries, read back on resume), and undoing a step that did
not complete. Running the slots is ``branches``'; the step's lifecycle is ``step``'s.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, NamedTuple

from ..errors import InvalidUpdate
from ..history import NO_PAYLOAD, FiredEdge, Frame, Step
from ..plan import Hop
from ..state import to_jsonable
from .calls import Called
from .ending import Ending

if TYPE_CHECKING:
    from ..pauses import Pause
    from .levels import Level

__all__ = [
    "ChildFailed",
    "Ended",
    "Failed",
    "Halted",
    "Parked",
    "Settled",
    "Slot",
    "keep",
    "kept_pause",
    "number",
    "restored",
    "settled_entry",
    "undo",
]


class Slot(NamedTuple):
    """A frame of a superstep, with the step and visit it runs as."""

    frame: Frame
    step: int
    visit: int


class Parked(NamedTuple):
    """A branch waiting for a person: its pauses, and (for an approval) the step it already ran."""

    pauses: tuple[Pause, ...]
    called: Called | None = None


class Halted(NamedTuple):
    """A branch a person stopped at a breakpoint after its node ran: kept, and the run stops."""

    called: Called
    reason: str


class Failed(NamedTuple):
    """A branch whose node failed (or that ended short): its records, and why."""

    records: tuple[Step, ...]
    error: BaseException


class Ended(NamedTuple):
    """A lone slot that stopped the run its own way (its sub-graph's ending, its timeout, a
    denial with nowhere to go, a cancel at its breakpoint): how the run ends."""

    ending: Ending


class Settled(Exception):
    """A branch that failed before a checkpoint, with ``settle="all"``: its error, as recorded."""


class ChildFailed(Exception):
    """A branch ended with an ending of its own (a sub-graph failed, a deadline, a denial)."""

    def __init__(self, ending: Ending) -> None:
        self.reason = ending.reason or ending.outcome
        super().__init__(self.reason)


def number(level: Level, frames: tuple[Frame, ...], base: int) -> list[Slot]:
    """Give each frame its step, its visit and (if it is on the level's main line) a branch
    id, in frontier order; inside a branch, ids are numbered under its own."""
    own = level.branch
    prefix = f"{own}/" if own is not None else ""
    many = Counter(frame.node for frame in frames if frame.branch == own)
    index: Counter[str] = Counter()
    slots = []
    for i, frame in enumerate(frames):
        if frame.branch == own and len(frames) > 1:
            node = frame.node
            if frame.payload is not NO_PAYLOAD or many[node] > 1:
                frame = frame._replace(branch=f"{prefix}{node}[{index[node]}]")
                index[node] += 1
            else:
                frame = frame._replace(branch=prefix + node)
        visit = level.visits.get(frame.node, 0) + 1
        level.visits[frame.node] = visit
        slots.append(Slot(frame, base + 1 + i, visit))
    return slots


def undo(level: Level, slots: list[Slot], base: int, ending: Ending, *, keep_frames: bool = False) -> Ending:
    """The superstep did not complete: its visits are not counted, its frames run again."""
    for slot in slots:
        level.visits[slot.frame.node] = level.visits.get(slot.frame.node, 1) - 1
    level.steps = base
    if keep_frames:
        level.frames = tuple(slot.frame for slot in slots)
    return ending


def keep(level: Level, slots: list[Slot], results: list[Any]) -> InvalidUpdate | None:
    """What a checkpoint keeps of the branches that finished, so a resume does not run them again.

    A branch whose step cannot be stored as JSON is not kept (a resume runs it again);
    the first such is returned, for a run that must stop now to say why.
    """
    unstorable = None
    for slot, result in zip(slots, results, strict=True):
        try:
            if isinstance(result, Parked) and result.called is not None:
                level.settled.append(settled_entry(slot.step, result.called, result.pauses[0]))
            elif isinstance(result, Failed):
                if result.records and level.plan.settle == "all":  # with "all" a failure is how the branch settled
                    entry = settled_entry(slot.step, Called(result.records, None, None, None), None)
                    entry["error"] = result.records[-1].error
                    level.settled.append(entry)
            elif result is not None and not isinstance(result, Parked):
                level.settled.append(settled_entry(slot.step, result, None))
        except InvalidUpdate as exc:
            unstorable = unstorable or exc
    return unstorable


def settled_entry(step: int, called: Called, pause: Pause | None) -> dict[str, Any]:
    """A branch's result as a checkpoint keeps it (JSON); ``pause`` if it still waits for a verdict.

    Raises:
        InvalidUpdate: the branch's update cannot be stored as JSON (naming its node and field).
    """
    hop = called.hop
    try:
        records = [record.to_json() for record in called.records]
    except (TypeError, ValueError) as exc:
        raise _unstorable(called.records, exc) from None
    return {
        "step": step,
        "records": records,
        "hop": None if hop is None else {"edge": hop.edge._asdict(), "frames": [f.to_json() for f in hop.frames]},
        "pause": None if pause is None else pause.model_dump(mode="json"),
    }


def _unstorable(records: tuple[Step, ...], exc: Exception) -> InvalidUpdate:
    """Name the node and field whose update a checkpoint cannot hold."""
    for record in records:
        for field, value in {**(record.update or {}), **(record.edit or {})}.items():
            try:
                to_jsonable(value)
            except (TypeError, ValueError) as field_exc:
                where = f" in branch {record.branch!r}" if record.branch else ""
                return InvalidUpdate(
                    f"the update of node {record.path!r}{where} (step {record.step}) cannot be checkpointed: field "
                    f"{field!r} holds {type(value).__name__}, which is not JSON-serializable ({field_exc}); store "
                    "plain data or pydantic models in the state",
                    node=record.node,
                    field=field,
                )
    return InvalidUpdate(f"a branch's step cannot be checkpointed: {exc}")


def restored(entry: Mapping[str, Any]) -> Called:
    """A settled branch as a checkpoint kept it, called again without running."""
    records = tuple(Step.from_json(record) for record in entry["records"])
    hop = entry.get("hop")
    if hop is not None:
        edge = hop["edge"]
        hop = Hop(
            FiredEdge(**{**edge, "fanout": tuple(edge.get("fanout") or ())}),
            tuple(Frame.from_json(f) for f in hop["frames"]),
        )
    return Called(records, records[-1].update, hop, None)


def kept_pause(data: Mapping[str, Any]) -> Pause:
    """The pause a settled branch still waits on, as a checkpoint kept it."""
    from ..pauses import Pause

    return Pause.model_validate(data)
