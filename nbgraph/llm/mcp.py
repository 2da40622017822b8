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

import json
import os
import shlex
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from ..engine.runner import run_blocking
from ._mcp_approval import MCPApproval, annotated_approval, checked_approval, tool_policies
from ._mcp_connection import http_connect, stdio_connect
from ._mcp_errors import MCPServerError, MCPToolError
from ._mcp_server import Server
from .tools import Approval, Tool

if TYPE_CHECKING:
    from mcp.types import CallToolResult, ContentBlock

__all__ = ["MCPApproval", "MCPServerError", "MCPTool", "MCPToolError", "amcp_tools", "mcp_tools"]

INSTALL = "pip install 'nbgraph[mcp]'"


class MCPTool(Tool):
    """A tool of an MCP server: the model sees the server's name, description and input
    schema, and a call goes to the server, which checks the arguments itself."""

    def __init__(self, server: Server, listed: Any, prefix: str = "", approval: Approval | None = None) -> None:
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
        self.approval: Approval = approval if approval is not None else annotated_approval(self.annotations)
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
    return run_blocking(_listed(server, prefix, checked_approval(approval)), all_sync=False)


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
    return await _listed(server, prefix, checked_approval(approval))


def _annotations(listed: Any) -> dict[str, Any]:
    annotations = getattr(listed, "annotations", None)
    return {} if annotations is None else annotations.model_dump(by_alias=True, exclude_none=True)


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
) -> Server:
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
        return Server(name, "shared session", timeout, call_timeout, shared=session)
    if stdio is not None:
        if isinstance(stdio, str) or not stdio or not all(isinstance(word, str) for word in stdio):
            raise TypeError(
                "stdio is the command that starts the server as a list of words, "
                f"e.g. ['python', 'server.py'], got {stdio!r}"
            )
        return Server(name, shlex.join(stdio), timeout, call_timeout, connect=stdio_connect(stdio, env, cwd))
    assert url is not None
    parts = urlsplit(url) if isinstance(url, str) else None
    if parts is None or parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"url must be the server's http(s) endpoint, e.g. 'http://127.0.0.1:8000/mcp', got {url!r}")
    # Named without credentials or query: the name shows in errors, events and traces.
    shown = f"{parts.scheme}://{parts.hostname}{f':{parts.port}' if parts.port else ''}{parts.path}"
    return Server(name, shown, timeout, call_timeout, connect=http_connect(url, headers))


def _require_sdk() -> None:
    try:
        from mcp import Client  # noqa: F401  (mcp 2's client: mcp 1 has none)
    except ImportError as exc:
        raise ImportError(f"MCP tools need the mcp package, version 2 or later: {INSTALL} ({exc})") from exc


async def _listed(server: Server, prefix: str, approval: bool | dict[str, Approval] | None) -> list[MCPTool]:
    listed = await server.listing()
    policies = tool_policies(approval, [tool.name for tool in listed], server, prefix)
    return [MCPTool(server, tool, prefix, policies.get(tool.name)) for tool in listed]


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
