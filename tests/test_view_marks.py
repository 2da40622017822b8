"""Marks on the live view from Python: breakpoints a click toggles, per-node cost, problems."""

from __future__ import annotations

import pytest

from nbgraph import END, START, Graph, MessagesState, ScriptedModel, llm_node
from nbgraph.widget import GraphView, MessageError


def line_graph() -> Graph:
    g = Graph("line")
    g.add_node("a", lambda s: {"n": s.n + 1})
    g.add_node("b", lambda s: {"n": s.n + 1})
    g.add_edge(START, "a")
    g.add_edge("a", "b")
    g.add_edge("b", END)
    return g


def test_a_toggle_message_sets_and_clears_the_breakpoint_on_the_graph():
    g = line_graph()
    view = GraphView(g)
    assert view.breakpoints == {"before": [], "after": []}
    assert view.handle({"type": "toggle-breakpoint", "path": "b"}) is True
    assert g.declared_breakpoints.before == frozenset({"b"})
    assert view.breakpoints == {"before": ["b"], "after": []}
    assert view.handle({"type": "toggle-breakpoint", "path": "b"}) is False
    assert g.declared_breakpoints.before == frozenset()
    assert view.breakpoints["before"] == []


def test_a_view_shows_the_breakpoints_already_set_and_keeps_those_after():
    g = line_graph().breakpoints(before=["a"], after=["b"])
    view = GraphView(g)
    assert view.breakpoints == {"before": ["a"], "after": ["b"]}
    view.handle({"type": "toggle-breakpoint", "path": "b"})
    assert g.declared_breakpoints.before == frozenset({"a", "b"})
    assert g.declared_breakpoints.after == frozenset({"b"})


def test_a_toggle_naming_no_node_is_refused_with_the_path():
    view = GraphView(line_graph())
    with pytest.raises(ValueError, match="'nope'"):
        view.handle({"type": "toggle-breakpoint", "path": "nope"})
    with pytest.raises(MessageError, match="sent 'toggle-breakpoint' without 'path' \\(a string\\)"):
        view.handle({"type": "toggle-breakpoint"})
    with pytest.raises(ValueError, match="needs a node's path, got ''"):
        view.handle({"type": "toggle-breakpoint", "path": ""})


async def test_a_breakpoint_clicked_in_a_run_started_with_breakpoints_pauses_that_run():
    g = line_graph().breakpoints(before=["a"])
    run = g.start({"n": 0})
    view = GraphView.for_run(run)
    pause = await run.next_pause()
    assert pause.kind == "breakpoint" and pause.node == "a"
    view.handle({"type": "toggle-breakpoint", "path": "b"})
    assert view.breakpoints["before"] == ["a", "b"]
    run.answer("continue")
    pause = await run.next_pause()
    assert pause is not None and pause.kind == "breakpoint" and pause.node == "b"
    run.answer("continue")
    result = await run
    assert result.outcome == "done"


async def test_a_breakpoint_clicked_in_a_live_run_started_without_any_pauses_it_too():
    g = line_graph()
    run = g.start({"n": 0}, display=False)
    view = GraphView.for_run(run)
    view.handle({"type": "toggle-breakpoint", "path": "b"})
    pause = await run.next_pause()
    assert (pause.kind, pause.node, run.state["n"]) == ("breakpoint", "b", 1)
    run.answer("continue")
    assert (await run).outcome == "done"
    assert any(line.strip() == "breakpoint before b set" for line in view.log)


def test_removing_by_click_a_breakpoint_a_sub_graph_set_itself_removes_it_there():
    inner = line_graph().breakpoints(before=["b"])
    outer = Graph("outer")
    outer.add_node("inner", inner)
    outer.add_edge(START, "inner")
    outer.add_edge("inner", END)
    view = GraphView(outer)
    assert view.breakpoints["before"] == ["inner/b"]
    assert view.handle({"type": "toggle-breakpoint", "path": "inner/b"}) is False
    assert inner.declared_breakpoints.before == frozenset()
    assert outer.compile().breakpoints is None or "inner/b" not in outer.compile().breakpoints.before
    assert outer.invoke({"n": 0}).outcome == "done"  # nothing pauses there any more


async def test_each_node_shows_the_tokens_and_cost_its_steps_used():
    g = Graph("agent", state=MessagesState, max_same_node=5)
    g.add_node("agent", llm_node("Be brief.", model=ScriptedModel(["hello there, friend", "bye"])))
    g.add_node("plain", lambda s: {})
    g.add_edge(START, "agent")
    g.add_edge("agent", "plain")
    g.add_edge("plain", END)
    run = g.start({"messages": [{"role": "user", "content": "hi"}]})
    view = GraphView.for_run(run)
    result = await run
    assert result.outcome == "done", result.reason
    spent = sum(r.tokens for r in result.history if r.path == "agent")
    assert spent > 0
    assert view.costs["agent"]["tokens"] == spent
    assert "plain" not in view.costs  # no tokens, no cost: nothing to show


async def test_the_problems_a_run_met_are_sent_when_it_ends():
    def boom(state):
        raise KeyError("missing")

    g = Graph("cond")
    g.add_node("a", lambda s: {"n": s.n + 1})
    g.add_edge(START, "a")
    g.add_edge("a", END, when=boom, label="boom")
    run = g.start({"n": 0})
    view = GraphView.for_run(run)
    result = await run
    assert result.outcome == "failed"
    assert view.problems, "a condition that raised is a problem on the drawing"
    assert view.problems == [p.model_dump(mode="json") for p in result.problems()]
    assert view.problems[0]["edge"] == {"from": "a", "to": END}


def test_the_graph_problems_travel_in_the_dag():
    g = line_graph()
    g.add_node("lost", lambda s: {})
    g.add_edge("lost", END)
    view = GraphView(g)
    assert [p for p in view.dag["problems"] if p.get("node") == "lost" and p["kind"] == "unreachable"]
