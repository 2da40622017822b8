"""Fixtures the test files share: one real redis-server and one real PostgreSQL server for the
session, the scripted OpenAI server."""

from __future__ import annotations

from collections.abc import Iterator

import ipywidgets.comm
import pytest
from openai_server import OpenAIServer
from postgres_server import postgres, postgres_dsn  # noqa: F401 (the session's server; a schema per test)
from redis_server import redis_server

# The test process is no kernel: its widgets take the comm package's comms, as under any ipykernel
# from 6.18 on. (Before 6.18, Colab's 6.17 say, ipywidgets would take ipykernel's own, which send
# nothing outside a kernel, so no test could read what a view sends. In a kernel nothing changes.)
ipywidgets.comm.requires_ipykernel_shim = lambda: False

# The programs under programs/ run as processes of their own, never as test modules: importing
# one (as --markdown-docs does, to read its docstrings) may run it.
collect_ignore = ["programs"]


@pytest.fixture(scope="session")
def redis_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The URL of a real redis-server on loopback, one for the whole session.

    Tests that share it keep out of each other's way by key prefix (``RedisCheckpointer(url,
    prefix=...)``), one of their own; a test that kills or restarts its server starts its own
    (``faults.RedisProcess``).
    """
    with redis_server(str(tmp_path_factory.mktemp("redis"))) as url:
        yield url


@pytest.fixture
def openai_server() -> Iterator[OpenAIServer]:
    """A started OpenAI-compatible server per test, as each test scripts its own replies.

    Closing it joins its threads, so nothing leaks into the next test.
    """
    with OpenAIServer() as started:
        yield started
