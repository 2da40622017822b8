"""Secrets stay secret wherever they come from: one redaction door for everything a run keeps.

Each door puts a key in what a run holds (a node's exception text, an exception's cause, a
tool's result and error, a tool that returns the configured key itself, a model's
``base_url`` with credentials, a registered value), then every file, row, event, span,
widget state, inspector text, batch row and log line the run produced is searched for the
key and its fragments. The model is the real ``openai`` client against a local server.
"""

from __future__ import annotations

import json
import logging
import socket
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from openai_server import OpenAIServer
from openai_server import Reply as ServerReply
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import nbgraph.otel
from nbgraph import END, START, Graph, MessagesState, OpenAIModel, SQLiteCheckpointer, llm_node, tool
from nbgraph.llm import UserMessage
from nbgraph.secrets import REDACTED, forget_secret, redact, register_secret, shown_url
from nbgraph.widget import GraphView

KEY = "sk-proj-SECRETk9Rv2LmTq7XbWnQxZw"
FRAGMENTS = (KEY, KEY[8:20], KEY[-12:])
"""The key and pieces of it that must not be found (12 characters: longer than any word a
redaction leaves)."""


@pytest.fixture
def configured_key(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    return KEY


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    nbgraph.otel.instrument(provider, capture_text=True)
    try:
        yield exporter
    finally:
        nbgraph.otel.uninstrument()
        provider.shutdown()


def everything_kept(
    graph: Graph,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    spans: InMemorySpanExporter,
    input: dict[str, Any],
) -> dict[str, str]:
    """Run ``graph`` on a SQLite store, then gather every text the run left behind, by where."""
    caplog.set_level(logging.DEBUG)
    store = SQLiteCheckpointer(tmp_path / "runs.db")
    events: list[Any] = []
    result = graph.invoke(input, checkpointer=store, on_event=events.append)
    kept = {"reason": result.reason or "", "events": "\n".join(e.model_dump_json() for e in events)}
    kept["trace"] = result.to_ndjson()
    kept["inspector"] = "\n".join(
        repr(result.inspect(step.step)) + result.inspect(step.step).model_dump_json() for step in result.history
    )
    kept["replayed"] = json.dumps(result.replay().to_json(states=True), default=str)
    kept["widget"] = json.dumps(GraphView.replay(result).get_state(), default=str)
    rows = graph.batch([input], progress=False, table="rows")
    kept["batch"] = repr(rows)
    kept["spans"] = "\n".join(span.to_json() for span in spans.get_finished_spans())
    kept["logs"] = "\n".join(f"{r.getMessage()}\n{r.exc_text or ''}" for r in caplog.records)
    for path in tmp_path.iterdir():  # the database and its WAL, read while the store is open
        kept[path.name] = path.read_bytes().decode("latin-1")
    store.close()
    assert kept["reason"] or result.outcome == "done"
    return kept


def leaks(kept: dict[str, str], secrets: tuple[str, ...] = FRAGMENTS) -> list[tuple[str, str]]:
    return [(where, secret) for where, text in kept.items() for secret in secrets if secret in text]


def one_node(fn: Callable[..., Any]) -> Graph:
    g = Graph("doors")
    g.add_node("work", fn)
    g.add_edge(START, "work")
    g.add_edge("work", END)
    return g


class TestANodesOwnText:
    def test_a_key_in_a_nodes_exception_is_kept_nowhere(self, configured_key, tmp_path, caplog, spans):
        def auth(state):
            raise RuntimeError(f"auth failed for {configured_key} (Bearer {configured_key})")

        kept = everything_kept(one_node(auth), tmp_path, caplog, spans, {})
        assert leaks(kept) == []
        assert f"RuntimeError: auth failed for {REDACTED}" in kept["reason"]  # what went wrong still shows

    def test_a_key_in_an_exceptions_cause_is_kept_nowhere(self, configured_key, tmp_path, caplog, spans):
        def wrapped(state):
            try:
                raise ValueError(f"header Authorization: Bearer {configured_key}")
            except ValueError as exc:
                raise RuntimeError(f"the client gave up: {exc}") from exc

        assert leaks(everything_kept(one_node(wrapped), tmp_path, caplog, spans, {})) == []

    def test_a_registered_secret_is_kept_nowhere(self, tmp_path, caplog, spans):
        password = "hunter2-correct-horse"
        register_secret(password)
        found = found_after_failing_with(
            PermissionError(f"login {password!r} refused"), password, tmp_path, caplog, spans
        )
        assert found == {}


def found_after_failing_with(
    error: Exception, secret: str, tmp_path: Path, caplog: pytest.LogCaptureFixture, spans: InMemorySpanExporter
) -> dict[str, str]:
    """Where what a run whose node raises ``error`` keeps holds ``secret`` (known to nbgraph) or its
    first 10 characters; the secret is forgotten afterwards."""

    def fails(state: Any) -> None:
        raise error

    try:
        kept = everything_kept(one_node(fails), tmp_path, caplog, spans, {})
    finally:
        forget_secret(secret)
    return {where: text for where, text in kept.items() if secret in text or secret[:10] in text}


def tool_agent(server: OpenAIServer, *tools: Any, base_url: str | None = None) -> Graph:
    g = Graph("agent", state=MessagesState)
    model = OpenAIModel("gpt-4o-mini", base_url=base_url or server.base_url, max_retries=0)
    g.add_node("agent", llm_node("You use tools.", model=model, tools=list(tools)))
    g.add_edge(START, "agent")
    g.add_edge("agent", END)
    return g


ASK = {"messages": [UserMessage(content="Look it up")]}


class TestTools:
    @pytest.mark.parametrize(
        "returned",
        [
            pytest.param(lambda key: f"found token {key}", id="a result quoting the key"),
            pytest.param(lambda key: key, id="the configured key itself"),
            pytest.param(lambda key: {"auth": {"header": f"Bearer {key}"}}, id="nested in a structure"),
        ],
    )
    def test_a_tools_result_holding_the_key_is_kept_nowhere(
        self, returned, configured_key, openai_server, tmp_path, caplog, spans
    ):
        @tool
        def lookup(what: str) -> Any:
            """Look something up."""
            return returned(configured_key)

        # Two rounds: one for the run, one for the batch row of the same input.
        for _ in range(2):
            openai_server.script(ServerReply(tool_calls=[("lookup", {"what": "x"})]), ServerReply(text="Done."))
        kept = everything_kept(tool_agent(openai_server, lookup), tmp_path, caplog, spans, ASK)
        assert leaks(kept) == []
        # The model read the redacted result too: what it is told, it can repeat.
        sent = json.dumps(openai_server.requests)
        assert KEY not in sent.replace(f"Bearer {KEY}", "") and REDACTED in sent

    def test_a_tools_error_quoting_the_key_is_kept_nowhere(
        self, configured_key, openai_server, tmp_path, caplog, spans
    ):
        @tool
        def lookup(what: str) -> str:
            """Look something up."""
            raise ConnectionError(f"401 for api_key={configured_key}")

        for _ in range(2):
            openai_server.script(ServerReply(tool_calls=[("lookup", {"what": "x"})]), ServerReply(text="Sorry."))
        assert leaks(everything_kept(tool_agent(openai_server, lookup), tmp_path, caplog, spans, ASK)) == []


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class TestBaseUrl:
    PASSWORD = "pa55-W0rd-9f8e7d6c"
    TOKEN = "tok-1234567890abcdef"

    def test_credentials_in_the_models_url_are_kept_nowhere(self, tmp_path, caplog, spans, monkeypatch):
        monkeypatch.delenv("OPENAI_API_KEY", raising=False)
        url = f"http://alice:{self.PASSWORD}@127.0.0.1:{closed_port()}/v1?api-key={self.TOKEN}"
        g = Graph("chat", state=MessagesState)
        model = OpenAIModel("gpt-4o-mini", base_url=url, api_key="EMPTY", max_retries=0, timeout=5)
        g.add_node("agent", llm_node("Hi.", model=model))
        g.add_edge(START, "agent")
        g.add_edge("agent", END)
        kept = everything_kept(g, tmp_path, caplog, spans, ASK)
        kept["model"] = repr(model) + str(model.base_url)
        secrets = (self.PASSWORD, self.TOKEN, self.PASSWORD[:10], self.TOKEN[-10:])
        assert leaks(kept, secrets) == []
        assert "cannot reach model 'gpt-4o-mini' at http://redacted@127.0.0.1:" in kept["reason"]
        assert repr(model).startswith("OpenAIModel('gpt-4o-mini', base_url='http://redacted@127.0.0.1:")


class TestTheDoor:
    @pytest.mark.parametrize(
        ("text", "shown"),
        [
            ("Authorization: Bearer abc.DEF-123_xyz", f"Authorization: Bearer {REDACTED}"),
            ("key sk-ant-api03-AbCdEf123456 rejected", f"key {REDACTED} rejected"),
            ("https://bob:s3cret-pw@db.example:5432/x", "https://redacted@db.example:5432/x"),
            ("GET /v1?x=1&access_token=abc123def&y=2", f"GET /v1?x=1&access_token={REDACTED}&y=2"),
            ('{"api_key": "A1b2C3d4E5f6G7h8I9j0K"}', f'{{"api_key": "{REDACTED}"}}'),
        ],
    )
    def test_credentials_of_every_shape_go(self, text, shown):
        assert redact(text) == shown

    @pytest.mark.parametrize(
        "text",
        [
            "node 'plan' failed at step 3: KeyError: 'mode'",
            "loading...done; sk-learn is a library; the key 'mode' is missing",
            "https://example.com/docs?page=2#top",
            "the token count is 4096 this turn",
        ],
    )
    def test_ordinary_text_stays_whole(self, text):
        assert redact(text) == text

    def test_a_secret_in_the_environment_is_known_by_its_variables_name(self, monkeypatch):
        monkeypatch.setenv("ACME_SERVICE_TOKEN", "t0ken-for-acme-7788")
        monkeypatch.setenv("ACME_MODE", "production-mode-1234")
        assert redact("t0ken-for-acme-7788 in production-mode-1234") == f"{REDACTED} in production-mode-1234"

    def test_a_url_shown_keeps_its_host_and_path(self):
        shown = shown_url("https://u:p@h.example/v1?api-key=k&x=1")
        assert shown == "https://redacted@h.example/v1?api-key=redacted&x=1"
        assert urlsplit(shown).hostname == "h.example"  # still a URL: a span reads its host


class TestStores:
    def test_a_stores_password_is_a_secret_from_when_the_store_is_made(self, tmp_path, caplog, spans):
        from nbgraph import CheckpointError, RedisCheckpointer

        password = "st0re-Passw0rd-5e6f7a"
        try:  # (no server needs to answer: the password is known once the URL is read)
            RedisCheckpointer(f"redis://:{password}@127.0.0.1:{closed_port()}/0").close()
        except CheckpointError as exc:
            assert password[:10] not in str(exc)
        found = found_after_failing_with(
            RuntimeError(f"could not log in with {password}"), password, tmp_path, caplog, spans
        )
        assert found == {}


async def test_the_live_view_of_a_run_failing_with_the_key_shows_none_of_it(configured_key):
    def auth(state):
        raise RuntimeError(f"auth failed for {configured_key}")

    run = one_node(auth).start({}, display=False)
    view = GraphView.for_run(run)
    result = await run
    shown = json.dumps(view.get_state(), default=str)
    assert result.outcome == "failed" and "auth failed for" in shown  # the view did show the failure
    assert [secret for secret in FRAGMENTS if secret in shown] == []
