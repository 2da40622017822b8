"""MCP tools: an LLM node takes the tools of a real MCP server (tests/programs/mcp_server.py,
written with the SDK's own server), started as a child process over stdio or serving
streamable HTTP on a loopback port; the model side is a ScriptedModel calling the tools.
A second server (FILES_SERVER, below) annotates its tools and has one that hangs for good."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

from nbgraph import END, START, Graph, MessagesState
from nbgraph.export import to_dag
from nbgraph.llm import MCPServerError, MCPTool, Reply, ScriptedModel, UserMessage, amcp_tools, llm_node, mcp_tools

SERVER = Path(__file__).parent / "programs" / "mcp_server.py"
NAME = "nbgraph-test-server"  # the name the server gives itself
TOOLS = ["add", "weather", "census", "divide", "wait"]
WITHIN = 30.0  # seconds any run here may take, however its server behaves

# A second server: tools annotated as MCP servers annotate theirs, and one that hangs where
# nothing can stop it (a blocking sleep), so the server cannot exit when its stdin closes.
FILES_SERVER = r'''
import os
import time

from mcp.server.mcpserver import MCPServer
from mcp.types import ToolAnnotations

server = MCPServer("files", log_level="WARNING")


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def read_file(path: str) -> str:
    """Read a file."""
    return "contents of " + path


@server.tool(annotations=ToolAnnotations(destructive_hint=True))
def delete_file(path: str) -> str:
    """Delete a file."""
    return "deleted " + path


@server.tool(annotations=ToolAnnotations(destructive_hint=False, idempotent_hint=True))
def touch_file(path: str) -> str:
    """Create a file if it is missing."""
    return "touched " + path


@server.tool()
def echo(text: str) -> str:
    """Say it back."""
    return text


@server.tool()
def hang(reason: str) -> str:
    """Never answer, blocked where nothing stops it: the server cannot exit on its own."""
    with open(os.environ["MCP_SERVER_LOG"], "a") as out:
        out.write(f"hanging {os.getpid()}\n")
    time.sleep(3600)
    return reason


server.run()
'''
FILES_TOOLS = ["read_file", "delete_file", "touch_file", "echo", "hang"]


class ServerLog:
    """What the test server wrote about itself since the test began: ("open", pid) when it
    started serving, ("close", pid) when it stopped, ("waiting", pid) when ``wait`` was called."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.start = len(self._lines())

    def _lines(self) -> list[tuple[str, int]]:
        if not self.path.exists():
            return []
        return [(what, int(pid)) for what, pid in (line.split() for line in self.path.read_text().splitlines())]

    def since(self) -> list[tuple[str, int]]:
        return self._lines()[self.start :]

    def pids(self, what: str) -> list[int]:
        return [pid for said, pid in self.since() if said == what]

    async def first(self, what: str) -> int:
        """The pid of the first ``what`` line since the test began, polled for until it comes."""
        deadline = time.monotonic() + WITHIN
        while not self.pids(what):
            assert time.monotonic() < deadline, f"the server never said {what!r}: {self.since()}"
            await asyncio.sleep(0.02)
        return self.pids(what)[0]


def gone(pid: int) -> bool:
    """The process has exited (a zombie not yet reaped has, too)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"


@pytest.fixture(scope="module")
def log_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("mcp") / "server.log"


@pytest.fixture(scope="module")
def stdio_tools(log_path: Path) -> list[MCPTool]:
    return mcp_tools(stdio=[sys.executable, str(SERVER)], env={"MCP_SERVER_LOG": str(log_path)})


@pytest.fixture
def log(log_path: Path, stdio_tools: list[MCPTool]) -> ServerLog:
    return ServerLog(log_path)


@pytest.fixture(scope="module")
def files_server(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    """The command that starts the files server over stdio."""
    path = tmp_path_factory.mktemp("mcp-files") / "files_server.py"
    path.write_text(FILES_SERVER)
    return [sys.executable, str(path)]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def http_server(tmp_path: Path) -> Iterator[tuple[str, subprocess.Popen, ServerLog]]:
    """The same server on a loopback port, over streamable HTTP: its URL, its process, its log."""
    port = free_port()
    path = tmp_path / "http.log"
    env = {**os.environ, "MCP_SERVER_LOG": str(path)}
    process = subprocess.Popen([sys.executable, str(SERVER), "--http", str(port)], env=env, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + WITHIN
        while True:  # up once it accepts a connection
            assert process.poll() is None, "the HTTP server exited"
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert time.monotonic() < deadline, "the HTTP server never listened"
                time.sleep(0.05)
        yield f"http://127.0.0.1:{port}/mcp", process, ServerLog(path)
    finally:
        process.kill()
        process.wait()


def agent(tools: list, *replies: str | Reply, nodes: int = 1, then: Any = None) -> tuple[Graph, ScriptedModel]:
    """A graph of ``nodes`` LLM nodes in a row, each offering ``tools``, all speaking the model's
    ``replies``; ``then``, a node to run after them."""
    model = ScriptedModel(list(replies))
    g = Graph("mcp", state=MessagesState)
    names = [f"agent{i}" for i in range(1, nodes + 1)]
    for name in names:
        g.add_node(name, llm_node("Use the tools.", model=model, tools=tools))
    if then is not None:
        g.add_node("then", then)
        names.append("then")
    for source, target in zip([START, *names], [*names, END], strict=True):
        g.add_edge(source, target)
    return g, model


def ask(text: str = "go") -> dict:
    return {"messages": [UserMessage(content=text)]}


def tool_messages(result) -> list:
    return [m for m in result.state.messages if m.role == "tool"]


# -- the tools ----------------------------------------------------------------------------


def test_the_servers_tools_become_the_models_tools_with_their_schemas(stdio_tools, log):
    assert [t.name for t in stdio_tools] == TOOLS
    add = stdio_tools[0]
    assert isinstance(add, MCPTool) and add.server == NAME
    assert add.description == "Add two integers."
    parameters = add.schema["function"]["parameters"]
    assert parameters["properties"] == {
        "a": {"title": "A", "type": "integer"},
        "b": {"title": "B", "type": "integer"},
    }
    assert parameters["required"] == ["a", "b"]
    units = stdio_tools[1].schema["function"]["parameters"]["properties"]["units"]
    assert units["enum"] == ["celsius", "fahrenheit"] and units["default"] == "celsius"

    g, model = agent(stdio_tools, "nothing to do")
    assert g.invoke(ask()).outcome == "done"
    assert model.calls[0].tools == [t.schema for t in stdio_tools]
    assert log.since() == []  # listed once, up front: a run that calls nothing opens no session


def test_the_view_shows_mcp_tools_like_local_ones(stdio_tools):
    def local_search(query: str) -> str:
        """Search locally."""
        return query

    g, _ = agent([*stdio_tools, local_search], "hi")
    (node,) = [n for n in to_dag(g)["nodes"] if n["id"] == "agent1"]
    assert node["kind"] == "llm"
    assert node["tools"] == [*TOOLS, "local_search"]


def test_a_call_goes_to_the_server_with_its_arguments_and_its_text_comes_back(stdio_tools, log):
    g, model = agent(stdio_tools, Reply(tool_calls=[("add", {"a": 2, "b": 3})]), "2 + 3 = 5")
    result = g.invoke(ask("add 2 and 3"))
    assert result.outcome == "done"
    (message,) = tool_messages(result)
    assert (message.name, message.content, message.is_error) == ("add", "5", False)
    assert model.calls[1].messages[-1].content == "5"  # the model read the server's answer


def test_structured_content_comes_back_as_json(stdio_tools, log):
    g, _ = agent(
        stdio_tools,
        Reply(tool_calls=[("weather", {"city": "Oslo", "units": "fahrenheit"}), ("census", {"city": "Paris"})]),
        "done",
    )
    weather, census = tool_messages(g.invoke(ask()))
    assert json.loads(weather.content) == {"city": "Oslo", "temperature": 70, "units": "fahrenheit"}
    # Structured content only, no text: the model reads the structured content.
    assert json.loads(census.content) == {"city": "Paris", "population": 2_100_000}
    assert not weather.is_error and not census.is_error


def test_an_error_result_goes_back_to_the_model_as_an_error_tool_message(stdio_tools, log):
    g, model = agent(
        stdio_tools,
        Reply(tool_calls=[("divide", {"a": 1, "b": 0}), ("add", {"a": "two", "b": 3})]),
        "I cannot divide by zero",
    )
    result = g.invoke(ask())
    assert result.outcome == "done"  # the model handles it, as it does a local tool's error
    divide, add = tool_messages(result)
    assert divide.is_error and divide.content.startswith("error: divide raised MCPToolError: ")
    assert divide.content.endswith("division by zero")
    assert add.is_error and "Input should be a valid integer" in add.content  # the server checks the arguments
    assert model.calls[1].messages[-2].is_error


async def test_a_call_outside_a_run_opens_a_session_for_itself(stdio_tools, log):
    assert await stdio_tools[0].call({"a": 20, "b": 22}) == "42"
    (opened,) = log.pids("open")
    assert log.since() == [("open", opened), ("close", opened)]


# -- sessions -----------------------------------------------------------------------------


def test_a_run_opens_one_session_at_its_first_call_and_closes_it_as_it_ends(stdio_tools, log):
    # Two nodes, three rounds of calls: one session for the whole run.
    g, _ = agent(
        stdio_tools,
        Reply(tool_calls=[("add", {"a": 1, "b": 1})]),
        Reply(tool_calls=[("add", {"a": 2, "b": 2}), ("divide", {"a": 9, "b": 3})]),
        "first done",
        Reply(tool_calls=[("add", {"a": 3, "b": 3})]),
        "second done",
        nodes=2,
    )
    result = g.invoke(ask())
    assert [m.content for m in tool_messages(result)] == ["2", "4", "3.0", "6"]
    (first,) = log.pids("open")
    assert log.since() == [("open", first), ("close", first)]
    assert gone(first)

    g, _ = agent(stdio_tools, Reply(tool_calls=[("add", {"a": 1, "b": 1})]), "done")
    g.invoke(ask())
    second = log.pids("open")[1]
    assert second != first
    assert log.since()[2:] == [("open", second), ("close", second)]


async def ask_a_person(state, ctx):
    await ctx.request_input("Go on?")


@pytest.mark.parametrize("ending", ["failed", "interrupted", "aborted"])
async def test_the_session_closes_however_the_run_ends(stdio_tools, log, ending):
    if ending == "failed":
        # The model has nothing more to say after the call: the run fails.
        g, _ = agent(stdio_tools, Reply(tool_calls=[("add", {"a": 1, "b": 1})]))
        result = await asyncio.wait_for(g.ainvoke(ask()), WITHIN)
    elif ending == "interrupted":
        g, _ = agent(stdio_tools, Reply(tool_calls=[("add", {"a": 1, "b": 1})]), "over to you", then=ask_a_person)
        result = await asyncio.wait_for(g.ainvoke(ask()), WITHIN)
    else:
        g, _ = agent(stdio_tools, Reply(tool_calls=[("wait", {"reason": "forever"})]), "never")
        run = g.start(ask(), display=False)
        await log.first("waiting")
        run.cancel()
        result = await asyncio.wait_for(run, WITHIN)
    assert result.outcome == ending
    (opened,) = log.pids("open")
    assert gone(opened)  # the run closed its session, and with it the server
    if ending != "aborted":  # (stopped mid-call, it may be stopped before it says so)
        assert log.since() == [("open", opened), ("close", opened)]


async def test_a_shared_session_is_called_through_and_left_open(log_path):
    log = ServerLog(log_path)
    params = StdioServerParameters(command=sys.executable, args=[str(SERVER)], env={"MCP_SERVER_LOG": str(log_path)})
    async with Client(stdio_client(params)) as client:
        tools = await amcp_tools(session=client)
        assert [t.name for t in tools] == TOOLS and tools[0].server == NAME
        for a in (1, 2):
            g, _ = agent(tools, Reply(tool_calls=[("add", {"a": a, "b": 40})]), "done")
            result = await asyncio.wait_for(g.ainvoke(ask()), WITHIN)
            assert [m.content for m in tool_messages(result)] == [str(a + 40)]
        (opened,) = log.pids("open")
        assert log.since() == [("open", opened)]  # the caller's session only, still open
        assert (await client.call_tool("add", {"a": 1, "b": 1})).content[0].text == "2"

        # g.invoke() runs on a loop of nbgraph's own: the session cannot be used from there.
        g, _ = agent(tools, Reply(tool_calls=[("add", {"a": 1, "b": 1})]), "done")
        (message,) = tool_messages(g.invoke(ask()))
        assert message.is_error and "belongs to another event loop" in message.content
    assert log.since() == [("open", opened), ("close", opened)]


# -- a server that goes away --------------------------------------------------------------


async def test_a_server_killed_mid_run_ends_the_call_with_an_error_naming_it(stdio_tools, log):
    g, _ = agent(
        stdio_tools,
        Reply(tool_calls=[("wait", {"reason": "killed"})]),
        Reply(tool_calls=[("add", {"a": 2, "b": 3})]),
        "the server came back",
    )
    run = g.start(ask(), display=False)
    killed = await log.first("waiting")
    os.kill(killed, signal.SIGKILL)
    result = await asyncio.wait_for(run, WITHIN)
    assert result.outcome == "done"
    waited, added = tool_messages(result)
    assert waited.is_error
    assert waited.content == f"error: wait raised MCPServerError: MCP server {NAME!r} went away during a call of 'wait'"
    # The run's next call starts the server again, in a session that closes with the run.
    assert (added.content, added.is_error) == ("5", False)
    restarted = log.pids("open")[1]
    assert restarted != killed and log.since()[-2:] == [("open", restarted), ("close", restarted)]


def test_a_server_that_does_not_start_is_an_error_naming_it_with_what_it_said():
    crash = "import sys; sys.stderr.write('Traceback ...\\nKeyError: DATABASE_URL\\n'); sys.exit(3)"
    with pytest.raises(
        MCPServerError, match=r"MCP server '.*' did not start: .*its stderr ends: .*KeyError: DATABASE_URL"
    ):
        mcp_tools(stdio=[sys.executable, "-c", crash])
    with pytest.raises(MCPServerError, match="MCP server 'no-such-command-here' did not start: FileNotFoundError"):
        mcp_tools(stdio=["no-such-command-here"])


def test_a_server_that_never_answers_is_given_up_on_and_stopped_within_the_timeout():
    started = time.monotonic()
    silent = "import time; time.sleep(60)"
    with pytest.raises(MCPServerError, match=r"MCP server 'silent' did not start within 1 s"):
        mcp_tools(stdio=[sys.executable, "-c", silent], name="silent", timeout=1.0)
    # Stopping it included: it never reads its stdin, and the SDK alone would give it 2 s more.
    elapsed = time.monotonic() - started
    assert elapsed < 1.0 + 1.0, f"listing took {elapsed:.2f} s"


HUNG_CALL_TIMEOUT = 3.0
"""Seconds a call of the files server's ``hang`` is given. The first call of a session starts
the server on the call's time: this leaves a loaded machine room to start it."""


async def test_a_call_to_a_server_that_hangs_fails_within_its_timeout_and_the_server_is_killed(files_server, tmp_path):
    log = ServerLog(tmp_path / "files.log")
    tools = await amcp_tools(stdio=files_server, env={"MCP_SERVER_LOG": str(log.path)}, call_timeout=HUNG_CALL_TIMEOUT)
    hang = tools[FILES_TOOLS.index("hang")]
    started = time.monotonic()
    with pytest.raises(MCPServerError, match=r"MCP server 'files' did not answer a call of 'hang' within 3 s$"):
        await hang.call({"reason": "forever"})
    elapsed = time.monotonic() - started
    # The whole wait: starting the server, the call, and stopping the server, which cannot exit
    # while ``hang`` runs (the SDK's own stop gives it 2 s after closing its stdin).
    assert elapsed < HUNG_CALL_TIMEOUT + 1.0, f"the call took {elapsed:.2f} s"
    (hung,) = log.pids("hanging")
    assert gone(hung)


async def test_a_hung_call_in_a_run_is_a_tool_error_within_its_timeout(files_server, tmp_path):
    log = ServerLog(tmp_path / "files.log")
    tools = await amcp_tools(stdio=files_server, env={"MCP_SERVER_LOG": str(log.path)}, call_timeout=HUNG_CALL_TIMEOUT)
    seen: dict[str, float] = {}  # when each call was made and answered, by "call:echo", "result:hang", ...

    def note(event: Any) -> None:
        if event.type in ("tool-call", "tool-result"):
            seen[f"{event.type.removeprefix('tool-')}:{event.name}"] = time.monotonic()

    # echo starts the run's session; hang is then a call to a server already running.
    g, _ = agent(
        tools,
        Reply(tool_calls=[("echo", {"text": "hello"})]),
        Reply(tool_calls=[("hang", {"reason": "forever"})]),
        "it did not answer",
    )
    result = await asyncio.wait_for(g.ainvoke(ask(), on_event=note), WITHIN)
    assert result.outcome == "done"  # the model was told, as of any tool's error
    echo, hung_call = tool_messages(result)
    assert (echo.content, echo.is_error) == ("hello", False)
    assert hung_call.is_error
    assert hung_call.content.endswith("MCP server 'files' did not answer a call of 'hang' within 3 s")
    waited = seen["result:hang"] - seen["call:hang"]
    assert waited < HUNG_CALL_TIMEOUT + 1.0, f"the call took {waited:.2f} s"
    (hung,) = log.pids("hanging")
    assert gone(hung)  # killed as the call gave up, not at the run's end


# -- annotations and approval -------------------------------------------------------------


def test_a_tool_the_server_annotates_destructive_needs_approval_and_the_others_do_not(files_server):
    tools = {t.name: t for t in mcp_tools(stdio=files_server)}
    assert list(tools) == FILES_TOOLS
    assert tools["read_file"].annotations == {"readOnlyHint": True}
    assert tools["delete_file"].annotations == {"destructiveHint": True}
    assert tools["touch_file"].annotations == {"destructiveHint": False, "idempotentHint": True}
    assert tools["echo"].annotations == {}
    assert {name: t.approval for name, t in tools.items()} == {
        "read_file": False,
        "delete_file": True,
        "touch_file": False,
        "echo": False,  # unannotated: MCP says "may be destructive", nbgraph does not ask for that alone
        "hang": False,
    }


def test_approval_by_tool_name_decides_for_those_it_names_and_annotations_for_the_rest(files_server):
    def long_echo(arguments: dict) -> bool:
        return len(arguments["text"]) > 100

    tools = mcp_tools(stdio=files_server, prefix="fs.", approval={"echo": long_echo, "read_file": True})
    assert {t.name: t.approval for t in tools} == {
        "fs.read_file": True,
        "fs.delete_file": True,  # not named: as annotated
        "fs.touch_file": False,
        "fs.echo": long_echo,
        "fs.hang": False,
    }
    everything = mcp_tools(stdio=files_server, approval=True)
    assert [t.approval for t in everything] == [True] * len(FILES_TOOLS)
    nothing = mcp_tools(stdio=files_server, approval=False)
    assert [t.approval for t in nothing] == [False] * len(FILES_TOOLS)


def test_approval_of_a_tool_the_server_does_not_have_is_refused_naming_it_and_the_servers_tools(files_server):
    with pytest.raises(
        ValueError,
        match=r"approval names tools MCP server 'files' does not have: 'remove_file', 'fs\.echo' "
        r"\(name them as the server does, without the prefix 'fs\.'\); "
        r"its tools are: read_file, delete_file, touch_file, echo, hang$",
    ):
        mcp_tools(stdio=files_server, prefix="fs.", approval={"remove_file": True, "fs.echo": False, "echo": True})


# -- streamable HTTP ----------------------------------------------------------------------


async def test_over_streamable_http_the_same_tools_and_calls(http_server):
    url, _, _ = http_server
    tools = await amcp_tools(url=url)
    assert [t.name for t in tools] == TOOLS and tools[0].server == NAME
    g, _ = agent(tools, Reply(tool_calls=[("add", {"a": 2, "b": 3}), ("census", {"city": "Rome"})]), "done")
    add, census = tool_messages(await asyncio.wait_for(g.ainvoke(ask()), WITHIN))
    assert (add.content, add.is_error) == ("5", False)
    assert json.loads(census.content) == {"city": "Rome", "population": 2_100_000}


async def test_an_http_server_killed_mid_run_ends_the_call_with_an_error_naming_it(http_server):
    url, process, log = http_server
    tools = await amcp_tools(url=url, name="weather-service")
    g, _ = agent(tools, Reply(tool_calls=[("wait", {"reason": "killed"})]), "it went away")
    run = g.start(ask(), display=False)
    await log.first("waiting")
    process.send_signal(signal.SIGKILL)
    (message,) = tool_messages(await asyncio.wait_for(run, WITHIN))
    assert message.is_error
    assert message.content.endswith("MCP server 'weather-service' went away during a call of 'wait'")


# -- what is asked for --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("given", "error", "says"),
    [
        ({}, ValueError, "one way to reach the server: .* got none"),
        ({"stdio": ["python", "s.py"], "url": "http://x/mcp"}, ValueError, "got stdio= and url="),
        ({"stdio": "python server.py"}, TypeError, r"as a list of words, e.g. \['python', 'server.py'\]"),
        ({"url": "127.0.0.1:8000/mcp"}, ValueError, "url must be the server's http"),
        ({"url": "http://x/mcp", "env": {"A": "1"}}, ValueError, "env= and cwd= are for a server started with stdio"),
        ({"stdio": ["python"], "headers": {"A": "1"}}, ValueError, "headers= are for a server reached with url"),
        ({"stdio": ["python"], "timeout": 0}, ValueError, "timeout is in seconds and must be more than 0, got 0"),
        ({"stdio": ["python"], "call_timeout": -1}, ValueError, "call_timeout is in seconds"),
        ({"stdio": ["python"], "approval": "ask"}, TypeError, "approval must be True, False, None .* got 'ask'"),
        (
            {"stdio": ["python"], "approval": {"delete_file": "always"}},
            TypeError,
            "approval of 'delete_file' must be True, False or a function of the call's arguments, not 'always'",
        ),
    ],
)
def test_what_is_wrong_with_the_arguments_is_said(given, error, says):
    with pytest.raises(error, match=says):
        mcp_tools(**given)


async def test_a_shared_session_must_be_a_client():
    with pytest.raises(TypeError, match="session must be an mcp.Client .* got 'localhost'"):
        await amcp_tools(session="localhost")


def test_without_the_mcp_package_the_error_says_how_to_install_it():
    code = (
        "import sys\n"
        "class NoMcp:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name == 'mcp' or name.startswith('mcp.'):\n"
        "            raise ModuleNotFoundError(f'No module named {name!r}', name=name)\n"
        "sys.meta_path.insert(0, NoMcp())\n"
        "from nbgraph.llm import mcp_tools\n"  # importing is fine: the SDK is needed only to reach a server
        "try:\n"
        "    mcp_tools(stdio=['python', 'server.py'])\n"
        "except ImportError as exc:\n"
        "    print(exc)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=WITHIN)
    assert out.stdout.startswith("MCP tools need the mcp package, version 2 or later: pip install 'nbgraph[mcp]'")


async def test_an_agent_with_prefixed_server_tools_waits_for_the_destructive_call_and_a_predicate(files_server):
    long_echo = lambda args: len(args["text"]) > 10  # noqa: E731 (an MCP tool's policy reads the dict sent)
    tools = mcp_tools(stdio=files_server, prefix="fs.", approval={"echo": long_echo})
    calls = [
        ("fs_echo", {"text": "hi"}),
        ("fs_echo", {"text": "a much longer text"}),
        ("fs_delete_file", {"path": "notes.txt"}),
    ]
    g, _ = agent(tools, Reply(tool_calls=calls), "ok")
    run = g.start(ask(), display=False)
    while len(run.pauses) < 2:
        assert await run.next_pause(timeout=30) is not None, (await run).reason
    long, delete = run.pauses
    assert [c.name for p in run.pauses for c in p.tool_calls] == ["fs.echo", "fs.delete_file"]
    assert long.tool_calls[0].arguments == {"text": "a much longer text"}
    run.answer({long.id: "approve", delete.id: {"type": "reject", "message": "keep it"}})
    result = await run
    assert result.outcome == "done", result.reason
    assert [m.content for m in tool_messages(result)] == ["hi", "a much longer text", "keep it"]
