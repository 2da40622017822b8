"""Edges ``get_graph()`` cannot know (a ``Send`` without a path map, a ``Command(goto=...)``
without an annotation): the view draws each the first time a run takes it, marked as discovered;
declared, the same edge is drawn from the start, unmarked."""

from __future__ import annotations

import operator
from typing import Annotated, Any, Literal, TypedDict

from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, Send, interrupt

import nbgraph.langgraph as nlg


class Work(TypedDict, total=False):
    items: list[str]
    done: Annotated[list[str], operator.add]
    asked: str


def thread(name: str) -> dict[str, Any]:
    return {"configurable": {"thread_id": name}}


def edges_of(level: dict[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    return {(edge["from"], edge["to"]): edge for edge in level["edges"]}


def level_of(dag: dict[str, Any], name: str) -> dict[str, Any]:
    return next(node for node in dag["nodes"] if node["id"] == name)["graph"]


def discovered(level: dict[str, Any]) -> list[tuple[str, str]]:
    return [(edge["from"], edge["to"]) for edge in level["edges"] if edge.get("dynamic")]


def fan_out_app(path_map: list[str] | None = None) -> Any:
    """plan fans out to work with one Send per item, with or without a path map."""

    def plan(state: Work) -> dict[str, Any]:
        return {"items": ["a", "b", "c"]}

    def fan(state: Work) -> list[Send]:
        return [Send("work", {"items": [item]}) for item in state["items"]]

    def work(state: Work) -> dict[str, Any]:
        return {"done": state["items"]}

    g = StateGraph(Work)
    g.add_node("plan", plan)
    g.add_node("work", work)
    g.add_edge(START, "plan")
    if path_map is None:
        g.add_conditional_edges("plan", fan)
    else:
        g.add_conditional_edges("plan", fan, path_map)
    g.add_edge("work", END)
    return g.compile(checkpointer=InMemorySaver())


def bare(state: Work) -> Command:
    return Command(goto="b", update={"done": ["a"]})


def annotated(state: Work) -> Command[Literal["b"]]:
    return Command(goto="b", update={"done": ["a"]})


def b(state: Work) -> dict[str, Any]:
    return {"done": ["b"]}


def goto_graph(a: Any = bare, **options: Any) -> StateGraph:
    """a goes on to b with Command(goto="b"); nothing else leads to b."""
    g = StateGraph(Work)
    g.add_node("a", a, **options)
    g.add_node("b", b)
    g.add_edge(START, "a")
    g.add_edge("b", END)
    return g


async def test_a_send_without_a_path_map_is_drawn_once_a_run_takes_it_marked_as_discovered():
    app = fan_out_app()
    before = nlg.view(app).dag
    assert ("plan", "work") not in edges_of(before)  # LangGraph cannot see where fan sends
    assert edges_of(before)[("work", END)]["unconditional"]  # declared, though LangGraph's walk never reaches work

    run = nlg.start(app, {}, thread("fan"), display=False)
    view = nlg.LangGraphView.for_run(run)
    assert await run == {"items": ["a", "b", "c"], "done": ["a", "b", "c"]}
    assert view.fired["plan\u2192work"] == 3
    assert discovered(view.dag) == [("plan", "work")]
    assert edges_of(view.dag)[("plan", "work")] == {
        "from": "plan",
        "to": "work",
        "unconditional": False,
        "label": None,
        "dynamic": True,
        "note": "discovered while running: declare it with a path map: add_conditional_edges('plan', fan, ['work', ...])",
    }
    assert discovered(nlg.replay(app, thread("fan")).dag) == [("plan", "work")]  # a replay draws it too


async def test_the_same_send_with_a_path_map_is_drawn_from_the_start_unmarked():
    app = fan_out_app(["work"])
    declared = {"from": "plan", "to": "work", "unconditional": False, "label": "fan", "router": True}
    assert edges_of(nlg.view(app).dag)[("plan", "work")] == declared
    run = nlg.start(app, {}, thread("mapped"), display=False)
    view = nlg.LangGraphView.for_run(run)
    await run
    assert view.fired["plan\u2192work"] == 3
    assert edges_of(view.dag)[("plan", "work")] == declared and discovered(view.dag) == []


async def test_a_command_goto_without_an_annotation_is_drawn_live_the_first_time_it_is_taken():
    def ask(state: Work) -> dict[str, Any]:
        return {"asked": interrupt("Go on?")}

    g = goto_graph()
    g.add_node("ask", ask)
    g.add_edge("b", "ask")
    app = g.compile(checkpointer=InMemorySaver())
    assert ("a", "b") not in edges_of(nlg.view(app).dag)

    run = nlg.start(app, {}, thread("goto"), display=False)
    view = nlg.LangGraphView.for_run(run)
    await run.next_pause(timeout=10)  # the run waits at ask, after a -> b -> ask
    assert view.fired["a\u2192b"] == 1
    taken = edges_of(view.dag)[("a", "b")]
    assert taken["dynamic"] is True and "label" in taken and taken["label"] is None
    assert taken["note"] == (
        "discovered while running: declare it with a Command[Literal['b', ...]] return annotation on 'a', "
        "or add_node('a', ..., destinations=('b', ...))"
    )
    assert discovered(view.dag) == [("a", "b")]
    run.answer("yes")
    assert await run == {"done": ["a", "b"], "asked": "yes"}
    assert discovered(view.dag) == [("a", "b")]  # drawn once, however often it is taken


async def test_a_command_goto_declared_by_annotation_or_destinations_is_drawn_from_the_start_unmarked():
    goto = {"from": "a", "to": "b", "unconditional": False, "label": "goto", "goto": True}
    for name, g in (("annotated", goto_graph(annotated)), ("destinations", goto_graph(bare, destinations=("b",)))):
        app = g.compile(checkpointer=InMemorySaver())
        assert edges_of(nlg.view(app).dag)[("a", "b")] == goto, name
        run = nlg.start(app, {}, thread(name), display=False)
        view = nlg.LangGraphView.for_run(run)
        assert await run == {"done": ["a", "b"]}, name
        assert view.fired["a\u2192b"] == 1 and discovered(view.dag) == [], name


async def test_an_edge_discovered_inside_a_sub_graph_is_drawn_in_its_frame():
    outer = StateGraph(Work)
    outer.add_node("inner", goto_graph().compile())
    outer.add_edge(START, "inner")
    outer.add_edge("inner", END)
    app = outer.compile(checkpointer=InMemorySaver())
    run = nlg.start(app, {}, thread("inner"), display=False)
    view = nlg.LangGraphView.for_run(run)
    await run
    assert view.fired["inner/a\u2192inner/b"] == 1
    assert discovered(level_of(view.dag, "inner")) == [("a", "b")] and discovered(view.dag) == []
    assert discovered(level_of(nlg.replay(app, thread("inner")).dag, "inner")) == [("a", "b")]
