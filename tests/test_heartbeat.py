"""The prebuilt heartbeat: an agent graph run once per cycle, a fresh run each time."""

from __future__ import annotations

import time

import pytest

from nbgraph import END, START, Graph, MessagesState, Resume, ScriptedModel, SQLiteCheckpointer, llm_node
from nbgraph.prebuilt import CycleOutcome, heartbeat, read_outcome


def agent_graph(model: ScriptedModel) -> Graph:
    agent = Graph("agent", state=MessagesState)
    agent.add_node("agent", llm_node("You work in cycles.", model=model))
    agent.add_edge(START, "agent")
    agent.add_edge("agent", END)
    return agent


def prompts(model: ScriptedModel) -> list[list[str]]:
    """What the model was shown in each call: the contents of the user messages."""
    return [[m.content for m in call.messages if m.role == "user"] for call in model.calls]


class TestCycles:
    def test_runs_until_the_agent_says_done_recording_every_cycle(self):
        model = ScriptedModel(["read 3 files", "fixed two of them", "all fixed. DONE"])
        result = heartbeat(agent_graph(model), max_cycles=5).invoke({"task": "fix the files"})
        assert result.outcome == "done", result.reason
        assert [o.status for o in result.state.outcomes] == ["running", "running", "done"]
        assert result.state.outcomes[1].summary == "fixed two of them"
        # Cycle, rest, cycle, rest, cycle: each cycle's agent steps nest under it.
        assert [r.path for r in result.history if "/" not in r.path] == ["cycle", "rest", "cycle", "rest", "cycle"]
        assert [r.path for r in result.history if "/" in r.path] == ["cycle/agent"] * 3

    def test_every_cycle_is_a_fresh_run_that_hears_the_previous_summary(self):
        model = ScriptedModel(["step one", "step two", "DONE"])
        heartbeat(agent_graph(model), max_cycles=3).invoke({"task": "tidy"})
        shown = prompts(model)
        # One user message per call: nothing of an earlier cycle's conversation carries over...
        assert [len(messages) for messages in shown] == [1, 1, 1]
        assert shown[0][0].startswith("Heartbeat cycle 1 of 3.\nTask: tidy")
        assert "Previous cycle" not in shown[0][0]
        # ...but the summary of the cycle before does.
        assert "Heartbeat cycle 2 of 3." in shown[1][0] and "Previous cycle: step one" in shown[1][0]
        assert "Previous cycle: step two" in shown[2][0]

    def test_max_cycles_ends_a_heartbeat_still_running(self):
        model = ScriptedModel(lambda messages: "still working")
        result = heartbeat(agent_graph(model), max_cycles=4).invoke({"task": "forever"})
        assert result.outcome == "done", result.reason
        assert result.state.cycles == 4 and len(model.calls) == 4
        assert result.state.status == "running"

    def test_blocked_ends_it_with_the_reason(self):
        model = ScriptedModel(["looked around", "BLOCKED: the API key is missing"])
        result = heartbeat(agent_graph(model), max_cycles=5).invoke({"task": "deploy"})
        assert [o.status for o in result.state.outcomes] == ["running", "blocked"]
        assert result.state.outcomes[-1].blocker == "the API key is missing"
        assert len(model.calls) == 2

    def test_cycles_are_every_seconds_apart(self):
        model = ScriptedModel(lambda messages: "working")
        t0 = time.perf_counter()
        result = heartbeat(agent_graph(model), every=0.05, max_cycles=3).invoke({"task": "poll"})
        elapsed = time.perf_counter() - t0
        assert result.state.cycles == 3
        assert elapsed >= 2 * 0.05  # two rests between three cycles, none after the last

    def test_a_function_agent_with_its_own_status_and_prompt(self):
        agent = Graph("counter")
        agent.add_node("count", lambda s: {"status": "done" if s["n"] >= 2 else "running", "blocker": None})
        agent.add_edge(START, "count")
        agent.add_edge("count", END)
        beat = heartbeat(agent, prompt=lambda state: {"n": state.cycles}, max_cycles=9)
        result = beat.invoke({})
        assert [o.status for o in result.state.outcomes] == ["running", "running", "done"]

    def test_bad_arguments_say_what_is_wrong(self):
        agent = agent_graph(ScriptedModel(["DONE"]))
        with pytest.raises(ValueError, match="every=-1"):
            heartbeat(agent, every=-1)
        with pytest.raises(ValueError, match="max_cycles=0"):
            heartbeat(agent, max_cycles=0)


class TestReadOutcome:
    @pytest.mark.parametrize(
        ("text", "status", "blocker"),
        [
            ("All good. DONE", "done", None),
            ("BLOCKED: no network", "blocked", "no network"),
            ("BLOCKED", "blocked", None),
            ("undone work remains", "running", None),  # DONE only as a word
            ("", "running", None),
        ],
    )
    def test_the_last_assistant_message_decides(self, text, status, blocker):
        state = {"messages": [{"role": "user", "content": "go"}, {"role": "assistant", "content": text}]}
        assert read_outcome(state) == CycleOutcome(status=status, summary=text, blocker=blocker)

    def test_a_status_field_wins(self):
        state = {"status": "blocked", "blocker": "disk full", "messages": [{"role": "assistant", "content": "DONE"}]}
        assert read_outcome(state).status == "blocked"


def test_a_durable_heartbeat_paused_inside_a_cycle_resumes_in_that_cycle(tmp_path):
    calls: list[int] = []

    async def ask(state, ctx):
        calls.append(len(state["log"]))
        answer = await ctx.request_input("go on?")
        return {"status": "done" if answer == "stop" else "running"}

    agent = Graph("asker")
    agent.add_node("ask", ask)
    agent.add_edge(START, "ask")
    agent.add_edge("ask", END)
    beat = heartbeat(agent, prompt=lambda state: {"log": [o.status for o in state.outcomes]}, max_cycles=3)
    store = SQLiteCheckpointer(tmp_path / "beat.db")
    first = beat.invoke({"task": "ask"}, checkpointer=store)
    assert first.outcome == "interrupted" and first.pauses[0].path == "cycle/ask"
    second = beat.invoke(Resume(first, "more"), checkpointer=store)
    assert second.outcome == "interrupted" and second.state.cycles == 1
    third = beat.invoke(Resume(second, "stop"), checkpointer=store)
    assert third.outcome == "done", third.reason
    assert [o.status for o in third.state.outcomes] == ["running", "done"]
    # Each cycle's node ran once to its pause and once more with the answer; cycle 2 saw cycle 1's outcome.
    assert calls == [0, 0, 1, 1]
    assert store.threads() == [first.thread]
