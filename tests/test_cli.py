"""The `nbgraph` command: `nbgraph html TRACE.ndjson -o run.html` on the trace of a real run (a
model called over HTTP with an API key), run as a user runs it, in its own process."""

from __future__ import annotations

import json
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from openai_server import OpenAIServer
from openai_server import Reply as ServerReply
from test_share import data_of

from nbgraph import END, START, Graph, MessagesState, OpenAIModel, llm_node
from nbgraph.cli import load_graph, main
from nbgraph.llm import UserMessage

ROOT = Path(__file__).resolve().parents[1]
KEY = "sk-proj-SECRETk9Rv2LmTq7XbWnQxZw"
SECRETS = (KEY, KEY[-4:], KEY[8:20])

GRAPH_FILE = """
from nbgraph import END, START, Graph, MessagesState, ScriptedModel, llm_node


def remember(note: str) -> str:
    \"\"\"Remember a note.\"\"\"
    return "noted"


g = Graph("chat", state=MessagesState)
g.add_node("agent", llm_node("You are terse.", model=ScriptedModel([]), tools=[remember]))
g.add_node("wrap", lambda s: None)
g.add_edge(START, "agent")
g.add_edge("agent", "wrap")
g.add_edge("wrap", END)
"""


def chat(model: OpenAIModel) -> Graph:
    """The graph GRAPH_FILE declares, on a real model."""

    def remember(note: str) -> str:
        """Remember a note."""
        return "noted"

    g = Graph("chat", state=MessagesState)
    g.add_node("agent", llm_node("You are terse.", model=model, tools=[remember]))
    g.add_node("wrap", lambda s: None)
    g.add_edge(START, "agent")
    g.add_edge("agent", "wrap")
    g.add_edge("wrap", END)
    return g


@pytest.fixture
async def trace(openai_server: OpenAIServer, tmp_path: Path) -> Path:
    """The NDJSON trace of a run whose model put the API key in a tool call and in its reply."""
    openai_server.script(
        ServerReply(tool_calls=[("remember", {"note": f"the key is {KEY}"})]),
        ServerReply(text=f"Your key is {KEY}; it goes in a Bearer header.", chunk_chars=5),
    )
    async with OpenAIModel("gpt-4o-mini", base_url=openai_server.base_url, api_key=KEY, max_retries=0) as model:
        result = await chat(model).ainvoke({"messages": [UserMessage(content="Remember my key")]})
    assert result.outcome == "done", result.reason
    path = tmp_path / "run.ndjson"
    path.write_text(result.to_ndjson())
    (tmp_path / "graph.py").write_text(GRAPH_FILE)
    return path


def nbgraph(*args: str | Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    """`nbgraph ...` as a user runs it (`python -m nbgraph`, the console script's entry point)."""
    return subprocess.run(
        [sys.executable, "-m", "nbgraph", *map(str, args)], cwd=cwd, capture_output=True, text=True, timeout=120
    )


class TestHTML:
    async def test_a_real_runs_trace_becomes_a_page_that_replays_it_with_no_key_in_it(self, trace, tmp_path):
        (tmp_path / "shared").mkdir()
        done = nbgraph("html", trace.name, "-o", "shared/run.html", "--graph", "graph.py:g", cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        page = tmp_path / "shared" / "run.html"
        size = page.stat().st_size
        assert done.stdout.strip() == f"shared/run.html: 2 steps of graph 'chat', done, {size / 1024:,.0f} KB"
        text = page.read_text(encoding="utf-8")
        assert [secret for secret in SECRETS if secret in text] == []
        data = data_of(text)
        assert {node["id"] for node in data["traits"]["dag"]["nodes"]} == {START, "agent", "wrap", END}
        assert [e["type"] for e in (json.loads(line) for line in trace.read_text().splitlines())].count(
            "tool-call"
        ) == 1
        llm = data["inspections"][1]["llm"]
        assert llm["tool_calls"][0]["args"] == {"note": "the key is [redacted]"}
        assert any("Your key is [redacted]" in str(m.get("content")) for m in llm["messages"])

    async def test_without_its_graph_it_draws_the_path_the_trace_took_beside_the_trace(self, trace, tmp_path):
        done = nbgraph("html", trace, cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        page = trace.with_suffix(".html")
        data = data_of(page.read_text(encoding="utf-8"))
        assert {node["id"] for node in data["traits"]["dag"]["nodes"]} == {START, "agent", "wrap", END}
        assert "Drawn from the trace without its graph" in data["note"]

    async def test_a_bad_call_says_what_was_wrong(self, trace, tmp_path, monkeypatch, capsys):
        monkeypatch.chdir(tmp_path)
        (tmp_path / "cli_other_graph.py").write_text(GRAPH_FILE.replace('Graph("chat"', 'Graph("other"'))
        cases = [
            (("html", "missing.ndjson"), "nbgraph html: no NDJSON trace at 'missing.ndjson'"),
            (("html", trace.name, "-o", trace.name), "would overwrite the trace 'run.ndjson'"),
            (
                ("html", trace.name, "--graph", "graph.py"),
                "--graph 'graph.py': give module:name or path/to/file.py:name",
            ),
            (("html", trace.name, "--graph", "nowhere.py:g"), "--graph 'nowhere.py:g': no file 'nowhere.py'"),
            (("html", trace.name, "--graph", "cli_other_graph.py:nope"), "cli_other_graph.py has no 'nope'"),
            (("html", trace.name, "--graph", "cli_other_graph.py:remember"), "remember is a function, not a Graph"),
            (("html", trace.name, "--graph", "no_such_module:g"), "No module named 'no_such_module'"),
            (("html", trace.name, "--graph", "cli_other_graph.py:g"), "the trace is of graph 'chat', not 'other'"),
        ]
        for args, told in cases:
            assert main(args) == 1
            error = capsys.readouterr().err
            assert error.startswith("nbgraph html: ") and told in error, (args, error)
        assert not (tmp_path / "run.html").exists()
        with pytest.raises(SystemExit) as exit:
            main(["html"])
        assert exit.value.code == 2 and "the following arguments are required: trace" in capsys.readouterr().err

    def test_in_process_and_from_a_module_on_the_path(self, tmp_path, monkeypatch, capsys):
        g = Graph("solo")
        g.add_node("only", lambda s: {"x": 1})
        g.add_edge(START, "only")
        g.add_edge("only", END)
        (tmp_path / "t.ndjson").write_text(g.invoke({}).to_ndjson())
        (tmp_path / "solo_graphs.py").write_text(
            "from nbgraph import END, START, Graph\nclass graphs:\n    solo = Graph('solo')\n"
            "graphs.solo.add_node('only', lambda s: {'x': 1})\ngraphs.solo.add_edge(START, 'only')\n"
            "graphs.solo.add_edge('only', END)\n"
        )
        monkeypatch.chdir(tmp_path)
        monkeypatch.syspath_prepend(tmp_path)
        assert load_graph("solo_graphs:graphs.solo").name == "solo"
        assert main(["html", "t.ndjson", "-g", "solo_graphs:graphs.solo"]) == 0
        assert capsys.readouterr().out.startswith("t.html: 1 step of graph 'solo', done, ")


def test_the_package_declares_the_command():
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts == {"nbgraph": "nbgraph.cli:main"}
