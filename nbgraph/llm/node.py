"""``llm_node``: a graph node that calls a model, runs its tools, and updates the state.

One execution of the node is one agent turn: the prompt is the node's system prompt
plus the conversation in ``state.messages``; the model may call tools for up to
``max_tool_rounds`` rounds (calls in a reply asked for without tools are never run);
the node returns the new messages (each assistant message stamped with the node's
name) and whatever ``extract`` / ``output`` / ``wrappers`` take from the final text. Budgets are checked before every call and
charged with the tokens and cost the model reports.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal

import pydantic

from ..deadlines import Deadline, tool_deadline
from ..errors import RunFailed
from ..secrets import redact
from .messages import (
    AssistantMessage,
    SystemMessage,
    ToolMessage,
    UserMessage,
    as_messages,
    state_field,
    window_start,
)
from .model import ChatRequest, Completion
from .resolve import resolve_model
from .tools import Approval, Tool, as_tool
from .wire_names import WireNames

__all__ = ["MAX_EMPTY_REPLIES", "llm_node", "parse_wrappers", "intercept_models"]

MAX_EMPTY_REPLIES = 3
"""Empty replies are nudged this many times; the next one fails the run."""

EMPTY_REPLY_NUDGE = "Your reply was empty. Answer the request, or call one of the tools."
NO_TOOLS_NUDGE = "No tools are available now, and the calls in your reply were not run. Answer the request in text."
DUPLICATE_NOTE = "[skipped: duplicate call — the same tool with the same arguments already ran; its result is above]"
WRAPPER_INSTRUCTIONS = (
    "End every reply with exactly one status tag: <done>what you finished</done> when the task "
    "is complete, <blocked>what you need</blocked> when you cannot go on, or "
    "<continue>what comes next</continue> when you need another turn."
)
_WRAPPER = re.compile(r"<(?:agent_)?(done|blocked|continue)>(.*?)</(?:agent_)?\1>", re.IGNORECASE | re.DOTALL)

_INTERCEPTORS: list[Callable[[Any, Any], Any]] = []


def intercept_models(interceptor: Callable[[Any, Any], Any]) -> Callable[[], None]:
    """Have LLM nodes call their model through ``interceptor(model, ctx)`` from now on; returns
    a function that stops it.

    What the interceptor returns (a model: ``name`` and ``async complete()``) is called in the
    model's place for the rest of the node's execution: a tracer times each call, reads its
    request and reply and sees it fail, without any of it entering the run's events or
    checkpoints.
    """
    _INTERCEPTORS.append(interceptor)

    def stop() -> None:
        if interceptor in _INTERCEPTORS:
            _INTERCEPTORS.remove(interceptor)

    return stop


def parse_wrappers(text: str) -> tuple[str, str, str | None]:
    """Split a reply into (visible text, status, report).

    The status is ``done``, ``blocked`` or ``continue`` from the last wrapper tag in
    the text (``<done>...</done>``, also spelled ``<agent_done>``), or
    ``in_progress`` when there is none; every tag is removed from the visible text.
    """
    found = list(_WRAPPER.finditer(text))
    if not found:
        return text, "in_progress", None
    last = found[-1]
    visible = _WRAPPER.sub("", text).strip()
    return visible, last.group(1).lower(), last.group(2).strip() or None


def llm_node(
    system: str = "",
    *,
    model: Any = None,
    tools: Sequence[Callable[..., Any] | Tool] = (),
    tool_choice: Literal["auto", "required", "none"] = "auto",
    required_until: int | None = None,
    max_tool_rounds: int = 5,
    extract: Callable[[str], Mapping[str, Any]] | None = None,
    output: type[pydantic.BaseModel] | None = None,
    feedback: bool = True,
    wrappers: bool = False,
    max_context_tokens: int | None = None,
    approval: Mapping[str, Approval] | None = None,
    deadline: Mapping[str, Deadline | float] | None = None,
    name: str | None = None,
) -> Callable[..., Any]:
    """Build an LLM node: ``g.add_node("agent", llm_node(system="...", tools=[search]))``.

    Args:
        system: the node's system prompt.
        model: a model object or name; default: the graph's ``model``, then the
            environment, then the offline demo model.
        tools: functions (or :func:`tool` objects, or the tools of an MCP server:
            :func:`~nbgraph.llm.mcp_tools`) the model may call.
        tool_choice: ``auto``, ``required`` (must call a tool) or ``none``.
        required_until: with tools, force a tool call until this many distinct tools
            have been used in the conversation (at least 2, at most the number of
            tools), then let the model answer freely.
        max_tool_rounds: rounds of tool calls per execution; after the last, the
            model is asked for an answer without tools. Tool calls in a reply to a
            request without tools (this one, or ``tool_choice="none"``) are never run:
            the reply's text stands as the answer, the calls are left out of the
            conversation, and an ``error`` event in the step's events names them. A
            reply with only such calls counts as empty and is nudged.
        extract: ``fn(final_text) -> dict`` merged into the state update.
        output: a pydantic model the final reply must be JSON for; its fields are
            merged into the update. Invalid JSON gets one repair request.
        feedback: on a revisit, tell the model this is a revision (seed wording).
        wrappers: ask for ``<done>`` / ``<blocked>`` / ``<continue>`` status tags,
            strip them from the visible text, and set ``status`` (and
            ``status_report``) in the update for the graph's edges to route on.
        max_context_tokens: keep only the newest messages within this many
            (estimated) tokens in the prompt; the state keeps them all.
        approval: which calls wait for a person's decision before they run, by tool
            name (``{"send_email": True, "refund": lambda args: args.amount > 100}``);
            a tool not named keeps its own policy (``tool(approval=...)``; an MCP
            server's tools: from its annotations). The calls of one reply that need a
            decision pause together, each with its own pause of kind ``tool``, and no
            call of that reply runs until each is decided: approved, edited (new
            arguments), rejected (the model reads the person's message as the result)
            or answered in the tool's place.
        deadline: how long a call waits for that decision, by tool name
            (``{"send_email": Deadline(600)}``: rejected after ten minutes, the model told
            nobody decided in time; ``then=`` decides otherwise); a tool not named keeps its
            own (``tool(deadline=...)``).
        name: the function's name (shown in tracebacks); default ``llm_node``.
    """
    if tool_choice not in ("auto", "required", "none"):
        raise ValueError(f"tool_choice must be 'auto', 'required' or 'none', not {tool_choice!r}")
    if max_tool_rounds < 0:
        raise ValueError("max_tool_rounds must be 0 or more")
    own = {t.name: t for t in map(as_tool, tools)}
    if len(own) != len(tools):
        raise ValueError("two tools share a name: " + ", ".join(as_tool(t).name for t in tools))
    # The model knows each tool by a name its API accepts (an MCP tool's "git.status" is
    # "git_status" there); the conversation keeps the names the model used.
    names = WireNames(own)
    toolbox = {names.wire(name): tool for name, tool in own.items()}
    policies = {names.wire(name): policy for name, policy in _policies(own, approval or {}).items()}
    deadlines = _deadlines(own, deadline or {}, policies, names.wire)
    schemas = [_as_named(tool.schema, wire) for wire, tool in toolbox.items()]
    prompt = system.strip()
    if output is not None:
        schema = json.dumps(output.model_json_schema())
        prompt += f"\n\nReply with only a JSON object that matches this JSON schema:\n{schema}"
    if wrappers:
        prompt += "\n\n" + WRAPPER_INSTRUCTIONS
    threshold = None
    if required_until is not None and toolbox:
        threshold = max(2, min(required_until, len(toolbox)))

    async def node(state: Any, ctx: Any) -> dict[str, Any]:
        chat_model = resolve_model(model, ctx.model)
        for intercept in _INTERCEPTORS:
            chat_model = intercept(chat_model, ctx)
        turn = _Turn(ctx, chat_model, toolbox, policies, deadlines)
        history = as_messages(state_field(state, "messages") or ())
        window = _window(history, state, max_context_tokens)
        head = [SystemMessage(id="system", content=prompt)] if prompt else []
        # The revision note follows the conversation: it points at the output "above".
        note = ctx.revision_note if feedback else None
        past = [*window, SystemMessage(id="revision", content=note)] if note else window
        turn.failed_last = _failed_calls_of_last_turn(history)
        # A run that stopped at this turn's tool calls takes up the turn where it stopped.
        pending = turn.take_up(ctx.kept(_KEPT_TURN))
        if pending is None:
            turn.new.extend(UserMessage(content=text) for text in ctx.take_steering())

        def request(choice: str) -> ChatRequest:
            return ChatRequest(
                messages=[*head, *past, *turn.new],
                tools=schemas if choice != "none" else (),
                tool_choice=choice,
                node=ctx.path,
            )

        while True:
            if pending is None:
                choice = tool_choice
                if threshold is not None and _distinct_tools(history, turn.new) < threshold:
                    choice = "required"
                if not toolbox:
                    turn.no_tools = "the node has no tools"
                    choice = "none"
                elif turn.rounds >= max_tool_rounds:
                    turn.no_tools = f"its max_tool_rounds={max_tool_rounds} were used up"
                    choice = "none"
                reply = await turn.ask(request(choice))
                if not reply.tool_calls:
                    break
                turn.rounds += 1
                calls = reply.tool_calls
            else:
                calls, pending = pending, None
            decisions = await turn.review(calls)
            if await turn.run_tools(calls, decisions):
                break  # a completion tool ran: the turn is over
            turn.new.extend(UserMessage(content=text) for text in ctx.take_steering())
        if turn.reviewed:
            ctx.keep(_KEPT_TURN, None)

        text = turn.final_text
        update: dict[str, Any] = {}
        if wrappers:
            visible, status, report = parse_wrappers(text)
            turn.restate(visible)
            text = visible
            update["status"] = status
            update["status_report"] = report
        if output is not None:
            update.update(await turn.structured(output, lambda: request("none")))
        if extract is not None:
            extracted = extract(text)
            if not isinstance(extracted, Mapping):
                raise TypeError(f"extract() of node {ctx.node!r} must return a dict, got {type(extracted).__name__}")
            update.update(extracted)
        update["messages"] = turn.new
        return update

    node.__name__ = node.__qualname__ = name or "llm_node"
    node.__doc__ = prompt or "An LLM node."
    node.nbgraph_kind = "llm"  # type: ignore[attr-defined]
    node.nbgraph_tools = list(own)  # type: ignore[attr-defined]
    return node


_KEPT_TURN = "turn"
"""What an LLM node keeps (``ctx.keep``) of its turn while its tool calls wait for decisions."""


def _as_named(schema: dict[str, Any], wire: str) -> dict[str, Any]:
    if schema["function"]["name"] == wire:
        return schema
    return {**schema, "function": {**schema["function"], "name": wire}}


def _policies(toolbox: Mapping[str, Tool], given: Mapping[str, Approval]) -> dict[str, Approval]:
    """Each tool's approval policy: the node's, else the tool's own."""
    unknown = [name for name in given if name not in toolbox]
    if unknown:
        raise ValueError(
            f"approval= names {', '.join(map(repr, unknown))}, which the node does not have; "
            f"its tools are: {', '.join(toolbox) or 'none'}"
        )
    for name, policy in given.items():
        if not (isinstance(policy, bool) or callable(policy)):
            raise TypeError(
                f"approval= for tool {name!r} must be True, False or a function of the arguments, not {policy!r}"
            )
    return {name: given.get(name, tool.approval) for name, tool in toolbox.items()}


def _deadlines(
    toolbox: Mapping[str, Tool],
    given: Mapping[str, Deadline | float],
    policies: Mapping[str, Approval],
    wire: Callable[[str], str],
) -> dict[str, Deadline]:
    """Each tool's deadline for a decision, by its name: the node's, else the tool's own."""
    unknown = [name for name in given if name not in toolbox]
    if unknown:
        raise ValueError(
            f"deadline= names {', '.join(map(repr, unknown))}, which the node does not have; "
            f"its tools are: {', '.join(toolbox) or 'none'}"
        )
    deadlines: dict[str, Deadline] = {}
    for name, tool in toolbox.items():
        if name in given:
            if policies[wire(name)] is False:
                raise ValueError(
                    f"deadline= for tool {name!r} bounds how long a call waits for a decision, but its calls "
                    f"never wait for one; give approval={{{name!r}: True}} with it"
                )
            chosen = tool_deadline(given[name], f"deadline= for tool {name!r}")
        else:
            chosen = tool.deadline
        if chosen is not None:
            deadlines[name] = chosen
    return deadlines


class _Turn:
    """One execution of an LLM node: the messages it adds and its guardrails' memory."""

    def __init__(
        self,
        ctx: Any,
        model: Any,
        toolbox: dict[str, Tool],
        policies: Mapping[str, Approval],
        deadlines: Mapping[str, Deadline],
    ) -> None:
        self.ctx = ctx
        self.model = model
        self.toolbox = toolbox
        self.policies = policies
        self.deadlines = deadlines
        """Each tool's deadline for a decision, by the tool's own name."""
        self.rounds = 0  # rounds of tool calls made
        self.reviewed = False  # some call of this turn waited for a person's decision
        self.new: list[Any] = []
        self.results: dict[str, str] = {}  # call key -> result of a successful call
        self.failed_last: set[str] = set()  # call keys that failed in the previous round
        self.empty = 0
        self.dropped = 0  # replies whose tool calls were not run: no tools were offered
        self.no_tools = "tool_choice='none'"  # why a request offers no tools, for the error event
        self.calls = 0  # model calls made in this turn
        self.streaming = 0  # the call whose text is streaming (0: none has streamed yet)

    @property
    def final_text(self) -> str:
        for message in reversed(self.new):
            if message.role == "assistant":
                return message.content
        return ""

    def _stream(self, text: str) -> None:
        if self.streaming != self.calls:
            # The first piece of another reply in this turn: start it on a new line.
            if self.streaming:
                text = "\n" + text
            self.streaming = self.calls
        self.ctx.emit("text-delta", text=text)

    def restate(self, visible: str) -> None:
        """Replace the last assistant message's text (wrapper tags stripped)."""
        for i in range(len(self.new) - 1, -1, -1):
            if self.new[i].role == "assistant":
                self.new[i] = self.new[i].model_copy(update={"content": visible})
                return

    async def ask(self, request: ChatRequest) -> Completion:
        """Call the model once, nudging empty replies; append and return the reply."""
        ctx = self.ctx
        while True:
            await ctx.within_budget()
            self.calls += 1
            reply = await self.model.complete(request, self._stream)
            ctx.add_usage(tokens=reply.tokens, cost=reply.cost, turns=1)
            dropped = bool(reply.tool_calls) and request.tool_choice == "none"
            if dropped:
                # The model ignored "no tools": a cap such as max_tool_rounds must hold anyway.
                self._drop(reply.tool_calls)
                reply = dataclasses.replace(reply, tool_calls=())
            if reply.text.strip() or reply.tool_calls:
                self.new.append(AssistantMessage(content=reply.text, tool_calls=reply.tool_calls, node=ctx.node))
                return reply
            self.empty += 1
            if self.empty > MAX_EMPTY_REPLIES:
                ignored = f"; {self.dropped} only called tools, which were not run" if self.dropped else ""
                raise RunFailed(
                    f"empty replies: node {ctx.node!r} got {self.empty} empty replies from "
                    f"{self.model.name!r} (nudged {MAX_EMPTY_REPLIES} times{ignored})"
                )
            self.new.append(UserMessage(content=NO_TOOLS_NUDGE if dropped else EMPTY_REPLY_NUDGE))
            request = dataclasses.replace(request, messages=[*request.messages, self.new[-1]])

    def _drop(self, calls: Sequence[Any]) -> None:
        """Leave out the calls of a reply asked for without tools, and say so in an error event."""
        self.dropped += 1
        listed = ", ".join(f"{call.name}({_shortened(_arguments_text(call))})" for call in calls)
        self.ctx.emit(
            "error",
            error=f"node {self.ctx.node!r} did not run the tool calls {listed}: the model was asked "
            f"for an answer without tools ({self.no_tools})",
            error_type="ToolCallsNotRun",
        )

    # -- decisions before tools run ------------------------------------------------------

    def _needs_decision(self, call: Any) -> bool:
        tool = self.toolbox.get(call.name)
        if tool is None or call.raw_arguments is not None or _call_key(call) in self.results:
            return False  # it fails, or repeats a call that ran, without running anything
        policy = self.policies[call.name]
        if isinstance(policy, bool):
            return policy
        try:
            arguments = tool.checked(call.arguments)
        except pydantic.ValidationError:
            return False  # it fails validation and runs nothing; the model is told why
        try:
            return bool(policy(arguments))
        except Exception as exc:
            raise RunFailed(
                f"the approval policy of tool {call.name!r} in node {self.ctx.node!r} raised "
                f"{type(exc).__name__}: {exc}"
            ) from exc

    async def review(self, calls: Sequence[Any]) -> list[Any]:
        """A person's decision on each of ``calls`` whose policy asks for one (None for those it
        does not), in their order; the run waits (or stops) until each is decided, before any
        call of the batch runs. By place, not by call id: a provider may send an id twice."""
        from ..pauses import ToolCallAsk

        asking = [place for place, call in enumerate(calls) if self._needs_decision(call)]
        decisions: list[Any] = [None] * len(calls)
        if not asking:
            return decisions
        asks = [
            ToolCallAsk(
                call_id=calls[place].id,
                name=self.toolbox[calls[place].name].name,
                description=self.toolbox[calls[place].name].description,
                arguments=calls[place].arguments,
                parameters=self.toolbox[calls[place].name].schema["function"]["parameters"],
                deciders=self.toolbox[calls[place].name].deciders,
            )
            for place in asking
        ]
        self.reviewed = True
        # If the run cannot wait, this node runs again from its start once the decisions come:
        # it takes the turn up from here rather than asking the model again or running a tool twice.
        self.ctx.keep(_KEPT_TURN, self._kept())
        decided = await self.ctx.review_tool_calls(asks, deadlines=self.deadlines or None)
        for place, decision in zip(asking, decided, strict=True):
            decisions[place] = decision[0]
        return decisions

    def _kept(self) -> dict[str, Any]:
        ctx = self.ctx
        # Messages as they are (immutable): a checkpoint writes them as JSON if one is taken.
        return {
            "new": list(self.new),
            "results": dict(self.results),
            "failed_last": sorted(self.failed_last),
            "rounds": self.rounds,
            "usage": [ctx.tokens, ctx.cost, ctx.turns],
            "counts": [self.calls, self.empty, self.dropped],
        }

    def take_up(self, kept: Any) -> tuple[Any, ...] | None:
        """Take up a turn that stopped at its last reply's tool calls (``kept`` by :meth:`review`):
        those calls, to be decided; None for a fresh turn."""
        if not isinstance(kept, Mapping):
            return None
        self.reviewed = True
        self.new = as_messages(kept["new"])
        self.results = dict(kept["results"])
        self.failed_last = set(kept["failed_last"])
        self.rounds = kept["rounds"]
        self.calls, self.empty, self.dropped = kept["counts"]
        tokens, cost, turns = kept["usage"]
        self.ctx.add_usage(tokens=tokens, cost=cost, turns=turns)
        self._tell_taken_up()
        return self.new[-1].tool_calls

    def _tell_taken_up(self) -> None:
        """The step's record shows the tool calls made before the stop, where a live run's are."""
        calls = {call.id: call for message in self.new if message.role == "assistant" for call in message.tool_calls}
        for message in self.new:
            if message.role != "tool":
                continue
            call = calls.get(message.tool_call_id)
            args = {} if call is None else call.arguments if call.raw_arguments is None else call.raw_arguments
            self.ctx.emit("tool-call", call_id=message.tool_call_id, name=message.name, args=args)
            self.ctx.emit(
                "tool-result",
                call_id=message.tool_call_id,
                name=message.name,
                result=message.content,
                is_error=message.is_error,
            )

    def _edited(self, call: Any, arguments: dict[str, Any]) -> Any:
        """``call`` with a person's arguments, also in the reply that asked for it: the model
        reads the call that ran."""
        edited = call.model_copy(update={"arguments": arguments})
        for i in range(len(self.new) - 1, -1, -1):
            message = self.new[i]
            if message.role == "assistant" and any(c is call for c in message.tool_calls):
                swapped = tuple(edited if c is call else c for c in message.tool_calls)
                self.new[i] = message.model_copy(update={"tool_calls": swapped})
                break
        return edited

    async def run_tools(self, calls: Sequence[Any], decisions: Sequence[Any]) -> bool:
        """Run one batch of calls as decided (``decisions`` in their order), completion tools
        last; True if a completion tool ran."""
        ctx = self.ctx
        batch = sorted(zip(calls, decisions, strict=True), key=lambda pair: self._completes(pair[0].name))  # (stable)
        failed: set[str] = set()
        completed = False
        for call, decision in batch:
            if decision is not None and decision.type == "edit":
                call = self._edited(call, decision.arguments)
            key = _call_key(call)
            ctx.emit(
                "tool-call",
                call_id=call.id,
                name=call.name,
                args=call.arguments if call.raw_arguments is None else call.raw_arguments,
            )
            if key in self.failed_last:
                raise RunFailed(
                    f"stuck: node {ctx.node!r} repeated the failing call {call.name}({_shortened(_arguments_text(call))}) "
                    "in two consecutive turns"
                )
            if decision is not None and decision.type == "reject":
                result, is_error = (
                    decision.message or f"A person rejected this call of {call.name}; it did not run.",
                    False,
                )
            elif decision is not None and decision.type == "respond":
                result, is_error = decision.message or "", False
                self.results[key] = result
            elif key in self.results:
                result, is_error = DUPLICATE_NOTE, False
            else:
                result, is_error = await self._call(call)
                # Redacted before the model reads it: what it is told, it can repeat anywhere.
                result = redact(result)
                if is_error:
                    failed.add(key)
                else:
                    self.results[key] = result
                    completed = completed or self._completes(call.name)
            ctx.emit("tool-result", call_id=call.id, name=call.name, result=result, is_error=is_error)
            self.new.append(
                ToolMessage(tool_call_id=call.id, name=call.name, content=result, is_error=is_error, node=ctx.node)
            )
        self.failed_last = failed
        return completed

    def _completes(self, name: str) -> bool:
        tool = self.toolbox.get(name)
        return tool is not None and tool.completes

    async def _call(self, call: Any) -> tuple[str, bool]:
        tool = self.toolbox.get(call.name)
        if tool is None:
            return f"error: there is no tool {call.name!r}; the tools are: {', '.join(self.toolbox) or 'none'}", True
        if call.raw_arguments is not None:
            return f"error: the arguments must be a JSON object, got {call.raw_arguments[:200]!r}", True
        try:
            return await tool.call(call.arguments, self.ctx), False
        except pydantic.ValidationError as exc:
            return f"error: invalid arguments for {call.name}: {_problems(exc, 'arguments')}", True
        except Exception as exc:  # a tool's failure is the model's to handle
            return f"error: {call.name} raised {type(exc).__name__}: {exc}", True

    async def structured(self, output: type[pydantic.BaseModel], request: Callable[[], ChatRequest]) -> dict[str, Any]:
        """Parse the final reply as ``output``; ask once for a repair if it does not fit."""
        text = self.final_text
        try:
            return _parse_output(output, text)
        except (ValueError, pydantic.ValidationError) as first:
            repair = UserMessage(
                content=f"Your reply was not valid JSON for {output.__name__}: {_why(first)}. "
                "Reply again with only the corrected JSON object."
            )
            self.new.append(repair)
            self.no_tools = "a repair request offers none"
            await self.ask(request())
            try:
                return _parse_output(output, self.final_text)
            except (ValueError, pydantic.ValidationError) as second:
                raise RunFailed(
                    f"invalid output: node {self.ctx.node!r} replied with no valid {output.__name__} "
                    f"after one repair request: {_why(second)}"
                ) from None


def _parse_output(output: type[pydantic.BaseModel], text: str) -> dict[str, Any]:
    body = text.strip()
    fenced = re.fullmatch(r"```(?:json)?\s*(.*?)\s*```", body, re.DOTALL)
    if fenced:
        body = fenced.group(1)
    return output.model_validate_json(body).model_dump()


def _why(exc: Exception) -> str:
    return _problems(exc, "reply") if isinstance(exc, pydantic.ValidationError) else str(exc)


def _problems(exc: pydantic.ValidationError, whole: str) -> str:
    """``field: message; ...`` for the first errors; ``whole`` names an error of the whole input."""
    return "; ".join(f"{'.'.join(map(str, e['loc'])) or whole}: {e['msg']}" for e in exc.errors()[:5])


def _arguments_text(call: Any) -> str:
    return call.raw_arguments if call.raw_arguments is not None else json.dumps(call.arguments, sort_keys=True)


def _call_key(call: Any) -> str:
    return call.name + "\x00" + _arguments_text(call)


def _failed_calls_of_last_turn(history: Sequence[Any]) -> set[str]:
    """Keys of the calls that failed in the conversation's last tool round (an earlier
    execution of an agent node that loops through the graph)."""
    failed_ids: set[str] = set()
    for message in reversed(history):
        if message.role == "tool":
            if message.is_error:
                failed_ids.add(message.tool_call_id)
        elif message.role == "assistant":
            return {_call_key(call) for call in message.tool_calls if call.id in failed_ids}
        elif message.role == "user":
            break  # a person spoke since: a fresh start
    return set()


def _shortened(text: str) -> str:
    return text if len(text) <= 80 else text[:77] + "..."


def _window(history: list[Any], state: Any, max_tokens: int | None) -> list[Any]:
    """The part of the conversation the prompt shows: from the input guard's window
    start, then the newest messages within ``max_tokens``."""
    guard = state_field(state, "guard")
    start = guard.get("window_start") if isinstance(guard, Mapping) else None
    if start is not None:
        for i, message in enumerate(history):
            if message.id == start:
                history = history[i:]
                break
    if max_tokens is None:
        return history
    return history[window_start(history, max_tokens) :]


def _distinct_tools(history: Sequence[Any], new: Sequence[Any]) -> int:
    return len({m.name for m in (*history, *new) if m.role == "tool" and not m.is_error})
