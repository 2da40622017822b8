"""LangGraph-shaped code in nbgraph: each habit a LangGraph user brings either works as they
write it, or fails with a message that names the nbgraph way.

The four patterns (map-reduce with ``Send``, interrupts in parallel branches, a sub-graph
with private keys, time travel) are written as a LangGraph user ports them, and end in the
state LangGraph's own version ends in.
"""

from __future__ import annotations

import asyncio
import operator
from typing import Annotated

import pytest
from typing_extensions import TypedDict

from nbgraph import END, START, Fork, Graph, GraphValidationError, InvalidUpdate, Resume, Send


class Jokes(TypedDict, total=False):
    topic: str
    subjects: list[str]
    jokes: Annotated[list[str], operator.add]
    best: str


def jokes_graph() -> Graph:
    """LangGraph's map-reduce how-to: a conditional edge whose function returns ``Send`` items."""

    def generate_topics(state: Jokes) -> Jokes:
        return {"subjects": [f"{state['topic']} {kind}" for kind in ("cats", "dogs", "fish")]}

    def continue_to_jokes(state: Jokes) -> list[Send]:
        return [Send("generate_joke", {"subject": subject}) for subject in state["subjects"]]

    def generate_joke(payload: dict) -> Jokes:
        return {"jokes": [f"a joke about {payload['subject']}"]}

    g = Graph("jokes", state=Jokes)
    g.add_node("generate_topics", generate_topics)
    g.add_node("generate_joke", generate_joke)
    g.add_node("best_joke", lambda state: {"best": state["jokes"][-1]})
    g.add_edge(START, "generate_topics")
    g.add_router("generate_topics", continue_to_jokes, targets=["generate_joke"])
    g.add_edge("generate_joke", "best_joke")
    g.add_edge("best_joke", END)
    return g


def test_a_typeddict_state_and_a_router_returning_sends_run_as_written():
    result = jokes_graph().invoke({"topic": "space"})
    assert result.outcome == "done", result.reason
    assert result.state == {
        "topic": "space",
        "subjects": ["space cats", "space dogs", "space fish"],
        "jokes": ["a joke about space cats", "a joke about space dogs", "a joke about space fish"],
        "best": "a joke about space fish",
    }


def test_a_router_sending_outside_its_targets_names_them():
    g = Graph("typo")
    g.add_node("split", lambda s: None)
    g.add_node("work", lambda payload: None)
    g.add_edge(START, "split")
    g.add_router("split", lambda s: [Send("wrok", 1)], targets=["work"])
    g.add_edge("work", END)
    failed = g.invoke({})
    assert failed.outcome == "failed"
    assert "sent to 'wrok', which is not one of its targets: work" in failed.reason


class Trip(TypedDict, total=False):
    flight: str
    hotel: str


def trip_graph() -> Graph:
    """Two branches that each stop for a person, as ``interrupt(value)`` does in plain ``def`` nodes."""

    def pick_flight(state: Trip, ctx) -> Trip:
        return {"flight": ctx.ask({"question": "Which flight?", "options": ["AF1", "BA2"]})}

    def pick_hotel(state: Trip, ctx) -> Trip:
        return {"hotel": ctx.ask("Which hotel?")}

    g = Graph("trip", state=Trip)
    g.add_node("pick_flight", pick_flight)
    g.add_node("pick_hotel", pick_hotel)
    g.add_edge(START, ["pick_flight", "pick_hotel"])
    g.add_edge("pick_flight", END)
    g.add_edge("pick_hotel", END)
    return g


def test_interrupts_in_parallel_branches_are_answered_by_id_in_any_order():
    paused = trip_graph().invoke({})
    assert paused.outcome == "interrupted"
    asked = {pause.node: pause for pause in paused.pauses}
    # The question is kept as given, data and text alike (what interrupt(value) hands over).
    assert asked["pick_flight"].question == {"question": "Which flight?", "options": ["AF1", "BA2"]}
    assert asked["pick_hotel"].question == "Which hotel?"
    answers = {asked["pick_hotel"].id: "Ritz", asked["pick_flight"].id: "AF1"}  # hotel first
    done = trip_graph().invoke(Resume(paused, answers))
    assert done.outcome == "done", done.reason
    assert done.state == {"flight": "AF1", "hotel": "Ritz"}


def test_live_branches_asking_from_def_nodes_take_answers_in_reverse_order():
    async def main():
        run = trip_graph().start({}, display=False)
        while len(run.pauses) < 2:
            await run.next_pause(timeout=5)
        first, second = sorted(run.pauses, key=lambda pause: pause.node)
        run.answer("Ritz", pause=second.id)  # pick_hotel's, opened second
        run.answer("BA2", pause=first.id)
        return await run

    result = asyncio.run(main())
    assert result.outcome == "done", result.reason
    assert result.state == {"flight": "BA2", "hotel": "Ritz"}


class Report(TypedDict, total=False):
    topic: str
    summary: str


class Research(TypedDict, total=False):
    topic: str
    notes: str  # the sub-graph's own key
    summary: str


def research_graph() -> Graph:
    g = Graph("research", state=Research)
    g.add_node("take_notes", lambda s: {"notes": f"notes on {s['topic']}"})
    g.add_node("summarise", lambda s: {"summary": s["notes"].upper()})
    g.add_edge(START, "take_notes")
    g.add_edge("take_notes", "summarise")
    g.add_edge("summarise", END)
    return g


def test_a_subgraph_with_its_own_state_is_told_how_to_keep_its_keys_private():
    report = Graph("report", state=Report)
    report.add_node("research", research_graph())  # as LangGraph lets you: the keys they share cross
    report.add_edge(START, "research")
    report.add_edge("research", END)
    with pytest.raises(GraphValidationError) as refused:
        report.compile()
    message = str(refused.value)
    assert "sub-graph 'research' has state Research and this graph Report" in message
    assert "they share topic, summary: input=lambda s: {'topic': s['topic'], 'summary': s['summary']}" in message

    report.add_node(
        "research",
        research_graph(),
        input=lambda s: {"topic": s["topic"]},
        output=lambda r: {"summary": r["summary"]},
        replace=True,
    )
    result = report.invoke({"topic": "tides"})
    assert result.state == {"topic": "tides", "summary": "NOTES ON TIDES"}  # notes stayed inside


def test_a_subgraph_on_a_dict_state_shares_every_key_it_sets():
    research = Graph("research")
    research.add_node("take_notes", lambda s: {"notes": f"notes on {s['topic']}"})
    research.add_node("summarise", lambda s: {"summary": s["notes"].upper()})
    research.add_edge(START, "take_notes")
    research.add_edge("take_notes", "summarise")
    research.add_edge("summarise", END)
    report = Graph("report")
    report.add_node("research", research)
    report.add_edge(START, "research")
    report.add_edge("research", END)
    shared = report.invoke({"topic": "tides"}).state
    assert shared == {"topic": "tides", "notes": "notes on tides", "summary": "NOTES ON TIDES"}

    report.add_node("research", research, input=dict, output=lambda r: {"summary": r["summary"]}, replace=True)
    assert report.invoke({"topic": "tides"}).state == {"topic": "tides", "summary": "NOTES ON TIDES"}


class Story(TypedDict, total=False):
    topic: str
    joke: str


def story_graph() -> Graph:
    g = Graph("story", state=Story)
    g.add_node("generate_topic", lambda s: {"topic": "cats"})
    g.add_node("write_joke", lambda s: {"joke": f"a joke about {s['topic']}"})
    g.add_edge(START, "generate_topic")
    g.add_edge("generate_topic", "write_joke")
    g.add_edge("write_joke", END)
    return g


def test_time_travel_forks_a_plain_invoke_with_an_edit():
    first = story_graph().invoke({})  # no checkpointer given, as LangGraph's InMemorySaver is implied
    assert [(step.step, step.node) for step in first.history] == [(1, "generate_topic"), (2, "write_joke")]
    assert first.state_at(1) == {"topic": "cats"}  # get_state_history's checkpoint after the first node
    forked = story_graph().invoke(Fork(first, step=1, update={"topic": "dogs"}))  # update_state, then go on
    assert forked.outcome == "done", forked.reason
    assert forked.state == {"topic": "dogs", "joke": "a joke about dogs"}
    assert first.state == {"topic": "cats", "joke": "a joke about cats"}  # the original thread is untouched


def test_a_misspelt_field_in_a_forks_edit_is_blamed_on_the_edit():
    first = story_graph().invoke({})
    with pytest.raises(InvalidUpdate) as refused:
        story_graph().invoke(Fork(first, step=1, update={"topik": "dogs"}))
    message = str(refused.value)
    assert message.startswith("Fork(update=...) updated unknown state field 'topik' (did you mean 'topic'?)")
    assert "generate_topic" not in message


def test_a_join_into_end_says_to_give_each_branch_its_own_edge():
    g = trip_graph()
    g.add_edge(["pick_flight", "pick_hotel"], END)
    with pytest.raises(GraphValidationError, match="give each node its own edge to END"):
        g.compile()
