"""LangGraph runs in nbgraph's view: watched live, answered, stopped, replayed and forked.

Every graph here is a real LangGraph graph run by LangGraph itself, with its own savers;
the view is driven through the messages its buttons send.
"""

from __future__ import annotations

import asyncio
import operator
import subprocess
import sys
import textwrap
from collections import Counter
from typing import Annotated, Any, TypedDict

import pytest
from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel, GenericFakeChatModel
from langchain_core.messages import AIMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode
from langgraph.types import Command, interrupt

import nbgraph.langgraph as nlg
from nbgraph._protocol import checked
from nbgraph.answering import identity
from nbgraph.errors import NoPendingRequest, ResumeError


def thread(name: str) -> dict[str, Any]:
    return {"configurable": {"thread_id": name}}


def click(view: nlg.LangGraphView, message: dict[str, Any]) -> Any:
    """What the view's button sends, checked against the view's protocol, handled by the kernel."""
    return view.handle(checked("graph", "to_kernel", message))


def inspected(view: nlg.LangGraphView, message: dict[str, Any]) -> dict[str, Any]:
    sent: list[dict[str, Any]] = []
    view.send = sent.append  # type: ignore[method-assign]  # (what the kernel sends the browser)
    click(view, message)
    return checked("graph", "to_view", sent[-1])


# -- graphs ---------------------------------------------------------------------------------


class Draft(TypedDict, total=False):
    n: int
    target: int
    notes: Annotated[list[str], operator.add]
    published: bool


def review_app(calls: Counter[str], checkpointer: Any = None, **options: Any) -> Any:
    """draft, then review: back to draft until n reaches target, then publish; research is a sub-graph."""

    def draft(state: Draft) -> dict[str, Any]:
        calls["draft"] += 1
        return {"n": state.get("n", 0) + 1}

    def review(state: Draft) -> dict[str, Any]:
        calls["review"] += 1
        return {"notes": [f"review {state['n']}"]}

    def verdict(state: Draft) -> str:
        return "publish" if state["n"] >= state["target"] else "redraft"

    def search(state: Draft) -> dict[str, Any]:
        calls["search"] += 1
        return {"notes": ["found"]}

    research = StateGraph(Draft)
    research.add_node("search", search)
    research.add_node("rank", lambda state: {"notes": ["ranked"]})
    research.add_edge(START, "search")
    research.add_edge("search", "rank")
    research.add_edge("rank", END)

    def publish(state: Draft) -> dict[str, Any]:
        calls["publish"] += 1
        return {"published": True}

    g = StateGraph(Draft)
    g.add_node("research", research.compile())
    g.add_node("draft", draft)
    g.add_node("review", review)
    g.add_node("publish", publish)
    g.add_edge(START, "research")
    g.add_edge("research", "draft")
    g.add_edge("draft", "review")
    g.add_conditional_edges("review", verdict, {"redraft": "draft", "publish": "publish"})
    g.add_edge("publish", END)
    return g.compile(checkpointer=checkpointer if checkpointer is not None else InMemorySaver(), **options)


class Trip(TypedDict, total=False):
    city: str
    room: str
    booked: str


def trip_app(calls: Counter[str]) -> Any:
    """Two parallel branches each ask with interrupt(); book waits for both."""

    def city(state: Trip) -> dict[str, Any]:
        calls["city"] += 1
        return {"city": interrupt("Which city?")}

    def room(state: Trip) -> dict[str, Any]:
        calls["room"] += 1
        return {"room": interrupt({"question": "Room size?", "options": ["single", "double"]})}

    def book(state: Trip) -> dict[str, Any]:
        calls["book"] += 1
        return {"booked": f"{state['room']} in {state['city']}"}

    g = StateGraph(Trip)
    g.add_node("city", city)
    g.add_node("room", room)
    g.add_node("book", book)
    g.add_edge(START, "city")
    g.add_edge(START, "room")
    g.add_edge(["city", "room"], "book")
    g.add_edge("book", END)
    return g.compile(checkpointer=InMemorySaver())


# -- watching -------------------------------------------------------------------------------


async def test_a_live_runs_steps_are_the_ones_langgraph_streams_in_its_order():
    calls: Counter[str] = Counter()
    app = review_app(calls)
    run = nlg.start(app, {"target": 2}, thread("watched"), display=False)
    view = nlg.LangGraphView.for_run(run)
    assert await run == {"n": 2, "target": 2, "notes": ["found", "ranked", "review 1", "review 2"], "published": True}

    own = []
    async for namespace, update in app.astream({"target": 2}, thread("own"), stream_mode="updates", subgraphs=True):
        level = "/".join(part.partition(":")[0] for part in namespace)
        own += [f"{level}/{node}" if level else node for node in update]
    assert [record.path for record in run.history] == own
    assert own == ["research/search", "research/rank", "research", "draft", "review", "draft", "review", "publish"]

    # The view counted them as it draws them: by path, the sub-graph's inside its frame.
    assert view.visits == {
        "research/search": 1,
        "research/rank": 1,
        "research": 1,
        "draft": 2,
        "review": 2,
        "publish": 1,
    }
    assert view.fired == {
        "__start__\u2192research": 1,
        "research/__start__\u2192research/search": 1,
        "research/search\u2192research/rank": 1,
        "research/rank\u2192research/__end__": 1,
        "research\u2192draft": 1,
        "draft\u2192review": 2,
        "review\u2192draft": 1,
        "review\u2192publish": 1,
        "publish\u2192__end__": 1,
    }
    assert view.status["state"] == "done" and view.status["outcome"] == "done" and view.status["step"] == 6
    assert [line.split()[1] for line in view.log] == own  # a log line per step
    labels = {(r.node, r.edge.target): r.edge.label for r in run.history if r.edge is not None}
    # The path-map key, or the router's name where the key is the target's own name.
    assert labels[("review", "draft")] == "redraft" and labels[("review", "publish")] == "verdict"


async def test_parallel_tasks_and_send_items_run_as_branches_the_view_shows_running_together():
    started = asyncio.Event()
    release = asyncio.Event()
    running: list[tuple[str, ...]] = []

    async def slow(state: Trip) -> dict[str, Any]:
        started.set()
        await release.wait()
        return {}

    g = StateGraph(Trip)
    g.add_node("a", slow)
    g.add_node("b", slow)
    g.add_edge(START, "a")
    g.add_edge(START, "b")
    g.add_edge("a", END)
    g.add_edge("b", END)
    run = nlg.start(g.compile(), {}, display=False)
    view = nlg.LangGraphView.for_run(run)
    await started.wait()
    running.append(run.running)
    assert sorted(running[0]) == ["a", "b"]
    assert sorted((b.node, b.branch, b.status) for b in run.branches) == [("a", "a", "running"), ("b", "b", "running")]
    release.set()
    await run
    assert sorted((r.path, r.branch) for r in run.history) == [("a", "a"), ("b", "b")]
    assert view.branches == {"a": {"total": 1, "done": 1, "failed": 0, "running": 0, "paused": 0, "waiting": 0}} | {
        "b": {"total": 1, "done": 1, "failed": 0, "running": 0, "paused": 0, "waiting": 0}
    }
    assert view.running == [] and view.status["outcome"] == "done"


async def test_streamed_text_tokens_and_tool_calls_reach_the_view():
    @tool
    def nights(city: str) -> int:
        """How many nights the trip has in a city."""
        return 3

    planner = FakeMessagesListChatModel(
        responses=[
            AIMessage(
                content="",
                tool_calls=[{"name": "nights", "args": {"city": "Lisbon"}, "id": "call-1"}],
                usage_metadata={"input_tokens": 12, "output_tokens": 8, "total_tokens": 20},
            )
        ]
    )
    writer = GenericFakeChatModel(messages=iter([AIMessage(content="Three nights in Lisbon, then home.")]))

    async def plan(state: MessagesState) -> dict[str, Any]:
        return {"messages": [await planner.ainvoke(state["messages"])]}

    async def write(state: MessagesState) -> dict[str, Any]:
        return {"messages": [await writer.ainvoke(state["messages"])]}

    g = StateGraph(MessagesState)
    g.add_node("plan", plan)
    g.add_node("tools", ToolNode([nights]))
    g.add_node("write", write)
    g.add_edge(START, "plan")
    g.add_edge("plan", "tools")
    g.add_edge("tools", "write")
    g.add_edge("write", END)
    run = nlg.start(g.compile(), {"messages": [("user", "A trip to Lisbon?")]}, display=False)
    view = nlg.LangGraphView.for_run(run)
    deltas: list[str] = []
    run.subscribe(lambda event: deltas.append(event.text) if event.type == "text-delta" else None, steps=False)
    values = await run
    assert values["messages"][-1].content == "Three nights in Lisbon, then home."
    assert "".join(deltas).endswith("Three nights in Lisbon, then home.") and len(deltas) > 5  # token by token
    assert view.text == "Three nights in Lisbon, then home."
    assert view.status["tokens"] == 20 and view.costs == {"plan": {"tokens": 20, "cost": 0.0}}
    assert '      tool nights({"city": "Lisbon"})' in view.log
    shown = inspected(view, {"type": "inspect", "node": "plan"})
    assert shown["llm"]["tool_calls"] == [
        {"call_id": "call-1", "name": "nights", "args": {"city": "Lisbon"}, "result": None, "is_error": False}
    ]
    assert shown["tokens"] == 20 and shown["change"]["appended"]["messages"][0]["tool_calls"][0]["name"] == "nights"
    tools = inspected(view, {"type": "inspect", "node": "tools"})
    assert tools["input"]["messages"][-1]["tool_calls"][0]["id"] == "call-1"  # the state the step saw
    assert tools["change"]["appended"]["messages"][0]["content"] == "3"


def test_start_outside_a_running_loop_says_how_to_run_it():
    with pytest.raises(RuntimeError, match=r"needs a running event loop .*asyncio\.run\(main\(\)\)"):
        nlg.start(review_app(Counter()), {"target": 1}, display=False)


async def test_a_failing_node_ends_the_run_failed_with_its_error_and_await_raises_it():
    def broken(state: Draft) -> dict[str, Any]:
        raise KeyError("no draft")

    g = StateGraph(Draft)
    g.add_node("broken", broken)
    g.add_edge(START, "broken")
    g.add_edge("broken", END)
    run = nlg.start(g.compile(), {}, display=False)
    view = nlg.LangGraphView.for_run(run)
    with pytest.raises(KeyError, match="no draft"):
        await run
    assert run.result().outcome == "failed" and "KeyError" in (run.result().reason or "")
    assert view.status["outcome"] == "failed"
    assert [(r.path, r.error is not None, r.edge) for r in run.history] == [("broken", True, None)]
    assert "      error: 'no draft'" in view.log


# -- answering ------------------------------------------------------------------------------


async def test_two_interrupts_in_parallel_branches_answered_in_reverse_order_resume_once():
    calls: Counter[str] = Counter()
    run = nlg.start(trip_app(calls), {}, thread("trip"), display=False)
    view = nlg.LangGraphView.for_run(run)
    assert await run.next_pause(timeout=10) is not None
    city, room = sorted(run.pauses, key=lambda pause: pause.node)
    assert (city.path, city.branch, room.path, room.branch) == ("city", "city", "room", "room")
    assert room.options == ("single", "double") and room.question == {
        "question": "Room size?",
        "options": ["single", "double"],
    }
    assert city.options is None and city.prompt == "Which city?"

    # The view's boxes: one per interrupt, each saying (apart from its question) that LangGraph runs its node again.
    boxes = {pause["node"]: pause for pause in view.pending}
    assert set(boxes) == {"city", "room"} and view.status["state"] == "paused"
    for node, pause in boxes.items():
        assert pause["reruns"]["note"] == f"a resume runs {node!r} again from its start"

    # An answer that is not one of the options is refused, naming them; nothing is answered.
    with pytest.raises(ResumeError, match="'twin' is not one of the options"):
        click(view, {"type": "answer", "pause_id": room.id, "value": "twin"})
    assert len(run.pauses) == 2

    # The second branch first: the run waits for the other answer, no node has run again.
    assert click(view, {"type": "answer", "pause_id": room.id, "value": "double"})
    await asyncio.sleep(0)  # (a turn of the loop: nothing is waiting to run)
    assert [pause.id for pause in run.pauses] == [city.id] and not run.done
    assert calls == {"city": 1, "room": 1}
    assert not click(view, {"type": "answer", "pause_id": room.id, "value": "single"})  # a stale click

    assert click(view, {"type": "answer", "pause_id": city.id, "value": "Kyoto"})
    assert await run == {"city": "Kyoto", "room": "double", "booked": "double in Kyoto"}
    # One resume with both answers: each branch ran again once from its start, book once.
    assert calls == {"city": 2, "room": 2, "book": 1}
    who = identity()  # the log says who answered, and through which door
    assert [line for line in view.log if line.startswith("      answered")] == [
        f"      answered (room) by {who} (view)",
        f"      answered (city) by {who} (view)",
    ]
    assert view.pending == []
    # The steps say what each node asked and got back.
    shown = inspected(view, {"type": "inspect", "node": "room"})
    assert [(p["id"], p["answer"]) for p in shown["pauses"]] == [(room.id, "double")]
    with pytest.raises(NoPendingRequest, match="waits for no answer \\(it has finished\\)"):
        run.answer("Oslo")


async def test_a_branch_that_finished_while_its_sibling_asked_keeps_its_step():
    calls: Counter[str] = Counter()

    def fetch(state: Trip) -> dict[str, Any]:
        calls["fetch"] += 1
        return {"room": "double"}

    def city(state: Trip) -> dict[str, Any]:
        calls["city"] += 1
        return {"city": interrupt("Which city?")}

    g = StateGraph(Trip)
    g.add_node("fetch", fetch)
    g.add_node("city", city)
    g.add_node("book", lambda state: {"booked": f"{state['room']} in {state['city']}"})
    g.add_edge(START, "fetch")
    g.add_edge(START, "city")
    g.add_edge(["fetch", "city"], "book")
    g.add_edge("book", END)
    run = nlg.start(g.compile(checkpointer=InMemorySaver()), {}, display=False)
    view = nlg.LangGraphView.for_run(run)
    pause = await run.next_pause(timeout=10)
    assert pause is not None and pause.node == "city" and calls == {"fetch": 1, "city": 1}
    click(view, {"type": "answer", "pause_id": pause.id, "value": "Oslo"})
    assert (await run)["booked"] == "double in Oslo"
    # LangGraph kept fetch's writes and did not call it again; its step is recorded once, routed on.
    assert calls == {"fetch": 1, "city": 2}
    steps = [(r.step, r.path, r.branch, r.edge.target if r.edge else None) for r in run.history]
    assert sorted(steps[:2]) == [(1, "city", "city", "book"), (1, "fetch", "fetch", "book")]
    assert steps[2:] == [(2, "book", None, END)]
    assert view.visits == {"fetch": 1, "city": 1, "book": 1}


async def test_answers_by_interrupt_id_in_one_mapping_and_approve():
    calls: Counter[str] = Counter()
    run = nlg.start(trip_app(calls), {}, display=False)
    await run.next_pause(timeout=10)
    by_node = {pause.node: pause.id for pause in run.pauses}
    with pytest.raises(ResumeError, match="waits for 2 answers; give them by pause id"):
        run.answer("Kyoto")
    run.answer({by_node["room"]: "single", by_node["city"]: "Oslo"})
    assert (await run)["booked"] == "single in Oslo"

    def ask(state: Trip) -> dict[str, Any]:
        return {"booked": "yes" if interrupt("Book it?") else "no"}

    g = StateGraph(Trip)
    g.add_node("ask", ask)
    g.add_edge(START, "ask")
    g.add_edge("ask", END)
    approved = nlg.start(g.compile(checkpointer=InMemorySaver()), {}, display=False)
    await approved.next_pause(timeout=10)
    approved.approve()
    assert await approved == {"booked": "yes"}


async def test_static_breakpoints_pause_the_run_and_continue_goes_on():
    calls: Counter[str] = Counter()
    app = review_app(calls, interrupt_before=["publish"], interrupt_after=["research"])
    run = nlg.start(app, {"target": 1}, thread("breaks"), display=False)
    view = nlg.LangGraphView.for_run(run)
    assert view.breakpoints == {"before": ["publish"], "after": ["research"]}

    after = await run.next_pause(timeout=10)
    assert after is not None and (after.kind, after.at, after.node) == ("breakpoint", "after", "research")
    assert after.update == {"target": 1, "notes": ["found", "ranked"]}  # what the sub-graph gave back, shown in the box
    assert calls == {"search": 1} and view.pending[0]["kind"] == "breakpoint"
    assert click(view, {"type": "answer", "pause_id": after.id, "value": "continue"})

    before = await run.next_pause(timeout=10)
    assert before is not None and before.id != after.id
    assert (before.kind, before.at, before.node) == ("breakpoint", "before", "publish")
    assert calls == {"search": 1, "draft": 1, "review": 1}
    run.answer()  # what no answer means at a breakpoint: continue
    assert (await run)["published"] is True
    assert calls == {"search": 1, "draft": 1, "review": 1, "publish": 1}


async def test_a_breakpoint_answered_stop_ends_the_run_aborted():
    calls: Counter[str] = Counter()
    run = nlg.start(review_app(calls, interrupt_before=["draft"]), {"target": 1}, display=False)
    view = nlg.LangGraphView.for_run(run)
    pause = await run.next_pause(timeout=10)
    assert pause is not None
    click(view, {"type": "answer", "pause_id": pause.id, "value": "stop"})
    await run
    assert run.result().outcome == "aborted" and view.status["outcome"] == "aborted"
    assert "draft" not in calls


async def test_stop_cancels_a_running_node():
    started = asyncio.Event()

    async def forever(state: Draft) -> dict[str, Any]:
        started.set()
        await asyncio.Event().wait()  # a node that never returns on its own
        return {}

    g = StateGraph(Draft)
    g.add_node("quick", lambda state: {"n": 1})
    g.add_node("forever", forever)
    g.add_edge(START, "quick")
    g.add_edge("quick", "forever")
    g.add_edge("forever", END)
    run = nlg.start(g.compile(checkpointer=InMemorySaver()), {}, display=False)
    view = nlg.LangGraphView.for_run(run)
    await started.wait()
    assert run.running == ("forever",)
    assert click(view, {"type": "stop"})
    assert await asyncio.wait_for(run, timeout=30) == {"n": 1, "notes": []}  # the state at its last checkpoint
    result = run.result()
    assert result.outcome == "aborted" and "stopped" in (result.reason or "")
    assert view.status["outcome"] == "aborted" and view.running == []
    assert [record.path for record in run.history] == ["quick"]


async def test_steering_a_langgraph_run_is_refused_with_what_to_do_instead():
    run = nlg.start(trip_app(Counter()), {}, display=False)
    view = nlg.LangGraphView.for_run(run)
    await run.next_pause(timeout=10)
    sent: list[dict[str, Any]] = []
    view.send = sent.append  # type: ignore[method-assign]
    view._on_message(view, {"type": "steer", "text": "hurry"}, [])  # as a click arrives
    assert sent[-1]["type"] == "error" and "takes no message while it runs" in sent[-1]["message"]
    click(view, {"type": "stop"})
    await run


# -- replaying and forking ------------------------------------------------------------------


def test_replay_reads_a_thread_from_a_sqlite_saver_and_runs_no_node(tmp_path):
    calls: Counter[str] = Counter()
    with SqliteSaver.from_conn_string(str(tmp_path / "threads.sqlite")) as saver:
        app = review_app(calls, saver, interrupt_before=["publish"])
        app.invoke({"target": 2}, thread("stored"))  # LangGraph's own run, stopped before publish
        ran = Counter(calls)

        view = nlg.replay(app, thread("stored"))
        assert calls == ran  # nothing ran again
        assert view.status["outcome"] == "interrupted" and view.status["reason"] == "waiting to run publish"
        records = nlg.history(app, thread("stored")).records
        assert [r.path for r in records] == [
            "research/search",
            "research/rank",
            "research",
            "draft",
            "review",
            "draft",
            "review",
        ]
        assert len(view.frames["rows"]) == len(records) + 1  # frame 0 is the input
        assert view.visits == {"research/search": 1, "research/rank": 1, "research": 1, "draft": 2, "review": 2}
        shown = inspected(view, {"type": "inspect", "frame": 5})  # the first review
        assert (shown["path"], shown["step"], shown["update"]) == ("review", 3, {"notes": ["review 1"]})
        assert shown["input"]["n"] == 1 and shown["change"]["appended"] == {"notes": ["review 1"]}
        assert shown["edge"]["target"] == "draft" and shown["edge"]["label"] == "redraft"
        assert calls == ran


async def test_replay_of_a_live_run_matches_what_its_view_showed():
    calls: Counter[str] = Counter()
    app = review_app(calls)
    run = nlg.start(app, {"target": 3}, thread("again"), display=False)
    live = nlg.LangGraphView.for_run(run)
    await run
    ran = Counter(calls)
    replayed = nlg.replay(app, thread("again"))
    assert calls == ran
    assert replayed.visits == live.visits and replayed.fired == live.fired
    assert replayed.frames["names"] == live.frames["names"]
    assert [row[:4] for row in replayed.frames["rows"]] == [row[:4] for row in live.frames["rows"]]


async def test_a_fork_goes_on_from_the_chosen_checkpoint_with_an_update(tmp_path):
    calls: Counter[str] = Counter()
    async with AsyncSqliteSaver.from_conn_string(str(tmp_path / "forks.sqlite")) as saver:
        app = review_app(calls, saver)
        first = nlg.start(app, {"target": 3}, thread("forked"), display=False)
        await first
        assert [r.node for r in first.history if "/" not in r.path] == [
            "research",
            "draft",
            "review",
            "draft",
            "review",
            "draft",
            "review",
            "publish",
        ]
        ran = Counter(calls)
        steps = await nlg.ahistory(app, thread("forked"))
        assert steps.outcome == "done"

        # After step 3 (the first review, n=1) the target becomes 1: its routing, done afresh, publishes.
        fork = nlg.fork(steps, step=3, update={"target": 1}, display=False)
        values = await fork
        assert values["n"] == 1 and values["published"] is True
        assert calls - ran == Counter({"publish": 1})  # nothing up to step 3 ran again, nothing else ran
        kept = [r.node for r in fork.history if "/" not in r.path]
        assert kept == ["research", "draft", "review", "publish"]
        assert [r.step for r in fork.history if r.node == "publish"] == [5]  # (step 4 is the update)

        # The thread goes on from the fork: replayed, it shows the fork's path.
        after = await nlg.ahistory(app, thread("forked"))
        assert [r.node for r in after.records if "/" not in r.path] == kept

        with pytest.raises(ValueError, match="has steps 0 to 5 to fork from, not 9"):
            nlg.fork(after, step=9, display=False)


async def test_fork_from_here_in_the_view_shows_the_fork_beside_the_path_it_left():
    calls: Counter[str] = Counter()
    app = review_app(calls)
    run = nlg.start(app, {"target": 2}, thread("clicked"), display=False)
    view = nlg.LangGraphView.for_run(run)
    await run
    assert view.can_fork
    ran = Counter(calls)
    before = dict(view.fired)

    assert click(view, {"type": "fork", "step": 4})  # after the second draft: it runs review again
    fork = view.observer.run if view.observer is not None else None
    assert isinstance(fork, nlg.LangGraphRun) and fork is not run
    assert view.previous == {"thread": "clicked", "step": 4, "visits": view.previous["visits"], "fired": before}
    await fork
    assert calls - ran == Counter({"review": 1, "publish": 1})
    assert view.status["outcome"] == "done"
    assert view.visits["draft"] == 2 and view.visits["review"] == 2  # the shared steps, then the fork's own
    assert any("fork of clicked after step 4" in line for line in view.log)


async def test_fork_from_a_replayed_thread_in_its_view():
    calls: Counter[str] = Counter()
    app = review_app(calls)
    await nlg.start(app, {"target": 1}, thread("replayed"), display=False)
    view = nlg.replay(app, thread("replayed"))
    ran = Counter(calls)
    assert click(view, {"type": "fork", "step": 2})  # after research and the first draft
    fork = view.observer.run if view.observer is not None else None
    assert fork is not None
    await fork
    assert calls - ran == Counter({"review": 1, "publish": 1})
    assert view.status["outcome"] == "done" and view.previous["step"] == 2


async def test_answering_in_the_view_resumes_with_a_command_as_langgraph_does():
    # The same graph, answered through nbgraph and through LangGraph's own Command: the same end.
    calls: Counter[str] = Counter()
    ours = nlg.start(trip_app(calls), {}, thread("ours"), display=False)
    await ours.next_pause(timeout=10)
    ours.answer({pause.id: ("Oslo" if pause.node == "city" else "single") for pause in ours.pauses})
    app = trip_app(calls)
    app.invoke({}, thread("theirs"))
    state = app.get_state(thread("theirs"))
    answers = {i.id: ("Oslo" if i.value == "Which city?" else "single") for i in state.interrupts}
    assert app.invoke(Command(resume=answers), thread("theirs")) == await ours


# -- the extra ------------------------------------------------------------------------------


def run_python(code: str) -> str:
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_without_langgraph_the_import_says_which_extra_to_install():
    out = run_python(
        """
        import sys
        sys.modules["langgraph"] = None  # as if it were not installed
        from nbgraph.errors import NbgraphError
        try:
            import nbgraph.langgraph
        except ImportError as exc:
            print(isinstance(exc, NbgraphError), exc)
        """
    )
    assert out.startswith("True nbgraph.langgraph needs LangGraph, which is not installed")
    assert out.rstrip().endswith("pip install 'nbgraph[langgraph]'")


def test_the_rest_of_nbgraph_never_imports_langgraph():
    out = run_python(
        """
        import sys
        import nbgraph, nbgraph.widget, nbgraph.viewed, nbgraph.magics, nbgraph.replay, nbgraph.inspection
        print(sorted(name for name in sys.modules if name.startswith(("langgraph", "langchain"))))
        """
    )
    assert out.strip() == "[]"
