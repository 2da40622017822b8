"""A step's slots and how each one settled.

A slot is a frame of a step numbered with its step and its visit before any runs. Running
it (``branches``) gives one :data:`Outcome`, a closed union the step's close matches
exhaustively; a checkpoint keeps the outcomes that finished as *settled entries* (JSON),
so a resume takes them up instead of running their nodes again (``keep``, ``restored``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, NamedTuple, TypeAlias

from ..errors import InvalidUpdate
from ..history import FiredEdge, Frame, Step
from ..plan import Hop
from ..state import to_jsonable
from .ending import Ending

if TYPE_CHECKING:
    from ..pauses import Pause
    from .context import Context

__all__ = [
    "Called",
    "ChildFailed",
    "Ended",
    "Failed",
    "Halted",
    "Outcome",
    "Parked",
    "Settled",
    "Slot",
    "kept_pause",
    "restored",
    "settled_entry",
]


class Slot(NamedTuple):
    """A frame of a step, with the step and visit it runs as."""

    frame: Frame
    step: int
    visit: int


class Called(NamedTuple):
    """The node returned: its records (a sub-graph's own steps, then its own, whose edge is
    still to be routed), its update, and where a command it returned leads."""

    records: tuple[Step, ...]
    update: Mapping[str, Any] | None
    hop: Hop | None
    """Where a ``Goto``, ``End`` or ``Send`` the node returned leads (None: route by the edges)."""
    ctx: Context | None


class Failed(NamedTuple):
    """The node raised (or its update did not fit): its records, the last one failed, and why."""

    records: tuple[Step, ...]
    error: BaseException


class Parked(NamedTuple):
    """Waiting for a person: the pauses, and the call already made when it waits after its node."""

    pauses: tuple[Pause, ...]
    called: Called | None = None


class Halted(NamedTuple):
    """A person answered ``stop`` at a breakpoint after the node ran: the step is kept, the run stops."""

    called: Called
    reason: str


class Ended(NamedTuple):
    """The slot stopped its own way: its sub-graph stopped inside, its node ran out of time, a
    denial had nowhere to go, a cancel came at its breakpoint. What it means for the step is
    the step's to say (the run ends so, for a step of one slot; the branch fails, for one of
    several). ``records`` are those it leaves when it is given up (a failed branch under
    ``settle="all"``)."""

    ending: Ending
    records: tuple[Step, ...] = ()
    timed_out: bool = False
    """It ran out of time (the step that ends for it says so in an error event)."""


Outcome: TypeAlias = Called | Failed | Parked | Halted | Ended
"""How one slot of a step settled."""


class Settled(Exception):
    """A branch that failed before a checkpoint, with ``settle="all"``: its error, as recorded."""


class ChildFailed(Exception):
    """A branch ended with an ending of its own (a sub-graph failed, a deadline, a denial)."""

    def __init__(self, ending: Ending) -> None:
        self.reason = ending.reason or ending.outcome
        super().__init__(self.reason)


def settled_entry(step: int, called: Called, pause: Pause | None) -> dict[str, Any]:
    """A slot's result as a checkpoint keeps it (JSON); ``pause`` if it still waits for a verdict.

    Raises:
        InvalidUpdate: the slot's update cannot be stored as JSON (naming its node and field).
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
    """A settled slot as a checkpoint kept it, called again without running."""
    records = tuple(Step.from_json(record) for record in entry["records"])
    kept: Mapping[str, Any] | None = entry.get("hop")
    hop = None
    if kept is not None:
        edge: Mapping[str, Any] = kept["edge"]
        hop = Hop(
            FiredEdge(
                edge["source"],
                edge["target"],
                edge.get("label"),
                edge.get("unconditional", False),
                tuple(edge.get("fanout") or ()),
            ),
            tuple(Frame.from_json(f) for f in kept["frames"]),
        )
    return Called(records, records[-1].update, hop, None)


def kept_pause(data: Mapping[str, Any]) -> Pause:
    """The pause a settled slot still waits on, as a checkpoint kept it."""
    from ..pauses import Pause

    return Pause.model_validate(data)
