"""The scripted OpenAI server, driven over real HTTP by the real `openai.AsyncOpenAI` client.

The `openai_server` fixture (tests/conftest.py) and the `client` fixture are the pattern other tests can copy.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import openai
import pytest
from openai.types.chat import ChatCompletionChunk
from openai_server import OpenAIServer, Reply

MESSAGES = [
    {"role": "system", "content": "You answer briefly."},
    {"role": "user", "content": "What is the weather in Paris?"},
]
PROMPT_TOKENS = (len("You answer briefly.") + len("What is the weather in Paris?")) // 4 + 1
WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Current weather of a city.",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    },
}


@pytest.fixture
async def client(openai_server: OpenAIServer) -> AsyncIterator[openai.AsyncOpenAI]:
    """No retries by default, so a scripted error surfaces at once; tests opt in with `with_options`."""
    async with openai.AsyncOpenAI(base_url=openai_server.base_url, api_key="sk-test", max_retries=0) as client:
        yield client


async def stream_chunks(client: openai.AsyncOpenAI, **params: object) -> list[ChatCompletionChunk]:
    stream = await client.chat.completions.create(model="gpt-test", messages=MESSAGES, stream=True, **params)
    return [chunk async for chunk in stream]


def content_deltas(chunks: list[ChatCompletionChunk]) -> list[str]:
    return [c.choices[0].delta.content for c in chunks if c.choices and c.choices[0].delta.content]


async def test_streamed_text_arrives_in_several_deltas(openai_server, client):
    openai_server.script(Reply(text="Sunny, 24 degrees."))

    chunks = await stream_chunks(client)

    assert content_deltas(chunks) == ["Sunn", "y, 2", "4 de", "gree", "s."]
    assert chunks[0].choices[0].delta.role == "assistant"
    assert chunks[-1].choices[0].finish_reason == "stop"
    assert {(c.id, c.model, c.object) for c in chunks} == {("chatcmpl-1", "gpt-test", "chat.completion.chunk")}
    assert all(c.usage is None for c in chunks)  # usage is only streamed when asked for


async def test_streamed_tool_calls_are_assembled_by_the_sdk(openai_server, client):
    openai_server.script(Reply(tool_calls=[("get_weather", {"city": "Paris"}), ("get_time", {"tz": "Europe/Paris"})]))

    async with client.chat.completions.stream(model="gpt-test", messages=MESSAGES, tools=[WEATHER_TOOL]) as stream:
        argument_deltas = [e.index async for e in stream if e.type == "tool_calls.function.arguments.delta"]
        completion = await stream.get_final_completion()

    assert argument_deltas.count(0) >= 2 and argument_deltas.count(1) >= 2  # arguments really arrive in parts
    choice = completion.choices[0]
    assert choice.finish_reason == "tool_calls"
    calls = [(call.id, call.function.name, json.loads(call.function.arguments)) for call in choice.message.tool_calls]
    assert calls == [
        ("call_1", "get_weather", {"city": "Paris"}),
        ("call_2", "get_time", {"tz": "Europe/Paris"}),
    ]


async def test_a_reply_sends_the_call_ids_it_is_given_or_none_at_all(openai_server, client):
    # Some providers send no id; some send the same id in every reply.
    calls = [("get_weather", {"city": "Paris"}), ("get_weather", {"city": "Oslo"})]
    openai_server.script(
        Reply(tool_calls=calls, call_ids=[None, "same"]), Reply(tool_calls=calls, call_ids=[None, "same"])
    )

    chunks = await stream_chunks(client, tools=[WEATHER_TOOL])
    named = [call for c in chunks if c.choices for call in c.choices[0].delta.tool_calls or () if call.function.name]
    assert [(call.index, call.id) for call in named] == [(0, None), (1, "same")]
    raw = await client.chat.completions.with_raw_response.create(
        model="gpt-test", messages=MESSAGES, tools=[WEATHER_TOOL]
    )
    sent = raw.http_response.json()["choices"][0]["message"]["tool_calls"]
    assert [call.get("id") for call in sent] == [None, "same"]
    with pytest.raises(ValueError, match="call_ids gives 1 ids for 2 tool calls"):
        Reply(tool_calls=calls, call_ids=["one"])


async def test_usage_is_streamed_last_when_asked_for(openai_server, client):
    openai_server.script(Reply(text="abcdefghij"))  # three pieces of 4 chars

    chunks = await stream_chunks(client, stream_options={"include_usage": True})

    usage_chunk = chunks[-1]
    assert usage_chunk.choices == []
    assert usage_chunk.usage is not None
    assert (usage_chunk.usage.prompt_tokens, usage_chunk.usage.completion_tokens) == (PROMPT_TOKENS, 3)
    assert usage_chunk.usage.total_tokens == PROMPT_TOKENS + 3
    assert all(c.usage is None for c in chunks[:-1])


async def test_non_streamed_completion_with_tool_calls(openai_server, client):
    openai_server.script(
        Reply(tool_calls=[("get_weather", {"city": "Paris"})], prompt_tokens=1000, completion_tokens=7)
    )

    completion = await client.chat.completions.create(model="gpt-test", messages=MESSAGES, tools=[WEATHER_TOOL])

    assert (completion.object, completion.model) == ("chat.completion", "gpt-test")
    choice = completion.choices[0]
    assert choice.finish_reason == "tool_calls"
    assert choice.message.role == "assistant"
    assert choice.message.content is None
    [call] = choice.message.tool_calls
    assert (call.id, call.type, call.function.name) == ("call_1", "function", "get_weather")
    assert json.loads(call.function.arguments) == {"city": "Paris"}
    assert completion.usage is not None
    assert (completion.usage.prompt_tokens, completion.usage.completion_tokens) == (1000, 7)
    assert completion.usage.total_tokens == 1007


async def test_script_is_consumed_in_order_then_the_default_answers(openai_server, client):
    openai_server.script(Reply(text="first"), Reply(text="second"))

    answers = []
    for _ in range(3):
        completion = await client.chat.completions.create(model="gpt-test", messages=MESSAGES)
        answers.append((completion.choices[0].message.content, completion.choices[0].finish_reason))
    streamed = "".join(content_deltas(await stream_chunks(client)))

    assert answers == [("first", "stop"), ("second", "stop"), ("ok", "stop")]
    assert streamed == "ok"


async def test_callable_default_sees_the_request():
    with OpenAIServer(lambda request: Reply(text=request["messages"][-1]["content"].upper())) as echo:
        async with openai.AsyncOpenAI(base_url=echo.base_url, api_key="sk-test", max_retries=0) as client:
            completion = await client.chat.completions.create(model="gpt-test", messages=MESSAGES)

    assert completion.choices[0].message.content == "WHAT IS THE WEATHER IN PARIS?"


async def test_rate_limit_is_retried_by_the_client(openai_server, client):
    openai_server.script(Reply(status=429, text="slow down"), Reply(text="after the retry"))

    completion = await client.with_options(max_retries=2).chat.completions.create(model="gpt-test", messages=MESSAGES)

    assert completion.choices[0].message.content == "after the retry"
    assert len(openai_server.requests) == 2
    assert [h["x-stainless-retry-count"] for h in openai_server.headers] == ["0", "1"]


async def test_rate_limit_without_retries_raises_with_the_error_body(openai_server, client):
    openai_server.script(Reply(status=429, text="slow down"))

    with pytest.raises(openai.RateLimitError) as caught:
        await client.chat.completions.create(model="gpt-test", messages=MESSAGES)

    error = caught.value
    assert (error.status_code, error.type, error.code) == (429, "requests", "rate_limit_exceeded")
    assert error.message == "Error code: 429 - slow down"
    assert error.body == {"message": "slow down", "type": "requests", "param": None, "code": "rate_limit_exceeded"}


async def test_server_error_without_retries_raises(openai_server, client):
    openai_server.script(Reply(status=500, text="kaboom"))

    with pytest.raises(openai.InternalServerError) as caught:
        await client.chat.completions.create(model="gpt-test", messages=MESSAGES)

    assert (caught.value.status_code, caught.value.type) == (500, "server_error")
    assert "kaboom" in caught.value.message
    assert len(openai_server.requests) == 1


async def test_slow_reply_makes_the_client_time_out(openai_server, client):
    openai_server.script(Reply(text="too late", delay=2))

    with pytest.raises(openai.APITimeoutError):
        await client.with_options(timeout=0.3, max_retries=0).chat.completions.create(
            model="gpt-test", messages=MESSAGES
        )

    assert len(openai_server.requests) == 1  # it got there; the answer did not come back in time


async def test_request_body_and_headers_are_recorded(openai_server, client):
    await client.chat.completions.create(
        model="gpt-test", messages=MESSAGES, tools=[WEATHER_TOOL], tool_choice="auto", temperature=0.2
    )

    assert openai_server.requests == [
        {"model": "gpt-test", "messages": MESSAGES, "tools": [WEATHER_TOOL], "tool_choice": "auto", "temperature": 0.2}
    ]
    [headers] = openai_server.headers
    assert headers["authorization"] == "Bearer sk-test"
    assert headers["content-type"] == "application/json"


async def test_request_without_messages_is_rejected_and_consumes_no_reply(openai_server, client):
    openai_server.script(Reply(text="kept"))

    with pytest.raises(openai.BadRequestError) as caught:
        await client.post("/chat/completions", body={"model": "gpt-test"}, cast_to=object)
    completion = await client.chat.completions.create(model="gpt-test", messages=MESSAGES)

    assert (caught.value.status_code, caught.value.type) == (400, "invalid_request_error")
    assert "'messages' is a required property" in caught.value.message
    assert completion.choices[0].message.content == "kept"


async def test_models_lists_the_models_requested(openai_server, client):
    before = [model.id async for model in client.models.list()]
    await client.chat.completions.create(model="gpt-test", messages=MESSAGES)
    await client.chat.completions.create(model="gpt-other", messages=MESSAGES)
    await client.chat.completions.create(model="gpt-test", messages=MESSAGES)
    after = [model.id async for model in client.models.list()]

    assert (before, after) == (["scripted"], ["gpt-test", "gpt-other"])


async def test_script_mode_prints_ready_and_serves_n_pieces():
    process = subprocess.Popen(
        [sys.executable, str(Path(__file__).with_name("openai_server.py")), "--port", "0", "--tokens", "7"],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        ready, base_url = process.stdout.readline().split()
        assert ready == "READY"
        assert base_url.startswith("http://127.0.0.1:") and base_url.endswith("/v1")
        async with openai.AsyncOpenAI(base_url=base_url, api_key="sk-test", max_retries=0) as client:
            chunks = await stream_chunks(client)
    finally:
        process.terminate()
        process.wait(timeout=10)
        if process.stdout is not None:
            process.stdout.close()

    assert content_deltas(chunks) == ["tok "] * 7
