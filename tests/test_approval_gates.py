"""Approvals that show what they ask about: after a node (its update as a diff, and where the
run goes next) and before it (the state it would run on); what a denial does to the state."""

from __future__ import annotations

import operator
from typing import Annotated, TypedDict

import pytest

from nbgraph import END, START, Graph, Resume, ResumeError, SQLiteCheckpointer
from nbgraph.dsl import parse


class Post(TypedDict, total=False):
    text: str
    published: str
    notified: bool
    rewritten: bool
    log: Annotated[list, operator.add]


def publishing(approval, on_deny=None, sent=None) -> Graph:
    """draft -> publish (approved) -> notify; ``sent`` collects what publish sent out."""

    def publish(state):
        if sent is not None:
            sent.append(state["text"])
        return {"published": state["text"], "log": ["published"]}

    g = Graph("post", state=Post)
    g.add_node("draft", lambda s: {"text": "hello", "log": ["drafted"]})
    g.add_node("publish", publish, approval=approval, on_deny=on_deny)
    g.add_node("notify", lambda s: {"notified": True})
    g.add_edge(START, "draft")
    g.add_edge("draft", "publish")
    g.add_edge("publish", "notify")
    g.add_edge("notify", END)
    if on_deny:
        g.add_node(on_deny, lambda s: {"rewritten": True})
        g.add_edge(on_deny, END)
    return g


class TestAfter:
    async def test_the_pause_shows_the_updates_changes_and_the_next_node(self):
        run = publishing(True).start({}, display=False)
        pause = await run.next_pause(timeout=5)
        assert (pause.kind, pause.at, pause.next) == ("approval", "after", ("notify",))
        changes = {c.field: c for c in pause.changes}
        assert (changes["published"].before, changes["published"].after) == (None, "hello")
        assert changes["log"].appended and changes["log"].after == ["published"]
        assert pause.update == {"published": "hello", "log": ["published"]}
        run.approve()
        assert (await run).state["notified"] is True

    async def test_next_follows_the_condition_on_the_state_after_the_update(self):
        g = Graph("route", state=Post)
        g.add_node("draft", lambda s: {"text": "too long " * 20}, approval=True)
        g.add_node("shorten", lambda s: {"text": "short"})
        g.add_node("send", lambda s: {"published": s["text"]})
        g.add_edge(START, "draft")
        g.add_edge("draft", "shorten", when=lambda s: len(s["text"]) > 50, label="long")
        g.add_edge("draft", "send")
        g.add_edge("shorten", END)
        g.add_edge("send", END)
        run = g.start({}, display=False)
        assert (await run.next_pause(timeout=5)).next == ("shorten",)
        run.approve()
        assert (await run).path == ["draft", "shorten"]

    async def test_a_denied_update_never_reaches_the_state_even_with_on_deny(self):
        run = publishing(True, on_deny="rewrite").start({}, display=False)
        await run.next_pause(timeout=5)
        run.deny()
        result = await run
        assert result.path == ["draft", "publish", "rewrite"]
        assert "published" not in result.state and result.state["log"] == ["drafted"]
        assert result.state["rewritten"] is True

    async def test_a_long_conversation_shows_only_what_the_step_appended(self):
        g = Graph("chat", state=Post)
        g.add_node("reply", lambda s: {"log": ["the reply"]}, approval=True)
        g.add_edge(START, "reply")
        g.add_edge("reply", END)
        run = g.start({"log": [f"message {i}" for i in range(10_000)]}, display=False)
        (change,) = (await run.next_pause(timeout=5)).changes
        assert (change.field, change.appended, change.after, change.before) == ("log", True, ["the reply"], None)
        run.approve()
        assert len((await run).state["log"]) == 10_001


class TestBefore:
    async def test_approved_the_node_runs_and_its_record_keeps_the_pause(self):
        sent: list[str] = []
        run = publishing("before", sent=sent).start({}, display=False)
        pause = await run.next_pause(timeout=5)
        assert (pause.kind, pause.at, pause.node) == ("approval", "before", "publish")
        assert pause.input == {"text": "hello", "log": ["drafted"]} and sent == []
        run.approve()
        result = await run
        assert sent == ["hello"] and result.path == ["draft", "publish", "notify"]
        assert [e.type for e in result.history[1].events][:2] == ["interrupt", "answer"]

    async def test_denied_the_node_never_runs_and_the_run_ends_denied(self):
        sent: list[str] = []
        run = publishing("before", sent=sent).start({}, display=False)
        await run.next_pause(timeout=5)
        run.deny()
        result = await run
        assert (result.outcome, sent) == ("denied", [])
        assert result.reason == "approval before 'publish' was denied; it did not run"
        assert "published" not in result.state

    async def test_denied_with_on_deny_the_run_goes_there_without_running_the_node(self):
        sent: list[str] = []
        run = publishing("before", on_deny="rewrite", sent=sent).start({}, display=False)
        await run.next_pause(timeout=5)
        run.deny()
        result = await run
        assert (result.outcome, result.path, sent) == ("done", ["draft", "publish", "rewrite"], [])
        assert result.history[1].edge.label == "denied"

    def test_durable_in_parallel_branches_each_asks_until_answered(self, tmp_path):
        store = SQLiteCheckpointer(tmp_path / "runs.db")
        sent: list[str] = []

        def graph() -> Graph:
            g = Graph("two", state=Post)
            for name in ("email", "sms"):
                g.add_node(name, lambda s, name=name: sent.append(name), approval="before")
                g.add_edge(name, END)
            g.add_edge(START, ["email", "sms"])
            return g

        paused = graph().invoke({}, checkpointer=store)
        email, sms = sorted(paused.pauses, key=lambda p: p.node)
        assert (paused.outcome, email.at, sms.at, sent) == ("interrupted", "before", "before", [])
        half = graph().invoke(Resume(paused.thread, False, pause=sms.id), checkpointer=store)
        assert [p.id for p in half.pauses] == [email.id] and sent == []  # the same pause, asked again
        done = graph().invoke(Resume(paused.thread, True, pause=email.id), checkpointer=store)
        assert (done.outcome, sent) == ("done", ["email"])

    def test_an_edit_is_refused_before_the_node_has_run(self, tmp_path):
        store = SQLiteCheckpointer(tmp_path / "runs.db")
        paused = publishing("before").invoke({}, checkpointer=store)
        with pytest.raises(ResumeError, match="an approval before 'publish' runs takes no update"):
            publishing("before").invoke(
                Resume(paused.thread, {"approved": True, "update": {"text": "x"}}), checkpointer=store
            )

    def test_a_wrong_approval_option_is_refused(self):
        with pytest.raises(ValueError, match="approval must be True, False, 'before' or 'after', got 'sometimes'"):
            Graph("g").add_node("a", lambda s: None, approval="sometimes")
        with pytest.raises(Exception, match="approval is 'approval', 'approval=before' or 'approval=after'"):
            parse("START -> a [approval=sometimes]\na -> END", {"a": lambda s: None}, "g")


async def test_an_approval_in_a_chat_shows_only_the_message_the_node_added():
    from nbgraph import MessagesState

    g = Graph("chat", state=MessagesState)
    g.add_node("reply", lambda s: {"messages": [{"role": "assistant", "content": "the reply"}]}, approval=True)
    g.add_edge(START, "reply")
    g.add_edge("reply", END)
    said = [{"role": "user", "content": f"message {i}"} for i in range(1_000)]
    run = g.start({"messages": said}, display=False)
    (change,) = (await run.next_pause(timeout=5)).changes
    assert (change.field, change.appended, len(change.after)) == ("messages", True, 1)
    assert change.after[0]["content"] == "the reply" and change.before is None
    run.approve()
    assert len((await run).state.messages) == 1_001
