"""LangGraph graphs drawn by nbgraph's view: the DAG JSON it draws, read from ``get_graph``."""

from __future__ import annotations

import operator
from typing import Annotated, Literal, TypedDict

import pytest
from langchain_core.tools import tool
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode
from langgraph.types import Command, Send
from turns import wait_until, within

import nbgraph.langgraph as nlg
from nbgraph._protocol import checked
from nbgraph.answering import set_identity
from nbgraph.errors import ResumeError
from nbgraph.widget import widget_bundle


class State(TypedDict):
    topic: str
    items: Annotated[list[str], operator.add]
    n: int


def edges_of(level: dict) -> dict[tuple[str, str], dict]:
    return {(edge["from"], edge["to"]): edge for edge in level["edges"]}


def node(level: dict, name: str) -> dict:
    return next(n for n in level["nodes"] if n["id"] == name)


def inner_graph() -> StateGraph:
    inner = StateGraph(State)
    inner.add_node("search", lambda s: {"items": ["found"]})
    inner.add_node("rank", lambda s: {"items": ["ranked"]})
    inner.add_edge(START, "search")
    inner.add_edge("search", "rank")
    inner.add_edge("rank", END)
    return inner


def research_app(**compile_options):
    """plan loops on itself until it says go, a sub-graph researches, Send fans out to write."""

    def route(state: State) -> str:
        return "again" if state["n"] < 2 else "go"

    def fan(state: State) -> list[Send]:
        return [Send("write", {"topic": t}) for t in ("a", "b")]

    g = StateGraph(State)
    g.add_node("plan", lambda s: {"n": s["n"] + 1})
    g.add_node("research", inner_graph().compile())
    g.add_node("write", lambda s: {"items": [s["topic"]]})
    g.add_edge(START, "plan")
    g.add_conditional_edges("plan", route, {"again": "plan", "go": "research", "stop": END})
    g.add_conditional_edges("research", fan, ["write"])
    g.add_edge("write", END)
    return g.compile(**compile_options)


def test_conditional_edges_carry_their_path_map_keys_and_a_self_loop_is_an_edge_to_its_node():
    dag = nlg.view(research_app()).dag
    checked_edges = edges_of(dag)
    assert checked_edges[("plan", "plan")]["label"] == "again"  # the self-loop
    assert checked_edges[("plan", "research")]["label"] == "go"
    assert checked_edges[("plan", END)]["label"] == "stop"
    assert not any(checked_edges[("plan", target)]["unconditional"] for target in ("plan", "research", END))
    assert checked_edges[(START, "plan")] == {"from": START, "to": "plan", "unconditional": True, "label": None}
    assert [n["id"] for n in dag["nodes"]] == [START, "plan", "research", "write", END]
    assert dag["version"] and dag["mode"] == "graph" and dag["problems"] == []


def test_a_send_router_draws_its_targets_labelled_with_the_routers_name():
    send = edges_of(nlg.view(research_app()).dag)[("research", "write")]
    assert send == {"from": "research", "to": "write", "unconditional": False, "label": "fan", "router": True}


def test_a_sub_graph_is_a_frame_that_opens_onto_its_own_drawing():
    research = node(nlg.view(research_app()).dag, "research")
    assert research["kind"] == "graph"
    inner = research["graph"]
    assert inner["name"] == "research"
    assert [n["id"] for n in inner["nodes"]] == [START, "search", "rank", END]
    assert set(edges_of(inner)) == {(START, "search"), ("search", "rank"), ("rank", END)}


def test_a_node_that_calls_a_sub_graph_opens_too_and_xray_limits_how_deep():
    deep = inner_graph().compile()
    middle = StateGraph(State)
    middle.add_node("deep", deep)
    middle.add_edge(START, "deep")
    middle.add_edge("deep", END)
    middle_app = middle.compile()

    def caller(state: State) -> dict:
        return {"items": deep.invoke({"topic": "", "items": [], "n": 0})["items"]}

    g = StateGraph(State)
    g.add_node("middle", middle_app)
    g.add_node("caller", caller)
    g.add_edge(START, "middle")
    g.add_edge("middle", "caller")
    g.add_edge("caller", END)
    app = g.compile()

    full = nlg.view(app).dag
    assert node(full, "caller")["kind"] == "graph"
    assert [n["id"] for n in node(node(full, "middle")["graph"], "deep")["graph"]["nodes"]] == [
        START,
        "search",
        "rank",
        END,
    ]
    one = nlg.view(app, xray=1).dag
    assert node(node(one, "middle")["graph"], "deep") == {"id": "deep", "kind": "function", "approval": False}
    flat = nlg.view(app, xray=False).dag
    assert {n["kind"] for n in flat["nodes"]} == {"start", "function", "end"}


def test_a_command_goto_declared_by_annotation_is_a_goto_edge_and_a_tool_node_shows_its_tools():
    @tool
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    def decide(state: MessagesState) -> Command[Literal["tools", "__end__"]]:
        return Command(goto="tools")

    g = StateGraph(MessagesState)
    g.add_node("decide", decide)
    g.add_node("tools", ToolNode([add]))
    g.add_edge(START, "decide")
    g.add_edge("tools", END)
    dag = nlg.view(g.compile()).dag
    assert edges_of(dag)[("decide", "tools")] == {
        "from": "decide",
        "to": "tools",
        "unconditional": False,
        "label": "goto",
        "goto": True,
    }
    assert node(dag, "tools")["tools"] == ["add"]


def test_static_breakpoints_are_drawn_as_breakpoints_and_a_click_says_they_are_compiled_in():
    shown = nlg.view(research_app(interrupt_before=["write"], interrupt_after=["plan"]))
    assert shown.breakpoints == {"before": ["write"], "after": ["plan"]}
    every = nlg.view(research_app(interrupt_before="*"))
    assert every.breakpoints["before"] == ["plan", "research", "write"]
    with pytest.raises(nlg.UnsupportedByLangGraph, match="compile it with interrupt_before"):
        shown.handle(checked("graph", "to_kernel", {"type": "toggle-breakpoint", "path": "plan"}))
    assert shown.breakpoints == {"before": ["write"], "after": ["plan"]}


def test_the_view_displays_as_the_widget_with_a_deterministic_repr():
    app = research_app()
    shown = nlg.view(app)
    data, _ = widget_bundle(shown)
    assert "application/vnd.jupyter.widget-view+json" in data
    assert repr(shown) == "GraphView(graph='LangGraph')"
    # A graph without a run has nothing to inspect, and says so in the view's error message.
    with pytest.raises(ValueError, match="shows a graph, not a run"):
        shown.handle(checked("graph", "to_kernel", {"type": "inspect", "step": 1}))


STALE = "0" * 32  # a digest no pause shows


@pytest.fixture
def alice():
    set_identity("alice")
    yield "alice"
    set_identity(None)


class Trip(TypedDict, total=False):
    city: str


def trip_app():
    """One node that asks which city, by LangGraph's own interrupt."""
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.types import interrupt

    g = StateGraph(Trip)
    g.add_node("city", lambda state: {"city": interrupt("Which city?")})
    g.add_edge(START, "city")
    g.add_edge("city", END)
    return g.compile(checkpointer=InMemorySaver())


class TestDecisionsInTheView:
    async def test_a_langgraph_interrupt_answered_in_the_view_is_recorded_the_same_way(self, alice):

        run = nlg.start(trip_app(), {}, display=False)
        view = nlg.LangGraphView.for_run(run)
        pause = await run.next_pause(timeout=10)
        assert view.can_stand is False  # (LangGraph's runs take no standing approvals)
        with pytest.raises(ResumeError, match="shows something else"):
            view.handle({"type": "answer", "pause_id": pause.id, "value": "Kyoto", "shown": STALE})
        assert view.handle(
            {"type": "answer", "pause_id": pause.id, "value": "Kyoto", "shown": pause.shown, "reason": "warmer"}
        )
        assert (await within(run, 20))["city"] == "Kyoto"  # (a LangGraph run gives the graph's final state)
        await wait_until(lambda: view.decisions.get("rows"))
        (row,) = view.decisions["rows"]
        assert (row["path"], row["verdict"], row["by"], row["via"], row["reason"]) == (
            "city",
            "answered",
            "alice",
            "view",
            "warmer",
        )

    async def test_a_click_on_a_run_that_stopped_waiting_resumes_it_bound_to_what_was_shown_and_why(self, alice):
        run = nlg.start(trip_app(), {}, display=False)
        view = nlg.LangGraphView.for_run(run)
        pause = await run.next_pause(timeout=10)
        run.stop_waiting("nobody is at the desk")
        await within(run, 20)
        assert run.result().outcome == "interrupted"
        with pytest.raises(ResumeError, match="shows something else"):
            view.handle({"type": "answer", "pause_id": pause.id, "value": "Kyoto", "shown": STALE})
        assert view.observer is not None and view.observer.run is run  # nothing resumed
        assert view.handle(
            {"type": "answer", "pause_id": pause.id, "value": "Kyoto", "shown": pause.shown, "reason": "warmer"}
        )
        going_on = view.observer.run
        assert going_on is not run
        assert (await within(going_on, 20))["city"] == "Kyoto"
        (decision,) = going_on.result().decisions
        assert (decision.pause_id, decision.by, decision.via, decision.reason, decision.shown) == (
            pause.id,
            "alice",
            "view",
            "warmer",
            pause.shown,
        )
