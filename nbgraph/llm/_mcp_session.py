"""A session nbgraph opens to an MCP server: held by a task of its own from open to close, and closed in bounded time.

A stdio server that does not stop when its session closes is killed (with what it
started); what it wrote to stderr last is quoted in the errors that name it.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import os
import signal
import sys
import tempfile
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ._mcp_errors import MCPServerError, why

if TYPE_CHECKING:
    from mcp.types import CallToolResult

    from ._mcp_server import Server

__all__ = ["CLOSE_SECONDS", "KILL_SECONDS", "Session"]

CLOSE_SECONDS = 5.0
"""How long a session closed at a run's end may take to close on its own before a stdio
server is killed (and the session's task cancelled); a close after a call is given only
what is left of the call's timeout."""

KILL_SECONDS = 1.0
"""How long the SDK may take to notice that a killed server is gone (a poll, tens of ms)."""


class Session:
    """A session nbgraph opened: a task of its own holds it from open to close, as the SDK's
    context managers are entered and left in one task, and calls come from the run's."""

    def __init__(self, server: Server) -> None:
        loop = asyncio.get_running_loop()
        self.server = server
        self._stderr = tempfile.TemporaryFile()
        self._client: asyncio.Future[Any] = loop.create_future()
        self._client.add_done_callback(_seen)
        self._closing = asyncio.Event()
        self._process: Callable[[], Any] | None = None
        # An empty context: the session outlives the call that opened it.
        self._task = contextvars.Context().run(loop.create_task, self._hold())

    async def _hold(self) -> None:
        try:
            connection = self.server.connect(self._stderr)
            self._process = connection.process
            async with connection.opened as client:
                self._client.set_result(client)
                await self._closing.wait()
        except Exception as exc:  # once open, the calls see for themselves that it ended
            if not self._client.done():
                self._client.set_exception(MCPServerError(f"{self.server} did not start: {why(exc)}{self._said()}"))
        finally:
            if not self._client.done():
                self._client.set_exception(MCPServerError(f"{self.server} was closed before it started"))
            self._stderr.close()

    async def client(self, deadline: float, call: str | None = None) -> Any:
        """The open session's client, once the server has started: waited for until the server's
        ``timeout`` or ``deadline`` (that of ``call``, if it is for one), whichever comes first."""
        left = deadline - time.monotonic()
        try:
            return await asyncio.wait_for(asyncio.shield(self._client), min(self.server.timeout, left))
        except TimeoutError:
            if call is not None and left < self.server.timeout:
                raise MCPServerError(
                    f"{self.server} did not answer a call of {call!r} within {self.server.call_timeout:g} s: "
                    f"it was still starting{self._said()}"
                ) from None
            raise MCPServerError(
                f"{self.server} did not start within {self.server.timeout:g} s{self._said()}"
            ) from None

    async def call(self, tool: str, arguments: dict[str, Any], deadline: float) -> CallToolResult:
        client = await self.client(deadline, tool)
        return await self.server.call_on(client, tool, arguments, deadline, self._said)

    async def close(self, deadline: float | None = None) -> None:
        """Close the session, stopping a stdio server; by ``deadline`` (a ``time.monotonic()``)
        if given, else within :data:`CLOSE_SECONDS`. Never raises.

        A stdio server is given until then to exit on its own, then killed: the SDK alone
        would close its stdin and give a server that hangs 2 s more before it stops it.
        """
        self._closing.set()
        if not self._client.done():
            self._task.cancel()  # still starting: there is nothing to close gracefully
        grace = CLOSE_SECONDS if deadline is None else min(CLOSE_SECONDS, deadline - time.monotonic())
        if grace > 0:
            await asyncio.wait({self._task}, timeout=grace)
        if not self._task.done() and self._process is not None:
            # Killed, it is gone at the SDK's next look. Not found (not started yet, or the SDK
            # changed), the SDK's own stop is waited for: late rather than left running.
            killed = _kill(self._process())
            await asyncio.wait({self._task}, timeout=KILL_SECONDS if killed else CLOSE_SECONDS)
        self._task.cancel()  # (over HTTP there is no process: the task is all there is to stop)

    def _said(self) -> str:
        """The last lines the server wrote to stderr (a traceback's last says why it stopped)."""
        if self._stderr.closed:
            return ""
        end = self._stderr.seek(0, os.SEEK_END)
        self._stderr.seek(max(0, end - 2000))
        lines = [line.strip() for line in self._stderr.read().decode(errors="replace").splitlines()]
        said = " / ".join([line for line in lines if line][-3:])
        return f"; its stderr ends: {said}" if said else ""


def _kill(process: Any) -> bool:
    """Kill a server's process, and what it started; False if it is not running."""
    if process is None or process.returncode is not None:
        return False
    with contextlib.suppress(ProcessLookupError, PermissionError):
        if sys.platform == "win32":
            process.kill()  # (the SDK's job object takes what it started with it)
        else:
            # The SDK starts a server as a session of its own: its process group is its pid.
            os.killpg(process.pid, signal.SIGKILL)
    return True


def _seen(future: asyncio.Future[Any]) -> None:
    # A session nobody waited for failed: its error was for the calls, none is left to tell.
    if not future.cancelled():
        future.exception()
