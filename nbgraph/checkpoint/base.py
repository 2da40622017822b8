"""The checkpoint record and the checkpointer interface."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Literal, NamedTuple, Protocol, runtime_checkable

from ..history import Frame, Step
from .leases import Lease

if TYPE_CHECKING:
    from ..pauses import Pause

__all__ = ["Checkpoint", "Checkpointer", "Lease", "Status", "taken"]

Status = Literal["running", "interrupted", "failed", "aborted", "denied", "done"]


_NO_ANSWERS: Mapping[str, Any] = MappingProxyType({})


class Checkpoint(NamedTuple):
    """The state after ``step`` and where the run goes from there.

    ``frames`` are the nodes to run next (none when an approval must be settled
    first, or the run is over); ``pauses`` the requests open when the run stopped
    (several at once when parallel branches wait). ``answers`` holds every input
    answered so far, by slot, so a node re-run after a resume gets its answers back.
    ``record`` is the record of the step that led here (None at step 0), and ``inner``
    the records taken with it: the other branches when several ran together, a
    sub-graph's own steps before the step of the node that ran it (``steps`` has
    them all, in order). A run stopped inside a step keeps what it must
    not redo: ``settled`` (branches that finished while others wait) and ``levels``
    (the sub-graphs it is inside, each with its own frames). A named tuple, like
    :class:`~nbgraph.Step`, because a run with a store builds one per step.
    """

    thread: str
    graph: str
    step: int
    state: Mapping[str, Any]
    frames: tuple[Frame, ...] = ()
    status: Status = "running"
    reason: str | None = None
    pauses: tuple[Pause, ...] = ()
    answers: Mapping[str, Any] = _NO_ANSWERS
    record: Step | None = None
    inner: tuple[Step, ...] = ()
    """Records of the same step before ``record`` (kept apart so that a step of one
    node, the common case, costs no tuple)."""
    run: str | None = None
    """The run that wrote it."""
    totals: Mapping[str, Any] | None = None
    """What the run had used by this step (visits per node, tokens, cost, turns, seconds, the
    current streak of one node), so a resume need not read every step before it."""
    settled: tuple[Mapping[str, Any], ...] = ()
    """Branches of the step under way that finished while others wait (JSON)."""
    levels: Mapping[str, Any] = _NO_ANSWERS
    """The sub-graphs the run is inside, by path, each with its frames and progress (JSON)."""
    meta: Mapping[str, Any] = _NO_ANSWERS
    """What the thread keeps about itself, beside its answers: ``breakpoints`` (where its runs
    pause), ``budget`` (the limits a person was asked about, which a resume holds to) and
    ``trace`` (the trace context of the run that wrote it). JSON."""

    @property
    def steps(self) -> tuple[Step, ...]:
        """Every record of the step that led here, in order (none at step 0)."""
        if self.record is None:
            return ()
        return (*self.inner, self.record) if self.inner else (self.record,)

    @property
    def next(self) -> str | None:
        """The node to run next on the main line, or None."""
        return self.frames[0].node if self.frames else None

    def with_status(self, status: Status, **changes: Any) -> Checkpoint:
        return self._replace(status=status, **changes)


def taken(records: tuple[Step, ...] | list[Step]) -> dict[str, Any]:
    """The ``record`` and ``inner`` fields of a checkpoint whose step took ``records``."""
    if not records:
        return {"record": None, "inner": ()}
    return {"record": records[-1], "inner": tuple(records[:-1])}


@runtime_checkable
class Checkpointer(Protocol):
    """Where runs keep their progress, a checkpoint per step, keyed by thread.

    A run holds its thread with a lease (:meth:`acquire`) and passes it to every
    :meth:`put`; a store refuses a write whose lease lapsed or was taken over
    (:class:`~nbgraph.LeaseLost`). ``put`` takes the step after the thread's latest,
    or the latest again (a new status, a verdict); anything else means the stored
    thread changed under the run, and is a :class:`~nbgraph.CheckpointError`.
    """

    def acquire(self, thread: str, run: str | None = None, *, force: bool = False) -> Lease:
        """Hold ``thread`` for one run; ``force`` takes it from whoever holds it.

        Raises:
            ThreadBusy: another live run holds it (the error names the holder).
        """
        ...

    def renew(self, lease: Lease) -> Lease | None:
        """Extend ``lease``; None if it was lost."""
        ...

    def release(self, lease: Lease) -> None: ...

    def unlock(self, thread: str) -> None:
        """Drop whatever lease holds ``thread``: its run's next write is refused."""
        ...

    def put(self, thread: str, checkpoint: Checkpoint, *, lease: Lease | None = None) -> None: ...

    def get(self, thread: str, step: int | None = None) -> Checkpoint | None:
        """The latest checkpoint of ``thread`` (or the one after ``step``), or None."""
        ...

    def history(self, thread: str) -> list[Step]:
        """The steps the thread took, in order (a fork's include its parent's before it)."""
        ...

    def fork(self, thread: str, step: int, new_thread: str, *, graph: str | None = None) -> None:
        """Start ``new_thread`` from ``thread``'s checkpoint after ``step``, sharing what came before.

        The new thread's latest checkpoint is that step's, with its routing left to do
        (by ``graph``, when given, rather than the graph that ran it).
        """
        ...

    def delete(self, thread: str) -> None: ...

    def threads(self) -> list[str]: ...
