"""The walker: paths, limits, budgets, commands, events."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import threading
import time
from pathlib import Path

import pydantic
import pytest

from nbgraph import (
    END,
    START,
    Budget,
    End,
    Goto,
    Graph,
    MaxStepsExceeded,
    NoEdgeMatched,
    Resume,
    RoutingError,
    RunFailed,
    parse_ndjson,
)
from nbgraph.events import event_from_dict

CTRL_C = Path(__file__).with_name("programs") / "ctrl_c.py"
"""A run that a real SIGINT cancels, in a process of its own."""


def counter_graph(**kwargs) -> Graph:
    """A two-node cycle that counts to state.limit."""
    g = Graph("cycle", **kwargs)
    g.add_node("inc", lambda s: {"n": s.n + 1})
    g.add_node("check", lambda s: None)
    g.add_edge(START, "inc")
    g.add_edge("inc", "check")
    g.add_edge("check", END, when=lambda s: s.n >= s.limit, label="n >= limit")
    g.add_edge("check", "inc")
    return g


class TestPaths:
    def test_linear(self):
        g = Graph("linear")
        for name in "abc":
            g.add_node(name, lambda s, name=name: {"trail": s.trail + name})
        g.add_edge(START, "a")
        g.add_edge("a", "b")
        g.add_edge("b", "c")
        g.add_edge("c", END)
        result = g.invoke({"trail": ""})
        assert result.outcome == "done"
        assert result.state == {"trail": "abc"}
        assert result.path == ["a", "b", "c"]
        assert [s.step for s in result.history] == [1, 2, 3]

    def test_branching_first_match_wins(self):
        g = Graph("branch")
        g.add_node("analyze", lambda s: None)
        g.add_node("tool_a", lambda s: {"used": "a"})
        g.add_node("tool_b", lambda s: {"used": "b"})
        g.add_edge(START, "analyze")
        g.add_edge("analyze", "tool_a", when=lambda s: "A" in s.q, label="A")
        g.add_edge("analyze", "tool_b", when=lambda s: "B" in s.q, label="B")
        g.add_edge("tool_a", END)
        g.add_edge("tool_b", END)
        assert g.invoke({"q": "AB"}).state["used"] == "a"
        assert g.invoke({"q": "B"}).state["used"] == "b"
        fired = g.invoke({"q": "B"}).history[0].edge
        assert (fired.source, fired.target, fired.label, fired.unconditional) == ("analyze", "tool_b", "B", False)

    def test_cyclic_state_machine(self):
        result = counter_graph().invoke({"n": 0, "limit": 3})
        assert result.path == ["inc", "check"] * 3
        assert result.state["n"] == 3

    def test_revisits_count_visits(self):
        visits = []

        def inc(state, ctx):
            visits.append((ctx.node, ctx.visit, ctx.step))
            return {"n": state.n + 1}

        g = counter_graph()
        g.add_node("inc", inc, replace=True)
        result = g.invoke({"n": 0, "limit": 3})
        assert visits == [("inc", 1, 1), ("inc", 2, 3), ("inc", 3, 5)]
        assert [s.visit for s in result.history if s.node == "check"] == [1, 2, 3]

    def test_revision_note_on_revisits(self):
        notes = []
        g = Graph("notes")
        g.add_node("write", lambda s, ctx: notes.append(ctx.revision_note) or {"n": s.n + 1})
        g.add_node("quiet", lambda s, ctx: notes.append(ctx.revision_note), feedback=False)
        g.add_edge(START, "write")
        g.add_edge("write", "quiet")
        g.add_edge("quiet", "write", when=lambda s: s.n < 2, label="n < 2")
        g.add_edge("quiet", END)
        g.invoke({"n": 0})
        assert notes[0] is None and notes[1] is None and notes[3] is None
        assert notes[2] == (
            "Graph node 'write' visit #2. Prior visit's output is provided above; refine your response based on it."
        )

    def test_async_nodes(self):
        async def fetch(state):
            await asyncio.sleep(0)
            return {"x": 1}

        g = Graph("async")
        g.add_node("fetch", fetch)
        g.add_edge(START, "fetch")
        g.add_edge("fetch", END)
        assert g.invoke({}).state == {"x": 1}

    async def test_ainvoke(self):
        result = await counter_graph().ainvoke({"n": 0, "limit": 2})
        assert result.state["n"] == 2

    async def test_invoke_inside_a_running_loop(self):
        # A notebook cell runs inside the kernel's loop; invoke() must still work there.
        caller_loop, caller_thread = asyncio.get_running_loop(), threading.current_thread()
        assert caller_loop.is_running()
        # All-sync nodes run right here, in the caller's thread, without any loop of nbgraph's.
        sync_threads = []
        g = counter_graph()
        g.add_node("check", lambda s: sync_threads.append(threading.current_thread()), replace=True)
        assert g.invoke({"n": 0, "limit": 2}).state["n"] == 2
        assert sync_threads == [caller_thread, caller_thread]

        ran_on = []

        async def slow(state):
            await asyncio.sleep(0)
            ran_on.append((asyncio.get_running_loop(), threading.current_thread()))
            return {"y": state.x * 2}

        g = Graph("nested")
        g.add_node("slow", slow)
        g.add_edge(START, "slow")
        g.add_edge("slow", END)
        assert g.invoke({"x": 21}).state["y"] == 42
        assert g.invoke({"x": 5}).state["y"] == 10
        # Async nodes run on nbgraph's own loop in a daemon thread, the same one for every
        # call (a model client's pooled connections stay usable); the caller's loop is untouched.
        (loop1, thread1), (loop2, thread2) = ran_on
        assert loop1 is loop2 and loop1 is not caller_loop
        assert thread1 is thread2 and thread1 is not caller_thread and thread1.daemon
        assert asyncio.get_running_loop() is caller_loop and caller_loop.is_running()


class TestCommands:
    def test_goto_overrides_edges(self):
        g = Graph("goto")
        g.add_node("a", lambda s: Goto("c", update={"via": "goto"}))
        g.add_node("b", lambda s: None)
        g.add_node("c", lambda s: None)
        g.add_edge(START, "a")
        g.add_edge("a", "b")
        g.add_edge("b", "c")
        g.add_edge("c", END)
        result = g.invoke({})
        assert result.path == ["a", "c"]
        assert result.state == {"via": "goto"}
        assert result.history[0].edge.label == "goto"

    def test_end_overrides_edges(self):
        g = Graph("end")
        g.add_node("a", lambda s: End(update={"stopped": True}))
        g.add_node("b", lambda s: None)
        g.add_edge(START, "a")
        g.add_edge("a", "b")
        g.add_edge("b", END)
        result = g.invoke({})
        assert result.path == ["a"] and result.state == {"stopped": True}

    def test_goto_unknown_node(self):
        g = Graph("bad")
        g.add_node("a", lambda s: Goto("nowhere"))
        g.add_node("never", lambda s: None)
        g.add_edge(START, "a")
        g.add_edge("a", "never")
        g.add_edge("never", END)
        result = g.invoke({})
        assert result.outcome == "failed"
        assert "node 'a' returned Goto('nowhere'), which is not a node of the graph" in result.reason


class TestLimits:
    def test_max_steps_return_last(self):
        result = counter_graph(max_steps=5).invoke({"n": 0, "limit": 100})
        assert result.outcome == "done"
        assert not result.hit_max_steps
        assert len(result.history) == 5
        assert result.state["n"] == 3
        assert result.reason == "max_steps=5 reached before END (next node: 'check')"

    def test_max_steps_flag(self):
        result = counter_graph(max_steps=4, on_max_steps="flag").invoke({"n": 0, "limit": 100})
        assert result.outcome == "done" and result.hit_max_steps
        assert result.state["n"] == 2

    def test_max_steps_raise(self):
        with pytest.raises(MaxStepsExceeded, match="graph 'cycle' reached max_steps=3 before END") as info:
            counter_graph(max_steps=3, on_max_steps="raise").invoke({"n": 0, "limit": 100})
        assert info.value.result.state["n"] == 2

    def test_default_max_steps_is_50(self):
        result = counter_graph().invoke({"n": 0, "limit": 1000})
        assert len(result.history) == 50

    def test_same_node_limit(self):
        g = Graph("spin", max_same_node=4, max_steps=100)
        g.add_node("spin", lambda s: {"n": s.n + 1})
        g.add_edge(START, "spin")
        g.add_edge("spin", "spin")
        result = g.invoke({"n": 0})
        assert result.outcome == "aborted"
        assert result.reason == "node 'spin' ran 4 times in a row (max_same_node=4)"
        assert result.state["n"] == 4

    def test_same_node_default_is_40(self):
        g = Graph("spin", max_steps=100)
        g.add_node("spin", lambda s: None)
        g.add_edge(START, "spin")
        g.add_edge("spin", "spin")
        assert len(g.invoke({}).history) == 40


def llm_like_graph(tokens: int, cost: float) -> Graph:
    def call(state, ctx):
        ctx.check_budget()
        ctx.add_usage(tokens=tokens, cost=cost, turns=1)
        return {"calls": state.calls + 1}

    g = Graph("llm", max_steps=100)
    g.add_node("call", call)
    g.add_node("tool", lambda s: None)
    g.add_edge(START, "call")
    g.add_edge("call", "tool")
    g.add_edge("tool", "call")
    return g


class TestBudgets:
    @pytest.mark.parametrize(
        ("budget", "calls", "reason"),
        [
            (Budget(turns=3), 3, "budget exceeded: turns 3 >= 3"),
            (Budget(tokens=250), 3, "budget exceeded: tokens 300 >= 250"),
            (Budget(cost=0.05), 3, "budget exceeded: cost 0.0600 >= 0.05"),
        ],
    )
    def test_dimension_named(self, budget, calls, reason):
        result = llm_like_graph(100, 0.02).invoke({"calls": 0}, budget=budget)
        assert result.outcome == "aborted"
        assert result.reason == reason
        assert result.state["calls"] == calls
        assert result.tokens == calls * 100 and result.turns == calls

    def test_usage_recorded_per_step(self):
        result = llm_like_graph(7, 0.5).invoke({"calls": 0}, budget=Budget(turns=2))
        assert [(s.node, s.tokens, s.cost) for s in result.history] == [
            ("call", 7, 0.5),
            ("tool", 0, 0.0),
            ("call", 7, 0.5),
        ]
        assert result.reason == "budget exceeded: turns 2 >= 2"

    def test_budget_checked_inside_a_node(self):
        # check_budget() aborts before the call that would exceed the budget.
        calls = []

        def two_calls(state, ctx):
            for _ in range(2):
                ctx.check_budget()
                calls.append(1)
                ctx.add_usage(tokens=60, turns=1)
            return {"done": True}

        g = Graph("inner")
        g.add_node("two", two_calls)
        g.add_edge(START, "two")
        g.add_edge("two", END)
        result = g.invoke({}, budget=Budget(tokens=50))
        assert result.outcome == "aborted" and result.reason == "budget exceeded: tokens 60 >= 50"
        assert calls == [1] and result.state == {}

    def test_seconds_budget(self, monkeypatch):
        clock = FakeClock()
        monkeypatch.setattr(time, "perf_counter", clock)

        def tick(state):
            clock.now += 1.0
            return {"n": state.n + 1}

        g = Graph("slow", max_steps=100)
        g.add_node("tick", tick)
        g.add_node("tock", lambda s: None)
        g.add_edge(START, "tick")
        g.add_edge("tick", "tock")
        g.add_edge("tock", "tick")
        result = g.invoke({"n": 0}, budget=Budget(seconds=2.5))
        assert result.outcome == "aborted"
        assert result.reason == "budget exceeded: seconds 3.000 >= 2.5"
        assert result.state["n"] == 3

    async def test_waiting_for_a_person_does_not_count(self, monkeypatch):
        clock = FakeClock()
        monkeypatch.setattr(time, "perf_counter", clock)

        async def ask(state, ctx):
            return {"answer": await ctx.request_input("ok?")}

        def work(state):
            clock.now += 1.0
            return None

        g = Graph("patient")
        g.add_node("ask", ask)
        g.add_node("work", work)
        g.add_edge(START, "ask")
        g.add_edge("ask", "work")
        g.add_edge("work", END)
        run = g.start({}, budget=Budget(seconds=2.0), display=False)
        await run.next_pause(timeout=5)
        clock.now += 3600.0  # an hour at lunch
        run.answer("yes")
        result = await run
        assert result.outcome == "done", result.reason
        assert result.history[0].duration == 0.0


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class TestFailures:
    def test_node_exception_names_node_and_step(self):
        def boom(state):
            raise ValueError("bad input")

        g = Graph("fail")
        g.add_node("ok", lambda s: {"x": 1})
        g.add_node("boom", boom)
        g.add_edge(START, "ok")
        g.add_edge("ok", "boom")
        g.add_edge("boom", END)
        result = g.invoke({})
        assert result.outcome == "failed"
        assert result.reason == "node 'boom' failed at step 2: ValueError: bad input"
        assert isinstance(result.error, ValueError)
        assert result.state == {"x": 1}
        assert result.history[-1].error == "ValueError: bad input"

    def test_ctrl_c_during_a_sync_run_of_async_nodes_cancels_it(self):
        # A real SIGINT while invoke() waits for nbgraph's loop thread; in a child
        # process, so a stray KeyboardInterrupt can never end this test session.
        out = subprocess.run([sys.executable, str(CTRL_C)], capture_output=True, text=True, timeout=60)
        assert out.stdout.strip() == "aborted | cancelled during node 'hang' at step 2 | hang {'x': 1}", out.stderr

    def test_keyboard_interrupt_aborts_and_keeps_the_state(self):
        def interrupted(state):
            raise KeyboardInterrupt

        g = Graph("ctrl-c")
        g.add_node("a", lambda s: {"x": 1})
        g.add_node("b", interrupted)
        g.add_edge(START, "a")
        g.add_edge("a", "b")
        g.add_edge("b", END)
        result = g.invoke({})
        assert result.outcome == "aborted"
        assert result.reason == "interrupted (KeyboardInterrupt) during node 'b' at step 2"
        assert result.state == {"x": 1}
        g.add_node("b", lambda s: {"y": 2}, replace=True)
        assert g.invoke(Resume(result.thread)).state == {"x": 1, "y": 2}

    def test_run_failed_gives_its_reason(self):
        def stuck(state):
            raise RunFailed("stuck: the same tool call failed twice")

        g = Graph("stuck")
        g.add_node("agent", stuck)
        g.add_edge(START, "agent")
        g.add_edge("agent", END)
        assert g.invoke({}).reason == "stuck: the same tool call failed twice"

    def test_no_edge_matched_fails_the_run(self):
        g = Graph("nomatch")
        g.add_node("a", lambda s: {"x": 1})
        g.add_edge(START, "a")
        g.add_edge("a", END, when=lambda s: s.x > 5, label="x > 5")
        result = g.invoke({})
        assert result.outcome == "failed"
        assert isinstance(result.error, NoEdgeMatched)
        assert "-> __end__ if x > 5" in result.reason
        # The step fails as a whole: its update is not kept, the node re-runs on resume.
        assert result.state == {}

    def test_predicate_exception_fails_with_node_and_edge(self):
        g = Graph("pred")
        g.add_node("a", lambda s: None)
        g.add_edge(START, "a")
        g.add_edge("a", END, when=lambda s: 1 / 0, label="1 / 0")
        result = g.invoke({})
        assert result.outcome == "failed"
        assert isinstance(result.error, RoutingError)
        assert result.reason == "the condition of edge a -> __end__ [1 / 0] raised ZeroDivisionError: division by zero"

    def test_router_returning_unknown_name_fails(self):
        g = Graph("router")
        g.add_node("a", lambda s: None)
        g.add_edge(START, "a")
        g.add_router("a", lambda s: "ghost", targets=[END])
        result = g.invoke({})
        assert result.outcome == "failed"
        assert "returned 'ghost', which is not one of its targets: __end__" in result.reason


class TestEvents:
    def three_nodes(self) -> Graph:
        g = Graph("three")
        g.add_node("a", lambda s: {"a": 1})
        g.add_node("b", lambda s, ctx: ctx.emit("text-delta", text="hi") or {"b": 2})
        g.add_node("c", lambda s: None)
        g.add_edge(START, "a")
        g.add_edge("a", "b")
        g.add_edge("b", "c", when=lambda s: s.b == 2, label="b == 2")
        g.add_edge("c", END)
        return g

    async def test_a_listener_can_skip_the_per_step_events(self):
        everything, rare = [], []
        run = self.three_nodes().start({}, display=False, on_event=everything.append)
        run.subscribe(rare.append, steps=False)
        result = await run
        assert [e.type for e in rare] == ["run-start", "text-delta", "done"]
        assert [e.type for e in everything if e.type not in ("node-enter", "node-exit", "route")] == [
            e.type for e in rare
        ]
        assert len(run.viewed.history_since(1)) == 2 and run.viewed.history_since(0)[0].node == "a"
        assert result.outcome == "done" and run.viewed.upcoming is None

    def test_the_engines_events_are_what_pydantic_would_build(self):
        """The per-step events skip model_construct: each must still be the model it claims
        to be, field for field and in the model's order, frozen, and valid when read back."""
        seen = []
        self.three_nodes().invoke({}, on_event=seen.append)
        for event in seen:
            fields = event.model_dump()
            assert list(fields) == list(type(event).model_fields), event.type
            assert event == type(event).model_construct(**fields)
            assert event_from_dict(fields) == event
            assert event.model_fields_set == set(fields) or event.type not in ("node-enter", "node-exit", "route")
            with pytest.raises(pydantic.ValidationError):
                event.step = 99
        assert {e.type for e in seen} >= {"node-enter", "node-exit", "route"}

    def test_event_order_for_a_three_node_run(self):
        seen = []
        result = self.three_nodes().invoke({}, on_event=seen.append)
        assert [(e.type, getattr(e, "node", None) or getattr(e, "target", None)) for e in seen] == [
            ("run-start", None),
            ("route", "a"),
            ("node-enter", "a"),
            ("node-exit", "a"),
            ("route", "b"),
            ("node-enter", "b"),
            ("text-delta", "b"),
            ("node-exit", "b"),
            ("route", "c"),
            ("node-enter", "c"),
            ("node-exit", "c"),
            ("route", END),
            ("done", None),
        ]
        assert seen[8].label == "b == 2"
        assert seen[-1].outcome == "done"
        assert {e.thread for e in seen} == {result.thread}

    def test_live_events_equal_the_recorded_trace_but_streamed_text(self):
        # Text deltas are live only: the step's update already holds the whole text.
        seen = []
        result = self.three_nodes().invoke({}, on_event=seen.append)
        assert result.events() == [e for e in seen if e.type != "text-delta"]
        assert any(e.type == "text-delta" for e in seen)

    def test_ndjson_round_trips(self):
        result = self.three_nodes().invoke({})
        text = result.to_ndjson()
        assert len(text.splitlines()) == 12
        assert list(parse_ndjson(text)) == result.events()

    def test_parse_ndjson_rejects_garbage(self):
        with pytest.raises(ValueError, match="line 2 is not an nbgraph event"):
            list(parse_ndjson('{"type":"done","thread":"t","step":1,"outcome":"done"}\n{"type":"nope"}\n'))

    def test_graph_listener_sees_every_run(self):
        seen = []
        g = self.three_nodes()
        g.add_listener(lambda e: seen.append(e.type))
        g.invoke({})
        g.invoke({})
        assert seen.count("done") == 2

    def test_broken_listener_does_not_break_the_run(self):
        def broken(event):
            raise RuntimeError("observer bug")

        with pytest.warns(RuntimeWarning, match="observer bug"):
            result = self.three_nodes().invoke({}, on_event=broken)
        assert result.outcome == "done"

    async def test_astream_yields_events_as_they_happen(self):
        types = [e.type async for e in self.three_nodes().astream({})]
        assert types[0] == "run-start" and types[-1] == "done"
        assert types.count("node-enter") == 3

    def test_error_event(self):
        g = Graph("err")
        g.add_node("a", lambda s: 1 / 0)
        g.add_edge(START, "a")
        g.add_edge("a", END)
        seen = []
        result = g.invoke({}, on_event=seen.append)
        error = next(e for e in seen if e.type == "error")
        assert error.node == "a" and error.error_type == "ZeroDivisionError"
        assert result.events() == seen


class TestWhere:
    """Steps, events and pauses say where they happened: a path and a branch."""

    def test_steps_events_and_ndjson_carry_path_and_branch(self):
        result = counter_graph().invoke({"n": 0, "limit": 1})
        assert [(s.node, s.path, s.branch) for s in result.history] == [("inc", "inc", None), ("check", "check", None)]
        events = result.events()
        enters = [e for e in events if e.type == "node-enter"]
        assert [(e.path, e.branch) for e in enters] == [("inc", None), ("check", None)]
        run_events = [e for e in events if e.type in ("run-start", "done")]
        assert [e.path for e in run_events] == ["", ""]
        lines = [line for line in result.to_ndjson().splitlines() if '"node-exit"' in line]
        assert all('"path":"' in line and '"branch":null' in line for line in lines) and len(lines) == 2

    def test_a_durable_checkpoint_holds_its_frames_and_pauses(self):
        from nbgraph import Frame, MemoryCheckpointer

        async def ask(state, ctx):
            return {"city": await ctx.request_input("Which city?")}

        g = Graph("ask")
        g.add_node("ask", ask)
        g.add_edge(START, "ask")
        g.add_edge("ask", END)
        store = MemoryCheckpointer()
        result = g.invoke({}, checkpointer=store)
        saved = store.get(result.thread)
        assert saved.frames == (Frame("ask", "ask", None),)
        [pause] = result.pauses
        assert saved.pauses == result.pauses
        assert (pause.path, pause.branch) == ("ask", None)


class TestSlowMotion:
    """``start(pace=...)``: a live run waits before each step after its first, so a person can
    follow each node; the waits count against no budget."""

    @staticmethod
    def three_steps() -> Graph:
        g = Graph("slow", budget=Budget(seconds=0.2))
        for name in ("a", "b", "c"):
            g.add_node(name, lambda s, name=name: {"trail": [*s.get("trail", []), name]})
        g.add_edge(START, "a")
        g.add_edge("a", "b")
        g.add_edge("b", "c")
        g.add_edge("c", END)
        return g

    async def test_each_step_after_the_first_waits_its_pace(self):
        entered: list[float] = []
        run = self.three_steps().start(
            {},
            display=False,
            pace=0.1,
            on_event=lambda e: e.type == "node-enter" and entered.append(time.perf_counter()),
        )
        result = await asyncio.wait_for(run, 5)
        assert result.outcome == "done" and result.state["trail"] == [
            "a",
            "b",
            "c",
        ]  # 0.2 s of waits: not the run's time
        gaps = [later - earlier for earlier, later in zip(entered, entered[1:], strict=False)]
        assert len(gaps) == 2 and all(gap >= 0.1 for gap in gaps), gaps

    async def test_a_run_that_cannot_wait_takes_no_pace(self):
        entered: list[float] = []
        run = self.three_steps().start(
            {},
            display=False,
            pace=0.5,
            durable=True,
            on_event=lambda e: e.type == "node-enter" and entered.append(time.perf_counter()),
        )
        assert (await asyncio.wait_for(run, 5)).outcome == "done"
        assert entered[-1] - entered[0] < 0.5

    def test_a_pace_that_is_not_seconds_is_refused(self):
        for pace in (-1, "fast", True, 61):
            with pytest.raises(ValueError, match="pace is the seconds to wait before each step"):
                self.three_steps().start({}, display=False, pace=pace)
