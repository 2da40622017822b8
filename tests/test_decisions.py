"""Decisions bound to what was shown, and recorded wherever a run is read.

The digest of a pause covers everything it shows; an answer for another digest is refused;
a call a model sends again with the same id (or with none, as some providers do) waits for
its own decision, live and across processes, over the real ``openai`` client; what the door
accepts it can store; standing approvals let one tool through and no other. Every way to
answer leaves a record of who, when, how and what: in the result, the trace, the stored
history (read back in another process), the inspector, the replay, and
``nbgraph.decisions``."""

from __future__ import annotations

import datetime
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from IPython.core.interactiveshell import InteractiveShell
from openai_server import Reply as ServerReply

import nbgraph
from nbgraph import (
    END,
    START,
    Graph,
    MessagesState,
    OpenAIModel,
    Resume,
    ResumeError,
    SQLiteCheckpointer,
    parse_ndjson,
    set_identity,
)
from nbgraph.decision import Decision, DecisionTable, decided_in, recorded
from nbgraph.llm import Reply, ScriptedModel, ToolMessage, llm_node, tool
from nbgraph.magics import GraphMagics
from nbgraph.pauses import BudgetFigures, Change, Pause, Rerun, ToolCallAsk, shown_digest
from nbgraph.replay import replay
from nbgraph.storable import answer_limit, set_answer_limit
from nbgraph.widget import GraphView

PROGRAMS = Path(__file__).parent / "programs"


@pytest.fixture(autouse=True)
def tester(monkeypatch):
    """Every answer here is given by "tester" unless a test says otherwise."""
    monkeypatch.delenv("JUPYTERHUB_USER", raising=False)
    set_identity("tester")
    yield "tester"
    set_identity(None)


class Desk:
    """Tools that wait for a person and note every call that runs."""

    def __init__(self) -> None:
        self.ran: list[tuple] = []

        @tool(approval=True)
        def send_email(to: str, body: str) -> str:
            """Email a customer."""
            self.ran.append(("send_email", to, body))
            return "sent"

        @tool(approval=True)
        def refund(order: str, amount: float) -> str:
            """Refund an order."""
            self.ran.append(("refund", order, amount))
            return f"refunded {amount:g}"

        @tool(approval=True)
        def wire(to: str, amount: float, memo: dict) -> str:
            """Wire money."""
            self.ran.append(("wire", to, amount, memo))
            return "wired"

        self.tools = [send_email, refund, wire]


def agent(model: Any, desk: Desk) -> Graph:
    g = Graph("desk", state=MessagesState)
    g.add_node("agent", llm_node("You help customers.", model=model, tools=desk.tools))
    g.add_edge(START, "agent")
    g.add_edge("agent", END)
    return g


def ask(text: str = "Help Ada") -> dict:
    return {"messages": [{"role": "user", "content": text}]}


def rounds(*calls: tuple[str, dict]) -> ScriptedModel:
    """A model that asks for one call a round, then says it is done, in any process."""
    return ScriptedModel(
        lambda messages: (
            Reply(tool_calls=[calls[done]])
            if (done := sum(1 for m in messages if m.role == "tool")) < len(calls)
            else "Done."
        )
    )


HI = ("send_email", {"to": "ada@example.com", "body": "hi"})
WIRE = ("send_email", {"to": "ada@example.com", "body": "wire 1M"})
REFUND = ("refund", {"order": "A1", "amount": 200})


async def next_pause(run) -> Pause:
    pause = await run.next_pause(timeout=10)
    if pause is None:
        result = await run
        raise AssertionError(f"the run ended {result.outcome} without pausing: {result.reason}")
    return pause


# -- the digest of what a pause shows ------------------------------------------------------------

SHOWN: dict[str, Any] = {
    "id": "0" * 32,
    "kind": "tool",
    "node": "agent",
    "step": 3,
    "path": "desk/agent",
    "branch": "north",
    "prompt": "Run send_email?",
    "question": {"q": 1},
    "options": ("yes", "no"),
    "input_kind": "text",
    "at": "after",
    "update": {"reply": "hi"},
    "changes": (Change(field="reply", before="", after="hi"),),
    "next": ("send",),
    "input": {"n": 1},
    "tool_calls": (ToolCallAsk(call_id="call_0", name="send_email", arguments={"to": "ada@example.com"}),),
    "budget": BudgetFigures(used={"turns": 1}, limits={"turns": 2}, next={"turns": 1}, over=(), suggested={"turns": 4}),
    "deadline": 1_900_000_000.0,
    "on_timeout": None,
    "deciders": ("alice",),
}

CHANGED: dict[str, Any] = {
    "kind": "approval",
    "node": "other",
    "step": 4,
    "path": "desk/other",
    "branch": "south",
    "prompt": "Run send_email now?",
    "question": {"q": 2},
    "options": ("yes", "later"),
    "input_kind": "choice",
    "at": "before",
    "update": {"reply": "hello"},
    "changes": (Change(field="reply", before="", after="hello"),),
    "next": ("archive",),
    "input": {"n": 2},
    "tool_calls": (ToolCallAsk(call_id="call_0", name="send_email", arguments={"to": "eve@example.com"}),),
    "budget": BudgetFigures(used={"turns": 2}, limits={"turns": 2}, next={"turns": 1}, over=(), suggested={"turns": 4}),
    "deadline": 1_900_000_060.0,
    "on_timeout": {"type": "approve"},
    "deciders": ("bob",),
}


class TestTheDigest:
    def test_every_field_a_pause_shows_is_tested_here(self):
        from nbgraph.pauses import _SHOWN_FIELDS

        assert set(CHANGED) == set(_SHOWN_FIELDS)

    @pytest.mark.parametrize("field", sorted(CHANGED))
    def test_it_changes_when_a_shown_field_changes(self, field):
        before = Pause(**SHOWN)
        after = Pause(**{**SHOWN, field: CHANGED[field]})
        assert after.shown != before.shown
        assert shown_digest(after) == after.shown and shown_digest(before) == before.shown

    @pytest.mark.parametrize(
        "call",
        [
            {"name": "send_sms"},
            {"arguments": {"to": "ada@example.com", "cc": "eve@example.com"}},
            {"decisions": ("approve", "reject")},
        ],
        ids=["name", "arguments", "decisions"],
    )
    def test_it_changes_with_the_tool_calls_name_arguments_and_choices(self, call):
        asked = SHOWN["tool_calls"][0]
        other = Pause(**{**SHOWN, "tool_calls": (asked.model_copy(update=call),)})
        assert other.shown != Pause(**SHOWN).shown

    def test_it_is_stable_otherwise(self):
        # Built again, or with another id, slot, provider call id or note on what a resume redoes:
        # the same thing is shown, so the same digest.
        asked = SHOWN["tool_calls"][0]
        same = [
            Pause(**SHOWN),
            Pause(**{**SHOWN, "id": "1" * 32}),
            Pause(**{**SHOWN, "slot": "agent#1.tool.call_0"}),
            Pause(**{**SHOWN, "reruns": Rerun(path="agent", model_calls=2)}),
            Pause(**{**SHOWN, "tool_calls": (asked.model_copy(update={"call_id": "call_7"}),)}),
            Pause(**SHOWN).model_copy(update={"id": "2" * 32}),
        ]
        assert len({pause.shown for pause in same}) == 1
        assert len(same[0].shown) == 32 and int(same[0].shown, 16) >= 0


class TestAnOldDigestIsRefused:
    async def test_live_an_answer_for_what_an_earlier_pause_showed_lands_nowhere(self):
        desk = Desk()
        run = agent(rounds(HI, WIRE), desk).start(ask(), display=False)
        first = await next_pause(run)
        run.answer("approve", pause=first.id, shown=first.shown)
        second = await next_pause(run)
        assert second.tool_calls[0].arguments["body"] == "wire 1M"
        with pytest.raises(ResumeError, match=r"shows something else than what was decided on .*Nothing was answered"):
            run.answer("approve", pause=second.id, shown=first.shown)  # approved on what the first one showed
        assert run.pauses == (second,) and desk.ran == [("send_email", "ada@example.com", "hi")]
        run.answer({"type": "reject", "message": "no"}, pause=second.id, shown=second.shown)
        result = await run
        assert result.outcome == "done" and desk.ran == [("send_email", "ada@example.com", "hi")]
        assert [d.shown for d in result.decisions] == [first.shown, second.shown]

    def test_durable_a_resume_with_an_old_digest_runs_nothing(self, tmp_path):
        desk = Desk()
        store = SQLiteCheckpointer(tmp_path / "runs.db")
        g = agent(rounds(HI, WIRE), desk)
        first = g.invoke(ask(), checkpointer=store)
        old = first.pauses[0].shown
        second = g.invoke(Resume(first, "approve", shown=old), checkpointer=store)
        (waiting,) = second.pauses
        with pytest.raises(ResumeError, match="shows something else than what was decided on"):
            g.invoke(Resume(second, "approve", shown=old), checkpointer=store)
        assert desk.ran == [("send_email", "ada@example.com", "hi")]
        assert store.get(second.thread).pauses == (waiting,)


# -- a call sent again with the same id, over the wire ----------------------------------------------


def wire_model(server) -> OpenAIModel:
    return OpenAIModel("gpt-4o-mini", base_url=server.base_url, api_key="sk-test", max_retries=0)


@pytest.fixture
def wired(openai_server):
    """The real client on the local server, for synchronous runs: closed once the test is done."""
    model = wire_model(openai_server)
    yield model
    model.close()


IDS = pytest.mark.parametrize("ids", [[None], ["call_abc"]], ids=["no id sent", "same id sent"])


class TestARepeatedCallIdPausesAgain:
    @IDS
    async def test_live_round_two_waits_for_its_own_decision(self, openai_server, ids):
        desk = Desk()
        openai_server.script(
            ServerReply(tool_calls=[HI], call_ids=ids), ServerReply(tool_calls=[WIRE], call_ids=ids), ServerReply("ok")
        )
        async with wire_model(openai_server) as model:
            run = agent(model, desk).start(ask(), display=False)
            first = await next_pause(run)
            run.answer("approve", pause=first.id)
            second = await next_pause(run)
            assert second.tool_calls[0].call_id == first.tool_calls[0].call_id == (ids[0] or "call_0")
            assert second.tool_calls[0].arguments["body"] == "wire 1M" and second.id != first.id
            assert desk.ran == [("send_email", "ada@example.com", "hi")]  # "wire 1M" waits: nobody decided it
            run.answer({"type": "reject", "message": "Not that."}, pause=second.id)
            result = await run
        assert result.outcome == "done" and desk.ran == [("send_email", "ada@example.com", "hi")]
        assert [(d.pause_id, d.verdict) for d in result.decisions] == [(first.id, "approved"), (second.id, "rejected")]

    @IDS
    def test_durable_round_two_waits_across_a_resume(self, openai_server, wired, ids, tmp_path):
        desk = Desk()
        store = SQLiteCheckpointer(tmp_path / "runs.db")
        openai_server.script(
            ServerReply(tool_calls=[HI], call_ids=ids), ServerReply(tool_calls=[WIRE], call_ids=ids), ServerReply("ok")
        )
        model = wired
        first = agent(model, desk).invoke(ask(), thread="t", checkpointer=store)
        second = agent(model, desk).invoke(Resume("t", "approve", by="alice"), checkpointer=store)
        assert second.outcome == "interrupted", second.reason
        (waiting,) = second.pauses
        assert waiting.tool_calls[0].arguments["body"] == "wire 1M" and waiting.id != first.pauses[0].id
        assert desk.ran == [("send_email", "ada@example.com", "hi")]
        done = agent(model, desk).invoke(Resume("t", "approve", by="bob"), checkpointer=store)
        assert done.outcome == "done", done.reason
        assert desk.ran == [("send_email", "ada@example.com", "hi"), ("send_email", "ada@example.com", "wire 1M")]
        # Both decisions are in the thread's history, though the node's step closed only after the second.
        assert [(d.by, d.via, d.pause_id) for d in done.decisions] == [
            ("alice", "resume", first.pauses[0].id),
            ("bob", "resume", waiting.id),
        ]
        assert len(openai_server.requests) == 3  # the model was never asked again on resume

    async def test_live_the_same_call_again_after_a_rejection_waits_again(self, openai_server):
        desk = Desk()
        openai_server.script(
            ServerReply(tool_calls=[HI], call_ids=[None]),
            ServerReply(tool_calls=[HI], call_ids=[None]),
            ServerReply("ok"),
        )
        async with wire_model(openai_server) as model:
            run = agent(model, desk).start(ask(), display=False)
            first = await next_pause(run)
            run.answer({"type": "reject", "message": "Not yet."}, pause=first.id)
            again = await next_pause(run)
            assert again.shown == first.shown and again.id != first.id  # the same call, shown again
            run.answer("approve", pause=again.id)
            result = await run
        assert desk.ran == [("send_email", "ada@example.com", "hi")]
        assert [d.verdict for d in result.decisions] == ["rejected", "approved"]

    def test_durable_the_same_call_again_after_a_rejection_waits_again(self, openai_server, wired, tmp_path):
        desk = Desk()
        store = SQLiteCheckpointer(tmp_path / "runs.db")
        openai_server.script(
            ServerReply(tool_calls=[HI], call_ids=[None]),
            ServerReply(tool_calls=[HI], call_ids=[None]),
            ServerReply("ok"),
        )
        model = wired
        first = agent(model, desk).invoke(ask(), thread="t", checkpointer=store)
        again = agent(model, desk).invoke(Resume("t", {"type": "reject", "message": "Not yet."}), checkpointer=store)
        # The rejection was for the call a person saw; the same call asked again waits for its own.
        assert again.outcome == "interrupted" and again.pauses[0].shown == first.pauses[0].shown
        assert again.pauses[0].id != first.pauses[0].id and desk.ran == []
        done = agent(model, desk).invoke(Resume("t", "approve"), checkpointer=store)
        assert done.outcome == "done" and desk.ran == [("send_email", "ada@example.com", "hi")]
        assert [d.verdict for d in done.decisions] == ["rejected", "approved"]
        tools = [m.content for m in done.state.messages if isinstance(m, ToolMessage)]
        assert tools == ["Not yet.", "sent"]

    async def test_the_same_call_again_after_it_ran_runs_nothing_and_asks_nobody(self, openai_server):
        # A call that ran, asked again in the same turn, is a duplicate: it runs nothing, so no
        # decision (old or new) is applied to it.
        desk = Desk()
        openai_server.script(
            ServerReply(tool_calls=[HI], call_ids=[None]),
            ServerReply(tool_calls=[HI], call_ids=[None]),
            ServerReply("ok"),
        )
        async with wire_model(openai_server) as model:
            run = agent(model, desk).start(ask(), display=False)
            run.answer("approve", pause=(await next_pause(run)).id)
            result = await run
        assert result.outcome == "done" and desk.ran == [("send_email", "ada@example.com", "hi")]
        assert len(result.decisions) == 1
        assert [m.content for m in result.state.messages if isinstance(m, ToolMessage)][1].startswith("[skipped")


# -- what the door accepts, it can keep ---------------------------------------------------------------

UNSTORABLE = [
    pytest.param({"memo": {"raw": b"\x00\x01"}}, r"\['memo'\]\['raw'\] is a bytes", id="bytes"),
    pytest.param({"memo": {"tags": {"a", "b"}}}, r"\['memo'\]\['tags'\] is a set", id="set"),
    pytest.param(
        {"memo": {"when": datetime.datetime(2026, 1, 1)}}, r"\['memo'\]\['when'\] is a datetime", id="datetime"
    ),
    pytest.param({"amount": float("nan")}, r"\['amount'\] is nan: JSON holds only finite numbers", id="nan"),
]
ASKED_WIRE = ("wire", {"to": "ada@example.com", "amount": 10, "memo": {}})


class TestWhatCannotBeKeptIsRefused:
    @pytest.mark.parametrize(("change", "said"), UNSTORABLE)
    async def test_live_an_edit_is_refused_nothing_runs_and_the_pause_waits(self, change, said):
        desk = Desk()
        run = agent(rounds(ASKED_WIRE), desk).start(ask(), display=False)
        pause = await next_pause(run)
        edit = {"type": "edit", "arguments": {**ASKED_WIRE[1], **change}}
        with pytest.raises(ResumeError, match=f"at node 'agent' cannot be stored: .*{said}"):
            run.answer(edit, pause=pause.id)
        assert run.pauses == (pause,) and desk.ran == []
        run.answer({"type": "edit", "arguments": {**ASKED_WIRE[1], "amount": 5}}, pause=pause.id)
        result = await run
        assert result.outcome == "done" and desk.ran == [("wire", "ada@example.com", 5.0, {})]

    @pytest.mark.parametrize(("change", "said"), UNSTORABLE)
    def test_durable_an_edit_is_refused_nothing_runs_and_the_pause_waits(self, change, said, tmp_path):
        desk = Desk()
        store = SQLiteCheckpointer(tmp_path / "runs.db")
        g = agent(rounds(ASKED_WIRE), desk)
        paused = g.invoke(ask(), checkpointer=store)
        edit = {"type": "edit", "arguments": {**ASKED_WIRE[1], **change}}
        with pytest.raises(ResumeError, match=said):
            g.invoke(Resume(paused, edit), checkpointer=store)
        assert desk.ran == [] and store.get(paused.thread).pauses == paused.pauses
        assert g.invoke(Resume(paused, "approve"), checkpointer=store).outcome == "done"
        assert desk.ran == [("wire", "ada@example.com", 10.0, {})]

    async def test_a_ten_megabyte_message_is_refused_naming_the_bound_and_where_to_change_it(self, tmp_path):
        desk = Desk()
        store = SQLiteCheckpointer(tmp_path / "runs.db")
        g = agent(rounds(HI), desk)
        paused = g.invoke(ask(), checkpointer=store)
        huge = {"type": "reject", "message": "x" * 10_000_000}
        said = r"takes 10,000,0\d\d bytes as JSON, over the limit of 1,000,000; .* nbgraph\.set_answer_limit"
        with pytest.raises(ResumeError, match=said):
            g.invoke(Resume(paused, huge), checkpointer=store)
        run = g.start(ask(), display=False)
        pause = await next_pause(run)
        with pytest.raises(ResumeError, match=said):
            run.answer(huge, pause=pause.id)
        assert run.pauses == (pause,)
        run.cancel()
        await run
        assert (tmp_path / "runs.db").stat().st_size < 1_000_000  # nothing of it was stored
        set_answer_limit(20_000_000)
        try:
            assert answer_limit() == 20_000_000
            result = g.invoke(Resume(paused, huge), checkpointer=store)
        finally:
            set_answer_limit(None)
        assert result.outcome == "done" and answer_limit() == 1_000_000 and desk.ran == []


# -- answered already ------------------------------------------------------------------------------


class TestAnsweredAlready:
    def test_a_second_durable_answer_while_another_call_of_the_reply_waits(self, tmp_path):
        desk = Desk()
        store = SQLiteCheckpointer(tmp_path / "runs.db")
        model = ScriptedModel(
            lambda messages: "Done." if messages[-1].role == "tool" else Reply(tool_calls=[HI, REFUND])
        )
        g = agent(model, desk)
        paused = g.invoke(ask(), checkpointer=store)
        email, refund = paused.pauses
        half = g.invoke(Resume(paused.thread, "approve", pause=email.id), checkpointer=store)
        assert [p.id for p in half.pauses] == [refund.id] and desk.ran == []
        with pytest.raises(ResumeError, match=r"answered already, decided: approve, at node 'agent' \(step 1\)"):
            g.invoke(Resume(paused.thread, {"type": "reject", "message": "no"}, pause=email.id), checkpointer=store)
        assert desk.ran == [] and store.get(paused.thread).pauses == half.pauses
        done = g.invoke(Resume(paused.thread, "approve", pause=refund.id), checkpointer=store)
        assert done.outcome == "done" and desk.ran == [("send_email", "ada@example.com", "hi"), ("refund", "A1", 200.0)]
        assert [d.pause_id for d in done.decisions] == [email.id, refund.id]


# -- standing approvals -----------------------------------------------------------------------------


class TestStandingApprovals:
    async def test_allow_lets_later_calls_of_that_tool_through_and_no_other(self):
        desk = Desk()
        run = agent(rounds(HI, REFUND, WIRE), desk).start(ask(), display=False)
        first = await next_pause(run)
        standing = run.allow("send_email", reason="Ada's emails are fine")
        assert run.standing == (standing,) and standing.by == "tester" and standing.scope == "run"
        run.answer("approve", pause=first.id)
        refund = await next_pause(run)  # another tool: still asks
        assert refund.tool_calls[0].name == "refund"
        run.answer("approve", pause=refund.id)
        result = await run
        assert result.outcome == "done" and len(desk.ran) == 3
        let_through = result.decisions[-1]
        assert (let_through.via, let_through.standing, let_through.by, let_through.verdict) == (
            "standing",
            standing.id,
            "tester",
            "approved",
        )
        assert [d.via for d in result.decisions] == ["code", "code", "standing"]

    async def test_a_decision_can_stand_for_the_run_and_be_revoked(self):
        desk = Desk()
        bye = ("send_email", {"to": "ada@example.com", "body": "bye"})
        run = agent(rounds(HI, WIRE, REFUND, bye), desk).start(ask(), display=False)
        first = await next_pause(run)
        run.answer({"type": "approve", "standing": "run", "reason": "routine"}, pause=first.id)
        refund = await next_pause(run)  # WIRE went through without asking; the refund asks
        assert refund.tool_calls[0].name == "refund" and len(desk.ran) == 2
        (standing,) = run.standing
        assert standing.tool == "send_email" and standing.reason == "routine"
        run.revoke(standing)
        assert run.standing == ()
        run.answer("approve", pause=refund.id)
        last = await next_pause(run)  # revoked: the email asks again
        assert last.tool_calls[0].name == "send_email" and len(desk.ran) == 3
        run.answer("approve", pause=last.id)
        result = await run
        assert [d.via for d in result.decisions] == ["code", "standing", "code", "code"]
        assert result.decisions[0].reason == "routine"

    async def test_the_decision_that_sets_one_up_names_it_and_its_decider(self):
        desk = Desk()
        run = agent(rounds(HI, WIRE), desk).start(ask(), display=False)
        first = await next_pause(run)
        run.answer({"type": "approve", "standing": "run"}, pause=first.id, by="bea", reason="routine mail")
        result = await run
        (standing,) = result.run.standing
        set_up, let_through = result.decisions
        assert (set_up.standing, set_up.by, set_up.tools) == (standing.id, "bea", ("send_email",))
        assert (standing.by, standing.reason) == ("bea", "routine mail")
        assert (let_through.via, let_through.standing, let_through.by, let_through.reason) == (
            "standing",
            standing.id,
            "bea",
            "routine mail",
        )

    def test_a_standing_approval_for_the_thread_holds_in_another_process(self, tmp_path):
        db, ledger = str(tmp_path / "runs.db"), tmp_path / "ledger.jsonl"

        def desk(*args: str) -> list[str]:
            done = subprocess.run(
                [sys.executable, str(PROGRAMS / "decision_desk.py"), db, str(ledger), *args],
                capture_output=True,
                text=True,
                timeout=120,
            )
            assert done.returncode == 0, done.stderr
            return done.stdout.splitlines()

        started = desk("start", "t")
        assert started[0] == "interrupted"
        email_id = started[1].split()[0]
        answered = desk(
            "answer", "t", email_id, json.dumps({"type": "approve", "standing": "thread", "reason": "Ada"}), "alice"
        )
        assert answered[0] == "interrupted" and answered[1].split()[1] == "refund"  # no other tool
        refund_id = answered[1].split()[0]
        done = desk("answer", "t", refund_id, '"approve"', "bob")
        assert done == ["done"]  # the second email went through on the standing approval, in a third process
        ran = [json.loads(line)[0] for line in ledger.read_text().splitlines()]
        assert ran == ["send_email", "refund", "send_email"]
        rows = [json.loads(line) for line in desk("decisions", "t")]
        assert [(r["by"], r["via"], r["verdict"]) for r in rows][:2] == [
            ("alice", "resume", "approved"),
            ("bob", "resume", "approved"),
        ]
        assert (rows[2]["via"], rows[2]["verdict"], rows[2]["kind"]) == ("standing", "approved", "tool")
        assert rows[0]["reason"] == "Ada" and rows[0]["answer"][0]["standing"] == "thread"
        assert rows[2]["standing"] is not None and rows[2]["thread"] == "t"


# -- who answered, every way to answer ---------------------------------------------------------------


def trip() -> Graph:
    async def where(state, ctx):
        return {"city": await ctx.request_input("Which city?")}

    g = Graph("trip")
    g.add_node("where", where)
    g.add_node("book", lambda s: {"booked": f"a week in {s.city}"}, approval=True)
    g.add_edge(START, "where")
    g.add_edge("where", "book")
    g.add_edge("book", END)
    return g


def who(result) -> list[tuple]:
    return [(d.kind, d.verdict, d.by, d.via, d.reason) for d in result.decisions]


class TestEveryWayToAnswerIsRecorded:
    async def test_run_answer_approve_and_deny(self):
        run = trip().start({}, display=False)
        run.answer("Oslo", pause=(await next_pause(run)).id, reason="she said so")
        await next_pause(run)
        run.approve({"booked": "two weeks in Oslo"}, reason="longer is better")
        result = await run
        assert who(result) == [
            ("input", "answered", "tester", "code", "she said so"),
            ("approval", "approved with an edit", "tester", "code", "longer is better"),
        ]
        edit = result.decisions[1].edits[0]
        assert (edit.field, edit.before, edit.after) == ("booked", "a week in Oslo", "two weeks in Oslo")
        run = trip().start({}, display=False)
        await next_pause(run)
        run.answer("Rome", by="carol")
        await next_pause(run)
        run.deny(reason="too far")
        result = await run
        assert result.outcome == "denied"
        assert who(result) == [
            ("input", "answered", "carol", "code", None),
            ("approval", "denied", "tester", "code", "too far"),
        ]
        at = datetime.datetime.fromisoformat(result.decisions[1].at)
        assert at.tzinfo is not None and abs(datetime.datetime.now(datetime.UTC) - at).total_seconds() < 60

    def test_resume(self, tmp_path):
        store = SQLiteCheckpointer(tmp_path / "runs.db")
        g = trip()
        asked = g.invoke({}, checkpointer=store)
        shown = g.invoke(Resume(asked, "Oslo", by="carol", reason="from the phone call"), checkpointer=store)
        result = g.invoke(Resume(shown, True), checkpointer=store)
        assert who(result) == [
            ("input", "answered", "carol", "resume", "from the phone call"),
            ("approval", "approved", "tester", "resume", None),
        ]
        assert [d.shown for d in result.decisions] == [asked.pauses[0].shown, shown.pauses[0].shown]

    async def test_the_view(self):
        desk = Desk()
        run = agent(rounds(HI, REFUND), desk).start(ask(), display=False)
        view = GraphView.for_run(run)
        first = await next_pause(run)
        decision = {"type": "edit", "arguments": {"to": "ada@example.com", "body": "hello"}, "reason": "politer"}
        view._handle_custom_msg({"type": "answer", "pause_id": first.id, "value": decision}, [])
        second = await next_pause(run)
        view._handle_custom_msg({"type": "answer", "pause_id": second.id, "value": {"type": "approve"}}, [])
        result = await run
        assert who(result) == [
            ("tool", "edited", "tester", "view", "politer"),
            ("tool", "approved", "tester", "view", None),
        ]
        (edit,) = result.decisions[0].edits
        assert (edit.field, edit.before, edit.after) == ("send_email.body", "hi", "hello")

    async def test_a_view_approval_and_denial(self):
        run = trip().start({}, display=False)
        view = GraphView.for_run(run)
        view._handle_custom_msg({"type": "answer", "pause_id": (await next_pause(run)).id, "value": "Oslo"}, [])
        view._handle_custom_msg({"type": "deny", "pause_id": (await next_pause(run)).id}, [])
        result = await run
        assert who(result) == [
            ("input", "answered", "tester", "view", None),
            ("approval", "denied", "tester", "view", None),
        ]

    async def test_the_magic(self):
        shell = InteractiveShell.instance()
        shell.run_cell("%load_ext nbgraph", store_history=False)
        shell.register_magics(GraphMagics)
        run = trip().start({}, display=False)
        shell.user_ns["_run"] = run
        try:
            pause = await next_pause(run)
            shell.run_line_magic("graph", f"answer _run 'Oslo' --pause {pause.id}")
            await next_pause(run)
            shell.run_line_magic("graph", 'answer _run {"approved": True, "reason": "fine"}')
            result = await run
            assert who(result) == [
                ("input", "answered", "tester", "magic", None),
                ("approval", "approved", "tester", "magic", "fine"),
            ]
        finally:
            shell.user_ns.clear()

    async def test_who_is_the_identity_set_else_the_hub_user(self, monkeypatch):
        monkeypatch.setenv("JUPYTERHUB_USER", "hub-ada")
        set_identity(None)
        run = trip().start({}, display=False)
        run.answer("Oslo", pause=(await next_pause(run)).id)
        await next_pause(run)
        set_identity("dana")
        run.approve()
        result = await run
        assert [d.by for d in result.decisions] == ["hub-ada", "dana"]
        with pytest.raises(ValueError, match="an identity is a non-empty name"):
            set_identity("  ")


# -- where the record is --------------------------------------------------------------------------------


async def decided_run():
    """A tool run with an edit, an approval and a rejection, answered live."""
    desk = Desk()
    run = agent(rounds(HI, REFUND, WIRE), desk).start(ask(), display=False)
    await next_pause(run)
    run.answer({"type": "edit", "arguments": {"to": "ada@example.com", "body": "hello"}, "reason": "politer"})
    await next_pause(run)
    run.answer({"type": "approve"})
    await next_pause(run)
    run.answer({"type": "reject", "message": "Never wire.", "reason": "policy <b>7</b>"})
    return await run


class TestWhereTheRecordIs:
    async def test_the_trace_round_trips_every_decision(self):
        result = await decided_run()
        assert [d.verdict for d in result.decisions] == ["edited", "approved", "rejected"]
        trace = result.to_ndjson()
        assert recorded(parse_ndjson(trace)) == result.decisions
        assert replay(trace).decisions == tuple(result.decisions)

    async def test_the_inspector_shows_who_decided_each_pause(self):
        result = await decided_run()
        (step,) = result.history
        seen = result.inspect(step.step).pauses
        assert [(p.kind, p.answered) for p in seen] == [("tool", True)] * 3
        first, _, last = (p.decision for p in seen)
        assert first is not None and last is not None
        assert (first.by, first.via, first.verdict, first.reason) == ("tester", "code", "edited", "politer")
        assert [(e.field, e.before, e.after) for e in first.edits] == [("send_email.body", "hi", "hello")]
        assert (last.verdict, last.reason) == ("rejected", "policy <b>7</b>")
        assert first.pause_id == seen[0].id and first.at

    async def test_each_frame_of_the_replay_knows_the_decisions_made_up_to_it(self):
        result = await decided_run()
        frames = replay(result)
        assert [f.decisions_so_far for f in frames] == [0, 3]
        assert frames.decisions_up_to(0) == () and frames.decisions_up_to(1) == tuple(result.decisions)
        assert frames[1].decided == tuple(result.decisions)
        shown = frames.to_json()["frames"]
        assert [f["decisions_so_far"] for f in shown] == [0, 3]
        assert [d["verdict"] for d in shown[1]["decided"]] == ["edited", "approved", "rejected"]
        assert shown[1]["decided"][0]["by"] == "tester"

    async def test_the_slider_counts_decisions_frame_by_frame(self):
        run = trip().start({}, display=False)
        run.answer("Oslo", pause=(await next_pause(run)).id)
        await next_pause(run)
        run.approve(reason="fine")
        frames = replay(await run)
        assert [(f.node, f.decisions_so_far, [d.kind for d in f.decided]) for f in frames] == [
            (None, 0, []),
            ("where", 1, ["input"]),
            ("book", 2, ["approval"]),
        ]
        assert [d.reason for d in frames.decisions_up_to(2)] == [None, "fine"]

    def test_a_stored_history_read_in_another_process_keeps_who_when_and_what(self, tmp_path):
        db, ledger = str(tmp_path / "runs.db"), tmp_path / "ledger.jsonl"

        def desk(*args: str) -> list[str]:
            done = subprocess.run(
                [sys.executable, str(PROGRAMS / "decision_desk.py"), db, str(ledger), *args],
                capture_output=True,
                text=True,
                timeout=120,
            )
            assert done.returncode == 0, done.stderr
            return done.stdout.splitlines()

        pause = desk("start", "t")[1].split()[0]
        edit = {"type": "edit", "arguments": {"to": "ada@example.com", "body": "Soon."}, "reason": "shorter"}
        pause = desk("answer", "t", pause, json.dumps(edit), "alice")[1].split()[0]
        # The refund waits, and the email's decision is kept though its node has not finished.
        (pending,) = [json.loads(line) for line in desk("decisions", "t")]
        assert (pending["by"], pending["verdict"], pending["reason"]) == ("alice", "edited", "shorter")
        pause = desk("answer", "t", pause, '{"type": "reject", "message": "No refund."}', "bob")[1].split()[0]
        assert desk("answer", "t", pause, '"approve"', "carol") == ["done"]
        rows = [json.loads(line) for line in desk("decisions", "t")]
        assert [(r["by"], r["via"], r["verdict"], r["kind"], r["path"]) for r in rows] == [
            ("alice", "resume", "edited", "tool", "agent"),
            ("bob", "resume", "rejected", "tool", "agent"),
            ("carol", "resume", "approved", "tool", "agent"),
        ]
        assert rows[0]["edits"] == [{"field": "send_email.body", "before": "We are looking into it.", "after": "Soon."}]
        assert rows[0]["at"] < rows[1]["at"] < rows[2]["at"] and rows[0]["at"].endswith("+00:00")
        assert len({r["shown"] for r in rows}) == 3 and all(len(r["shown"]) == 32 for r in rows)
        here = nbgraph.decisions(SQLiteCheckpointer(db), "t")
        assert [d.model_dump(mode="json") for d in here] == [
            {k: v for k, v in r.items() if k != "thread"} for r in rows
        ]

    @pytest.mark.parametrize("shape", ["node", "sub-graph", "two branches"])
    def test_questions_answered_by_several_resumes_are_each_recorded_once(self, tmp_path, shape):
        store = SQLiteCheckpointer(tmp_path / "runs.db")

        async def form(state, ctx):
            name = await ctx.request_input("Name?")
            city = await ctx.request_input("City?")
            return {"card": f"{name} in {city}"}

        inner = Graph("form")
        inner.add_node("form", form)
        inner.add_edge(START, "form")
        inner.add_edge("form", END)
        if shape == "node":
            g = inner
        elif shape == "sub-graph":
            g = Graph("outer")
            g.add_node("sub", inner)
            g.add_edge(START, "sub")
            g.add_edge("sub", END)
        else:
            g = Graph("two")
            for name in ("north", "south"):
                g.add_node(name, form)
                g.add_edge(name, END)
            g.add_edge(START, ["north", "south"])
        places = 2 if shape == "two branches" else 1
        asked = g.invoke({}, checkpointer=store)
        again = g.invoke(Resume(asked.thread, {p.id: "Ada" for p in asked.pauses}, by="alice"), checkpointer=store)
        assert [p.prompt for p in again.pauses] == ["City?"] * places
        assert [d.by for d in nbgraph.decisions(store, asked.thread)] == ["alice"] * places  # kept while it waits
        done = g.invoke(Resume(again.thread, {p.id: "Oslo" for p in again.pauses}, by="bob"), checkpointer=store)
        assert done.outcome == "done", done.reason
        asking = [step for step in done.history if step.events]
        assert len(asking) == places
        for step in asking:
            assert [e.type for e in step.events] == ["interrupt", "answer", "interrupt", "answer"]
            assert [(d.by, d.answer) for d in decided_in((step,))] == [("alice", "Ada"), ("bob", "Oslo")]
        assert len(nbgraph.decisions(store, asked.thread)) == 2 * places
        assert "decided" not in store.get(asked.thread).meta  # the nodes' records hold them now


class TestTheTable:
    async def test_a_run_as_text_html_rows_and_records(self):
        result = await decided_run()
        table = nbgraph.decisions(result)
        assert isinstance(table, DecisionTable) and len(table) == 3 and list(table) == result.decisions
        assert isinstance(table[0], Decision) and table[2].verdict == "rejected"
        text = str(table).splitlines()
        assert text[0].split() == [
            "thread",
            "step",
            "node",
            "kind",
            "verdict",
            "by",
            "at",
            "via",
            "reason",
            "edits",
            "shown",
            "pause",
        ]
        assert "edited" in text[1] and "send_email.body: 'hi' -> 'hello'" in text[1] and "politer" in text[1]
        html = table._repr_html_()
        assert "<td>policy &lt;b&gt;7&lt;/b&gt;</td>" in html and "<b>7</b>" not in html
        rows = table.rows()
        assert rows[0]["thread"] == result.thread and rows[0]["edits"][0]["after"] == "hello"
        assert repr(table) == "<DecisionTable: 3 decisions in 1 thread>"

    def test_a_store_every_thread_or_one(self, tmp_path):
        store = SQLiteCheckpointer(tmp_path / "runs.db")
        g = trip()
        for thread, city in (("a", "Oslo"), ("b", "Rome")):
            asked = g.invoke({}, thread=thread, checkpointer=store)
            g.invoke(Resume(g.invoke(Resume(asked, city), checkpointer=store), True), checkpointer=store)
        g.invoke({}, thread="c", checkpointer=store)  # waits: nobody decided anything yet
        everything = nbgraph.decisions(store)
        assert [(row["thread"], row["kind"]) for row in everything.rows()] == [
            ("a", "input"),
            ("a", "approval"),
            ("b", "input"),
            ("b", "approval"),
        ]
        assert [(d.answer, d.verdict) for d in nbgraph.decisions(store, "b")][0] == ("Rome", "answered")
        assert nbgraph.decisions(store, "b")[1].verdict == "approved"
        assert str(nbgraph.decisions(store, "c")) == "no decisions\n"
        with pytest.raises(ValueError, match="no thread 'd'"):
            nbgraph.decisions(store, "d")
        with pytest.raises(TypeError, match="reads a store .* or a Run or RunResult, not int"):
            nbgraph.decisions(42)

    def test_nbgraph_decisions_loads_the_record_only_when_named_in_a_fresh_process(self):
        code = (
            "import sys, nbgraph\n"
            "assert 'nbgraph.decision' not in sys.modules and 'pydantic.main' not in sys.modules\n"
            "from nbgraph import MemoryCheckpointer\n"
            "from nbgraph.decision import Decision, decisions\n"  # the module loaded first, by its own name
            "print(decisions is nbgraph.decisions, len(nbgraph.decisions(MemoryCheckpointer())), Decision.__name__)\n"
        )
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
        assert out.stdout.split() == ["True", "0", "Decision"]


class TestWhoMayDecide:
    async def test_a_tool_names_its_deciders_and_the_door_refuses_anyone_else(self):
        ran = []

        @tool(approval=True, deciders=("bea", "cy"))
        def refund(order: str, amount: float) -> str:
            """Refund an order."""
            ran.append(order)
            return "refunded"

        g = Graph("desk", state=MessagesState)
        g.add_node("agent", llm_node("s", model=rounds(REFUND), tools=[refund]))
        g.add_edge(START, "agent")
        g.add_edge("agent", END)
        run = g.start(ask(), display=False)
        pause = await next_pause(run)
        assert pause.deciders == ("bea", "cy")
        with pytest.raises(ResumeError, match="'tester' may not answer the pause at node 'agent'.*'bea' or 'cy'"):
            run.answer("approve", pause=pause.id)
        assert run.pauses == (pause,) and ran == []
        run.answer("approve", pause=pause.id, by="cy")
        result = await run
        assert ran == ["A1"] and result.decisions[0].by == "cy"

    def test_a_node_approval_names_its_deciders_across_a_resume(self, tmp_path):
        g = Graph("gate")
        g.add_node("send", lambda s: {"sent": True}, approval="before", deciders="bea")
        g.add_edge(START, "send")
        g.add_edge("send", END)
        store = SQLiteCheckpointer(str(tmp_path / "runs.db"))
        paused = g.invoke({}, checkpointer=store)
        assert paused.pauses[0].deciders == ("bea",)
        with pytest.raises(ResumeError, match="'tester' may not answer"):
            g.invoke(Resume(paused, True), checkpointer=store)
        result = g.invoke(Resume(paused, True, by="bea"), checkpointer=store)
        assert result.outcome == "done" and [d.by for d in result.decisions] == ["bea"]

    async def test_an_input_names_its_deciders(self):
        async def ask_city(state, ctx):
            return {"city": await ctx.request_input("Which city?", deciders=["bea"])}

        g = Graph("q")
        g.add_node("ask", ask_city)
        g.add_edge(START, "ask")
        g.add_edge("ask", END)
        run = g.start({}, display=False)
        pause = await next_pause(run)
        assert pause.deciders == ("bea",)
        with pytest.raises(ResumeError, match="may not answer"):
            run.answer("Oslo")
        run.answer("Oslo", by="bea")
        assert (await run).state["city"] == "Oslo"

    @pytest.mark.parametrize("bad", [[], [""], 3, ["bea", 4]])
    def test_deciders_that_are_not_names_are_refused_naming_where(self, bad):
        g = Graph("gate")
        with pytest.raises(ValueError, match="node 'send': deciders= names who may answer"):
            g.add_node("send", lambda s: {}, approval=True, deciders=bad)
        with pytest.raises(ValueError, match="give approval=True"):
            g.add_node("other", lambda s: {}, deciders="bea")
