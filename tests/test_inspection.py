"""The inspector: each kind of step seen whole, read back without running any node."""

from __future__ import annotations

import json
from typing import Annotated

import pydantic
import pytest
from openai_server import Reply as ServerReply

from nbgraph import (
    END,
    START,
    Goto,
    Graph,
    MemoryCheckpointer,
    MessagesState,
    OpenAIModel,
    Resume,
    ScriptedModel,
    Send,
    SQLiteCheckpointer,
    append,
    llm_node,
)
from nbgraph.checkpoint.sqlite import SQLiteCheckpointer as _SQLite
from nbgraph.inspection import Inspection, diff_states, inspect_step
from nbgraph.llm import Reply, UserMessage
from nbgraph.reducers import AppendLog


class Doc(pydantic.BaseModel):
    version: int = 0
    text: str = ""
    ok: bool = False
    too_long: bool = False
    published: str = ""
    notes: Annotated[list[str], append] = []


def writer(calls: list[str] | None = None) -> Graph:
    """draft -> review; review -> publish if ok, -> rewrite if too long, else -> draft."""
    calls = calls if calls is not None else []

    def draft(s):
        calls.append("draft")
        return {"text": "x" * (s.version + 1) * 4, "version": s.version + 1, "notes": [f"draft {s.version + 1}"]}

    def review(s):
        calls.append("review")
        return {"ok": s.version >= 3, "too_long": len(s.text) > 100}

    g = Graph("writer", state=Doc, max_steps=20)
    g.add_node("draft", draft)
    g.add_node("review", review)
    g.add_node("rewrite", lambda s: {"text": s.text[:10]})
    g.add_node("publish", lambda s: {"published": s.text})
    g.add_edge(START, "draft")
    g.add_edge("draft", "review")
    g.add_edge("review", "publish", when=lambda s: s.ok, label="state.ok")
    g.add_edge("review", "rewrite", when=lambda s: s.too_long, label="state.too_long")
    g.add_edge("review", "draft", when=lambda s, ctx: ctx.visit < 5, label="ctx.visit < 5")
    g.add_edge("review", END)
    g.add_edge("rewrite", "review")
    g.add_edge("publish", END)
    return g


class TestPlainAndConditionalSteps:
    def test_a_plain_step_shows_its_input_its_update_as_a_diff_and_its_one_edge(self):
        result = writer().invoke({})
        seen = result.inspect(1)
        assert isinstance(seen, Inspection)
        assert (seen.step, seen.node, seen.path, seen.branch, seen.visit) == (1, "draft", "draft", None, 1)
        assert seen.input == Doc().model_dump()
        assert seen.update == {"text": "xxxx", "version": 1, "notes": ["draft 1"]}
        assert seen.change.changed["version"].model_dump() == {"before": 0, "after": 1}
        assert seen.change.appended == {"notes": ["draft 1"]}
        assert "notes" not in seen.change.changed
        assert seen.edge.target == "review" and seen.routed_on == "step"
        [edge] = seen.candidates
        assert (edge.target, edge.kind, edge.unconditional, edge.holds, edge.chosen, edge.fired) == (
            "review",
            "edge",
            True,
            True,
            True,
            True,
        )
        assert seen.duration >= 0 and seen.started > 0 and seen.error is None

    def test_every_candidate_edge_is_evaluated_not_only_up_to_the_one_that_fired(self):
        result = writer().invoke({})
        assert result.path == ["draft", "review", "draft", "review", "draft", "review", "publish"]
        first = result.inspect(2)  # review, visit 1: not ok, not too long, ctx.visit < 5
        assert [(c.target, c.label, c.value, c.holds, c.chosen, c.fired) for c in first.candidates] == [
            ("publish", "state.ok", False, False, False, False),
            ("rewrite", "state.too_long", False, False, False, False),
            ("draft", "ctx.visit < 5", True, True, True, True),
            (END, "always", None, True, False, False),
        ]
        last = result.inspect(6)  # review, visit 3: ok; the later candidates are still evaluated
        assert [(c.target, c.holds, c.chosen, c.fired) for c in last.candidates] == [
            ("publish", True, True, True),
            ("rewrite", False, False, False),
            ("draft", True, False, False),
            (END, True, False, False),
        ]
        assert last.input["version"] == 3 and last.change.changed["ok"].after is True

    def test_a_condition_that_raises_is_reported_with_its_error_not_raised(self):
        g = Graph("writer", state=Doc)
        g.add_node("draft", lambda s: {"text": "x"})
        g.add_node("publish", lambda s: {"published": s.text})
        g.add_edge(START, "publish")
        # The first edge holds whenever the run gets here, so the second is never evaluated by
        # the run: only the inspector, which shows every candidate, meets its error.
        g.add_edge("publish", END, when=lambda s: True, label="done")
        g.add_edge("publish", "draft", when=lambda s: s.missing > 1, label="state.missing > 1")
        g.add_edge("draft", END)
        result = g.invoke({})
        assert result.outcome == "done"
        seen = result.inspect(1)
        broken = next(c for c in seen.candidates if c.target == "draft")
        assert broken.holds is None and broken.error.startswith("AttributeError: ") and "missing" in broken.error
        [problem] = seen.problems
        assert (problem.kind, problem.edge) == ("condition-raised", {"from": "publish", "to": "draft"})
        assert "the condition of edge publish -> draft [state.missing > 1] raised AttributeError" in problem.message

    def test_inspecting_runs_no_node(self):
        calls: list[str] = []
        result = writer(calls).invoke({})
        ran = list(calls)
        for step in range(1, len(result.history) + 1):
            result.inspect(step)
        assert calls == ran

    def test_a_step_that_is_not_in_the_run_is_a_clear_error(self):
        result = writer().invoke({})
        with pytest.raises(ValueError, match="step numbers start at 1"):
            result.inspect(0)
        with pytest.raises(ValueError, match="has no step 99"):
            result.inspect(99)
        with pytest.raises(TypeError, match="a step number or a Step record"):
            result.inspect("2")
        with pytest.raises(ValueError, match="needs the store that holds it and the graph that ran it"):
            inspect_step(result.thread, 1)


class TestCommandsAndBranches:
    def test_a_goto_shows_the_declared_destinations_and_the_one_taken(self):
        g = Graph("triage", state=Doc)
        g.add_node("triage", lambda s: Goto("later", update={"text": "later"}), destinations=["urgent", "later"])
        g.add_node("urgent", lambda s: None)
        g.add_node("later", lambda s: None)
        g.add_edge(START, "triage")
        g.add_edge("urgent", END)
        g.add_edge("later", END)
        seen = g.invoke({}).inspect(1)
        assert seen.edge.label == "goto" and seen.change.changed["text"].after == "later"
        assert [(c.target, c.kind, c.fired, c.holds) for c in seen.candidates] == [
            ("urgent", "goto", False, None),
            ("later", "goto", True, None),
        ]

    @pytest.mark.parametrize("store", [None, "memory"])
    def test_a_map_branch_shows_its_item_the_state_it_saw_and_only_its_own_change(self, store):
        g = Graph("mapper", state=Doc)
        g.add_node("plan", lambda s: {"text": "abc"})
        g.add_node("work", lambda item: {"notes": [f"did {item}"]})
        g.add_node("done", lambda s: None)
        g.add_edge(START, "plan")
        g.add_edge("plan", "work", each=lambda s: list(s.text), label="each letter")
        g.add_edge("work", "done")
        g.add_edge("done", END)
        result = g.invoke({}, checkpointer=MemoryCheckpointer() if store else None)
        planned = result.inspect(1)
        [mapped] = planned.candidates
        assert (mapped.kind, mapped.items, mapped.fired) == ("map", 3, True)
        second = result.inspect(3)  # the second branch, work[1]
        assert (second.node, second.branch, second.has_payload, second.payload) == ("work", "work[1]", True, "b")
        assert second.input["notes"] == []  # the state the branches started from: not its siblings' updates
        assert second.change.appended == {"notes": ["did b"]}
        assert second.routed_on == "none"  # a map routes once, after its last branch
        last = result.inspect(4)
        assert (last.branch, last.routed_on, last.edge.target) == ("work[2]", "superstep", "done")
        assert [c.fired for c in last.candidates] == [True]

    @pytest.mark.parametrize("store", [None, "memory"])
    def test_fan_out_arms_saw_the_same_state_and_route_on_the_state_after_both(self, store):
        g = Graph("fan", state=Doc)
        g.add_node("plan", lambda s: None)
        g.add_node("x", lambda s: {"notes": ["x"], "ok": True})
        g.add_node("y", lambda s: {"notes": ["y"]})
        g.add_node("merge", lambda s: None)
        g.add_edge(START, "plan")
        g.add_edge("plan", ["x", "y"])
        g.add_edge("x", "merge", when=lambda s: s.notes == ["x", "y"], label="both in")
        g.add_edge("x", END)
        g.add_edge("y", "merge")
        g.add_edge("merge", END)
        result = g.invoke({}, checkpointer=MemoryCheckpointer() if store else None)
        arm = result.inspect(3)  # y
        assert (arm.node, arm.branch, arm.input["notes"], arm.change.appended) == ("y", "y", [], {"notes": ["y"]})
        first = result.inspect(2)  # x routes on the state after both arms
        assert first.routed_on == "superstep"
        assert [(c.target, c.holds, c.fired) for c in first.candidates] == [("merge", True, True), (END, True, False)]
        fan = result.inspect(1)
        assert [(c.kind, c.targets, c.fired) for c in fan.candidates] == [("fanout", ["x", "y"], True)]

    def test_a_send_branch_says_its_payload_is_not_recorded(self):
        g = Graph("sender", state=Doc)
        g.add_node("plan", lambda s: [Send("work", 1), Send("work", 2)], destinations=["work"])
        g.add_node("work", lambda n: {"notes": [str(n)]})
        g.add_edge(START, "plan")
        g.add_edge("work", END)
        result = g.invoke({})
        sent = result.inspect(1)
        assert [(c.kind, c.target, c.fired) for c in sent.candidates] == [("goto", "work", True)]
        branch = result.inspect(3)
        assert (branch.branch, branch.has_payload, branch.change.appended) == ("work[1]", False, {"notes": ["2"]})
        assert any("payload" in note and "not recorded" in note for note in branch.missing)


def inner_graph(calls: list[str]) -> Graph:
    inner = Graph("inner", state=Doc)

    def a(s):
        calls.append("a")
        return {"notes": ["a"], "version": s.version + 10}

    inner.add_node("a", a)
    inner.add_node("b", lambda s: {"notes": ["b"]})
    inner.add_edge(START, "a")
    inner.add_edge("a", "b", when=lambda s: s.version >= 10, label="state.version >= 10")
    inner.add_edge("a", END)
    inner.add_edge("b", END)
    return inner


class TestSubGraphs:
    @pytest.mark.parametrize("store", [None, "memory"])
    def test_a_step_inside_a_sub_graph_on_the_shared_state(self, store):
        calls: list[str] = []
        g = Graph("outer", state=Doc)
        g.add_node("start", lambda s: {"notes": ["start"]})
        g.add_node("research", inner_graph(calls))
        g.add_edge(START, "start")
        g.add_edge("start", "research")
        g.add_edge("research", END)
        result = g.invoke({}, checkpointer=MemoryCheckpointer() if store else None)
        inner_a = next(r for r in result.history if r.path == "research/a")
        seen = result.inspect(inner_a)
        assert (seen.node, seen.path, seen.step, seen.graph) == ("a", "research/a", 1, "inner")
        assert seen.input["notes"] == ["start"]
        assert seen.change.changed["version"].model_dump() == {"before": 0, "after": 10}
        assert [(c.target, c.holds, c.fired) for c in seen.candidates] == [("b", True, True), (END, True, False)]
        container = result.inspect(2)  # the sub-graph node: its steps' changes fold into the parent's
        assert (container.node, container.change.appended) == ("research", {"notes": ["a", "b"]})
        assert calls == ["a"]

    def test_a_step_inside_a_mapped_sub_graph_saw_what_input_gave_it(self):
        calls: list[str] = []
        g = Graph("outer", state=Doc)
        g.add_node(
            "research",
            inner_graph(calls),
            input=lambda s: {"version": 5, "notes": ["given"]},
            output=lambda r: {"published": ",".join(r.notes)},
        )
        g.add_edge(START, "research")
        g.add_edge("research", END)
        result = g.invoke({})
        b = next(r for r in result.history if r.path == "research/b")
        seen = result.inspect(b)
        assert seen.input["notes"] == ["given", "a"] and seen.input["version"] == 15
        assert seen.change.appended == {"notes": ["b"]}
        assert result.inspect(1).change.changed["published"].after == "given,a,b"


class TestPeopleAndFailures:
    def test_an_approval_with_an_edit_shows_the_edit_in_the_change_and_the_answer(self):
        g = writer()
        g.add_node("publish", lambda s: {"published": s.text}, approval=True, replace=True)
        paused = g.invoke({})
        result = g.invoke(Resume(paused, {"approved": True, "update": {"text": "edited", "notes": ["by a person"]}}))
        assert result.outcome == "done"
        seen = result.inspect(7)
        assert seen.edit == {"text": "edited", "notes": ["by a person"]}
        assert seen.change.changed["text"].after == "edited"
        assert seen.change.appended == {"notes": ["by a person"]}
        [pause] = seen.pauses
        assert (pause.kind, pause.answered, pause.answer["update"]["text"]) == ("approval", True, "edited")

    def test_a_failed_step_shows_its_error_and_an_unchanged_state(self):
        g = Graph("boom", state=Doc)
        g.add_node("first", lambda s: {"version": 1})
        g.add_node("fails", lambda s: 1 / 0)
        g.add_edge(START, "first")
        g.add_edge("first", "fails")
        g.add_edge("fails", END, when=lambda s: s.ok, label="state.ok")
        g.add_edge("fails", "first")
        for store in (None, MemoryCheckpointer()):
            result = g.invoke({}, checkpointer=store)
            assert result.outcome == "failed"
            seen = result.inspect(2)
            assert seen.error.startswith("ZeroDivisionError")
            assert seen.input["version"] == 1 and seen.change.fields == []
            assert seen.routed_on == "none" and [c.holds for c in seen.candidates] == [None, None]

    def test_a_resumed_run_that_failed_again_shows_the_step_the_store_never_kept(self, tmp_path):
        g = Graph("again", state=Doc)
        g.add_node("first", lambda s: {"version": 1, "notes": ["first"]})
        g.add_node("fails", lambda s: {}["missing"])
        g.add_edge(START, "first")
        g.add_edge("first", "fails")
        g.add_edge("fails", END)
        store = SQLiteCheckpointer(tmp_path / "runs.db")
        failed = g.invoke({}, checkpointer=store)
        again = g.invoke(Resume(failed), checkpointer=store)
        assert again.outcome == "failed"
        seen = again.inspect(2)
        assert seen.error.startswith("KeyError") and seen.input["notes"] == ["first"]
        assert again.inspect(1).change.appended == {"notes": ["first"]}  # an earlier run's step, from the store

    def test_a_condition_that_failed_the_run_is_a_problem_of_the_step_the_run_and_the_drawing(self):
        g = Graph("broken", state=Doc)
        g.add_node("a", lambda s: {"version": 1})
        g.add_edge(START, "a")
        g.add_edge("a", END, when=lambda s: s.nothing, label="state.nothing")
        result = g.invoke({})
        assert result.outcome == "failed"
        seen = result.inspect(1)
        [candidate] = seen.candidates
        assert "the condition of edge a -> __end__ [state.nothing] raised AttributeError" in candidate.error
        assert [(p.kind, p.edge) for p in seen.problems] == [("condition-raised", {"from": "a", "to": END})]
        assert [(p.kind, p.edge) for p in result.problems()] == [("condition-raised", {"from": "a", "to": END})]
        drawn = result.to_dag()["problems"]
        assert [(p["kind"], p["edge"]) for p in drawn] == [("condition-raised", {"from": "a", "to": END})]


class TestLLMSteps:
    def test_an_llm_step_shows_the_replies_and_tool_calls_it_recorded(self):
        def lookup(city: str) -> str:
            """Look a city up."""
            return f"{city}: sunny"

        model = ScriptedModel([Reply(tool_calls=[("lookup", {"city": "Oslo"})]), "Oslo is sunny."])
        g = Graph("chat", state=MessagesState)
        g.add_node("agent", llm_node("You help.", model=model, tools=[lookup]))
        g.add_edge(START, "agent")
        g.add_edge("agent", END)
        result = g.invoke({"messages": [UserMessage(content="Weather in Oslo?")]})
        seen = result.inspect(1)
        assert seen.turns == 2 and seen.tokens > 0
        assert [m["role"] for m in seen.llm.messages] == ["assistant", "tool", "assistant"]
        assert seen.llm.messages[-1]["content"] == "Oslo is sunny."
        [use] = seen.llm.tool_calls
        assert (use.name, use.args, use.result, use.is_error) == ("lookup", {"city": "Oslo"}, "Oslo: sunny", False)
        assert seen.llm.sent is None and any("request sent to the model" in note for note in seen.missing)
        assert [m["content"] for m in seen.input["messages"]] == ["Weather in Oslo?"]
        assert seen.change.appended["messages"][0]["tool_calls"][0]["name"] == "lookup"

    async def test_the_api_key_appears_nowhere_in_an_inspection(self, openai_server):
        key = "sk-inspect-SECRET-7e2d41"
        openai_server.script(ServerReply(text="Hello from the server."))
        async with OpenAIModel("gpt-4o-mini", base_url=openai_server.base_url, api_key=key, max_retries=0) as model:
            g = Graph("chat", state=MessagesState, model=model)
            g.add_node("agent", llm_node("You are terse."))
            g.add_edge(START, "agent")
            g.add_edge("agent", END)
            result = await g.ainvoke({"messages": ["Say hello"]})
        assert result.outcome == "done", result.reason
        seen = result.inspect(1)
        assert seen.llm.messages[0]["content"] == "Hello from the server."
        texts = [
            seen.model_dump_json(),
            json.dumps(result.replay().to_json(states=True)),
            repr(seen),
            result.to_ndjson(),
        ]
        assert all(key not in text for text in texts)


class TestLongRuns:
    def test_the_diff_of_a_10000_message_conversation_holds_only_the_appended_message(self):
        g = Graph("long", state=MessagesState, max_steps=10_000, max_same_node=10_001)
        g.add_node("talk", lambda s: {"messages": [UserMessage(content=f"message {len(s.messages)}")]})
        g.add_edge(START, "talk")
        g.add_edge("talk", "talk", when=lambda s: len(s.messages) < 10_000, label="fewer than 10,000")
        g.add_edge("talk", END)
        result = g.invoke({})
        assert len(result.state.messages) == 10_000
        seen = result.inspect(10_000)
        assert [m["content"] for m in seen.change.appended["messages"]] == ["message 9999"]
        assert not seen.change.changed and not seen.change.replaced
        assert len(seen.change.model_dump_json()) < 300
        assert len(seen.input["messages"]) == 9_999

    def test_the_last_step_of_a_2000_step_sqlite_thread_reads_two_checkpoints_not_the_thread(self, tmp_path):
        class Counting(_SQLite):
            def __init__(self, *args, **kwargs):
                super().__init__(*args, **kwargs)
                self.reads = {"rows": 0, "snapshots": 0, "every row": 0}

            def _rows(self, thread, after, upto):
                rows = super()._rows(thread, after, upto)
                self.reads["rows"] += len(rows)
                return rows

            def _snapshot(self, thread, upto):
                self.reads["snapshots"] += 1
                return super()._snapshot(thread, upto)

            def _data(self, thread):
                self.reads["every row"] += 1
                return super()._data(thread)

        g = Graph("long", state=MessagesState, max_steps=2_000, max_same_node=2_001)
        g.add_node("talk", lambda s: {"messages": [UserMessage(content=f"message {len(s.messages)} " + "x" * 100)]})
        g.add_edge(START, "talk")
        g.add_edge("talk", "talk", when=lambda s: len(s.messages) < 2_000, label="more")
        g.add_edge("talk", END)
        path = tmp_path / "long.db"
        g.invoke({}, checkpointer=SQLiteCheckpointer(path), thread="t")
        store = Counting(path)  # as another process would open it
        seen = inspect_step("t", 2_000, checkpointer=store, graph=g)
        assert seen.change.appended["messages"][0]["content"].startswith("message 1999 ")
        assert seen.input["messages"][-1]["content"].startswith("message 1998 ")
        assert store.reads["every row"] == 0  # the history of every step is never read
        assert store.reads["snapshots"] == 2  # the state before the step, and the step's own checkpoint
        baseline = Counting(path)
        baseline.get("t")  # what a resume reads: one snapshot and the rows after it
        assert store.reads["rows"] <= 2 * baseline.reads["rows"] + 2


def test_diff_states_reports_added_changed_removed_appended_and_replaced_items():
    log = AppendLog([{"id": "1", "t": "a"}, {"id": "2", "t": "b"}])
    grown = log.extended([{"id": "2", "t": "B"}, {"id": "3", "t": "c"}])
    diff = diff_states({"log": log, "x": 1, "gone": True}, {"log": grown, "x": 2, "new": "n"})
    assert diff.added == {"new": "n"} and diff.removed == ["gone"]
    assert diff.changed["x"].model_dump() == {"before": 1, "after": 2}
    assert diff.appended == {"log": [{"id": "3", "t": "c"}]}
    assert [r.model_dump() for r in diff.replaced["log"]] == [
        {"index": 1, "before": {"id": "2", "t": "b"}, "after": {"id": "2", "t": "B"}}
    ]
    assert diff.fields == ["gone", "log", "new", "x"]
