"""Graph building, build-time validation, pure routing and exports."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from nbgraph import END, START, Graph, GraphValidationError, GraphWarning, NoEdgeMatched, RoutingError


def noop(state):
    return None


def build(**kwargs) -> Graph:
    g = Graph("g", **kwargs)
    g.add_node("a", noop)
    g.add_edge(START, "a")
    g.add_edge("a", END)
    return g


def problems_of(g: Graph) -> list[str]:
    with pytest.raises(GraphValidationError) as info:
        g.compile()
    return info.value.problems


class TestDeadEdges:
    """Edges out of a node are tried in order: one after an edge that always holds is dead."""

    def test_a_langgraph_style_fan_out_is_refused_naming_both_edges_and_the_fan_out(self):
        g = Graph("fan")
        for name in ("a", "b"):
            g.add_node(name, lambda s: None)
            g.add_edge(name, END)
        g.add_edge(START, "a")
        g.add_edge(START, "b")  # how LangGraph writes a fan-out; here b would never run
        with pytest.raises(GraphValidationError) as refused:
            g.compile()
        (problem,) = refused.value.problems
        assert problem.startswith(
            "edge __start__ -> b can never be taken, so 'b' is never reached that way: edge __start__ -> a always holds"
        )
        assert "add_edge(START, ['a', 'b'])" in problem and "START -> a & b in a %%graph cell" in problem
        g2 = Graph("fan")
        for name in ("a", "b"):
            g2.add_node(name, lambda s: None)
            g2.add_edge(name, END)
        g2.add_edge(START, ["a", "b"])
        assert g2.invoke({}).outcome == "done"

    def test_an_edge_after_the_fallback_is_refused_with_how_to_order_them(self):
        g = Graph("order")
        g.add_node("a", lambda s: None)
        g.add_node("b", lambda s: None)
        g.add_edge(START, "a")
        g.add_edge("a", END)
        g.add_edge("a", "b", when=lambda s: True, label="always")
        g.add_edge("b", END)
        with pytest.raises(
            GraphValidationError,
            match=r"edge a -> b can never be taken, so 'b' is never reached that way: edge a -> __end__ always holds",
        ):
            g.compile()

    def test_conditions_then_a_fallback_compile(self):
        g = Graph("ok")
        g.add_node("a", lambda s: None)
        g.add_edge(START, "a", when=lambda s: False, label="never")
        g.add_edge(START, "a")
        g.add_edge("a", END)
        assert g.invoke({}).outcome == "done"

    def test_in_a_graph_cell_two_start_lines_are_refused_at_their_line(self):
        from nbgraph.dsl import GraphSyntaxError, parse

        with pytest.raises(GraphSyntaxError, match=r"line 2.*can never be taken") as refused:
            parse("START -> a\nSTART -> b\na -> END\nb -> END", {"a": lambda s: None, "b": lambda s: None}, "g")
        assert "START -> a & b" in str(refused.value)


class TestValidation:
    def test_valid_graph_compiles(self):
        compiled = build().compile()
        assert set(compiled.nodes) == {"a"}

    def test_empty_name(self):
        g = build()
        g.name = ""
        assert problems_of(g) == ["the graph name is empty"]

    def test_no_nodes(self):
        g = Graph("empty")
        problems = problems_of(g)
        assert any("no nodes" in p for p in problems)

    @pytest.mark.parametrize("value", [0, -3])
    def test_max_steps_below_one(self, value):
        problems = problems_of(build(max_steps=value))
        assert problems == [f"max_steps must be an integer >= 1, got {value}"]

    def test_max_same_node_below_one(self):
        assert "max_same_node" in problems_of(build(max_same_node=0))[0]

    def test_bad_on_max_steps(self):
        assert "on_max_steps must be one of" in problems_of(build(on_max_steps="explode"))[0]

    def test_missing_start(self):
        g = Graph("g")
        g.add_node("a", noop)
        g.add_edge("a", END)
        [problem] = problems_of(g)
        assert "no start" in problem and "add_edge(START, 'a')" in problem

    def test_unknown_start(self):
        g = build()
        g.add_edge(START, "nowhere")
        assert "edge __start__ -> nowhere: unknown target node 'nowhere'" in problems_of(g)

    def test_edge_from_unknown_node_suggests_close_name(self):
        g = build()
        g.add_node("analyze", noop)
        g.add_edge("a", "analyze")
        g.add_edge("analyse", END)
        problems = problems_of(g)
        assert "edge analyse -> __end__: unknown source node 'analyse' (did you mean 'analyze'?)" in problems

    def test_edge_to_unknown_node(self):
        g = build()
        g.add_edge("a", "b")
        assert problems_of(g)[0] == "edge a -> b: unknown target node 'b'"

    def test_edge_from_end(self):
        g = build()
        g.add_edge(END, "a")
        assert problems_of(g) == ["edge __end__ -> a: END is terminal; no edge may leave it"]

    def test_edge_back_to_start(self):
        g = build()
        g.add_edge("a", START)
        assert "no edge may lead back to START" in problems_of(g)[0]

    def test_node_without_way_out(self):
        g = build()
        g.add_node("dead", noop)
        g.add_edge("a", "dead")
        assert problems_of(g)[-1:] == [
            "node 'dead' has no outgoing edge; add one, e.g. add_edge('dead', END), "
            "or declare where its Goto or Send leads with destinations=[...]"
        ]

    @pytest.mark.parametrize("name", [START, END])
    def test_reserved_names(self, name):
        with pytest.raises(ValueError, match="reserved"):
            Graph("g").add_node(name, noop)

    def test_empty_node_name(self):
        with pytest.raises(ValueError, match="non-empty string"):
            Graph("g").add_node("  ", noop)

    def test_non_callable_node_names_the_node(self):
        with pytest.raises(TypeError, match=r"node 'x' must be a callable .* got str 'oops'"):
            Graph("g").add_node("x", "oops")

    def test_node_without_state_parameter(self):
        with pytest.raises(TypeError, match="node 'x' must accept the state"):
            Graph("g").add_node("x", lambda: None)

    def test_duplicate_node(self):
        g = build()
        with pytest.raises(ValueError, match="already defined"):
            g.add_node("a", noop)
        g.add_node("a", lambda s: {"x": 1}, replace=True)
        assert g.invoke({}).state == {"x": 1}

    def test_router_with_unknown_target(self):
        g = Graph("g")
        g.add_node("a", noop)
        g.add_edge(START, "a")
        g.add_router("a", lambda s: END, targets=["b", END])
        assert problems_of(g) == ["router 'router' of 'a': unknown target 'b'"]

    def test_node_with_edges_and_router(self):
        g = build()
        g.add_router("a", lambda s: END, targets=[END])
        assert "has both edges and a router" in problems_of(g)[0]

    def test_unknown_on_deny_target(self):
        g = Graph("g")
        g.add_node("a", noop, approval=True, on_deny="fix")
        g.add_edge(START, "a")
        g.add_edge("a", END)
        assert "on_deny target 'fix' is not a node" in problems_of(g)[0]

    def test_all_problems_reported_at_once(self):
        g = Graph("g", max_steps=0)
        g.add_node("a", noop)
        g.add_edge("a", "b")
        problems = problems_of(g)
        assert len(problems) == 3
        message = str(GraphValidationError("g", problems))
        assert message.startswith("graph 'g' is invalid (3 problems):")

    def test_unreachable_node_warns(self):
        g = build()
        g.add_node("island", noop)
        g.add_edge("island", END)
        with pytest.warns(GraphWarning, match="'island' cannot be reached"):
            g.compile()

    def test_compile_is_cached_until_the_graph_changes(self):
        g = build()
        first = g.compile()
        assert g.compile() is first
        g.add_node("a", lambda s: None, replace=True)
        assert g.compile() is not first


class TestRoute:
    def graph(self) -> Graph:
        g = Graph("r")
        for name in ("analyze", "tool_a", "tool_b"):
            g.add_node(name, noop)
        g.add_edge(START, "analyze")
        g.add_edge("analyze", "tool_a", when=lambda s: "USE_A" in s.last, label="USE_A")
        g.add_edge("analyze", "tool_b", when=lambda s: "USE_B" in s.last, label="USE_B")
        g.add_edge("analyze", END)
        g.add_edge("tool_a", "analyze")
        g.add_edge("tool_b", "analyze")
        return g

    def test_first_match_wins_in_declaration_order(self):
        decision = self.graph().route({"last": "USE_B then USE_A"}, "analyze")
        assert decision.target == "tool_a"
        assert decision.label == "USE_A"
        assert decision.checks == (("tool_a", "USE_A", True),)

    def test_route_lists_every_condition_tried(self):
        decision = self.graph().route({"last": "nothing"}, "analyze")
        assert decision.target == END
        assert decision.unconditional
        assert decision.checks == (("tool_a", "USE_A", False), ("tool_b", "USE_B", False), (END, "always", True))
        assert "analyze -> tool_b: USE_B = False" in decision.explain()

    def test_route_runs_no_node(self):
        calls = []
        g = Graph("pure")
        g.add_node("a", lambda s: calls.append(1))
        g.add_edge(START, "a")
        g.add_edge("a", END)
        assert g.route({}, START).target == "a"
        assert calls == []

    def test_no_edge_matched_lists_candidates(self):
        g = Graph("g")
        g.add_node("a", noop)
        g.add_edge(START, "a")
        g.add_edge("a", END, when=lambda s: s.done, label="done")
        g.add_edge("a", "a", when=lambda s: s.retry, label="retry")
        with pytest.raises(NoEdgeMatched) as info:
            g.route({"done": False, "retry": False}, "a")
        assert info.value.candidates == ["-> __end__ if done", "-> a if retry"]
        assert "no edge out of 'a' matched" in str(info.value)

    def test_predicate_error_names_the_edge(self):
        g = Graph("g")
        g.add_node("a", noop)
        g.add_edge(START, "a")
        g.add_edge("a", END, when=lambda s: s.missing > 1, label="missing > 1")
        with pytest.raises(RoutingError, match=r"condition of edge a -> __end__ \[missing > 1\] raised AttributeError"):
            g.route({}, "a")

    def test_router_returning_unknown_name(self):
        g = Graph("g")
        g.add_node("a", noop)
        g.add_node("b", noop)
        g.add_edge(START, "a")
        g.add_edge("b", END)

        def pick(state):
            return "c"

        g.add_router("a", pick, targets=["b", END])
        with pytest.raises(
            RoutingError, match=r"router 'pick' of node 'a' returned 'c', which is not one of its targets: b, __end__"
        ):
            g.route({}, "a")

    def test_route_from_unknown_node(self):
        with pytest.raises(ValueError, match="has no node 'zz'"):
            self.graph().route({}, "zz")

    def test_predicate_may_take_ctx(self):
        g = Graph("g")
        g.add_node("a", noop)
        g.add_edge(START, "a")
        g.add_edge("a", "a", when=lambda s, ctx: ctx.visit < 3, label="visit < 3")
        g.add_edge("a", END)
        assert g.invoke({}).path == ["a", "a", "a"]


class TestExport:
    def graph(self) -> Graph:
        g = Graph("export")
        g.add_node("a", noop)
        g.add_node("b", noop, approval=True)
        g.add_edge(START, "a")
        g.add_edge("a", "b", when=lambda s: s.go, label="state.go")
        g.add_edge("a", END)
        g.add_edge("b", END)
        return g

    def test_mermaid_labels_and_dashes(self):
        text = self.graph().to_mermaid()
        assert text.startswith("flowchart TD\n")
        assert '    n_a -->|"state.go"| n_b' in text
        assert "    n_a -.-> __end__" in text
        assert "    __start__ -.-> n_a" in text

    def test_display_outside_a_kernel_is_a_mermaid_diagram(self):
        # Where widgets cannot render (plain Python, nbconvert, GitHub) a displayed
        # graph is its repr and a mermaid block, and no widget is created.
        expected = {
            "text/plain": "<Graph 'export': 2 nodes, 4 edges/routers>",
            "text/markdown": (
                "```mermaid\n"
                "flowchart TD\n"
                '    __start__(["START"])\n'
                '    n_a["a"]\n'
                '    n_b["b \u2713"]\n'
                '    __end__(["END"])\n'
                "    __start__ -.-> n_a\n"
                '    n_a -->|"state.go"| n_b\n'
                "    n_a -.-> __end__\n"
                "    n_b -.-> __end__\n"
                "```\n"
            ),
        }
        assert self.graph()._repr_mimebundle_() == expected
        # The same in a fresh interpreter, which also never imports the widget stack.
        code = (
            "import json, sys\n"
            "from nbgraph import END, START, Graph\n"
            "g = Graph('export')\n"
            "g.add_node('a', lambda s: None)\n"
            "g.add_node('b', lambda s: None, approval=True)\n"
            "g.add_edge(START, 'a')\n"
            "g.add_edge('a', 'b', when=lambda s: s.go, label='state.go')\n"
            "g.add_edge('a', END)\n"
            "g.add_edge('b', END)\n"
            "bundle = g._repr_mimebundle_()\n"
            "print(json.dumps([bundle, [m for m in ('anywidget', 'ipywidgets') if m in sys.modules]]))\n"
        )
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
        assert json.loads(out.stdout) == [expected, []]

    def test_dag_before_and_after_a_run(self):
        g = self.graph()
        dag = g.to_dag()
        assert [n["id"] for n in dag["nodes"]] == [START, "a", "b", END]
        assert dag["edges"][1] == {"from": "a", "to": "b", "label": "state.go", "unconditional": False}
        assert all("fired" not in e for e in dag["edges"])
        result = g.invoke({"go": False})
        fired = {(e["from"], e["to"]): e["fired"] for e in result.to_dag()["edges"]}
        assert fired == {(START, "a"): 1, ("a", "b"): 0, ("a", END): 1, ("b", END): 0}


class TestGotoDestinations:
    def graph(self, destinations=("urgent", "later"), returns="urgent") -> Graph:
        from nbgraph import Goto

        def triage(state):
            return Goto(returns)

        g = Graph("triage")
        g.add_node("triage", triage, destinations=destinations)
        g.add_node("urgent", noop)
        g.add_node("later", noop)
        g.add_edge(START, "triage")
        g.add_edge("triage", END)
        g.add_edge("urgent", END)
        g.add_edge("later", END)
        return g

    def test_declared_destinations_count_for_reachability(self):
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("error")
            self.graph().compile()
        with pytest.warns(
            GraphWarning, match=r"'later' cannot be reached from START by any edge, router target or declared Goto"
        ):
            self.graph(destinations=["urgent"]).compile()

    def test_a_goto_without_declared_destinations_is_never_warned_about(self):
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("error")
            self.graph(destinations=None).compile()  # where it goes cannot be known

    def test_a_goto_outside_the_declared_destinations_fails_the_run(self):
        g = self.graph(destinations=["later"], returns="urgent")
        with pytest.warns(GraphWarning, match="'urgent' cannot be reached"):
            g.compile()
        result = g.invoke({})
        assert result.outcome == "failed"
        assert result.reason == (
            "node 'triage' returned Goto('urgent'), but it declares destinations=['later']; add 'urgent' there"
        )

    def test_unknown_destination_is_a_build_error(self):
        g = self.graph(destinations=["urgnet"])
        assert "node 'triage': destination 'urgnet' is not a node (did you mean 'urgent'?)" in problems_of(g)
        with pytest.raises(TypeError, match="destinations must be a list of node names"):
            Graph("x").add_node("a", noop, destinations="b")

    def test_destinations_are_drawn_dotted(self):
        g = self.graph()
        assert "    n_triage -. goto .-> n_urgent" in g.to_mermaid()
        goto = [e for e in g.to_dag()["edges"] if e.get("goto")]
        assert [(e["from"], e["to"], e["label"]) for e in goto] == [
            ("triage", "urgent", "goto"),
            ("triage", "later", "goto"),
        ]
        fired = {(e["from"], e["to"]): e["fired"] for e in g.invoke({}).to_dag()["edges"]}
        assert fired[("triage", "urgent")] == 1 and fired[("triage", "later")] == 0


class TestRoutingContext:
    def graph(self) -> Graph:
        g = Graph("ctx")
        g.add_node("a", noop)
        g.add_node("b", noop)
        g.add_edge(START, "a", when=lambda s, ctx: ctx.visit == 1 and ctx.node == START, label="first")
        g.add_edge(START, "b")
        g.add_edge("a", "a", when=lambda s, ctx: ctx.visit < 2, label="again")
        g.add_edge("a", "b")
        g.add_edge("b", END)
        return g

    def test_route_gives_conditions_a_context(self):
        g = self.graph()
        assert g.route({}, "a").target == "a"
        assert g.route({}, "a", visit=2).target == "b"
        assert g.route({}).target == "a"

    def test_routing_out_of_start_gets_a_context(self):
        assert self.graph().invoke({}).path == ["a", "a", "b"]

    def test_a_routing_context_cannot_ask_for_input(self):
        import asyncio

        g = Graph("ask")
        g.add_node("a", noop)
        seen = []
        g.add_edge(START, "a", when=lambda s, ctx: seen.append(ctx) or True)
        g.add_edge("a", END)
        g.route({})
        with pytest.raises(RuntimeError, match="request_input\\(\\) needs a running node"):
            asyncio.run(seen[0].request_input("name?"))
        assert seen[0].thread is None and seen[0].graph == "ask"

    def test_fork_routes_with_a_context_and_the_graph_as_it_is_now(self):
        from nbgraph import Fork, MemoryCheckpointer

        store = MemoryCheckpointer()
        first = self.graph().invoke({}, checkpointer=store)
        edited = Graph("ctx")
        for name in "abc":
            edited.add_node(name, noop)
        edited.add_edge(START, "a")
        edited.add_edge("a", "c", when=lambda s, ctx: ctx.visit == 1 and ctx.step == 1, label="first visit")
        edited.add_edge("a", "b")
        edited.add_edge("b", END)
        edited.add_edge("c", END)
        forked = edited.invoke(Fork(first, step=1), checkpointer=store)
        assert forked.path == ["a", "c"]


def test_graph_syntax_error_is_part_of_the_error_tree():
    import nbgraph
    from nbgraph.dsl import parse

    assert issubclass(nbgraph.GraphSyntaxError, nbgraph.NbgraphError)
    assert issubclass(nbgraph.GraphSyntaxError, SyntaxError)
    with pytest.raises(nbgraph.GraphSyntaxError, match="line 1, column 10: node 'nope' is not defined"):
        parse("START -> nope -> END", {}, "g")
