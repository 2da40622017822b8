"""An MCP server as its tools reach it: listed once, then called in each run's own session, or the caller's.

A :class:`Server` keeps one :class:`Session` per run that calls it
(opened at the run's first call, closed at the run's end) and bounds every wait by the
server's ``timeout`` and ``call_timeout``; what goes wrong becomes an error naming it.
"""

from __future__ import annotations

import asyncio
import functools
import time
from collections.abc import Callable
from typing import IO, TYPE_CHECKING, Any

from ._mcp_errors import MCPServerError, MCPToolError, why
from ._mcp_session import Session

if TYPE_CHECKING:
    from mcp.types import CallToolResult

    from ._mcp_connection import Connect, Connection

__all__ = ["Server"]


class Server:
    """An MCP server as its tools reach it: through each run's own session, or the caller's."""

    def __init__(
        self,
        name: str | None,
        shown: str,
        timeout: float,
        call_timeout: float,
        connect: Connect | None = None,
        shared: Any = None,
    ) -> None:
        self.name = name or shown
        """What errors call the server: the name given, else its own once listed, else where it is."""
        self._named = name is not None
        self.timeout = timeout
        self.call_timeout = call_timeout
        self._connect = connect
        self._shared = shared
        self._shared_loop = asyncio.get_running_loop() if shared is not None else None
        self._sessions: dict[str, Session] = {}  # by the thread of the run that opened it

    def __str__(self) -> str:
        return f"MCP server {self.name!r}"

    def connect(self, stderr: IO[bytes]) -> Connection:
        assert self._connect is not None  # (a shared session is never opened here)
        return self._connect(stderr)

    async def listing(self) -> list[Any]:
        """The server's tools (and, unless it was given one, its name), within ``timeout`` all told."""
        deadline = time.monotonic() + self.timeout
        if self._shared is not None:
            return await self._list(self._shared, deadline)
        session = Session(self)
        try:
            return await self._list(await session.client(deadline), deadline)
        finally:
            await session.close(deadline)

    async def _list(self, client: Any, deadline: float) -> list[Any]:
        from mcp import Client

        async def pages() -> list[Any]:
            tools: list[Any] = []
            cursor = None
            while True:
                if isinstance(client, Client):
                    page = await client.list_tools(cursor=cursor)
                else:
                    from mcp.types import PaginatedRequestParams

                    page = await client.list_tools(params=PaginatedRequestParams(cursor=cursor))
                tools.extend(page.tools)
                cursor = page.next_cursor
                if cursor is None:
                    return tools

        try:
            tools = await asyncio.wait_for(pages(), deadline - time.monotonic())
        except TimeoutError:
            raise MCPServerError(f"{self} did not list its tools within {self.timeout:g} s") from None
        except Exception as exc:
            raise MCPServerError(f"{self} could not list its tools: {why(exc)}") from None
        info = client.server_info
        if info is not None and info.name and not self._named:
            self.name = info.name
        return tools

    async def call(self, tool: str, arguments: dict[str, Any], ctx: Any) -> CallToolResult:
        """Call ``tool`` in the session of ``ctx``'s run (opened now if it is the run's first call),
        within ``call_timeout`` all told."""
        # One deadline for the whole wait: the session's start, the call, and a close after it.
        deadline = time.monotonic() + self.call_timeout
        if self._shared is not None:
            if asyncio.get_running_loop() is not self._shared_loop:
                raise MCPServerError(
                    f"{self}: the shared session belongs to another event loop; run the graph on the "
                    "loop that opened it (await g.ainvoke(...) or g.start(...)), not with g.invoke()"
                )
            return await self.call_on(self._shared, tool, arguments, deadline)
        if ctx is None:  # called outside a run: a session for this call alone
            session = Session(self)
            try:
                return await session.call(tool, arguments, deadline)
            finally:
                await session.close(deadline)
        thread = ctx.thread
        session = self._sessions.get(thread)
        if session is None:
            # Asked for before the session opens, so nothing opened goes unclosed.
            ctx.at_run_end(functools.partial(self._close_run, thread))
            session = self._sessions[thread] = Session(self)
        try:
            return await session.call(tool, arguments, deadline)
        except MCPServerError:
            # It went away, never came, or hangs: the run's next call opens a new session.
            if self._sessions.get(thread) is session:
                del self._sessions[thread]
            await session.close(deadline)
            raise

    async def _close_run(self, thread: str) -> None:
        session = self._sessions.pop(thread, None)
        if session is not None:
            await session.close()

    async def call_on(
        self,
        client: Any,
        tool: str,
        arguments: dict[str, Any],
        deadline: float,
        said: Callable[[], str] = lambda: "",
    ) -> CallToolResult:
        """One call, given up at ``deadline``; what went wrong becomes an error naming the server
        (``said``: its last stderr)."""
        from mcp import MCPError
        from mcp.types import CONNECTION_CLOSED

        try:
            return await asyncio.wait_for(client.call_tool(tool, arguments), deadline - time.monotonic())
        except TimeoutError:
            raise MCPServerError(f"{self} did not answer a call of {tool!r} within {self.call_timeout:g} s") from None
        except MCPError as exc:
            if exc.code == CONNECTION_CLOSED:
                raise MCPServerError(f"{self} went away during a call of {tool!r}{said()}") from None
            raise MCPToolError(f"{self} refused the call: {exc.message}") from None
        except Exception as exc:
            raise MCPServerError(f"{self} failed a call of {tool!r}: {why(exc)}{said()}") from None
