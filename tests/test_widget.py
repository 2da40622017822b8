"""The live view from Python: coalesced updates and the messages clicks send."""

from __future__ import annotations

import asyncio
import json

import pytest

from nbgraph import END, START, Graph
from nbgraph.widget import GraphView, graph_mimebundle


class Wire:
    """Records what a view sends through its real comm."""

    def __init__(self, view: GraphView) -> None:
        self.updates: list[dict] = []
        self.custom: list[dict] = []
        original = view.comm.publish_msg

        def publish(msg_type, data=None, metadata=None, buffers=None, **keys):
            if data and data.get("method") == "update":
                self.updates.append(data["state"])
            elif data and data.get("method") == "custom":
                self.custom.append(data["content"])
            return original(msg_type, data=data, metadata=metadata, buffers=buffers, **keys)

        view.comm.publish_msg = publish


def loop_graph(steps: int) -> Graph:
    async def work(state):
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
    async def test_ten_thousand_steps_send_few_messages(self):
        run = loop_graph(10_000).start({"n": 0}, display=False)
        view = GraphView.for_run(run)
        wire = Wire(view)
        loop = asyncio.get_running_loop()
        t0 = loop.time()
        result = await run
        seconds = loop.time() - t0
        assert result.outcome == "done" and result.state["n"] == 10_000
        assert len(wire.updates) < 100, len(wire.updates)
        assert len(wire.updates) <= 30 * seconds + 3
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
            ("not a dict", "without a type"),
            ({"type": "explode"}, "unknown message type 'explode'"),
            ({"type": "answer", "value": "x"}, "needs a pause_id"),
            ({"type": "answer", "pause_id": "p"}, "needs a value"),
            ({"type": "approve", "pause_id": "p", "update": [1]}, "update must be an object"),
            ({"type": "steer"}, "needs text"),
            ({"type": "steer", "text": "   "}, "non-empty message"),
        ],
    )
    async def test_bad_messages_are_rejected_without_breaking_the_run(self, message, error):
        run, view, wire = await self.start()
        pause = await run.next_pause(timeout=5)
        view._handle_custom_msg(message, [])
        assert wire.custom and wire.custom[-1]["type"] == "error"
        assert error in wire.custom[-1]["message"]
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
        assert run.pending == (pause,)
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

        never = asyncio.Event()

        async def stuck(state):
            await never.wait()

        g2 = Graph("stop")
        g2.add_node("stuck", stuck)
        g2.add_edge(START, "stuck")
        g2.add_edge("stuck", END)
        run = g2.start({}, display=False)
        view = GraphView.for_run(run)
        await asyncio.sleep(0)
        view._handle_custom_msg({"type": "stop"}, [])
        result = await run
        assert result.outcome == "aborted" and view.status["outcome"] == "aborted"

    async def test_graph_view_rejects_answers(self):
        view = GraphView(human_graph())
        wire = Wire(view)
        view._handle_custom_msg({"type": "stop"}, [])
        assert "nothing to answer" in wire.custom[-1]["message"]


def test_graph_mimebundle_has_the_widget():
    bundle = graph_mimebundle(human_graph())
    assert "application/vnd.jupyter.widget-view+json" in bundle
    assert "text/plain" not in bundle
