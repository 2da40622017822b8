"""The %%graph language: every construct and every mistake."""

from __future__ import annotations

import pytest

from nbgraph import END, START, Graph, GraphWarning
from nbgraph.dsl import GraphSyntaxError, NodeDefinition, compile_condition, compile_node_body, parse


def research(state):
    return {"has_findings": state.q == "deep"}


def analyze(state):
    return {"analyzed": True}


def summarize(state):
    return {"summary": "short" if not state.get("analyzed") else "long"}


def review(state):
    return {"reviewed": state.get("reviewed", 0) + 1}


def publish(state):
    return {"published": True}


def rewrite(state):
    return None


def route_review(state):
    return "publish" if state.reviewed >= 2 else "rewrite"


NS = {name: obj for name, obj in globals().items() if callable(obj)}


def error_of(text: str, namespace=None, **kwargs) -> GraphSyntaxError:
    with pytest.raises(GraphSyntaxError) as info:
        parse(text, NS if namespace is None else namespace, "t", **kwargs)
    return info.value


class TestConstructs:
    def test_the_design_example(self):
        g = parse(
            """
START -> research
research -> analyze     if state.has_findings      # label = the condition text
research -> summarize                              # fallback: first match wins
analyze -> summarize -> END                        # chains
""",
            NS,
            "research",
        )
        assert g.invoke({"q": "deep"}).path == ["research", "analyze", "summarize"]
        assert g.invoke({"q": "shallow"}).path == ["research", "summarize"]
        edge = next(e for e in g.edges if e.target == "analyze")
        assert edge.label == "state.has_findings"

    def test_chain_makes_unconditional_edges(self):
        g = parse("START -> research -> analyze -> summarize -> END", NS, "chain")
        assert [(e.source, e.target, e.unconditional) for e in g.edges] == [
            (START, "research", True),
            ("research", "analyze", True),
            ("analyze", "summarize", True),
            ("summarize", END, True),
        ]

    def test_router_with_targets(self):
        g = parse(
            """
START -> review
review -> publish | rewrite | END via route_review
rewrite -> review
publish -> END
""",
            NS,
            "routed",
        )
        router = g.routers["review"]
        assert router.targets == ("publish", "rewrite", END) and router.fn is route_review
        assert g.invoke({}).path == ["review", "rewrite", "review", "publish"]

    def test_comments_and_blank_lines(self):
        g = parse(
            "# a comment line\n\n   START -> research   # trailing\n\nresearch -> END\n", NS, "c"
        )
        assert len(g.edges) == 2

    def test_hash_inside_a_condition_string_is_not_a_comment(self):
        g = parse('START -> research\nresearch -> END if state.q != "#"  # real comment\nresearch -> analyze\nanalyze -> END', NS, "h")
        assert next(e for e in g.edges if e.source == "research").label == 'state.q != "#"'
        assert g.invoke({"q": "x"}).path == ["research"]

    def test_condition_can_use_ctx_and_namespace_helpers(self):
        namespace = {**NS, "limit": lambda: 2}
        g = parse("START -> review\nreview -> review if ctx.visit < limit()\nreview -> END", namespace, "ctx")
        assert g.invoke({}).path == ["review", "review"]

    def test_condition_is_compiled_once(self):
        from types import SimpleNamespace

        fn = compile_condition("state.n > 1", {})
        assert fn.__code__.co_argcount == 1  # no ctx in the expression: the cheaper form
        assert fn(SimpleNamespace(n=2)) is True and fn(SimpleNamespace(n=1)) is False

    def test_node_options(self):
        g = parse(
            "START -> review [approval, on_deny=rewrite, no_feedback]\nreview -> END\nrewrite -> END", NS, "opts"
        )
        spec = g.nodes["review"]
        assert (spec.approval, spec.on_deny, spec.feedback) == (True, "rewrite", False)

    def test_standalone_node_line_sets_options(self):
        g = parse("START -> publish -> END\npublish [approval]", NS, "alone")
        assert g.nodes["publish"].approval

    def test_graph_options_pass_through(self):
        g = parse("START -> research -> END", NS, "o", max_steps=7, on_max_steps="flag")
        assert (g.max_steps, g.on_max_steps) == (7, "flag")

    def test_nodes_from_node_cells_come_first(self):
        def special(state):
            return {"special": True}

        g = parse(
            "START -> research -> END",
            NS,
            "n",
            nodes={"research": NodeDefinition(special, {"approval": True})},
        )
        assert g.nodes["research"].fn is special and g.nodes["research"].approval

    def test_same_dag_as_the_python_api(self):
        text = """
START -> research
research -> analyze if state.has_findings
research -> summarize
analyze -> summarize -> review
review -> publish | rewrite | END via route_review
rewrite -> review
publish -> END
"""
        from_cell = parse(text, NS, "same")
        g = Graph("same")
        for name in ("research", "analyze", "summarize", "review", "publish", "rewrite"):
            g.add_node(name, NS[name])
        g.add_edge(START, "research")
        g.add_edge("research", "analyze", when=lambda s: s.has_findings, label="state.has_findings")
        g.add_edge("research", "summarize")
        g.add_edge("analyze", "summarize")
        g.add_edge("summarize", "review")
        g.add_router("review", route_review, targets=["publish", "rewrite", END])
        g.add_edge("rewrite", "review")
        g.add_edge("publish", END)
        assert from_cell.to_dag() == g.to_dag()
        assert from_cell.invoke({"q": "deep"}).path == g.invoke({"q": "deep"}).path


class TestNodeBody:
    def test_sync_body(self):
        import inspect
        from types import SimpleNamespace

        fn = compile_node_body("shout", "text = state.q.upper()\nreturn {'text': text}", {})
        assert fn(SimpleNamespace(q="hi"), None) == {"text": "HI"}
        assert not inspect.iscoroutinefunction(fn)

    def test_await_makes_it_async(self):
        import inspect

        fn = compile_node_body("ask", "answer = await ctx.request_input('ok?')\nreturn {'a': answer}", {})
        assert inspect.iscoroutinefunction(fn)

    def test_empty_body_is_a_no_op(self):
        assert compile_node_body("nothing", "# only a comment", {})(None, None) is None

    def test_body_sees_the_namespace(self):
        fn = compile_node_body("use", "return {'x': helper()}", {"helper": lambda: 42})
        assert fn(None, None) == {"x": 42}

    def test_syntax_error_points_into_the_body(self):
        with pytest.raises(GraphSyntaxError) as info:
            compile_node_body("bad", "x = 1\nreturn {'x': x", {}, first_line=2)
        error = info.value
        assert (error.line, error.cell) == (3, "%%node")
        assert "return {'x': x" in str(error)


class TestErrors:
    def test_undefined_node_suggests_close_names(self):
        error = error_of("START -> reserch -> END")
        assert (error.line, error.column) == (1, 10)
        assert "node 'reserch' is not defined" in error.message
        assert "(did you mean 'research'?)" in error.message
        assert str(error).splitlines()[1:] == ["    START -> reserch -> END", "             ^"]

    def test_line_numbers_count_from_first_line(self):
        error = error_of("START -> research\n\nresearch -> nope", first_line=2)
        assert error.line == 4

    def test_not_a_function(self):
        error = error_of("START -> data -> END", {"data": [1, 2]})
        assert error.message == "node 'data' must be a function, but data is a list"

    def test_condition_syntax_error_points_inside_the_condition(self):
        error = error_of("START -> research\nresearch -> END if state.q ==== 1")
        assert error.line == 2
        assert error.message.startswith("invalid condition:")
        assert error.column > len("research -> END if ")

    def test_unclosed_bracket_in_condition(self):
        error = error_of("START -> research\nresearch -> END if (state.q")
        assert "'(' was never closed" in error.message
        assert error.column == len("research -> END if ") + 1

    def test_empty_condition(self):
        assert error_of("START -> research\nresearch -> END if ").message == "'if' needs a condition after it"

    def test_condition_on_a_chain(self):
        error = error_of("START -> research -> END if state.x")
        assert "a condition belongs to one edge" in error.message

    def test_condition_without_edge(self):
        assert "a condition needs an edge" in error_of("research if state.x").message

    def test_missing_endpoint(self):
        error = error_of("START -> -> research")
        assert error.message == "expected a node name, START or END, found nothing"
        assert error.column == 10  # under the second arrow, where a name should be

    def test_bad_node_name(self):
        error = error_of("START -> 9lives -> END")
        assert error.message == "expected a node name, START or END, got '9lives'"

    def test_edge_from_end(self):
        assert error_of("END -> research").message == "END is terminal; no edge may leave it"

    def test_start_in_the_middle(self):
        assert error_of("research -> START").message == "START can only begin an edge"

    def test_unknown_router(self):
        error = error_of("START -> review\nreview -> publish | END via route_reveiw\npublish -> END")
        assert "router 'route_reveiw' is not defined (did you mean 'route_review'?)" == error.message
        assert error.column == len("review -> publish | END via ") + 1

    def test_router_not_callable(self):
        error = error_of("START -> review\nreview -> END | publish via x\npublish -> END", {**NS, "x": 3})
        assert error.message == "router 'x' is a int, not a function"

    def test_via_without_name(self):
        assert error_of("START -> review\nreview -> publish | END via").message == (
            "'via' needs the name of a routing function"
        )

    def test_bar_without_via(self):
        assert "'|' lists router targets" in error_of("START -> review -> publish | END").message

    def test_two_routers_for_one_node(self):
        error = error_of("START -> review\nreview -> END | publish via route_review\nreview -> END | rewrite via route_review")
        assert error.message == "node 'review' already has a router (line 2)"

    def test_unknown_option(self):
        error = error_of("START -> review [aproval] -> END")
        assert error.message.startswith("unknown option 'aproval' for node 'review'")
        assert error.column == len("START -> review [") + 1

    def test_build_rules_point_at_the_node(self):
        error = error_of("START -> research\nresearch -> analyze\nanalyze [approval]")
        assert error.line == 2 and "node 'analyze' has no outgoing edge" in error.message

    def test_router_and_edges_on_one_node(self):
        error = error_of("START -> review\nreview -> END\nreview -> publish | END via route_review\npublish -> END")
        assert "has both edges and a router" in error.message

    def test_no_nodes(self):
        assert "the cell defines no nodes" in error_of("# nothing here\n").message

    def test_missing_start(self):
        error = error_of("research -> END")
        assert "no start" in error.message and error.line == 1

    def test_unreachable_node_is_a_warning_not_an_error(self):
        with pytest.warns(GraphWarning, match="'analyze' cannot be reached"):
            parse("START -> research -> END\nanalyze -> END", NS, "w")

    def test_error_is_a_syntax_error_for_ipython(self):
        error = error_of("START -> nope")
        assert isinstance(error, SyntaxError)
        assert (error.lineno, error.offset, error.text) == (1, 10, "START -> nope")


def test_destinations_option_declares_where_a_goto_may_lead():
    import warnings

    from nbgraph import Goto

    def triage(state):
        return Goto("urgent")

    ns = {"triage": triage, "urgent": lambda s: None, "later": lambda s: None}
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        g = parse("START -> triage [destinations=urgent|later|END] -> END\nurgent -> END\nlater -> END", ns, "t")
    assert g.nodes["triage"].destinations == ("urgent", "later", "__end__")
    assert g.invoke({}).path == ["triage", "urgent"]
    with pytest.raises(GraphSyntaxError, match="destinations needs node names separated by '|', got '2x'"):
        parse("START -> triage [destinations=urgent|2x] -> END", ns, "t")
    with pytest.raises(GraphSyntaxError, match="line 1, column 10: node 'triage': destination 'nowhere' is not a node"):
        parse("START -> triage [destinations=nowhere] -> END", ns, "t")
