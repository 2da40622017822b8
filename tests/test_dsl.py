"""The %%graph language: every construct and every mistake."""

from __future__ import annotations

import gc
import time
from types import SimpleNamespace

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
        g = parse("# a comment line\n\n   START -> research   # trailing\n\nresearch -> END\n", NS, "c")
        assert len(g.edges) == 2

    def test_hash_inside_a_condition_string_is_not_a_comment(self):
        g = parse(
            'START -> research\nresearch -> END if state.q != "#"  # real comment\nresearch -> analyze\nanalyze -> END',
            NS,
            "h",
        )
        assert next(e for e in g.edges if e.source == "research").label == 'state.q != "#"'
        assert g.invoke({"q": "x"}).path == ["research"]

    def test_hash_inside_a_string_with_no_comment_after_it(self):
        g = parse('START -> research\nresearch -> END if state.q != "#"\nresearch -> analyze\nanalyze -> END', NS, "h")
        assert g.edges[1].label == 'state.q != "#"'

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
        g = parse("START -> review [approval, on_deny=rewrite, no_feedback]\nreview -> END\nrewrite -> END", NS, "opts")
        spec = g.nodes["review"]
        assert (spec.approval, spec.on_deny, spec.feedback) == ("after", "rewrite", False)
        gated = parse("START -> send [approval=before]\nsend -> END", {"send": lambda s: None}, "gate").nodes["send"]
        assert gated.approval == "before"

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
        assert error.message == "node 'data' must be a function or a Graph, but data is a list"

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
        error = error_of(
            "START -> review\nreview -> END | publish via route_review\nreview -> END | rewrite via route_review"
        )
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


def plan(state):
    return {"items": [1, 2, 3]}


def a(state):
    return None


def b(state):
    return None


def c(state):
    return None


def merge(state):
    return None


def worker(item):
    return None


def to_query(state):
    return {"q": state.topic}


def from_report(state):
    return {"report": state.summary}


PNS = {name: obj for name, obj in globals().items() if callable(obj) and not isinstance(obj, type)}


def edges_of(g: Graph) -> list[tuple]:
    """The edge records without the compiled functions (compared separately)."""
    return [(e.source, e.target, e.label, e.fanout, e.join, e.when is not None, e.each is not None) for e in g.edges]


class TestFanOutAndJoin:
    def test_fan_out_and_join_build_the_same_edges_as_the_python_api(self):
        g = parse("START -> plan -> a & b & c\na & b & c -> merge -> END", PNS, "p")
        api = Graph("p")
        for name in ("plan", "a", "b", "c", "merge"):
            api.add_node(name, PNS[name])
        api.add_edge(START, "plan")
        api.add_edge("plan", ["a", "b", "c"])
        api.add_edge(["a", "b", "c"], "merge")
        api.add_edge("merge", END)
        assert g.edges == api.edges
        assert g.edges[1] == ("plan", "a", None, None, ("a", "b", "c"), None, ())
        assert [e.join for e in g.edges[2:5]] == [("a", "b", "c")] * 3
        assert g.compile().nodes.keys() == api.compile().nodes.keys()

    def test_a_chain_fans_out_then_joins(self):
        g = parse("START -> plan -> a & b -> merge -> END", PNS, "p")
        assert edges_of(g) == [
            (START, "plan", None, (), (), False, False),
            ("plan", "a", None, ("a", "b"), (), False, False),
            ("a", "merge", None, (), ("a", "b"), False, False),
            ("b", "merge", None, (), ("a", "b"), False, False),
            ("merge", END, None, (), (), False, False),
        ]

    def test_fan_out_with_a_condition_and_a_fallback(self):
        g = parse("START -> plan\nplan -> a & b if state.ready\nplan -> merge\na & b -> merge -> END", PNS, "p")
        edge = g.edges[1]
        assert (edge.source, edge.fanout, edge.label) == ("plan", ("a", "b"), "state.ready")
        assert edge.when(SimpleNamespace(ready=True)) is True and edge.when(SimpleNamespace(ready=False)) is False
        assert g.edges[2] == ("plan", "merge", None, None, (), None, ())

    def test_a_join_may_carry_a_condition(self):
        g = parse("START -> a & b\na & b -> merge if state.ok\na -> END\nb -> END\nmerge -> END", PNS, "p")
        joined = [e for e in g.edges if e.target == "merge"]
        assert [(e.source, e.join, e.label) for e in joined] == [
            ("a", ("a", "b"), "state.ok"),
            ("b", ("a", "b"), "state.ok"),
        ]

    def test_options_inside_a_group(self):
        g = parse("START -> plan -> a [approval] & b\na & b -> merge -> END", PNS, "p")
        assert g.nodes["a"].approval and g.edges[1].fanout == ("a", "b")


class TestMap:
    def test_map_compiles_the_items_expression_once(self):
        g = parse("START -> plan\nplan -> worker for item in state.items\nworker -> END", PNS, "m")
        edge = g.edges[1]
        assert (edge.source, edge.target, edge.label, edge.when, edge.fanout) == (
            "plan",
            "worker",
            "for item in state.items",
            None,
            (),
        )
        assert edge.each(SimpleNamespace(items=[1, 2])) == [1, 2]
        assert edge.each.__code__.co_argcount == 1  # state only: the cheaper form

    def test_map_items_may_read_ctx_and_namespace_helpers(self):
        g = parse(
            "START -> plan\nplan -> worker for n in chunks(state, ctx.visit)\nworker -> END",
            {**PNS, "chunks": lambda s, k: [k] * 2},
            "m",
        )
        each = g.edges[1].each
        assert each.__code__.co_argcount == 2
        assert each(None, SimpleNamespace(visit=3)) == [3, 3]

    def test_map_then_a_condition_on_the_edge(self):
        g = parse(
            "START -> plan\nplan -> worker for t in state.tasks if state.go\nplan -> END\nworker -> END", PNS, "m"
        )
        edge = g.edges[1]
        assert edge.label == "for t in state.tasks if state.go"
        assert edge.each(SimpleNamespace(tasks="xy")) == "xy"
        assert edge.when(SimpleNamespace(go=False)) is False

    def test_items_end_at_the_first_if_outside_brackets_and_strings(self):
        g = parse(
            'START -> plan\nplan -> worker for t in (state.a if state.c else state["if"]) if state.go\n'
            "plan -> END\nworker -> END",
            PNS,
            "m",
        )
        edge = g.edges[1]
        assert edge.each(SimpleNamespace(a=[1], c=True)) == [1]
        assert edge.when(SimpleNamespace(go=True)) is True
        assert edge.label == 'for t in (state.a if state.c else state["if"]) if state.go'

    def test_a_join_may_map(self):
        g = parse("START -> a & b\na & b -> worker for t in state.xs\nworker -> END", PNS, "m")
        assert [(e.source, e.join, e.label) for e in g.edges[1:]] == [
            ("a", ("a", "b"), "for t in state.xs"),
            ("b", ("a", "b"), "for t in state.xs"),
            ("worker", (), None),
        ]

    def test_words_that_are_keywords_only_in_place_still_name_nodes(self):
        ns = {"for": lambda s: None, "via": lambda s: None, "in": lambda s: None}
        g = parse("START -> for -> in -> via -> END", ns, "k")
        assert [e.target for e in g.edges] == ["for", "in", "via", END]


class TestSubGraph:
    def sub(self, name="research"):
        return parse("START -> a -> END", PNS, name)

    def test_a_graph_in_the_namespace_is_a_sub_graph_node(self):
        sub = self.sub()
        g = parse("START -> plan -> research -> END", {**PNS, "research": sub}, "outer")
        spec = g.nodes["research"]
        assert spec.graph is sub and (spec.input, spec.output) == (None, None)
        assert "research" in g.compile().nodes

    def test_input_and_output_name_the_mapping_functions(self):
        g = parse("START -> research [input=to_query, output=from_report] -> END", {**PNS, "research": self.sub()}, "o")
        spec = g.nodes["research"]
        assert (spec.input, spec.output) == (to_query, from_report)

    def test_a_graph_from_the_nodes_mapping(self):
        sub = self.sub("inner")
        g = parse("START -> research -> END", PNS, "o", nodes={"research": sub})
        assert g.nodes["research"].graph is sub


class TestNewErrors:
    def check(self, text, message, line, column, namespace=None, **kwargs):
        error = error_of(text, PNS if namespace is None else namespace, **kwargs)
        assert (error.message, error.line, error.column) == (message, line, column)
        return error

    def test_a_group_on_both_sides_of_one_arrow_is_ambiguous(self):
        error = self.check(
            "START -> plan\nplan -> a & b -> c & merge",
            "'a & b -> c & merge' is ambiguous: a join leads into one node and a fan-out leaves one; join into a "
            "node first (a & b -> merge -> c & merge) or write each edge on its own line",
            2,
            15,
        )
        assert str(error).splitlines()[2] == "                  ^"

    def test_a_node_line_names_one_node(self):
        self.check(
            "START -> a -> END\na & b",
            "'&' belongs in an edge: a -> b & c fans out, a & b -> c joins; a line without '->' names one node",
            2,
            3,
        )

    def test_a_node_listed_twice(self):
        self.check("START -> plan -> a & b & a", "node 'a' appears twice in 'a & b & a'", 1, 26)

    def test_start_cannot_join(self):
        self.check("START & a -> b", "START cannot be part of a join; START -> a & b fans out from it", 1, 1)

    def test_end_cannot_fan_out(self):
        self.check(
            "START -> a & b\na -> END & b",
            "END cannot be part of a fan-out; end each branch on its own line (a -> END)",
            2,
            6,
        )

    def test_a_join_into_end(self):
        self.check(
            "START -> a & b -> END",
            "a join leads into a node, and END is not one; end each branch on its own line (a -> END)",
            1,
            19,
        )

    def test_empty_member_of_a_group(self):
        self.check("START -> a &  -> END", "expected a node name, START or END, found nothing", 1, 15)  # at the arrow

    def test_a_node_joins_one_set(self):
        self.check(
            "START -> a & b\na & b -> merge\nb & a -> merge\nmerge -> END",
            "node 'merge' already joins a & b (line 2); a node waits for one set of nodes",
            3,
            10,
        )

    def test_a_router_has_no_groups(self):
        self.check(
            "START -> plan\nplan -> a & b | END via route_review",
            "a router picks one target; '&' has no place in a router line",
            2,
            11,
        )

    def test_a_router_takes_no_condition_or_map(self):
        self.check(
            "START -> plan\nplan -> a | b via route_review if state.x",
            "a router's function picks the target; a router line takes no 'if' condition",
            2,
            32,
        )
        self.check(
            "START -> plan\nplan -> a | b via route_review for t in x",
            "a router's function picks one target; a router line takes no 'for' map",
            2,
            32,
        )

    def test_a_map_has_one_target(self):
        self.check(
            "START -> plan\nplan -> a & b for t in state.xs",
            "a map runs one node per item; give it one target, not 'a & b'",
            2,
            9,
        )
        self.check(
            "START -> plan\nplan -> END for t in state.xs", "a map runs a node per item, and END is not a node", 2, 9
        )

    def test_a_map_belongs_to_one_edge(self):
        self.check(
            "START -> plan -> worker for t in state.xs",
            "a map belongs to one edge; split the chain into separate lines",
            1,
            25,
        )
        self.check("worker for t in state.xs", "a map needs an edge before it: a -> worker for item in ITEMS", 1, 8)

    def test_malformed_map_clauses(self):
        self.check("START -> plan\nplan -> worker for", "'for' needs a loop variable: for item in ITEMS", 2, 19)
        self.check(
            "START -> plan\nplan -> worker for in state.xs", "'for' needs a loop variable: for item in ITEMS", 2, 20
        )
        self.check(
            "START -> plan\nplan -> worker for 9 in x", "'9' cannot name the items; write for item in ITEMS", 2, 20
        )
        self.check("START -> plan\nplan -> worker for t of x", "expected 'in' after 'for t': for t in ITEMS", 2, 22)
        self.check("START -> plan\nplan -> worker for t in  ", "'for t in' needs the items to map over", 2, 24)
        self.check("START -> plan\nplan -> worker for t in state.x if ", "'if' needs a condition after it", 2, 35)

    def test_invalid_items_point_inside_them(self):
        error = self.check(
            "START -> plan\nplan -> worker for t in state.xs[", "invalid map expression: '[' was never closed", 2, 33
        )
        assert error.line == 2

    def test_the_condition_after_a_map_cannot_use_the_loop_variable(self):
        self.check(
            "START -> plan\nplan -> worker for t in state.tasks if t.ok",
            "the 'if' after a map is the edge's condition, tested on the state before mapping; it cannot use 't' "
            "(filter the items instead: for t in [t for t in ITEMS if ...])",
            2,
            40,
        )

    def test_a_conditional_expression_in_the_items_needs_parentheses(self):
        error = error_of("START -> plan\nplan -> worker for t in state.a if state.c else state.b", PNS)
        assert error.message == (
            "invalid condition: invalid syntax; the items end at their first 'if': put a conditional "
            "expression in parentheses"
        )
        assert (error.line, error.column) == (2, 44)

    def test_sub_graph_mapping_errors(self):
        ns = {**PNS, "research": parse("START -> a -> END", PNS, "research"), "three": 3}
        self.check(
            "START -> research [input=to_query] -> END",
            "node 'research': give a sub-graph both input= and output=, or neither (it then shares the state)",
            1,
            26,
            ns,
        )
        self.check(
            "START -> research [input=to_query, output=three] -> END",
            "output function 'three' is a int, not a function",
            1,
            43,
            ns,
        )
        self.check(
            "START -> research [input=to_qery, output=from_report] -> END",
            "input function 'to_qery' is not defined (did you mean 'to_query'?)",
            1,
            26,
            ns,
        )
        self.check(
            "START -> plan [input=to_query, output=from_report] -> END",
            "node 'plan': input= maps the state into and out of a sub-graph, but plan is a function, not a Graph",
            1,
            22,
            ns,
        )
        self.check(
            "START -> research [input = to_query] -> END",
            "unknown option 'input = to_query' for node 'research'; options are approval, approval=before, "
            "deadline=SECONDS[:approve], no_feedback, on_deny=NAME, destinations=A|B, input=FN, output=FN",
            1,
            20,
            ns,
        )
        self.check("START -> research [output=9] -> END", "output needs the name of a function, got '9'", 1, 20, ns)

    def test_a_graph_cannot_be_its_own_node(self):
        ns = {**PNS, "research": parse("START -> a -> END", PNS, "research")}
        with pytest.raises(GraphSyntaxError) as info:
            parse("START -> research -> END", ns, "research")  # re-running `%%graph research` over its own result
        assert (info.value.message, info.value.line, info.value.column) == (
            (
                "node 'research' is a graph named 'research', the graph this cell defines, and a graph cannot run "
                "inside itself (the name may still hold this cell's previous result): rename the node or the graph"
            ),
            1,
            10,
        )

    def test_undefined_node_suggests_graphs_too(self):
        ns = {**PNS, "research": parse("START -> a -> END", PNS, "research")}
        assert error_of("START -> reserch -> END", ns).message.endswith("(did you mean 'research'?)")


class TestRobustness:
    def test_a_condition_at_the_nesting_limit_of_the_wrapper(self):
        # Somewhere near 200 parentheses the bare expression compiles but `lambda state: (EXPR)` does not.
        seen_the_edge = False
        for depth in range(180, 220):
            expr = "(" * depth + "1" + ")" * depth
            try:
                compile(expr, "x", "eval")
                compile(f"lambda state: ({expr}\n)", "x", "eval")
            except SyntaxError:
                try:
                    compile(expr, "x", "eval")
                    seen_the_edge = True
                except SyntaxError:
                    pass
            try:
                parse(f"START -> a\na -> END if {expr}", PNS, "deep")
            except GraphSyntaxError as error:
                assert error.message == "invalid condition: too many nested parentheses"
                assert error.line == 2 and len("a -> END if ") < error.column <= len("a -> END if ") + depth
        assert seen_the_edge

    @pytest.mark.parametrize("expr", ["not " * 100_000 + "1", "-" * 100_000 + "1", "1" + "+1" * 100_000])
    @pytest.mark.parametrize("where", ["a -> END if {}", "a -> worker for t in {}"])
    def test_too_deep_to_compile_is_a_message(self, expr, where):
        error = error_of("START -> a\n" + where.format(expr) + "\nworker -> END", PNS)
        what = "condition" if " if " in where else "map expression"
        assert error.message == f"invalid {what}: nested too deeply to compile; simplify it or move it into a function"
        assert (error.line, error.column) == (2, len(where.split("{")[0]) + 1)

    def test_a_router_that_cannot_take_the_state(self):
        def route0():
            return "a"

        def route3(state, ctx, extra):
            return "a"

        for router in (route0, route3):
            error = error_of(
                f"START -> plan\nplan -> a | END via {router.__name__}\na -> END", {**PNS, router.__name__: router}
            )
            assert error.message == (
                f"router {router.__name__!r} cannot take the state: it is called as {router.__name__}(state) or "
                f"{router.__name__}(state, ctx) and returns the next node's name"
            )
            assert (error.line, error.column) == (2, len("plan -> a | END via ") + 1)

    @pytest.mark.parametrize(
        "text",
        [
            " " * 65536,
            "a" + " " * 65536 + "b",
            "START -> a -> END" + " " * 65536 + "x",
            "START -> a -> b | END via" + " " * 65536 + "f g",
            "START -> a -> b for t in" + " " * 65536 + "x if" + " " * 65536,
            " " * 65536 + "# comment",
        ],
    )
    def test_64_kb_lines_end_in_the_language_error(self, text):
        try:
            parse(text, PNS, "long")
        except GraphSyntaxError as error:
            assert error.line == 1 and error.message and len(error.message) < 300

    def test_a_long_chain_parses_and_its_dead_edges_are_named_in_short(self):
        with pytest.raises(GraphSyntaxError, match=r"can never be taken") as refused:
            parse("START -> " + "a -> " * 13_000 + "END", PNS, "chain")
        said = str(refused.value).splitlines()[0]  # (the lines after it quote the cell)
        assert "(and 12,996 more)" in said and len(said) < 600

    @pytest.mark.parametrize(
        ("shape", "size"),
        [
            (lambda n: "a" + " " * n + "b", 8192),
            (lambda n: "START -> a -> END" + " " * n + "x", 8192),
            (lambda n: "START -> a -> b | END via" + " " * n + "f g", 8192),
            (lambda n: "via" + " " * n + "x y", 8192),
            (lambda n: "START -> a [" + " " * n + "]x", 8192),
            (lambda n: "START -> a\na -> b for t in" + " " * n + "if" + " " * n + "x", 8192),
            (lambda n: "START -> " + "a -> " * (n // 5) + "END", 8192),
            (lambda n: "START -> a\na -> b for t in state[" + "'if', " * (n // 6) + "]", 8192),
            # Cheap per character: larger texts, so that a quadratic rescan per separator shows.
            (lambda n: "START -> " + " & ".join(f"n{i}" for i in range(n // 7)), 32768),
            (lambda n: "START -> a -> " + " | ".join(["b"] * (n // 4)) + " via route_review", 65536),
        ],
        ids=["name", "endpoint", "via", "via-only", "options", "map", "chain", "strings", "group", "router"],
    )
    def test_parsing_time_grows_linearly(self, shape, size):
        """Eight times the text (8 KB -> 64 KB, or up to 64 KB -> 512 KB) costs about eight times the CPU time;
        a quadratic parser, 64 times.

        CPU time of this process (not wall time), the best of several tries, without the
        garbage collector: other load on the machine hardly moves it, and the bound leaves
        three times the linear ratio.
        """
        small, large = shape(size), shape(8 * size)
        baseline = _cpu_seconds(small, runs=5)
        limit = 24 * baseline + 0.002
        assert _cpu_seconds(large, runs=5, under=limit) < limit, (baseline, limit)


def _cpu_seconds(text: str, *, runs: int, under: float = 0.0) -> float:
    """The least CPU time parsing ``text`` took over ``runs`` tries.

    With ``under``, stops at the first try below it, or once the tries took three times
    it in all (a quadratic parser would otherwise take minutes to fail).
    """
    best = float("inf")
    spent = 0.0
    for _ in range(runs):
        gc.disable()
        started = time.process_time()
        try:
            parse(text, PNS, "timed")
        except GraphSyntaxError:
            pass
        finally:
            took = time.process_time() - started
            gc.enable()
        best = min(best, took)
        spent += took
        if under and (best < under or spent > 3 * under):
            break
    return best


# str.splitlines() ends a line at each of these; Python accepts every one in a string literal or a comment.
NOT_LINE_ENDS = {
    "line separator": "\u2028",
    "paragraph separator": "\u2029",
    "next line": "\x85",
    "form feed": "\x0c",
    "vertical tab": "\x0b",
    "file separator": "\x1c",
    "group separator": "\x1d",
    "record separator": "\x1e",
}


@pytest.mark.parametrize("char", NOT_LINE_ENDS.values(), ids=NOT_LINE_ENDS.keys())
class TestLinesSplitAsPythonSplitsThem:
    def test_a_string_literal_in_a_condition_holds_it(self, char):
        g = parse(f"START -> a\na -> b if state.s == 'x{char}y'\na -> END\nb -> END", PNS, "literal")
        assert g.edges[1].label == f"state.s == 'x{char}y'"
        assert g.invoke({"s": f"x{char}y"}).path == ["a", "b"]
        assert g.invoke({"s": "xy"}).path == ["a"]

    def test_a_comment_holds_it(self, char):
        g = parse(f"START -> a  # a{char}b -> c\na -> END", PNS, "comment")
        assert [(e.source, e.target) for e in g.edges] == [(START, "a"), ("a", END)]

    def test_errors_after_it_name_their_line_and_column(self, char):
        line = f"a -> b if state.s == '{char}' and ("
        error = error_of(f"START -> a  # {char}\n{line}\nb -> END")
        assert (error.line, error.column, error.source_line) == (2, line.index("(") + 1, line)
        assert error.message == "invalid condition: '(' was never closed"
        error = error_of(f"START -> a if '{char}' == state.s  # {char}\na -> END\nnope -> END", PNS)
        assert (error.line, error.column, error.source_line) == (3, 1, "nope -> END")

    def test_a_node_body_keeps_it_in_its_strings_and_comments(self, char):
        fn = compile_node_body("keep", f"text = 'a{char}b'  # c{char}d\nreturn {{'text': text}}", {})
        assert fn(None, None) == {"text": f"a{char}b"}
        with pytest.raises(GraphSyntaxError) as info:
            compile_node_body("late", f"text = 'a{char}b'\nreturn {{'text': text", {}, first_line=2)
        assert (info.value.line, info.value.column, info.value.source_line) == (3, 8, "return {'text': text")


def test_crlf_and_a_lone_cr_end_lines_as_in_python():
    g = parse("START -> a\r\na -> b\rb -> END\r", PNS, "cr")
    assert g.invoke({}).path == ["a", "b"]
    error = error_of("START -> a\r\na -> b\rb -> nope", PNS)
    assert (error.line, error.column, error.source_line) == (3, 6, "b -> nope")
    assert compile_node_body("cr", "x = 1\rreturn {'x': x}\r\n", {})(None, None) == {"x": 1}


class TestNodeBodyErrors:
    def test_a_multi_line_string_keeps_its_text(self):
        fn = compile_node_body("poem", 'text = """one\n  two\n"""\nreturn {"text": text}', {})
        assert fn(None, None) == {"text": "one\n  two\n"}

    @pytest.mark.parametrize(
        ("body", "message", "line", "column"),
        [
            ("x = 1\ncontinue", "'continue' not properly in loop", 3, 1),
            ("for x in state:\n    pass\nbreak", "'break' outside loop", 4, 1),
            ("def inner():\n    nonlocal missing", "no binding for nonlocal 'missing' found", 3, 5),
            ("x = 1\nnonlocal x", "name 'x' is assigned to before nonlocal declaration", 3, 1),
            ("f = lambda: await ctx.ask()", "'await' outside async function", 2, 13),
            ("def inner():\n    from os import *", "import * only allowed at module level", 3, 20),
            ("note = 'é' + 'é'; continue", "'continue' not properly in loop", 2, 19),  # columns count characters
        ],
        ids=["continue", "break", "nonlocal", "nonlocal-after", "await-in-lambda", "star-import", "non-ascii"],
    )
    def test_what_compiling_finds_after_parsing_is_a_language_error(self, body, message, line, column):
        with pytest.raises(GraphSyntaxError) as info:
            compile_node_body("bad", body, {}, first_line=2)
        error = info.value
        assert (error.message, error.line, error.column, error.cell) == (message, line, column, "%%node")
        assert f"%%node cell, line {line}, column {column}: {message}" in str(error)

    @pytest.mark.parametrize(
        ("body", "at"),
        [
            ("x = 1\nreturn " + "-" * 600 + "1", (3, 1)),  # within Python's limits, past this one
            ("x = 1\nreturn " + "-" * 3000 + "1", (3, 1)),  # past Python's (from most stacks) too
            ("x = 1\ny = 2\n  # a comment\nreturn " + "not " * 100_000 + "1", (5, 1)),
            ("return 1" + " + 1" * 100_000, (2, 1)),
            ("if state:\n    return " + "lambda: " * 10_000 + "1", (3, 5)),
            ("if " + "-" * 3000 + "1:\n    pass", (2, 1)),
            ("if a:\n    pass\n" + "elif a:\n    pass\n" * 600, (1000, 1)),  # the elif whose condition is 501 deep
        ],
        ids=["unary-600", "unary-3000", "not-100000", "sum-100000", "lambdas", "block-header", "elif-chain"],
    )
    def test_too_deep_is_refused_at_its_line_with_the_limit(self, body, at):
        with pytest.raises(GraphSyntaxError) as info:
            compile_node_body("deep", body, {}, first_line=2)
        assert info.value.message == (
            "nested too deeply to compile: a %%node body nests at most 500 levels (each bracket, operator, call "
            "and block is one); split it into smaller expressions or functions"
        )
        assert (info.value.line, info.value.column) == at

    def test_the_limit_itself_compiles(self):
        assert compile_node_body("deep", "return " + "-" * 498 + "1", {})(None, None) == 1
        with pytest.raises(GraphSyntaxError, match="at most 500 levels"):
            compile_node_body("deep", "return " + "-" * 499 + "1", {})

    def test_too_many_brackets_is_pythons_own_limit(self):
        with pytest.raises(GraphSyntaxError) as info:
            compile_node_body("deep", "x = 1\nreturn " + "(" * 5000, {}, first_line=2)
        assert (info.value.message, info.value.line, info.value.column) == ("too many nested parentheses", 3, 208)

    @pytest.mark.parametrize("char", ["\x00", "\ud800"], ids=["null", "lone-surrogate"])
    def test_a_character_python_code_cannot_hold(self, char):
        with pytest.raises(GraphSyntaxError) as info:
            compile_node_body("bad", f"x = 1\ntext = 'a{char}b'", {}, first_line=2)
        error = info.value
        assert error.message == f"Python code cannot hold the character {char!a}"
        assert (error.line, error.column, error.source_line) == (3, 10, "text = 'a?b'")


class _CountedName(str):
    """A node name that counts how often it is hashed or compared: the work done per arm of a join."""

    touched = 0

    def __hash__(self) -> int:
        _CountedName.touched += 1
        return str.__hash__(self)

    def __eq__(self, other: object) -> bool:
        _CountedName.touched += 1
        return str.__eq__(self, other)


class TestWideJoins:
    def test_compiling_a_join_touches_each_arm_a_fixed_number_of_times(self):
        def touches(arms: int) -> int:
            names = [_CountedName(f"arm{i}") for i in range(arms)]
            g = Graph("wide")
            for name in names:
                g.add_node(name, a)
            g.add_node("merge", merge)
            g.add_edge(START, names)
            g.add_edge(names, "merge")
            g.add_edge(names, "merge")  # the same join again: a node waits for one set, written twice or not
            g.add_edge("merge", END)
            _CountedName.touched = 0
            g.compile()
            return _CountedName.touched

        small, large = touches(500), touches(2000)
        assert small > 500
        assert large <= 4.5 * small  # four times the arms, four times the work; a quadratic check did sixteen

    def test_a_wide_join_from_the_cell(self):
        arms = [f"arm{i}" for i in range(2000)]
        joined = " & ".join(arms)
        g = parse(f"START -> {joined}\n{joined} -> merge -> END", {**PNS, **{name: a for name in arms}}, "wide")
        joins = [e for e in g.edges if e.join]
        assert [e.source for e in joins] == arms
        assert {e.join for e in joins} == {tuple(arms)} and {e.target for e in joins} == {"merge"}
