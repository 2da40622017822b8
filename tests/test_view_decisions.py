"""Decisions made in the live view: a click answers what its box showed (a stale one is refused,
naming the pause), is recorded as given in the view with its reason, sets up and revokes
standing approvals, and the view lists every decision of the run, placed on the replay's frames."""

from __future__ import annotations

import time

import pytest
from test_widget import Wire
from turns import wait_until, within

from nbgraph import END, START, Deadline, Graph, MessagesState
from nbgraph.answering import set_identity
from nbgraph.errors import ResumeError
from nbgraph.llm import Reply, ScriptedModel, llm_node, tool
from nbgraph.widget import GraphView

STALE = "0" * 32  # a digest no pause shows


def letter() -> Graph:
    """draft is approved after it runs (an edit may correct it); send asks before it runs."""
    g = Graph("letter")
    g.add_node("draft", lambda s: {"draft": "Dear customer"}, approval=True)
    g.add_node("send", lambda s: {"sent": True}, approval="before", on_deny="hold")
    g.add_node("hold", lambda s: {"held": True})
    g.add_edge(START, "draft")
    g.add_edge("draft", "send")
    g.add_edge("send", END)
    g.add_edge("hold", END)
    return g


def refund_desk(refunded: list) -> Graph:
    """An agent asks for two refunds, a note, and a third refund, one call a round; every call waits for a person."""

    @tool(approval=True)
    def refund(order: str, amount: float) -> str:
        """Refund part or all of an order."""
        refunded.append(order)
        return f"refunded {amount:g} on {order}"

    @tool(approval=True)
    def note(text: str) -> str:
        """Leave a note on the case."""
        return "noted"

    def reply(messages):
        done = sum(1 for m in messages if m.role == "tool")
        if done == 2:
            return Reply(tool_calls=[("note", {"text": "two refunded"})])
        if done < 4:
            return Reply(tool_calls=[("refund", {"order": f"A{min(done, 2) + 1}", "amount": 10})])
        return "Done"

    g = Graph("desk", state=MessagesState)
    g.add_node("agent", llm_node("You refund orders.", model=ScriptedModel(reply), tools=[refund, note]))
    g.add_edge(START, "agent")
    g.add_edge("agent", END)
    return g


@pytest.fixture
def alice():
    set_identity("alice")
    yield "alice"
    set_identity(None)


class TestAClickAnswersWhatItShowed:
    async def test_an_approval_is_recorded_as_given_in_the_view_with_its_reason(self, alice):
        run = letter().start({}, display=False)
        view = GraphView.for_run(run)
        pause = await run.next_pause(timeout=5)
        assert view.identity == "alice"
        assert view.pending[0]["shown"] == pause.shown  # the box has the digest it answers with
        assert view.handle({"type": "approve", "pause_id": pause.id, "shown": pause.shown, "reason": "  reads well  "})
        gate = await run.next_pause(timeout=5)
        assert view.handle({"type": "deny", "pause_id": gate.id, "shown": gate.shown, "reason": "not today"})
        result = await within(run)
        assert result.path == ["draft", "send", "hold"]
        assert [(d.path, d.verdict, d.by, d.via, d.reason, d.shown) for d in result.decisions] == [
            ("draft", "approved", "alice", "view", "reads well", pause.shown),
            ("send", "denied", "alice", "view", "not today", gate.shown),
        ]

    async def test_an_answer_to_what_the_pause_no_longer_shows_is_refused_in_its_box(self):
        run = letter().start({}, display=False)
        view = GraphView.for_run(run)
        wire = Wire(view)
        pause = await run.next_pause(timeout=5)
        with pytest.raises(ResumeError, match="shows something else than what was decided on"):
            view.handle({"type": "approve", "pause_id": pause.id, "shown": STALE})
        # Through the comm, as a click arrives: the refusal names the pause, so its box says so.
        view._handle_custom_msg({"type": "approve", "pause_id": pause.id, "shown": STALE, "reason": "ok"}, [])
        assert len(wire.custom) == 1
        refusal = wire.custom[0]
        assert refusal["type"] == "error" and refusal["pause_id"] == pause.id
        assert f"pause {pause.id!r} at node 'draft' shows something else" in refusal["message"]
        assert "Nothing was answered" in refusal["message"]
        assert run.pauses == (pause,) and run.decisions == []  # it still waits, nothing recorded
        view._handle_custom_msg({"type": "approve", "pause_id": pause.id, "shown": pause.shown}, [])
        assert (await run.next_pause(timeout=5)).node == "send"
        run.cancel()
        await within(run)

    async def test_a_reason_too_long_to_keep_is_refused_saying_the_bound(self):
        run = letter().start({}, display=False)
        view = GraphView.for_run(run)
        pause = await run.next_pause(timeout=5)
        with pytest.raises(ValueError, match="a reason is at most 2,000 characters, this one has 2,001"):
            view.handle({"type": "approve", "pause_id": pause.id, "shown": pause.shown, "reason": "x" * 2001})
        assert run.pauses == (pause,)
        run.cancel()
        await within(run)

    async def test_an_ended_interrupted_run_is_resumed_from_the_view_as_decided_there(self, alice):
        run = letter().start({}, durable=True, display=False)  # it cannot wait: it ends interrupted
        view = GraphView.for_run(run)
        assert (await within(run)).outcome == "interrupted"
        await wait_until(lambda: view.pending)
        (pause,) = view.pending
        with pytest.raises(ResumeError, match="shows something else than what was decided on"):
            view.handle({"type": "approve", "pause_id": pause["id"], "shown": STALE, "reason": "fine"})
        assert view.observer.run.thread == run.thread  # nothing was resumed
        assert view.handle({"type": "approve", "pause_id": pause["id"], "shown": pause["shown"], "reason": "fine"})
        resumed = view.observer.run  # resumed live, in the view: send asks, and waits
        gate = await resumed.run.next_pause(timeout=5)
        assert view.handle({"type": "deny", "pause_id": gate.id, "shown": gate.shown})
        result = await within(resumed)
        assert result.path == ["draft", "send", "hold"]
        assert [(d.path, d.verdict, d.by, d.via, d.reason) for d in result.decisions] == [
            ("draft", "approved", "alice", "view", "fine"),
            ("send", "denied", "alice", "view", None),
        ]
        await wait_until(lambda: len(view.decisions["rows"]) == 2)  # the log goes on across the resumes


class TestStandingApprovals:
    async def test_approve_every_later_call_from_the_view_and_revoke_it(self, alice):
        refunded: list[str] = []
        run = refund_desk(refunded).start({"messages": ["Refund my orders."]}, display=False)
        view = GraphView.for_run(run)
        first = await run.next_pause(timeout=5)
        decision = [{"type": "approve", "standing": "run", "reason": "small"}]  # (as the box sends it)
        assert view.handle(
            {"type": "answer", "pause_id": first.id, "shown": first.shown, "value": decision, "reason": "small"}
        )
        # The second refund runs without asking; the note, another tool, waits for a person.
        note = await run.next_pause(timeout=5)
        assert note.tool_calls[0].name == "note" and refunded == ["A1", "A2"]
        await wait_until(lambda: bool(view.standing))
        (standing,) = view.standing  # listed with who gave it and why
        assert (standing["tool"], standing["scope"], standing["by"], standing["when"], standing["reason"]) == (
            "refund",
            "run",
            "alice",
            None,
            "small",
        )
        assert standing["id"] == run.standing[0].id
        assert view.handle({"type": "revoke", "standing": standing["id"]})
        assert run.standing == ()
        await wait_until(lambda: view.standing == [])
        assert any("standing approval of refund revoked" in line for line in view.log)
        assert view.handle({"type": "answer", "pause_id": note.id, "shown": note.shown, "value": [{"type": "reject"}]})
        # Revoked: the third refund asks again.
        third = await run.next_pause(timeout=5)
        assert third.tool_calls[0].arguments == {"order": "A3", "amount": 10}
        assert view.handle(
            {"type": "answer", "pause_id": third.id, "shown": third.shown, "value": [{"type": "approve"}]}
        )
        result = await within(run)
        assert refunded == ["A1", "A2", "A3"]
        rows = view.decisions["rows"]
        assert [(r["tools"], r["verdict"], r["via"], r["stands"]) for r in rows] == [
            (["refund"], "approved", "view", "run"),
            (["refund"], "approved", "standing", None),
            (["note"], "rejected", "view", None),
            (["refund"], "approved", "view", None),
        ]
        assert rows[1]["standing"] == standing["id"]
        assert [d.verdict for d in result.decisions] == [r["verdict"] for r in rows]

    async def test_revoking_one_not_in_force_says_which_are(self):
        refunded: list[str] = []
        run = refund_desk(refunded).start({"messages": ["Refund."]}, display=False)
        view = GraphView.for_run(run)
        wire = Wire(view)
        await run.next_pause(timeout=5)
        kept = run.allow("note")
        await wire.update_where(lambda u: len(u.get("standing") or ()) == 1)  # allowed from code: shown too
        view._handle_custom_msg({"type": "revoke", "standing": "nope"}, [])
        assert wire.custom[-1]["type"] == "error"
        assert wire.custom[-1]["message"] == f"no standing approval 'nope' in this run; in force: {kept.id!r} (note)"
        assert run.standing == (kept,)
        run.cancel()
        await within(run)

    def test_a_view_of_a_graph_has_nothing_to_revoke(self):
        view = GraphView(letter())
        with pytest.raises(ValueError, match="this view shows a graph, not a run"):
            view.handle({"type": "revoke", "standing": "x"})


class TestTheDecisionLog:
    async def test_the_log_lists_each_decision_and_places_it_on_its_frame_once_the_run_ends(self, alice):
        run = letter().start({}, display=False)
        view = GraphView.for_run(run)
        pause = await run.next_pause(timeout=5)
        view.handle(
            {
                "type": "approve",
                "pause_id": pause.id,
                "shown": pause.shown,
                "update": {"draft": "Dear Ann"},
                "reason": "her name",
            }
        )
        await wait_until(lambda: len(view.decisions.get("rows", [])) == 1)
        (row,) = view.decisions["rows"]
        assert {k: row[k] for k in ("path", "step", "by", "via", "verdict", "reason", "edits", "frame")} == {
            "path": "draft",
            "step": 1,
            "by": "alice",
            "via": "view",
            "verdict": "approved with an edit",
            "reason": "her name",
            "edits": [{"field": "draft", "before": "Dear customer", "after": "Dear Ann"}],
            "frame": None,  # no frames while the run goes on
        }
        assert row["at"] == run.decisions[0].at
        gate = await run.next_pause(timeout=5)
        view.handle({"type": "approve", "pause_id": gate.id, "shown": gate.shown})
        await within(run)
        await wait_until(lambda: bool(view.frames))
        # Frame i is the run after its i-th record: draft's decision is kept by frame 1, send's by 2.
        assert [(r["path"], r["frame"]) for r in view.decisions["rows"]] == [("draft", 1), ("send", 2)]
        assert view.decisions["earlier"] == 0
        assert view.standing == []

        # A replay of the same run, with no run bound, lists the same decisions from its records.
        replayed = GraphView.replay(run.result())
        assert replayed.decisions == view.decisions

    async def test_a_replayed_trace_lists_the_decisions_it_recorded(self, alice):
        run = letter().start({}, display=False)
        for _ in range(2):
            pause = await run.next_pause(timeout=5)
            run.answer(True, pause=pause.id, reason=f"ok {pause.node}")
        result = await within(run)
        view = GraphView.replay(result.to_ndjson(), letter())
        rows = view.decisions["rows"]
        assert [(r["path"], r["verdict"], r["by"], r["via"], r["reason"], r["frame"]) for r in rows] == [
            ("draft", "approved", "alice", "code", "ok draft", 1),
            ("send", "approved", "alice", "code", "ok send", 2),
        ]


class TestDeadlines:
    async def test_a_box_is_told_when_its_pause_was_asked_and_the_deadlines_decision_is_listed(self):
        g = Graph("letter")
        g.add_node("send", lambda s: {"sent": True}, approval="before", on_deny="hold", deadline=Deadline(0.5))
        g.add_node("hold", lambda s: {"held": True})
        g.add_edge(START, "send")
        g.add_edge("send", END)
        g.add_edge("hold", END)
        before = time.time()
        run = g.start({}, display=False)
        view = GraphView.for_run(run)
        pause = await run.next_pause(timeout=5)
        await wait_until(lambda: view.pending)
        (box,) = view.pending
        # The box counts down from the kernel's clock, over the whole wait it heard asked.
        assert box["deadline"] == pause.deadline and box["on_timeout"] is None
        assert before <= box["asked"] <= pause.deadline
        assert pause.deadline - box["asked"] == pytest.approx(0.5, abs=0.1)
        assert before <= view.status["clock"] <= time.time()
        result = await within(run)  # nobody answers: the deadline denies it
        assert result.path == ["send", "hold"]
        await wait_until(lambda: view.decisions.get("rows"))
        (row,) = view.decisions["rows"]
        assert (row["path"], row["verdict"], row["by"], row["via"]) == ("send", "denied", "deadline", "deadline")
        assert row["reason"].startswith("no answer by its deadline, ")
        assert any("answered by deadline (deadline): denied" in line for line in view.log)

    async def test_a_pause_without_a_deadline_says_nothing_of_when_it_was_asked(self):
        run = letter().start({}, display=False)
        view = GraphView.for_run(run)
        await run.next_pause(timeout=5)
        await wait_until(lambda: view.pending)
        assert "asked" not in view.pending[0] and view.pending[0]["deadline"] is None
        run.cancel()
        await within(run)
