"""OpenTelemetry traces of runs, following the GenAI semantic conventions.

:func:`instrument` traces every run from then on, to the tracer provider it is given or the
global one: a span per run (``invoke_workflow {graph}``), per node (``node {path}``; an LLM
node's is ``invoke_agent {node}``), per model call (``chat {model}``) and per tool call
(``execute_tool {tool}``). They nest as the run does: a sub-graph's nodes inside its node,
parallel branches side by side, a run inside the span that was current where it started (a
batch's runs inside yours). Pauses and answers are events on the span of the node that
paused, and so is each answer's record (``nbgraph.decision``: who decided, when, through
which door, the verdict, the digest of what they were shown). A run that continues a thread links to the run before it, in this process or
another: the thread's checkpoints keep the W3C trace context of the run that wrote them.

Prompts, replies, tool arguments and results, questions and answers, the reasons people
give and the values they edit are what people typed and models said: they are recorded only
with ``capture_text=True``, and then with anything
shaped like an API key taken out.

Nothing in nbgraph imports this module, so a process that does not never loads OpenTelemetry;
until :func:`instrument` is called, a run pays nothing for it.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any
from urllib.parse import urlsplit

try:
    from opentelemetry import trace
    from opentelemetry.trace import Link, Span, SpanKind, Status, StatusCode, Tracer, TracerProvider
    from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator
except ImportError as exc:
    raise ImportError(f"nbgraph.otel needs OpenTelemetry ({exc}): pip install 'nbgraph[otel]'") from exc

from .engine.run import Run, observe_runs
from .llm.messages import ToolCallRequest
from .llm.model import ChatRequest, Completion
from .llm.node import intercept_models
from .llm.openai_model import OpenAIModel
from .secrets import redact

__all__ = ["instrument", "uninstrument"]

_W3C = TraceContextTextMapPropagator()
"""The trace context a checkpoint keeps is W3C's, whatever propagator the process uses."""


_stops: list[Callable[[], None]] = []

_runs: dict[str, _RunSpans] = {}
"""The traced runs under way, by thread: where a model call finds the span of its node."""

Where = tuple[str, "str | None"]
"""A node's place in a run: its path and its branch."""


def instrument(tracer_provider: TracerProvider | None = None, *, capture_text: bool = False) -> None:
    """Trace every run started from now on; call it again to trace differently.

    Args:
        tracer_provider: where the spans go; default: the global one
            (``opentelemetry.trace.set_tracer_provider``), even if it is set later.
        capture_text: also record prompts and replies (``gen_ai.input.messages``,
            ``gen_ai.output.messages``), tool arguments and results, the questions a run
            asks and the answers it gets, the reasons people give for their decisions and
            what they edit. Off by default: they hold your users' data.
    """
    uninstrument()
    tracing = _Tracing(trace.get_tracer("nbgraph", tracer_provider=tracer_provider), capture_text)
    _stops.extend((observe_runs(tracing.observe), intercept_models(tracing.intercept)))


def uninstrument() -> None:
    """Trace no run started from now on (runs under way still end their spans)."""
    while _stops:
        _stops.pop()()


class _Tracing:
    """How runs are traced: the tracer, and whether text is recorded."""

    __slots__ = ("capture_text", "tracer")

    def __init__(self, tracer: Tracer, capture_text: bool) -> None:
        self.tracer = tracer
        self.capture_text = capture_text

    def observe(self, run: Run) -> None:
        _RunSpans(self, run)  # (it subscribes itself: it hears fewer events once sampled out)

    def intercept(self, model: Any, ctx: Any) -> _TracedModel:
        return _TracedModel(self, model, ctx)

    def start(self, name: str, parent: Span, attributes: dict[str, Any]) -> Span:
        return self.tracer.start_span(name, trace.set_span_in_context(parent), attributes=attributes)


class _RunSpans:
    """One run's spans, built from its events: the run's own, and its nodes' and tool calls' while they last."""

    __slots__ = ("_error_type", "_errors", "_nodes", "_run", "_span", "_tools", "_tracing", "_unsubscribe")

    def __init__(self, tracing: _Tracing, run: Run) -> None:
        self._tracing = tracing
        self._run = run
        self._span: Span = trace.INVALID_SPAN
        self._nodes: dict[Where, Span] = {}
        self._tools: dict[tuple[str, str | None, str], Span] = {}
        self._errors: dict[Where, Any] = {}
        """The error events of the nodes still open: those that end the run with them failed."""
        self._error_type = ""
        """The type of the latest error reported: what a failed run failed of."""
        self._unsubscribe = run.subscribe(self)

    def __call__(self, event: Any) -> None:
        handle = _HANDLERS.get(event.type)
        if handle is not None:
            handle(self, event)

    def node_span(self, path: str, branch: str | None) -> Span | None:
        """The span of the node running at ``path`` on ``branch``, if it is running."""
        return self._nodes.get((path, branch))

    def started(self, event: Any) -> None:
        run = self._run
        before = trace.get_current_span(_W3C.extract(run.trace_context)).get_span_context()
        attributes = {
            "gen_ai.operation.name": "invoke_workflow",
            "gen_ai.workflow.name": event.graph,
            "gen_ai.conversation.id": event.thread,
            "nbgraph.resumed": event.resumed,
        }
        # The span that was current where the run started is its parent: a batch's, a caller's.
        self._span = span = self._tracing.tracer.start_span(
            f"invoke_workflow {event.graph}", attributes=attributes, links=[Link(before)] if before.is_valid else None
        )
        if not span.is_recording():
            # Sampled out: its nodes' spans would not be recorded either (their sampler follows
            # the parent's decision), so the run need not build its per-step events for them.
            self._unsubscribe()
            self._unsubscribe = run.subscribe(self, steps=False)
        carrier: dict[str, str] = {}
        _W3C.inject(carrier, trace.set_span_in_context(span))
        if carrier:  # (a span of no provider has no context to pass on)
            run.trace_context = carrier
        _runs[event.thread] = self

    def entered(self, event: Any) -> None:
        attributes: dict[str, Any] = {
            "nbgraph.node": event.node,
            "nbgraph.path": event.path,
            "nbgraph.step": event.step,
            "nbgraph.visit": event.visit,
        }
        if event.branch is not None:
            attributes["nbgraph.branch"] = event.branch
        if event.rerun:
            attributes["nbgraph.rerun"] = True
        where = (event.path, event.branch)
        self._nodes[where] = self._tracing.start(f"node {event.path}", self._container(*where), attributes)

    def exited(self, event: Any) -> None:
        where = (event.path, event.branch)
        span = self._nodes.pop(where, None)
        self._errors.pop(where, None)  # it went on: what it reported did not stop it
        if span is None:
            return
        if event.tokens:
            span.set_attribute("nbgraph.tokens", event.tokens)
        if event.cost:
            span.set_attribute("nbgraph.cost", event.cost)
        span.end()

    def tool_called(self, event: Any) -> None:
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": event.name,
            "gen_ai.tool.call.id": event.call_id,
            "gen_ai.tool.type": "function",
        }
        if self._tracing.capture_text:
            attributes["gen_ai.tool.call.arguments"] = _text(event.args)
        self._tools[(event.path, event.branch, event.call_id)] = self._tracing.start(
            f"execute_tool {event.name}", self._at(event), attributes
        )

    def tool_returned(self, event: Any) -> None:
        span = self._tools.pop((event.path, event.branch, event.call_id), None)
        if span is None:
            return
        if self._tracing.capture_text:
            span.set_attribute("gen_ai.tool.call.result", _text(event.result))
        if event.is_error:
            span.set_attribute("error.type", "tool_error")
            span.set_status(StatusCode.ERROR)
        span.end()

    def paused(self, event: Any) -> None:
        pause = event.pause
        attributes: dict[str, Any] = {"nbgraph.pause.id": pause.id, "nbgraph.pause.kind": pause.kind}
        if self._tracing.capture_text:
            attributes["nbgraph.pause.prompt"] = redact(pause.prompt)
        self._at(event).add_event("nbgraph.pause", attributes)

    def answered(self, event: Any) -> None:
        attributes: dict[str, Any] = {"nbgraph.pause.id": event.pause_id}
        if self._tracing.capture_text:
            attributes["nbgraph.answer"] = _text(event.answer)
        span = self._at(event)
        span.add_event("nbgraph.answer", attributes)
        decision = event.decision
        if decision is not None:
            span.add_event("nbgraph.decision", self._decision(decision))

    def _decision(self, decision: Any) -> dict[str, Any]:
        """A decision's record as span attributes: who, when, how, what, on what they were
        shown; why, and what they changed, only with the text (a person typed them)."""
        attributes: dict[str, Any] = {
            "nbgraph.pause.id": decision.pause_id,
            "nbgraph.pause.kind": decision.kind,
            "nbgraph.pause.shown": decision.shown,
            "nbgraph.decision.by": decision.by,
            "nbgraph.decision.at": decision.at,
            "nbgraph.decision.via": decision.via,
            "nbgraph.decision.verdict": decision.verdict,
        }
        if decision.standing is not None:
            attributes["nbgraph.decision.standing"] = decision.standing
        if decision.edits:
            attributes["nbgraph.decision.edited"] = [edit.field for edit in decision.edits]
        if self._tracing.capture_text:
            if decision.reason is not None:
                attributes["nbgraph.decision.reason"] = redact(decision.reason)
            if decision.edits:
                attributes["nbgraph.decision.edits"] = _text([edit.model_dump(mode="json") for edit in decision.edits])
        return attributes

    def failed(self, event: Any) -> None:
        # Not every error stops a node (a reply's tool calls left unrun): the node that never
        # exits is the one that failed, and the run's end says so.
        self._at(event).add_event(
            "nbgraph.error",
            {"error.type": event.error_type or "_OTHER", "nbgraph.error": redact(event.error)},
        )
        self._error_type = event.error_type
        where = (event.path, event.branch)
        if where in self._nodes:
            self._errors[where] = event

    def ended(self, event: Any) -> None:
        for where, span in self._nodes.items():
            error = self._errors.get(where)
            if error is not None:
                _fail(span, error.error_type, error.error)
            span.end()
        for span in self._tools.values():
            span.end()
        self._nodes.clear()
        self._tools.clear()
        span = self._span
        span.set_attributes({"nbgraph.outcome": event.outcome, "nbgraph.steps": event.step})
        if event.outcome == "failed":
            _fail(span, self._error_type, event.reason or "")
        span.end()
        if _runs.get(event.thread) is self:
            del _runs[event.thread]

    def _container(self, path: str, branch: str | None) -> Span:
        """The span a node at ``path`` on ``branch`` runs inside: its sub-graph node's, else the run's.

        A sub-graph node runs on its branch, or on one its inner branches start with
        (``sub[0]`` for ``sub[0]/x``), or on the main line.
        """
        container = path.rpartition("/")[0]
        while container:
            candidate = branch
            while True:
                span = self._nodes.get((container, candidate))
                if span is not None:
                    return span
                if candidate is None:
                    break
                candidate = candidate.rpartition("/")[0] or None
            container = container.rpartition("/")[0]
        return self._span

    def _at(self, event: Any) -> Span:
        """The span of the node an event happened in, else the run's."""
        return self._nodes.get((event.path, event.branch)) or self._container(event.path, event.branch)


_HANDLERS: dict[str, Callable[[_RunSpans, Any], None]] = {
    "run-start": _RunSpans.started,
    "node-enter": _RunSpans.entered,
    "node-exit": _RunSpans.exited,
    "tool-call": _RunSpans.tool_called,
    "tool-result": _RunSpans.tool_returned,
    "interrupt": _RunSpans.paused,
    "answer": _RunSpans.answered,
    "error": _RunSpans.failed,
    "done": _RunSpans.ended,
}


class _TracedModel:
    """A node's model whose every call is a ``chat`` span inside the node's span."""

    __slots__ = ("_ctx", "_model", "_tracing", "name")

    def __init__(self, tracing: _Tracing, model: Any, ctx: Any) -> None:
        self._tracing = tracing
        self._model = model
        self._ctx = ctx
        self.name: str = model.name

    async def complete(self, request: ChatRequest, on_text: Callable[[str], None]) -> Completion:
        model, ctx, tracing = self._model, self._ctx, self._tracing
        provider = "openai" if isinstance(model, OpenAIModel) else type(model).__name__
        run = _runs.get(ctx.thread)
        node = run.node_span(ctx.path, ctx.branch) if run is not None else None
        if node is not None:  # a node that calls a model is an agent
            node.update_name(f"invoke_agent {ctx.node}")
            node.set_attributes(
                {
                    "gen_ai.operation.name": "invoke_agent",
                    "gen_ai.agent.name": ctx.node,
                    "gen_ai.provider.name": provider,
                }
            )
        attributes = {
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": provider,
            "gen_ai.request.model": self.name,
            **_server(model),
        }
        if tracing.capture_text:
            attributes["gen_ai.input.messages"] = _text([_message(m) for m in request.messages])
        parent = trace.set_span_in_context(node) if node is not None else None
        # Current while the model works: spans of its HTTP client nest inside.
        with tracing.tracer.start_as_current_span(
            f"chat {self.name}",
            context=parent,
            kind=SpanKind.CLIENT,
            attributes=attributes,
            record_exception=False,  # its message and traceback could quote a key: _fail redacts it
            set_status_on_exception=False,
        ) as span:
            try:
                reply = await model.complete(request, on_text)
            except BaseException as exc:
                _fail(span, type(exc).__qualname__, str(exc))
                raise
            span.set_attributes(
                {
                    "gen_ai.usage.input_tokens": reply.prompt_tokens,
                    "gen_ai.usage.output_tokens": reply.completion_tokens,
                    "gen_ai.response.finish_reasons": [reply.finish_reason] if reply.finish_reason else [],
                }
            )
            if reply.cost:
                span.set_attribute("nbgraph.cost", reply.cost)
            if tracing.capture_text:
                said = {"role": "assistant", "parts": _parts(reply.text, reply.tool_calls)}
                span.set_attribute(
                    "gen_ai.output.messages", _text([{**said, "finish_reason": reply.finish_reason or ""}])
                )
        return reply


def _message(message: Any) -> dict[str, Any]:
    """A conversation message in the GenAI conventions' form: its role and its parts."""
    if message.role == "tool":
        parts = [{"type": "tool_call_response", "id": message.tool_call_id, "result": message.content}]
    else:
        parts = _parts(message.content, getattr(message, "tool_calls", ()))
    return {"role": message.role, "parts": parts}


def _parts(text: str, calls: Sequence[ToolCallRequest]) -> list[dict[str, Any]]:
    parts: list[dict[str, Any]] = [{"type": "text", "content": text}] if text else []
    for call in calls:
        arguments = call.arguments if call.raw_arguments is None else call.raw_arguments
        parts.append({"type": "tool_call", "id": call.id, "name": call.name, "arguments": arguments})
    return parts


def _server(model: Any) -> dict[str, Any]:
    """Where an OpenAI-compatible model's endpoint is (the host only: a URL can hold credentials)."""
    if not isinstance(model, OpenAIModel):
        return {}
    if model.base_url is None:
        return {"server.address": "api.openai.com", "server.port": 443}
    url = urlsplit(model.base_url)
    where: dict[str, Any] = {"server.address": url.hostname or ""}
    port = url.port or {"http": 80, "https": 443}.get(url.scheme)
    if port is not None:
        where["server.port"] = port
    return where


def _text(value: Any) -> str:
    """Content as a span attribute: JSON (text as it is), without what looks like a key."""
    return redact(value if isinstance(value, str) else json.dumps(value, default=str, ensure_ascii=False))


def _fail(span: Span, error_type: str, message: str) -> None:
    span.set_attribute("error.type", error_type or "_OTHER")
    span.set_status(Status(StatusCode.ERROR, redact(message)))
