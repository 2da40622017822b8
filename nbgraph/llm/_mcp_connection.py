"""How a session reaches an MCP server: a :class:`Connection` per session, over stdio (a process nbgraph starts) or streamable HTTP.

A :data:`Connect` is made once from what the caller said (:func:`stdio_connect`, :func:`http_connect`) and
called for each session nbgraph opens; the ``mcp`` SDK is imported when it is made.
"""

from __future__ import annotations

import contextlib
import functools
import os
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import IO, Any

__all__ = ["Connect", "Connection", "http_connect", "stdio_connect"]


@dataclass(frozen=True, slots=True)
class Connection:
    """One session's way to the server."""

    opened: contextlib.AbstractAsyncContextManager[Any]
    """Entered, opens the session and yields its client; left, closes it (stopping a stdio server)."""
    process: Callable[[], Any] | None = None
    """For a server nbgraph starts (stdio): reads its process, None until it runs; what a close
    out of time kills. None for a server nbgraph only reaches (HTTP)."""


Connect = Callable[[IO[bytes]], Connection]
"""A way to the server for one session (given the file a stdio server's stderr goes to)."""


def stdio_connect(command: Sequence[str], env: Mapping[str, str] | None, cwd: str | os.PathLike[str] | None) -> Connect:
    from mcp import Client, StdioServerParameters
    from mcp.client.stdio import stdio_client

    params = StdioServerParameters(
        command=command[0],
        args=list(command[1:]),
        env=dict(env) if env is not None else None,
        cwd=os.fspath(cwd) if cwd is not None else None,
    )

    def connect(stderr: IO[bytes]) -> Connection:
        # (errlog is typed as text, but only its file descriptor is handed to the process)
        transport = stdio_client(params, errlog=stderr)  # type: ignore[arg-type]
        return Connection(Client(transport), functools.partial(_stdio_process, transport))

    return connect


def _stdio_process(transport: Any) -> Any:
    """The server process of the SDK's stdio transport while it runs, else None.

    The SDK hands the process to no one: its ``stdio_client`` holds it in a local variable,
    ``process``, of the generator behind the context manager, from the start of the server
    to its end; it is read there. Should the SDK rename it, a server that hangs is stopped
    the SDK's way again, 2 s late (tests/test_mcp.py times a hung call, and fails then).
    """
    frame = getattr(getattr(transport, "gen", None), "ag_frame", None)
    return None if frame is None else frame.f_locals.get("process")


def http_connect(url: str, headers: Mapping[str, str] | None) -> Connect:
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    @contextlib.asynccontextmanager
    async def opened() -> AsyncIterator[Any]:
        # The SDK's own HTTP timeouts (30 s; 300 s to read a stream); each call is bounded besides.
        timeouts = httpx2.Timeout(30.0, read=300.0)
        async with httpx2.AsyncClient(headers=dict(headers or {}), timeout=timeouts) as http:
            async with Client(streamable_http_client(url, http_client=http)) as client:
                yield client

    return lambda _stderr: Connection(opened())
