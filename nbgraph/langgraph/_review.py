"""LangGraph's review idioms read as tool pauses, and the decisions written back as their code reads them.

Three shapes of ``interrupt(value)`` ask a person to review tool calls:

- the agent inbox's ``HumanInterrupt`` (``langgraph.prebuilt.interrupt``, now
  ``langchain.agents.interrupt``), given alone or in a list: ``{"action_request": {"action",
  "args"}, "config": {"allow_accept", "allow_edit", "allow_respond", "allow_ignore"},
  "description"}``, answered with a list of ``HumanResponse``, one per request:
  ``{"type": "accept" | "edit" | "response" | "ignore", "args": ...}``;
- LangChain's ``HumanInTheLoopMiddleware`` in its ``batched`` mode, one ``HITLRequest`` per model
  turn: ``{"action_requests": [{"name", "args", "description"}], "review_configs":
  [{"action_name", "allowed_decisions", "args_schema"?}]}``, answered with ``{"decisions":
  [{"type": "approve"}, {"type": "edit", "edited_action": {"name", "args"}}, {"type": "reject",
  "message"?}, {"type": "respond", "message"}]}``;
- the same middleware in its ``per_call`` mode, one ``ToolApprovalRequest`` per call:
  ``{"type": "tool_approval", "tool_call_id", "name", "args", "description"}``, whose interrupt's
  ``response_schema`` lists the decisions allowed (and the tool's argument schema for an edit),
  answered with one such decision.

Each becomes a pause of kind ``"tool"``, one :class:`~nbgraph.pauses.ToolCallAsk` per call,
answered with nbgraph's decisions (:func:`~nbgraph.pauses.read_tool_decisions`), or with the
idioms' own answers as their clients send them (:func:`decisions_in` reads those as nbgraph's,
so they are checked and recorded alike); what the node's ``interrupt()`` returns when it runs
again is the shape its code expects (:func:`reply_of`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, Literal, NamedTuple, cast

from ..errors import ResumeError
from ..pauses import TOOL_DECISIONS, ToolCallAsk, ToolDecision

__all__ = ["Review", "decisions_in", "reply_of", "review_of"]

_INBOX_ALLOWS = {"allow_accept": "approve", "allow_edit": "edit", "allow_ignore": "reject", "allow_respond": "respond"}
"""The agent inbox's permissions, as the decisions they allow."""


class Review(NamedTuple):
    """An interrupt's value read as tool calls waiting for a person's decisions."""

    idiom: Literal["inbox", "hitl", "tool_approval"]
    """``inbox``: the agent inbox's ``HumanInterrupt``; ``hitl``: the middleware's batched
    ``HITLRequest``; ``tool_approval``: its per-call ``ToolApprovalRequest``."""
    calls: tuple[ToolCallAsk, ...]
    prompt: str
    """One line saying what to review."""


def review_of(value: Any, response_schema: Any = None) -> Review | None:
    """The review an interrupt's value asks for, or None when it is not one of the three shapes
    (or allows no decision): then it is an ordinary question."""
    calls: tuple[ToolCallAsk, ...] | None = None
    idiom: Literal["inbox", "hitl", "tool_approval"] = "inbox"
    if isinstance(value, Mapping):
        value = cast("Mapping[str, Any]", value)
        if "action_request" in value:
            calls = _inbox((value,))
        elif "action_requests" in value:
            idiom, calls = "hitl", _hitl(value)
        elif value.get("type") == "tool_approval":
            idiom, calls = "tool_approval", _tool_approval(value, response_schema)
    elif isinstance(value, (list, tuple)) and value:
        calls = _inbox(cast("Sequence[Any]", value))
    if not calls or any(not call.decisions for call in calls):
        return None
    return Review(idiom, calls, _summary(calls))


def reply_of(review: Review, decisions: Sequence[ToolDecision]) -> Any:
    """What the node's ``interrupt()`` returns for ``decisions`` (one per call, in order), in
    the shape the review's idiom answers with.

    Raises:
        ResumeError: a decision the idiom cannot carry (an agent inbox's ``ignore`` has no message).
    """
    pairs = list(zip(review.calls, decisions, strict=True))
    if review.idiom == "inbox":
        return [_inbox_reply(call, decision) for call, decision in pairs]
    replies = [_middleware_reply(call, decision) for call, decision in pairs]
    return {"decisions": replies} if review.idiom == "hitl" else replies[0]


# -- reading the requests --------------------------------------------------------------------


def _inbox(requests: Sequence[Any]) -> tuple[ToolCallAsk, ...] | None:
    calls = []
    for index, request in enumerate(requests):
        if not isinstance(request, Mapping):
            return None
        request = cast("Mapping[str, Any]", request)
        action, config = request.get("action_request"), request.get("config")
        if not isinstance(action, Mapping) or not isinstance(config, Mapping):
            return None
        action, config = cast("Mapping[str, Any]", action), cast("Mapping[str, Any]", config)
        name, arguments = action.get("action"), action.get("args", {})
        if not isinstance(name, str) or not isinstance(arguments, Mapping):
            return None
        allowed = {decision for key, decision in _INBOX_ALLOWS.items() if config.get(key) is True}
        calls.append(
            ToolCallAsk(
                call_id=str(index),
                name=name,
                description=_text(request.get("description")),
                arguments=dict(cast("Mapping[str, Any]", arguments)),
                decisions=tuple(decision for decision in TOOL_DECISIONS if decision in allowed),
            )
        )
    return tuple(calls)


def _hitl(request: Mapping[str, Any]) -> tuple[ToolCallAsk, ...] | None:
    actions, configs = request.get("action_requests"), request.get("review_configs")
    if not isinstance(actions, (list, tuple)) or not isinstance(configs, (list, tuple)) or not actions:
        return None
    actions, configs = cast("Sequence[Any]", actions), cast("Sequence[Any]", configs)
    calls = []
    for index, action in enumerate(actions):
        if not isinstance(action, Mapping):
            return None
        action = cast("Mapping[str, Any]", action)
        name, arguments = action.get("name"), action.get("args")
        if not isinstance(name, str) or not isinstance(arguments, Mapping):
            return None
        config = _config_for(name, index, configs)
        if config is None:
            return None
        allowed = config.get("allowed_decisions") or ()
        schema = config.get("args_schema")
        calls.append(
            ToolCallAsk(
                call_id=str(index),
                name=name,
                description=_text(action.get("description")),
                arguments=dict(cast("Mapping[str, Any]", arguments)),
                parameters=dict(cast("Mapping[str, Any]", schema)) if isinstance(schema, Mapping) else {},
                decisions=tuple(decision for decision in TOOL_DECISIONS if decision in allowed),
            )
        )
    return tuple(calls)


def _config_for(name: str, index: int, configs: Sequence[Any]) -> Mapping[str, Any] | None:
    """An action's review config: the one beside it (the middleware writes one per action), else
    the first for its tool (the request's type says they are "for all possible actions")."""
    beside = configs[index] if index < len(configs) else None
    if isinstance(beside, Mapping) and cast("Mapping[str, Any]", beside).get("action_name") == name:
        return cast("Mapping[str, Any]", beside)
    for config in configs:
        if isinstance(config, Mapping) and cast("Mapping[str, Any]", config).get("action_name") == name:
            return cast("Mapping[str, Any]", config)
    return None


def _tool_approval(request: Mapping[str, Any], schema: Any) -> tuple[ToolCallAsk, ...] | None:
    name, arguments, call_id = request.get("name"), request.get("args"), request.get("tool_call_id")
    if not isinstance(name, str) or not isinstance(arguments, Mapping):
        return None
    schema = cast("Mapping[str, Any]", schema) if isinstance(schema, Mapping) else {}
    branches = _branches(schema)
    decisions = tuple(decision for decision in TOOL_DECISIONS if decision in branches) if branches else TOOL_DECISIONS
    return (
        ToolCallAsk(
            call_id=str(call_id or "0"),
            name=name,
            description=_text(request.get("description")),
            arguments=dict(cast("Mapping[str, Any]", arguments)),
            parameters=_edit_schema(branches.get("edit"), schema),
            decisions=decisions,
        ),
    )


def _branches(schema: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    """A ``response_schema``'s decisions, by type: a union's members (``oneOf`` / ``anyOf``),
    or the one decision a tool that allows only one takes."""
    members = schema.get("oneOf") or schema.get("anyOf") or ([schema] if "properties" in schema else [])
    found: dict[str, Mapping[str, Any]] = {}
    for member in cast("Sequence[Any]", members):
        member = _resolved(member, schema)
        kind = member.get("properties", {}).get("type", {})
        word = kind.get("const") if isinstance(kind, Mapping) else None
        if isinstance(word, str):
            found[word] = member
    return found


def _edit_schema(edit: Mapping[str, Any] | None, root: Mapping[str, Any]) -> dict[str, Any]:
    """The tool's argument schema inside an edit decision's branch (``edited_action.args``),
    with the definitions it refers to; ``{}`` when the schema does not give one."""
    if edit is None:
        return {}
    action = _resolved(edit.get("properties", {}).get("edited_action", {}), root)
    arguments = _resolved(action.get("properties", {}).get("args", {}), root)
    if not arguments or arguments.get("type") not in ("object", None):
        return {}
    shown = dict(arguments)
    if "$defs" in root and "$ref" in json.dumps(shown):
        shown["$defs"] = root["$defs"]
    return shown


def _resolved(schema: Any, root: Mapping[str, Any]) -> Mapping[str, Any]:
    if not isinstance(schema, Mapping):
        return {}
    schema = cast("Mapping[str, Any]", schema)
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/"):
        found: Any = root
        for part in ref[2:].split("/"):
            found = found.get(part, {}) if isinstance(found, Mapping) else {}
        return cast("Mapping[str, Any]", found) if isinstance(found, Mapping) else {}
    return schema


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _summary(calls: Sequence[ToolCallAsk]) -> str:
    if len(calls) > 1:
        return f"review {len(calls)} tool calls: {', '.join(call.name for call in calls)}"
    call = calls[0]
    lines = [line.strip().lstrip("#").strip() for line in call.description.splitlines()]
    first = next((line for line in lines if line), "")
    return f"review {call.name}: {first}" if first else f"review the call to {call.name}"


# -- reading the idioms' own answers ---------------------------------------------------------

_INBOX_TYPES = {"accept": "approve", "ignore": "reject", "response": "respond", "edit": "edit"}
"""The agent inbox's ``HumanResponse`` types, as nbgraph's decisions."""


def decisions_in(calls: Sequence[ToolCallAsk], answer: Any) -> Any:
    """``answer`` with the idioms' own reply shapes read as nbgraph's decisions, one per call of
    ``calls``: the agent inbox's ``HumanResponse`` list (``[{"type": "accept", "args": None}]``,
    or one response alone), the middleware's ``{"decisions": [...]}`` and its edits'
    ``edited_action``. Anything else is returned as given (nbgraph's own decisions, or an answer
    :func:`~nbgraph.pauses.read_tool_decisions` refuses, saying why).

    Raises:
        ResumeError: a reply in one of those shapes that does not fit: an edit of another tool,
            an accept that carries arguments, a response without its text.
    """
    if isinstance(answer, Mapping) and "decisions" in answer:  # the middleware's HITLResponse
        answer = cast("Mapping[str, Any]", answer)
        stray = [key for key in answer if key != "decisions"]
        if stray:
            raise ResumeError(
                f"the middleware's answer is {{'decisions': [...]}}; {', '.join(map(repr, stray))} is not part of it"
            )
        answer = answer["decisions"]
    if isinstance(answer, (list, tuple)):
        given = cast("Sequence[Any]", answer)
        return [_decision(calls[i] if i < len(calls) else None, item) for i, item in enumerate(given)]
    if isinstance(answer, Mapping):
        return _decision(calls[0] if len(calls) == 1 else None, answer)
    return answer


def _decision(call: ToolCallAsk | None, item: Any) -> Any:
    """One reply as nbgraph's decision (``call``: the call it decides, when known)."""
    if not isinstance(item, Mapping):
        return item
    item = cast("Mapping[str, Any]", item)
    kind = item.get("type")
    if "edited_action" in item:  # the middleware's edit
        action = item["edited_action"]
        stray = [key for key in item if key not in ("type", "edited_action")]
        if kind != "edit" or stray or not isinstance(action, Mapping) or "args" not in action:
            raise ResumeError(
                "the middleware's edit looks like {'type': 'edit', 'edited_action': {'name': tool, 'args': {...}}}; "
                f"got {item!r:.200}"
            )
        action = cast("Mapping[str, Any]", action)
        _same_tool(call, action.get("name"))
        return {"type": "edit", "arguments": action["args"]}
    if "args" not in item and kind not in ("accept", "ignore", "response"):
        return item  # nbgraph's own decision (also the middleware's approve, reject and respond)
    stray = [key for key in item if key not in ("type", "args")]
    if kind not in _INBOX_TYPES or stray:
        raise ResumeError(
            "a reply with 'args' is the agent inbox's HumanResponse, {'type': 'accept' | 'edit' | 'response' | "
            f"'ignore', 'args': ...}}; got {item!r:.200} (nbgraph's own edit gives its 'arguments')"
        )
    args = item.get("args")
    if kind in ("accept", "ignore"):
        if args is not None:
            raise ResumeError(
                f"the agent inbox's {kind} carries no args (None); got {args!r:.200}"
                + (" (to change the call, edit it)" if kind == "accept" else "")
            )
        return {"type": _INBOX_TYPES[kind]}
    if kind == "response":
        if not isinstance(args, str):
            raise ResumeError(f"the agent inbox's response carries its text in 'args'; got {args!r:.200}")
        return {"type": "respond", "message": args}
    if not isinstance(args, Mapping) or "args" not in args:
        raise ResumeError(
            "the agent inbox's edit carries the whole action, {'type': 'edit', 'args': {'action': tool, "
            f"'args': {{...}}}}}}; got {args!r:.200}"
        )
    args = cast("Mapping[str, Any]", args)
    _same_tool(call, args.get("action"))
    return {"type": "edit", "arguments": args["args"]}


def _same_tool(call: ToolCallAsk | None, name: Any) -> None:
    """An edit changes a call's arguments; the tool it calls stays the one the person was shown."""
    if call is not None and name is not None and name != call.name:
        raise ResumeError(
            f"an edit changes the arguments of {call.name}, not the tool it calls; got an edit naming {name!r}"
        )


# -- writing the decisions back --------------------------------------------------------------


def _inbox_reply(call: ToolCallAsk, decision: ToolDecision) -> dict[str, Any]:
    """A ``HumanResponse``: accept and ignore carry nothing, an edit the whole action, a response its text."""
    if decision.type == "approve":
        return {"type": "accept", "args": None}
    if decision.type == "edit":
        return {"type": "edit", "args": {"action": call.name, "args": decision.arguments}}
    if decision.type == "respond":
        return {"type": "response", "args": decision.message}
    if decision.message:
        given = "respond" if "respond" in call.decisions else None
        raise ResumeError(
            f"the agent inbox's ignore, which a reject of {call.name} is, carries no message; "
            + (f"to tell the graph why, {given} with the message instead" if given else "reject it without one")
        )
    return {"type": "ignore", "args": None}


def _middleware_reply(call: ToolCallAsk, decision: ToolDecision) -> dict[str, Any]:
    """A middleware ``Decision``: an edit names the tool it edits; a reject's message is optional."""
    if decision.type == "edit":
        return {"type": "edit", "edited_action": {"name": call.name, "args": decision.arguments}}
    if decision.type == "approve" or (decision.type == "reject" and decision.message is None):
        return {"type": decision.type}
    return {"type": decision.type, "message": decision.message}
