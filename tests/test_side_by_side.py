"""Two runs side by side: a fork and its run, two versions of a graph, a recorded run and its replay."""

from __future__ import annotations

import json

import pytest

from nbgraph import END, START, Fork, Graph, MessagesState, ScriptedModel, llm_node, recorded
from nbgraph.llm import UserMessage
from nbgraph.replay import replay
from nbgraph.side_by_side import Change, Side, side_by_side


def writer(enough: int = 2) -> Graph:
    """draft -> review -> publish once the draft is version ``enough``, else draft again."""
    g = Graph("writer", max_steps=20)
    g.add_node("draft", lambda s: {"text": f"Draft {s['version'] + 1}", "version": s["version"] + 1})
    g.add_node("review", lambda s: {"ok": s["version"] >= enough})
    g.add_node("publish", lambda s: {"published": s["text"]})
    g.add_edge(START, "draft")
    g.add_edge("draft", "review")
    g.add_edge("review", "publish", when=lambda s: s["ok"], label="ok")
    g.add_edge("review", "draft")
    g.add_edge("publish", END)
    return g


def test_a_fork_beside_its_run_marks_where_the_paths_part_and_the_state_first_differs():
    run = writer().invoke({"version": 0}, thread="run")
    fork = writer().invoke(Fork(run, step=1, update={"version": 5}), thread="fork")
    assert run.path == ["draft", "review", "draft", "review", "publish"] and fork.path == ["draft", "review", "publish"]

    both = side_by_side(run, fork, labels=("run", "fork"))

    assert both.parted_at == 3 and both.differs_at == 1
    assert both.changes == (Change("version", "changed", 1, 5, None),)
    assert [(row.frame, row.same_node, row.same_state) for row in both.rows] == [
        (0, True, True),
        (1, True, False),
        (2, True, False),
        (3, False, False),
        (4, False, False),
        (5, False, False),
    ]
    assert both.rows[3].a == Side(3, "draft", "draft", None, None) and both.rows[3].b == Side(
        3, "publish", "publish", None, None
    )
    assert both.rows[4].b is None  # the fork had ended
    assert str(both).splitlines() == [
        "side by side: run (run, done) | fork (fork, done)",
        "     #  run           fork",
        "     0  (input)       (input)",
        "  >  1  draft         draft         first state difference",
        "     2  review        review",
        "  >  3  draft         publish       paths part",
        "     4  review        (ended)",
        "     5  publish       (ended)",
        "the state after frame 1:",
        "  version: run 1, fork 5",
    ]


def test_two_versions_of_a_graph_on_one_input():
    v1, v2 = writer(enough=2).invoke({"version": 0}), writer(enough=1).invoke({"version": 0})
    both = side_by_side(v1, v2, labels=("v1", "v2"))
    assert (both.differs_at, both.parted_at) == (2, 3)
    assert both.changes == (Change("ok", "changed", False, True, None),)
    data = both.to_json()
    json.dumps(data)  # plain JSON, for a view
    assert data["labels"] == ["v1", "v2"] and data["parted_at"] == 3 and data["differs_at"] == 2
    assert data["rows"][3] == {
        "frame": 3,
        "a": {"step": 3, "node": "draft", "path": "draft", "branch": None, "error": None},
        "b": {"step": 3, "node": "publish", "path": "publish", "branch": None, "error": None},
        "same_node": False,
        "same_state": False,
    }
    assert data["changes"] == [{"field": "ok", "kind": "changed", "a": False, "b": True, "at": None}]
    shown = both._repr_html_()
    assert "<td>3</td><td>draft</td><td>publish</td><td>paths part</td>" in shown
    assert "<li>ok: v1 false, v2 true</li>" in shown


def test_a_recorded_run_and_its_replay_never_part_though_their_messages_have_new_ids(tmp_path):
    path = tmp_path / "chat.ndjson"

    def chat(model) -> Graph:
        g = Graph("chat", state=MessagesState, model=model)
        g.add_node("agent", llm_node("You are terse."))
        g.add_node("critic", llm_node("You criticise."))
        g.add_edge(START, "agent")
        g.add_edge("agent", "critic")
        g.add_edge("critic", END)
        return g

    question = {"messages": [UserMessage(content="Hi?")]}
    first = chat(recorded(ScriptedModel(["Hello.", "Too short."]), path, mode="record")).invoke(question)
    second = chat(recorded(None, path, mode="replay")).invoke(question)
    assert first.state.messages[1].id != second.state.messages[1].id
    both = side_by_side(first, second, labels=("recorded", "replayed"))
    assert (both.parted_at, both.differs_at, both.changes) == (None, None, ())
    assert str(both).splitlines()[-1] == "the states never differ"

    # With another reply, the conversation differs from its second message on.
    other = chat(ScriptedModel(["Hello!", "Too short."])).invoke(question)
    changed = side_by_side(first, replay(other))
    assert (changed.parted_at, changed.differs_at) == (None, 1)
    (change,) = changed.changes
    assert (change.field, change.kind, change.at) == ("messages", "changed", 1)
    assert '  messages[1]: a {"content": "Hello."' in str(changed)


def test_a_step_that_failed_in_one_run_is_where_they_part():
    def flaky(fail: bool) -> Graph:
        def work(state):
            if fail:
                raise RuntimeError("no")
            return {"done": True}

        g = Graph("flaky")
        g.add_node("work", work)
        g.add_edge(START, "work")
        g.add_edge("work", END)
        return g

    both = side_by_side(flaky(False).invoke({}), flaky(True).invoke({}))
    assert both.parted_at == 1 and both.differs_at == 1
    assert both.rows[1].b is not None and both.rows[1].b.error == "RuntimeError: no"
    assert both.changes == (Change("done", "only_a", True, None, None),)
    assert "work (failed)" in str(both)


def test_what_is_no_run_is_refused():
    run = writer().invoke({"version": 0})
    with pytest.raises(TypeError, match="side_by_side\\(\\) takes a RunResult, a Run or a Replay as b, got dict"):
        side_by_side(run, {"version": 0})
    with pytest.raises(TypeError, match="labels must be two strings"):
        side_by_side(run, run, labels=("a",))  # type: ignore[arg-type]
