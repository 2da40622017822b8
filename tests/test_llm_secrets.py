"""The API key never outlives a model call.

An endpoint that quotes the key in an error (whole, or masked to its last characters),
or a model that repeats it in a reply or a tool call, must leave no trace of it in
what a run keeps: its reason and error, its events and NDJSON trace, the SQLite
checkpoint (its WAL included), the inspector, and log records. Driven over real HTTP
through the real `openai` client.
"""

from __future__ import annotations

import json
import logging
import traceback
from pathlib import Path

import openai
import pytest
from openai_server import OpenAIServer
from openai_server import Reply as ServerReply

from nbgraph import END, START, Graph, MessagesState, OpenAIModel, SQLiteCheckpointer, llm_node
from nbgraph.llm import UserMessage
from nbgraph.llm._redact import REDACTED, Redactor

KEY = "sk-proj-SECRETk9Rv2LmTq7XbWnQxZw"
TAIL = KEY[-4:]
"""What a masked echo ("sk-proj-****QxZw") shows of the key."""
MIDDLE = KEY[8:20]
SECRETS = (KEY, TAIL, MIDDLE)


def one_node(model: OpenAIModel, **node_options: object) -> Graph:
    g = Graph("chat", state=MessagesState)
    g.add_node("agent", llm_node("You are terse.", model=model, **node_options))
    g.add_edge(START, "agent")
    g.add_edge("agent", END)
    return g


async def run(server: OpenAIServer, tmp_path: Path, **node_options: object) -> tuple[object, list[object]]:
    """One run on a SQLite store in `tmp_path`, its trace and inspector's view written next to it."""
    events: list[object] = []
    store = SQLiteCheckpointer(tmp_path / "runs.db")
    async with OpenAIModel("gpt-4o-mini", base_url=server.base_url, api_key=KEY, max_retries=0) as model:
        g = one_node(model, **node_options)
        result = await g.ainvoke(
            {"messages": [UserMessage(content="Say hello")]}, checkpointer=store, on_event=events.append
        )
        inspected = result.inspect(1)
        (tmp_path / "trace.ndjson").write_text(result.to_ndjson())
        (tmp_path / "inspection.txt").write_text(
            "\n".join([inspected.model_dump_json(), repr(inspected), json.dumps(result.replay().to_json(states=True))])
        )
        (tmp_path / "shown.txt").write_text("\n".join([repr(model), repr(g), repr(result)]))
    assert (tmp_path / "runs.db-wal").exists()  # read while the store is open: its WAL holds the newest writes
    return result, events


def kept_texts(
    tmp_path: Path, result: object, events: list[object], caplog: pytest.LogCaptureFixture
) -> dict[str, str]:
    """Everything the run left behind, by where it was found."""
    kept = {str(path.name): path.read_bytes().decode("latin-1") for path in tmp_path.iterdir() if path.is_file()}
    kept["events"] = "\n".join(event.model_dump_json() for event in events)  # type: ignore[attr-defined]
    kept["reason"] = result.reason or ""  # type: ignore[attr-defined]
    error = result.error  # type: ignore[attr-defined]
    if error is not None:
        kept["error"] = f"{error!r}\n{error}\n" + "".join(traceback.format_exception(error))
    kept["logs"] = "\n".join(f"{record.getMessage()}\n{record.exc_text or ''}" for record in caplog.records)
    return kept


def assert_no_secret(kept: dict[str, str]) -> None:
    leaks = [(where, secret) for where, text in kept.items() for secret in SECRETS if secret in text]
    assert leaks == []


def openai_errors_reachable_from(error: BaseException) -> list[BaseException]:
    """openai exceptions linked to `error`: through its cause and context, or held by its traceback's frames."""
    found: list[BaseException] = []
    seen: set[int] = set()
    todo: list[BaseException] = [error]
    while todo:
        exc = todo.pop()
        if id(exc) in seen:
            continue
        seen.add(id(exc))
        if isinstance(exc, openai.OpenAIError):
            found.append(exc)
        todo += [linked for linked in (exc.__cause__, exc.__context__) if linked is not None]
        for frame, _ in traceback.walk_tb(exc.__traceback__):
            todo += [value for value in frame.f_locals.values() if isinstance(value, BaseException)]
    return found


ERRORS = [
    pytest.param(
        ServerReply(status=400, text="bad request from key {key}: unknown parameter 'top_k'"),
        "answered 400: bad request from key [redacted]: unknown parameter 'top_k'",
        id="400-whole-key",
    ),
    pytest.param(
        ServerReply(status=403, text="key {key} may not use this model"),
        "answered 403: key [redacted] may not use this model",
        id="403-whole-key",
    ),
    pytest.param(
        ServerReply(
            status=403, text="Incorrect API key provided: {masked_key}. Find your key at https://platform.openai.com."
        ),
        "answered 403: Incorrect API key provided: [redacted]. Find your key at https://platform.openai.com.",
        id="403-masked-key",
    ),
    pytest.param(
        ServerReply(status=400, text="key ending ...{key_tail} is not allowed here".replace("{key_tail}", TAIL)),
        "answered 400: key ending ...[redacted] is not allowed here",
        id="400-last-characters",
    ),
    pytest.param(
        ServerReply(text="Hello the", stream_error="upstream refused Authorization: Bearer {key} (quota)"),
        "broke off its answer: upstream refused Authorization: Bearer [redacted] (quota)",
        id="mid-stream-error",
    ),
]


@pytest.mark.parametrize(("reply", "told"), ERRORS)
async def test_an_error_quoting_the_key_leaves_it_nowhere(openai_server, tmp_path, caplog, reply, told):
    caplog.set_level(logging.DEBUG)
    openai_server.script(reply)

    result, events = await run(openai_server, tmp_path)

    assert result.outcome == "failed"
    assert (
        f"node 'agent' failed at step 1: ModelError: model 'gpt-4o-mini' at {openai_server.base_url} {told}"
        == result.reason
    )
    assert [e.error for e in events if e.type == "error"] == [result.reason]
    assert_no_secret(kept_texts(tmp_path, result, events, caplog))


@pytest.mark.parametrize(("reply", "told"), ERRORS)
async def test_the_failed_runs_error_holds_no_openai_exception(openai_server, tmp_path, reply, told):
    openai_server.script(reply)

    result, _ = await run(openai_server, tmp_path)

    assert isinstance(result.error, RuntimeError) and told in str(result.error)
    assert (result.error.__cause__, result.error.__context__) == (None, None)
    assert openai_errors_reachable_from(result.error) == []


async def test_the_server_really_quotes_the_key_it_was_sent(openai_server):
    openai_server.script(
        ServerReply(status=403, text="key {key} may not use this model"),
        ServerReply(status=400, text="got {masked_key}"),
    )
    async with openai.AsyncOpenAI(base_url=openai_server.base_url, api_key=KEY, max_retries=0) as client:
        messages = [{"role": "user", "content": "hi"}]
        with pytest.raises(openai.PermissionDeniedError) as whole:
            await client.chat.completions.create(model="m", messages=messages)
        with pytest.raises(openai.BadRequestError) as masked:
            await client.chat.completions.create(model="m", messages=messages)

    assert whole.value.body["message"] == f"key {KEY} may not use this model"
    assert masked.value.body["message"] == f"got sk-proj-{'*' * (len(KEY) - 12)}{TAIL}"


async def test_a_reply_repeating_the_key_is_kept_and_streamed_without_it(openai_server, tmp_path, caplog):
    caplog.set_level(logging.DEBUG)
    seen_by_tool: list[str] = []

    def remember(note: str) -> str:
        """Remember a note."""
        seen_by_tool.append(note)
        return "noted"

    # chunk_chars=5 splits the key across pieces: no single piece holds it.
    openai_server.script(
        ServerReply(tool_calls=[("remember", {"note": f"the key is {KEY}"})]),
        ServerReply(text=f"Your key is {KEY}; keys look like sk-proj-... and go in a Bearer header.", chunk_chars=5),
    )

    result, events = await run(openai_server, tmp_path, tools=[remember])

    assert result.outcome == "done", result.reason
    shown = "Your key is [redacted]; keys look like sk-proj-... and go in a Bearer header."
    assert result.state.messages[-1].content == shown
    deltas = [e.text for e in events if e.type == "text-delta"]
    assert len(deltas) > 1 and "".join(deltas) == shown
    assert seen_by_tool == ["the key is [redacted]"]
    assert [e.args for e in events if e.type == "tool-call"] == [{"note": "the key is [redacted]"}]
    assert_no_secret(kept_texts(tmp_path, result, events, caplog))


async def test_streamed_text_that_only_begins_like_the_key_is_passed_on_whole(openai_server, tmp_path):
    almost = KEY[:-1] + "!"
    openai_server.script(ServerReply(text=f"{almost} and {KEY[:10]}", chunk_chars=3))

    result, events = await run(openai_server, tmp_path)

    assert result.outcome == "done", result.reason
    assert "".join(e.text for e in events if e.type == "text-delta") == f"{almost} and {KEY[:10]}"
    assert result.state.messages[-1].content == f"{almost} and {KEY[:10]}"


def test_the_model_never_shows_its_key():
    model = OpenAIModel("gpt-4o-mini", base_url="http://127.0.0.1:9/v1", api_key=KEY)

    assert repr(model) == "OpenAIModel('gpt-4o-mini', base_url='http://127.0.0.1:9/v1')"
    assert all(secret not in repr(model) + str(model) for secret in SECRETS)


class TestRedactor:
    @pytest.mark.parametrize(
        ("text", "kept"),
        [
            (f"bad key {KEY}", "bad key [redacted]"),
            (f"key sk-proj-****{TAIL} rejected", "key [redacted] rejected"),
            (f"key {KEY[:12]}...{TAIL}.", "key [redacted]."),
            (f"key ending in {TAIL}, rotate it", "key ending in [redacted], rotate it"),
            (f"key ****{TAIL}", "key [redacted]"),
            (f"fragment {MIDDLE} seen", "fragment [redacted] seen"),
            ("Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.abc-_", "Authorization: Bearer [redacted]"),
            ("sk-ant-api03-AbCdEfGhIjKlMnOp is not valid", "[redacted] is not valid"),
            ("refused AIzaSyA1b2C3d4E5f6G7h8I9j0KlMnOpQrStUvW for this project", "refused [redacted] for this project"),
            ("masked sk-abc...wxyz here", "masked [redacted] here"),
            ("hf_AbCdEfGhIjKlMnOpQrStUvWxYz012345 was revoked", "[redacted] was revoked"),
            ("api_key=9f8e7d6c5b4a39281706f5e4d3c2b1a0 was refused", "api_key=[redacted] was refused"),
            ('{"token": "Zm9vYmFyYmF6cXV4MTIzNDU2Nzg5MA=="}', '{"token": "[redacted]"}'),
        ],
    )
    def test_an_error_loses_the_key_its_fragments_and_key_shaped_tokens(self, text, kept):
        assert Redactor(KEY).error(text) == kept

    @pytest.mark.parametrize(
        "text",
        [
            "Rate limit reached for gpt-4o-mini in organization org-abc on tokens per min (TPM): Limit 200000.",
            "This model's maximum context length is 128000 tokens. However, your messages resulted in 130512 tokens.",
            "Invalid value for 'tool_choice': the key 'mode' is required. Request id req_9f8e7d6c5b4a3928.",
            "the task-force said: risk-free, ask-me-anything; see https://example.com/sk-learn",
            "Loading... done; the key to success; token budget exceeded",
        ],
    )
    def test_an_ordinary_error_is_left_as_it_is(self, text):
        assert Redactor(KEY).error(text) == text

    def test_a_reply_loses_only_the_key_itself(self):
        reply = f"Use {KEY}, not sk-proj-****{TAIL}; a Bearer token such as sk-ant-api03-AbCdEfGhIjKl goes in a header."
        assert Redactor(KEY).reply(reply) == (
            f"Use {REDACTED}, not sk-proj-****{TAIL}; a Bearer token such as sk-ant-api03-AbCdEfGhIjKl goes in a header."
        )

    @pytest.mark.parametrize("placeholder", ["ollama", "EMPTY", None])
    def test_a_placeholder_key_of_a_local_server_is_not_a_secret(self, placeholder):
        text = "Run ollama or vLLM locally; set EMPTY as the key."
        assert Redactor(placeholder).reply(text) == text
        assert Redactor(placeholder).error(text) == text
