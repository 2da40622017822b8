"""One step seen whole, read from a walk of its records.

The state it saw, its diff, its edges, its LLM exchange and pauses, and notes on what
the source does not record, such as the request sent to a model.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .._timeline import Walk, fold_entry, payload_branch
from ..history import Step
from ..reducers import AppendLog
from ._candidates import _COMMANDS, _candidates
from ._diff import _json, diff_states
from ._models import EdgeTaken, Inspection, LLMExchange, PauseSeen, ToolUse


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
    if (
        routed
        and first is not None
        and record.edge is not None
        and not first.fired
        and record.edge.label not in _COMMANDS
    ):
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
        edge=None
        if edge is None
        else EdgeTaken(
            source=edge.source,
            target=edge.target,
            targets=list(edge.targets),
            label=edge.label,
            unconditional=edge.unconditional,
        ),
        candidates=candidates,
        routed_on=("superstep" if superstep else "step") if routed else "none",
        llm=llm,
        pauses=_pauses((*record.events, *record.approval_events)),
        problems=problems,
        missing=notes,
    )


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
        elif kind == "answer" and event.pause_id in seen:
            seen[event.pause_id] = seen[event.pause_id].model_copy(
                update={"answered": True, "answer": _json(event.answer), "decision": event.decision}
            )
    return list(seen.values())
