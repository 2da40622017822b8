"""The inspector: one step of a run seen whole, read back without running any node.

A step's record holds what its node returned; the state the node saw is rebuilt from
the checkpoint before it (so inspecting step 2,000 of a stored thread reads two
checkpoints, not 2,000 steps) or by folding the updates before it through the
reducers. Routing is looked at again on the state routing saw: every edge out of the
node, with what its condition gives there. Conditions, maps and routers are pure by
contract, so evaluating them again runs no node; one that raises is reported with its
error, not raised.

Sources: a :class:`~nbgraph.RunResult` (``result.inspect(step)``), a live
:class:`~nbgraph.Run`, a thread in a checkpointer (:func:`inspect_step` with
``checkpointer=`` and ``graph=``), or a :class:`~nbgraph.replay.Replay` of any of them
or of an NDJSON trace (``replay.inspect(frame)``).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

import pydantic

from .checkpoint.memory import MemoryCheckpointer
from ._timeline import Walk, describe, entries, fold_entry, payload_branch, record_key, routing_ctx
from .export import routing_problems
from .history import Step
from .plan import FirstMatch, Plan, RoutedBy
from .reducers import AppendLog
from .state import to_jsonable

if TYPE_CHECKING:
    from .checkpoint.base import Checkpoint, Checkpointer

__all__ = [
    "Candidate",
    "Change",
    "EdgeTaken",
    "Inspection",
    "LLMExchange",
    "PauseSeen",
    "Problem",
    "Replaced",
    "StateDiff",
    "ToolUse",
    "diff_states",
    "inspect_step",
    "run_problems",
]


# -- what an inspection holds ------------------------------------------------------------


class _Model(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(frozen=True, extra="forbid", defer_build=True)


class Change(_Model):
    """A field's value before and after the step."""

    before: Any = None
    after: Any = None


class Replaced(_Model):
    """An item of an ``append`` field replaced in place (an item with the same id came again)."""

    index: int
    before: Any = None
    after: Any = None


class StateDiff(_Model):
    """What a step changed in the state, field by field, in JSON form.

    An ``append`` field that grew shows only its new items under ``appended`` (a
    10,000-message conversation that got one message shows that message), and items it
    replaced by id under ``replaced``; any other field that changed shows its value
    before and after under ``changed``.
    """

    added: dict[str, Any] = {}
    """Fields the state did not have before (a dict state), with their value."""
    changed: dict[str, Change] = {}
    removed: list[str] = []
    appended: dict[str, list[Any]] = {}
    replaced: dict[str, list[Replaced]] = {}

    @property
    def fields(self) -> list[str]:
        """Every field the step changed."""
        return sorted({*self.added, *self.changed, *self.removed, *self.appended, *self.replaced})


class EdgeTaken(_Model):
    """The edge routing took after the step."""

    source: str
    target: str
    targets: list[str]
    """Every target (several for a fan-out or ``Send`` items to several nodes)."""
    label: str | None = None
    """The condition's text, the router's name, or ``goto``, ``end``, ``send``, ``denied``."""
    unconditional: bool = False


class Candidate(_Model):
    """An edge out of the node, and what its condition gives on the state routing saw."""

    target: str
    targets: list[str]
    label: str
    kind: Literal["edge", "fanout", "map", "router", "goto", "send", "end", "denied"]
    """``edge``, ``fanout`` or ``map`` (declared with ``add_edge``), ``router`` (one
    candidate per target of ``add_router``), ``goto`` (a declared destination of the
    node's ``Goto``/``Send``), or a command's edge the run took without declaring it
    (``goto``, ``send``, ``end``), or where a denial went (``denied``)."""
    unconditional: bool = False
    value: Any = None
    """What the condition returned (as a bool), or the name the router returned; None
    when nothing was evaluated (a ``goto`` is the node's own choice)."""
    holds: bool | None = None
    """Whether this candidate matches on that state (None: not evaluated)."""
    error: str | None = None
    """The condition, map or router raised (``ValueError: ...``), or the step's failure names it."""
    items: int | None = None
    """For a map: how many items ``each`` gives (a branch each)."""
    chosen: bool = False
    """Evaluating the edges again picks this one (the first that holds, in declaration order)."""
    fired: bool = False
    """The run took it."""


class ToolUse(_Model):
    call_id: str
    name: str
    args: Any = None
    result: Any = None
    is_error: bool = False


class LLMExchange(_Model):
    """What an LLM node's step recorded of its talk with the model."""

    messages: list[Any] = []
    """The messages the step added to the conversation: the model's replies, tool
    results, nudges (from its update)."""
    tool_calls: list[ToolUse] = []
    errors: list[str] = []
    """Error events the node reported (tool calls left out, ...)."""
    sent: list[Any] | None = None
    """The request sent to the model; None: a step does not record it (see ``missing``)."""


class PauseSeen(_Model):
    """A pause during the step (an input, an approval, a breakpoint) and its answer."""

    id: str
    kind: str
    prompt: str = ""
    answered: bool = False
    answer: Any = None


class Problem(_Model):
    """Something wrong a run or an inspection found: ``node`` or ``edge`` names where."""

    kind: str
    """``condition-raised``, ``map-raised``, ``router-raised``, ``no-edge-matched``."""
    message: str
    node: str | None = None
    edge: dict[str, str] | None = None
    """``{"from": ..., "to": ...}``, as DAG JSON names an edge."""
    path: str = ""
    """The sub-graph node it is inside ("" for the run's graph), as ``to_dag(problems=)`` takes it."""


class Inspection(_Model):
    """One step of a run: what it saw, what it did, where it went and why."""

    thread: str | None
    graph: str
    step: int
    node: str
    path: str
    branch: str | None = None
    visit: int
    started: float | None = None
    """Wall-clock start (seconds since the epoch); None when the source does not record it."""
    duration: float = 0.0
    tokens: int = 0
    cost: float = 0.0
    turns: int = 0
    """LLM calls made during the step (an NDJSON trace does not record them)."""
    error: str | None = None
    payload: Any = None
    """The item a map, or the payload a ``Send``, gave the node instead of the state (JSON)."""
    has_payload: bool = False
    input: dict[str, Any]
    """The state the node saw, as JSON (a map's or a ``Send``'s node got ``payload`` instead)."""
    update: Any = None
    """What the node returned, as JSON."""
    edit: Any = None
    """A person's correction made when approving the step."""
    change: StateDiff
    """What the step's update (and edit) did to the state it saw."""
    edge: EdgeTaken | None = None
    candidates: list[Candidate] = []
    routed_on: Literal["step", "superstep", "none"] = "step"
    """Which state the candidates were evaluated on: the state after this step, after the
    whole superstep (branches route once all have settled), or none (the step did not route)."""
    llm: LLMExchange | None = None
    pauses: list[PauseSeen] = []
    problems: list[Problem] = []
    missing: list[str] = []
    """What the source does not record, so the inspection cannot show it."""


# -- diffs -------------------------------------------------------------------------------


def diff_states(before: Mapping[str, Any], after: Mapping[str, Any]) -> StateDiff:
    """What changed from ``before`` to ``after`` (two states' field dicts), in JSON form.

    A field holding the same object is unchanged (the engine never mutates a value);
    an ``append`` field's versions share one backing list, so finding what a step
    appended costs the appended items, not the conversation.
    """
    added: dict[str, Any] = {}
    changed: dict[str, Change] = {}
    appended: dict[str, list[Any]] = {}
    replaced: dict[str, list[Replaced]] = {}
    for key, value in after.items():
        if key not in before:
            added[key] = _json(value)
            continue
        old = before[key]
        if old is value:
            continue
        grown = _grown(old, value)
        if grown is not None:
            new_items, swapped = grown
            if new_items:
                appended[key] = [_json(item) for item in new_items]
            if swapped:
                replaced[key] = [Replaced(index=i, before=_json(a), after=_json(b)) for i, a, b in swapped]
            continue
        if _equal(old, value):
            continue
        changed[key] = Change(before=_json(old), after=_json(value))
    removed = [key for key in before if key not in after]
    return StateDiff(added=added, changed=changed, removed=removed, appended=appended, replaced=replaced)


def _grown(old: Any, new: Any) -> tuple[Sequence[Any], list[tuple[int, Any, Any]]] | None:
    """For a list that kept its items and grew: the new items and those replaced in place."""
    if type(old) is AppendLog and type(new) is AppendLog and old._items is new._items and new._len >= old._len:
        return new._items[old._len : new._len], []  # one backing list: nothing before was replaced
    if not isinstance(old, (list, tuple, AppendLog)) or not isinstance(new, (list, tuple, AppendLog)):
        return None
    if len(new) < len(old):
        return None
    swapped = [(i, a, b) for i, (a, b) in enumerate(zip(old, new)) if a is not b and not _equal(a, b)]
    if len(swapped) > len(old) // 2 and swapped:
        return None  # a new list, not the old one grown
    return list(new[len(old) :]), swapped


def _equal(a: Any, b: Any) -> bool:
    try:
        return bool(a == b)
    except Exception:
        return False


def _json(value: Any) -> Any:
    return to_jsonable(value, strict=False)


# -- building an inspection ------------------------------------------------------------------


def _inspect(walk: Walk, target: Step, thread: str | None, missing: Sequence[str] = ()) -> Inspection:
    found = walk.find(target)
    if found is None:
        raise ValueError(f"step {target.step} at {target.path!r} is not among the records read")
    i, inside = found
    if inside:
        return _inspect(walk.descend(i), target, thread, missing)
    plan = walk.plan
    entry = walk.entries[i]
    record = entry.record
    seen = walk.seen[i]
    # (The walk's own fold, when the step was alone: an append field then shares its
    # backing list with the state before, and its diff costs the items appended.)
    after = walk.routing[i] if len(walk.groups[i]) == 1 else fold_entry(plan, seen, entry)
    notes = [*walk.missing, *missing]
    has_payload, payload = False, None
    if payload_branch(record):
        has_payload, payload = walk.payload(i)
        if not has_payload:
            notes.append(
                f"the payload node {record.node!r} ran on is not recorded (a Send's payload, or a map whose items "
                "could not be listed again)"
            )
    node = plan.nodes.get(record.node)
    if node is None:
        notes.append(f"graph {plan.name!r} has no node {record.node!r} now, so its edges cannot be shown")
    routed = record.error is None and record.edge is not None
    superstep = len(walk.groups[i]) > 1
    candidates, problems = _candidates(plan, node, record, walk.routing[i] if routed else seen, routed, walk.prefix)
    first = next((c for c in candidates if c.chosen), None)
    if routed and first is not None and record.edge is not None and not first.fired and record.edge.label not in _COMMANDS:
        notes.append(
            f"evaluated again, routing picks {first.label!r} -> {first.target!r}, but the run took "
            f"{record.edge.label!r} -> {record.edge.target!r}: a condition is not pure, or reads what the "
            "context does not give again"
        )
    llm = _llm(node, record)
    if llm is not None:
        notes.append(
            "the request sent to the model (system prompt, the conversation's window, the revision note, "
            "steering) is not recorded; input['messages'] is the conversation the node read"
        )
    edge = record.edge
    return Inspection(
        thread=thread,
        graph=plan.name,
        step=record.step,
        node=record.node,
        path=record.path,
        branch=record.branch,
        visit=record.visit,
        started=record.started or None,
        duration=record.duration,
        tokens=record.tokens,
        cost=record.cost,
        turns=record.turns,
        error=record.error,
        payload=_json(payload) if has_payload else None,
        has_payload=has_payload,
        input=_json(dict(seen)),
        update=_json(record.update),
        edit=_json(record.edit),
        change=diff_states(seen, after),
        edge=None if edge is None else EdgeTaken(
            source=edge.source, target=edge.target, targets=list(edge.targets), label=edge.label, unconditional=edge.unconditional
        ),
        candidates=candidates,
        routed_on=("superstep" if superstep else "step") if routed else "none",
        llm=llm,
        pauses=_pauses((*record.events, *record.approval_events)),
        problems=problems,
        missing=notes,
    )


_COMMANDS = ("goto", "end", "send", "denied")


def _candidates(
    plan: Plan, node: Any, record: Step, values: dict[str, Any], routed: bool, prefix: str
) -> tuple[list[Candidate], list[Problem]]:
    """Every edge out of ``record``'s node; evaluated on ``values`` when the step routed."""
    if node is None:
        return [], []
    path = prefix[:-1]
    view = plan.schema.view(values)
    ctx = routing_ctx(plan, record) if node.wants_ctx else None
    edge = record.edge
    command = edge is not None and edge.label in _COMMANDS
    out: list[Candidate] = []
    problems: list[Problem] = []
    owner = getattr(node.decide, "__self__", None)
    if isinstance(owner, FirstMatch):
        chosen = False
        for c in owner.candidates:
            targets = list(c.hop.edge.targets)
            kind = "map" if c.each is not None else "fanout" if len(targets) > 1 else "edge"
            label = c.label or "always"
            value = holds = error = items = None
            if routed:
                if c.when is None:
                    holds = True
                else:
                    try:
                        value = holds = bool(c.when(view, ctx) if c.takes_ctx else c.when(view))
                    except Exception as exc:
                        error = describe(exc)
                        problems.append(Problem(
                            kind="condition-raised", edge={"from": record.node, "to": c.target}, path=path,
                            message=f"the condition of edge {record.node} -> {c.target} [{c.label}] raised {error}",
                        ))
                if holds and c.each is not None:
                    try:
                        items = len(list(c.each(view, ctx) if c.each_ctx else c.each(view)))
                    except Exception as exc:
                        error = describe(exc)
                        problems.append(Problem(
                            kind="map-raised", edge={"from": record.node, "to": c.target}, path=path,
                            message=f"the map of edge {record.node} -> {c.target} [{c.label}] raised {error}",
                        ))
            pick = bool(holds) and not chosen and error is None
            chosen = chosen or pick
            fired = (
                edge is not None and not command and edge.source == record.node and edge.target == c.target
                and edge.label == c.label and tuple(edge.targets) == tuple(targets)
            )
            out.append(Candidate(
                target=c.target, targets=targets, label=label, kind=kind, unconditional=c.when is None,
                value=value, holds=holds, error=error, items=items, chosen=pick, fired=fired,
            ))
    elif isinstance(owner, RoutedBy):
        returned: Any = None
        error = None
        if routed:
            try:
                returned = owner.fn(view, ctx) if owner.takes_ctx else owner.fn(view)
            except Exception as exc:
                error = describe(exc)
            else:
                if not isinstance(returned, str) or returned not in owner.valid:
                    error = f"returned {returned!r}, which is not one of its targets: {', '.join(owner.valid)}"
            if error is not None:
                problems.append(Problem(
                    kind="router-raised", node=record.node, path=path,
                    message=f"router {owner.label!r} of node {record.node!r} {'raised ' if 'returned' not in error else ''}{error}",
                ))
        for target in owner.valid:
            holds = None if not routed or error is not None else returned == target
            out.append(Candidate(
                target=target, targets=[target], label=owner.label, kind="router",
                value=returned if routed and error is None else None, holds=holds, error=error,
                chosen=bool(holds), fired=edge is not None and not command and edge.target == target,
            ))
    spec = node.spec
    for target in spec.destinations or ():
        fired = command and edge is not None and target in edge.targets
        out.append(Candidate(target=target, targets=[target], label="goto", kind="goto", fired=fired))
    if edge is not None and command and not any(c.fired for c in out):
        kind = "denied" if edge.label == "denied" else edge.label
        out.append(Candidate(target=edge.target, targets=list(edge.targets), label=edge.label or kind, kind=kind, fired=True))  # type: ignore[arg-type]
    if record.error is not None:
        problems.extend(Problem(**{**found, "path": path}) for found in routing_problems(plan, record.error))
        for found in problems:
            for i, candidate in enumerate(out):
                if found.edge == {"from": record.node, "to": candidate.target} or (found.node == record.node and candidate.kind == "router"):
                    out[i] = candidate.model_copy(update={"error": found.message})
    return out, problems


def _llm(node: Any, record: Step) -> LLMExchange | None:
    kind = node.spec.kind if node is not None else None
    calls: dict[str, ToolUse] = {}
    errors: list[str] = []
    for event in record.events:
        kind_ = getattr(event, "type", None)
        if kind_ == "tool-call":
            calls[event.call_id] = ToolUse(call_id=event.call_id, name=event.name, args=_json(event.args))
        elif kind_ == "tool-result":
            used = calls.get(event.call_id) or ToolUse(call_id=event.call_id, name=event.name)
            calls[event.call_id] = used.model_copy(update={"result": _json(event.result), "is_error": event.is_error})
        elif kind_ == "error":
            errors.append(event.error)
    if kind != "llm" and not calls and not record.turns:
        return None
    update = record.update or {}
    messages = update.get("messages") if isinstance(update, Mapping) else None
    if messages is None:
        messages = []
    elif not isinstance(messages, (list, tuple, AppendLog)):
        messages = [messages]
    return LLMExchange(messages=[_json(m) for m in messages], tool_calls=list(calls.values()), errors=errors)


def _pauses(events: Sequence[Any]) -> list[PauseSeen]:
    seen: dict[str, PauseSeen] = {}
    for event in events:
        kind = getattr(event, "type", None)
        if kind == "interrupt":
            pause = event.pause
            seen[pause.id] = PauseSeen(id=pause.id, kind=pause.kind, prompt=pause.prompt)
        elif kind == "resume" and event.pause_id in seen:
            seen[event.pause_id] = seen[event.pause_id].model_copy(update={"answered": True, "answer": _json(event.answer)})
    return list(seen.values())


# -- sources -------------------------------------------------------------------------------


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
    run = getattr(source, "_run", source)
    walker = getattr(run, "_walker", None)
    if walker is None:
        raise TypeError(f"cannot inspect {type(source).__name__}: give a RunResult, a Run, a Replay or a thread id")
    plan = run.plan
    store = walker.persistence.store
    history = walker.history
    if isinstance(at, Step) and "/" in at.path and not any(r is at or record_key(r) == record_key(at) for r in history):
        history = walker.full_history()  # a step of an earlier run of the thread
    top, target = _top(at, history)
    if store is not None:
        found = _stored(plan, store, run.thread, top, target)
        if found is not None:
            return found
    records = walker.history
    if walker.input is not None:
        walk = Walk(plan, records, walker.input)
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


# -- problems a run shows ---------------------------------------------------------------------


def run_problems(source: Any) -> list[Problem]:
    """The problems a run met: conditions, maps and routers that raised, nodes no edge out of
    matched (from its failed steps and from how it ended), each where the graph drew it.

    ``to_dag(plan, history, problems=[p.model_dump() for p in run_problems(result)])``
    puts them on the drawing; ``result.to_dag()`` shows those its failed steps recorded.
    """
    run = getattr(source, "_run", source)
    plan = run.plan
    found: list[Problem] = []

    levels = dict(_levels(plan, ""))

    def add(text: str, paths: Sequence[str]) -> None:
        for path in paths:
            level = levels.get(path)
            for problem in routing_problems(level, text) if level is not None else ():
                seen = Problem(**problem, path=path)
                if seen not in found:
                    found.append(seen)

    for record in run.history:
        if record.error is not None:
            add(record.error, [record.path.rpartition("/")[0]])
    result = getattr(run, "_result", None)
    error = getattr(result, "error", None) if result is not None else None
    if error is not None:
        add(str(error), list(levels))  # (the error does not say which level it came from)
    return found


def _levels(plan: Plan, path: str) -> Iterator[tuple[str, Plan]]:
    """The plan and every sub-graph's plan inside it, by path."""
    yield path, plan
    for name, node in plan.nodes.items():
        if node.subplan is not None:
            yield from _levels(node.subplan, f"{path}/{name}" if path else name)

