"""A TypedDict state, as a LangGraph user writes one: nodes read a mapping (``state["topic"]``
or ``state.topic``), each field is checked against its type and folds through the reducer its
``Annotated[...]`` names, starting from its type's empty value; a run gives back a dict."""

from __future__ import annotations

import operator
from typing import Annotated, NotRequired

import pytest
from typing_extensions import TypedDict

from nbgraph import END, START, Graph, InvalidUpdate, Resume, Send, SQLiteCheckpointer


class Jokes(TypedDict, total=False):
    topic: str
    subjects: list[str]
    jokes: Annotated[list[str], operator.add]
    best: str


def map_reduce() -> Graph:
    """LangGraph's map-reduce: subjects fan out with Send, each branch adds a joke, one picks."""
    g = Graph("jokes", state=Jokes)
    g.add_node("subjects", lambda s: {"subjects": [f"{s['topic']} {kind}" for kind in ("cats", "dogs", "fish")]})
    g.add_node("fan", lambda s: [Send("joke", subject) for subject in s["subjects"]], destinations=["joke"])
    g.add_node("joke", lambda subject: {"jokes": [f"a joke about {subject}"]})
    g.add_node("pick", lambda s: {"best": s.jokes[-1]})
    g.add_edge(START, "subjects")
    g.add_edge("subjects", "fan")
    g.add_edge("joke", "pick")
    g.add_edge("pick", END)
    return g


def test_a_typeddict_state_folds_every_branch_through_its_reducer():
    result = map_reduce().invoke({"topic": "space"})
    assert result.outcome == "done", result.reason
    assert type(result.state) is dict
    assert result.state["jokes"] == [
        "a joke about space cats",
        "a joke about space dogs",
        "a joke about space fish",
    ]  # operator.add started from [] and kept each branch's, in order
    assert result.state["best"] == "a joke about space fish"


def test_each_field_is_checked_against_its_type_and_unknown_keys_are_named():
    g = Graph("typed", state=Jokes)
    g.add_node("bad", lambda s: {"best": 3})
    g.add_edge(START, "bad")
    g.add_edge("bad", END)
    failed = g.invoke({})
    assert failed.outcome == "failed"
    assert failed.reason.startswith(
        "node 'bad' set field 'best' to 3, which is invalid: Input should be a valid string"
    )

    g.add_node("bad", lambda s: {"bets": "x"}, replace=True)
    assert g.invoke({}).reason == (
        "node 'bad' updated unknown state field 'bets' (did you mean 'best' or 'subjects'?); "
        "Jokes has fields: best, jokes, subjects, topic"
    )
    with pytest.raises(InvalidUpdate, match=r"input does not fit state Jokes: 'topik' is not one of its fields"):
        g.invoke({"topik": "cats"})
    with pytest.raises(InvalidUpdate, match=r"input does not fit state Jokes: .*'subjects' to 'cats'"):
        g.invoke({"subjects": "cats"})


def test_a_key_is_there_once_set_and_required_markers_are_read_through():
    class Counter(TypedDict):
        n: int
        notes: NotRequired[Annotated[list[str], operator.add]]

    g = Graph("count", state=Counter)
    g.add_node("inc", lambda s: {"n": s.get("n", 0) + 1, "notes": [f"at {s.get('n', 0)}"]})
    g.add_edge(START, "inc")
    g.add_edge("inc", "inc", when=lambda s: s["n"] < 3, label="n < 3")
    g.add_edge("inc", END)
    seen = []
    g.add_node("inc", lambda s: seen.append(dict(s)) or {"n": s.get("n", 0) + 1, "notes": ["x"]}, replace=True)
    result = g.invoke({})
    assert result.state == {"n": 3, "notes": ["x", "x", "x"]}
    assert seen[0] == {}  # nothing set yet: the first node sees no keys


def test_a_typeddict_thread_resumes_from_its_checkpoint(tmp_path):
    class Trip(TypedDict, total=False):
        city: str
        stops: Annotated[list[str], operator.add]

    async def ask(state, ctx):
        return {"city": await ctx.request_input("Which city?"), "stops": ["asked"]}

    g = Graph("trip", state=Trip)
    g.add_node("start", lambda s: {"stops": ["start"]})
    g.add_node("ask", ask)
    g.add_edge(START, "start")
    g.add_edge("start", "ask")
    g.add_edge("ask", END)
    store = SQLiteCheckpointer(tmp_path / "runs.db")
    paused = g.invoke({}, checkpointer=store)
    assert paused.outcome == "interrupted"
    done = g.invoke(Resume(paused.thread, "Oslo"), checkpointer=store)
    assert done.state == {"stops": ["start", "asked"], "city": "Oslo"}
