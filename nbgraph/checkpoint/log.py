"""The log a durable store keeps per thread: a row per step, snapshots now and then.

A step's row holds its record(s) (the nodes' updates, which are small), the change it
made to the state as a patch (fields set, items appended to an ``append`` field),
and where the run goes next. A full snapshot of the state is written only when the
patches since the last one add up to its size, so a conversation that grows by a
message a step writes the same few hundred bytes a step at its end as at its start,
and reading a thread back costs one snapshot and the patches after it. A fork
points at its parent's step instead of copying what came before.

:class:`LogStore` holds that logic once; a backend (SQLite, Redis) supplies the
row reads and one atomic, lease-checked write.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, NamedTuple

from ..errors import CheckpointError, ResumeError, ThreadExists
from ..history import Frame, Step
from ..reducers import AppendLog
from ..state import to_json
from .base import Checkpoint, taken
from .leases import Lease, renewer

if TYPE_CHECKING:
    from ..pauses import Pause

__all__ = ["LogStore", "Row", "apply_patch", "diff"]

MIN_SNAPSHOT_GAP = 8192
"""Bytes of patches that may pile up after a small snapshot before the next one."""


class Row(NamedTuple):
    """One step of a thread as stored: JSON texts, decoded on demand."""

    step: int
    data: str
    """The step records, frames, status, pauses and graph as JSON."""
    patches: str
    """The changes the step made to the state, a JSON list (several when a verdict edited it)."""
    answers: str | None
    """Every answer so far by slot, as JSON; None when unchanged since the step before."""


def diff(before: Mapping[str, Any], after: Mapping[str, Any]) -> dict[str, Any]:
    """What changed from ``before`` to ``after``, in JSON form.

    Fields that are the same object are unchanged (the engine never mutates a
    value); an ``append`` field that grew in place records only its new items. The
    values are left as they are, for :func:`~nbgraph.state.to_json` to write.
    """
    changed: dict[str, Any] = {}
    extended: dict[str, Any] = {}
    for key, value in after.items():
        old = before.get(key, _MISSING)
        if old is value:
            continue
        if (
            type(value) is AppendLog
            and type(old) is AppendLog
            and value._items is old._items
            and value._len >= old._len
        ):
            extended[key] = value._items[old._len : value._len]
        else:
            changed[key] = value
    patch: dict[str, Any] = {}
    if changed:
        patch["set"] = changed
    if extended:
        patch["extend"] = extended
    return patch


_MISSING = object()


def apply_patch(state: dict[str, Any], patch: Mapping[str, Any]) -> None:
    """Fold a patch into a JSON state, in place.

    Raises:
        TypeError: ``patch`` is not a patch.
    """
    if not isinstance(patch, Mapping) or not set(patch) <= {"set", "extend"}:
        raise TypeError(f"expected a patch ({{'set': ..., 'extend': ...}}), got {patch!r:.80}")
    changed, extended = patch.get("set", {}), patch.get("extend", {})
    if not isinstance(changed, Mapping) or not isinstance(extended, Mapping):
        raise TypeError(f"a patch's set and extend are objects, got {patch!r:.80}")
    state.update(changed)
    for key, items in extended.items():
        if not isinstance(items, list):
            raise TypeError(f"a patch extends {key!r} with a list, got {items!r:.80}")
        state[key] = [*(state.get(key) or ()), *items]


# The thread's own keeping (``Checkpoint.meta``) shares the answers' column, under names no
# answer slot may take (a slot starting with "__" is refused where it is asked).
_META_SLOTS = {
    "breakpoints": "__breakpoints__",
    "budget": "__budget__",
    "trace": "__trace__",
    "standing": "__standing__",
    "decided": "__decided__",
}


def _with_meta(answers: Mapping[str, Any], meta: Mapping[str, Any]) -> Mapping[str, Any]:
    if not meta:
        return answers
    return {**answers, **{_META_SLOTS[key]: value for key, value in meta.items() if value is not None}}


def _split_meta(stored: Mapping[str, Any]) -> dict[str, Any]:
    """The ``answers`` and ``meta`` of a checkpoint, from what its column holds."""
    meta = {key: stored[slot] for key, slot in _META_SLOTS.items() if slot in stored}
    if not meta:
        return {"answers": stored}
    return {"answers": {slot: value for slot, value in stored.items() if not slot.startswith("__")}, "meta": meta}


class _Writer:
    """What a store remembers about a thread its lease holder writes: the step it is at,
    the state it wrote last (to diff against), and how far the last snapshot is."""

    __slots__ = ("step", "values", "patches", "answers", "snapshot_bytes", "delta_bytes")

    def __init__(self, step: int | None) -> None:
        self.step = step
        self.values: Mapping[str, Any] | None = None
        self.patches: list[str] = []
        """The JSON of the patches written at the current step."""
        self.answers: Mapping[str, Any] | None = None
        self.snapshot_bytes = 0
        self.delta_bytes = 0


class LogStore:
    """The shared logic of a durable store; a backend supplies the primitives below."""

    name: str
    """Where the store is (a path or a URL), for messages."""
    lease_ttl: float

    def __init__(self) -> None:
        self._writers: dict[str, _Writer] = {}

    # -- primitives a backend supplies -------------------------------------------------

    def _last(self, thread: str) -> Row | None:
        raise NotImplementedError

    def _row(self, thread: str, step: int) -> Row | None:
        raise NotImplementedError

    def _rows(self, thread: str, after: int, upto: int) -> list[Row]:
        """The rows of steps ``after < step <= upto``, in order."""
        raise NotImplementedError

    def _data(self, thread: str) -> list[tuple[int, str]]:
        """Every row's step and data, in order (for the history)."""
        raise NotImplementedError

    def _snapshot(self, thread: str, upto: int) -> tuple[int, str] | None:
        """The latest snapshot at or before ``upto``."""
        raise NotImplementedError

    def _answers(self, thread: str, upto: int) -> str | None:
        """The latest answers written at or before ``upto``."""
        raise NotImplementedError

    def _parent(self, thread: str) -> tuple[str, int] | None:
        """The thread and step a fork started from."""
        raise NotImplementedError

    def _link(self, thread: str, parent: str, step: int) -> None:
        """Record that ``thread`` was forked from ``parent`` after ``step``."""
        raise NotImplementedError

    def _write(self, thread: str, row: Row, *, replace: bool, snapshot: str | None, lease: Lease | None) -> None:
        """Write ``row`` (replacing the row of its step if ``replace``) and the snapshot, atomically.

        With a lease, the write happens only while the lease holds.

        Raises:
            LeaseLost: the lease lapsed or was taken over; nothing was written.
        """
        raise NotImplementedError

    def _drop(self, thread: str) -> None:
        raise NotImplementedError

    def renew(self, lease: Lease) -> Lease | None:
        """Extend ``lease``; None if it was lost (the backend's, as the Checkpointer protocol says)."""
        raise NotImplementedError

    # -- the log --------------------------------------------------------------------

    def _held(self, lease: Lease) -> Lease:
        """A lease just taken: this process renews it in the background until it is released."""
        renewer().hold(lease, self.renew, self.lease_ttl)
        return lease

    def release(self, lease: Lease) -> None:
        renewer().drop(lease.token)  # first: a store that cannot be reached still lets the run go
        self._writers.pop(lease.token, None)

    def put(self, thread: str, checkpoint: Checkpoint, *, lease: Lease | None = None) -> None:
        writer = self._writers.get(lease.token) if lease is not None else None
        if writer is None:
            last = self._last(thread)
            writer = _Writer(last.step if last is not None else None)
            if lease is not None:
                self._writers[lease.token] = writer
        step = checkpoint.step
        if writer.step is None and step == 0:
            replace = False
        elif writer.step is not None and step >= writer.step:
            replace = step == writer.step
        else:
            raise CheckpointError(
                f"{self.name}: thread {thread!r} is at step {writer.step} in the store, so step {step} cannot be "
                "written after it; the thread was changed by another writer or lost steps (a restarted server?)",
                store=self.name,
                thread=thread,
                step=step,
            )
        # The writer's memory changes only once the write has landed: a write that fails
        # leaves it describing what the store holds, for the next put to build on.
        patches = writer.patches if replace else []
        snapshot_bytes, delta_bytes = writer.snapshot_bytes, writer.delta_bytes
        snapshot = None
        if writer.values is None:
            # Nothing to diff against (a new writer): the state is written whole.
            snapshot = to_json(dict(checkpoint.state))
            snapshot_bytes, delta_bytes = len(snapshot), 0
        else:
            patch = diff(writer.values, checkpoint.state)
            if patch:
                text = to_json(patch)
                patches = [*patches, text]
                delta_bytes += len(text)
                if delta_bytes >= max(snapshot_bytes, MIN_SNAPSHOT_GAP):
                    snapshot = to_json(dict(checkpoint.state))
                    snapshot_bytes, delta_bytes = len(snapshot), 0
        answers = None
        kept = _with_meta(checkpoint.answers, checkpoint.meta)
        if (kept or writer.answers) and kept != writer.answers:  # (emptied counts)
            answers = to_json(dict(kept))
        row = Row(step, _encode(checkpoint), "[" + ",".join(patches) + "]", answers)
        try:
            self._write(thread, row, replace=replace, snapshot=snapshot, lease=lease)
        except BaseException:
            # Whether a failed write landed is unknown (a server may have taken it and died
            # before answering): the next put reads the thread back instead of guessing.
            if lease is not None:
                self._writers.pop(lease.token, None)
            raise
        writer.step = step
        writer.values = checkpoint.state
        writer.patches = patches
        writer.snapshot_bytes, writer.delta_bytes = snapshot_bytes, delta_bytes
        if answers is not None:
            writer.answers = kept

    def get(self, thread: str, step: int | None = None) -> Checkpoint | None:
        row = self._last(thread) if step is None else self._row(thread, step)
        if row is None:
            parent = self._parent(thread) if step is not None else None
            if parent is not None and step is not None and step < parent[1]:
                found = self.get(parent[0], step)
                return None if found is None else found._replace(thread=thread)
            return None
        data = self._decode(thread, row)
        answers = self._answers(thread, row.step)
        state = self._state(thread, row.step)
        with self._reading(thread, row.step, "checkpoint"):
            return Checkpoint(
                thread=thread,
                graph=data["graph"],
                step=row.step,
                state=state,
                frames=tuple(Frame.from_json(f) for f in data.get("frames") or ()),
                status=data["status"],
                reason=data.get("reason"),
                pauses=_pauses(data.get("pauses")),
                **_split_meta(self._loads(answers, thread, row.step) if answers else {}),
                **taken(self._records(data, thread, row.step)),
                run=data.get("run"),
                totals=data.get("totals"),
                settled=tuple(data.get("settled") or ()),
                levels=data.get("levels") or {},
            )

    def _state(self, thread: str, step: int) -> dict[str, Any]:
        snapshot = self._snapshot(thread, step)
        if snapshot is not None:
            base, text = snapshot
            state = self._loads(text, thread, base)
            rows = self._rows(thread, base, step)
        else:
            parent = self._parent(thread)
            if parent is None:
                raise CheckpointError(
                    f"{self.name}: thread {thread!r} has no snapshot of its state at or before step {step}",
                    store=self.name,
                    thread=thread,
                    step=step,
                )
            state = self._state(*parent)
            rows = self._rows(thread, parent[1] - 1, step)
        for row in rows:
            with self._reading(thread, row.step, "change to the state"):
                for patch in self._loads(row.patches, thread, row.step):
                    apply_patch(state, patch)
        return state

    def history(self, thread: str) -> list[Step]:
        parent = self._parent(thread)
        steps = [s for s in self.history(parent[0]) if s.step < parent[1]] if parent is not None else []
        for step, text in self._data(thread):
            steps.extend(self._records(self._decode(thread, Row(step, text, "[]", None)), thread, step))
        return steps

    def fork(self, thread: str, step: int, new_thread: str, *, graph: str | None = None) -> None:
        if self._last(new_thread) is not None:
            raise ThreadExists(f"thread {new_thread!r} already exists in {self.name}; fork into a new thread id")
        row = self._row(thread, step)
        if row is None:
            parent = self._parent(thread)
            if parent is not None and step < parent[1]:
                return self.fork(parent[0], step, new_thread, graph=graph)  # the step is the parent's
            raise ResumeError(f"thread {thread!r} has no checkpoint for step {step} in {self!r}")
        data = self._decode(thread, row)
        records = data.get("steps") or []
        if len(records) == 1:
            # The fork routes this step with the graph as defined now (several branches keep their routing).
            records = [{**records[0], "edge": None}]
        forked = {
            **data,
            "graph": graph or data["graph"],
            "steps": records,
            "status": "running",
            "reason": None,
            "frames": data.get("frames") if len(records) > 1 else [],
            "pauses": [],
            "settled": [],
            "levels": {},
        }
        answers = self._answers(thread, step)
        self._link(new_thread, thread, step)
        self._write(
            new_thread,
            Row(step, json.dumps(forked, separators=(",", ":")), "[]", answers),
            replace=False,
            snapshot=None,
            lease=None,
        )
        return None

    def delete(self, thread: str) -> None:
        self._drop(thread)

    # -- decoding ---------------------------------------------------------------------

    def _loads(self, text: str, thread: str, step: int) -> Any:
        try:
            return json.loads(text)
        except (ValueError, TypeError) as exc:
            raise CheckpointError(
                f"{self.name}: the row of thread {thread!r} at step {step} is not valid JSON ({exc})",
                store=self.name,
                thread=thread,
                step=step,
            ) from None

    def _decode(self, thread: str, row: Row) -> dict[str, Any]:
        data = self._loads(row.data, thread, row.step)
        # Only step 0 has no record: a row without one further on lost its step.
        records = data.get("steps") if isinstance(data, dict) else None
        if (
            not isinstance(data, dict)
            or "graph" not in data
            or "status" not in data
            or not isinstance(records, list)
            or (row.step > 0 and not records)
        ):
            raise CheckpointError(
                f"{self.name}: the row of thread {thread!r} at step {row.step} is not an nbgraph checkpoint",
                store=self.name,
                thread=thread,
                step=row.step,
            )
        return data

    @contextmanager
    def _reading(self, thread: str, step: int, what: str) -> Iterator[None]:
        """A stored value of the wrong shape is a CheckpointError naming where it is."""
        try:
            yield
        except CheckpointError:
            raise
        except Exception as exc:
            raise CheckpointError(
                f"{self.name}: the {what} of thread {thread!r} at step {step} cannot be read: {type(exc).__name__}: {exc}",
                store=self.name,
                thread=thread,
                step=step,
            ) from None

    def _records(self, data: Mapping[str, Any], thread: str, step: int) -> tuple[Step, ...]:
        with self._reading(thread, step, "step record"):
            return tuple(Step.from_json(record) for record in data["steps"])


def _encode(checkpoint: Checkpoint) -> str:
    data: dict[str, Any] = {
        "graph": checkpoint.graph,
        "run": checkpoint.run,
        "status": checkpoint.status,
        "reason": checkpoint.reason,
        "frames": [frame.to_json() for frame in checkpoint.frames],
        "pauses": [pause.model_dump(mode="json") for pause in checkpoint.pauses],
        "steps": [record.to_json() for record in checkpoint.steps],
    }
    if checkpoint.totals is not None:
        data["totals"] = checkpoint.totals
    if checkpoint.settled:
        data["settled"] = list(checkpoint.settled)
    if checkpoint.levels:
        data["levels"] = dict(checkpoint.levels)
    return to_json(data)


def _pauses(items: Any) -> tuple[Pause, ...]:
    if not items:
        return ()
    from ..pauses import Pause

    return tuple(Pause.model_validate(p) for p in items)
