"""MCP tools: the tools of a Model Context Protocol server, as an LLM node's tools.

``mcp_tools(stdio=["python", "server.py"])`` or ``mcp_tools(url="http://127.0.0.1:8000/mcp")``
asks the server for its tools once; each becomes an :class:`MCPTool` whose name,
description and JSON input schema are the server's, so a node offers it, and the view
shows it, like a local tool. A call goes to the server: a run opens a session of its own
at its first call and closes it as the run ends, however it ends; ``await
amcp_tools(session=client)`` calls through a session the caller opened, and leaves it
open. Every wait is bounded: a server that does not start, does not answer, or goes away
ends the call with a tool error naming it, within the call's timeout (a stdio server that
did not answer in time is killed, not waited for).

What the server says of a tool (its annotations: ``readOnlyHint``, ``destructiveHint``,
...) is kept on the tool, and sets whether its calls wait for a person's approval unless
``approval=`` says otherwise.

The ``mcp`` package (version 2 or later, ``pip install 'nbgraph[mcp]'``) is imported
when tools are first asked for, never by ``import nbgraph.llm``.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import functools
import json
import os
import shlex
import signal
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import IO, TYPE_CHECKING, Any, TypeAlias
from urllib.parse import urlsplit

from ..engine.runner import run_blocking
from ..errors import NbgraphError
from .tools import Approval, Tool

if TYPE_CHECKING:
    from mcp.types import CallToolResult, ContentBlock

__all__ = ["MCPApproval", "MCPServerError", "MCPTool", "MCPToolError", "amcp_tools", "mcp_tools"]

INSTALL = "pip install 'nbgraph[mcp]'"

CLOSE_SECONDS = 5.0
"""How long a session closed at a run's end may take to close on its own before a stdio
server is killed (and the session's task cancelled); a close after a call is given only
what is left of the call's timeout."""

KILL_SECONDS = 1.0
"""How long the SDK may take to notice that a killed server is gone (a poll, tens of ms)."""

MCPApproval: TypeAlias = "bool | Mapping[str, Approval] | None"
"""``approval=`` of :func:`mcp_tools`: None (each tool as the server annotates it), True or
False (every tool), or a policy per tool, by the tool's name on the server."""


class MCPServerError(NbgraphError, RuntimeError):
    """An MCP server did not start, could not be reached, did not answer in time, or went away."""


class MCPToolError(NbgraphError, RuntimeError):
    """An MCP server answered a tool call with an error; the message is what it said."""


class MCPTool(Tool):
    """A tool of an MCP server: the model sees the server's name, description and input
    schema, and a call goes to the server, which checks the arguments itself."""

    def __init__(self, server: _Server, listed: Any, prefix: str = "", approval: Approval | None = None) -> None:
        # Tool.__init__ describes a Python function; here the server described the tool.
        self._server = server
        self.remote_name: str = listed.name
        """The tool's name on the server (``name`` has the prefix, if any)."""
        self.name = prefix + listed.name
        self.description = listed.description or listed.title or ""
        self.completes = False
        self.schema = {
            "type": "function",
            "function": {"name": self.name, "description": self.description, "parameters": listed.input_schema},
        }
        self.annotations: dict[str, Any] = _annotations(listed)
        """What the server says of the tool, by MCP's names (``readOnlyHint``, ``destructiveHint``,
        ``idempotentHint``, ``openWorldHint``, ``title``): only those it said. Hints: a server
        may say anything of its tools."""
        self.approval: Approval = approval if approval is not None else _annotated_approval(self.annotations)
        """Which calls wait for a person's decision: as ``approval=`` said, else as the
        server's annotations do (``destructiveHint`` and not ``readOnlyHint``: every call). A
        function given here gets the call's arguments as the model sent them, a dict (the
        server checks them, not nbgraph)."""

    @property
    def server(self) -> str:
        """The server's name (the one it gives itself, unless ``name=`` said otherwise)."""
        return self._server.name

    def __repr__(self) -> str:
        return f"MCPTool({self.name!r}, server={self.server!r})"

    def checked(self, arguments: dict[str, Any]) -> Any:
        """The arguments as the model sent them, a dict: the server checks them, not nbgraph."""
        return arguments

    async def call(self, arguments: dict[str, Any], ctx: Any = None) -> str:
        """Call the tool on the server and return what the model reads of its result.

        Raises :class:`MCPToolError` for an error result and :class:`MCPServerError` when
        the server cannot be reached; the agent loop turns both into error tool messages.
        """
        result = await self._server.call(self.remote_name, arguments, ctx)
        text = _text(result)
        if result.is_error:
            raise MCPToolError(text or f"{self._server} reported an error without saying what")
        return text


def mcp_tools(
    *,
    stdio: Sequence[str] | None = None,
    url: str | None = None,
    name: str | None = None,
    env: Mapping[str, str] | None = None,
    cwd: str | os.PathLike[str] | None = None,
    headers: Mapping[str, str] | None = None,
    prefix: str = "",
    approval: MCPApproval = None,
    timeout: float = 30.0,
    call_timeout: float = 120.0,
) -> list[MCPTool]:
    """The tools of an MCP server, for ``llm_node(tools=mcp_tools(stdio=["python", "server.py"]))``.

    The server is asked for its tools now (a stdio server is started for that, then
    stopped). Each run then opens a session of its own at its first call and closes it as
    the run ends; a call outside a run opens one for itself.

    Args:
        stdio: the command that starts the server, as a list of words; it talks over its
            stdin and stdout, and what it writes to stderr is quoted when it fails.
        url: the server's streamable HTTP endpoint, e.g. ``"http://127.0.0.1:8000/mcp"``.
        name: what errors call the server; default: the name it gives itself.
        env: environment variables for a stdio server, beside the few the SDK passes on
            (``PATH``, ``HOME``, ...).
        cwd: the working directory of a stdio server.
        headers: HTTP headers for every request to a URL server, e.g. an ``Authorization``.
        prefix: put before each tool's name (``prefix="github_"``) when two servers share
            tool names; the server is still called by its own names.
        approval: which calls wait for a person's approval before they go to the server.
            None: a tool the server annotates ``destructiveHint`` (and not ``readOnlyHint``)
            waits, others do not. True or False: every tool. A mapping from a tool's name
            on the server (without ``prefix``) to True, False or a function of the call's
            arguments (a dict) decides for the tools it names; the others go by their
            annotations. ``approval={"delete_file": True, "read_file": False}``.
        timeout: seconds listing the tools may take, all told: starting the server (or
            reaching it), listing, and stopping it again. Also the most a session may take
            to start.
        call_timeout: seconds a tool call may take, all told: starting the run's session if
            it is the run's first call, the call, and stopping a stdio server that did not
            answer (it is killed when the time is up).

    Raises:
        MCPServerError: the server could not be started or reached, or did not list its tools.
        ValueError: ``approval=`` names a tool the server does not have.
        ImportError: the ``mcp`` package is missing (``pip install 'nbgraph[mcp]'``).

    Inside async code, ``await amcp_tools(...)`` does the same without blocking the loop.
    """
    server = _server(stdio, url, None, name, env, cwd, headers, timeout, call_timeout)
    return run_blocking(_listed(server, prefix, _checked_approval(approval)), all_sync=False)


async def amcp_tools(
    *,
    session: Any = None,
    stdio: Sequence[str] | None = None,
    url: str | None = None,
    name: str | None = None,
    env: Mapping[str, str] | None = None,
    cwd: str | os.PathLike[str] | None = None,
    headers: Mapping[str, str] | None = None,
    prefix: str = "",
    approval: MCPApproval = None,
    timeout: float = 30.0,
    call_timeout: float = 120.0,
) -> list[MCPTool]:
    """:func:`mcp_tools`, awaited; ``session=`` takes a session the caller opened and shares.

    ``session`` is an ``mcp.Client`` (or ``mcp.ClientSession``) inside its ``async with``:
    the tools are listed and called through it, from runs on the same event loop (``await
    g.ainvoke(...)``, ``g.start(...)``), and nbgraph never closes it.
    """
    server = _server(stdio, url, session, name, env, cwd, headers, timeout, call_timeout)
    return await _listed(server, prefix, _checked_approval(approval))


def _annotated_approval(annotations: Mapping[str, Any]) -> bool:
    """The approval a tool gets from its server's annotations: True for a tool annotated
    ``destructiveHint`` and not ``readOnlyHint``; False otherwise, unannotated tools too.

    (MCP's own default for an unannotated tool is "may be destructive"; taken at its word,
    every call of most servers' tools would wait for a person. Annotations are hints from a
    server that may not be trusted: by them a server can make its calls wait for a person,
    never skip an approval that ``approval=`` asks for.)
    """
    return annotations.get("destructiveHint") is True and annotations.get("readOnlyHint") is not True


# -- the server, and the sessions nbgraph opens to it -----------------------------------


@dataclass(frozen=True, slots=True)
class _Connection:
    """One session's way to the server."""

    opened: contextlib.AbstractAsyncContextManager[Any]
    """Entered, opens the session and yields its client; left, closes it (stopping a stdio server)."""
    process: Callable[[], Any] | None = None
    """For a server nbgraph starts (stdio): reads its process, None until it runs; what a close
    out of time kills. None for a server nbgraph only reaches (HTTP)."""


_Connect = Callable[[IO[bytes]], _Connection]
"""A way to the server for one session (given the file a stdio server's stderr goes to)."""


class _Server:
    """An MCP server as its tools reach it: through each run's own session, or the caller's."""

    def __init__(
        self,
        name: str | None,
        shown: str,
        timeout: float,
        call_timeout: float,
        connect: _Connect | None = None,
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
        self._sessions: dict[str, _Session] = {}  # by the thread of the run that opened it

    def __str__(self) -> str:
        return f"MCP server {self.name!r}"

    def connect(self, stderr: IO[bytes]) -> _Connection:
        assert self._connect is not None  # (a shared session is never opened here)
        return self._connect(stderr)

    async def listing(self) -> list[Any]:
        """The server's tools (and, unless it was given one, its name), within ``timeout`` all told."""
        deadline = time.monotonic() + self.timeout
        if self._shared is not None:
            return await self._list(self._shared, deadline)
        session = _Session(self)
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
            raise MCPServerError(f"{self} could not list its tools: {_why(exc)}") from None
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
            session = _Session(self)
            try:
                return await session.call(tool, arguments, deadline)
            finally:
                await session.close(deadline)
        thread = ctx.thread
        session = self._sessions.get(thread)
        if session is None:
            # Asked for before the session opens, so nothing opened goes unclosed.
            ctx.at_run_end(functools.partial(self._close_run, thread))
            session = self._sessions[thread] = _Session(self)
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
            raise MCPServerError(f"{self} failed a call of {tool!r}: {_why(exc)}{said()}") from None


class _Session:
    """A session nbgraph opened: a task of its own holds it from open to close, as the SDK's
    context managers are entered and left in one task, and calls come from the run's."""

    def __init__(self, server: _Server) -> None:
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
                self._client.set_exception(MCPServerError(f"{self.server} did not start: {_why(exc)}{self._said()}"))
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


# -- building a server from what the caller said ----------------------------------------


def _server(
    stdio: Sequence[str] | None,
    url: str | None,
    session: Any,
    name: str | None,
    env: Mapping[str, str] | None,
    cwd: str | os.PathLike[str] | None,
    headers: Mapping[str, str] | None,
    timeout: float,
    call_timeout: float,
) -> _Server:
    ways = [way for way, given in (("stdio", stdio), ("url", url), ("session", session)) if given is not None]
    if len(ways) != 1:
        found = "none" if not ways else " and ".join(f"{way}=" for way in ways)
        raise ValueError(f"MCP tools need one way to reach the server: stdio=[command, ...] or url=...; got {found}")
    for what, seconds in (("timeout", timeout), ("call_timeout", call_timeout)):
        if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or seconds <= 0:
            raise ValueError(f"{what} is in seconds and must be more than 0, got {seconds!r}")
    if (env is not None or cwd is not None) and stdio is None:
        raise ValueError("env= and cwd= are for a server started with stdio=[...]")
    if headers is not None and url is None:
        raise ValueError("headers= are for a server reached with url=...")
    if name is not None and (not isinstance(name, str) or not name.strip()):
        raise ValueError(f"name must be a non-empty string, got {name!r}")
    _require_sdk()
    if session is not None:
        if not (callable(getattr(session, "call_tool", None)) and callable(getattr(session, "list_tools", None))):
            raise TypeError(
                f"session must be an mcp.Client (or mcp.ClientSession) opened with `async with`, got {session!r}"
            )
        return _Server(name, "shared session", timeout, call_timeout, shared=session)
    if stdio is not None:
        if isinstance(stdio, str) or not stdio or not all(isinstance(word, str) for word in stdio):
            raise TypeError(
                "stdio is the command that starts the server as a list of words, "
                f"e.g. ['python', 'server.py'], got {stdio!r}"
            )
        return _Server(name, shlex.join(stdio), timeout, call_timeout, connect=_stdio(stdio, env, cwd))
    assert url is not None
    parts = urlsplit(url) if isinstance(url, str) else None
    if parts is None or parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"url must be the server's http(s) endpoint, e.g. 'http://127.0.0.1:8000/mcp', got {url!r}")
    # Named without credentials or query: the name shows in errors, events and traces.
    shown = f"{parts.scheme}://{parts.hostname}{f':{parts.port}' if parts.port else ''}{parts.path}"
    return _Server(name, shown, timeout, call_timeout, connect=_http(url, headers))


def _require_sdk() -> None:
    try:
        from mcp import Client  # noqa: F401  (mcp 2's client: mcp 1 has none)
    except ImportError as exc:
        raise ImportError(f"MCP tools need the mcp package, version 2 or later: {INSTALL} ({exc})") from exc


def _stdio(command: Sequence[str], env: Mapping[str, str] | None, cwd: str | os.PathLike[str] | None) -> _Connect:
    from mcp import Client, StdioServerParameters
    from mcp.client.stdio import stdio_client

    params = StdioServerParameters(
        command=command[0],
        args=list(command[1:]),
        env=dict(env) if env is not None else None,
        cwd=os.fspath(cwd) if cwd is not None else None,
    )

    def connect(stderr: IO[bytes]) -> _Connection:
        # (errlog is typed as text, but only its file descriptor is handed to the process)
        transport = stdio_client(params, errlog=stderr)  # type: ignore[arg-type]
        return _Connection(Client(transport), functools.partial(_stdio_process, transport))

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


def _http(url: str, headers: Mapping[str, str] | None) -> _Connect:
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

    return lambda _stderr: _Connection(opened())


async def _listed(server: _Server, prefix: str, approval: bool | dict[str, Approval] | None) -> list[MCPTool]:
    listed = await server.listing()
    policies = _policies(approval, [tool.name for tool in listed], server, prefix)
    return [MCPTool(server, tool, prefix, policies.get(tool.name)) for tool in listed]


# -- approval -----------------------------------------------------------------------------


def _checked_approval(approval: MCPApproval) -> bool | dict[str, Approval] | None:
    """``approval=`` as given, checked before the server is asked anything."""
    if approval is None or isinstance(approval, bool):
        return approval
    if not isinstance(approval, Mapping):
        raise TypeError(
            "approval must be True, False, None (as the server annotates each tool) or a mapping from "
            f"a tool's name to True, False or a function of the call's arguments; got {approval!r}"
        )
    policies: dict[str, Approval] = {}
    for name, policy in approval.items():
        if not isinstance(name, str):
            raise TypeError(f"approval names tools by their names on the server, as strings; got {name!r}")
        if not (isinstance(policy, bool) or callable(policy)):
            raise TypeError(
                f"approval of {name!r} must be True, False or a function of the call's arguments, not {policy!r}"
            )
        policies[name] = policy
    return policies


def _policies(
    approval: bool | dict[str, Approval] | None, names: list[str], server: _Server, prefix: str
) -> dict[str, Approval]:
    """Each tool's policy by its name on the server (a tool not in it goes by its annotations)."""
    if approval is None:
        return {}
    if isinstance(approval, bool):
        return dict.fromkeys(names, approval)
    unknown = [name for name in approval if name not in names]
    if unknown:
        prefixed = [name for name in unknown if prefix and name.startswith(prefix) and name[len(prefix) :] in names]
        hint = f" (name them as the server does, without the prefix {prefix!r})" if prefixed else ""
        raise ValueError(
            f"approval names tools {server} does not have: {', '.join(map(repr, unknown))}{hint}; "
            f"its tools are: {', '.join(names) or 'none'}"
        )
    return approval


def _annotations(listed: Any) -> dict[str, Any]:
    annotations = getattr(listed, "annotations", None)
    return {} if annotations is None else annotations.model_dump(by_alias=True, exclude_none=True)


# -- results ----------------------------------------------------------------------------


def _text(result: CallToolResult) -> str:
    """What the model reads of a result: its content blocks, or its structured content as
    JSON when it has no text (a server that follows the spec sends both, the text being the JSON)."""
    parts = [_block_text(block) for block in result.content]
    if result.structured_content is not None and not any(block.type == "text" for block in result.content):
        parts.append(json.dumps(result.structured_content, ensure_ascii=False))
    return "\n".join(parts)


def _block_text(block: ContentBlock) -> str:
    if block.type == "text":
        return block.text
    if block.type == "resource":
        contents = block.resource
        text = getattr(contents, "text", None)
        return text if text is not None else f"[resource {contents.uri} ({contents.mime_type or 'binary'})]"
    if block.type == "resource_link":
        return f"[resource {block.uri}]"
    return f"[{block.type} ({block.mime_type})]"  # an image or a sound: nothing for a text model to read


def _why(exc: BaseException) -> str:
    """An exception as a line, looking inside the groups anyio's task groups raise."""
    while isinstance(inner := getattr(exc, "exceptions", None), tuple) and inner:
        exc = inner[0]
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
