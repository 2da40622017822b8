"""Where a step is read from: a run (live or finished), or a thread in a checkpointer.

A stored step is read from the checkpoint that took it and the one before, two reads
however long the thread; otherwise the run's records are folded from its input.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from .._timeline import Walk, entries, record_key
from ..checkpoint.memory import MemoryCheckpointer
from ..history import Step
from ..plan import Plan
from ._models import Inspection
from ._step import _inspect

if TYPE_CHECKING:
    from ..checkpoint.base import Checkpoint, Checkpointer

__all__ = ["inspect_step"]


def inspect_step(
    source: Any,
    at: int | Step,
    *,
    checkpointer: Checkpointer | None = None,
    graph: Any = None,
) -> Inspection:
    """Inspect one step of a run: the state it saw, its update as a diff, every edge out
    of its node with its condition's value, tokens, cost, time, LLM messages, pauses.

    Args:
        source: a ``RunResult``, a ``Run`` (live or finished), a
            :class:`~nbgraph.replay.Replay`, or a thread id (with ``checkpointer`` and ``graph``).
        at: a step number of the run's own graph, or a ``Step`` record of its history
            (a step inside a sub-graph, or any other).
        checkpointer: the store that holds the thread (a thread id only).
        graph: the ``Graph`` (or compiled plan) the thread ran (a thread id only).

    Runs no node: the state comes from the checkpoints (two of them for a stored thread,
    whatever its length) or from the recorded updates folded through the reducers.

    Raises:
        ValueError: the run has no such step, or a thread id came without its store or graph.

    >>> result = g.invoke({"version": 0})           # doctest: +SKIP
    >>> result.inspect(2).change.changed["ok"]     # doctest: +SKIP
    Change(before=None, after=False)
    """
    if callable(getattr(source, "index_of", None)) and hasattr(source, "frames"):  # a Replay
        return source.inspect(source.index_of(at))
    if isinstance(source, str):
        if checkpointer is None or graph is None:
            raise ValueError(
                f"inspecting thread {source!r} needs the store that holds it and the graph that ran it: "
                "inspect_step(thread, step, checkpointer=store, graph=g)"
            )
        plan = _plan(graph)
        top, target = _top(at, None)
        found = _stored(plan, checkpointer, source, top, target)
        if found is None:
            raise ValueError(f"thread {source!r} has no step {top} in {checkpointer!r}")
        return found
    run = getattr(source, "run", source)  # (a RunResult's run; the result module loads this one)
    if not all(hasattr(run, name) for name in ("thread", "plan", "input", "checkpointer", "history", "state_at")):
        raise TypeError(f"cannot inspect {type(source).__name__}: give a RunResult, a Run, a Replay or a thread id")
    plan = run.plan
    store = run.checkpointer
    records = run.history
    top, target = _top(at, records)
    if store is not None:
        found = _stored(plan, store, run.thread, top, target)
        if found is not None:
            return found
    if run.input is not None:
        walk = Walk(plan, records, run.input)
    else:
        # A resumed run's step that is not in the store (it failed): from the checkpoint before it.
        mine = [e for e in entries(records, "") if e.record.step == top]
        if not mine or store is None:
            raise ValueError(_no_step(run, top))
        base = _before(store, run.thread, top)
        walk = Walk(plan, [*mine[-1].inner, mine[-1].record], _values(store, plan, base), whole=True)
    if target is None:
        target = _record_at(walk, top)
        if target is None:
            raise ValueError(_no_step(run, top))
    return _inspect(walk, target, run.thread)


def _plan(graph: Any) -> Plan:
    if isinstance(graph, Plan):
        return graph
    compile_ = getattr(graph, "compile", None)
    if compile_ is None:
        raise TypeError(f"expected a Graph or its compiled plan, got {type(graph).__name__}")
    return compile_()


def _top(at: int | Step, history: Sequence[Step] | None) -> tuple[int, Step | None]:
    """The step number of the run's own graph that ``at`` is in, and the record if one was given."""
    if isinstance(at, Step):
        if "/" not in at.path:
            return at.step, at
        if history is None:
            raise ValueError(f"give a step number of the thread's graph, not a record inside sub-graph {at.path!r}")
        key = record_key(at)
        for i, record in enumerate(history):
            if record is at or record_key(record) == key:
                container = next((r for r in history[i + 1 :] if "/" not in r.path), None)
                if container is None:
                    raise ValueError(f"the sub-graph step at {at.path!r} has no finished node in this run's history")
                return container.step, at
        raise ValueError(f"step {at.step} at {at.path!r} is not a record of this run")
    if isinstance(at, bool) or not isinstance(at, int):
        raise TypeError(f"a step to inspect is a step number or a Step record, got {type(at).__name__}")
    if at < 1:
        raise ValueError(f"step numbers start at 1 (step 0 is the input, which no node ran), got {at}")
    return at, None


def _record_at(walk: Walk, step: int) -> Step | None:
    for entry in reversed(walk.entries):
        if entry.record.step == step:
            return entry.record
    return None


def _no_step(run: Any, step: int) -> str:
    return f"run {run.thread!r} of graph {run.plan.name!r} has no step {step} (it is at step {run.step})"


def _stored(plan: Plan, store: Checkpointer, thread: str, step: int, target: Step | None) -> Inspection | None:
    """Inspect ``step`` from the checkpoint that took it and the one before: two reads,
    however long the thread (None when no checkpoint holds the step, as for a failed one)."""
    taken: Checkpoint | None = None
    checkpoint = store.get(thread, step)
    if checkpoint is None:
        # A superstep is checkpointed once, at its last branch's step; a failed step never is.
        latest = store.get(thread)
        if latest is None:
            raise ValueError(f"no thread {thread!r} in {store!r}")
        checkpoint = next(
            (found for s in range(step + 1, latest.step + 1) if (found := store.get(thread, s)) is not None), None
        )
    if checkpoint is not None and any(r.step == step and "/" not in r.path for r in checkpoint.steps):
        taken = checkpoint
    if taken is None:
        return None
    records = taken.steps
    first = min(r.step for r in records if "/" not in r.path)
    base = _before(store, thread, first)
    before = [r for r in base.steps if "/" not in r.path] if base is not None else []
    walk = Walk(plan, records, _values(store, plan, base), whole=True, before=before)
    if target is None:
        target = _record_at(walk, step)
        if target is None:
            return None
    elif walk.find(target) is None:
        return None
    return _inspect(walk, target, thread)


def _before(store: Checkpointer, thread: str, step: int) -> Checkpoint | None:
    """The latest checkpoint before ``step``."""
    for s in range(step - 1, -1, -1):
        checkpoint = store.get(thread, s)
        if checkpoint is not None:
            return checkpoint
    return None


def _values(store: Checkpointer, plan: Plan, checkpoint: Checkpoint | None) -> dict[str, Any]:
    if checkpoint is None:
        return {}
    if isinstance(store, MemoryCheckpointer):
        return dict(checkpoint.state)  # the run's own values, kept by reference
    return plan.schema.decode(checkpoint.state)
