"""Honest resume: a pause inside a node says, before anyone answers, what a resume runs again."""

from __future__ import annotations

from turns import within

from nbgraph import END, START, Graph, MemoryCheckpointer, MessagesState, Resume, ScriptedModel, llm_node, tool
from nbgraph.llm.model import Reply


def drafting_graph(searches: list[str]) -> Graph:
    """A node that asks a model (which calls a tool) for a draft, then asks a person about it."""

    @tool
    def search(query: str) -> str:
        """Search the web."""
        searches.append(query)
        return f"results for {query}"

    replies = [Reply(tool_calls=[("search", {"query": "tides"})]), Reply(text="Draft: tides are ...")] * 2
    research = llm_node(system="Write a draft.", tools=[search], model=ScriptedModel(replies))

    async def draft(state, ctx):
        update = await research(state, ctx)
        verdict = await ctx.request_input("Send this draft?", options=["yes", "no"])
        return {**update, "messages": [*update.get("messages", ()), {"role": "user", "content": verdict}]}

    g = Graph("drafting", state=MessagesState)
    g.add_node("draft", draft)
    g.add_edge(START, "draft")
    g.add_edge("draft", END)
    return g


def test_the_pause_names_the_calls_a_resume_makes_again_and_the_resume_makes_them():
    searches: list[str] = []
    g = drafting_graph(searches)
    events: list = []
    paused = g.invoke({"messages": [{"role": "user", "content": "tides"}]}, on_event=events.append)
    rerun = paused.pauses[0].reruns
    assert (rerun.path, rerun.model_calls, rerun.tool_calls) == ("draft", 2, ("search",))
    assert rerun.note == "a resume runs 'draft' again from its start, making 2 model calls and tool search again"
    # The event stream carries it before any answer.
    (interrupt,) = [e for e in events if e.type == "interrupt"]
    assert interrupt.pause.reruns == rerun
    assert interrupt.model_dump(mode="json")["pause"]["reruns"]["note"] == rerun.note

    resumed = g.invoke(Resume(paused, "yes"), on_event=events.append)
    assert resumed.outcome == "done"
    assert searches == ["tides", "tides"]  # what the note said: the tool ran again
    assert [e.rerun for e in events if e.type == "node-enter"] == [False, True]


async def test_a_live_answer_runs_nothing_again():
    searches: list[str] = []
    g = drafting_graph(searches)
    run = g.start({"messages": [{"role": "user", "content": "tides"}]}, display=False)
    pause = await within(run.next_pause())
    assert pause.reruns.tool_calls == ("search",)
    run.answer("yes")
    result = await within(run)
    assert result.outcome == "done" and searches == ["tides"]


def test_a_second_question_counts_the_answers_a_resume_gives_back():
    async def ask_twice(state, ctx):
        name = await ctx.request_input("Name?")
        age = await ctx.request_input("Age?")
        return {"who": f"{name} ({age})"}

    g = Graph("form")
    g.add_node("ask_twice", ask_twice)
    g.add_edge(START, "ask_twice")
    g.add_edge("ask_twice", END)
    store = MemoryCheckpointer()
    first = g.invoke({}, checkpointer=store)
    assert (
        first.pauses[0].reruns.answered == 0
        and first.pauses[0].reruns.note == "a resume runs 'ask_twice' again from its start"
    )
    second = g.invoke(Resume(first, "Ada"), checkpointer=store)
    assert second.pauses[0].reruns.answered == 1
    assert second.pauses[0].reruns.note.endswith("(its 1 earlier answer kept)")
    assert g.invoke(Resume(second, "36"), checkpointer=store).state["who"] == "Ada (36)"


def test_approvals_and_breakpoints_run_nothing_again():
    g = Graph("review")
    g.add_node("write", lambda s: {"text": "hi"}, approval=True)
    g.add_node("send", lambda s: {"sent": True})
    g.add_edge(START, "write")
    g.add_edge("write", "send")
    g.add_edge("send", END)
    g.breakpoints(before=["send"])
    approval = g.invoke({})
    assert approval.pauses[0].kind == "approval" and approval.pauses[0].reruns is None
    breakpoint = g.invoke(Resume(approval, True))
    assert breakpoint.pauses[0].kind == "breakpoint" and breakpoint.pauses[0].reruns is None
