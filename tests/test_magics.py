"""The magics, driven through a real IPython InteractiveShell."""

from __future__ import annotations

import re

import pytest
from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell

from nbgraph import Graph, Resume, ScriptedModel
from nbgraph.dsl import GraphSyntaxError
from nbgraph.export import DAG_SCHEMA_VERSION
from nbgraph.llm import Reply
from nbgraph.magics import GraphMagics


@pytest.fixture
def shell():
    sh = InteractiveShell.instance()
    sh.run_cell("%load_ext nbgraph", store_history=False)
    sh.register_magics(GraphMagics)  # fresh magics: no %%node cell of an earlier test
    sh.user_ns.clear()
    sh.run_cell(
        """
def research(state):
    return {"has_findings": state.q == "deep"}

def analyze(state):
    return {"analyzed": True}

def summarize(state):
    return {"summary": "done"}
""",
        store_history=False,
    )
    yield sh
    sh.user_ns.clear()


GRAPH = """START -> research
research -> analyze if state.has_findings
research -> summarize
analyze -> summarize -> END
"""


def run(shell, code: str):
    result = shell.run_cell(code, store_history=False)
    return result


class TestGraphCell:
    def test_binds_the_graph(self, shell, capsys):
        result = shell.run_cell_magic("graph", "research_graph --max-steps 12", GRAPH)
        assert result is None
        graph = shell.user_ns["research_graph"]
        assert isinstance(graph, Graph)
        assert graph.max_steps == 12 and graph.name == "research_graph"
        assert graph.invoke({"q": "deep"}).path == ["research", "analyze", "summarize"]

    def test_state_option_resolves_a_model(self, shell):
        run(
            shell,
            "import pydantic\nclass S(pydantic.BaseModel):\n    q: str = ''\n    has_findings: bool = False\n    analyzed: bool = False\n    summary: str = ''",
        )
        shell.run_cell_magic("graph", "typed --state S --on-max-steps flag", GRAPH)
        graph = shell.user_ns["typed"]
        assert graph.state is shell.user_ns["S"] and graph.on_max_steps == "flag"
        assert graph.invoke({"q": "x"}).state.summary == "done"

    def test_checkpointer_spec(self, shell, tmp_path):
        path = tmp_path / "runs.db"
        shell.run_cell_magic("graph", f"durable --checkpointer sqlite:{path}", GRAPH)
        from nbgraph import SQLiteCheckpointer

        assert isinstance(shell.user_ns["durable"].checkpointer, SQLiteCheckpointer)

    def test_a_postgres_url_names_a_postgres_store(self, shell, postgres_dsn):
        shell.run_cell_magic("graph", f"durable --checkpointer {postgres_dsn}", GRAPH)
        from nbgraph import PostgresCheckpointer

        store = shell.user_ns["durable"].checkpointer
        assert isinstance(store, PostgresCheckpointer)
        thread = shell.user_ns["durable"].invoke({"q": "x"}).thread
        assert store.get(thread).status == "done"
        store.close()

    def test_settle_and_max_concurrency(self, shell):
        run(
            shell,
            """
import asyncio
running, most = [], [0]

def arm(name):
    async def work(state):
        running.append(name)
        most[0] = max(most[0], len(running))
        await asyncio.sleep(0.01)
        running.remove(name)
        if name == "b":
            raise ValueError("b broke")
        return {name: True}
    return work

fan = lambda state: None
a, b, c = arm("a"), arm("b"), arm("c")
""",
        )
        arms = "START -> fan -> a & b & c\na -> END\nb -> END\nc -> END\n"
        shell.run_cell_magic("graph", "arms --settle all --max-concurrency 1", arms)
        graph = shell.user_ns["arms"]
        assert (graph.settle, graph.max_concurrency) == ("all", 1)
        result = graph.invoke({})
        assert result.outcome == "done", result.reason
        assert (result.state.get("a"), result.state.get("c")) == (True, True)  # b's failure kept the others
        assert [s.error for s in result.history if s.node == "b"] == ["ValueError: b broke"]
        assert shell.user_ns["most"] == [1]
        shell.run_cell_magic("graph", "arms", arms)
        assert (shell.user_ns["arms"].settle, shell.user_ns["arms"].max_concurrency) == ("fail_fast", None)
        assert shell.user_ns["arms"].invoke({}).outcome == "failed"

    @pytest.mark.parametrize(
        ("options", "message"),
        [
            ("--settle sometimes", "%%graph g: --settle must be fail_fast or all, got 'sometimes'"),
            ("--max-concurrency 0", "%%graph g: --max-concurrency must be a positive integer, got '0'"),
            ("--max-concurrency two", "%%graph g: --max-concurrency must be a positive integer, got 'two'"),
            ("--max-concurrency 1.5", "%%graph g: --max-concurrency must be a positive integer, got '1.5'"),
        ],
    )
    def test_bad_settle_or_max_concurrency_names_the_option_and_the_cell(self, shell, capsys, options, message):
        result = run(shell, f"%%graph g {options}\nSTART -> research -> END\n")
        assert result.error_in_exec is not None and "g" not in shell.user_ns
        assert message in capsys.readouterr().err

    def test_rerunning_with_changed_routing_takes_the_new_path(self, shell):
        shell.run_cell_magic("graph", "g", GRAPH)
        first = shell.user_ns["g"]
        assert first.invoke({"q": "deep"}).path == ["research", "analyze", "summarize"]
        shell.run_cell_magic("graph", "g", GRAPH.replace("if state.has_findings", "if not state.has_findings"))
        assert shell.user_ns["g"].invoke({"q": "deep"}).path == ["research", "summarize"]
        # The old object is untouched: a run holding it keeps its definition.
        assert first.invoke({"q": "deep"}).path == ["research", "analyze", "summarize"]

    def test_syntax_error_is_shown_without_a_traceback(self, shell, capsys):
        result = run(shell, "%%graph bad\nSTART -> reserch -> END\n")
        assert isinstance(result.error_in_exec, GraphSyntaxError)
        err = capsys.readouterr().out  # a plain shell prints the error; a kernel sends it
        assert err.startswith("GraphSyntaxError: %%graph cell, line 2, column 10: node 'reserch' is not defined")
        assert "(did you mean 'research'?)" in err
        assert "    START -> reserch -> END\n             ^" in err
        assert "Traceback" not in err and "nbgraph/dsl" not in err

    def test_bad_header_is_a_usage_error(self, shell, capsys):
        result = run(shell, "%%graph g --max-steps many\nSTART -> research -> END\n")
        assert result.error_in_exec is not None
        assert "invalid int value: 'many'" in capsys.readouterr().err

    def test_help(self, shell, capsys):
        run(shell, "%%graph --help\nSTART -> research\n")
        out = capsys.readouterr().out
        assert "--max-steps" in out and "--checkpointer" in out
        assert "--settle fail_fast|all" in out and "--max-concurrency N" in out
        run(shell, "%graph help")
        assert "%graph route NAME FROM [STATE]" in capsys.readouterr().out

    def test_unreachable_nodes_are_reported_once(self, shell, capsys):
        shell.run_cell_magic("graph", "w", "START -> research -> END\nanalyze -> END\n")
        assert "warning: graph 'w': node(s) 'analyze' cannot be reached" in capsys.readouterr().err


class TestNodeCell:
    def test_node_body_defines_a_node(self, shell):
        shell.run_cell_magic("node", "shout", "return {'text': state.q.upper()}")
        shell.run_cell_magic("graph", "g", "START -> shout -> END")
        assert shell.user_ns["g"].invoke({"q": "hi"}).state["text"] == "HI"
        assert callable(shell.user_ns["shout"])

    def test_node_with_await_and_approval(self, shell):
        shell.run_cell_magic("node", "ask --approval", "name = await ctx.request_input('Name?')\nreturn {'name': name}")
        shell.run_cell_magic("graph", "g", "START -> ask -> END")
        graph = shell.user_ns["g"]
        assert graph.nodes["ask"].approval and graph.nodes["ask"].is_async
        paused = graph.invoke({})
        assert paused.pauses[0].prompt == "Name?"
        paused = graph.invoke(Resume(paused.thread, "Ada"))
        assert paused.pauses[0].kind == "approval"
        assert graph.invoke(Resume(paused.thread, True)).state["name"] == "Ada"

    def test_node_approved_before_it_runs(self, shell):
        shell.run_cell_magic("node", "send --approval before", "return {'sent': True}")
        shell.run_cell_magic("graph", "g", "START -> send -> END")
        paused = shell.user_ns["g"].invoke({})
        assert (paused.pauses[0].kind, paused.pauses[0].at, paused.state) == ("approval", "before", {})
        denied = shell.user_ns["g"].invoke(Resume(paused.thread, False))
        assert (denied.outcome, denied.state) == ("denied", {})

    def test_llm_node_whose_tool_calls_wait_for_a_decision(self, shell):
        shell.run_cell(
            """
from nbgraph import MessagesState
sent = []
def send_email(to: str) -> str:
    sent.append(to)
    return "sent"
""",
            store_history=False,
        )
        shell.run_cell_magic("node", "agent --llm --tools send_email --approve-tools send_email", "You send mail.")
        shell.run_cell_magic("graph", "g --state MessagesState", "START -> agent -> END")
        model = ScriptedModel([Reply(tool_calls=[("send_email", {"to": "ada@example.com"})]), "ok"])
        graph = shell.user_ns["g"]
        graph.model = model
        paused = graph.invoke({"messages": [{"role": "user", "content": "mail Ada"}]})
        (pause,) = paused.pauses
        assert (pause.kind, pause.tool_calls[0].name, shell.user_ns["sent"]) == ("tool", "send_email", [])
        done = graph.invoke(Resume(paused.thread, "approve"))
        assert done.outcome == "done" and shell.user_ns["sent"] == ["ada@example.com"]

    def test_approve_tools_names_a_tool_the_node_lacks(self, shell):
        with pytest.raises(UsageError, match="approval= names 'nope', which the node does not have"):
            shell.run_cell_magic("node", "agent --llm --approve-tools nope", "x")

    def test_node_for_one_graph_only(self, shell):
        shell.run_cell_magic("node", "research --graph special", "return {'special': True}")
        shell.run_cell_magic("graph", "special", "START -> research -> END")
        shell.run_cell_magic("graph", "plain", "START -> research -> END")
        assert shell.user_ns["special"].invoke({}).state == {"special": True}
        assert shell.user_ns["plain"].invoke({"q": "deep"}).state == {"q": "deep", "has_findings": True}

    def test_redefining_a_node_fixes_a_failed_run(self, shell):
        shell.run_cell_magic("node", "flaky", "return {'x': 1 / 0}")
        shell.run_cell_magic("graph", "g", "START -> research -> flaky -> END")
        graph = shell.user_ns["g"]
        failed = graph.invoke({"q": "x"})
        assert failed.outcome == "failed" and "ZeroDivisionError" in failed.reason
        shell.run_cell_magic("node", "flaky", "return {'x': 1}")
        done = graph.invoke(Resume(failed.thread))
        assert done.outcome == "done" and done.state["x"] == 1 and done.path == ["research", "flaky"]

    def test_a_def_run_after_a_node_cell_wins_and_the_graph_says_so(self, shell, capsys):
        shell.run_cell_magic("node", "shout", "return {'text': state.q.upper()}")
        run(shell, "def shout(state):\n    return {'text': state.q + '!'}")
        shell.run_cell_magic("graph", "g", "START -> shout -> END")
        assert shell.user_ns["g"].invoke({"q": "hi"}).state["text"] == "hi!"
        assert (
            "warning: node shout: shout was defined again after its %%node shout cell, and this graph uses the "
            "newer definition; run the %%node shout cell again to use the cell's code"
        ) in capsys.readouterr().err
        shell.run_cell_magic("node", "shout", "return {'text': state.q.upper()}")
        shell.run_cell_magic("graph", "g", "START -> shout -> END")
        assert shell.user_ns["g"].invoke({"q": "hi"}).state["text"] == "HI"

    def test_a_node_cell_that_hides_a_def_says_so_once(self, shell, capsys):
        shell.run_cell_magic("node", "research", "return {'has_findings': False}")
        assert (
            "warning: %%node research hides the function research defined earlier in this notebook: graphs "
            "defined from now on use this cell's code"
        ) in capsys.readouterr().err
        shell.run_cell_magic("node", "research", "return {'has_findings': False}")  # the same cell, run again
        shell.run_cell_magic("graph", "g", GRAPH)
        assert "warning" not in capsys.readouterr().err
        assert shell.user_ns["g"].invoke({"q": "deep"}).path == ["research", "summarize"]

    def test_a_node_cell_for_one_graph_leaves_the_def_to_the_others(self, shell, capsys):
        shell.run_cell_magic("node", "research --graph g", "return {'has_findings': False}")
        assert "hides the function research defined earlier in this notebook: graph g uses" in capsys.readouterr().err
        shell.run_cell_magic("graph", "g", GRAPH)
        shell.run_cell_magic("graph", "h", GRAPH)
        assert shell.user_ns["g"].invoke({"q": "deep"}).path == ["research", "summarize"]
        assert shell.user_ns["h"].invoke({"q": "deep"}).path == ["research", "analyze", "summarize"]
        assert "warning" not in capsys.readouterr().err

    def test_node_syntax_error(self, shell, capsys):
        result = run(shell, "%%node broken\nx = 1\nreturn {'x': x\n")
        assert isinstance(result.error_in_exec, GraphSyntaxError)
        err = capsys.readouterr().out
        assert err.startswith("GraphSyntaxError: %%node cell, line 3")
        assert "Traceback" not in err

    def test_llm_node_with_tools_and_the_graphs_model(self, shell):
        shell.run_cell(
            """
from nbgraph import ScriptedModel
from nbgraph.llm import Reply

def get_weather(city: str) -> str:
    \"\"\"Current weather of a city.\"\"\"
    return f"Sunny in {city}"

model = ScriptedModel([Reply(tool_calls=[("get_weather", {"city": "Oslo"})]), "Pack sunglasses."])
""",
            store_history=False,
        )
        shell.run_cell_magic("node", "planner --llm --tools get_weather --no-feedback", "You plan trips.\n")
        shell.run_cell_magic("graph", "trip --model model", "START -> planner -> END")
        graph, model = shell.user_ns["trip"], shell.user_ns["model"]
        assert graph.nodes["planner"].kind == "llm" and shell.user_ns["planner"].__name__ == "planner"
        result = graph.invoke({"messages": ["Weekend in Oslo?"]})
        assert result.outcome == "done", result.reason
        assert result.state["messages"][-1].content == "Pack sunglasses."
        assert model.calls[0].messages[0].content == "You plan trips."
        assert model.calls[1].messages[-1].content == "Sunny in Oslo"

    def test_record_keeps_the_models_exchanges_and_replays_them_as_recorded_does(self, shell, tmp_path):
        path = tmp_path / "trip.ndjson"
        shell.run_cell(
            "from nbgraph import ScriptedModel\nmodel = ScriptedModel(['Pack a coat.'])", store_history=False
        )
        shell.run_cell_magic("node", "planner --llm", "You plan trips.\n")
        shell.run_cell_magic(
            "graph", f"trip --model model --record {path} --record-mode record", "START -> planner -> END"
        )
        first = shell.user_ns["trip"].invoke({"messages": ["Oslo?"]})
        assert first.state["messages"][-1].content == "Pack a coat."
        # The Python equivalent reads the same file; the magic without --model replays the recording's model.
        from nbgraph import recorded

        assert recorded(None, path, mode="replay").exchanges == 1
        shell.run_cell_magic("graph", f"again --record {path} --record-mode replay", "START -> planner -> END")
        model = shell.user_ns["again"].model
        assert repr(model) == f"recorded(None (replaying 'scripted'), {str(path)!r}, mode='replay')"
        second = shell.user_ns["again"].invoke({"messages": ["Oslo?"]})
        assert second.state["messages"][-1].content == "Pack a coat." and model.replayed == 1
        assert len(shell.user_ns["model"].calls) == 1  # the scripted model was called once, to record

    def test_record_of_a_file_that_is_no_recording_is_a_usage_error(self, shell, tmp_path, capsys):
        other = tmp_path / "other.txt"
        other.write_text("hello\n")
        run(shell, f"%%graph bad --record {other} --record-mode replay\nSTART -> research -> END\n")
        err = capsys.readouterr().err
        assert f"UsageError: %%graph bad: --record {other}: {other}, line 1 is not JSON" in err

    def test_tools_need_llm(self, shell, capsys):
        run(shell, "%%node n --tools a,b\nreturn None\n")
        assert "--tools only applies to --llm nodes" in capsys.readouterr().err


class TestLineMagic:
    def test_run_outside_a_kernel_invokes(self, shell, capsys):
        shell.run_cell_magic("graph", "g", GRAPH)
        capsys.readouterr()
        run(shell, '%graph run g {"q": "deep"}')
        assert capsys.readouterr().out == "done: research -> analyze -> summarize\n"
        assert shell.user_ns["_result"].outcome == "done"

    def test_run_with_thread(self, shell, capsys):
        shell.run_cell_magic("graph", "g", GRAPH)
        run(shell, '%graph run g {"q": "a b"} --thread my-thread')
        assert shell.user_ns["_result"].thread == "my-thread"

    @pytest.mark.parametrize("options", ["--step", "--step --thread stepped", "--thread stepped --step"])
    def test_run_step_pauses_before_the_first_node(self, shell, capsys, options):
        shell.run_cell_magic("graph", "g", GRAPH)
        capsys.readouterr()
        run(shell, f'%graph run g {{"q": "deep"}} {options}')
        result = shell.user_ns["_result"]
        assert (result.outcome, result.pauses[0].kind, result.pauses[0].at, result.pauses[0].path) == (
            "interrupted",
            "breakpoint",
            "before",
            "research",
        )
        assert capsys.readouterr().out.startswith("interrupted: (no steps)\npaused at the breakpoint before 'research'")
        assert (result.thread == "stepped") == ("thread" in options)
        graph = shell.user_ns["g"]
        stepped = graph.invoke(Resume(result, "step"))
        assert (stepped.pauses[0].path, stepped.path) == ("analyze", ["research"])  # still stepping
        assert graph.invoke(Resume(stepped, "continue")).path == ["research", "analyze", "summarize"]

    def test_route_prints_each_candidate(self, shell, capsys):
        shell.run_cell_magic("graph", "g", GRAPH)
        capsys.readouterr()
        run(shell, '%graph route g research {"has_findings": False}')
        assert capsys.readouterr().out == (
            "research -> summarize\n"
            "  research -> analyze: state.has_findings = False\n"
            "  research -> summarize: always = True\n"
        )

    def test_route_runs_no_node(self, shell, capsys):
        run(shell, "calls = []\ndef research(state):\n    calls.append(1)\n    return None")
        shell.run_cell_magic("graph", "g", GRAPH)
        run(shell, "%graph route g START")
        assert shell.user_ns["calls"] == []
        assert "__start__ -> research" in capsys.readouterr().out

    def test_history(self, shell, capsys):
        shell.run_cell_magic("graph", "g", GRAPH)
        run(shell, '%graph run g {"q": "deep"}')
        capsys.readouterr()
        run(shell, "%graph history _result")
        lines = capsys.readouterr().out.splitlines()
        assert lines[0].split() == ["step", "node", "visit", "ms", "edge", "tokens", "error"]
        rows = [
            ("1", "research", r"-> analyze \[state\.has_findings\]"),
            ("2", "analyze", r"-> summarize"),
            ("3", "summarize", r"-> END"),
        ]
        assert len(lines) == 1 + len(rows)
        for line, (step, node, edge) in zip(lines[1:], rows, strict=True):
            # step, node, visit, ms (one decimal), the edge taken; no tokens, no error.
            match = re.fullmatch(rf"{step} +{node} +1 +(\d+\.\d) +{edge}", line)
            assert match, line
            assert float(match.group(1)) >= 0.0

    def test_export_formats(self, shell, capsys):
        import json

        shell.run_cell_magic("graph", "g", GRAPH)
        capsys.readouterr()
        run(shell, "%graph export g --format mermaid")
        assert capsys.readouterr().out == (
            "flowchart TD\n"
            '    __start__(["START"])\n'
            '    n_research["research"]\n'
            '    n_analyze["analyze"]\n'
            '    n_summarize["summarize"]\n'
            '    __end__(["END"])\n'
            "    __start__ -.-> n_research\n"
            '    n_research -->|"state.has_findings"| n_analyze\n'
            "    n_research -.-> n_summarize\n"
            "    n_analyze -.-> n_summarize\n"
            "    n_summarize -.-> __end__\n"
        )

        run(shell, "%graph export g --format json")
        dag = json.loads(capsys.readouterr().out)
        assert (dag["version"], dag["mode"], dag["name"]) == (DAG_SCHEMA_VERSION, "graph", "g")
        assert dag["nodes"] == [
            {"id": "__start__", "kind": "start"},
            {"id": "research", "kind": "function", "approval": False},
            {"id": "analyze", "kind": "function", "approval": False},
            {"id": "summarize", "kind": "function", "approval": False},
            {"id": "__end__", "kind": "end"},
        ]
        assert [(e["from"], e["to"], e["label"], e["unconditional"]) for e in dag["edges"]] == [
            ("__start__", "research", None, True),
            ("research", "analyze", "state.has_findings", False),
            ("research", "summarize", None, True),
            ("analyze", "summarize", None, True),
            ("summarize", "__end__", None, True),
        ]

        run(shell, '%graph run g {"q": "deep"}')
        capsys.readouterr()
        run(shell, "%graph export _result --format ndjson")
        events = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
        assert [e["type"] for e in events] == [
            "run-start",
            "route",
            "node-enter",
            "node-exit",
            "route",
            "node-enter",
            "node-exit",
            "route",
            "node-enter",
            "node-exit",
            "route",
            "done",
        ]
        assert [(e["source"], e["target"], e["label"]) for e in events if e["type"] == "route"] == [
            ("__start__", "research", None),
            ("research", "analyze", "state.has_findings"),
            ("analyze", "summarize", None),
            ("summarize", "__end__", None),
        ]
        assert [(e["step"], e["node"], e["update"]) for e in events if e["type"] == "node-exit"] == [
            (1, "research", {"has_findings": True}),
            (2, "analyze", {"analyzed": True}),
            (3, "summarize", {"summary": "done"}),
        ]
        assert events[0]["graph"] == "g" and events[-1]["outcome"] == "done"
        assert {e["thread"] for e in events} == {shell.user_ns["_result"].thread}

    def test_list(self, shell, capsys):
        shell.run_cell_magic("graph", "g", GRAPH)
        capsys.readouterr()
        run(shell, "%graph list")
        assert capsys.readouterr().out == "g: 3 nodes, 5 edges/routers\n"

    def test_errors_name_the_problem(self, shell, capsys):
        run(shell, "%graph run nothing")
        assert "'nothing' is not a graph" in capsys.readouterr().err
        run(shell, "%graph frobnicate g")
        assert "unknown subcommand 'frobnicate'" in capsys.readouterr().err
        shell.run_cell_magic("graph", "g", GRAPH)
        run(shell, "%graph run g {oops")
        assert "INPUT: could not evaluate '{oops'" in capsys.readouterr().err
        run(shell, "%graph export g --format pdf")
        assert "unknown format 'pdf'" in capsys.readouterr().err
