"""Recorded runs: a real model's exchanges kept in a file, then replayed with the server stopped.

Recording goes through the real `openai` client to the local OpenAI-compatible server; the
replay runs after the server is closed, with no key in the environment, so a call that
reached for the network would fail the run.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from openai_server import Reply as ServerReply

from nbgraph import END, START, Graph, MessagesState, OpenAIModel, ScriptedModel, llm_node, recorded, register_secret
from nbgraph.batch import Batch
from nbgraph.llm import NotRecorded, RecordedModel, Reply, UserMessage
from nbgraph.secrets import forget_secret

KEY = "sk-proj-RECORDk9Rv2LmTq7XbWnQxZw"
"""Shaped like a real OpenAI key, so the client sends it and the redaction must find it."""


def get_weather(city: str) -> str:
    """Current weather of a city."""
    return f"Sunny in {city}, 24 C"


def desk(model: Any, system: str = "You answer travellers.") -> Graph:
    """agent (with a tool) -> review: two LLM nodes, a tool round, three model calls."""
    g = Graph("desk", state=MessagesState, model=model)
    g.add_node("agent", llm_node(system, tools=[get_weather]))
    g.add_node("review", llm_node("You check the answer in one line."))
    g.add_edge(START, "agent")
    g.add_edge("agent", "review")
    g.add_edge("review", END)
    return g


def script(server) -> None:
    server.script(
        ServerReply(tool_calls=[("get_weather", {"city": "Paris"})]),
        ServerReply(text="It is sunny in Paris, 24 degrees."),
        ServerReply(text="The answer is right."),
    )


def question(text: str = "What is the weather in Paris?") -> dict:
    return {"messages": [UserMessage(content=text)]}


def comparable(value: Any) -> Any:
    """An event or a state without what differs between any two runs: message ids, durations."""
    if hasattr(value, "model_dump"):
        value = value.model_dump(mode="json")
    if isinstance(value, dict):
        return {
            key: comparable(item)
            for key, item in value.items()
            if key != "duration" and not (key == "id" and "role" in value)
        }
    if isinstance(value, list):
        return [comparable(item) for item in value]
    return value


@pytest.fixture
def live(openai_server):
    """Models at the test's server, with the key; their connections closed when the test ends."""
    made: list[OpenAIModel] = []

    def model() -> OpenAIModel:
        made.append(OpenAIModel("gpt-4o-mini", base_url=openai_server.base_url, api_key=KEY, max_retries=0))
        return made[-1]

    yield model
    for each in made:
        each.close()


def lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.fixture(autouse=True)
def no_key(monkeypatch):
    # A replay needs none: a run that found one in the environment would prove nothing.
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.delenv("NBGRAPH_MODEL", raising=False)


async def test_a_recorded_run_replays_with_the_server_stopped_giving_the_same_path_state_events_and_usage(
    openai_server, tmp_path, live
):
    path = tmp_path / "desk.ndjson"
    script(openai_server)
    first_events: list[Any] = []
    async with live() as model:
        first = await desk(recorded(model, path, mode="record")).ainvoke(
            question(), thread="trip", on_event=first_events.append
        )
    assert first.outcome == "done" and len(openai_server.requests) == 3
    openai_server.close()  # nothing answers at its address any more

    again = recorded(OpenAIModel("gpt-4o-mini", base_url=openai_server.base_url, max_retries=0), path, mode="replay")
    events: list[Any] = []
    second = await desk(again).ainvoke(question(), thread="trip", on_event=events.append)

    assert second.outcome == "done", second.reason
    assert second.path == first.path == ["agent", "review"]
    assert comparable(second.state) == comparable(first.state)
    assert [comparable(e) for e in events] == [comparable(e) for e in first_events]
    assert (second.tokens, second.cost, second.turns) == (first.tokens, first.cost, first.turns) != (0, 0.0, 0)
    assert (again.replayed, again.recorded) == (3, 0)
    # The tool ran again (tools are the graph's own code); the model's turns came from the file.
    assert [m.content for m in second.state.messages if m.role == "tool"] == ["Sunny in Paris, 24 C"]


def test_the_recording_is_one_readable_line_per_exchange(openai_server, tmp_path, live):
    path = tmp_path / "desk.ndjson"
    script(openai_server)
    result = desk(recorded(live(), path, mode="record")).invoke(question())
    assert result.outcome == "done"
    header, *exchanges = lines(path)
    assert header == {"nbgraph": "recording", "version": 1}
    assert [e["node"] for e in exchanges] == ["agent", "agent", "review"]
    first = exchanges[0]
    assert first["request"]["model"] == "gpt-4o-mini"
    assert [m["role"] for m in first["request"]["messages"]] == ["system", "user"]
    assert first["request"]["tools"][0]["function"]["name"] == "get_weather"
    assert first["response"]["tool_calls"] == [{"id": "call_1", "name": "get_weather", "arguments": {"city": "Paris"}}]
    second = exchanges[1]["response"]
    assert second["text"] == "It is sunny in Paris, 24 degrees."
    assert len(second["deltas"]) > 1 and "".join(second["deltas"]) == second["text"]
    assert second["prompt_tokens"] > 0 and second["completion_tokens"] > 0 and second["finish_reason"] == "stop"
    # Every exchange's request is under its own digest; a request asked again shares it.
    assert len({e["digest"] for e in exchanges}) == 3


def test_the_key_never_reaches_the_recording(openai_server, tmp_path, live):
    path = tmp_path / "leaky.ndjson"
    # The model repeats the key in its text and in a tool call; the person put it in the question.
    openai_server.script(
        ServerReply(tool_calls=[("get_weather", {"city": f"Paris {KEY}"})]),
        ServerReply(text=f"Your key is {KEY}, and Paris is sunny."),
        ServerReply(text="ok"),
    )
    result = desk(recorded(live(), path, mode="record")).invoke(question(f"Is {KEY} my key? Weather?"))
    assert result.outcome == "done", result.reason
    assert openai_server.headers[0]["authorization"] == f"Bearer {KEY}"  # the real key went over HTTP
    text = path.read_text()
    assert "[redacted]" in text
    for piece in (KEY, KEY[8:20], KEY[-12:]):
        assert piece not in text


def test_a_changed_prompt_fails_naming_the_node_and_the_difference(openai_server, tmp_path, live):
    path = tmp_path / "desk.ndjson"
    script(openai_server)
    desk(recorded(live(), path, mode="record"), system="You answer travellers.").invoke(question())
    openai_server.close()

    changed = desk(recorded(None, path, mode="replay"), system="You answer travellers briefly.")
    result = changed.invoke(question())

    assert result.outcome == "failed"
    assert isinstance(result.error, NotRecorded)
    assert result.reason is not None
    assert "node 'agent' asked 'gpt-4o-mini' for a reply that" in result.reason
    assert "The nearest recorded request (node 'agent'" in result.reason
    assert "message 0 (system): recorded 'You answer travellers.', asked 'You answer travellers briefly.'" in (
        result.reason
    )


def test_a_changed_question_is_shown_where_the_texts_part(tmp_path):
    path = tmp_path / "long.ndjson"
    long = "Please tell me, in as few words as you can manage, what the weather is like today in "
    g = desk(recorded(ScriptedModel(["Sunny.", "Fine."]), path, mode="record"))
    g.add_node("agent", llm_node("You answer travellers."), replace=True)  # (no tool: one call a node)
    g.invoke(question(long + "Paris?"))
    replay = desk(recorded(None, path, mode="replay"))
    replay.add_node("agent", llm_node("You answer travellers."), replace=True)
    reason = replay.invoke(question(long + "Lyon?")).reason or ""
    assert (
        "message 1 (user): recorded \u2026'the weather is like today in Paris?', "
        "asked \u2026'the weather is like today in Lyon?'"
    ) in reason


def test_a_new_model_parameter_or_tool_is_named(tmp_path):
    path = tmp_path / "params.ndjson"
    scripted = ScriptedModel(["Sunny."], name="gpt-4o-mini")
    scripted.params = {"temperature": 0}  # type: ignore[attr-defined]  (as the OpenAIModel it stands for sends)
    one = Graph("one", state=MessagesState, model=recorded(scripted, path, mode="record"))
    one.add_node("agent", llm_node("Hi."))
    one.add_edge(START, "agent")
    one.add_edge("agent", END)
    one.invoke(question())
    assert recorded(None, path, mode="replay").params == {"temperature": 0}

    warmer = OpenAIModel("gpt-4o-mini", base_url="http://127.0.0.1:9/v1", temperature=0.7)
    two = Graph("one", state=MessagesState, model=recorded(warmer, path, mode="replay"))
    two.add_node("agent", llm_node("Hi.", tools=[get_weather]))
    two.add_edge(START, "agent")
    two.add_edge("agent", END)
    reason = two.invoke(question()).reason or ""
    assert "parameter temperature: recorded '0', asked '0.7'" in reason
    assert "tools: recorded [], asked [get_weather]" in reason


async def test_start_streams_the_recorded_pieces_as_the_original_run_did(openai_server, tmp_path, live):
    path = tmp_path / "desk.ndjson"
    script(openai_server)
    pieces: list[str] = []
    async with live() as model:
        await desk(recorded(model, path, mode="record")).ainvoke(
            question(), on_event=lambda e: pieces.append(e.text) if e.type == "text-delta" else None
        )
    openai_server.close()
    streamed: list[str] = []
    run = desk(recorded(None, path, mode="replay")).start(
        question(), display=False, on_event=lambda e: streamed.append(e.text) if e.type == "text-delta" else None
    )
    result = await run
    assert result.outcome == "done"
    assert streamed == pieces and len(pieces) > 4


def test_missing_mode_replays_what_is_kept_and_records_what_is_not(openai_server, tmp_path, live):
    path = tmp_path / "desk.ndjson"
    openai_server.script(ServerReply(text="Sunny."), ServerReply(text="Fine."))
    g = Graph("one", state=MessagesState)
    model = recorded(live(), path)  # (the default mode is "missing")
    assert model.mode == "missing"
    g.model = model
    g.add_node("agent", llm_node("You answer travellers."))
    g.add_edge(START, "agent")
    g.add_edge("agent", END)

    assert g.invoke(question("Paris?")).state.messages[-1].content == "Sunny."
    assert g.invoke(question("Paris?")).state.messages[-1].content == "Sunny."  # replayed: no second call
    assert len(openai_server.requests) == 1 and (model.recorded, model.replayed) == (1, 1)
    assert g.invoke(question("Lyon?")).state.messages[-1].content == "Fine."  # missing: asked, and kept
    assert len(openai_server.requests) == 2 and model.exchanges == 2 and len(lines(path)) == 3

    # A fresh object reads both back; without a key the missing request fails as a replay would.
    openai_server.close()
    offline = recorded(OpenAIModel("gpt-4o-mini"), path)
    g.model = offline
    assert g.invoke(question("Lyon?")).state.messages[-1].content == "Fine."
    result = g.invoke(question("Rome?"))
    assert result.outcome == "failed" and isinstance(result.error, NotRecorded)
    assert "message 1 (user): recorded 'Lyon?', asked 'Rome?'" in (result.reason or "")
    assert "asking the model failed: model 'gpt-4o-mini' has no API key" in (result.reason or "")


def test_samples_of_one_request_come_back_in_order_round_and_round(tmp_path):
    path = tmp_path / "samples.ndjson"
    g = Graph("one", state=MessagesState)
    g.add_node("agent", llm_node("Toss a coin."))
    g.add_edge(START, "agent")
    g.add_edge("agent", END)
    g.model = recorded(ScriptedModel(["heads", "tails", "tails"]), path, mode="record")
    kept = [g.invoke(question("Toss.")).state.messages[-1].content for _ in range(3)]
    assert kept == ["heads", "tails", "tails"]
    assert len({e["digest"] for e in lines(path)[1:]}) == 1  # one request, three replies

    g.model = recorded(None, path, mode="replay")
    again = [g.invoke(question("Toss.")).state.messages[-1].content for _ in range(4)]
    assert again == ["heads", "tails", "tails", "heads"]


def test_a_recorded_batch_replays_in_the_batch(tmp_path):
    path = tmp_path / "batch.ndjson"

    def answer(messages) -> str:
        return f"About {messages[-1].content.rstrip('?')}."

    g = Graph("one", state=MessagesState)
    g.add_node("agent", llm_node("You answer travellers."))
    g.add_edge(START, "agent")
    g.add_edge("agent", END)
    cities = {city: question(f"{city}?") for city in ("Paris", "Lyon", "Rome", "Oslo", "Kyiv")}
    g.model = recorded(ScriptedModel(answer), path, mode="record")
    g.batch(cities, progress=False, table="rows")
    g.model = offline = recorded(None, path, mode="replay")
    batch = Batch(g, cities, progress=False, table="rows", results=True, concurrency=3)
    rows = asyncio.run(batch.run())
    assert [row.outcome for row in rows] == ["done"] * 5
    assert offline.replayed == 5
    assert {key: r.state.messages[-1].content for key, r in batch.results.items()} == {
        city: f"About {city}." for city in cities
    }


def test_a_request_that_quoted_a_secret_is_found_again(tmp_path):
    secret = "registered-secret-value-42"
    register_secret(secret)
    try:
        path = tmp_path / "secret.ndjson"
        g = Graph("one", state=MessagesState)
        g.add_node("agent", llm_node("You answer."))
        g.add_edge(START, "agent")
        g.add_edge("agent", END)
        g.model = recorded(ScriptedModel(["noted"]), path, mode="record")
        g.invoke(question(f"remember {secret}"))
        assert secret not in path.read_text()
        g.model = offline = recorded(None, path, mode="replay")
        assert g.invoke(question(f"remember {secret}")).state.messages[-1].content == "noted"
        assert offline.replayed == 1
    finally:
        forget_secret(secret)


def test_a_tool_call_with_arguments_that_are_no_object_replays_as_it_was(tmp_path):
    path = tmp_path / "raw.ndjson"

    class Broken(ScriptedModel):
        async def complete(self, request, on_text):
            done = await super().complete(request, on_text)
            if not done.tool_calls:
                return done
            from dataclasses import replace

            from nbgraph.llm import ToolCallRequest

            return replace(done, tool_calls=(ToolCallRequest(id="c1", name="get_weather", raw_arguments="{nope"),))

    g = desk(recorded(Broken([Reply(tool_calls=[("get_weather", {})]), "Sorry.", "Bad."]), path, mode="record"))
    first = g.invoke(question())
    g.model = recorded(None, path, mode="replay")
    second = g.invoke(question())
    assert comparable(second.state) == comparable(first.state)
    assert "the arguments must be a JSON object" in [m for m in second.state.messages if m.role == "tool"][0].content


def test_bad_files_and_arguments_say_what_is_wrong_and_where(tmp_path):
    with pytest.raises(ValueError, match=r"there is no recording at .*gone\.ndjson: make one with recorded"):
        recorded(None, tmp_path / "gone.ndjson", mode="replay")
    trace = tmp_path / "trace.ndjson"
    trace.write_text('{"type": "run-start", "thread": "t", "step": 0, "graph": "g"}\n')
    with pytest.raises(ValueError, match=r"trace\.ndjson is not an nbgraph recording: its first line is"):
        recorded(None, trace, mode="replay")
    broken = tmp_path / "broken.ndjson"
    broken.write_text('{"nbgraph": "recording", "version": 1}\n{"digest": "x", \n')
    with pytest.raises(ValueError, match=r"broken\.ndjson, line 2 is not JSON"):
        recorded(None, broken, mode="replay")
    with pytest.raises(ValueError, match="mode must be one of 'record', 'replay', 'missing', got 'once'"):
        recorded(ScriptedModel(["x"]), tmp_path / "x.ndjson", mode="once")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"recorded\(None, \.\.\.\) can only replay"):
        recorded(None, tmp_path / "x.ndjson", mode="record")
    empty = tmp_path / "empty.ndjson"
    empty.write_text("")
    with pytest.raises(ValueError, match=r"empty\.ndjson is empty"):
        recorded(None, empty, mode="replay")


def test_a_recording_of_two_models_needs_the_model_to_replay(tmp_path):
    path = tmp_path / "two.ndjson"
    g = Graph("two", state=MessagesState)
    g.add_node("a", llm_node("A.", model=recorded(ScriptedModel(["a"], name="small"), path, mode="record")))
    g.add_node("b", llm_node("B.", model=recorded(ScriptedModel(["b"], name="large"), path, mode="missing")))
    g.add_edge(START, "a")
    g.add_edge("a", "b")
    g.add_edge("b", END)
    assert g.invoke(question()).outcome == "done"
    with pytest.raises(ValueError, match=r"holds 2 .*give the model to replay"):
        recorded(None, path, mode="replay")
    replayed = recorded(ScriptedModel([], name="large"), path, mode="replay")
    assert isinstance(replayed, RecordedModel) and replayed.exchanges == 2


def test_the_model_travels_with_its_recording(tmp_path):
    import pickle

    path = tmp_path / "one.ndjson"
    g = Graph("one", state=MessagesState)
    g.add_node("agent", llm_node("Hi."))
    g.add_edge(START, "agent")
    g.add_edge("agent", END)
    g.model = recorded(ScriptedModel(["Hello."]), path, mode="record")
    g.invoke(question())
    model = recorded(OpenAIModel("scripted"), path, mode="replay")
    shipped = pickle.loads(pickle.dumps(model))
    path.unlink()  # a worker on another machine has no file: the replies came with the model
    assert shipped.model is None and shipped.exchanges == 1
    g.model = shipped
    assert g.invoke(question()).state.messages[-1].content == "Hello."


def test_every_part_of_a_request_is_found_again_as_it_was_recorded(tmp_path):
    # The replay digests a request its own quick way (each message once): it must meet the
    # digest the recording wrote, whatever the request holds.
    path = tmp_path / "all.ndjson"
    scripted = ScriptedModel(
        [
            Reply(tool_calls=[("get_weather", {"city": "Zürich\u2028Genève"})]),
            "Il fait beau \u2014 \u00e0 Gen\u00e8ve.",
            "Juste.",
        ]
    )
    scripted.params = {"temperature": 0.2, "max_tokens": 50, "stop": ["\n\n"]}  # type: ignore[attr-defined]
    g = desk(recorded(scripted, path, mode="record"), system="Tu réponds aux voyageurs. \u2028 Brièvement.")
    first = g.invoke(question("Quel temps fait-il à Zürich ? \U0001f326"))
    assert first.outcome == "done", first.reason
    replaying = recorded(None, path, mode="replay")
    g.model = replaying
    second = g.invoke(question("Quel temps fait-il à Zürich ? \U0001f326"))
    assert second.outcome == "done", second.reason
    assert comparable(second.state) == comparable(first.state) and replaying.replayed == 3
