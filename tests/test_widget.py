"""The live view from Python: coalesced updates and the messages clicks send."""

from __future__ import annotations

import asyncio
from typing import Annotated

import pydantic
import pytest

from nbgraph import END, START, Graph, MemoryCheckpointer, Resume, _observer, append
from nbgraph._protocol import PROTOCOL, checked
from nbgraph.engine import launch, open_run
from nbgraph.widget import GraphView, MessageError, graph_mimebundle


class Wire:
    """Records what a view sends through its real comm."""

    def __init__(self, view: GraphView) -> None:
        self.updates: list[dict] = []
        self.custom: list[dict] = []
        self._news: asyncio.Event | None = None
        original = view.comm.publish_msg

        def publish(msg_type, data=None, metadata=None, buffers=None, **keys):
            if data and data.get("method") == "update":
                self.updates.append(data["state"])
            elif data and data.get("method") == "custom":
                self.custom.append(data["content"])
            if self._news is not None:
                self._news.set()
            return original(msg_type, data=data, metadata=metadata, buffers=buffers, **keys)

        view.comm.publish_msg = publish

    async def update_where(self, predicate, timeout: float = 5.0) -> dict:
        """The first update sent (or sent within `timeout` seconds from now) that satisfies `predicate`."""

        async def scan() -> dict:
            while True:
                for update in self.updates:
                    if predicate(update):
                        return update
                self._news = asyncio.Event()
                await self._news.wait()

        return await asyncio.wait_for(scan(), timeout)


def loop_graph(steps: int, clock: dict | None = None, tick: float = 0.0) -> Graph:
    async def work(state):
        if clock is not None:
            clock["now"] += tick  # the step's I/O takes `tick` seconds of the loop's clock
        await asyncio.sleep(0)  # yield to the loop like a real node doing I/O
        return {"n": state.n + 1}

    g = Graph("loop", max_steps=steps + 5, max_same_node=steps + 5)
    g.add_node("work", work)
    g.add_edge(START, "work")
    g.add_edge("work", "work", when=lambda s: s.n < steps, label="n < steps")
    g.add_edge("work", END)
    return g


def human_graph() -> Graph:
    async def ask(state, ctx):
        return {"city": await ctx.request_input("Which city?")}

    async def pick(state, ctx):
        return {"size": await ctx.request_input("Room size?", options=["single", "double"])}

    g = Graph("trip")
    g.add_node("ask", ask)
    g.add_node("pick", pick)
    g.add_node("book", lambda s: {"booked": f"{s.size} in {s.city}"}, approval=True)
    g.add_edge(START, "ask")
    g.add_edge("ask", "pick")
    g.add_edge("pick", "book")
    g.add_edge("book", END)
    return g


class TestCoalescing:
    async def test_ten_thousand_steps_send_few_messages(self, monkeypatch):
        # The view's timer runs on the event loop's clock. Here each step advances that
        # clock by exactly `tick` seconds, so the run lasts steps * tick seconds of loop
        # time on any machine, and the number of updates follows from the rate alone.
        loop = asyncio.get_running_loop()
        clock = {"now": loop.time()}
        monkeypatch.setattr(loop, "time", lambda: clock["now"])
        steps, tick, rate = 10_000, 1 / 2048, 20.0  # the tick is exact in binary floating point
        run = loop_graph(steps, clock, tick).start({"n": 0}, display=False)
        view = GraphView.for_run(run, max_rate=rate)
        wire = Wire(view)  # attached after the view's first flush
        result = await run
        assert result.outcome == "done" and result.state["n"] == steps
        assert view.observer.flushes == 1 + len(wire.updates)  # one comm message per flush
        run_time = steps * tick  # 4.88 s of loop time
        timed = len(wire.updates) - 1  # every update but the final one came from the timer
        # At most `rate` a second, and the timer really does keep firing while the run goes on
        # (a timer callback waits for the step under way, so a period can run a few ticks over 1/rate).
        assert run_time / (1 / rate + 4 * tick) <= timed <= run_time * rate, timed
        final = wire.updates[-1]
        assert final["status"]["outcome"] == "done" and final["status"]["state"] == "done"
        assert view.visits == {"work": 10_000}
        assert view.fired == {"__start__\u2192work": 1, "work\u2192work": 9_999, "work\u2192__end__": 1}
        assert len(view.log) == 200  # capped

    async def test_interrupt_is_sent_at_once(self):
        run = human_graph().start({}, display=False)
        view = GraphView.for_run(run)
        wire = Wire(view)
        pause = await run.next_pause(timeout=5)
        assert view.pending[0]["id"] == pause.id
        assert view.status["state"] == "paused"
        assert any(update.get("pending") for update in wire.updates)
        run.cancel()
        result = await run
        assert result.outcome == "aborted"
        assert view.status["outcome"] == "aborted"

    async def test_unobserved_graph_view_is_static(self):
        view = GraphView(human_graph())
        assert [n["id"] for n in view.dag["nodes"]] == [START, "ask", "pick", "book", END]
        assert view.status == {} and repr(view) == "GraphView(graph='trip')"


class TestNoBrowser:
    """A notebook run headless shows its views to no browser: a pause there gives up in time."""

    async def test_a_pause_nobody_can_see_ends_interrupted_saying_how_to_answer(self, monkeypatch):
        monkeypatch.setattr(_observer.Browser, "seen", False)
        monkeypatch.setenv("NBGRAPH_HEADLESS_WAIT", "0.05")
        g = human_graph()
        run = g.start({}, display=False)
        view = GraphView.for_run(run)
        result = await asyncio.wait_for(run, 10)
        assert result.outcome == "interrupted" and [p.prompt for p in result.pauses] == ["Which city?"]
        assert result.reason.startswith("waiting for input at node 'ask': Which city? — nobody answered within 0.05 s")
        assert "run.answer(value)" in result.reason and "NBGRAPH_AUTO_ANSWER=1" in result.reason
        assert view.status["outcome"] == "interrupted"
        later = g.invoke(Resume(result, "Oslo"), checkpointer=run.checkpointer)  # what the reason says works
        assert later.outcome == "interrupted" and later.pauses[0].prompt == "Room size?"

    async def test_once_a_browser_said_hello_a_pause_waits_for_its_person(self, monkeypatch):
        monkeypatch.setattr(_observer.Browser, "seen", False)
        monkeypatch.setenv("NBGRAPH_HEADLESS_WAIT", "0.05")
        run = human_graph().start({}, display=False)
        view = GraphView.for_run(run)
        assert view.handle({"type": "hello"}) is True  # what the view's module sends when it loads
        pause = await run.next_pause(timeout=5)
        assert view.observer._no_browser is None  # no give-up was even scheduled
        run.answer("Oslo", pause=pause.id)
        run.cancel()
        assert (await run).outcome == "aborted"

    async def test_a_wait_that_is_not_a_number_is_refused(self, monkeypatch):
        monkeypatch.setenv("NBGRAPH_HEADLESS_WAIT", "soon")
        run = human_graph().start({}, display=False)
        with pytest.raises(
            ValueError, match="NBGRAPH_HEADLESS_WAIT must be a number of seconds .0: wait for ever., not 'soon'"
        ):
            GraphView.for_run(run)
        run.cancel()
        await run


class TestMessages:
    async def start(self):
        run = human_graph().start({}, display=False)
        view = GraphView.for_run(run)
        return run, view, Wire(view)

    async def test_answer_options_and_approve_complete_the_run(self):
        run, view, wire = await self.start()
        pause = await run.next_pause(timeout=5)
        view._handle_custom_msg({"type": "answer", "pause_id": pause.id, "value": "Oslo"}, [])
        pause = await run.next_pause(timeout=5)
        assert pause.options == ("single", "double")
        view._handle_custom_msg({"type": "answer", "pause_id": pause.id, "value": "double"}, [])
        pause = await run.next_pause(timeout=5)
        assert pause.kind == "approval"
        view._handle_custom_msg({"type": "approve", "pause_id": pause.id}, [])
        result = await run
        assert result.outcome == "done" and result.state["booked"] == "double in Oslo"
        assert wire.custom == []

    async def test_approve_with_an_edit_and_deny(self):
        run, view, _ = await self.start()
        for value in ("Rome", "single"):
            pause = await run.next_pause(timeout=5)
            view._handle_custom_msg({"type": "answer", "pause_id": pause.id, "value": value}, [])
        pause = await run.next_pause(timeout=5)
        view._handle_custom_msg({"type": "approve", "pause_id": pause.id, "update": {"booked": "suite in Rome"}}, [])
        assert (await run).state["booked"] == "suite in Rome"

        run, view, _ = await self.start()
        for value in ("Rome", "single"):
            pause = await run.next_pause(timeout=5)
            view._handle_custom_msg({"type": "answer", "pause_id": pause.id, "value": value}, [])
        pause = await run.next_pause(timeout=5)
        view._handle_custom_msg({"type": "deny", "pause_id": pause.id}, [])
        assert (await run).outcome == "denied"

    async def test_stale_and_duplicate_clicks_are_ignored(self):
        run, view, wire = await self.start()
        pause = await run.next_pause(timeout=5)
        assert view.handle({"type": "answer", "pause_id": pause.id, "value": "Lima"}) is True
        assert view.handle({"type": "answer", "pause_id": pause.id, "value": "Quito"}) is False
        assert view.handle({"type": "answer", "pause_id": "from-an-old-run", "value": "x"}) is False
        assert (await run.next_pause(timeout=5)).prompt == "Room size?"
        assert run.state["city"] == "Lima"
        run.cancel()
        await run
        assert wire.custom == []

    @pytest.mark.parametrize(
        ("message", "error"),
        [
            ("not a dict", 'the graph view sent a message without a type: "not a dict"'),
            (
                {"type": "explode"},
                "unknown message type 'explode'; expected one of: hello, inspect, toggle-breakpoint,",
            ),
            ({"type": "answer", "value": "x"}, "sent 'answer' without 'pause_id' (a string)"),
            ({"type": "answer", "pause_id": "p"}, "sent 'answer' without 'value' (a value)"),
            ({"type": "answer", "pause_id": 7, "value": "x"}, "sent 'answer' whose 'pause_id' is not a string: 7"),
            (
                {"type": "approve", "pause_id": "p", "update": [1]},
                "sent 'approve' whose 'update' is not an object: [1]",
            ),
            ({"type": "steer"}, "sent 'steer' without 'text' (a string)"),
            ({"type": "fork"}, "sent 'fork' without any of 'step', 'onto'"),
            ({"type": "fork", "step": True}, "sent 'fork' whose 'step' is not a whole number: true"),
            ({"type": "steer", "text": "   "}, "non-empty message"),
        ],
    )
    async def test_bad_messages_are_rejected_without_breaking_the_run(self, message, error, caplog):
        run, view, wire = await self.start()
        pause = await run.next_pause(timeout=5)
        view._handle_custom_msg(message, [])
        assert wire.custom and wire.custom[-1]["type"] == "error"
        assert error in wire.custom[-1]["message"]
        # A message the protocol refuses is also said in the kernel's log, as what the view sent.
        refused = [r.getMessage() for r in caplog.records if r.name == "nbgraph.view"]
        if error == "non-empty message":  # allowed by the protocol, refused by the run
            assert refused == []
        else:
            assert refused == [f"refused a message: {wire.custom[-1]['message']}"]
        view._handle_custom_msg({"type": "answer", "pause_id": pause.id, "value": "Paris"}, [])
        assert (await run.next_pause(timeout=5)).prompt == "Room size?"
        assert run.state["city"] == "Paris" and not run.done
        run.cancel()
        await run

    async def test_answer_outside_the_options_is_reported(self):
        run, view, wire = await self.start()
        pause = await run.next_pause(timeout=5)
        view._handle_custom_msg({"type": "answer", "pause_id": pause.id, "value": "Oslo"}, [])
        pause = await run.next_pause(timeout=5)
        view._handle_custom_msg({"type": "answer", "pause_id": pause.id, "value": "penthouse"}, [])
        assert "'penthouse' is not one of the options" in wire.custom[-1]["message"]
        assert run.pauses == (pause,)
        run.cancel()
        await run

    async def test_steer_and_stop(self):
        seen = []
        gate = asyncio.Event()

        async def agent(state, ctx):
            await gate.wait()
            seen.extend(ctx.take_steering())

        g = Graph("steer")
        g.add_node("warmup", lambda s: None)
        g.add_node("agent", agent)
        g.add_node("hang", lambda s: None)
        g.add_edge(START, "warmup")
        g.add_edge("warmup", "agent")
        g.add_edge("agent", "hang")
        g.add_edge("hang", END)
        run = g.start({}, display=False)
        view = GraphView.for_run(run)
        view._handle_custom_msg({"type": "steer", "text": "be brief"}, [])
        gate.set()
        await run
        assert seen == ["be brief"]
        assert any(line.strip() == "steer: be brief" for line in view.log)

        never, entered = asyncio.Event(), asyncio.Event()

        async def stuck(state):
            entered.set()
            await never.wait()

        g2 = Graph("stop")
        g2.add_node("stuck", stuck)
        g2.add_edge(START, "stuck")
        g2.add_edge("stuck", END)
        run = g2.start({}, display=False)
        view = GraphView.for_run(run)
        await asyncio.wait_for(entered.wait(), timeout=5)  # Stop while the node runs
        view._handle_custom_msg({"type": "stop"}, [])
        result = await asyncio.wait_for(run, timeout=5)
        assert result.outcome == "aborted" and view.status["outcome"] == "aborted"
        assert result.reason == "cancelled during node 'stuck' at step 1"

    async def test_graph_view_rejects_answers(self):
        view = GraphView(human_graph())
        wire = Wire(view)
        view._handle_custom_msg({"type": "stop"}, [])
        assert "nothing to answer" in wire.custom[-1]["message"]


class Trip(pydantic.BaseModel):
    items: list[str] = []
    notes: Annotated[list[str], append] = []


def counts(total=0, done=0, failed=0, running=0, paused=0, waiting=0) -> dict:
    return {"total": total, "done": done, "failed": failed, "running": running, "paused": paused, "waiting": waiting}


def map_graph(items: list[str], ran: list[str] | None = None, tail=lambda s: None, **options) -> Graph:
    """plan -> work (one branch per item: asks about it, fails on "boom") -> tail."""

    async def work(item, ctx):
        if ran is not None:
            ran.append(item)  # the code before the pause
        if item == "boom":
            raise RuntimeError("boom")
        if item in ("x", "y"):
            await asyncio.sleep(0)
            return {"notes": [item]}
        return {"notes": [f"{item}: {await ctx.request_input(f'About {item}?')}"]}

    g = Graph("map", state=Trip, **options)
    g.add_node("plan", lambda s: {"items": items})
    g.add_node("work", work)
    g.add_node("tail", tail)
    g.add_edge(START, "plan")
    g.add_edge("plan", "work", each=lambda s: s.items)
    g.add_edge("work", "tail")
    g.add_edge("tail", END)
    return g


class TestBranches:
    async def test_parallel_branches_run_at_once_and_fan_out_and_join_are_counted(self):
        gates = {"a": asyncio.Event(), "b": asyncio.Event()}

        def waiter(name):
            async def wait(state):
                await gates[name].wait()
                return {"notes": [name]}

            return wait

        g = Graph("fan", state=Trip)
        g.add_node("plan", lambda s: None)
        g.add_node("a", waiter("a"))
        g.add_node("b", waiter("b"))
        g.add_node("merge", lambda s: None)
        g.add_edge(START, "plan")
        g.add_edge("plan", ["a", "b"])
        g.add_edge(["a", "b"], "merge")
        g.add_edge("merge", END)
        run = g.start({}, display=False)
        view = GraphView.for_run(run)
        wire = Wire(view)
        update = await wire.update_where(lambda u: sorted(u.get("running", ())) == ["a", "b"])
        assert update["status"]["state"] == "running"
        assert view.branches["a"] == view.branches["b"] == counts(total=1, running=1)
        gates["b"].set()
        await wire.update_where(lambda u: u.get("running") == ["a"])
        gates["a"].set()
        result = await run
        assert result.outcome == "done" and result.state.notes == ["a", "b"]
        assert view.running == [] and view.visits == {"plan": 1, "a": 1, "b": 1, "merge": 1}
        assert view.fired == {
            "__start__\u2192plan": 1,
            "plan\u2192a": 1,
            "plan\u2192b": 1,
            "a\u2192merge": 1,
            "b\u2192merge": 1,
            "merge\u2192__end__": 1,
        }
        assert view.branches["a"] == counts(total=1, done=1)
        assert view.observer._unwatch is None  # a fresh run is never asked for its step events

    async def test_a_maps_progress_counts_done_failed_and_paused_branches(self):
        run = map_graph(["x", "boom", "y", "ask"], settle="all").start({}, display=False)
        view = GraphView.for_run(run)
        wire = Wire(view)
        pause = await run.next_pause(timeout=5)
        update = await wire.update_where(lambda u: u.get("branches", {}).get("work", {}).get("done") == 2)
        assert update["branches"]["work"] == counts(total=4, done=2, failed=1, paused=1)
        assert view.status["state"] == "paused" and view.running == ["work"]
        assert view.pending[0]["branch"] == "work[3]" and view.pending[0]["path"] == "work"
        assert view.handle({"type": "answer", "pause_id": pause.id, "value": "yes"})
        result = await run
        assert result.outcome == "done" and result.state.notes == ["x", "y", "ask: yes"]
        assert view.branches == {"work": counts(total=4, done=3, failed=1)}
        assert view.visits["work"] == 3 and view.fired["plan\u2192work"] == 1
        assert any(line.strip().startswith("3  work[1]") for line in view.log), view.log

    async def test_supersteps_between_two_flushes_show_the_latest_ones_outcome(self):
        # Sync nodes never yield to the loop: the whole run happens before the view's next look.
        def work(item):
            if item == "boom":
                raise RuntimeError("boom")
            return {"notes": [item]}

        g = Graph("twice", state=Trip, settle="all")
        g.add_node("plan", lambda s: {"items": ["a", "boom", "c"] if not s.items else ["d", "e"]})
        g.add_node("work", work)
        g.add_node("check", lambda s: None)
        g.add_edge(START, "plan")
        g.add_edge("plan", "work", each=lambda s: s.items)
        g.add_edge("work", "check")
        g.add_edge("check", "plan", when=lambda s: len(s.items) == 3, label="again")
        g.add_edge("check", END)
        run = g.start({}, display=False)
        view = GraphView.for_run(run)
        result = await run
        assert result.state.notes == ["a", "c", "d", "e"]
        assert view.visits["work"] == 4 and view.branches == {"work": counts(total=2, done=2)}

        run = map_graph(["x", "boom", "y"], settle="all").start({}, display=False)
        view = GraphView.for_run(run)
        await run
        assert view.branches == {"work": counts(total=3, done=2, failed=1)}

    async def test_branches_cut_short_by_a_failing_sibling_end_failed(self):
        gate, never = asyncio.Event(), asyncio.Event()

        async def work(item):
            await (gate if item == "boom" else never).wait()
            raise RuntimeError(item)

        g = Graph("fast", state=Trip)  # settle="fail_fast": the first failure cancels the others
        g.add_node("plan", lambda s: {"items": ["slow", "boom", "slower"]})
        g.add_node("work", work)
        g.add_edge(START, "plan")
        g.add_edge("plan", "work", each=lambda s: s.items)
        g.add_edge("work", END)
        run = g.start({}, display=False)
        view = GraphView.for_run(run)
        wire = Wire(view)
        await wire.update_where(lambda u: u.get("branches", {}).get("work") == counts(total=3, running=3))
        gate.set()
        result = await run
        assert result.outcome == "failed"
        assert view.running == [] and view.branches == {"work": counts(total=3, failed=3)}

    async def test_two_branches_pause_at_once_and_are_answered_out_of_order(self):
        run = map_graph(["Kyoto", "Oslo"]).start({}, display=False)
        view = GraphView.for_run(run)
        wire = Wire(view)
        update = await wire.update_where(lambda u: len(u.get("pending", ())) == 2)
        assert [(p["path"], p["branch"], p["prompt"]) for p in update["pending"]] == [
            ("work", "work[0]", "About Kyoto?"),
            ("work", "work[1]", "About Oslo?"),
        ]
        await wire.update_where(lambda u: u.get("branches", {}).get("work") == counts(total=2, paused=2))
        assert view.running == ["work"]  # two calls of one node: it pulses once
        first, second = view.pending
        assert view.handle({"type": "answer", "pause_id": second["id"], "value": "fjords"})
        update = await wire.update_where(lambda u: len(u.get("pending", [None, None])) == 1)
        assert update["pending"][0]["id"] == first["id"]
        await wire.update_where(lambda u: u.get("branches", {}).get("work") == counts(total=2, done=1, paused=1))
        assert view.handle({"type": "answer", "pause_id": second["id"], "value": "again"}) is False  # answered
        assert view.handle({"type": "answer", "pause_id": first["id"], "value": "temples"})
        result = await run
        assert result.state.notes == ["Kyoto: temples", "Oslo: fjords"]  # branch order, not answer order
        assert view.branches["work"] == counts(total=2, done=2) and view.pending == []

    async def test_a_sub_graphs_nodes_are_counted_and_shown_running_by_path(self):
        gate = asyncio.Event()

        async def search(state):
            await gate.wait()
            return {"notes": ["found"]}

        inner = Graph("inner", state=Trip)
        inner.add_node("search", search)
        inner.add_node("rank", lambda s: None)
        inner.add_edge(START, "search")
        inner.add_edge("search", "rank")
        inner.add_edge("rank", END)
        g = Graph("outer", state=Trip)
        g.add_node("research", inner)
        g.add_edge(START, "research")
        g.add_edge("research", END)
        run = g.start({}, display=False)
        view = GraphView.for_run(run)
        wire = Wire(view)
        await wire.update_where(lambda u: u.get("running") == ["research", "research/search"])
        gate.set()
        result = await run
        assert result.state.notes == ["found"]
        assert view.visits == {"research": 1, "research/search": 1, "research/rank": 1}
        assert view.fired == {
            "__start__\u2192research": 1,
            "research\u2192__end__": 1,
            "research/__start__\u2192research/search": 1,
            "research/search\u2192research/rank": 1,
            "research/rank\u2192research/__end__": 1,
        }

    async def test_a_resume_that_runs_nodes_again_from_their_start_says_so(self):
        ran: list[str] = []
        watching: list[bool] = []
        observers = []
        g = map_graph(
            ["a", "b"],
            ran,
            lambda s: watching.append(observers[0]._unwatch is not None),
            checkpointer=MemoryCheckpointer(),
        )
        first = await g.ainvoke({})
        assert first.outcome == "interrupted" and ran == ["a", "b"]
        run = launch(open_run(g.compile(), Resume(first.thread, {first.pauses[1].id: "B"}), live=True))
        view = GraphView.for_run(run)
        observers.append(view.observer)
        wire = Wire(view)
        await wire.update_where(lambda u: u.get("reruns") == {"work": 2})
        pause = await run.next_pause(timeout=5)  # branch a asks again; b got its stored answer
        assert ran == ["a", "b", "a", "b"]  # both branches ran their code before the pause again
        assert view.observer._unwatch is not None  # the resumed step has not routed on yet
        reruns = [line.strip() for line in view.log if "rerun" in line]
        assert reruns == [
            "rerun: work[0] runs again from its start, up to its answered pause",
            "rerun: work[1] runs again from its start, up to its answered pause",
        ]
        assert view.handle({"type": "answer", "pause_id": pause.id, "value": "A"})
        result = await run
        assert result.outcome == "done" and result.state.notes == ["a: A", "b: B"]
        # Step events were heard during the resumed step only: they stopped once it routed on.
        assert watching == [False] and view.reruns == {"work": 2}


class TestStreamedText:
    async def test_an_llm_nodes_streamed_reply_reaches_the_view(self):
        from nbgraph import MessagesState, ScriptedModel, llm_node
        from nbgraph.llm import Reply

        gate = asyncio.Event()

        async def weather(city: str) -> str:
            """Today's weather in a city."""
            await gate.wait()  # the node is still running while its tool waits
            return f"Sunny in {city}"

        model = ScriptedModel(
            [
                Reply(text="Checking the weather in Kyoto.", tool_calls=[("weather", {"city": "Kyoto"})]),
                "Sunny: pack light.",
            ],
            chunk_chars=4,
        )
        g = Graph("chat", state=MessagesState)
        g.add_node("agent", llm_node("You plan trips.", model=model, tools=[weather]))
        g.add_edge(START, "agent")
        g.add_edge("agent", END)
        run = g.start({"messages": ["Kyoto this weekend?"]}, display=False)
        view = GraphView.for_run(run)
        wire = Wire(view)

        # While the node runs (its tool waits), the text streamed so far is sent.
        update = await wire.update_where(lambda u: u.get("text"))
        assert update["text"] == "Checking the weather in Kyoto."
        assert not run.done and view.status["state"] == "running" and view.status["current"] == "agent"

        gate.set()
        result = await run
        assert result.outcome == "done", result.reason
        # The second reply of the turn streams on its own line, after the first.
        full = "Checking the weather in Kyoto.\nSunny: pack light."
        assert [u["text"] for u in wire.updates if "text" in u][-1] == full
        assert view.text == full and view.status["outcome"] == "done"


def test_graph_mimebundle_has_the_widget():
    bundle, metadata = graph_mimebundle(human_graph())
    assert "application/vnd.jupyter.widget-view+json" in bundle
    assert "text/plain" not in bundle
    assert metadata == {}  # (anywidget adds some only on Colab: tests/test_colab_display.py)


def branch_graph(calls: list[str] | None = None) -> Graph:
    def count(s):
        if calls is not None:
            calls.append("count")
        return {"n": s.n + 1}

    g = Graph("pick", max_same_node=10)
    g.add_node("count", count)
    g.add_node("even", lambda s: {"note": f"{s.n} is even"})
    g.add_node("odd", lambda s: {"note": f"{s.n} is odd"})
    g.add_edge(START, "count")
    g.add_edge("count", "even", when=lambda s: s.n % 2 == 0, label="even")
    g.add_edge("count", "odd", when=lambda s: s.n % 2 == 1, label="odd")
    g.add_edge("even", END)
    g.add_edge("odd", END)
    return g


def unpacked(packed: dict) -> list[dict]:
    """The view's packed frames read as js/src/replay.js's unpackFrames reads them."""
    names = packed["names"]

    def counts(flat):
        return {names[flat[i]]: flat[i + 1] for i in range(0, len(flat), 2)}

    return [
        {
            "step": step,
            "path": None if path is None else names[path],
            "branch": branch,
            "error": error,
            "visits": counts(visits),
            "fired": counts(fired),
        }
        for step, path, branch, error, visits, fired in packed["rows"]
    ]


class TestInspectorAndReplay:
    async def test_inspect_a_log_line_a_node_and_a_frame_of_a_live_run(self):
        run = branch_graph().start({"n": 2}, display=False)
        view = GraphView.for_run(run)
        sent: list[dict] = []
        view.send = sent.append
        await run
        assert view.handle({"type": "inspect", "step": 1})
        first = sent[-1]
        assert first["type"] == "inspection" and first["step"] == 1 and first["node"] == "count"
        assert first["input"]["n"] == 2 and first["change"]["changed"]["n"] == {"before": 2, "after": 3}
        assert first["edge"]["target"] == "odd"
        assert {c["target"]: c["holds"] for c in first["candidates"]} == {"even": False, "odd": True}
        line = view.log[-1]  # "   2  odd  0.1 ms"
        assert line.split()[:2] == ["2", "odd"]
        view.handle({"type": "inspect", "step": 2, "where": "odd"})
        assert sent[-1]["node"] == "odd" and sent[-1]["change"]["added"] == {"note": "3 is odd"}
        view.handle({"type": "inspect", "node": "count"})
        assert sent[-1]["step"] == 1
        view.handle({"type": "inspect", "frame": 2})
        assert sent[-1]["node"] == "odd"

    async def test_a_large_input_state_is_sent_clipped_saying_where_the_whole_is(self):
        run = branch_graph().start({"n": 2, "notes": ["x" * 100] * 200}, display=False)
        view = GraphView.for_run(run)
        sent: list[dict] = []
        view.send = sent.append
        await run
        view.handle({"type": "inspect", "step": 1})
        shown = sent[-1]
        assert isinstance(shown["input"], str) and len(shown["input"]) == 4001 and shown["input"].endswith("\u2026")
        assert shown["missing"][-1].startswith("the view shows the first 4,000 of the input state's ")
        assert shown["missing"][-1].endswith("characters; result.inspect(1).input has all of it")
        assert shown["change"]["changed"]["n"] == {"before": 2, "after": 3}  # the rest is whole

    async def test_the_live_view_gets_the_frames_when_the_run_ends(self):
        run = branch_graph().start({"n": 2}, display=False)
        view = GraphView.for_run(run)
        wire = Wire(view)
        assert view.frames == {}
        await run
        frames = unpacked(view.frames)
        assert [f["path"] for f in frames] == [None, "count", "odd"]
        assert frames[1]["visits"] == {"count": 1} and frames[1]["fired"] == {
            "__start__\u2192count": 1,
            "count\u2192odd": 1,
        }
        assert frames[2]["visits"] == {"odd": 1} and frames[2]["fired"] == {"odd\u2192__end__": 1}  # what changed
        assert len(view.frames["rows"][2]) == 6  # step, path, branch, error, visits, fired: never the state
        assert view.frames["names"].count("odd") == 1  # each name sent once
        assert view.observer.flushes == 1 + len(wire.updates)  # sent with the final flush
        assert "frames" in wire.updates[-1]

    async def test_bad_inspect_messages_name_what_is_wrong(self):
        run = branch_graph().start({"n": 2}, display=False)
        view = GraphView.for_run(run)
        await run
        with pytest.raises(ValueError, match="node 'even' has not run"):
            view.handle({"type": "inspect", "node": "even"})
        with pytest.raises(ValueError, match="no step 7"):
            view.handle({"type": "inspect", "step": 7})
        with pytest.raises(MessageError, match="sent 'inspect' without any of 'step', 'node', 'frame'"):
            view.handle({"type": "inspect"})
        with pytest.raises(ValueError, match="frames 1 to 2"):
            view.handle({"type": "inspect", "frame": 0})
        with pytest.raises(ValueError, match="a graph, not a run"):
            GraphView(branch_graph()).handle({"type": "inspect", "step": 1})

    def test_replay_a_result_and_an_ndjson_trace_without_running_a_node(self):
        calls: list[str] = []
        g = branch_graph(calls)
        result = g.invoke({"n": 4})
        assert calls == ["count"]
        calls.clear()  # from here on, a node call would show here
        for view in (GraphView.replay(result), GraphView.replay(result.to_ndjson(), g)):
            assert [f["path"] for f in unpacked(view.frames)] == [None, "count", "odd"]
            assert view.status["state"] == "done" and view.status["outcome"] == "done"
            assert view.status["step"] == 2
            assert view.visits == {"count": 1, "odd": 1}
            assert view.fired["count\u2192odd"] == 1
            assert view.log[-1].split()[:2] == ["2", "odd"]
            sent: list[dict] = []
            view.send = sent.append
            view.handle({"type": "inspect", "frame": 1})
            assert sent[-1]["node"] == "count" and sent[-1]["update"] == {"n": 5}
        assert calls == []

    async def test_a_log_line_inside_a_sub_graph_opens_that_step_not_the_outer_one(self):
        sub = Graph("inner")
        sub.add_node("a", lambda s: {"x": 1})
        sub.add_node("b", lambda s: {"y": 2})
        sub.add_edge(START, "a")
        sub.add_edge("a", "b")
        sub.add_edge("b", END)
        g = Graph("outer")
        g.add_node("pre", lambda s: {"n": 1})
        g.add_node("inner", sub)
        g.add_edge(START, "pre")
        g.add_edge("pre", "inner")
        g.add_edge("inner", END)
        run = g.start({}, display=False)
        view = GraphView.for_run(run)
        sent: list[dict] = []
        view.send = sent.append
        await run
        assert [line.split()[:2] for line in view.log] == [
            ["1", "pre"],
            ["1", "inner/a"],
            ["2", "inner/b"],
            ["2", "inner"],
        ]
        view.handle({"type": "inspect", "step": 1, "where": "pre"})
        assert sent[-1]["path"] == "pre" and sent[-1]["update"] == {"n": 1}
        view.handle({"type": "inspect", "step": 1, "where": "inner/a"})
        assert sent[-1]["path"] == "inner/a" and sent[-1]["update"] == {"x": 1}
        view.handle({"type": "inspect", "node": "inner/b"})
        assert sent[-1]["path"] == "inner/b" and sent[-1]["step"] == 2

    def test_replay_a_thread_from_its_checkpointer(self):
        store = MemoryCheckpointer()
        calls: list[str] = []
        g = branch_graph(calls)
        result = g.invoke({"n": 4}, checkpointer=store)
        calls.clear()
        for view in (
            GraphView.replay(result.thread, g, checkpointer=store),
            GraphView.replay((store, result.thread), g),
        ):
            assert [f["path"] for f in unpacked(view.frames)] == [None, "count", "odd"]
            assert view.status["outcome"] == "done" and view.visits == {"count": 1, "odd": 1}
            sent: list[dict] = []
            view.send = sent.append
            view.handle({"type": "inspect", "step": 1})
            assert sent[-1]["change"]["changed"]["n"] == {"before": 4, "after": 5}  # the thread's input
        assert calls == []
        with pytest.raises(ValueError, match="no thread 'nope'"):
            GraphView.replay("nope", g, checkpointer=store)


class TestProtocol:
    """The messages of static/protocol.json, which the view's module bundles and the kernel reads."""

    SAMPLES = {"string": "x", "integer": 1, "number": 0.5, "boolean": True, "object": {}, "array": [], "any": "x"}

    def message(self, kind: str, spec: dict) -> dict:
        """The least message of ``kind`` its spec allows: its required fields, and the first of its one_of."""
        fields = {name: self.SAMPLES[type_] for name, type_ in spec.get("required", {}).items()}
        for name in spec.get("one_of", ())[:1]:
            fields[name] = self.SAMPLES[spec["optional"][name]]
        return {"type": kind, **fields}

    def test_the_graph_view_handles_every_kind_its_protocol_declares_and_refuses_others(self, monkeypatch):
        monkeypatch.setattr(_observer.Browser, "seen", False)  # (hello says a browser is there)
        view = GraphView(human_graph())
        for kind, spec in PROTOCOL["graph"]["to_kernel"].items():
            message = self.message(kind, spec)
            assert checked("graph", "to_kernel", message) is message
            try:
                view.handle(message)
            except MessageError as exc:  # the protocol allows it: the view must not refuse it as such
                pytest.fail(f"{message} refused: {exc}")
            except ValueError:
                pass  # allowed, but this view has no run for it
        assert _observer.Browser.seen
        with pytest.raises(
            MessageError, match="unknown message type 'pan'; expected one of: hello, inspect, toggle-breakpoint, fork"
        ):
            view.handle({"type": "pan"})

    def test_what_the_kernel_sends_is_checked_too(self):
        with pytest.raises(MessageError, match=r"the kernel sent 'inspection' without 'path' \(a string\)"):
            checked("graph", "to_view", {"type": "inspection", "step": 1, "visit": 1, "change": {}})
        with pytest.raises(MessageError, match="the kernel sent 'error' whose 'message' is not a string: 3"):
            checked("graph", "to_view", {"type": "error", "message": 3})
        assert checked("batch", "to_view", {"type": "stopped"}) == {"type": "stopped"}

    def test_a_view_must_handle_exactly_the_kinds_declared(self):
        from nbgraph._protocol import handlers_of

        with pytest.raises(
            RuntimeError, match=r"the graph view handles \['hello'\], but its protocol declares \['answer', "
        ):
            handlers_of("graph", {"hello": print})
        extra = dict.fromkeys([*PROTOCOL["batch"]["to_kernel"], "pan"], print)
        with pytest.raises(RuntimeError, match=r"handles \['hello', 'inputs', 'pan', 'stop'\]"):
            handlers_of("batch", extra)
