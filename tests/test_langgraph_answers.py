"""Answers at the LangGraph door: what it accepts it can keep, before anything runs; the review
idioms' own answers read as decisions; a record of every decision, bound to its own interrupt.

Every graph is a real LangGraph graph run by LangGraph: LangChain's own ``create_agent`` with
``HumanInTheLoopMiddleware`` (a scripted chat model), or a node that asks the agent inbox as its
README does. The tools append to a list, so a test counts exactly what ran.
"""

from __future__ import annotations

import asyncio
import datetime
import operator
from collections.abc import Iterator
from typing import Annotated, Any, TypedDict

import pytest
from langchain_core.messages import AIMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode
from langgraph.types import interrupt

import nbgraph.langgraph as nlg
from nbgraph._protocol import checked
from nbgraph.answering import set_identity
from nbgraph.decision import Decision, FieldEdit
from nbgraph.errors import ResumeError

refunds: list[tuple[str, dict[str, Any]]] = []


@tool
def refund(order: str, details: dict[str, Any]) -> str:
    """Refund an order."""
    refunds.append((order, details))
    return f"refunded {order}"


@pytest.fixture(autouse=True)
def fresh() -> Iterator[None]:
    refunds.clear()
    set_identity("alice")
    yield
    set_identity(None)


def thread(name: str) -> dict[str, Any]:
    return {"configurable": {"thread_id": name}}


async def ended(run: nlg.LangGraphRun) -> dict[str, Any]:
    """The run's final state; a run still waiting after 30 s fails the test."""
    return await asyncio.wait_for(run, timeout=30)


async def only_pause(run: nlg.LangGraphRun) -> Any:
    pause = await run.next_pause(timeout=10)
    assert pause is not None and len(run.pauses) == 1
    return pause


def answer_events(run: nlg.LangGraphRun) -> list[Any]:
    """The run's ``answer`` events from now on."""
    heard: list[Any] = []
    run.subscribe(lambda event: heard.append(event) if event.type == "answer" else None, steps=False)
    return heard


def calls_to_refund(*orders: str, call_id: str | None = None) -> AIMessage:
    calls = [
        {"name": "refund", "args": {"order": order, "details": {"amount": 5}}, "id": call_id or f"call_{i}"}
        for i, order in enumerate(orders)
    ]
    return AIMessage(content="", tool_calls=calls)


def agent(*replies: AIMessage, mode: str = "batched") -> Any:
    """LangChain's ``create_agent`` whose every refund waits for a person (the middleware's review)."""
    from langchain.agents import create_agent
    from langchain.agents.middleware import HumanInTheLoopMiddleware
    from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel

    class Scripted(FakeMessagesListChatModel):
        def bind_tools(self, tools: Any, **options: Any) -> Any:
            return self  # (the replies are scripted: the tools change nothing)

    model = Scripted(responses=[*replies, AIMessage(content="All done.")])
    review = HumanInTheLoopMiddleware(interrupt_on={"refund": True}, interrupt_mode=mode)
    return create_agent(model, tools=[refund], middleware=[review], checkpointer=InMemorySaver())


def inbox_agent() -> Any:
    """A model turn of two refunds, each reviewed in the agent inbox, then a ToolNode runs those kept."""

    def model(state: MessagesState) -> dict[str, Any]:
        return {"messages": [calls_to_refund("A", "B")]}

    def review(state: MessagesState) -> dict[str, Any]:
        last = state["messages"][-1]
        assert isinstance(last, AIMessage)
        allow = {"allow_accept": True, "allow_edit": True, "allow_respond": True, "allow_ignore": True}
        requests = [
            {"action_request": {"action": call["name"], "args": call["args"]}, "config": allow, "description": "?"}
            for call in last.tool_calls
        ]
        kept = []
        for call, response in zip(last.tool_calls, interrupt(requests), strict=True):
            if response["type"] == "accept":
                kept.append(call)
            elif response["type"] == "edit":
                kept.append({**call, "args": response["args"]["args"]})
        return {"messages": [AIMessage(content="", tool_calls=kept, id=last.id)]}

    g = StateGraph(MessagesState)
    g.add_node("model", model)
    g.add_node("review", review)
    g.add_node("tools", ToolNode([refund]))
    g.add_edge(START, "model")
    g.add_edge("model", "review")
    g.add_edge("review", "tools")
    g.add_edge("tools", END)
    return g.compile(checkpointer=InMemorySaver())


def review_app(idiom: str) -> Any:
    return inbox_agent() if idiom == "inbox" else agent(calls_to_refund("A", "B"))


def edit_first(idiom: str, details: Any, *, own_shape: bool) -> Any:
    """An edit of the first refund's details and an approval of the second: in nbgraph's decisions,
    or in the idiom's own answer as its client sends it."""
    if not own_shape:
        return [{"type": "edit", "arguments": {"order": "A", "details": details}}, {"type": "approve"}]
    if idiom == "inbox":
        edit = {"type": "edit", "args": {"action": "refund", "args": {"order": "A", "details": details}}}
        return [edit, {"type": "accept", "args": None}]
    edit = {"type": "edit", "edited_action": {"name": "refund", "args": {"order": "A", "details": details}}}
    return {"decisions": [edit, {"type": "approve"}]}


UNKEPT = {
    "an object": (object(), "['note'] is an object"),
    "bytes": (b"\x00\x01", "['note'] is a bytes"),
    "a set": ({1, 2}, "['note'] is a set"),
    "a datetime": (datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC), "['note'] is a datetime"),
    "NaN": (float("nan"), "['note'] is nan: JSON holds only finite numbers"),
    "infinity": (float("inf"), "['note'] is inf: JSON holds only finite numbers"),
}


# -- what the door accepts, it can keep ---------------------------------------------------------


@pytest.mark.parametrize("idiom", ["inbox", "middleware"])
async def test_an_edit_a_checkpoint_cannot_keep_is_refused_before_any_tool_runs_and_a_good_one_runs_each_once(
    idiom: str,
):
    run = nlg.start(review_app(idiom), {"messages": [("user", "refund A and B")]}, display=False)
    pause = await only_pause(run)
    assert [call.name for call in pause.tool_calls] == ["refund", "refund"]
    for own_shape in (False, True):
        for value, told in UNKEPT.values():
            with pytest.raises(ResumeError) as refused:
                run.answer(edit_first(idiom, {"amount": 5, "note": value}, own_shape=own_shape))
            assert told in str(refused.value)
            assert "cannot be stored" in str(refused.value)
            assert run.pauses == (pause,) and refunds == [] and not run.done
    # JSON holds it, LangGraph's checkpointer (msgpack) does not: refused too, naming the saver.
    with pytest.raises(ResumeError, match=r"cannot be written by the graph's checkpointer \(InMemorySaver: Integer"):
        run.answer(edit_first(idiom, {"amount": 10**30}, own_shape=True))
    assert run.pauses == (pause,) and refunds == []

    run.answer(edit_first(idiom, {"amount": 5, "note": "goodwill"}, own_shape=idiom == "inbox"))
    await ended(run)
    assert sorted(refunds) == [("A", {"amount": 5, "note": "goodwill"}), ("B", {"amount": 5})]  # each once
    assert run.result().outcome == "done"


async def test_a_resume_refuses_what_cannot_be_kept_and_the_thread_still_waits_at_its_pause():
    app = agent(calls_to_refund("A", "B"))
    run = nlg.start(app, {"messages": [("user", "refund A and B")]}, thread("kept"), display=False)
    view = nlg.LangGraphView.for_run(run)
    pause = await only_pause(run)
    run.stop_waiting("nobody is at the desk")
    await ended(run)
    result = run.result()

    for value, told in UNKEPT.values():
        with pytest.raises(ResumeError, match="cannot be stored") as refused:
            nlg.resume(result, answer=edit_first("middleware", {"note": value}, own_shape=True), display=False)
        assert told in str(refused.value)
    # The view's answer to the ended run resumes it: a message over the size bound is refused there.
    long = {"type": "respond", "message": "x" * 1_000_001}
    with pytest.raises(ResumeError, match=r"over the limit of 1,000,000; .* nbgraph.set_answer_limit\(bytes\)"):
        view.handle(checked("graph", "to_kernel", {"type": "answer", "pause_id": pause.id, "value": [long, long]}))
    assert view.observer is not None and view.observer.run is run  # no run was started
    assert refunds == [] and nlg.history(app, thread("kept")).pauses == (pause,)

    going_on = nlg.resume(result, answer="approve", display=False)
    await ended(going_on)
    assert sorted(refunds) == [("A", {"amount": 5}), ("B", {"amount": 5})]


class Count(TypedDict, total=False):
    n: int
    seen: Annotated[list[Any], operator.add]


def asking_app(**breaks: Any) -> Any:
    """``count`` then ``ask``: a question whose answer the node keeps."""

    def count(state: Count) -> dict[str, Any]:
        return {"n": state.get("n", 0) + 1}

    def ask(state: Count) -> dict[str, Any]:
        return {"seen": [interrupt({"question": "How many?", "deciders": ["alice", "bob"]})]}

    g = StateGraph(Count)
    g.add_node("count", count)
    g.add_node("ask", ask)
    g.add_edge(START, "count")
    g.add_edge("count", "ask")
    g.add_edge("ask", END)
    return g.compile(checkpointer=InMemorySaver(), **breaks)


async def test_a_breakpoint_update_and_an_input_that_cannot_be_kept_are_refused_before_the_graph_goes_on():
    run = nlg.start(asking_app(interrupt_after=["count"]), {}, display=False)
    pause = await only_pause(run)
    assert pause.kind == "breakpoint" and pause.takes_update
    for value, told in UNKEPT.values():
        with pytest.raises(ResumeError, match="cannot be stored") as refused:
            run.answer({"answer": "continue", "update": {"n": {"note": value}}})
        assert told in str(refused.value)
    with pytest.raises(ResumeError, match="cannot be written by the graph's checkpointer"):
        run.answer({"answer": "continue", "update": {"n": 2**70}})
    assert run.pauses == (pause,)
    run.answer({"answer": "continue", "update": {"n": 7}})

    question = await only_pause(run)
    assert question.kind == "input"
    with pytest.raises(ResumeError, match="is nan: JSON holds only finite numbers"):
        run.answer(float("nan"))
    run.answer(3)
    assert await ended(run) == {"n": 7, "seen": [3]}


# -- the idioms' own answers --------------------------------------------------------------------


class Mail(TypedDict, total=False):
    received: Annotated[list[Any], operator.add]


def inbox_app(**allow: bool) -> Any:
    """A node that asks the agent inbox about one email and keeps what ``interrupt()`` returned."""
    config = {"allow_accept": True, "allow_edit": True, "allow_respond": True, "allow_ignore": True, **allow}

    def review(state: Mail) -> dict[str, Any]:
        request = {
            "action_request": {"action": "send_email", "args": {"to": "alice", "body": "hi"}},
            "config": config,
            "description": "Send it?",
        }
        return {"received": interrupt([request])}

    g = StateGraph(Mail)
    g.add_node("review", review)
    g.add_edge(START, "review")
    g.add_edge("review", END)
    return g.compile(checkpointer=InMemorySaver())


INBOX_REPLIES = {
    "accept": ({"type": "accept", "args": None}, "approved", ()),
    "edit": (
        {"type": "edit", "args": {"action": "send_email", "args": {"to": "bob", "body": "hi"}}},
        "edited",
        (FieldEdit(field="send_email.to", before="alice", after="bob"),),
    ),
    "ignore": ({"type": "ignore", "args": None}, "rejected", ()),
    "response": ({"type": "response", "args": "Ask Carol instead."}, "responded", ()),
}


@pytest.mark.parametrize("reply", INBOX_REPLIES)
async def test_an_inbox_interrupt_takes_the_inbox_own_response_and_the_node_gets_it_as_sent(reply: str):
    given, verdict, edits = INBOX_REPLIES[reply]
    run = nlg.start(inbox_app(), {}, display=False)
    heard = answer_events(run)
    pause = await only_pause(run)
    run.answer([given])
    assert (await ended(run))["received"] == [given]  # what the inbox's client sends is what the node reads
    (event,) = heard
    decision = event.decision
    assert (decision.pause_id, decision.kind, decision.verdict, decision.edits) == (pause.id, "tool", verdict, edits)
    assert event.answer == [given]  # the event keeps the answer as it was given


async def test_an_inbox_response_is_checked_as_a_decision_and_refused_saying_why():
    run = nlg.start(inbox_app(allow_ignore=False), {}, display=False)
    pause = await only_pause(run)
    refused = {
        "send_email takes approve, edit, respond; not 'reject'": {"type": "ignore", "args": None},
        "the agent inbox's accept carries no args \\(None\\); got {'to': 'x'} \\(to change the call, edit it\\)": {
            "type": "accept",
            "args": {"to": "x"},
        },
        "an edit changes the arguments of send_email, not the tool it calls; got an edit naming 'delete_all'": {
            "type": "edit",
            "args": {"action": "delete_all", "args": {}},
        },
        "the agent inbox's edit carries the whole action": {"type": "edit", "args": {"to": "bob"}},
        "the agent inbox's response carries its text in 'args'; got 3": {"type": "response", "args": 3},
        "a reply with 'args' is the agent inbox's HumanResponse": {"type": "approve", "args": None},
    }
    for message, reply in refused.items():
        with pytest.raises(ResumeError, match=message):
            run.answer([reply])
        assert run.pauses == (pause,)

    # After a restart of the run, the inbox's own shape answers the thread's pause.
    run.stop_waiting("nobody answered")
    await ended(run)
    going_on = nlg.resume(run.result(), answer={"type": "response", "args": "later"}, display=False)
    assert (await ended(going_on))["received"] == [{"type": "response", "args": "later"}]


async def test_the_middleware_takes_its_own_decisions_and_its_edit_is_checked_as_nbgraph_checks_one():
    run = nlg.start(agent(calls_to_refund("A", "B")), {"messages": [("user", "refund A and B")]}, display=False)
    heard = answer_events(run)
    await only_pause(run)
    with pytest.raises(ResumeError, match="an edit changes the arguments of refund, not the tool it calls"):
        run.answer(
            {"decisions": [{"type": "edit", "edited_action": {"name": "wire", "args": {}}}, {"type": "approve"}]}
        )
    with pytest.raises(ResumeError, match="the middleware's answer is {'decisions': \\[...\\]}; 'why' is not part"):
        run.answer({"decisions": [{"type": "approve"}, {"type": "approve"}], "why": "ok"})
    with pytest.raises(ResumeError, match="asks about 2 tool calls; got 1 decisions"):
        run.answer({"decisions": [{"type": "approve"}]})
    edit = {"type": "edit", "edited_action": {"name": "refund", "args": {"order": "A", "details": {"amount": 3}}}}
    run.answer({"decisions": [edit, {"type": "reject", "message": "B was refunded already"}]})
    values = await ended(run)
    assert refunds == [("A", {"amount": 3})]
    assert "B was refunded already" in str(values["messages"])
    decision = heard[0].decision
    assert decision.verdict == "edited, rejected"
    assert decision.edits == (FieldEdit(field="refund.details", before={"amount": 5}, after={"amount": 3}),)


async def test_the_middleware_per_call_takes_one_decision_in_its_shape_checked_against_its_response_schema():
    run = nlg.start(agent(calls_to_refund("A", "B"), mode="per_call"), {"messages": [("user", "go")]}, display=False)
    while len(run.pauses) < 2:
        assert await run.next_pause(timeout=10) is not None
    first, second = run.pauses
    bad = {"type": "edit", "edited_action": {"name": "refund", "args": {"order": 7, "details": {}}}}
    with pytest.raises(ResumeError, match="order: must be text"):
        run.answer(bad, pause=first.id)
    good = {"type": "edit", "edited_action": {"name": "refund", "args": {"order": "A2", "details": {}}}}
    run.answer(good, pause=first.id)
    run.answer({"type": "reject", "message": "no"}, pause=second.id)
    await ended(run)
    assert refunds == [("A2", {})]


# -- the record of each decision, bound to its own interrupt ------------------------------------


async def test_each_answer_at_the_door_is_recorded_with_who_how_why_and_what_was_shown():
    app = agent(calls_to_refund("A", "B"))
    run = nlg.start(app, {"messages": [("user", "refund A and B")]}, thread("told"), display=False)
    heard = answer_events(run)
    pause = await only_pause(run)
    with pytest.raises(ResumeError, match="shows something else than what was decided on"):
        run.answer("approve", shown="0" * 32)
    run.answer(
        [{"type": "approve"}, {"type": "reject", "message": "twice", "reason": "B is a duplicate"}],
        by="dana",
        shown=pause.shown,
    )
    await ended(run)
    (event,) = heard
    decision = event.decision
    assert isinstance(decision, Decision) and decision.model_dump(exclude={"at", "answer"}) == {
        "pause_id": pause.id,
        "kind": "tool",
        "path": "HumanInTheLoopMiddleware.after_model",
        "branch": None,
        "step": pause.step,
        "shown": pause.shown,
        "by": "dana",
        "via": "langgraph",
        "verdict": "approved, rejected",
        "edits": (),
        "reason": "B is a duplicate",
        "standing": None,
        "tools": ("refund", "refund"),
    }
    assert datetime.datetime.fromisoformat(decision.at).tzinfo == datetime.UTC
    assert run.decisions == run.result().decisions == [decision]

    # A resume from code, and one from the view, each recorded with its door.
    for door in ("langgraph", "view"):
        run = nlg.start(app, {"messages": [("user", "again")]}, thread(door), display=False)
        pause = await only_pause(run)
        view = nlg.LangGraphView.for_run(run)
        run.stop_waiting("later")
        await ended(run)
        if door == "view":
            assert view.handle(checked("graph", "to_kernel", {"type": "answer", "pause_id": pause.id, "value": True}))
            going_on = view.observer.run if view.observer is not None else None
            assert isinstance(going_on, nlg.LangGraphRun)
        else:
            going_on = nlg.resume(run.result(), answer="reject", reason="not today", display=False)
        heard = answer_events(going_on)
        await ended(going_on)
        (event,) = heard
        assert (event.decision.via, event.decision.by, event.decision.pause_id) == (door, "alice", pause.id)
        assert event.decision.reason == ("not today" if door == "langgraph" else None)
        assert going_on.result().decisions == [event.decision]

    # The view's own door, when it names itself.
    run = nlg.start(app, {"messages": [("user", "third")]}, display=False)
    await only_pause(run)
    run.answer("approve", via="view")
    await ended(run)
    assert [d.via for d in run.decisions] == ["view"]


async def test_a_breakpoint_correction_is_recorded_as_edits_of_what_the_pause_showed():
    run = nlg.start(asking_app(interrupt_after=["count"]), {}, display=False)
    pause = await only_pause(run)
    assert pause.update == {"n": 1}
    run.answer({"answer": "continue", "update": {"n": 7}}, reason="start at seven")
    await only_pause(run)
    (decision,) = run.decisions
    assert (decision.kind, decision.verdict, decision.reason) == ("breakpoint", "continue", "start at seven")
    assert decision.edits == (FieldEdit(field="n", before=1, after=7),)
    assert decision.answer == {"answer": "continue", "update": {"n": 7}}
    run.answer(0, by="bob")
    await ended(run)


async def test_an_interrupt_that_names_its_deciders_waits_for_one_of_them_at_every_door():
    run = nlg.start(asking_app(), {}, thread("who"), display=False)
    pause = await only_pause(run)
    assert pause.deciders == ("alice", "bob")
    with pytest.raises(
        ResumeError, match="'carol' may not answer the pause at node 'ask': it waits for 'alice' or 'bob'"
    ):
        run.answer(1, by="carol")
    set_identity("carol")
    with pytest.raises(ResumeError, match="'carol' may not answer"):
        run.answer(1)
    assert run.pauses == (pause,)
    run.stop_waiting("carol cannot")
    await ended(run)
    with pytest.raises(ResumeError, match="'carol' may not answer"):
        nlg.resume(run.result(), answer=1, display=False)
    going_on = nlg.resume(run.result(), answer=2, by="bob", display=False)
    assert (await ended(going_on))["seen"] == [2]
    assert [(d.by, d.answer) for d in going_on.decisions] == [("bob", 2)]


async def test_a_second_round_that_reuses_the_call_id_pauses_again_for_its_own_decision():
    # A provider that numbers its calls call_0, call_1, ... every turn: the second turn's refund
    # (a million, not five) has the id the first, approved, one had.
    second_turn = AIMessage(
        content="",
        tool_calls=[{"name": "refund", "args": {"order": "A", "details": {"amount": 1_000_000}}, "id": "call_0"}],
    )
    app = agent(calls_to_refund("A", call_id="call_0"), second_turn)
    run = nlg.start(app, {"messages": [("user", "refund A")]}, thread("rounds"), display=False)
    first = await only_pause(run)
    run.answer("approve")
    second = await only_pause(run)
    assert second.id != first.id and second.shown != first.shown
    assert second.tool_calls[0].arguments == {"order": "A", "details": {"amount": 1_000_000}}
    assert refunds == [("A", {"amount": 5})] and not run.done  # it waits: nobody decided this call
    answered = f"pause '{first.id}' is not open: it was answered already, with 'approve', at node "
    with pytest.raises(ResumeError, match=answered):
        run.answer("approve", pause=first.id)

    # After a restart the thread still waits at the second round's own pause, and only its answer goes on.
    run.stop_waiting("the kernel restarts")
    await ended(run)
    with pytest.raises(ResumeError, match=answered):
        nlg.resume(run.result(), answer="approve", pause=first.id, display=False)
    steps = nlg.history(app, thread("rounds"))
    assert [pause.id for pause in steps.pauses] == [second.id]
    going_on = nlg.resume(steps, answer="reject", display=False)
    await ended(going_on)
    assert refunds == [("A", {"amount": 5})]  # the million was never refunded
    assert [d.verdict for d in [*run.decisions, *going_on.decisions]] == ["approved", "rejected"]


async def test_a_resume_after_a_restart_asks_again_in_a_later_round():
    # The first round answered by a resume: the second round's call, with the same id, still pauses.
    app = agent(calls_to_refund("A", call_id="call_0"), calls_to_refund("A", call_id="call_0"))
    run = nlg.start(app, {"messages": [("user", "refund A")]}, thread("again"), display=False)
    first = await only_pause(run)
    run.stop_waiting("later")
    await ended(run)
    going_on = nlg.resume(run.result(), answer="approve", display=False)
    second = await only_pause(going_on)
    assert second.id != first.id and refunds == [("A", {"amount": 5})]
    going_on.answer("approve")
    await ended(going_on)
    assert refunds == [("A", {"amount": 5}), ("A", {"amount": 5})]  # two rounds, two decisions, two refunds
