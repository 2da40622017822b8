"""OpenTelemetry traces: a span per run, node, model call and tool call, nested as the run nests,
with GenAI attributes; pauses and answers as span events; a resumed run linked to the run it
continues, from another process too; text only when asked for; no API key anywhere; nothing
loaded without instrument(); and OTLP export to a real Phoenix read back over its API."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any
from urllib.parse import urlsplit

import pydantic
import pytest
from graphs import trip_graph
from openai_server import Reply as ServerReply
from opentelemetry import trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode
from phoenix_server import phoenix_server

import nbgraph.otel
from nbgraph import (
    END,
    START,
    Fork,
    Graph,
    MessagesState,
    OpenAIModel,
    Resume,
    ScriptedModel,
    Send,
    SQLiteCheckpointer,
    append,
    llm_node,
)
from nbgraph.llm import Reply

REPO = Path(__file__).resolve().parents[1]
PROGRAMS = Path(__file__).with_name("programs")
KEY = "sk-proj-TRACEk9Rv2LmTq7XbWnQxZw4Hs"
CONTENT_ATTRIBUTES = {
    "gen_ai.input.messages",
    "gen_ai.output.messages",
    "gen_ai.tool.call.arguments",
    "gen_ai.tool.call.result",
    "nbgraph.pause.prompt",
    "nbgraph.answer",
}


class Traced:
    """The spans a test's runs finished, read from the SDK's in-memory exporter."""

    def __init__(self, provider: TracerProvider, exporter: InMemorySpanExporter) -> None:
        self.provider = provider
        self.exporter = exporter

    @property
    def spans(self) -> list[ReadableSpan]:
        return list(self.exporter.get_finished_spans())

    def named(self, name: str) -> list[ReadableSpan]:
        return [span for span in self.spans if span.name == name]

    def one(self, name: str) -> ReadableSpan:
        found = self.named(name)
        assert len(found) == 1, f"{len(found)} spans named {name!r} in {[s.name for s in self.spans]}"
        return found[0]

    def children(self, parent: ReadableSpan) -> list[ReadableSpan]:
        return [span for span in self.spans if span.parent is not None and span.parent.span_id == _id(parent)]


def _id(span: ReadableSpan) -> int:
    assert span.context is not None
    return span.context.span_id


def _trace(span: ReadableSpan) -> int:
    assert span.context is not None
    return span.context.trace_id


def _parent(span: ReadableSpan) -> int | None:
    return span.parent.span_id if span.parent is not None else None


def _instrumented(capture_text: bool) -> Iterator[Traced]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    nbgraph.otel.instrument(provider, capture_text=capture_text)
    try:
        yield Traced(provider, exporter)
    finally:
        nbgraph.otel.uninstrument()
        provider.shutdown()


@pytest.fixture
def traced() -> Iterator[Traced]:
    yield from _instrumented(capture_text=False)


@pytest.fixture
def traced_text() -> Iterator[Traced]:
    yield from _instrumented(capture_text=True)


class Bag(pydantic.BaseModel):
    items: list[int] = [1, 2]
    notes: Annotated[list[str], append] = []


def chain(name: str, *nodes: tuple[str, Any], **options: Any) -> Graph:
    g = Graph(name, **options)
    for node, fn in nodes:
        g.add_node(node, fn)
    names = [START, *(node for node, _ in nodes), END]
    for source, target in zip(names, names[1:], strict=False):
        g.add_edge(source, target)
    return g


# -- how the spans nest ----------------------------------------------------------------


class TestNesting:
    def test_a_run_is_a_workflow_span_with_a_span_per_node_inside(self, traced):
        g = chain("pipeline", ("a", lambda s: {"n": 1}), ("b", lambda s: {"n": s["n"] + 1}))
        result = g.invoke({"n": 0})
        assert result.outcome == "done"
        run = traced.one("invoke_workflow pipeline")
        assert run.parent is None
        assert run.attributes is not None
        assert run.attributes["gen_ai.operation.name"] == "invoke_workflow"
        assert run.attributes["gen_ai.workflow.name"] == "pipeline"
        assert run.attributes["gen_ai.conversation.id"] == result.thread
        assert (run.attributes["nbgraph.outcome"], run.attributes["nbgraph.steps"]) == ("done", 2)
        nodes = sorted(traced.children(run), key=lambda s: s.start_time or 0)
        assert [s.name for s in nodes] == ["node a", "node b"]
        assert [(s.attributes or {})["nbgraph.step"] for s in nodes] == [1, 2]
        assert all(_trace(s) == _trace(run) for s in nodes)

    async def test_branches_are_side_by_side_inside_the_run(self, traced):
        both = asyncio.Event()

        async def first(state):
            await asyncio.wait_for(both.wait(), 5)  # set by the other branch: the two overlap
            return {"notes": ["first"]}

        async def second(state):
            both.set()
            return {"notes": ["second"]}

        g = Graph("fan", state=Bag)
        g.add_node("first", first)
        g.add_node("second", second)
        g.add_edge(START, ["first", "second"])
        g.add_edge("first", END)
        g.add_edge("second", END)
        result = await g.ainvoke({})
        assert result.outcome == "done", result.reason
        run = traced.one("invoke_workflow fan")
        a, b = traced.one("node first"), traced.one("node second")
        assert _parent(a) == _parent(b) == _id(run)
        assert ((a.attributes or {})["nbgraph.branch"], (b.attributes or {})["nbgraph.branch"]) == ("first", "second")
        assert a.start_time is not None and b.end_time is not None and b.start_time is not None
        assert a.end_time is not None
        assert a.start_time < b.end_time and b.start_time < a.end_time  # they ran at once

    def test_a_sub_graphs_nodes_and_its_branches_are_inside_its_node(self, traced):
        inner = Graph("inner", state=Bag)
        inner.add_node("split", lambda s: [Send("work", i) for i in s.items], destinations=["work"])
        inner.add_node("work", lambda i: {"notes": [f"w{i}"]})
        inner.add_edge(START, "split")
        inner.add_edge("work", END)
        g = chain("outer", ("pre", lambda s: None), ("sub", inner), state=Bag)
        assert g.invoke({}).outcome == "done"
        run, sub = traced.one("invoke_workflow outer"), traced.one("node sub")
        assert _parent(sub) == _id(run) and _parent(traced.one("node pre")) == _id(run)
        assert _parent(traced.one("node sub/split")) == _id(sub)
        work = traced.named("node sub/work")
        assert sorted((s.attributes or {})["nbgraph.branch"] for s in work) == ["work[0]", "work[1]"]
        assert {_parent(s) for s in work} == {_id(sub)}

    def test_each_branch_of_a_mapped_sub_graph_holds_its_own_nodes(self, traced):
        inner = Graph("inner", state=Bag)
        inner.add_node("x", lambda s: {"notes": ["x"]})
        inner.add_node("y", lambda s: {"notes": ["y"]})
        inner.add_edge(START, ["x", "y"])
        inner.add_edge("x", END)
        inner.add_edge("y", END)
        g = Graph("outer", state=Bag)
        g.add_node("split", lambda s: [Send("sub", i) for i in s.items], destinations=["sub"])
        g.add_node("sub", inner, input=lambda i: {}, output=lambda r: {"notes": list(r.notes)})
        g.add_edge(START, "split")
        g.add_edge("sub", END)
        result = g.invoke({})
        assert result.outcome == "done", result.reason
        subs = {(s.attributes or {})["nbgraph.branch"]: s for s in traced.named("node sub")}
        assert sorted(subs) == ["sub[0]", "sub[1]"]
        for branch, sub in subs.items():
            inside = sorted((s.attributes or {})["nbgraph.branch"] for s in traced.children(sub))
            assert inside == [f"{branch}/x", f"{branch}/y"]

    def test_a_batchs_runs_are_inside_the_span_current_where_it_started(self, traced):
        g = chain("one", ("work", lambda s: {"n": s["n"] * 2}))
        tracer = traced.provider.get_tracer("the test")
        with tracer.start_as_current_span("nightly") as nightly:
            rows = g.batch([{"n": 1}, {"n": 2}, {"n": 3}], progress=False, table="rows")
        assert [row.outcome for row in rows] == ["done"] * 3
        runs = traced.named("invoke_workflow one")
        assert len(runs) == 3
        assert {_parent(run) for run in runs} == {nightly.get_span_context().span_id}
        assert {(run.attributes or {})["gen_ai.conversation.id"] for run in runs} == {row.thread for row in rows}
        for run in runs:
            assert [s.name for s in traced.children(run)] == ["node work"]


# -- model and tool calls ----------------------------------------------------------------


def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


def divide(a: int, b: int) -> float:
    """Divide a by b."""
    return a / b


def agent_graph(model: Any, prompt: str = "You do sums.") -> Graph:
    g = Graph("calc", state=MessagesState)
    g.add_node("agent", llm_node(prompt, model=model, tools=[add, divide]))
    g.add_edge(START, "agent")
    g.add_edge("agent", END)
    return g


def scripted() -> ScriptedModel:
    return ScriptedModel(
        [Reply(tool_calls=[("add", {"a": 1, "b": 2}), ("divide", {"a": 1, "b": 0})]), "1 + 2 is 3; 1 / 0 failed"],
        name="gpt-4o-mini",
    )


class TestModelAndToolCalls:
    def test_each_model_call_is_a_chat_span_inside_the_agent_node(self, traced):
        result = agent_graph(scripted()).invoke({"messages": ["what is 1 + 2, and 1 / 0?"]})
        assert result.outcome == "done", result.reason
        agent = traced.one("invoke_agent agent")
        assert agent.attributes is not None
        assert (agent.attributes["gen_ai.operation.name"], agent.attributes["gen_ai.agent.name"]) == (
            "invoke_agent",
            "agent",
        )
        assert _parent(agent) == _id(traced.one("invoke_workflow calc"))
        chats = sorted(traced.named("chat gpt-4o-mini"), key=lambda s: s.start_time or 0)
        assert len(chats) == 2 and {_parent(c) for c in chats} == {_id(agent)}
        first, last = (dict(c.attributes or {}) for c in chats)
        assert first["gen_ai.operation.name"] == "chat"
        assert first["gen_ai.request.model"] == "gpt-4o-mini"
        assert first["gen_ai.provider.name"] == "ScriptedModel"
        assert (first["gen_ai.response.finish_reasons"], last["gen_ai.response.finish_reasons"]) == (
            ("tool_calls",),
            ("stop",),
        )
        used = sum(c["gen_ai.usage.input_tokens"] + c["gen_ai.usage.output_tokens"] for c in (first, last))
        assert used == result.history[0].tokens == agent.attributes["nbgraph.tokens"]
        assert all(c.kind.name == "CLIENT" for c in chats)

    def test_each_tool_call_is_an_execute_tool_span_and_a_failed_one_says_so(self, traced):
        result = agent_graph(scripted()).invoke({"messages": ["what is 1 + 2, and 1 / 0?"]})
        agent = traced.one("invoke_agent agent")
        added, divided = traced.one("execute_tool add"), traced.one("execute_tool divide")
        assert _parent(added) == _parent(divided) == _id(agent)
        calls = {m.name: m.tool_call_id for m in result.state.messages if m.role == "tool"}
        for span, name in ((added, "add"), (divided, "divide")):
            attributes = dict(span.attributes or {})
            assert attributes["gen_ai.operation.name"] == "execute_tool"
            assert attributes["gen_ai.tool.name"] == name
            assert attributes["gen_ai.tool.type"] == "function"
            assert attributes["gen_ai.tool.call.id"] == calls[name]
        assert added.status.status_code == StatusCode.UNSET
        assert divided.status.status_code == StatusCode.ERROR
        assert (divided.attributes or {})["error.type"] == "tool_error"
        chats = sorted(traced.named("chat gpt-4o-mini"), key=lambda s: s.start_time or 0)
        assert chats[0].end_time is not None and added.start_time is not None and divided.end_time is not None
        assert chats[1].start_time is not None
        assert chats[0].end_time <= added.start_time and divided.end_time <= chats[1].start_time

    def test_a_failed_model_call_fails_its_span_its_node_and_the_run(self, traced):
        model = ScriptedModel([Reply(tool_calls=[("add", {"a": 1, "b": 2})])], name="tiny")  # then no reply left
        result = agent_graph(model).invoke({"messages": ["1 + 2?"]})
        assert result.outcome == "failed"
        failed = [s for s in traced.named("chat tiny") if s.status.status_code == StatusCode.ERROR]
        assert len(failed) == 1
        assert (failed[0].attributes or {})["error.type"] == "ModelError"
        assert "ran out of replies" in (failed[0].status.description or "")
        for name in ("invoke_agent agent", "invoke_workflow calc"):
            span = traced.one(name)
            assert span.status.status_code == StatusCode.ERROR, name
            assert (span.attributes or {})["error.type"] == "ModelError", name

    def test_the_chat_span_is_current_while_the_model_works(self, traced):
        seen: list[int] = []

        class Watching(ScriptedModel):
            async def complete(self, request, on_text):
                seen.append(trace.get_current_span().get_span_context().span_id)  # where its HTTP spans would go
                return await super().complete(request, on_text)

        model = Watching(["hello"], name="watching")
        assert agent_graph(model).invoke({"messages": ["hi"]}).outcome == "done"
        assert seen == [_id(traced.one("chat watching"))]

    def test_text_stays_out_of_the_spans_by_default(self, traced):
        graph = agent_graph(scripted(), prompt="You do sums for the secret plan.")
        assert graph.invoke({"messages": ["what is 1 + 2, and 1 / 0?"]}).outcome == "done"
        for span in traced.spans:
            assert not CONTENT_ATTRIBUTES & set(span.attributes or {}), span.name
            dumped = span.to_json()
            for text in ("secret plan", "what is 1 + 2", "1 + 2 is 3", '"a": 1'):
                assert text not in dumped, (span.name, text)

    def test_text_is_recorded_with_the_flag_in_the_genai_message_form(self, traced_text):
        graph = agent_graph(scripted(), prompt="You do sums for the secret plan.")
        assert graph.invoke({"messages": ["what is 1 + 2, and 1 / 0?"]}).outcome == "done"
        first, last = sorted(traced_text.named("chat gpt-4o-mini"), key=lambda s: s.start_time or 0)
        asked = json.loads(str((first.attributes or {})["gen_ai.input.messages"]))
        assert asked == [
            {"role": "system", "parts": [{"type": "text", "content": "You do sums for the secret plan."}]},
            {"role": "user", "parts": [{"type": "text", "content": "what is 1 + 2, and 1 / 0?"}]},
        ]
        called = json.loads(str((first.attributes or {})["gen_ai.output.messages"]))
        assert [part["name"] for part in called[0]["parts"]] == ["add", "divide"]
        assert called[0]["finish_reason"] == "tool_calls"
        replied = json.loads(str((last.attributes or {})["gen_ai.output.messages"]))
        assert replied == [
            {
                "role": "assistant",
                "parts": [{"type": "text", "content": "1 + 2 is 3; 1 / 0 failed"}],
                "finish_reason": "stop",
            }
        ]
        results = [p for m in json.loads(str((last.attributes or {})["gen_ai.input.messages"])) for p in m["parts"]]
        assert [p["result"] for p in results if p["type"] == "tool_call_response"][0] == "3"
        added = traced_text.one("execute_tool add").attributes or {}
        assert (json.loads(str(added["gen_ai.tool.call.arguments"])), added["gen_ai.tool.call.result"]) == (
            {"a": 1, "b": 2},
            "3",
        )


# -- pauses, answers and resumes ---------------------------------------------------------


def _events(span: ReadableSpan) -> list[tuple[str, dict[str, Any]]]:
    return [(event.name, dict(event.attributes or {})) for event in span.events]


def _decided(decision: Any, **text: Any) -> tuple[str, dict[str, Any]]:
    """The ``nbgraph.decision`` event of ``decision``'s record (``text``: what only capture_text adds)."""
    attributes = {
        "nbgraph.pause.id": decision.pause_id,
        "nbgraph.pause.kind": decision.kind,
        "nbgraph.pause.shown": decision.shown,
        "nbgraph.decision.by": decision.by,
        "nbgraph.decision.at": decision.at,
        "nbgraph.decision.via": decision.via,
        "nbgraph.decision.verdict": decision.verdict,
    }
    return ("nbgraph.decision", {**attributes, **text})


class TestPausesAndResumes:
    async def test_a_live_pause_and_its_answer_are_events_on_the_node_that_asked(self, traced):
        run = trip_graph().start({})
        pause = await run.next_pause(timeout=5)
        assert pause is not None
        run.answer("Paris")
        result = await run
        assert result.outcome == "done"
        ask = traced.one("node ask")
        assert _events(ask) == [
            ("nbgraph.pause", {"nbgraph.pause.id": pause.id, "nbgraph.pause.kind": "input"}),
            ("nbgraph.answer", {"nbgraph.pause.id": pause.id}),
            _decided(result.decisions[0]),
        ]
        assert _parent(ask) == _id(traced.one("invoke_workflow trip"))

    async def test_the_question_and_the_answer_are_recorded_with_the_flag(self, traced_text):
        run = trip_graph().start({})
        pause = await run.next_pause(timeout=5)
        assert pause is not None
        run.answer({"city": "Paris"})
        result = await run
        assert result.outcome == "done"
        assert _events(traced_text.one("node ask")) == [
            (
                "nbgraph.pause",
                {"nbgraph.pause.id": pause.id, "nbgraph.pause.kind": "input", "nbgraph.pause.prompt": "Which city?"},
            ),
            ("nbgraph.answer", {"nbgraph.pause.id": pause.id, "nbgraph.answer": '{"city": "Paris"}'}),
            _decided(result.decisions[0]),
        ]

    @pytest.mark.parametrize("capture_text", [False, True], ids=["without text", "with text"])
    async def test_each_decision_is_an_event_on_the_node_with_who_when_how_and_what(self, request, capture_text):
        traced = request.getfixturevalue("traced_text" if capture_text else "traced")
        sent: list[str] = []

        @nbgraph.tool(approval=True)
        def send_email(to: str, body: str) -> str:
            """Email someone."""
            sent.append(body)
            return "sent"

        model = ScriptedModel(
            lambda messages: (
                Reply(tool_calls=[("send_email", {"to": "ada@example.com", "body": f"note {len(sent)}"})])
                if len(sent) < 2
                else "done"
            )
        )
        g = Graph("mail", state=MessagesState)
        g.add_node("agent", llm_node("You write.", model=model, tools=[send_email]))
        g.add_edge(START, "agent")
        g.add_edge("agent", END)
        run = g.start({"messages": ["write to Ada"]})
        assert await run.next_pause(timeout=5) is not None
        said = {"type": "edit", "arguments": {"to": "ada@example.com", "body": "Dear Ada"}, "standing": "run"}
        run.answer({**said, "reason": f"kinder, key {KEY}"}, by="alice")
        result = await run
        assert result.outcome == "done" and sent == ["Dear Ada", "note 1"]
        edited, standing = result.decisions
        assert (edited.by, edited.via, standing.via) == ("alice", "code", "standing")
        assert edited.standing == standing.standing  # the approval it set up, and that let the next call through
        text = (
            {
                "nbgraph.decision.reason": "kinder, key [redacted]",
                "nbgraph.decision.edits": '[{"field": "send_email.body", "before": "note 0", "after": "Dear Ada"}]',
            }
            if capture_text
            else {}
        )
        decided = [event for event in _events(traced.one("invoke_agent agent")) if event[0] == "nbgraph.decision"]
        assert decided == [
            _decided(
                edited,
                **{"nbgraph.decision.edited": ("send_email.body",), "nbgraph.decision.standing": standing.standing},
                **text,
            ),
            _decided(
                standing,
                **{"nbgraph.decision.standing": standing.standing},
                **({"nbgraph.decision.reason": "kinder, key [redacted]"} if capture_text else {}),
            ),
        ]
        assert KEY not in json.dumps([event for _, event in decided])

    def test_a_resumed_run_links_to_the_run_it_continues_and_brings_the_answer(self, traced):
        g = trip_graph()
        paused = g.invoke({})
        assert paused.outcome == "interrupted"
        first = traced.one("invoke_workflow trip")
        assert (first.attributes or {})["nbgraph.outcome"] == "interrupted"
        asked = traced.one("node ask")
        assert _events(asked) == [
            ("nbgraph.pause", {"nbgraph.pause.id": paused.pauses[0].id, "nbgraph.pause.kind": "input"})
        ]
        traced.exporter.clear()
        assert g.invoke(Resume(paused, "Paris")).outcome == "done"
        second = traced.one("invoke_workflow trip")
        assert (second.attributes or {})["nbgraph.resumed"] is True
        assert [(link.context.trace_id, link.context.span_id) for link in second.links] == [(_trace(first), _id(first))]
        answered = traced.one("node ask")
        assert (answered.attributes or {})["nbgraph.rerun"] is True
        assert [name for name, _ in _events(answered)] == ["nbgraph.pause", "nbgraph.answer", "nbgraph.decision"]
        assert _parent(traced.one("node book")) == _id(second)

    def test_a_fork_links_to_the_run_that_wrote_the_step_it_starts_from(self, traced):
        g = chain("count", ("a", lambda s: {"n": 1}), ("b", lambda s: {"n": s["n"] + 1}))
        store = SQLiteCheckpointer(":memory:")
        done = g.invoke({"n": 0}, checkpointer=store)
        original = traced.one("invoke_workflow count")
        traced.exporter.clear()
        forked = g.invoke(Fork(done, step=1), checkpointer=store)
        assert forked.outcome == "done" and forked.thread != done.thread
        branch = traced.one("invoke_workflow count")
        assert [link.context.span_id for link in branch.links] == [_id(original)]
        assert [s.name for s in traced.children(branch)] == ["node b"]

    def test_a_resume_in_another_process_links_to_the_run_it_continues(self, traced, tmp_path):
        store = SQLiteCheckpointer(str(tmp_path / "trips.db"))
        paused = trip_graph().invoke({}, checkpointer=store)
        assert paused.outcome == "interrupted"
        first = traced.one("invoke_workflow trip")
        child = subprocess.run(
            [sys.executable, str(PROGRAMS / "otel_resume.py"), str(tmp_path / "trips.db"), paused.thread, "Oslo"],
            capture_output=True,
            text=True,
            timeout=120,
            cwd=REPO,
        )
        assert child.returncode == 0, child.stderr
        spans = {span["name"]: span for span in map(json.loads, child.stdout.splitlines())}
        resumed = spans["invoke_workflow trip"]
        assert resumed["links"] == [[_trace(first), _id(first)]]
        assert resumed["trace_id"] != _trace(first)  # a run of its own, linked, not a child
        assert [name for name, _ in spans["node ask"]["events"]] == [
            "nbgraph.pause",
            "nbgraph.answer",
            "nbgraph.decision",
        ]
        assert spans["node ask"]["events"][1][1] == {"nbgraph.pause.id": paused.pauses[0].id}
        decided = spans["node ask"]["events"][2][1]
        assert (decided["nbgraph.pause.id"], decided["nbgraph.decision.via"]) == (paused.pauses[0].id, "resume")
        assert decided["nbgraph.pause.shown"] == paused.pauses[0].shown
        assert spans["node book"]["parent"] == resumed["span_id"]


# -- secrets and cost --------------------------------------------------------------------


class TestSecrets:
    def test_an_api_key_appears_in_no_span_even_with_text_recorded(self, traced_text, openai_server):
        # The endpoint quotes the key in a reply, a tool call's arguments and an error; a tool returns it.
        openai_server.script(
            ServerReply(tool_calls=[("lookup", {"what": f"the key {KEY}"})]),
            ServerReply(text=f"Your key is {KEY}, and the tool said so."),
            ServerReply(status=400, text="invalid request made with key {key}"),
        )

        def lookup(what: str) -> str:
            """Look something up."""
            return f"found {what} again: {KEY}"

        model = OpenAIModel("gpt-4o-mini", base_url=openai_server.base_url, api_key=KEY, max_retries=0)
        g = Graph("keys", state=MessagesState)
        g.add_node("agent", llm_node("Answer.", model=model, tools=[lookup]))
        g.add_edge(START, "agent")
        g.add_edge("agent", END)
        assert g.invoke({"messages": ["what is my key?"]}).outcome == "done"
        assert g.invoke({"messages": [f"my key is {KEY}"]}).outcome == "failed"
        model.close()
        spans = traced_text.spans
        assert traced_text.named("execute_tool lookup") and len(traced_text.named("chat gpt-4o-mini")) == 3
        error = [s for s in spans if s.name.startswith("chat") and s.status.status_code == StatusCode.ERROR]
        assert len(error) == 1 and "answered 400: invalid request made with key [redacted]" in str(
            error[0].status.description
        )
        attributes = dict(error[0].attributes or {})
        assert (attributes["server.address"], attributes["server.port"]) == (
            "127.0.0.1",
            urlsplit(openai_server.base_url).port,
        )
        for span in spans:
            dumped = span.to_json()
            assert KEY not in dumped and KEY[8:] not in dumped and KEY[-12:] not in dumped, span.name
        recorded = [
            (s.attributes or {}).get("gen_ai.tool.call.result", "") for s in traced_text.named("execute_tool lookup")
        ]
        assert recorded and all("[redacted]" in str(text) for text in recorded)  # the tool's text was recorded, keyless

    async def test_a_models_error_is_recorded_without_the_key_it_quotes(self, traced):
        class Leaky:
            name = "leaky"

            async def complete(self, request, on_text):
                raise RuntimeError(f"upstream refused Authorization: Bearer {KEY}")

        result = await agent_graph(Leaky()).ainvoke({"messages": ["hi"]})
        assert result.outcome == "failed"
        chat = traced.one("chat leaky")
        assert chat.status.status_code == StatusCode.ERROR
        assert (chat.attributes or {})["error.type"] == "RuntimeError"
        assert chat.status.description == "upstream refused Authorization: Bearer [redacted]"
        for span in traced.spans:
            assert KEY[8:] not in span.to_json(), span.name

    def test_nothing_of_opentelemetry_is_loaded_until_instrument_is_called(self):
        program = """
import sys
import nbgraph
from nbgraph import END, START, Graph, MessagesState, ScriptedModel, llm_node
from nbgraph.llm import Reply
from tests.graphs import trip_graph

def add(a: int, b: int) -> int:
    '''Add.'''
    return a + b

g = Graph("calc", state=MessagesState)
g.add_node("agent", llm_node("Add.", model=ScriptedModel([Reply(tool_calls=[("add", {"a": 1, "b": 2})]), "3"]), tools=[add]))
g.add_edge(START, "agent")
g.add_edge("agent", END)
assert g.invoke({"messages": ["1 + 2?"]}).outcome == "done"
assert trip_graph().invoke({}).outcome == "interrupted"
loaded = sorted(m for m in sys.modules if m.startswith(("opentelemetry", "nbgraph.otel")))
assert not loaded, loaded
print("clean")
"""
        child = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=120, cwd=REPO)
        assert child.returncode == 0, child.stderr
        assert child.stdout.strip() == "clean"


def test_instrument_without_a_provider_emits_nothing_until_the_global_one_is_set():
    program = """
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import nbgraph.otel
from nbgraph.engine import default_checkpointer
from tests.graphs import trip_graph

nbgraph.otel.instrument()
before = trip_graph().invoke({})
assert before.outcome == "interrupted" and before.run.trace_context == {}, before.run.trace_context
assert dict(default_checkpointer().get(before.thread).answers) == {}  # the checkpoint keeps nothing of it
exporter = InMemorySpanExporter()
provider = TracerProvider()
provider.add_span_processor(SimpleSpanProcessor(exporter))
trace.set_tracer_provider(provider)
after = trip_graph().invoke({})
assert list(after.run.trace_context) == ["traceparent"], after.run.trace_context
print(sorted(span.name for span in exporter.get_finished_spans()))
"""
    child = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=120, cwd=REPO)
    assert child.returncode == 0, child.stderr
    assert child.stdout.strip() == "['invoke_workflow trip', 'node ask']"


# -- a real collector ------------------------------------------------------------------------


def _get(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=5) as response:
        return json.loads(response.read())


@pytest.fixture
def phoenix(tmp_path: Path) -> Iterator[str]:
    """A Phoenix server on loopback (from an environment of its own), its data in ``tmp_path``."""
    with phoenix_server(tmp_path / "phoenix") as base:
        yield base


def test_spans_exported_over_otlp_reach_phoenix_and_read_back_nested(phoenix):
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    project = f"nbgraph-{uuid.uuid4().hex[:8]}"
    provider = TracerProvider(
        resource=Resource({"service.name": "nbgraph-tests", "openinference.project.name": project})
    )
    provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(endpoint=f"{phoenix}/v1/traces")))
    nbgraph.otel.instrument(provider)
    try:
        assert agent_graph(scripted()).invoke({"messages": ["what is 1 + 2, and 1 / 0?"]}).outcome == "done"
        paused = trip_graph().invoke({})
        assert paused.outcome == "interrupted"
    finally:
        nbgraph.otel.uninstrument()
        provider.shutdown()
    url = f"{phoenix}/v1/projects/{project}/spans/otlpv1?limit=100"
    deadline = time.monotonic() + 60
    while True:  # Phoenix stores what it receives in the background
        try:
            spans = _get(url)["data"]
        except urllib.error.HTTPError as exc:  # 404 until the project's first span is stored
            assert exc.code == 404, exc
            spans = []
        if len(spans) >= 8:
            break
        assert time.monotonic() < deadline, f"Phoenix holds {len(spans)} of the 8 spans after 60 s"
        time.sleep(0.25)
    by_name: dict[str, list[dict[str, Any]]] = {}
    for span in spans:
        by_name.setdefault(span["name"], []).append(span)
    assert sorted(by_name) == sorted(
        [
            "invoke_workflow calc",
            "invoke_agent agent",
            "chat gpt-4o-mini",
            "execute_tool add",
            "execute_tool divide",
            "invoke_workflow trip",
            "node ask",
        ]
    )
    assert len(by_name["chat gpt-4o-mini"]) == 2

    def attributes(span: dict[str, Any]) -> dict[str, Any]:
        return {kv["key"]: next(v for v in kv["value"].values() if v is not None) for kv in span["attributes"]}

    run, agent = by_name["invoke_workflow calc"][0], by_name["invoke_agent agent"][0]
    assert agent["parent_span_id"] == run["span_id"]
    for name in ("chat gpt-4o-mini", "execute_tool add", "execute_tool divide"):
        assert {span["parent_span_id"] for span in by_name[name]} == {agent["span_id"]}, name
    chat = attributes(by_name["chat gpt-4o-mini"][0])
    assert (chat["gen_ai.operation.name"], chat["gen_ai.request.model"]) == ("chat", "gpt-4o-mini")
    assert int(chat["gen_ai.usage.input_tokens"]) > 0
    assert attributes(by_name["execute_tool add"][0])["gen_ai.tool.name"] == "add"
    assert by_name["execute_tool divide"][0]["status"]["code"] == 2  # ERROR
    ask = by_name["node ask"][0]
    assert ask["parent_span_id"] == by_name["invoke_workflow trip"][0]["span_id"]
    assert [event["name"] for event in ask["events"]] == ["nbgraph.pause"]


def test_a_sampled_out_run_builds_no_per_step_events_for_its_tracer(monkeypatch):
    """Its nodes' spans would not be recorded: the tracer stops hearing node-enter,
    node-exit and route once the run's span is sampled out, and still ends the run's span."""
    from opentelemetry.sdk.trace.sampling import ALWAYS_OFF

    import nbgraph.engine.listeners as engine_events

    built: list[str] = []
    for name in ("node_enter", "node_exit", "route_event"):
        real = getattr(engine_events, name)
        monkeypatch.setattr(
            engine_events, name, lambda *a, _real=real, _name=name, **k: built.append(_name) or _real(*a, **k)
        )
    for sampler, recorded in ((ALWAYS_OFF, False), (None, True)):
        built.clear()
        exporter = InMemorySpanExporter()
        provider = TracerProvider(sampler=sampler)
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        nbgraph.otel.instrument(provider)
        try:
            g = Graph("pair")
            g.add_node("a", lambda s: {"n": 1})
            g.add_node("b", lambda s: None)
            g.add_edge(START, "a")
            g.add_edge("a", "b")
            g.add_edge("b", END)
            assert g.invoke({}).outcome == "done"
        finally:
            nbgraph.otel.uninstrument()
            provider.shutdown()
        assert bool(built) is recorded, built
        assert bool(exporter.get_finished_spans()) is recorded
