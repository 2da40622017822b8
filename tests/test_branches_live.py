"""Branches that wait for people, answered live in every order, and what ``run.running``
and ``run.branches`` say while a map runs.

The test and the run share one loop: the test waits for the run by polling
``run.pauses`` or a queue the nodes fill, turn by turn, never by the clock.
"""

from __future__ import annotations

import asyncio
import itertools
from typing import Annotated

import pydantic
from turns import wait_until, within

from nbgraph import END, START, BranchState, Graph, Resume, SQLiteCheckpointer, append


class Names(pydantic.BaseModel):
    got: Annotated[list[str], append] = []
    last: str = ""


def asking(items, finished: list, calls: list | None = None) -> Graph:
    """plan -> ask (a branch per item, each asking a person) -> done."""

    async def ask(item, ctx):
        if calls is not None:
            calls.append(item)
        name = await ctx.request_input(f"name for {item}?", slot=f"name-{item}")
        finished.append(item)
        return {"got": [f"{item}:{name}"], "last": item}

    g = Graph("asks", state=Names)
    g.add_node("plan", lambda s: None)
    g.add_node("ask", ask)
    g.add_node("done", lambda s: None)
    g.add_edge(START, "plan")
    g.add_edge("plan", "ask", each=lambda s: list(items))
    g.add_edge("ask", "done")
    g.add_edge("done", END)
    return g


class TestEveryOrder:
    async def answer_in_every_order(self, items):
        finished: list[str] = []
        g = asking(items, finished)
        expected = [f"{item}:{item.upper()}" for item in items]
        orders = list(itertools.permutations(range(len(items))))
        for order in orders:
            finished.clear()
            run = g.start({}, display=False)
            await wait_until(lambda: len(run.pauses) == len(items))
            pauses = run.pauses
            assert [(p.node, p.branch, p.prompt) for p in pauses] == [
                ("ask", f"ask[{i}]", f"name for {item}?") for i, item in enumerate(items)
            ]
            for k in order:
                run.answer(items[k].upper(), pause=pauses[k].id)
                count = len(finished)
                await wait_until(lambda: len(finished) > count)  # that branch finished before the next answer
            result = await within(run)
            assert finished == [items[k] for k in order]
            assert result.outcome == "done", result.reason
            assert result.state.got == expected and result.state.last == items[-1]
            assert [(s.step, s.branch) for s in result.history] == [
                (1, None),
                *((2 + i, f"ask[{i}]") for i in range(len(items))),
                (2 + len(items), None),
            ]
        return len(orders)

    async def test_two_pauses(self):
        assert await self.answer_in_every_order(["x", "y"]) == 2

    async def test_five_pauses(self):
        assert await self.answer_in_every_order(["p", "q", "r", "s", "t"]) == 120


def mixed(calls: list) -> Graph:
    """A fan-out of three arms: one waits for an approval, two ask for input."""

    def draft(state):
        calls.append("draft")
        return {"got": ["draft"]}

    def asker(name):
        async def fn(state, ctx):
            calls.append(name)
            answer = await ctx.request_input(f"{name}?")
            return {"got": [f"{name}={answer}"]}

        return fn

    g = Graph("mixed", state=Names)
    g.add_node("plan", lambda s: None)
    g.add_node("draft", draft, approval=True)
    g.add_node("ask1", asker("ask1"))
    g.add_node("ask2", asker("ask2"))
    g.add_node("merge", lambda s: {"last": "+".join(s.got)})
    g.add_edge(START, "plan")
    g.add_edge("plan", ["draft", "ask1", "ask2"])
    g.add_edge(["draft", "ask1", "ask2"], "merge")
    g.add_edge("merge", END)
    return g


class TestMixedPauses:
    async def test_input_and_approval_pauses_in_branches_live(self):
        calls: list[str] = []
        g = mixed(calls)
        for order in itertools.permutations(range(3)):
            run = g.start({}, display=False)
            await wait_until(lambda: len(run.pauses) == 3)
            pauses = sorted(run.pauses, key=lambda p: p.branch)
            assert [(p.kind, p.branch, p.path) for p in pauses] == [
                ("input", "ask1", "ask1"),
                ("input", "ask2", "ask2"),
                ("approval", "draft", "draft"),
            ]
            answers = ["one", "two", {"approved": True, "update": {"got": ["edit"]}}]
            for k in order:
                run.answer(answers[k], pause=pauses[k].id)
            result = await within(run)
            assert result.outcome == "done", result.reason
            # Declaration order, the person's edit right after the step it corrects.
            assert result.state.got == ["draft", "edit", "ask1=one", "ask2=two"]
            assert result.state.last == "draft+edit+ask1=one+ask2=two"

    async def test_a_denied_branch_leaves_nothing(self):
        calls: list[str] = []
        g = mixed(calls)
        g.add_node("merge", lambda s: {"last": "merged"}, replace=True)
        run = g.start({}, display=False)
        await wait_until(lambda: len(run.pauses) == 3)
        for pause in run.pauses:
            run.answer(False if pause.kind == "approval" else "ok", pause=pause.id)
        result = await within(run)
        assert result.outcome == "done", result.reason
        assert result.state.got == ["ask1=ok", "ask2=ok"]
        denied = next(s for s in result.history if s.node == "draft")
        assert (denied.update, denied.edge.label) == (None, "denied")
        assert result.state.last == "merged"  # the join did not wait for the denied branch

    async def test_durable_partial_answers_run_no_finished_branch_again(self, tmp_path):
        calls: list[str] = []
        g = mixed(calls)
        store = SQLiteCheckpointer(str(tmp_path / "runs.db"))
        first = await g.ainvoke({}, checkpointer=store)
        assert first.outcome == "interrupted"
        assert sorted((p.kind, p.node) for p in first.pauses) == [
            ("approval", "draft"),
            ("input", "ask1"),
            ("input", "ask2"),
        ]
        assert sorted(calls) == ["ask1", "ask2", "draft"]
        by_node = {p.node: p for p in first.pauses}
        calls.clear()
        second = await g.ainvoke(Resume(first.thread, {by_node["draft"].id: True}), checkpointer=store)
        assert second.outcome == "interrupted"
        assert sorted(p.node for p in second.pauses) == ["ask1", "ask2"]
        assert sorted(calls) == ["ask1", "ask2"]  # the approved draft is not run again
        assert {p.id for p in second.pauses} == {by_node["ask1"].id, by_node["ask2"].id}
        calls.clear()
        third = await g.ainvoke(Resume(first.thread, {by_node["ask2"].id: "b"}), checkpointer=store)
        assert third.outcome == "interrupted" and [p.node for p in third.pauses] == ["ask1"]
        assert sorted(calls) == ["ask1", "ask2"]
        calls.clear()
        done = await g.ainvoke(Resume(first.thread, {by_node["ask1"].id: "a"}), checkpointer=store)
        assert done.outcome == "done", done.reason
        assert calls == ["ask1"]  # ask2 finished in the run before: kept, not asked again
        assert done.state.got == ["draft", "ask1=a", "ask2=b"]
        assert done.state.last == "draft+ask1=a+ask2=b"


async def test_running_and_branch_statuses_during_a_bounded_map():
    gates = {i: asyncio.Event() for i in range(1, 6)}
    entered: asyncio.Queue[int] = asyncio.Queue()

    async def work(item, ctx):
        entered.put_nowait(item)
        if item == 5:
            await ctx.request_input("five?")
        await gates[item].wait()
        if item == 2:
            raise ValueError("two fails")
        return {"got": [str(item)]}

    g = Graph("statuses", state=Names, settle="all", max_concurrency=2)
    g.add_node("plan", lambda s: None)
    g.add_node("work", work)
    g.add_node("end", lambda s: None)
    g.add_edge(START, "plan")
    g.add_edge("plan", "work", each=lambda s: [1, 2, 3, 4, 5])
    g.add_edge("work", "end")
    g.add_edge("end", END)
    run = g.start({}, display=False)

    def statuses():
        return [b.status for b in run.branches]

    assert [await within(entered.get()), await within(entered.get())] == [1, 2]
    assert run.viewed.running == ("work", "work")
    assert run.branches == [
        BranchState("work", "work", f"work[{i}]", "running" if i < 2 else "waiting") for i in range(5)
    ]
    gates[1].set()
    assert await within(entered.get()) == 3
    assert statuses() == ["done", "running", "running", "waiting", "waiting"]
    gates[2].set()
    assert await within(entered.get()) == 4
    assert statuses() == ["done", "failed", "running", "running", "waiting"]
    gates[3].set()
    assert await within(entered.get()) == 5
    await wait_until(lambda: len(run.pauses) == 1)
    assert statuses() == ["done", "failed", "done", "running", "paused"]  # 5 waits for a person
    assert run.viewed.running == ("work", "work")
    run.answer("yes", pause=run.pauses[0].id)
    await wait_until(lambda: statuses()[4] == "running")
    gates[4].set()
    gates[5].set()
    result = await within(run)
    assert result.outcome == "done" and result.state.got == ["1", "3", "4", "5"]
    assert run.branches == [] and run.viewed.running == ()


async def test_branches_waiting_for_people_stop_their_own_clocks():
    asked = asyncio.Event()

    async def ask(item, ctx):
        if item == 0:
            await asked.wait()  # its clock runs while its sibling's node starts and asks
        else:
            asked.set()
        return {"got": [f"{item}:{await ctx.request_input(f'{item}?')}"]}

    g = Graph("clocks", state=Names)
    g.add_node("plan", lambda s: None)
    g.add_node("ask", ask, timeout=0.05)
    g.add_edge(START, "plan")
    g.add_edge("plan", "ask", each=lambda s: [0, 1])
    g.add_edge("ask", END)
    run = g.start({}, display=False)
    await wait_until(lambda: len(run.pauses) == 2)
    await asyncio.sleep(0.15)  # the people take three timeouts to answer: that time is not the nodes'
    for pause in run.pauses:
        run.answer("ok", pause=pause.id)
    result = await within(run)
    assert result.outcome == "done", result.reason
    assert result.state.got == ["0:ok", "1:ok"]
    durations = [s.duration for s in result.history if s.branch]
    assert len(durations) == 2 and all(0 <= d < 0.05 for d in durations), durations


async def test_a_maps_branches_each_approved_live_route_once_after_the_last():
    """A map whose node asks for approval: every branch's step is approved where it waits; the
    map routes once, after its last branch, and the run announces that route once."""

    class Words(pydantic.BaseModel):
        items: list[str] = []
        got: Annotated[list[str], append] = []

    g = Graph("approve-each", state=Words)
    g.add_node("plan", lambda s: {"items": ["a", "b", "c"]})

    async def word(item):
        return {"got": [item.upper()]}

    g.add_node("word", word, approval=True)
    g.add_edge(START, "plan")
    g.add_edge("plan", "word", each=lambda s: s.items)
    g.add_edge("word", END)
    events = []
    run = g.start({}, display=False, on_event=events.append)
    await wait_until(lambda: len(run.pauses) == 3)
    for pause in run.pauses:
        run.answer(True, pause=pause.id)
    result = await within(run)
    assert (result.outcome, result.state.got) == ("done", ["A", "B", "C"])
    routes = [(e.source, e.target, e.branch) for e in events if e.type == "route"]
    assert routes == [("__start__", "plan", None), ("plan", "word", None), ("word", "__end__", "word[2]")]
    assert [e.branch for e in events if e.type == "node-exit" and e.node == "word"] == ["word[0]", "word[1]", "word[2]"]
