"""Human in the loop: live and durable input requests and approvals."""

from __future__ import annotations

import asyncio
import re
from typing import Annotated

import pydantic
import pytest

from nbgraph import (
    END,
    START,
    Fork,
    Graph,
    MemoryCheckpointer,
    NoPendingRequest,
    Resume,
    ResumeError,
    RunStillRunning,
    append,
)


def ask_graph(calls: list[str] | None = None, options=None) -> Graph:
    async def ask(state, ctx):
        if calls is not None:
            calls.append("ask")
        color = await ctx.request_input("Favourite colour?", options=options)
        return {"color": color}

    g = Graph("ask")
    g.add_node("ask", ask)
    g.add_node("paint", lambda s: {"painted": f"{s.color} wall"})
    g.add_edge(START, "ask")
    g.add_edge("ask", "paint")
    g.add_edge("paint", END)
    return g


def approval_graph(on_deny=None) -> Graph:
    g = Graph("review")
    g.add_node("draft", lambda s: {"text": "draft v1", "n": 1}, approval=True, on_deny=on_deny)
    g.add_node("publish", lambda s: {"published": s.text})
    g.add_edge(START, "draft")
    g.add_edge("draft", "publish")
    g.add_edge("publish", END)
    if on_deny:
        g.add_node(on_deny, lambda s: {"rewritten": True})
        g.add_edge(on_deny, END)
    return g


class TestLiveInput:
    async def test_answer_while_running(self):
        seen = []
        run = ask_graph().start({}, display=False, on_event=seen.append)
        pause = await run.next_pause(timeout=5)
        assert pause.kind == "input" and pause.prompt == "Favourite colour?" and pause.node == "ask"
        assert run.pauses == (pause,)
        with pytest.raises(RunStillRunning, match=r"is still running \(step \d\) — use `await run`"):
            run.result()
        run.answer("teal")
        result = await run
        assert result.outcome == "done"
        assert result.state["painted"] == "teal wall"
        types = [e.type for e in seen]
        assert types.index("interrupt") < types.index("answer") < types.index("node-exit")
        assert result.events() == seen

    async def test_options_are_enforced(self):
        run = ask_graph(options=["red", "blue"]).start({}, display=False)
        pause = await run.next_pause(timeout=5)
        assert pause.options == ("red", "blue") and pause.input_kind == "choice"
        with pytest.raises(ResumeError, match="'green' is not one of the options"):
            run.answer("green")
        assert run.pauses == (pause,)
        run.answer("blue")
        assert (await run).state["color"] == "blue"

    async def test_stale_and_duplicate_answers_are_refused(self):
        run = ask_graph().start({}, display=False)
        pause = await run.next_pause(timeout=5)
        with pytest.raises(ResumeError, match="'not-a-pause' is not a pause id"):
            run.answer("x", pause="not-a-pause")
        run.answer("first", pause=pause.id)
        told = f"pause {pause.id!r} is not open: it was answered already, with 'first', at node 'ask' (step 1)"
        with pytest.raises(ResumeError, match=re.escape(told)):  # a duplicate names how it was answered
            run.answer("second", pause=pause.id)
        result = await run
        assert result.state["color"] == "first"
        with pytest.raises(ResumeError, match=re.escape(told)):  # and so does a late one
            run.answer("late", pause=pause.id)
        with pytest.raises(NoPendingRequest, match=r"waits for no answer \(it has finished\)"):
            run.answer("late")

    async def test_several_pending_requests_answered_by_id(self):
        async def both(state, ctx):
            a, b = await asyncio.gather(
                ctx.request_input("first name?", slot="first"),
                ctx.request_input("last name?", slot="last"),
            )
            return {"name": f"{a} {b}"}

        g = Graph("names")
        g.add_node("both", both)
        g.add_edge(START, "both")
        g.add_edge("both", END)
        asked = []
        both_open = asyncio.Event()

        def on_event(event):
            if event.type == "interrupt":
                asked.append(event.pause)
                if len(asked) == 2:
                    both_open.set()

        run = g.start({}, display=False, on_event=on_event)
        await asyncio.wait_for(both_open.wait(), timeout=5)
        assert set(run.pauses) == set(asked) and {p.prompt for p in asked} == {"first name?", "last name?"}
        with pytest.raises(ResumeError, match="waits for 2 answers; give them by pause id"):
            run.answer("x")
        by_prompt = {p.prompt: p for p in run.pauses}
        run.answer("Lovelace", pause=by_prompt["last name?"].id)
        # A second answer to it is refused, not given to the question still open.
        with pytest.raises(ResumeError, match="is not open: it was answered already"):
            run.answer("Byron", pause=by_prompt["last name?"].id)
        assert run.pauses == (by_prompt["first name?"],)
        run.answer("Ada", pause=by_prompt["first name?"].id)
        assert (await run).state["name"] == "Ada Lovelace"

    async def test_answer_with_nothing_pending(self):
        run = ask_graph().start({}, display=False)
        pause = await run.next_pause(timeout=5)
        run.answer("x", pause=pause.id)
        await run
        with pytest.raises(NoPendingRequest, match="waits for no answer .it has finished."):
            run.answer("again")

    async def test_next_pause_returns_none_when_the_run_ends(self):
        g = Graph("quick")
        g.add_node("a", lambda s: None)
        g.add_edge(START, "a")
        g.add_edge("a", END)
        run = g.start({}, display=False)
        assert await run.next_pause(timeout=5) is None

    async def test_steer_reaches_the_next_step(self):
        got = []

        async def wait(state, ctx):
            await ctx.request_input("go?")

        g = Graph("steer")
        g.add_node("wait", wait)
        g.add_node("agent", lambda s, ctx: got.extend(ctx.take_steering()))
        g.add_edge(START, "wait")
        g.add_edge("wait", "agent")
        g.add_edge("agent", END)
        run = g.start({}, display=False)
        await run.next_pause(timeout=5)
        run.steer("focus on prices")
        run.answer("yes")
        await run
        assert got == ["focus on prices"]


class TestDurableInput:
    def test_invoke_never_waits(self):
        calls = []
        result = ask_graph(calls).invoke({})
        assert result.outcome == "interrupted"
        assert result.pauses[0].prompt == "Favourite colour?"
        # The reason names the node and the prompt, and says how to answer instead of waiting:
        assert result.reason == (
            f"waiting for input at node 'ask': Favourite colour? — answer with g.invoke(Resume(result, answer)) or "
            f"g.invoke(Resume({result.thread!r}, answer, pause={result.pauses[0].id!r})); "
            "for live answers use run = g.start(...) and `await run`"
        )
        done = ask_graph(calls).invoke(Resume(result.thread, "ochre"))
        assert done.outcome == "done" and done.state["painted"] == "ochre wall"
        types = [e.type for e in done.events()]
        assert types[:3] == ["run-start", "route", "node-enter"] and types[-1] == "done"
        # The interrupted node ran again from its start, and got the stored answer.
        assert calls == ["ask", "ask"]
        assert done.path == ["ask", "paint"]

    async def test_invoke_inside_a_running_loop_does_not_deadlock(self):
        result = ask_graph().invoke({})
        assert result.outcome == "interrupted"
        assert result.pauses[0].prompt == "Favourite colour?" and result.pauses[0].node == "ask"
        assert result.path == [] and result.state == {}
        done = ask_graph().invoke(Resume(result.thread, "ochre"))
        assert done.outcome == "done" and done.state["painted"] == "ochre wall"

    async def test_astream_over_a_pause_ends_interrupted(self):
        seen = []

        async def consume():
            async for event in ask_graph().astream({}):
                seen.append(event)

        await asyncio.wait_for(consume(), timeout=5)  # the stream ends by itself
        assert [e.type for e in seen] == ["run-start", "route", "node-enter", "interrupt", "done"]
        interrupt, done = seen[-2:]
        assert (interrupt.pause.kind, interrupt.pause.node, interrupt.pause.prompt) == (
            "input",
            "ask",
            "Favourite colour?",
        )
        assert done.outcome == "interrupted"
        assert done.reason.startswith(
            "waiting for input at node 'ask': Favourite colour? — answer with g.invoke(Resume("
        )
        assert {e.thread for e in seen} == {done.thread}
        # Nothing is lost: the streamed run resumes like an invoked one.
        resumed = ask_graph().invoke(Resume(done.thread, "ochre"))
        assert resumed.outcome == "done" and resumed.state["painted"] == "ochre wall"

    async def test_durable_start(self):
        cp = MemoryCheckpointer()
        result = await ask_graph().start({}, durable=True, checkpointer=cp, display=False)
        assert result.outcome == "interrupted"
        saved = cp.get(result.thread)
        assert saved.status == "interrupted" and saved.pauses == result.pauses and saved.next == "ask"
        assert (await ask_graph().ainvoke(Resume(result.thread, "red"), checkpointer=cp)).state["color"] == "red"

    def test_resume_needs_an_answer(self):
        result = ask_graph().invoke({})
        with pytest.raises(ResumeError, match="is waiting for input at node 'ask' .'Favourite colour.'.; pass answer="):
            ask_graph().invoke(Resume(result.thread))

    def test_resume_checks_options(self):
        result = ask_graph(options=["a", "b"]).invoke({})
        with pytest.raises(ResumeError, match="'c' is not one of the options"):
            ask_graph(options=["a", "b"]).invoke(Resume(result.thread, "c"))

    def test_resume_unknown_thread(self):
        with pytest.raises(ResumeError, match="no checkpoint for thread 'nope'"):
            ask_graph().invoke(Resume("nope", "x"))

    def test_finished_runs_cannot_be_resumed(self):
        cp = MemoryCheckpointer()
        result = ask_graph().invoke({}, checkpointer=cp)
        ask_graph().invoke(Resume(result.thread, "x"), checkpointer=cp)
        with pytest.raises(ResumeError, match="already finished .done.; fork it"):
            ask_graph().invoke(Resume(result.thread, "y"), checkpointer=cp)


class TestApproval:
    async def test_live_approve(self):
        run = approval_graph().start({}, display=False)
        pause = await run.next_pause(timeout=5)
        assert pause.kind == "approval" and pause.node == "draft"
        assert run.state["text"] == "draft v1"  # the node already ran
        run.approve()
        result = await run
        assert result.outcome == "done" and result.state["published"] == "draft v1"

    async def test_live_events_announce_each_pause_once_in_trace_order(self):
        seen = []
        run = approval_graph().start({}, display=False, on_event=seen.append)
        await run.next_pause(timeout=5)
        run.approve()
        result = await run
        kinds = [(e.type, getattr(e, "node", None) or getattr(e, "target", None)) for e in seen]
        assert kinds == [
            ("run-start", None),
            ("route", "draft"),
            ("node-enter", "draft"),
            ("node-exit", "draft"),
            ("interrupt", None),
            ("answer", None),
            ("route", "publish"),
            ("node-enter", "publish"),
            ("node-exit", "publish"),
            ("route", "__end__"),
            ("done", None),
        ]
        assert [e.type for e in result.events()] == [e.type for e in seen]

    def test_routing_after_a_durable_approval_sees_ctx(self):
        g = Graph("review")
        g.add_node("draft", lambda s: {"text": "v1"}, approval=True)
        g.add_node("publish", lambda s: {"published": s.text})
        g.add_edge(START, "draft")
        g.add_edge("draft", "publish", when=lambda s, ctx: ctx.visit == 1, label="first visit")
        g.add_edge("draft", END)
        g.add_edge("publish", END)
        paused = g.invoke({})
        assert paused.outcome == "interrupted"
        done = g.invoke(Resume(paused.thread, True))
        assert done.outcome == "done" and done.path == ["draft", "publish"]

    async def test_live_approve_with_an_edit(self):
        run = approval_graph().start({}, display=False)
        await run.next_pause(timeout=5)
        run.approve(update={"text": "draft v2 (edited)"})
        result = await run
        assert result.state["published"] == "draft v2 (edited)"
        assert result.history[0].edit == {"text": "draft v2 (edited)"}
        assert result.state_at(1)["text"] == "draft v2 (edited)"

    async def test_bad_edit_is_rejected_and_the_pause_stays_open(self):
        from nbgraph import InvalidUpdate

        class S(pydantic.BaseModel):
            text: str = ""
            n: int = 0
            published: str = ""

        g = Graph("typed", state=S)
        g.add_node("draft", lambda s: {"text": "v1"}, approval=True)
        g.add_edge(START, "draft")
        g.add_edge("draft", END)
        run = g.start({}, display=False)
        await run.next_pause(timeout=5)
        with pytest.raises(InvalidUpdate, match="field 'n'"):
            run.approve(update={"n": "not a number"})
        assert len(run.pauses) == 1
        run.approve(update={"n": 3})
        assert (await run).state.n == 3

    async def test_live_deny_ends_denied(self):
        run = approval_graph().start({}, display=False)
        await run.next_pause(timeout=5)
        run.deny()
        result = await run
        assert result.outcome == "denied"
        assert result.reason == "approval of 'draft' was denied"
        assert "published" not in result.state

    async def test_deny_goes_to_on_deny(self):
        run = approval_graph(on_deny="rewrite").start({}, display=False)
        await run.next_pause(timeout=5)
        run.deny()
        result = await run
        assert result.outcome == "done" and result.path == ["draft", "rewrite"]
        edge = result.history[0].edge
        assert (edge.target, edge.label) == ("rewrite", "denied")

    def test_durable_deny_goes_to_on_deny(self):
        paused = approval_graph(on_deny="rewrite").invoke({})
        result = approval_graph(on_deny="rewrite").invoke(Resume(paused.thread, False))
        assert result.path == ["draft", "rewrite"] and result.state["rewritten"] is True

    def test_durable_approve_with_edit(self):
        result = approval_graph().invoke({})
        assert result.outcome == "interrupted" and result.pauses[0].kind == "approval"
        assert result.state["text"] == "draft v1"
        done = approval_graph().invoke(Resume(result.thread, {"approved": True, "update": {"text": "fixed"}}))
        assert done.outcome == "done" and done.state["published"] == "fixed"
        assert done.path == ["draft", "publish"]

    @pytest.mark.parametrize("live", [True, False])
    async def test_goto_from_an_approved_node_is_kept(self, live):
        from nbgraph import Goto

        g = Graph("goto-review")
        g.add_node("draft", lambda s: Goto("shortcut", update={"text": "v1"}), approval=True)
        g.add_node("publish", lambda s: {"published": True})
        g.add_node("shortcut", lambda s: {"shortcut": True})
        g.add_edge(START, "draft")
        g.add_edge("draft", "publish")
        g.add_edge("publish", END)
        g.add_edge("shortcut", END)
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("error")
            g.compile()  # only a Goto leads to 'shortcut': where it goes cannot be known, so no warning
        if live:
            run = g.start({}, display=False)
            await run.next_pause(timeout=5)
            run.approve()
            result = await run
        else:
            paused = g.invoke({})
            result = g.invoke(Resume(paused.thread, True))
        assert result.path == ["draft", "shortcut"]
        assert result.history[0].edge.label == "goto"

    def test_durable_deny(self):
        result = approval_graph().invoke({})
        assert approval_graph().invoke(Resume(result.thread, False)).outcome == "denied"

    def test_approval_answer_must_be_a_verdict(self):
        result = approval_graph().invoke({})
        with pytest.raises(ResumeError, match="an approval answer must be True, False or"):
            approval_graph().invoke(Resume(result.thread, "sure"))


class TestStopWaiting:
    """A live run told that nobody will answer ends interrupted at its pauses, resumable."""

    async def test_an_input_ends_interrupted_with_the_reason_and_resumes(self):
        g = ask_graph()
        run = g.start({}, display=False)
        await run.next_pause(timeout=5)
        run.viewed.stop_waiting("nobody is looking")
        result = await asyncio.wait_for(run, 10)
        assert result.outcome == "interrupted"
        assert result.reason == "waiting for input at node 'ask': Favourite colour? — nobody is looking"
        assert [p.prompt for p in result.pauses] == ["Favourite colour?"]
        done = g.invoke(Resume(result, "teal"), checkpointer=run.checkpointer)
        assert done.outcome == "done" and done.state["painted"] == "teal wall"

    async def test_an_approval_and_branches_asking_at_once(self):
        async def ask(item, ctx):
            return {"said": [await ctx.request_input(f"{item}?")]}

        class Said(pydantic.BaseModel):
            said: Annotated[list[str], append] = []

        g = Graph("both", state=Said)
        g.add_node("plan", lambda s: None)
        g.add_node("ask", ask)
        g.add_node("check", lambda s: None, approval=True)
        g.add_edge(START, "plan")
        g.add_edge("plan", "ask", each=lambda s: ["a", "b"])
        g.add_edge("ask", "check")
        g.add_edge("check", END)
        run = g.start({}, display=False)
        for _ in range(10_000):  # loop turns, not time: both branches open their pause
            if len(run.pauses) == 2:
                break
            await asyncio.sleep(0)
        assert len(run.pauses) == 2
        run.viewed.stop_waiting("gone")
        first = await asyncio.wait_for(run, 10)
        assert first.outcome == "interrupted" and first.reason.endswith(" — gone")
        assert sorted(p.prompt for p in first.pauses) == ["a?", "b?"]
        # The run is no longer live: the approval it reaches after the answers interrupts too.
        second = g.invoke(
            Resume(first, {p.id: p.prompt[0].upper() for p in first.pauses}), checkpointer=run.checkpointer
        )
        assert second.outcome == "interrupted" and second.pauses[0].kind == "approval"
        done = g.invoke(Resume(second, True), checkpointer=run.checkpointer)
        assert done.outcome == "done" and done.state.said == ["A", "B"]

    async def test_a_live_approval_unwinds_with_its_step_kept(self):
        calls = []
        g = Graph("approve")
        g.add_node("draft", lambda s: calls.append(1) or {"text": "hi"}, approval=True)
        g.add_edge(START, "draft")
        g.add_edge("draft", END)
        run = g.start({}, display=False)
        pause = await run.next_pause(timeout=5)
        assert pause.kind == "approval"
        run.viewed.stop_waiting("no one")
        result = await asyncio.wait_for(run, 10)
        assert result.outcome == "interrupted" and result.reason.endswith(" — no one")
        done = g.invoke(Resume(result, True), checkpointer=run.checkpointer)
        assert done.outcome == "done" and done.state["text"] == "hi" and calls == [1]  # the step was not run again


def test_a_state_with_a_required_field_resumes_and_forks():
    class Ticket(pydantic.BaseModel):
        topic: str
        answer: str = ""

    async def ask(state, ctx):
        return {"answer": await ctx.request_input("Answer?")}

    g = Graph("required", state=Ticket)
    g.add_node("ask", ask)
    g.add_edge(START, "ask")
    g.add_edge("ask", END)
    store = MemoryCheckpointer()
    paused = g.invoke({"topic": "tides"}, checkpointer=store)
    assert g.invoke(Fork(paused, step=0), checkpointer=store).outcome == "interrupted"
    done = g.invoke(Resume(paused, "high"), checkpointer=store)
    assert (done.outcome, done.state.topic, done.state.answer) == ("done", "tides", "high")
