"""Budget(ask=True): a budget about to be exceeded pauses the run with its figures; raising it goes on."""

from __future__ import annotations

import pytest
from turns import within

from nbgraph import (
    END,
    START,
    Budget,
    Graph,
    MemoryCheckpointer,
    MessagesState,
    Resume,
    ResumeError,
    ScriptedModel,
    SQLiteCheckpointer,
    llm_node,
    tool,
)
from nbgraph.llm.model import Reply


def spender(calls: list[int], tokens: int = 100, rounds: int = 10) -> Graph:
    """A loop whose node uses ``tokens`` a step, ``rounds`` times."""

    def work(state, ctx):
        calls.append(state.get("n", 0))
        ctx.add_usage(tokens=tokens, cost=tokens / 10_000, turns=1)
        return {"n": state.get("n", 0) + 1}

    g = Graph("spender")
    g.add_node("work", work)
    g.add_edge(START, "work")
    g.add_edge("work", "work", when=lambda s: s["n"] < rounds, label="more")
    g.add_edge("work", END)
    return g


def test_without_ask_a_budget_still_aborts():
    result = spender([]).invoke({}, budget=Budget(tokens=450))
    assert (result.outcome, result.reason) == ("aborted", "budget exceeded: tokens 500 >= 450")


def test_the_run_pauses_before_the_step_that_could_pass_the_limit_with_its_figures():
    calls: list[int] = []
    result = spender(calls).invoke({}, budget=Budget(tokens=450, ask=True))
    assert result.outcome == "interrupted" and len(calls) == 4  # 400 used; a fifth step would reach 500
    pause = result.pauses[0]
    assert (pause.kind, pause.node, pause.step) == ("budget", "work", 5)
    figures = pause.budget
    assert figures.used == {"turns": 4, "tokens": 400, "cost": 0.04}
    assert figures.limits == {"tokens": 450} and figures.next == {"tokens": 100} and figures.over == ("tokens",)
    assert figures.suggested == {"tokens": 900}
    assert pause.prompt == "budget about to be exceeded: tokens 400 of 450 used, the next step may take 100"
    assert pause.reruns is None  # nothing of the node has run


def test_raising_it_goes_on_with_nothing_run_twice_and_the_raise_is_kept_by_the_thread():
    calls: list[int] = []
    g = spender(calls)
    store = MemoryCheckpointer()
    first = g.invoke({}, checkpointer=store, budget=Budget(tokens=450, ask=True))
    second = g.invoke(
        Resume(first, {"tokens": 800}), checkpointer=store
    )  # no budget passed: the thread's raised one holds
    assert second.outcome == "interrupted" and second.pauses[0].budget.limits == {"tokens": 800}
    assert second.pauses[0].prompt == "budget about to be exceeded: tokens 800 of 800 used, the next step may take 100"
    done = g.invoke(Resume(second, Budget(tokens=5000)), checkpointer=store)
    assert (done.outcome, done.state["n"], done.tokens) == ("done", 10, 1000)
    assert calls == list(range(10))  # every step ran once


def test_bad_raises_and_a_missing_answer_are_refused_naming_the_limit():
    g = spender([])
    paused = g.invoke({}, budget=Budget(tokens=450, ask=True))
    with pytest.raises(ResumeError, match=r"the raised tokens limit 300 is not above what the run has used \(400\)"):
        g.invoke(Resume(paused, {"tokens": 300}))
    with pytest.raises(ResumeError, match="raises turns, tokens, cost; not 'seconds'"):
        g.invoke(Resume(paused, {"seconds": 10}))
    with pytest.raises(
        ResumeError, match=r"pass the raised limits, answer=\{'tokens': \.\.\.\} \(suggested: \{'tokens': 900\}\)"
    ):
        g.invoke(Resume(paused))
    assert g.invoke(Resume(paused, {"tokens": 2000})).outcome == "done"  # nothing was spent by the refusals


def test_stop_ends_the_run_aborted_with_the_figures():
    g = spender([])
    stopped = g.invoke(Resume(g.invoke({}, budget=Budget(cost=0.045, ask=True)), "stop"))
    assert stopped.outcome == "aborted"
    assert (
        "stopped at the budget pause before 'work'" in stopped.reason and "cost 0.0400 of 0.0450 used" in stopped.reason
    )


async def test_a_live_run_waits_for_the_raise_and_goes_on():
    calls: list[int] = []
    run = spender(calls).start({}, budget=Budget(turns=3, ask=True), display=False)
    pause = await within(run.next_pause())
    # Three turns may all be used: it pauses when they are, before a fourth step.
    assert pause.kind == "budget" and pause.budget.over == ("turns",) and len(calls) == 3
    assert pause.prompt == "budget about to be exceeded: turns 3 of 3 used, the next step may take 1"
    with pytest.raises(ResumeError, match="not above what the run has used"):
        run.answer({"turns": 3}, pause=pause.id)
    run.answer({"turns": 100})
    result = await within(run)
    assert (result.outcome, len(calls)) == ("done", 10)


def test_an_llm_call_that_finds_the_budget_used_up_pauses_inside_its_node_and_says_a_resume_repeats_it(tmp_path):
    looked: list[str] = []

    @tool
    def look(word: str) -> str:
        """Look a word up."""
        looked.append(word)
        return f"{word}: a greeting"

    def script(messages):  # the same conversation gets the same reply, as from a real model
        return (
            Reply(text="It is a greeting.")
            if messages[-1].role == "tool"
            else Reply(tool_calls=[("look", {"word": "hi"})])
        )

    model = ScriptedModel(script)
    g = Graph("chat", state=MessagesState, model=model)
    g.add_node("answer", llm_node(system="Answer.", tools=[look]))
    g.add_edge(START, "answer")
    g.add_edge("answer", END)
    store = SQLiteCheckpointer(tmp_path / "runs.db")
    # The tool round's second model call finds the one turn used.
    paused = g.invoke(
        {"messages": [{"role": "user", "content": "hi?"}]}, checkpointer=store, budget=Budget(turns=1, ask=True)
    )
    pause = paused.pauses[0]
    assert (pause.kind, pause.node, pause.budget.over) == ("budget", "answer", ("turns",))
    assert (pause.reruns.model_calls, pause.reruns.tool_calls) == (1, ("look",))
    done = g.invoke(Resume(paused, {"turns": 5}), checkpointer=store)
    assert done.outcome == "done" and done.state.messages[-1].content == "It is a greeting."
    assert looked == ["hi", "hi"] and len(model.calls) == 3  # as the pause said: the node ran again from its start


async def test_a_live_run_nobody_will_answer_at_a_budget_pause_ends_interrupted_and_resumes():
    calls: list[int] = []
    run = spender(calls).start({}, display=False, budget=Budget(tokens=450, ask=True))
    pause = await within(run.next_pause())
    assert pause is not None and pause.kind == "budget"
    run.viewed.stop_waiting("nobody is here")  # what a notebook run headless does when nobody clicks
    paused = await within(run)
    assert (paused.outcome, [p.kind for p in paused.pauses]) == ("interrupted", ["budget"])
    assert paused.reason.endswith("nobody is here") and len(calls) == 4
    done = await spender(calls).ainvoke(Resume(paused, {"tokens": 2000}))
    assert done.outcome == "done", done.reason
    assert calls == list(range(10))  # the fifth step ran once, after the raise
