"""Hot swap: a paused run takes a node's new code for the rest of the run (run.replace_node)."""

from __future__ import annotations

import pytest
from turns import within

from nbgraph import END, START, Graph


def drafting() -> Graph:
    async def ask(state, ctx):
        topic = await ctx.request_input("Topic?")
        return {"topic": topic, "rounds": state.get("rounds", 0) + 1}

    g = Graph("drafting")
    g.add_node("ask", ask)
    g.add_node("write", lambda s: {"text": f"old: {s['topic']}"})
    g.add_edge(START, "ask")
    g.add_edge("ask", "write")
    g.add_edge("write", "ask", when=lambda s: s["rounds"] < 2, label="again")
    g.add_edge("write", END)
    return g


async def test_a_node_swapped_while_the_run_is_paused_runs_its_new_code_from_its_next_call():
    g = drafting()
    run = g.start({}, display=False)
    await within(run.next_pause())
    run.replace_node("write", lambda s: {"text": f"new: {s['topic']}"})
    assert run.replaced == ("write",)
    run.answer("tides")
    await within(run.next_pause())
    assert run.state["text"] == "new: tides"
    run.answer("moons")
    result = await within(run)
    assert result.state["text"] == "new: moons"
    # The graph keeps its own code: the next run is as defined.
    assert g.compile().nodes["write"].fn({"topic": "x"}) == {"text": "old: x"}


async def test_the_call_under_way_finishes_with_the_code_it_started_with_and_later_calls_take_the_new():
    g = drafting()
    run = g.start({}, display=False)
    await within(run.next_pause())

    async def ask_loudly(state, ctx):
        topic = await ctx.request_input("TOPIC?")
        return {"topic": topic.upper(), "rounds": state.get("rounds", 0) + 1}

    run.replace_node("ask", ask_loudly)
    run.answer("tides")  # the paused call is the old code's
    second = await within(run.next_pause())
    assert second.prompt == "TOPIC?"
    run.answer("moons")
    result = await within(run)
    assert [step.update.get("topic") for step in result.history if step.node == "ask"] == ["tides", "MOONS"]


async def test_a_swap_takes_a_function_that_wants_ctx_or_not_and_async_or_not():
    g = drafting()
    run = g.start({}, display=False)
    await within(run.next_pause())
    seen = []

    async def write(state, ctx):
        seen.append(ctx.visit)
        return {"text": f"visit {ctx.visit}"}

    run.replace_node("write", write)
    run.answer("a")
    await within(run.next_pause())
    run.answer("b")
    assert (await within(run)).state["text"] == "visit 2" and seen == [1, 2]


async def test_bad_swaps_say_what_is_wrong():
    g = drafting()
    run = g.start({}, display=False)
    await within(run.next_pause())
    with pytest.raises(ValueError, match=r"graph 'drafting' has no node 'wirte' to replace \(did you mean 'write'\?\)"):
        run.replace_node("wirte", lambda s: {})
    with pytest.raises(TypeError, match="node 'write' must accept the state as its first argument"):
        run.replace_node("write", lambda: {})
    run.cancel()
    await within(run)
    with pytest.raises(ValueError, match="has ended: there is nothing to swap 'write' into"):
        run.replace_node("write", lambda s: {})


def test_a_sub_graph_node_cannot_be_swapped_for_a_function():
    inner = Graph("inner")
    inner.add_node("a", lambda s: {})
    inner.add_edge(START, "a")
    inner.add_edge("a", END)
    outer = Graph("outer")
    outer.add_node("sub", inner)
    outer.add_edge(START, "sub")
    outer.add_edge("sub", END)
    with pytest.raises(ValueError, match="node 'sub' of graph 'outer' runs a sub-graph"):
        outer.compile().with_function("sub", lambda s: {})


def test_a_sync_function_for_a_node_with_a_timeout_is_refused():
    g = Graph("timed")

    async def slow(state):
        return {}

    g.add_node("slow", slow, timeout=1)
    g.add_edge(START, "slow")
    g.add_edge("slow", END)
    with pytest.raises(ValueError, match=r"node 'slow' has timeout=1, so its function must be async"):
        g.compile().with_function("slow", lambda s: {})
