"""Tool calls a person approves, edits, rejects or answers before they run: with the scripted
model and with the real ``openai`` client against the local server, live and across a process
exit, on the main line and in parallel branches."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import pytest
from openai_server import Reply as ServerReply

from nbgraph import END, START, Graph, MessagesState, OpenAIModel, Resume, ResumeError, SQLiteCheckpointer
from nbgraph.llm import Reply, ScriptedModel, ToolMessage, llm_node, tool

PROGRAMS = Path(__file__).parent / "programs"


class Desk:
    """Tools that note every call that runs."""

    def __init__(self) -> None:
        self.ran: list[tuple] = []

        def lookup(order: str) -> str:
            """Look an order up."""
            self.ran.append(("lookup", order))
            return f"order {order}: paid 200 EUR"

        @tool(approval=lambda args: args.amount > 100)
        def refund(order: str, amount: float) -> str:
            """Refund part or all of an order."""
            self.ran.append(("refund", order, amount))
            return f"refunded {amount:g} EUR on {order}"

        @tool(approval=True)
        def send_email(to: str, body: str) -> str:
            """Email a customer."""
            self.ran.append(("send_email", to, body))
            return "sent"

        self.tools = [lookup, refund, send_email]


THREE_CALLS = [
    ("lookup", {"order": "A1"}),
    ("refund", {"order": "A1", "amount": 200}),
    ("send_email", {"to": "ada@example.com", "body": "Refunded."}),
]


def agent_graph(model, tools, **node_options) -> Graph:
    g = Graph("desk", state=MessagesState)
    g.add_node("agent", llm_node("You help customers.", model=model, tools=tools, **node_options))
    g.add_edge(START, "agent")
    g.add_edge("agent", END)
    return g


def ask(text: str = "Refund order A1") -> dict:
    return {"messages": [{"role": "user", "content": text}]}


async def open_pauses(run, count: int):
    while len(run.pauses) < count:
        if await run.next_pause(timeout=10) is None:
            result = await run
            raise AssertionError(f"the run ended {result.outcome} before {count} pauses opened: {result.reason}")
    return run.pauses


def tool_results(state) -> dict[str, str]:
    return {m.name: m.content for m in state.messages if isinstance(m, ToolMessage)}


class TestLiveDecisions:
    async def test_two_of_three_calls_wait_and_are_answered_in_reverse_order(self):
        desk = Desk()
        model = ScriptedModel([Reply(tool_calls=THREE_CALLS), "All done."])
        run = agent_graph(model, desk.tools).start(ask(), display=False)
        refund, email = await open_pauses(run, 2)
        assert (refund.kind, refund.tool_calls[0].name, email.tool_calls[0].name) == ("tool", "refund", "send_email")
        assert refund.tool_calls[0].arguments == {"order": "A1", "amount": 200}
        assert refund.tool_calls[0].description == "Refund part or all of an order."
        assert refund.tool_calls[0].parameters["required"] == ["order", "amount"]
        assert desk.ran == []  # nothing of the reply runs until each call is decided

        run.answer({"type": "reject", "message": "No emails: the customer asked for none."}, pause=email.id)
        assert desk.ran == [] and run.pauses == (refund,)
        run.answer({"type": "edit", "arguments": {"order": "A1", "amount": 150}}, pause=refund.id)
        result = await run

        assert result.outcome == "done", result.reason
        assert desk.ran == [("lookup", "A1"), ("refund", "A1", 150.0)]
        results = tool_results(result.state)
        assert results["refund"] == "refunded 150 EUR on A1"
        assert results["send_email"] == "No emails: the customer asked for none."
        # The model's next request reads the rejection as the email's result, and the call that ran.
        sent = model.calls[1].messages
        assert any(m.role == "tool" and m.content == "No emails: the customer asked for none." for m in sent)
        asked = next(m for m in sent if m.role == "assistant")
        assert [c.arguments for c in asked.tool_calls if c.name == "refund"] == [{"order": "A1", "amount": 150}]

    async def test_a_person_can_answer_in_the_tools_place(self):
        desk = Desk()
        model = ScriptedModel([Reply(tool_calls=[THREE_CALLS[2]]), "ok"])
        run = agent_graph(model, desk.tools).start(ask(), display=False)
        (email,) = await open_pauses(run, 1)
        run.answer({"type": "respond", "message": "I phoned her instead."}, pause=email.id)
        result = await run
        assert desk.ran == [] and tool_results(result.state)["send_email"] == "I phoned her instead."

    async def test_an_invalid_edit_is_refused_naming_its_field_and_the_call_still_waits(self):
        desk = Desk()
        model = ScriptedModel([Reply(tool_calls=[THREE_CALLS[1]]), "ok"])
        run = agent_graph(model, desk.tools).start(ask(), display=False)
        (refund,) = await open_pauses(run, 1)
        with pytest.raises(ResumeError, match=r"amount: must be a number, not 'lots'"):
            run.answer({"type": "edit", "arguments": {"order": "A1", "amount": "lots"}}, pause=refund.id)
        with pytest.raises(ResumeError, match=r"order: is required"):
            run.answer({"type": "edit", "arguments": {"amount": 5}}, pause=refund.id)
        with pytest.raises(ResumeError, match=r"note: is not a field here"):
            run.answer({"type": "edit", "arguments": {"order": "A1", "amount": 5, "note": "x"}}, pause=refund.id)
        assert run.pauses == (refund,) and desk.ran == []
        run.answer("approve", pause=refund.id)
        assert (await run).outcome == "done" and desk.ran == [("refund", "A1", 200.0)]

    async def test_a_predicate_policy_lets_small_calls_through(self):
        desk = Desk()
        small = [("refund", {"order": "A1", "amount": 40})]
        result = await agent_graph(ScriptedModel([Reply(tool_calls=small), "ok"]), desk.tools).ainvoke(ask())
        assert result.outcome == "done" and desk.ran == [("refund", "A1", 40.0)]
        assert not any(e.type == "interrupt" for step in result.history for e in step.events)

    async def test_the_nodes_policy_by_tool_name_overrides_the_tools_own(self):
        desk = Desk()
        model = ScriptedModel([Reply(tool_calls=THREE_CALLS), "ok"])
        graph = agent_graph(model, desk.tools, approval={"send_email": False, "lookup": True})
        run = graph.start(ask(), display=False)
        lookup, refund = await open_pauses(run, 2)
        assert [p.tool_calls[0].name for p in (lookup, refund)] == ["lookup", "refund"]
        run.answer({lookup.id: "approve", refund.id: "reject"})
        assert (await run).outcome == "done"
        assert [call[0] for call in desk.ran] == ["lookup", "send_email"]

    def test_a_policy_for_a_tool_the_node_lacks_is_refused(self):
        with pytest.raises(ValueError, match=r"approval= names 'delete_all', which the node does not have"):
            llm_node("x", tools=Desk().tools, approval={"delete_all": True})

    async def test_a_policy_that_raises_fails_the_run_naming_the_tool(self):
        @tool(approval=lambda args: args.amount.bogus)
        def refund(order: str, amount: float) -> str:
            return "no"

        model = ScriptedModel([Reply(tool_calls=[THREE_CALLS[1]]), "ok"])
        result = await agent_graph(model, [refund]).ainvoke(ask())
        assert result.outcome == "failed"
        assert "the approval policy of tool 'refund' in node 'agent' raised AttributeError" in result.reason


class TestDurableDecisions:
    def test_decisions_across_process_exits_never_run_a_call_twice(self, tmp_path):
        db, ledger = str(tmp_path / "runs.db"), tmp_path / "ledger.jsonl"

        def desk(*args: str) -> list[str]:
            done = subprocess.run(
                [sys.executable, str(PROGRAMS / "refund_desk.py"), db, str(ledger), *args],
                capture_output=True,
                text=True,
                timeout=120,
            )
            assert done.returncode == 0, done.stderr
            return done.stdout.splitlines()

        def ran() -> list[list]:
            return [json.loads(line) for line in ledger.read_text().splitlines()]

        first = desk("start", "t1")
        assert first[0] == "interrupted" and [line.split()[1] for line in first[1:]] == ["refund", "send_email"]
        refund_id, email_id = (line.split()[0] for line in first[1:])
        assert ran() == [["lookup", "A1"]]  # the first round ran; the second waits whole

        second = desk("answer", "t1", email_id, json.dumps({"type": "reject", "message": "No email."}))
        assert second == ["interrupted", f"{refund_id} refund"]  # the same pause, with its id
        assert ran() == [["lookup", "A1"]]

        edit = {"type": "edit", "arguments": {"order": "A1", "amount": 120}}
        third = desk("answer", "t1", refund_id, json.dumps(edit))
        assert third[0] == "done"
        assert third[1] == "Done: order B2: paid 200 EUR | refunded 120 EUR on A1 | No email."
        assert ran() == [["lookup", "A1"], ["lookup", "B2"], ["refund", "A1", 120]]

    def test_an_invalid_edit_is_refused_on_resume_and_loses_nothing(self, tmp_path):
        store = SQLiteCheckpointer(tmp_path / "runs.db")
        desk = Desk()
        paused = agent_graph(ScriptedModel([Reply(tool_calls=[THREE_CALLS[1]])]), desk.tools).invoke(
            ask(), checkpointer=store
        )
        (refund,) = paused.pauses
        again = agent_graph(ScriptedModel(["ok"]), desk.tools)
        with pytest.raises(ResumeError, match=r"the edited arguments of refund do not fit its schema: amount: must"):
            again.invoke(
                Resume(paused.thread, {"type": "edit", "arguments": {"order": "A1", "amount": None}}, pause=refund.id),
                checkpointer=store,
            )
        result = again.invoke(Resume(paused.thread, "approve", pause=refund.id), checkpointer=store)
        assert result.outcome == "done" and desk.ran == [("refund", "A1", 200.0)]
        with pytest.raises(ResumeError, match="answered already"):
            again.invoke(Resume(paused.thread, "approve", pause=refund.id), checkpointer=store)

    def test_parallel_branches_each_wait_for_their_calls_answered_in_any_order(self, tmp_path):
        store = SQLiteCheckpointer(tmp_path / "runs.db")
        desk = Desk()

        def graph() -> Graph:
            g = Graph("two_desks", state=MessagesState)
            for name, amount in (("north", 300), ("south", 400)):
                model = ScriptedModel(
                    lambda messages, amount=amount: (
                        Reply(tool_calls=[("refund", {"order": "A1", "amount": amount})])
                        if not any(m.role == "tool" for m in messages)
                        else "ok"
                    )
                )
                g.add_node(name, llm_node("x", model=model, tools=desk.tools))
                g.add_edge(name, END)
            g.add_edge(START, ["north", "south"])
            return g

        paused = graph().invoke(ask(), checkpointer=store)
        assert paused.outcome == "interrupted" and {p.branch for p in paused.pauses} == {"north", "south"}
        north, south = sorted(paused.pauses, key=lambda p: p.branch)
        half = graph().invoke(Resume(paused.thread, "approve", pause=south.id), checkpointer=store)
        # Each branch's turn waits for its own calls only: south's decided call ran, north's waits.
        assert [p.id for p in half.pauses] == [north.id] and desk.ran == [("refund", "A1", 400.0)]
        done = graph().invoke(
            Resume(paused.thread, {"type": "edit", "arguments": {"order": "A1", "amount": 30}}, pause=north.id),
            checkpointer=store,
        )
        assert done.outcome == "done", done.reason
        assert sorted(desk.ran) == [("refund", "A1", 30.0), ("refund", "A1", 400.0)]


class TestRealClient:
    async def test_three_calls_two_waiting_through_the_openai_client(self, openai_server):
        desk = Desk()
        openai_server.script(ServerReply(tool_calls=THREE_CALLS), ServerReply(text="Handled."))
        async with OpenAIModel(
            "gpt-4o-mini", base_url=openai_server.base_url, api_key="sk-test", max_retries=0
        ) as model:
            run = agent_graph(model, desk.tools).start(ask(), display=False)
            refund, email = await open_pauses(run, 2)
            run.answer({"type": "reject", "message": "Not now."}, pause=email.id)
            run.answer({"type": "edit", "arguments": {"order": "A1", "amount": 99}}, pause=refund.id)
            result = await run
        assert result.outcome == "done" and result.state.messages[-1].content == "Handled."
        assert desk.ran == [("lookup", "A1"), ("refund", "A1", 99.0)]
        second = openai_server.requests[1]["messages"]
        tools = {m["tool_call_id"]: m["content"] for m in second if m["role"] == "tool"}
        assert "Not now." in tools.values() and "refunded 99 EUR on A1" in tools.values()
        called = next(m for m in second if m["role"] == "assistant")["tool_calls"]
        assert [json.loads(c["function"]["arguments"]) for c in called if c["function"]["name"] == "refund"] == [
            {"order": "A1", "amount": 99}
        ]


async def test_stop_waiting_ends_the_run_at_every_call_still_open():
    desk = Desk()
    run = agent_graph(ScriptedModel([Reply(tool_calls=THREE_CALLS), "ok"]), desk.tools).start(ask(), display=False)
    await open_pauses(run, 2)
    run.viewed.stop_waiting("the notebook closed")
    result = await asyncio.wait_for(run, 10)
    assert result.outcome == "interrupted" and [p.tool_calls[0].name for p in result.pauses] == ["refund", "send_email"]
    assert desk.ran == []


async def test_a_decision_given_twice_is_refused_with_what_was_decided():
    desk = Desk()
    run = agent_graph(ScriptedModel([Reply(tool_calls=[THREE_CALLS[2]]), "ok"]), desk.tools).start(ask(), display=False)
    (email,) = await open_pauses(run, 1)
    run.answer({"type": "reject", "message": "no"}, pause=email.id)
    result = await run
    with pytest.raises(ResumeError, match=r"answered already, decided: reject, at node 'agent'"):
        agent_graph(ScriptedModel([]), desk.tools).invoke(Resume(result, "approve", pause=email.id))


class TestWireNames:
    async def test_a_dotted_tool_name_reaches_the_model_as_it_accepts_and_comes_back(self, openai_server):
        ran = []

        def status(repo: str) -> str:
            """The repository's status."""
            ran.append(repo)
            return "clean"

        dotted = tool(status, name="git.status", approval=True)
        openai_server.script(ServerReply(tool_calls=[("git_status", {"repo": "."})]), ServerReply(text="Clean."))
        async with OpenAIModel(
            "gpt-4o-mini", base_url=openai_server.base_url, api_key="sk-test", max_retries=0
        ) as model:
            run = agent_graph(model, [dotted]).start(ask(), display=False)
            (pause,) = await open_pauses(run, 1)
            assert pause.tool_calls[0].name == "git.status"  # the person sees the tool's own name
            run.answer("approve")
            result = await run
        assert result.outcome == "done", result.reason
        assert ran == ["."] and result.state.messages[-1].content == "Clean."
        offered = openai_server.requests[0]["tools"]
        assert [t["function"]["name"] for t in offered] == ["git_status"]

    async def test_the_local_server_refuses_a_bad_tool_name_as_openai_does(self, openai_server):
        import openai

        async with openai.AsyncOpenAI(base_url=openai_server.base_url, api_key="sk-test", max_retries=0) as client:
            with pytest.raises(openai.BadRequestError, match="does not match pattern"):
                await client.chat.completions.create(
                    model="gpt-4o-mini",
                    messages=[{"role": "user", "content": "hi"}],
                    tools=[{"type": "function", "function": {"name": "git.status", "parameters": {"type": "object"}}}],
                )

    def test_two_tools_the_model_would_call_the_same_are_refused_by_name(self):
        def a(x: str) -> str:
            return x

        with pytest.raises(ValueError, match=r"tools 'git\.status' and 'git_status' would both be called 'git_status'"):
            llm_node("x", tools=[tool(a, name="git.status"), tool(a, name="git_status")])
