"""Exports of graphs with fan-out, joins, maps and sub-graphs: DAG JSON, mermaid, NDJSON."""

from __future__ import annotations

import asyncio
import json
from typing import Annotated

import pydantic

from nbgraph import END, START, Goto, Graph, Resume, Send, append, parse_ndjson
from nbgraph.export import find_problems, to_dag


class Items(pydantic.BaseModel):
    done: Annotated[list[str], append] = []


def noop(state):
    return None


def inner_graph() -> Graph:
    inner = Graph("inner", state=Items)
    inner.add_node("a", lambda s: {"done": ["a"]})
    inner.add_node("b", lambda s: {"done": ["b"]})
    inner.add_edge(START, "a")
    inner.add_edge("a", "b")
    inner.add_edge("b", END)
    return inner


def shaped_graph() -> Graph:
    """plan fans out to x and y, which join into merge; merge maps work over three
    items; work leads into a sub-graph node; then done."""
    g = Graph("outer", state=Items)
    for name in ("plan", "x", "y", "merge", "done"):
        g.add_node(name, noop)
    g.add_node("work", lambda item: {"done": [f"work {item}"]})
    g.add_node("research", inner_graph())
    g.add_edge(START, "plan")
    g.add_edge("plan", ["x", "y"])
    g.add_edge(["x", "y"], "merge")
    g.add_edge("merge", "work", each=lambda s: [1, 2, 3])
    g.add_edge("work", "research")
    g.add_edge("research", "done")
    g.add_edge("done", END)
    return g


def edges_of(dag):
    return {(e["from"], e["to"]): e for e in dag["edges"]}


def refund_desk() -> Graph:
    """big_refund asks a person first; a denial sends the run to hand_over, which no edge leads to."""
    g = Graph("desk", state=Items)
    g.add_node("big_refund", lambda s: {"done": ["paid"]}, approval="before", on_deny="hand_over")
    g.add_node("hand_over", lambda s: {"done": ["handed over"]})
    g.add_edge(START, "big_refund")
    g.add_edge("big_refund", END)
    g.add_edge("hand_over", END)
    return g


class TestDag:
    def test_fan_out_arms_name_every_target_and_join_arms_every_source(self):
        edges = edges_of(shaped_graph().to_dag())
        assert edges[("plan", "x")]["fanout"] == ["x", "y"]
        assert edges[("plan", "y")]["fanout"] == ["x", "y"]
        assert edges[("x", "merge")]["join"] == ["x", "y"]
        assert edges[("y", "merge")]["join"] == ["x", "y"]
        assert "fanout" not in edges[("merge", "work")] and "join" not in edges[("work", "research")]

    def test_a_map_edge_and_its_target_are_marked(self):
        dag = shaped_graph().to_dag()
        assert edges_of(dag)[("merge", "work")]["each"] is True
        maps = [node["id"] for node in dag["nodes"] if node.get("map")]
        assert maps == ["work"]

    def test_a_sub_graph_node_holds_its_graph(self):
        dag = shaped_graph().to_dag()
        assert dag["version"] == "1.3"
        research = next(node for node in dag["nodes"] if node["id"] == "research")
        assert research["kind"] == "graph"
        inner = research["graph"]
        assert inner["name"] == "inner"
        assert [node["id"] for node in inner["nodes"]] == [START, "a", "b", END]
        assert [(e["from"], e["to"]) for e in inner["edges"]] == [(START, "a"), ("a", "b"), ("b", END)]
        assert "mapping" not in research

    def test_a_mapped_sub_graph_says_so(self):
        g = Graph("outer", state=Items)
        g.add_node("research", inner_graph(), input=lambda s: {}, output=lambda s: {"done": s.done})
        g.add_edge(START, "research")
        g.add_edge("research", END)
        research = g.to_dag()["nodes"][1]
        assert research["mapping"] is True

    def test_after_a_run_every_level_counts_its_own_visits_and_edges(self):
        result = shaped_graph().invoke({})
        assert result.outcome == "done", result.reason
        dag = result.to_dag()
        visits = {node["id"]: node.get("visits") for node in dag["nodes"]}
        assert visits == {
            START: None,
            "plan": 1,
            "x": 1,
            "y": 1,
            "merge": 1,
            "work": 3,
            "research": 1,
            "done": 1,
            END: None,
        }
        edges = edges_of(dag)
        assert edges[("plan", "x")]["fired"] == edges[("plan", "y")]["fired"] == 1
        assert edges[("merge", "work")]["fired"] == 1  # the map is one routing, its three branches run it
        assert edges[("work", "research")]["fired"] == 1  # and routing goes on once, after all of them
        inner = next(node for node in dag["nodes"] if node["id"] == "research")["graph"]
        assert {node["id"]: node.get("visits") for node in inner["nodes"]} == {START: None, "a": 1, "b": 1, END: None}
        assert all(edge["fired"] == 1 for edge in inner["edges"])

    def test_sub_graphs_nest_three_levels_deep(self):
        deepest = inner_graph()
        middle = Graph("middle", state=Items)
        middle.add_node("deep", deepest)
        middle.add_edge(START, "deep")
        middle.add_edge("deep", END)
        outer = Graph("outer", state=Items)
        outer.add_node("mid", middle)
        outer.add_edge(START, "mid")
        outer.add_edge("mid", END)
        result = outer.invoke({})
        assert result.state.done == ["a", "b"]
        mid = result.to_dag()["nodes"][1]
        deep = mid["graph"]["nodes"][1]
        assert (mid["visits"], deep["id"], deep["visits"]) == (1, "deep", 1)
        assert [(node["id"], node.get("visits")) for node in deep["graph"]["nodes"]] == [
            (START, None),
            ("a", 1),
            ("b", 1),
            (END, None),
        ]

    def test_send_edges_are_drawn_when_declared_and_once_taken(self):
        declared = Graph("declared", state=Items)
        declared.add_node("plan", lambda s: [Send("work", "p"), Send("work", "q")], destinations=["work"])
        declared.add_node("work", lambda item: {"done": [item]})
        declared.add_edge(START, "plan")
        declared.add_edge("work", END)
        assert edges_of(declared.to_dag())[("plan", "work")]["goto"] is True  # drawn before any run
        result = declared.invoke({})
        assert result.state.done == ["p", "q"]
        assert edges_of(result.to_dag())[("plan", "work")]["fired"] == 1

        undeclared = Graph("undeclared", state=Items)
        undeclared.add_node("plan", lambda s: [Send("work", "p")])
        undeclared.add_node("work", lambda item: {"done": [item]})
        undeclared.add_edge(START, "plan")
        undeclared.add_edge("plan", END)  # what its Sends replace
        undeclared.add_edge("work", END)
        assert ("plan", "work") not in edges_of(undeclared.to_dag())
        taken = edges_of(undeclared.invoke({}).to_dag())[("plan", "work")]
        assert (taken["dynamic"], taken["fired"]) == (True, 1)

    def test_a_denial_is_drawn_as_an_edge_to_its_target_and_counted_once_taken(self):
        g = refund_desk()
        edge = edges_of(g.to_dag())[("big_refund", "hand_over")]
        assert edge == {
            "from": "big_refund",
            "to": "hand_over",
            "label": "denied",
            "unconditional": False,
            "denied": True,
        }
        assert edges_of(to_dag(g.compile()))[("big_refund", "hand_over")]["denied"] is True  # the plan draws it too
        assert find_problems(g) == []  # hand_over is reached, by a denial
        paused = g.invoke({})
        denied = g.invoke(Resume(paused, False))
        assert denied.path == ["big_refund", "hand_over"]
        drawn = edges_of(denied.to_dag())
        assert drawn[("big_refund", "hand_over")]["fired"] == 1
        assert drawn[("big_refund", END)]["fired"] == 0
        assert not any(edge.get("dynamic") for edge in drawn.values())  # the denial took the drawn edge

    def test_a_send_outside_the_declared_destinations_fails_the_run(self):
        g = Graph("strict", state=Items)
        g.add_node("plan", lambda s: [Send("work", "p"), Send("other", "q")], destinations=["work"])
        g.add_node("work", lambda item: {"done": [item]})
        g.add_node("other", lambda item: {"done": [item]})
        g.add_edge(START, "plan")
        g.add_edge("work", "other")
        g.add_edge("other", END)
        result = g.invoke({})
        assert result.outcome == "failed"
        assert "node 'plan' sent to 'other', but it declares destinations=['work']" in result.reason


class TestMermaid:
    def test_a_sub_graph_is_a_subgraph_block_with_its_own_start_and_end(self):
        text = shaped_graph().to_mermaid()
        lines = text.splitlines()
        opened = lines.index('    subgraph n_research ["research"]')
        closed = lines.index("    end", opened)
        block = lines[opened + 1 : closed]
        assert block == [
            "        direction TB",
            '        n_research____start__(["START"])',
            '        n_research__n_a["a"]',
            '        n_research__n_b["b"]',
            '        n_research____end__(["END"])',
            "        n_research____start__ -.-> n_research__n_a",
            "        n_research__n_a -.-> n_research__n_b",
            "        n_research__n_b -.-> n_research____end__",
        ]
        # The parent's edges meet the block itself.
        assert "    n_work -.-> n_research" in lines
        assert "    n_research -.-> n_done" in lines

    def test_fan_out_join_and_map_edges_are_thick(self):
        lines = shaped_graph().to_mermaid().splitlines()
        for edge in ("n_plan ==> n_x", "n_plan ==> n_y", "n_x ==> n_merge", "n_y ==> n_merge"):
            assert f"    {edge}" in lines
        assert '    n_merge ==>|"each item"| n_work' in lines
        assert '    n_work[["work ×N"]]' in lines

    def test_a_denial_is_a_dotted_edge_labelled_denied(self):
        lines = refund_desk().to_mermaid().splitlines()
        assert "    n_big_refund -. denied .-> n_hand_over" in lines
        assert "    n_hand_over -.-> __end__" in lines

    def test_node_ids_stay_unique_across_levels(self):
        text = shaped_graph().to_mermaid()
        declared = [
            line.strip().split("[", 1)[0].split("(", 1)[0]
            for line in text.splitlines()
            if '"]' in line and "-->" not in line
        ]
        assert len(declared) == len(set(declared))


def test_ndjson_carries_path_and_branch_on_every_event():
    g = shaped_graph()

    async def run():
        events = []
        result = await g.ainvoke({}, on_event=events.append)
        return result, events

    result, events = asyncio.run(run())
    assert result.outcome == "done"
    text = result.to_ndjson()
    lines = [json.loads(line) for line in text.splitlines()]
    assert all("path" in line and "branch" in line for line in lines)
    assert {(line["path"], line["branch"]) for line in lines if line["type"] == "node-enter"} >= {
        ("x", "x"),
        ("y", "y"),
        ("work", "work[0]"),
        ("work", "work[2]"),
        ("research/a", None),
        ("research", None),
    }
    parsed = list(parse_ndjson(text))
    assert [event.type for event in parsed] == [line["type"] for line in lines]


def found(problems):
    return sorted((p["kind"], p.get("node") or (p["edge"]["from"], p["edge"]["to"])) for p in problems)


class TestProblems:
    def test_unreachable_nodes_and_loops_with_no_way_to_end(self):
        g = Graph("loops", state=Items)
        for name in ("a", "b", "c", "lost"):
            g.add_node(name, noop)
        g.add_edge(START, "a")
        g.add_edge("a", "b", when=lambda s: True, label="go")
        g.add_edge("a", END)
        g.add_edge("b", "c")
        g.add_edge("c", "b")  # b and c only lead to each other
        g.add_edge("lost", END)
        dag = g.to_dag()
        assert dag["version"] == "1.3"
        assert found(dag["problems"]) == [("no-way-out", "b"), ("no-way-out", "c"), ("unreachable", "lost")]
        message = next(p["message"] for p in dag["problems"] if p.get("node") == "b")
        assert (
            message
            == "no path from node 'b' reaches END: a run that gets there goes round until max_steps (it can go to 'c')"
        )

    def test_a_graph_still_being_built_shows_what_compile_would_refuse(self):
        g = Graph("building", state=Items)
        g.add_node("a", noop)
        g.add_node("stuck", noop)
        g.add_node("route", noop)
        g.add_edge(START, "a")
        g.add_edge("a", "tpyo")
        g.add_edge("a", "stuck")
        g.add_router("route", lambda s: "nowhere", targets=["nowhere", END])
        assert found(find_problems(g)) == [
            ("no-way-out", "stuck"),
            ("unknown-node", ("a", "tpyo")),
            ("unknown-node", ("route", "nowhere")),
            ("unreachable", "route"),
        ]
        assert "an edge leads to 'tpyo', which is not a node of graph 'building'" in str(find_problems(g))

    def test_a_node_that_may_return_end_has_a_way_out(self):
        from nbgraph import End

        g = Graph("ender", state=Items)
        g.add_node("loop", lambda s: End() if s.done else {"done": ["x"]})
        g.add_edge(START, "loop")
        g.add_edge("loop", "loop")
        assert find_problems(g) == []
        g.add_node("loop", lambda s: {"done": ["x"]}, replace=True)
        assert found(find_problems(g)) == [("no-way-out", "loop")]

    def test_a_goto_that_may_go_anywhere_hides_what_it_could_make_wrong(self):
        g = Graph("free", state=Items)
        g.add_node("a", lambda s: Goto("b"))
        g.add_node("b", noop)
        g.add_edge(START, "a")
        g.add_edge("a", END)
        g.add_edge("b", "b")
        assert find_problems(g) == []
        g.add_node("a", lambda s: Goto("b"), destinations=["b"], replace=True)
        assert found(find_problems(g)) == [("no-way-out", "b")]

    def test_an_approval_may_end_the_run_and_every_level_has_its_list(self):
        g = Graph("checked", state=Items)
        g.add_node("ask", noop, approval=True)
        g.add_node("research", inner_graph())
        g.add_edge(START, "research")
        g.add_edge("research", "ask")
        g.add_edge("ask", "ask")  # a denial ends the run
        dag = g.to_dag()
        assert dag["problems"] == []
        assert dag["nodes"][2]["graph"]["problems"] == []

    def test_problems_given_for_a_sub_graph_go_to_its_level(self):
        given = [
            {"kind": "condition-raised", "edge": {"from": "a", "to": "b"}, "message": "boom", "path": "research"},
            {"kind": "router-raised", "node": "plan", "message": "bang", "path": ""},
        ]
        from nbgraph.export import to_dag

        dag = to_dag(shaped_graph(), problems=given)
        research = next(node for node in dag["nodes"] if node["id"] == "research")
        assert research["graph"]["problems"] == [
            {"kind": "condition-raised", "edge": {"from": "a", "to": "b"}, "message": "boom"}
        ]
        assert dag["problems"] == [{"kind": "router-raised", "node": "plan", "message": "bang"}]
