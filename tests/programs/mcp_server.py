"""An MCP server for the tests, written with the SDK's own server (``MCPServer``, once FastMCP).

    python mcp_server.py              serve one session over stdin/stdout
    python mcp_server.py --http PORT  serve streamable HTTP on 127.0.0.1:PORT

It says what happens to it with lines appended to the file named by MCP_SERVER_LOG (when
set): "open PID" when it starts serving, "close PID" when it stops (over stdio, one process
is one session), "waiting PID" when ``wait`` is called (then it never answers).
"""

import os
import sys
from contextlib import asynccontextmanager
from typing import Literal

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult


def log(what: str) -> None:
    path = os.environ.get("MCP_SERVER_LOG")
    if path:
        with open(path, "a") as out:
            out.write(f"{what} {os.getpid()}\n")


@asynccontextmanager
async def lifespan(server):
    log("open")
    try:
        yield None
    finally:
        log("close")


server = MCPServer("nbgraph-test-server", lifespan=lifespan, log_level="WARNING")


@server.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@server.tool()
def weather(city: str, units: Literal["celsius", "fahrenheit"] = "celsius") -> dict:
    """The weather in a city, as data."""
    return {"city": city, "temperature": 21 if units == "celsius" else 70, "units": units}


@server.tool()
def census(city: str) -> CallToolResult:
    """A city's population, as structured content only (no text)."""
    return CallToolResult(content=[], structured_content={"city": city, "population": 2_100_000})


@server.tool()
def divide(a: float, b: float) -> float:
    """Divide a by b."""
    if b == 0:
        raise ToolError("division by zero")
    return a / b


@server.tool()
async def wait(reason: str) -> str:
    """Never answer (for a test that stops the server mid-call)."""
    log("waiting")
    await anyio.sleep_forever()
    return reason


if __name__ == "__main__":
    if sys.argv[1:2] == ["--http"]:
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        server.run()
