"""Where a LangGraph run stops, as pauses: a sub-graph's own breakpoint, a breakpoint on a
node that runs as several ``Send`` tasks, and an interrupt's prompt.

Every graph here is a real LangGraph graph (LangChain's ``create_agent`` among them) run by
LangGraph itself; the view is driven through the messages its buttons send.
"""

from __future__ import annotations

import operator
from typing import Annotated, Any, TypedDict

import pytest
from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
from langchain_core.messages import AIMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.types import Send, interrupt

import nbgraph.langgraph as nlg
from nbgraph._protocol import checked
from nbgraph.errors import ResumeError
from nbgraph.langgraph._pauses import open_pauses


def thread(name: str) -> dict[str, Any]:
    return {"configurable": {"thread_id": name}}


def click(view: nlg.LangGraphView, message: dict[str, Any]) -> Any:
    """What the view's button sends, checked against the view's protocol, handled by the kernel."""
    return view.handle(checked("graph", "to_kernel", message))


async def only_pause(run: nlg.LangGraphRun) -> Any:
    pause = await run.next_pause(timeout=10)
    assert pause is not None and len(run.pauses) == 1, run.pauses
    return pause


# -- a sub-graph's own breakpoint -------------------------------------------------------------


class Outer(TypedDict, total=False):
    topic: str
    notes: Annotated[list[str], operator.add]


class Inner(TypedDict, total=False):
    topic: str
    found: Annotated[list[str], operator.add]


def nested_app(ran: list[str], **breakpoints: Any) -> Any:
    """first, then sub-graph ``inner`` (inner_1, inner_2) compiled with its own breakpoints, then last."""

    def step(name: str, key: str) -> Any:
        def node(state: Any) -> dict[str, Any]:
            ran.append(name)
            return {key: [name]}

        return node

    inner = StateGraph(Inner)
    inner.add_node("inner_1", step("inner_1", "found"))
    inner.add_node("inner_2", step("inner_2", "found"))
    inner.add_edge(START, "inner_1")
    inner.add_edge("inner_1", "inner_2")
    inner.add_edge("inner_2", END)
    outer = StateGraph(Outer)
    outer.add_node("first", step("first", "notes"))
    outer.add_node("inner", inner.compile(**breakpoints))
    outer.add_node("last", step("last", "notes"))
    outer.add_edge(START, "first")
    outer.add_edge("first", "inner")
    outer.add_edge("inner", "last")
    outer.add_edge("last", END)
    return outer.compile(checkpointer=InMemorySaver())


async def test_a_sub_graphs_breakpoint_before_names_the_node_inside_it_where_the_drawing_marks_it():
    ran: list[str] = []
    app = nested_app(ran, interrupt_before=["inner_2"])
    run = nlg.start(app, {"topic": "tides"}, thread("nested"), display=False)
    view = nlg.LangGraphView.for_run(run)
    pause = await only_pause(run)

    # Where the run stopped: before inner_2, inside the frame of inner, where the drawing marks it.
    assert view.breakpoints == {"before": ["inner/inner_2"], "after": []}
    assert (pause.kind, pause.at, pause.node, pause.path) == ("breakpoint", "before", "inner_2", "inner/inner_2")
    assert pause.prompt == "breakpoint before inner/inner_2"
    assert pause.step == 2  # inner_1 was the sub-graph's step 1
    assert ran == ["first", "inner_1"] and [record.path for record in run.history] == ["first", "inner/inner_1"]
    assert [box["path"] for box in view.pending] == ["inner/inner_2"]

    # The same pause, read back from the thread's checkpoints (after a restart), with the same id.
    read = open_pauses(app.get_state(thread("nested")), run.plan.breakpoints, run.history, inner=app.get_state)
    assert [(p.id, p.path, p.prompt) for p in read] == [(pause.id, pause.path, pause.prompt)]

    # LangGraph's update_state writes the graph's own state, not the sub-graph's: refused, saying so.
    with pytest.raises(ResumeError, match="'inner/inner_2' takes no update: it is inside a sub-graph"):
        run.answer({"answer": "continue", "update": {"topic": "waves"}})

    assert click(view, {"type": "answer", "pause_id": pause.id, "value": "continue"})
    assert (await run)["notes"] == ["first", "last"]
    assert ran == ["first", "inner_1", "inner_2", "last"]


async def test_a_sub_graphs_breakpoint_after_shows_what_its_node_returned():
    ran: list[str] = []
    run = nlg.start(nested_app(ran, interrupt_after=["inner_1"]), {"topic": "tides"}, display=False)
    pause = await only_pause(run)
    assert (pause.at, pause.node, pause.path, pause.step) == ("after", "inner_1", "inner/inner_1", 1)
    assert pause.update == {"found": ["inner_1"]} and pause.prompt == "breakpoint after inner/inner_1"
    assert ran == ["first", "inner_1"]
    run.answer("stop")
    await run
    assert run.result().outcome == "aborted" and ran == ["first", "inner_1"]


async def test_a_breakpoint_of_the_graph_itself_before_a_sub_graph_node_stays_the_graphs():
    ran: list[str] = []
    app = nested_app(ran)
    app = app.copy(update={"interrupt_before_nodes": ["inner"]})
    run = nlg.start(app, {"topic": "tides"}, display=False)
    pause = await only_pause(run)
    assert (pause.at, pause.node, pause.path) == ("before", "inner", "inner") and ran == ["first"]
    run.answer()
    await run
    assert ran == ["first", "inner_1", "inner_2", "last"]


# -- one breakpoint, one box ------------------------------------------------------------------


class Batch(TypedDict, total=False):
    items: list[int]
    out: Annotated[list[int], operator.add]


def map_reduce(worked: list[int], **breakpoints: Any) -> Any:
    """plan sends one ``work`` task per item; total follows them."""

    def work(item: int) -> dict[str, Any]:
        worked.append(item)
        return {"out": [item * 10]}

    g = StateGraph(Batch)
    g.add_node("plan", lambda state: {"items": [1, 2]})
    g.add_node("work", work)
    g.add_node("total", lambda state: {})
    g.add_edge(START, "plan")
    g.add_conditional_edges("plan", lambda state: [Send("work", item) for item in state["items"]], ["work"])
    g.add_edge("work", "total")
    g.add_edge("total", END)
    return g.compile(checkpointer=InMemorySaver(), **breakpoints)


async def test_a_breakpoint_before_a_node_sent_twice_is_one_pause_answered_once():
    worked: list[int] = []
    run = nlg.start(map_reduce(worked, interrupt_before=["work"]), {}, display=False)
    view = nlg.LangGraphView.for_run(run)
    pause = await only_pause(run)  # LangGraph stops once, before both tasks
    assert (pause.at, pause.node, pause.prompt) == ("before", "work", "breakpoint before work (2 tasks wait)")
    assert len(view.pending) == 1 and worked == []
    assert click(view, {"type": "answer", "pause_id": pause.id, "value": "continue"})
    assert (await run)["out"] == [10, 20] and sorted(worked) == [1, 2]


async def test_a_breakpoint_after_a_node_sent_twice_shows_each_tasks_update():
    worked: list[int] = []
    run = nlg.start(map_reduce(worked, interrupt_after=["work"]), {}, display=False)
    pause = await only_pause(run)
    assert (pause.at, pause.node, pause.prompt) == ("after", "work", "breakpoint after work (2 tasks ran)")
    assert sorted(pause.update, key=str) == [{"out": [10]}, {"out": [20]}]
    run.answer({"answer": "continue", "update": {"out": [99]}})  # written once, as work
    assert (await run)["out"] == [10, 20, 99]


def agent(added: list[str]) -> Any:
    """LangChain's own ``create_agent``, its tool node stopped at by a breakpoint; the model asks for two calls."""
    from langchain.agents import create_agent

    class Scripted(FakeMessagesListChatModel):
        def bind_tools(self, tools: Any, **options: Any) -> Any:
            return self  # (the replies are scripted: the tools change nothing)

    @tool
    def note(text: str) -> str:
        """Note some text."""
        added.append(text)
        return "noted"

    calls = [{"name": "note", "args": {"text": "a"}, "id": "c1"}, {"name": "note", "args": {"text": "b"}, "id": "c2"}]
    model = Scripted(responses=[AIMessage(content="", tool_calls=calls), AIMessage(content="Both noted.")])
    return create_agent(model, tools=[note], checkpointer=InMemorySaver(), interrupt_before=["tools"])


async def test_an_agents_tool_node_stopped_before_two_tool_calls_is_one_pause():
    added: list[str] = []
    run = nlg.start(agent(added), {"messages": [("user", "note a and b")]}, display=False)
    view = nlg.LangGraphView.for_run(run)
    pause = await only_pause(run)
    assert (pause.node, pause.prompt) == ("tools", "breakpoint before tools (2 tasks wait)")
    assert [box["id"] for box in view.pending] == [pause.id]

    # One answer for the one stop: a stop given to it ends the run, nothing else stays open.
    assert click(view, {"type": "answer", "pause_id": pause.id, "value": "stop"})
    await run
    assert run.result().outcome == "aborted" and added == [] and not run.pauses


async def test_an_agents_tool_node_continued_runs_both_calls():
    added: list[str] = []
    run = nlg.start(agent(added), {"messages": [("user", "note a and b")]}, display=False)
    await only_pause(run)
    run.answer("continue")
    values = await run
    assert sorted(added) == ["a", "b"] and values["messages"][-1].content == "Both noted."


# -- prompts ------------------------------------------------------------------------------------


class Trip(TypedDict, total=False):
    city: str
    room: str


def trip_app() -> Any:
    g = StateGraph(Trip)
    g.add_node("city", lambda state: {"city": interrupt("Which city?")})
    g.add_node("room", lambda state: {"room": interrupt({"question": "Room size?", "options": ["single", "double"]})})
    g.add_edge(START, "city")
    g.add_edge(START, "room")
    g.add_edge("city", END)
    g.add_edge("room", END)
    return g.compile(checkpointer=InMemorySaver())


async def test_an_interrupts_prompt_is_its_question_and_what_an_answer_runs_again_is_said_apart():
    run = nlg.start(trip_app(), {}, thread("trip"), display=False)
    view = nlg.LangGraphView.for_run(run)
    assert await run.next_pause(timeout=10) is not None
    city, room = sorted(run.pauses, key=lambda pause: pause.node)
    assert (city.prompt, room.prompt) == ("Which city?", "Room size?")
    assert city.reruns is not None and city.reruns.path == "city"
    boxes = {box["node"]: box for box in view.pending}
    assert boxes["room"]["prompt"] == "Room size?"
    assert boxes["room"]["reruns"]["note"] == "a resume runs 'room' again from its start"

    # Error messages that quote the open pauses quote their questions alone.
    with pytest.raises(ResumeError) as refused:
        run.answer("Kyoto")  # two are open: which one?
    assert "'Which city?'" in str(refused.value) and "'Room size?'" in str(refused.value)
    assert "again from its start" not in str(refused.value)

    # Read back from the checkpoints, the same.
    read = nlg.history(run.app, thread("trip")).pauses
    assert {(p.id, p.prompt, p.reruns and p.reruns.note) for p in read} == {
        (p.id, p.prompt, p.reruns and p.reruns.note) for p in (city, room)
    }
    run.answer({city.id: "Kyoto", room.id: "double"})
    assert await run == {"city": "Kyoto", "room": "double"}
