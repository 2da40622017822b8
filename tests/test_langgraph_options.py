"""LangGraph runs through the door with every saver LangGraph ships, LangGraph 1.x's run
options (``context``, ``durability``, breakpoints given to the run), and a fork with a new
input.

Every graph is a real LangGraph graph run by LangGraph itself; what the door gives is
checked against what LangGraph's own ``invoke`` / ``ainvoke`` gives for the same call.
"""

from __future__ import annotations

import operator
import sqlite3
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, TypedDict

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime, get_runtime
from langgraph.types import interrupt

import nbgraph.langgraph as nlg


def thread(name: str) -> dict[str, Any]:
    return {"configurable": {"thread_id": name}}


class Chat(TypedDict, total=False):
    question: str
    log: Annotated[list[str], operator.add]
    turns: int


def chat_app(checkpointer: Any, calls: Counter[str] | None = None) -> Any:
    """Each invoke is one turn: ask, then answer; the log keeps every turn's lines."""
    calls = calls if calls is not None else Counter()

    def ask(state: Chat) -> dict[str, Any]:
        calls["ask"] += 1
        return {"log": [f"Q: {state['question']}"]}

    def answer(state: Chat) -> dict[str, Any]:
        calls["answer"] += 1
        return {"log": [f"A: {state['question'].upper()}"], "turns": state.get("turns", 0) + 1}

    builder = StateGraph(Chat)
    builder.add_node("ask", ask)
    builder.add_node("answer", answer)
    builder.add_edge(START, "ask")
    builder.add_edge("ask", "answer")
    builder.add_edge("answer", END)
    return builder.compile(checkpointer=checkpointer)


# -- every saver runs ------------------------------------------------------------------------


async def test_a_sync_sqlite_saver_runs_forks_and_replays(tmp_path: Path) -> None:
    # LangGraph's own astream refuses this saver ("does not support async methods").
    conn = sqlite3.connect(tmp_path / "chat.db", check_same_thread=False)
    try:
        app = chat_app(SqliteSaver(conn))
        with pytest.raises(NotImplementedError):
            await app.ainvoke({"question": "hi"}, thread("plain"))

        first = await nlg.start(app, {"question": "hi"}, thread("chat"), display=False)
        assert first == {"question": "hi", "log": ["Q: hi", "A: HI"], "turns": 1}
        assert app.get_state(thread("chat")).values == first  # written to the user's own store

        fork = nlg.fork(app, thread("chat"), step=1, update={"question": "bye"})
        assert await fork == {"question": "bye", "log": ["Q: hi", "A: BYE"], "turns": 1}
        assert fork.result().outcome == "done"

        steps = nlg.history(app, thread("chat"))
        assert [record.node for record in steps.records] == ["ask", "answer"]  # the fork's path
        assert nlg.replay(app, thread("chat")).steps is not None
    finally:
        conn.close()


async def test_a_sync_sqlite_saver_answers_an_interrupt(tmp_path: Path) -> None:
    def city(state: dict[str, Any]) -> dict[str, Any]:
        return {"city": interrupt("Which city?")}

    builder = StateGraph(dict)
    builder.add_node("city", city)
    builder.add_edge(START, "city")
    builder.add_edge("city", END)
    with SqliteSaver.from_conn_string(str(tmp_path / "trip.db")) as saver:
        app = builder.compile(checkpointer=saver)
        run = nlg.start(app, {}, thread("trip"), display=False)
        pause = await run.next_pause(timeout=10)
        assert pause is not None and pause.prompt == "Which city?"
        run.answer("Kyoto")
        assert await run == {"city": "Kyoto"}


async def test_history_reads_an_async_saver_from_a_running_loop(tmp_path: Path) -> None:
    async with AsyncSqliteSaver.from_conn_string(str(tmp_path / "chat.db")) as saver:
        app = chat_app(saver)
        await app.ainvoke({"question": "hi"}, thread("chat"))
        steps = nlg.history(app, thread("chat"))  # (the loop's thread: LangGraph's sync read refuses)
        assert [record.node for record in steps.records] == ["ask", "answer"]
        assert steps.records == (await nlg.ahistory(app, thread("chat"))).records
        fork = nlg.fork(app, thread("chat"), step=1, update={"question": "bye"})
        assert (await fork)["log"] == ["Q: hi", "A: BYE"]


# -- LangGraph 1.x run options -----------------------------------------------------------------


@dataclass
class Caller:
    user: str


def greeting_app(checkpointer: Any = None) -> Any:
    def greet(state: Chat, runtime: Runtime[Caller]) -> dict[str, Any]:
        return {"log": [f"hello {runtime.context.user}"]}

    def sign(state: Chat) -> dict[str, Any]:
        return {"log": [f"signed {get_runtime(Caller).context.user}"]}

    builder = StateGraph(Chat, context_schema=Caller)
    builder.add_node("greet", greet)
    builder.add_node("sign", sign)
    builder.add_edge(START, "greet")
    builder.add_edge("greet", "sign")
    builder.add_edge("sign", END)
    return builder.compile(checkpointer=checkpointer)


async def test_context_reaches_runtime_as_ainvoke_gives_it() -> None:
    app = greeting_app(InMemorySaver())
    expected = await app.ainvoke({"log": []}, thread("plain"), context=Caller("ada"))
    run = nlg.start(app, {"log": []}, thread("door"), context=Caller("ada"), display=False)
    assert await run == expected == {"log": ["hello ada", "signed ada"]}


async def test_context_is_kept_by_a_resume_and_a_fork() -> None:
    app = greeting_app(InMemorySaver())
    app = app.copy(update={"interrupt_before_nodes": ["sign"]})
    run = nlg.start(app, {"log": []}, thread("t"), context=Caller("ada"), display=False)
    await run.next_pause(timeout=10)
    run.stop_waiting("later")
    await run
    going_on = nlg.resume(run.result(), answer="continue", display=False)
    assert await going_on == {"log": ["hello ada", "signed ada"]}
    fork = nlg.fork(going_on.result().replay(), step=1, context=Caller("bob"))
    assert await fork == {"log": ["hello ada", "signed bob"]}


async def test_durability_and_recursion_limit_are_langgraphs() -> None:
    def loop(state: Chat) -> dict[str, Any]:
        return {"turns": state.get("turns", 0) + 1}

    builder = StateGraph(Chat)
    builder.add_node("loop", loop)
    builder.add_edge(START, "loop")
    builder.add_conditional_edges("loop", lambda s: "loop" if s["turns"] < 3 else END)
    app = builder.compile(checkpointer=InMemorySaver())

    run = nlg.start(app, {}, thread("exit"), durability="exit", display=False)
    assert (await run)["turns"] == 3
    # "exit" writes the checkpoint once, at the end: LangGraph's own history shows that.
    await app.ainvoke({}, thread("plain"), durability="exit")
    plain = [s.metadata["step"] async for s in app.aget_state_history(thread("plain"))]
    door = [s.metadata["step"] async for s in app.aget_state_history(thread("exit"))]
    assert door == plain and len(door) < 5

    limited = nlg.start(app, {}, {**thread("limit"), "recursion_limit": 2}, display=False)
    with pytest.raises(Exception, match="Recursion limit of 2"):
        await limited
    assert limited.result().outcome == "failed"


async def test_breakpoints_given_to_the_run_pause_it_and_are_drawn() -> None:
    app = chat_app(InMemorySaver())
    run = nlg.start(app, {"question": "hi"}, thread("t"), interrupt_after=["ask"], display=False)
    assert run.breakpoints.after == frozenset({"ask"}) and app.interrupt_after_nodes == []
    pause = await run.next_pause(timeout=10)
    assert pause is not None and (pause.kind, pause.at, pause.node) == ("breakpoint", "after", "ask")
    run.answer({"answer": "continue", "update": {"question": "yo"}})
    assert await run == {"question": "yo", "log": ["Q: hi", "A: YO"], "turns": 1}


# -- fork with a new input ---------------------------------------------------------------------


async def test_fork_with_a_new_input_is_langgraphs_invoke_from_that_checkpoint() -> None:
    calls: Counter[str] = Counter()
    app = chat_app(InMemorySaver(), calls)
    for name in ("door", "plain"):  # two turns each
        await app.ainvoke({"question": "hi"}, thread(name))
        await app.ainvoke({"question": "how are you"}, thread(name))
    # LangGraph's own: turn 2 asked again, differently, from the checkpoint after turn 1.
    history = [snapshot async for snapshot in app.aget_state_history(thread("plain"))]
    (after_turn_1,) = [snapshot for snapshot in history if snapshot.values.get("turns") == 1 and not snapshot.next]
    expected = await app.ainvoke({"question": "what now"}, after_turn_1.config)
    assert expected["log"] == ["Q: hi", "A: HI", "Q: what now", "A: WHAT NOW"]

    steps = nlg.history(app, thread("door"))
    turn_1 = next(record.step for record in steps.records if record.node == "answer")
    before = dict(calls)
    fork = nlg.fork(steps, step=turn_1, input={"question": "what now"}, display=False)
    assert await fork == expected
    assert calls - Counter(before) == Counter({"ask": 1, "answer": 1})  # only the new turn ran
    assert (await app.aget_state(thread("door"))).values == expected
    assert [record.node for record in fork.result().history] == ["ask", "answer", "ask", "answer"]
