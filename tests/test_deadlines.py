"""Pauses that wait with a deadline: declared on an approval, a tool's approval and a question
for input; answered by the deadline in a live run (a timer in its loop) and in a durable one
when it is next resumed or swept, here and in another process; always recorded as decided by
the deadline, which denies or rejects unless told otherwise."""

from __future__ import annotations

import asyncio
import json
import math
import subprocess
import sys
import time
from pathlib import Path

import pytest

from nbgraph import (
    END,
    START,
    Deadline,
    Graph,
    MessagesState,
    Resume,
    ResumeError,
    SQLiteCheckpointer,
    sweep_deadlines,
)
from nbgraph.answering import identity
from nbgraph.decision import decided_in
from nbgraph.dsl import GraphSyntaxError, parse
from nbgraph.engine import Budget
from nbgraph.llm import Reply, ScriptedModel, llm_node, tool

REPO = Path(__file__).resolve().parents[1]
PROGRAMS = Path(__file__).parent / "programs"
SHORT = 0.05
"""A deadline that passes while a live run waits (the run's own timer answers it)."""
LONG = 600.0
"""A deadline no test reaches."""


def wait_past(*deadlines: float | None) -> None:
    """Wait for the wall clock to pass ``deadlines`` (what a deadline is measured by)."""
    latest = max(d for d in deadlines if d is not None)
    while (left := latest - time.time()) >= 0:
        time.sleep(left + 0.001)


def gated(deadline, approval=True, ran=None, then=END) -> Graph:
    """draft -> publish (approved, with ``deadline``) -> ``then``."""

    def publish(state):
        if ran is not None:
            ran.append("publish")
        return {"published": True}

    g = Graph("post")
    g.add_node("draft", lambda s: {"text": "hello"})
    g.add_node("publish", publish, approval=approval, deadline=deadline)
    g.add_edge(START, "draft")
    g.add_edge("draft", "publish")
    if then is not None:
        g.add_edge("publish", then)
    return g


def asking(deadline) -> Graph:
    async def ask(state, ctx):
        return {"city": await ctx.request_input("Which city?", deadline=deadline)}

    g = Graph("trip")
    g.add_node("ask", ask)
    g.add_edge(START, "ask")
    g.add_edge("ask", END)
    return g


def emailing(deadline, ran: list) -> Graph:
    @tool(approval=True, deadline=deadline)
    def send_email(to: str) -> str:
        """Email someone."""
        ran.append(to)
        return "sent"

    def reply(messages):
        results = [m.content for m in messages if m.role == "tool"]
        return "Done: " + results[0] if results else Reply(tool_calls=[("send_email", {"to": "ada@example.com"})])

    g = Graph("mail", state=MessagesState)
    g.add_node("agent", llm_node("You send email.", model=ScriptedModel(reply), tools=[send_email]))
    g.add_edge(START, "agent")
    g.add_edge("agent", END)
    return g


async def ended(run, seconds: float = 30.0):
    """The run's result: a failure, not a hang, if nothing answers its pause."""

    async def result():
        return await run

    return await asyncio.wait_for(result(), seconds)


HELLO = {"messages": [{"role": "user", "content": "hi"}]}


# -- declaring one ---------------------------------------------------------------------


class TestDeclaring:
    @pytest.mark.parametrize("seconds", [0, -1, math.nan, math.inf, True, "30"])
    def test_a_deadline_waits_some_seconds(self, seconds):
        with pytest.raises(ValueError, match="a Deadline waits"):
            Deadline(seconds)

    def test_a_number_is_a_deadline_that_denies_and_the_plan_holds_it(self):
        plan = gated(30).compile()
        assert plan.nodes["publish"].deadline == Deadline(30)
        assert gated(Deadline(30, then="approve")).compile().nodes["publish"].deadline == Deadline(30, True)

    def test_a_deadline_needs_an_approval_to_bound(self):
        with pytest.raises(ValueError, match="node 'publish': deadline= bounds how long its approval waits"):
            gated(30, approval=False)

    @pytest.mark.parametrize("then", ["maybe", {"approved": True}, 1])
    def test_an_approvals_deadline_denies_or_approves_and_nothing_else(self, then):
        with pytest.raises(ValueError, match=r"node 'publish': when its deadline passes an approval is denied"):
            gated(Deadline(30, then=then))

    def test_the_graph_language_declares_one(self):
        def publish(state):
            return {}

        g = parse("START -> publish [approval, deadline=5m] -> END", {"publish": publish}, "g")
        assert g.compile().nodes["publish"].deadline == Deadline(300)
        g = parse("START -> publish [approval=before, deadline=1.5s:approve] -> END", {"publish": publish}, "g")
        assert g.compile().nodes["publish"].deadline == Deadline(1.5, True)
        with pytest.raises(GraphSyntaxError, match="deadline is a time such as 30s") as caught:
            parse("START -> publish [approval, deadline=soon] -> END", {"publish": publish}, "g")
        assert (caught.value.line, caught.value.column) == (1, 29)
        with pytest.raises(GraphSyntaxError, match="bounds how long its approval waits"):
            parse("START -> publish [deadline=30s] -> END", {"publish": publish}, "g")

    def test_a_tools_deadline_needs_its_approval_and_a_decision_a_deadline_can_make(self):
        def send(to: str) -> str:
            return "sent"

        with pytest.raises(ValueError, match="tool 'send': deadline= bounds how long a call waits"):
            tool(send, deadline=30)
        with pytest.raises(ValueError, match="tool 'send'.*a deadline cannot edit a call"):
            tool(send, approval=True, deadline=Deadline(30, then={"type": "edit", "arguments": {"to": "x"}}))
        with pytest.raises(ValueError, match="tool 'send'.*a response needs its 'message'"):
            tool(send, approval=True, deadline=Deadline(30, then={"type": "respond"}))
        with pytest.raises(ValueError, match="tool 'send': when its deadline passes a tool call is rejected"):
            tool(send, approval=True, deadline=Deadline(30, then="later"))
        assert tool(send, approval=True, deadline=Deadline(30, then=True)).deadline == Deadline(30, "approve")

    def test_an_llm_nodes_deadlines_name_its_tools_that_wait(self):
        def send(to: str) -> str:
            return "sent"

        def look(order: str) -> str:
            return "paid"

        with pytest.raises(ValueError, match="deadline= names 'mail', which the node does not have"):
            llm_node("x", tools=[send], deadline={"mail": 30})
        with pytest.raises(ValueError, match="deadline= for tool 'look' .* never wait for one"):
            llm_node("x", tools=[send, look], approval={"send": True}, deadline={"look": 30})

    async def test_a_question_with_a_deadline_names_the_answer_it_takes(self):
        result = await asking(Deadline(30)).ainvoke({})
        assert result.outcome == "failed"
        assert "request_input() in node 'ask': a question with a deadline needs the answer it takes" in result.reason
        with pytest.raises(ValueError, match="the deadline's answer 'Rome' is not one of the options"):
            from nbgraph.deadlines import input_deadline

            input_deadline(Deadline(30, then="Rome"), "request_input() in node 'ask'", ("Paris", "Oslo"))


# -- live ------------------------------------------------------------------------------


class TestLive:
    async def test_an_approval_nobody_answers_is_denied_by_its_deadline_and_recorded(self):
        ran: list[str] = []
        result = await ended(gated(SHORT, ran=ran).start({}, display=False))
        assert result.outcome == "denied" and "published" not in result.state
        assert "denied by its deadline (no answer by its deadline" in result.reason
        [decision] = result.decisions
        assert (decision.by, decision.via, decision.verdict) == ("deadline", "deadline", "denied")
        assert decision.reason.startswith("no answer by its deadline, ")
        assert ran == ["publish"]  # (it ran: the approval is after it; its update never reached the state)

    async def test_an_approval_before_runs_only_when_its_deadline_says_approve(self):
        ran: list[str] = []
        result = await ended(
            gated(Deadline(SHORT, then="approve"), approval="before", ran=ran).start({}, display=False)
        )
        assert result.outcome == "done" and ran == ["publish"]
        assert [(d.by, d.verdict) for d in result.decisions] == [("deadline", "approved")]
        denied = await ended(gated(SHORT, approval="before", ran=ran).start({}, display=False))
        assert denied.outcome == "denied" and ran == ["publish"]
        assert "approval before 'publish' was denied by its deadline" in denied.reason

    async def test_an_answer_in_time_wins_and_cancels_the_timer(self):
        run = gated(LONG).start({}, display=False)
        pause = await run.next_pause(timeout=5)
        assert LONG - 5 < pause.deadline - time.time() <= LONG and pause.on_timeout is None
        run.approve(reason="fine")
        result = await ended(run)
        assert result.outcome == "done"
        assert [(d.via, d.verdict, d.reason) for d in result.decisions] == [("code", "approved", "fine")]
        timers = [h for h in asyncio.get_running_loop()._scheduled if not h.cancelled()]  # noqa: SLF001
        assert not [h for h in timers if "time_out" in repr(h)]

    async def test_an_answer_after_the_deadline_is_refused_saying_so(self):
        run = gated(SHORT).start({}, display=False)
        pause = await run.next_pause(timeout=5)
        result = await ended(run)
        with pytest.raises(ResumeError, match="answered already by its deadline, denied, at node 'publish'"):
            run.answer(True, pause=pause.id)
        assert [d.verdict for d in result.decisions] == ["denied"]

    async def test_a_question_takes_its_default(self):
        result = await ended(asking(Deadline(SHORT, then="Paris")).start({}, display=False))
        assert result.state["city"] == "Paris"
        [decision] = result.decisions
        assert (decision.by, decision.kind, decision.answer) == ("deadline", "input", "Paris")

    async def test_a_tool_call_nobody_decides_is_rejected_and_the_model_told(self):
        ran: list[str] = []
        result = await ended(emailing(SHORT, ran).start(HELLO, display=False))
        assert ran == [] and result.outcome == "done"
        assert result.state.messages[-1].content == (
            "Done: Nobody decided on this call of send_email in time; it did not run."
        )
        assert [(d.by, d.kind, d.verdict) for d in result.decisions] == [("deadline", "tool", "rejected")]

    async def test_a_tool_call_runs_when_its_deadline_says_approve(self):
        ran: list[str] = []
        result = await ended(emailing(Deadline(SHORT, then="approve"), ran).start(HELLO, display=False))
        assert ran == ["ada@example.com"] and result.state.messages[-1].content == "Done: sent"
        assert [(d.by, d.verdict) for d in result.decisions] == [("deadline", "approved")]

    async def test_the_nodes_deadline_for_a_tool_overrides_the_tools_own(self):
        ran: list[str] = []

        @tool(approval=True, deadline=LONG)
        def send_email(to: str) -> str:
            """Email someone."""
            ran.append(to)
            return "sent"

        model = ScriptedModel([Reply(tool_calls=[("send_email", {"to": "ada@example.com"})]), "Done"])
        g = Graph("mail", state=MessagesState)
        responded = Deadline(SHORT, then={"type": "respond", "message": "queued for tomorrow"})
        g.add_node("agent", llm_node("x", model=model, tools=[send_email], deadline={"send_email": responded}))
        g.add_edge(START, "agent")
        g.add_edge("agent", END)
        result = await ended(g.start(HELLO, display=False))
        assert ran == [] and [(d.by, d.verdict) for d in result.decisions] == [("deadline", "responded")]
        assert [m.content for m in result.state.messages if m.role == "tool"] == ["queued for tomorrow"]

    async def test_waiting_for_the_deadline_never_counts_against_the_time_budget(self):
        # The run itself takes far less than its half second; the wait takes longer than that,
        # and the step after it checks the budget.
        g = gated(Deadline(0.8, then="approve"), then=None)
        g.add_node("notify", lambda s: {"notified": True})
        g.add_edge("publish", "notify")
        g.add_edge("notify", END)
        result = await ended(g.start({}, budget=Budget(seconds=0.5), display=False))
        assert result.outcome == "done" and result.state["notified"] is True
        assert [d.by for d in result.decisions] == ["deadline"]


# -- durable ---------------------------------------------------------------------------


class TestDurable:
    def test_the_checkpoint_keeps_the_deadline_and_a_resume_in_time_asks_as_before(self, tmp_path):
        store = SQLiteCheckpointer(tmp_path / "runs.db")
        g = gated(LONG)
        paused = g.invoke({}, thread="t", checkpointer=store)
        [pause] = store.get("t").pauses
        assert paused.outcome == "interrupted" and pause.deadline == paused.pauses[0].deadline
        with pytest.raises(ResumeError, match=r"pass answer= \(or resume without one once its deadline has passed"):
            g.invoke(Resume("t"), checkpointer=store)
        result = g.invoke(Resume(paused, True), checkpointer=store)
        assert result.outcome == "done" and [d.via for d in result.decisions] == ["resume"]

    def test_a_resume_after_the_deadline_applies_it_and_refuses_a_late_answer(self, tmp_path):
        store = SQLiteCheckpointer(tmp_path / "runs.db")
        g = gated(0.2)
        paused = g.invoke({}, thread="t", checkpointer=store)
        wait_past(paused.pauses[0].deadline)
        with pytest.raises(ResumeError, match=r"is past its deadline .*: its deadline decides it, denied. Nothing was"):
            g.invoke(Resume(paused, True), checkpointer=store)
        assert store.get("t").status == "interrupted"  # nothing was answered
        result = g.invoke(Resume("t"), checkpointer=store)
        assert result.outcome == "denied" and "published" not in result.state
        assert [(d.by, d.via, d.verdict) for d in decided_in(store.history("t"))] == [
            ("deadline", "deadline", "denied")
        ]

    def test_a_question_past_its_deadline_takes_its_default_on_resume(self, tmp_path):
        store = SQLiteCheckpointer(tmp_path / "runs.db")
        g = asking(Deadline(0.2, then="Paris"))
        paused = g.invoke({}, thread="t", checkpointer=store)
        wait_past(paused.pauses[0].deadline)
        result = g.invoke(Resume("t"), checkpointer=store)
        assert result.state["city"] == "Paris"
        assert [(d.by, d.kind, d.answer) for d in result.decisions] == [("deadline", "input", "Paris")]

    def test_a_question_asked_again_keeps_its_id_and_deadline(self, tmp_path):
        # Two branches ask; one is answered, the other, still in time, asks again as it was.
        async def ask(state, ctx):
            return {"a": await ctx.request_input("A?", deadline=Deadline(LONG, then="no"))}

        async def other(state, ctx):
            return {"b": await ctx.request_input("B?")}

        g = Graph("two")
        g.add_node("fork", lambda s: {})
        g.add_node("ask", ask)
        g.add_node("other", other)
        g.add_edge(START, "fork")
        g.add_edge("fork", ["ask", "other"])
        g.add_edge("ask", END)
        g.add_edge("other", END)
        store = SQLiteCheckpointer(tmp_path / "runs.db")
        paused = g.invoke({}, thread="t", checkpointer=store)
        asked, answered = sorted(paused.pauses, key=lambda p: p.node)
        again = g.invoke(Resume("t", {answered.id: "yes"}), checkpointer=store)
        assert [(p.id, p.deadline, p.shown) for p in again.pauses] == [(asked.id, asked.deadline, asked.shown)]

    def test_a_tool_call_asked_again_keeps_its_deadline_and_the_one_past_it_is_rejected(self, tmp_path):
        ran: list[tuple] = []

        @tool(approval=True, deadline=0.2)
        def refund(order: str) -> str:
            """Refund an order."""
            ran.append(("refund", order))
            return "refunded"

        @tool(approval=True, deadline=LONG)
        def send_email(to: str) -> str:
            """Email someone."""
            ran.append(("send_email", to))
            return "sent"

        def reply(messages):
            results = [m.content for m in messages if m.role == "tool"]
            if results:
                return "Done: " + " | ".join(results)
            return Reply(tool_calls=[("refund", {"order": "A1"}), ("send_email", {"to": "ada@example.com"})])

        g = Graph("desk", state=MessagesState)
        g.add_node("agent", llm_node("x", model=ScriptedModel(reply), tools=[refund, send_email]))
        g.add_edge(START, "agent")
        g.add_edge("agent", END)
        store = SQLiteCheckpointer(tmp_path / "runs.db")
        paused = g.invoke(HELLO, thread="t", checkpointer=store)
        refund_pause, email_pause = paused.pauses
        wait_past(refund_pause.deadline)
        heard: list = []
        again = g.invoke(Resume("t"), checkpointer=store, on_event=heard.append)  # the email asks again
        assert [(p.id, p.deadline, p.shown) for p in again.pauses] == [
            (email_pause.id, email_pause.deadline, email_pause.shown)
        ]
        answers = [event.decision for event in heard if event.type == "answer"]
        assert [(d.pause_id, d.by, d.verdict) for d in answers] == [(refund_pause.id, "deadline", "rejected")]
        done = g.invoke(Resume(again, "approve"), checkpointer=store)
        assert ran == [("send_email", "ada@example.com")]
        assert done.state.messages[-1].content == (
            "Done: Nobody decided on this call of refund in time; it did not run. | sent"
        )
        assert [(d.by, d.verdict) for d in done.decisions][-1:] == [(identity(), "approved")]

    def test_a_gate_asked_again_keeps_its_deadline(self, tmp_path):
        g = Graph("gates")
        g.add_node("fork", lambda s: {})
        g.add_node("a", lambda s: {"a": 1}, approval="before", deadline=LONG)
        g.add_node("b", lambda s: {"b": 1}, approval="before")
        g.add_edge(START, "fork")
        g.add_edge("fork", ["a", "b"])
        g.add_edge("a", END)
        g.add_edge("b", END)
        store = SQLiteCheckpointer(tmp_path / "runs.db")
        paused = g.invoke({}, thread="t", checkpointer=store)
        a, b = sorted(paused.pauses, key=lambda p: p.node)
        again = g.invoke(Resume("t", {b.id: True}), checkpointer=store)
        assert [(p.id, p.deadline, p.shown) for p in again.pauses] == [(a.id, a.deadline, a.shown)]


class TestSweep:
    def test_a_sweep_resumes_only_this_graphs_threads_past_a_deadline(self, tmp_path):
        store = SQLiteCheckpointer(tmp_path / "runs.db")
        soon, later = gated(0.2), gated(LONG)
        soon.invoke({}, thread="past", checkpointer=store)
        later.invoke({}, thread="in-time", checkpointer=store)
        other = asking(Deadline(0.2, then="Paris"))
        other.invoke({}, thread="other-graph", checkpointer=store)
        wait_past(*(store.get(t).pauses[0].deadline for t in ("past", "other-graph")))
        results = sweep_deadlines(soon, store)
        assert [(r.thread, r.outcome) for r in results] == [("past", "denied")]
        assert store.get("in-time").status == "interrupted" and store.get("other-graph").status == "interrupted"
        assert sweep_deadlines(soon, store) == []  # nothing more to do
        assert [(r.thread, r.state["city"]) for r in sweep_deadlines(other, store)] == [("other-graph", "Paris")]

    def test_a_child_exits_at_the_pause_and_a_new_one_resumes_after_the_deadline(self, tmp_path):
        db, ledger = tmp_path / "runs.db", tmp_path / "ledger.jsonl"
        ledger.touch()

        def desk(*args: str) -> list[dict]:
            done = subprocess.run(
                [sys.executable, str(PROGRAMS / "deadline_desk.py"), str(db), str(ledger), *args, "0.3"],
                capture_output=True,
                text=True,
                timeout=120,
                cwd=REPO,
            )
            assert done.returncode == 0, done.stderr
            return [json.loads(line) for line in done.stdout.splitlines()]

        [first] = desk("start", "t1")
        assert first["outcome"] == "interrupted" and [p[1] for p in first["pauses"]] == ["tool", "tool"]
        wait_past(*(p[2] for p in first["pauses"]))
        [second] = desk("resume", "t1")  # the refund is rejected, the note sent, and the reply waits
        assert second["outcome"] == "interrupted" and [p[1] for p in second["pauses"]] == ["approval"]
        assert second["decisions"] == [
            ["deadline", "deadline", "rejected", "agent"],
            ["deadline", "deadline", "approved", "agent"],
        ]
        assert [json.loads(line) for line in ledger.read_text().splitlines()] == [["notify", "ada@example.com"]]
        wait_past(second["pauses"][0][2])
        [third] = desk("sweep", "-")
        assert (third["thread"], third["outcome"]) == ("t1", "denied")
        store = SQLiteCheckpointer(db)
        assert [(d.by, d.verdict, d.path) for d in decided_in(store.history("t1"))] == [
            ("deadline", "rejected", "agent"),
            ("deadline", "approved", "agent"),
            ("deadline", "denied", "send"),
        ]
        assert desk("sweep", "-") == []


def test_the_sweep_magic_resumes_what_is_past_its_deadline(tmp_path, capsys):
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    shell.run_cell("%load_ext nbgraph", store_history=False)
    shell.user_ns["publish"] = lambda state: {}
    try:
        path = tmp_path / "runs.db"
        shell.run_cell_magic("graph", "post", "START -> publish [approval, deadline=0.2s] -> END")
        paused = shell.user_ns["post"].invoke({}, thread="t", checkpointer=SQLiteCheckpointer(path))
        wait_past(paused.pauses[0].deadline)
        capsys.readouterr()
        shell.run_line_magic("graph", f"sweep post --checkpointer sqlite:{path}")
        assert capsys.readouterr().out.startswith("t: denied (approval of 'publish' was denied by its deadline (no")
        shell.run_line_magic("graph", f"sweep post --checkpointer sqlite:{path}")
        assert capsys.readouterr().out == "no thread of post waits at a pause past its deadline\n"
    finally:
        shell.user_ns.clear()
