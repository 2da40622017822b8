"""What goes wrong between MCP tools and their server: the two errors they raise, and a failure told in a line.

:class:`MCPServerError` is the server's fault or absence (it did not start, could not be
reached, did not answer in time, or went away); :class:`MCPToolError` is the server's own
answer that a call failed. Both name the server; :func:`why` puts what the SDK raised into
their messages.
"""

from __future__ import annotations

from ..errors import NbgraphError

__all__ = ["MCPServerError", "MCPToolError", "why"]


class MCPServerError(NbgraphError, RuntimeError):
    """An MCP server did not start, could not be reached, did not answer in time, or went away."""


class MCPToolError(NbgraphError, RuntimeError):
    """An MCP server answered a tool call with an error; the message is what it said."""


def why(exc: BaseException) -> str:
    """An exception as a line, looking inside the groups anyio's task groups raise."""
    while isinstance(inner := getattr(exc, "exceptions", None), tuple) and inner:
        exc = inner[0]
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
