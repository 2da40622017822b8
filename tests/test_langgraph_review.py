"""LangGraph's review idioms in nbgraph's view: the agent inbox's interrupt, LangChain's
human-in-the-loop middleware (batched and per call), a static breakpoint continued with a
correction to the state.

Every graph is a real LangGraph graph run by LangGraph, and each node's code is written as
those idioms' own code reads ``interrupt()``: the tests assert what the node received and
where the graph ended, answered live (``run.answer``, the view's answer message) and from the
thread's checkpoints (``nlg.resume``), and compare with what plain LangGraph gives.
"""

from __future__ import annotations

import asyncio
import operator
from collections import Counter
from typing import Annotated, Any, Literal, NotRequired, TypedDict

import pytest
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode
from langgraph.types import Command, Send, interrupt
from pydantic import Discriminator

import nbgraph.langgraph as nlg
from nbgraph._protocol import checked
from nbgraph.errors import NoPendingRequest, ResumeError


def thread(name: str) -> dict[str, Any]:
    return {"configurable": {"thread_id": name}}


def click(view: nlg.LangGraphView, message: dict[str, Any]) -> Any:
    """What the view's button sends, checked against the view's protocol, handled by the kernel."""
    return view.handle(checked("graph", "to_kernel", message))


async def ended(run: nlg.LangGraphRun) -> dict[str, Any]:
    """The run's final state; a run that is still waiting for an answer after 30 s fails the test."""
    return await asyncio.wait_for(run, timeout=30)


async def only_pause(run: nlg.LangGraphRun) -> Any:
    pause = await run.next_pause(timeout=10)
    assert pause is not None and len(run.pauses) == 1
    return pause


# -- the agent inbox --------------------------------------------------------------------------


class Mail(TypedDict, total=False):
    to: str
    body: str
    received: Annotated[list[Any], operator.add]
    """What each call of the review node got back from interrupt()."""
    sent: Annotated[list[dict[str, Any]], operator.add]
    feedback: str


def inbox_app(calls: Counter[str], checkpointer: Any = None, *, listed: bool = True, **allow: bool) -> Any:
    """A node that asks the agent inbox about an email, as its README's example does."""
    config = {"allow_accept": True, "allow_edit": True, "allow_respond": True, "allow_ignore": True, **allow}

    def review(state: Mail) -> dict[str, Any]:
        calls["review"] += 1
        request = {
            "action_request": {"action": "send_email", "args": {"to": state["to"], "body": state["body"]}},
            "config": config,
            "description": "## Send this email?\nIt goes out at once.",
        }
        # The inbox answers with a list of HumanResponse, one per request, given alone or listed.
        response = interrupt([request] if listed else request)[0]
        update: dict[str, Any] = {"received": [response]}
        if response["type"] == "accept":
            update["sent"] = [{"to": state["to"], "body": state["body"]}]
        elif response["type"] == "edit":
            update["sent"] = [response["args"]["args"]]
        elif response["type"] == "response":
            update["feedback"] = response["args"]
        return update

    g = StateGraph(Mail)
    g.add_node("review", review)
    g.add_edge(START, "review")
    g.add_edge("review", END)
    return g.compile(checkpointer=checkpointer if checkpointer is not None else InMemorySaver())


MAIL = {"to": "alice@example.com", "body": "Lunch at noon?"}


async def test_an_inbox_interrupt_is_a_tool_pause_and_an_edit_reaches_the_node_as_the_inbox_sends_it():
    calls: Counter[str] = Counter()
    run = nlg.start(inbox_app(calls), MAIL, thread("inbox-edit"), display=False)
    view = nlg.LangGraphView.for_run(run)
    pause = await only_pause(run)
    assert pause.kind == "tool" and pause.node == "review"
    (call,) = pause.tool_calls
    assert (call.name, call.arguments, call.parameters) == ("send_email", MAIL, {})
    assert call.decisions == ("approve", "edit", "reject", "respond")
    assert call.description == "## Send this email?\nIt goes out at once."
    assert pause.prompt == "review send_email: Send this email?"
    assert pause.question[0]["action_request"]["action"] == "send_email"  # the value as the node gave it
    assert view.pending[0]["tool_calls"][0]["name"] == "send_email"  # what the view draws its form from

    # The view's form answers with a decision per call; the node gets the inbox's HumanResponse list.
    edited = {"to": "bob@example.com", "body": "Lunch at one?"}
    assert click(view, {"type": "answer", "pause_id": pause.id, "value": [{"type": "edit", "arguments": edited}]})
    values = await ended(run)
    assert values["received"] == [{"type": "edit", "args": {"action": "send_email", "args": edited}}]
    assert values["sent"] == [edited] and calls == {"review": 2}  # (asked, then ran again with the answer)
    # The step says what the node asked and the decisions it got.
    sent: list[dict[str, Any]] = []
    view.send = sent.append  # type: ignore[method-assign]  # (what the kernel sends the browser)
    click(view, {"type": "inspect", "node": "review"})
    shown = checked("graph", "to_view", sent[-1])
    assert [(p["id"], p["kind"], p["answer"]) for p in shown["pauses"]] == [
        (pause.id, "tool", [{"type": "edit", "arguments": edited}])
    ]


async def test_an_inbox_response_and_an_approval_reach_the_node_in_the_inbox_shape():
    calls: Counter[str] = Counter()
    run = nlg.start(inbox_app(calls, listed=False), MAIL, display=False)  # interrupt(request), not listed
    pause = await only_pause(run)
    run.answer({"type": "respond", "message": "Ask Carol instead."}, pause=pause.id)
    values = await ended(run)
    assert values["received"] == [{"type": "response", "args": "Ask Carol instead."}]
    assert values["feedback"] == "Ask Carol instead." and values["sent"] == []

    run = nlg.start(inbox_app(calls), MAIL, display=False)
    await only_pause(run)
    run.approve()  # True: approve every call
    values = await ended(run)
    assert values["received"] == [{"type": "accept", "args": None}] and values["sent"] == [MAIL]

    run = nlg.start(inbox_app(calls), MAIL, display=False)
    await only_pause(run)
    run.answer("reject")
    assert (await ended(run))["received"] == [{"type": "ignore", "args": None}]


async def test_an_inbox_config_limits_the_decisions_and_an_ignore_carries_no_message():
    run = nlg.start(inbox_app(Counter(), allow_edit=False, allow_respond=False), MAIL, display=False)
    pause = await only_pause(run)
    assert pause.tool_calls[0].decisions == ("approve", "reject")
    with pytest.raises(ResumeError, match="send_email takes approve, reject; not 'edit'"):
        run.answer({"type": "edit", "arguments": {"to": "x"}})
    with pytest.raises(ResumeError, match="the agent inbox's ignore, .* carries no message; reject it without one"):
        run.answer({"type": "reject", "message": "not now"})
    assert run.pauses == (pause,)  # nothing was answered
    run.answer({"type": "reject"})
    assert (await ended(run))["received"] == [{"type": "ignore", "args": None}]

    run = nlg.start(inbox_app(Counter()), MAIL, display=False)
    await only_pause(run)
    with pytest.raises(ResumeError, match="to tell the graph why, respond with the message instead"):
        run.answer({"type": "reject", "message": "not now"})
    run.cancel()
    await ended(run)


async def test_an_inbox_pause_answered_after_a_restart_from_the_thread_in_its_saver(tmp_path):
    calls: Counter[str] = Counter()
    path = str(tmp_path / "inbox.sqlite")
    async with AsyncSqliteSaver.from_conn_string(path) as saver:
        run = nlg.start(inbox_app(calls, saver), MAIL, thread("stored"), display=False)
        asked = await only_pause(run)
        run.stop_waiting("nobody is at the desk")
        await ended(run)
        result = run.result()
        assert result.outcome == "interrupted" and result.pauses == (asked,)

    # Another process: the same graph, compiled anew on the same file; the pause is read back.
    async with AsyncSqliteSaver.from_conn_string(path) as saver:
        app = inbox_app(calls, saver)
        steps = await nlg.ahistory(app, thread("stored"))
        (pause,) = steps.pauses
        assert pause.id == asked.id and pause.kind == "tool" and pause.tool_calls == asked.tool_calls
        with pytest.raises(ResumeError, match="a response in place of send_email needs its 'message'"):
            nlg.resume(steps, answer={"type": "respond"}, display=False)
        going_on = nlg.resume(steps, answer={"type": "respond", "message": "Ask Carol."}, pause=asked.id, display=False)
        values = await ended(going_on)
        assert values["received"] == [{"type": "response", "args": "Ask Carol."}]
        assert values["feedback"] == "Ask Carol." and calls == {"review": 2}
        after = await nlg.ahistory(app, thread("stored"))
        assert after.outcome == "done" and after.pauses == ()
        with pytest.raises(NoPendingRequest, match="waits at no pause \\(it ended done\\)"):
            nlg.resume(after, answer="approve", display=False)


# -- LangChain's human-in-the-loop middleware, batched -----------------------------------------


ran: list[tuple[str, dict[str, Any]]] = []


@tool
def send_email(to: str, body: str) -> str:
    """Send an email."""
    ran.append(("send_email", {"to": to, "body": body}))
    return f"sent to {to}"


@tool
def delete_file(path: str) -> str:
    """Delete a file."""
    ran.append(("delete_file", {"path": path}))
    return f"deleted {path}"


EMAIL_SCHEMA = {
    "type": "object",
    "properties": {"to": {"type": "string"}, "body": {"type": "string"}},
    "required": ["to", "body"],
}


class Turn(MessagesState, total=False):
    received: Any


def middleware_app(allowed: dict[str, list[str]]) -> Any:
    """A model turn that asks for two tool calls, reviewed as ``HumanInTheLoopMiddleware.after_model``
    reviews them (langchain 1.5: one ``HITLRequest``, a ``HITLResponse`` back), then a ToolNode."""

    def model(state: Turn) -> dict[str, Any]:
        calls = [
            {"name": "send_email", "args": {"to": "alice", "body": "hi"}, "id": "call-1"},
            {"name": "delete_file", "args": {"path": "/reports/q3"}, "id": "call-2"},
        ]
        return {"messages": [AIMessage(content="", tool_calls=calls)]}

    def after_model(state: Turn) -> dict[str, Any]:
        last = state["messages"][-1]
        assert isinstance(last, AIMessage)
        request = {
            "action_requests": [
                {
                    "name": call["name"],
                    "args": call["args"],
                    "description": f"Tool execution requires approval\n\nTool: {call['name']}\nArgs: {call['args']}",
                }
                for call in last.tool_calls
            ],
            "review_configs": [
                {"action_name": "send_email", "allowed_decisions": allowed["send_email"], "args_schema": EMAIL_SCHEMA},
                {"action_name": "delete_file", "allowed_decisions": allowed["delete_file"]},
            ],
        }
        response = interrupt(request)
        kept, answers = [], []
        for call, decision in zip(last.tool_calls, response["decisions"], strict=True):
            if decision["type"] == "approve":
                kept.append(call)
            elif decision["type"] == "edit":
                kept.append({**call, "args": decision["edited_action"]["args"]})
            else:
                reason = decision.get("message")
                content = (
                    decision["message"]
                    if decision["type"] == "respond"
                    else f"User rejected the tool call for `{call['name']}` with reason: {reason}"
                )
                answers.append(ToolMessage(content=content, name=call["name"], tool_call_id=call["id"]))
        revised = AIMessage(content="", tool_calls=kept, id=last.id)
        return {"messages": [revised, *answers], "received": response}

    g = StateGraph(Turn)
    g.add_node("model", model)
    g.add_node("after_model", after_model)
    g.add_node("tools", ToolNode([send_email, delete_file]))
    g.add_edge(START, "model")
    g.add_edge("model", "after_model")
    g.add_edge("after_model", "tools")
    g.add_edge("tools", END)
    return g.compile(checkpointer=InMemorySaver())


def tool_replies(values: dict[str, Any]) -> dict[str, str]:
    return {message.name: message.content for message in values["messages"] if isinstance(message, ToolMessage)}


async def test_a_middleware_review_approves_one_call_and_rejects_the_other_with_a_message():
    ran.clear()
    app = middleware_app({"send_email": ["approve", "edit", "reject"], "delete_file": ["approve", "reject"]})
    run = nlg.start(app, {"messages": [("user", "mail alice, drop the report")]}, display=False)
    view = nlg.LangGraphView.for_run(run)
    pause = await only_pause(run)
    assert pause.kind == "tool" and pause.node == "after_model"
    assert pause.prompt == "review 2 tool calls: send_email, delete_file"
    email, drop = pause.tool_calls
    assert (email.call_id, email.name, email.arguments) == ("0", "send_email", {"to": "alice", "body": "hi"})
    assert email.decisions == ("approve", "edit", "reject") and email.parameters == EMAIL_SCHEMA
    assert (drop.name, drop.arguments, drop.decisions) == (
        "delete_file",
        {"path": "/reports/q3"},
        ("approve", "reject"),
    )
    assert drop.description.startswith("Tool execution requires approval")

    with pytest.raises(ResumeError, match="asks about 2 tool calls; got 1 decisions"):
        run.answer([{"type": "approve"}])
    answer = [{"type": "approve"}, {"type": "reject", "message": "keep the report"}]
    assert click(view, {"type": "answer", "pause_id": pause.id, "value": answer})
    values = await ended(run)
    assert values["received"] == {"decisions": [{"type": "approve"}, {"type": "reject", "message": "keep the report"}]}
    assert ran == [("send_email", {"to": "alice", "body": "hi"})]  # delete_file never ran
    assert tool_replies(values) == {
        "delete_file": "User rejected the tool call for `delete_file` with reason: keep the report",
        "send_email": "sent to alice",
    }


async def test_a_middleware_review_edits_a_call_within_its_schema():
    ran.clear()
    app = middleware_app({"send_email": ["approve", "edit", "reject", "respond"], "delete_file": ["approve", "reject"]})
    run = nlg.start(app, {"messages": [("user", "mail alice, drop the report")]}, display=False)
    await only_pause(run)
    with pytest.raises(
        ResumeError, match="the edited arguments of send_email do not fit its schema: body: is required"
    ):
        run.answer([{"type": "edit", "arguments": {"to": "bob"}}, {"type": "approve"}])
    with pytest.raises(ResumeError, match="delete_file takes approve, reject; not 'respond'"):
        run.answer([{"type": "approve"}, {"type": "respond", "message": "done already"}])
    run.answer([{"type": "edit", "arguments": {"to": "bob", "body": "hello"}}, {"type": "reject"}])
    values = await ended(run)
    assert values["received"] == {
        "decisions": [
            {"type": "edit", "edited_action": {"name": "send_email", "args": {"to": "bob", "body": "hello"}}},
            {"type": "reject"},  # no message given: none sent, so the middleware says its own
        ]
    }
    assert ran == [("send_email", {"to": "bob", "body": "hello"})]
    assert tool_replies(values)["send_email"] == "sent to bob"


# -- the middleware per call, in parallel branches ---------------------------------------------


class Approve(TypedDict):
    type: Literal["approve"]


class Reject(TypedDict):
    type: Literal["reject"]
    message: NotRequired[str]


class BookingArgs(TypedDict):
    city: str
    nights: int


class EditedBooking(TypedDict):
    name: Literal["book_hotel"]
    args: BookingArgs


class EditBooking(TypedDict):
    type: Literal["edit"]
    edited_action: EditedBooking


DECISIONS = {
    "book_hotel": Annotated[Approve | EditBooking | Reject, Discriminator("type")],
    "cancel_flight": Annotated[Approve | Reject, Discriminator("type")],
}


class Desk(TypedDict, total=False):
    calls: list[dict[str, Any]]
    received: Annotated[list[Any], operator.add]
    done: Annotated[list[str], operator.add]


def per_call_app(asked: Counter[str], checkpointer: Any = None) -> Any:
    """Each tool call reviewed in its own branch as the middleware's ``per_call`` mode does: a
    ``ToolApprovalRequest`` whose ``response_schema`` LangGraph checks the answer against."""

    def plan(state: Desk) -> dict[str, Any]:
        return {
            "calls": [
                {"id": "call-a", "name": "book_hotel", "args": {"city": "Kyoto", "nights": 2}},
                {"id": "call-b", "name": "cancel_flight", "args": {"code": "JL 5"}},
            ]
        }

    def fan(state: Desk) -> list[Send]:
        return [Send("call_tool", call) for call in state["calls"]]

    def call_tool(call: dict[str, Any]) -> dict[str, Any]:
        asked[call["name"]] += 1
        request = {
            "type": "tool_approval",
            "tool_call_id": call["id"],
            "name": call["name"],
            "args": call["args"],
            "description": f"Tool execution requires approval\n\nTool: {call['name']}",
        }
        decision = interrupt(request, response_schema=DECISIONS[call["name"]])
        if decision["type"] == "reject":
            return {"received": [decision], "done": [f"{call['name']} refused: {decision.get('message')}"]}
        args = decision["edited_action"]["args"] if decision["type"] == "edit" else call["args"]
        return {"received": [decision], "done": [f"{call['name']} {args}"]}

    g = StateGraph(Desk)
    g.add_node("plan", plan)
    g.add_node("call_tool", call_tool)
    g.add_edge(START, "plan")
    g.add_conditional_edges("plan", fan, ["call_tool"])
    g.add_edge("call_tool", END)
    return g.compile(checkpointer=checkpointer if checkpointer is not None else InMemorySaver())


async def test_per_call_reviews_in_parallel_branches_answered_in_reverse_order_go_on_once():
    asked: Counter[str] = Counter()
    run = nlg.start(per_call_app(asked), {}, display=False)
    await run.next_pause(timeout=10)
    hotel, flight = sorted(run.pauses, key=lambda pause: pause.tool_calls[0].name)
    assert (hotel.branch, flight.branch) == ("call_tool[0]", "call_tool[1]")
    (booking,) = hotel.tool_calls
    assert (booking.call_id, booking.name, booking.decisions) == ("call-a", "book_hotel", ("approve", "edit", "reject"))
    assert booking.parameters["properties"] == {
        "city": {"title": "City", "type": "string"},
        "nights": {"title": "Nights", "type": "integer"},
    }  # the tool's arguments, read from the interrupt's response_schema
    assert flight.tool_calls[0].decisions == ("approve", "reject") and flight.tool_calls[0].parameters == {}
    assert hotel.prompt == "review book_hotel: Tool execution requires approval"

    with pytest.raises(ResumeError, match="nights: must be a whole number, not 'two'"):
        run.answer({"type": "edit", "arguments": {"city": "Osaka", "nights": "two"}}, pause=hotel.id)
    run.answer({"type": "reject", "message": "keep the flight"}, pause=flight.id)
    assert [pause.id for pause in run.pauses] == [hotel.id] and not run.done
    run.answer({"type": "edit", "arguments": {"city": "Osaka", "nights": 3}}, pause=hotel.id)
    values = await ended(run)
    assert sorted(values["done"]) == [
        "book_hotel {'city': 'Osaka', 'nights': 3}",
        "cancel_flight refused: keep the flight",
    ]
    assert {"type": "reject", "message": "keep the flight"} in values["received"]
    assert asked == {"book_hotel": 2, "cancel_flight": 2}  # one resume with both answers


async def test_per_call_reviews_answered_one_at_a_time_from_the_thread_after_the_run_ended():
    asked: Counter[str] = Counter()
    app = per_call_app(asked)
    run = nlg.start(app, {}, thread("desk"), display=False)
    view = nlg.LangGraphView.for_run(run)
    await run.next_pause(timeout=10)
    run.stop_waiting("nobody answered")
    await ended(run)
    result = run.result()
    hotel, flight = sorted(result.pauses, key=lambda pause: pause.tool_calls[0].name)

    # An answer to one of them, from the view: the thread goes on in a new run, waiting for the other.
    assert click(view, {"type": "answer", "pause_id": flight.id, "value": "approve"})
    going_on = view.observer.run if view.observer is not None else None
    assert isinstance(going_on, nlg.LangGraphRun) and going_on is not run
    pause = await going_on.next_pause(timeout=10)
    assert pause is not None and [p.id for p in going_on.pauses] == [hotel.id]
    assert view.pending[0]["id"] == hotel.id
    assert not click(view, {"type": "answer", "pause_id": flight.id, "value": "approve"})  # a stale click
    going_on.answer("approve")
    values = await ended(going_on)
    assert sorted(values["done"]) == ["book_hotel {'city': 'Kyoto', 'nights': 2}", "cancel_flight {'code': 'JL 5'}"]
    assert values["received"] == [{"type": "approve"}, {"type": "approve"}]
    assert view.status["outcome"] == "done" and view.pending == []


# -- a static breakpoint continued with a correction -------------------------------------------


class Draft(TypedDict, total=False):
    n: int
    target: int
    notes: Annotated[list[str], operator.add]
    published: bool


def draft_app(calls: Counter[str], checkpointer: Any = None, **options: Any) -> Any:
    """draft, then review: back to draft until n reaches target, then publish."""

    def draft(state: Draft) -> dict[str, Any]:
        calls["draft"] += 1
        return {"n": state.get("n", 0) + 1}

    def review(state: Draft) -> dict[str, Any]:
        calls["review"] += 1
        return {"notes": [f"review {state['n']}"]}

    def publish(state: Draft) -> dict[str, Any]:
        calls["publish"] += 1
        return {"published": True, "notes": [f"published {state['n']}"]}

    g = StateGraph(Draft)
    g.add_node("draft", draft)
    g.add_node("review", review)
    g.add_node("publish", publish)
    g.add_edge(START, "draft")
    g.add_edge("draft", "review")
    g.add_conditional_edges(
        "review",
        lambda s: "publish" if s["n"] >= s["target"] else "redraft",
        {"redraft": "draft", "publish": "publish"},
    )
    g.add_edge("publish", END)
    return g.compile(checkpointer=checkpointer if checkpointer is not None else InMemorySaver(), **options)


AFTER_REVIEW = {"interrupt_after": ["review"]}
AROUND = {"interrupt_after": ["draft"], "interrupt_before": ["publish"]}


def plain_langgraph(breaks: dict[str, list[str]], target: int, updates: list[dict[str, Any]]) -> Any:
    """What a LangGraph user gets at each breakpoint with ``update_state(config, values)`` and
    ``invoke(None, config)``, LangGraph's documented way to edit the state there."""
    calls: Counter[str] = Counter()
    app = draft_app(calls, **breaks)
    config = thread("theirs")
    values = app.invoke({"target": target}, config)
    for update in updates:
        app.update_state(config, update)
        values = app.invoke(None, config)
    assert not app.get_state(config).next
    return values, calls


async def test_an_update_after_a_node_is_written_as_its_own_and_routing_goes_where_update_state_sends_it():
    calls: Counter[str] = Counter()
    run = nlg.start(draft_app(calls, **AFTER_REVIEW), {"target": 3}, thread("ours"), display=False)
    view = nlg.LangGraphView.for_run(run)
    after = await only_pause(run)
    assert (after.kind, after.at, after.node, after.takes_update) == ("breakpoint", "after", "review", True)
    assert view.pending[0]["takes_update"] is True

    # After review, n=1 would redraft; the correction n=5, written as review's, publishes instead.
    value = {"answer": "continue", "update": {"n": 5}}
    assert click(view, {"type": "answer", "pause_id": after.id, "value": value})
    values = await ended(run)
    theirs, their_calls = plain_langgraph(AFTER_REVIEW, 3, [{"n": 5}])
    assert values == theirs == {"n": 5, "target": 3, "notes": ["review 1", "published 5"], "published": True}
    assert calls == their_calls == {"draft": 1, "review": 1, "publish": 1}


async def test_updates_at_breakpoints_after_and_before_nodes_end_where_update_state_and_continue_end():
    calls: Counter[str] = Counter()
    run = nlg.start(draft_app(calls, **AROUND), {"target": 2}, thread("ours"), display=False)
    after = await only_pause(run)
    assert (after.at, after.node, after.takes_update) == ("after", "draft", True)
    run.answer({"answer": "continue", "update": {"n": 2}})  # the first draft counts as two
    before = await only_pause(run)
    assert (before.at, before.node, before.takes_update) == ("before", "publish", True)
    assert calls == {"draft": 1, "review": 1}
    run.answer({"answer": "continue", "update": {"notes": ["edited"]}})
    values = await ended(run)

    theirs, their_calls = plain_langgraph(AROUND, 2, [{"n": 2}, {"notes": ["edited"]}])
    assert (
        values
        == theirs
        == {
            "n": 2,
            "target": 2,
            "notes": ["review 2", "edited", "published 2"],
            "published": True,
        }
    )
    assert calls == their_calls == {"draft": 1, "review": 1, "publish": 1}
    # The corrections are LangGraph's own checkpoints: the thread read back has the same steps.
    assert [r.node for r in nlg.history(run.app, thread("ours")).records] == ["draft", "review", "publish"]


async def test_a_plain_continue_still_works_and_a_breakpoint_is_answered_after_the_run_ended():
    calls: Counter[str] = Counter()
    run = nlg.start(draft_app(calls, **AROUND), {"target": 2}, display=False)
    await only_pause(run)
    run.answer("continue")  # after the first draft: review, back to draft
    second = await only_pause(run)
    assert (second.at, second.node, second.step) == ("after", "draft", 3)
    run.answer({"answer": "continue"})  # the same, as a mapping without an update
    before = await only_pause(run)
    assert (before.at, before.node) == ("before", "publish")
    run.stop_waiting("nobody is here")
    await ended(run)
    result = run.result()
    assert result.outcome == "interrupted" and result.pauses == (before,)

    going_on = nlg.resume(result, answer={"answer": "continue", "update": {"notes": ["late"]}}, display=False)
    values = await ended(going_on)
    assert values["notes"] == ["review 1", "review 2", "late", "published 2"] and values["published"] is True
    assert calls == {"draft": 2, "review": 2, "publish": 1}


async def test_a_breakpoint_read_back_from_its_saver_has_the_same_pause_id_and_takes_an_update(tmp_path):
    calls: Counter[str] = Counter()
    path = str(tmp_path / "drafts.sqlite")
    async with AsyncSqliteSaver.from_conn_string(path) as saver:
        run = nlg.start(draft_app(calls, saver, **AFTER_REVIEW), {"target": 3}, thread("kept"), display=False)
        first = await only_pause(run)
        run.stop_waiting("the kernel is about to restart")
        await ended(run)
    async with AsyncSqliteSaver.from_conn_string(path) as saver:
        steps = await nlg.ahistory(draft_app(calls, saver, **AFTER_REVIEW), thread("kept"))
        (pause,) = steps.pauses
        assert (pause.id, pause.at, pause.node, pause.takes_update) == (first.id, "after", "review", True)
        values = await ended(nlg.resume(steps, answer={"update": {"n": 7}}, pause=first.id, display=False))
        assert values == {"n": 7, "target": 3, "notes": ["review 1", "published 7"], "published": True}


async def test_malformed_breakpoint_answers_are_refused_and_nothing_is_answered():
    run = nlg.start(draft_app(Counter(), **AFTER_REVIEW), {"target": 1}, display=False)
    pause = await only_pause(run)
    refused = {
        "the update names 'count', not a field of the graph's state (its fields: n, target, notes, published)": {
            "answer": "continue",
            "update": {"count": 2},
        },
        "a breakpoint is answered with 'continue', 'step' or 'stop'; got 'go on'": {"answer": "go on"},
        "a breakpoint's update is a mapping of state fields to values": {"answer": "continue", "update": [1]},
        "an update goes with 'continue' or 'step'": {"answer": "stop", "update": {"n": 2}},
        "'upd' is not part of it": {"answer": "continue", "upd": {"n": 2}},
    }
    for message, answer in refused.items():
        with pytest.raises(ResumeError, match=message.replace("(", "\\(").replace(")", "\\)")):
            run.answer(answer)
        assert run.pauses == (pause,)
    run.answer({"answer": "stop"})
    await ended(run)
    assert run.result().outcome == "aborted"


class Pair(TypedDict, total=False):
    a: int
    b: int
    total: int


def pair_app(**breaks: Any) -> Any:
    """left and right at once, then add."""
    g = StateGraph(Pair)
    g.add_node("left", lambda state: {"a": 1})
    g.add_node("right", lambda state: {"b": 2})
    g.add_node("add", lambda state: {"total": state["a"] + state["b"]})
    g.add_edge(START, "left")
    g.add_edge(START, "right")
    g.add_edge(["left", "right"], "add")
    g.add_edge("add", END)
    return g.compile(checkpointer=InMemorySaver(), **breaks)


async def test_a_breakpoint_after_parallel_nodes_takes_no_update_where_update_state_would_be_ambiguous():
    app = pair_app(interrupt_before=["add"])
    config = thread("pair")
    app.invoke({}, config)
    with pytest.raises(Exception, match="Ambiguous update, specify as_node"):
        app.update_state(config, {"a": 10})  # what plain LangGraph says

    run = nlg.start(app, {}, thread("ours"), display=False)
    pause = await only_pause(run)
    assert (pause.at, pause.node, pause.takes_update) == ("before", "add", False)
    with pytest.raises(ResumeError, match="the breakpoint before 'add' takes no update: several nodes ran"):
        run.answer({"answer": "continue", "update": {"a": 10}})
    run.answer({"answer": "continue"})
    assert (await ended(run))["total"] == 3


async def test_an_update_after_one_of_parallel_nodes_is_written_as_that_node():
    # Plain LangGraph cannot tell which node the update comes from unless told (as_node=...);
    # the breakpoint after left says which: left.
    app = pair_app(interrupt_after=["left"])
    config = thread("theirs")
    app.invoke({}, config)
    app.update_state(config, {"a": 10}, as_node="left")
    theirs = app.invoke(None, config)

    run = nlg.start(pair_app(interrupt_after=["left"]), {}, display=False)
    pause = await only_pause(run)
    assert (pause.at, pause.node, pause.takes_update) == ("after", "left", True)
    run.answer({"answer": "continue", "update": {"a": 10}})
    assert await ended(run) == theirs == {"a": 10, "b": 2, "total": 12}

    # After both: an update names the breakpoint it corrects (given to both, it would be written twice).
    run = nlg.start(pair_app(interrupt_after=["left", "right"]), {}, display=False)
    await run.next_pause(timeout=10)
    left, right = sorted(run.pauses, key=lambda pause: pause.node)
    with pytest.raises(ResumeError, match="waits at 2 breakpoints, and an update given to all of them"):
        run.answer({"answer": "continue", "update": {"b": 5}})
    run.answer({right.id: {"answer": "continue", "update": {"b": 5}}, left.id: "continue"})
    assert await ended(run) == {"a": 1, "b": 5, "total": 6}


async def test_a_review_answered_with_a_langgraph_command_still_goes_through_as_given():
    # LangGraph's own resume shape passes through start(app, Command(resume=...)) unchanged.
    calls: Counter[str] = Counter()
    app = inbox_app(calls)
    run = nlg.start(app, MAIL, thread("raw"), display=False)
    pause = await only_pause(run)
    run.stop_waiting("answered elsewhere")
    await ended(run)
    raw = [{"type": "response", "args": "from the inbox itself"}]
    values = await ended(nlg.start(app, Command(resume={pause.id: raw}), thread("raw"), display=False))
    assert values["received"] == raw


class TestTheRealMiddleware:
    """LangChain's own ``create_agent`` with ``HumanInTheLoopMiddleware``, driven by a fake chat model."""

    @staticmethod
    def agent(mode: str) -> Any:
        from langchain.agents import create_agent
        from langchain.agents.middleware import HumanInTheLoopMiddleware
        from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel

        class Scripted(FakeMessagesListChatModel):
            def bind_tools(self, tools: Any, **options: Any) -> Any:
                return self  # (the replies are scripted: the tools change nothing)

        calls = [
            {"name": "send_email", "args": {"to": "alice", "body": "hi"}, "id": "c1"},
            {"name": "delete_file", "args": {"path": "/reports/q3"}, "id": "c2"},
        ]
        model = Scripted(responses=[AIMessage(content="", tool_calls=calls), AIMessage(content="All done.")])
        review = HumanInTheLoopMiddleware(
            interrupt_on={"send_email": True, "delete_file": {"allowed_decisions": ["approve", "reject"]}},
            interrupt_mode=mode,
        )
        return create_agent(model, tools=[send_email, delete_file], middleware=[review], checkpointer=InMemorySaver())

    async def test_batched_an_edit_and_a_rejection_in_one_answer(self):
        ran.clear()
        run = nlg.start(self.agent("batched"), {"messages": [("user", "go")]}, display=False)
        pause = await only_pause(run)
        assert [c.name for c in pause.tool_calls] == ["send_email", "delete_file"]
        assert pause.tool_calls[1].decisions == ("approve", "reject")
        run.answer(
            [{"type": "edit", "arguments": {"to": "bob", "body": "hello"}}, {"type": "reject", "message": "keep it"}]
        )
        values = await ended(run)
        assert ran == [("send_email", {"to": "bob", "body": "hello"})]  # edited; delete_file never ran
        assert tool_replies(values)["delete_file"].endswith("keep it")
        assert values["messages"][-1].content == "All done."

    async def test_per_call_answered_in_reverse_order(self):
        ran.clear()
        run = nlg.start(self.agent("per_call"), {"messages": [("user", "go")]}, display=False)
        while len(run.pauses) < 2:
            assert await run.next_pause(timeout=10) is not None
        email, drop = sorted(run.pauses, key=lambda p: p.tool_calls[0].name != "send_email")
        with pytest.raises(ResumeError, match="to: must be text"):
            run.answer({"type": "edit", "arguments": {"to": 3, "body": "x"}}, pause=email.id)
        run.answer({"type": "reject", "message": "keep it"}, pause=drop.id)
        run.answer("approve", pause=email.id)
        values = await ended(run)
        assert ran == [("send_email", {"to": "alice", "body": "hi"})]
        assert values["messages"][-1].content == "All done."
