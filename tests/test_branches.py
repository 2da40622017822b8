"""Parallel branches: Send items, static fan-outs, maps and joins; how they fold, fail,
stop and share a run's limits.

Branches are tasks on the test's own loop (``ainvoke`` / ``start``), so the nodes
synchronise with the test through asyncio events; the only sleeps are the seeded
random delays that scramble the order branches finish in.
"""

from __future__ import annotations

import asyncio
import random
from typing import Annotated

import pydantic
import pytest
from turns import wait_until

from nbgraph import END, START, Budget, Graph, Resume, Send, SQLiteCheckpointer, append

RUNS = 50


class Bag(pydantic.BaseModel):
    items: list[int] = []
    got: Annotated[list[str], append] = []
    last: str = ""


async def forever(cancelled: list, name) -> None:
    """Wait until cancelled, counting the cancellation."""
    try:
        await asyncio.Event().wait()
    except asyncio.CancelledError:
        cancelled.append(name)
        raise


def mapped(work, *, items=(1, 2, 3, 4), after=None, **options) -> Graph:
    """plan -> work (one branch per item) -> end."""
    g = Graph("mapped", state=Bag, **options)
    g.add_node("plan", lambda s: {"items": list(items)})
    g.add_node("work", work)
    g.add_node("end", after or (lambda s: None))
    g.add_edge(START, "plan")
    g.add_edge("plan", "work", each=lambda s: s.items)
    g.add_edge("work", "end")
    g.add_edge("end", END)
    return g


# -- 1. the fold follows the declared order, never the finish order ----------------------------


class TestDeterministicMerge:
    async def test_send_items_fold_in_the_order_returned(self):
        rng = random.Random(13)
        delays: dict[int, float] = {}
        finished: list[int] = []
        order: list[int] = []

        def split(state):
            return [{"last": "split"}, *(Send("work", i) for i in order)]

        async def work(item):
            await asyncio.sleep(delays[item])
            finished.append(item)
            return {"got": [f"w{item}"], "last": f"w{item}"}

        g = Graph("send", state=Bag)
        g.add_node("split", split)
        g.add_node("work", work)
        g.add_edge(START, "split")
        g.add_edge("split", END)
        g.add_edge("work", END)
        scrambled = 0
        for _ in range(RUNS):
            order[:] = rng.sample(range(6), 6)
            delays.update({i: rng.uniform(0, 0.004) for i in range(6)})
            finished.clear()
            result = await g.ainvoke({})
            assert result.outcome == "done", result.reason
            assert result.state.got == [f"w{i}" for i in order]
            assert result.state.last == f"w{order[-1]}"  # overwrite: the last in Send order wins
            assert [s.branch for s in result.history[1:]] == [f"work[{k}]" for k in range(6)]
            scrambled += finished != order
        assert scrambled > RUNS // 2  # the finish order really did differ from the Send order

    async def test_static_fan_out_folds_in_declaration_order(self):
        rng = random.Random(7)
        delays: dict[str, float] = {}
        finished: list[str] = []
        arms = ["d", "b", "a", "c"]
        merged: list[list[str]] = []

        def arm(name):
            async def fn(state):
                await asyncio.sleep(delays[name])
                finished.append(name)
                return {"got": [name], "last": name}

            return fn

        g = Graph("fan", state=Bag)
        g.add_node("plan", lambda s: None)
        for name in arms:
            g.add_node(name, arm(name))
        g.add_node("merge", lambda s: merged.append(list(s.got)))
        g.add_edge(START, "plan")
        g.add_edge("plan", arms)
        g.add_edge(arms, "merge")
        g.add_edge("merge", END)
        scrambled = 0
        for _ in range(RUNS):
            delays.update({name: rng.uniform(0, 0.004) for name in arms})
            finished.clear()
            result = await g.ainvoke({})
            assert result.outcome == "done", result.reason
            assert result.state.got == arms and result.state.last == "c"
            assert [s.branch for s in result.history if s.node in arms] == arms
            scrambled += finished != arms
        assert merged == [arms] * RUNS  # merge ran once per run, after every arm had folded
        assert scrambled > RUNS // 2

    async def test_map_folds_in_item_order(self):
        rng = random.Random(99)
        delays: dict[int, float] = {}
        finished: list[int] = []

        async def work(item):
            await asyncio.sleep(delays[item])
            finished.append(item)
            return {"got": [str(item)], "last": str(item)}

        items = [5, 3, 8, 1, 9, 2, 7]
        g = mapped(work, items=items)
        scrambled = 0
        for _ in range(RUNS):
            delays.update({i: rng.uniform(0, 0.004) for i in items})
            finished.clear()
            result = await g.ainvoke({})
            assert result.state.got == [str(i) for i in items] and result.state.last == "7"
            # The map routes on once, after its last branch, into one run of "end".
            assert [(s.node, s.edge.target if s.edge else None) for s in result.history[-2:]] == [
                ("work", "end"),
                ("end", END),
            ]
            scrambled += finished != items
        assert scrambled > RUNS // 2


# -- 2. settling: every branch, or the first failure --------------------------------------------


class TestSettle:
    async def test_all_records_each_failure_and_keeps_the_rest(self):
        async def work(item):
            await asyncio.sleep(0)
            if item % 2 == 0:
                raise ValueError(f"no even numbers: {item}")
            return {"got": [str(item)]}

        ended = []
        result = await mapped(work, items=[1, 2, 3, 4, 5], settle="all", after=lambda s: ended.append(1)).ainvoke({})
        assert result.outcome == "done", result.reason
        assert result.state.got == ["1", "3", "5"]
        errors = {s.branch: s.error for s in result.history if s.error}
        assert errors == {"work[1]": "ValueError: no even numbers: 2", "work[3]": "ValueError: no even numbers: 4"}
        assert ended == [1]  # routing went on past the failures

    async def test_all_goes_on_when_the_last_or_every_branch_fails(self):
        for failing, got in (({3}, ["1", "2"]), ({1, 2, 3}, [])):

            async def work(item):
                if item in failing:
                    raise ValueError(f"bad {item}")
                return {"got": [str(item)]}

            ended = []
            result = await mapped(work, items=[1, 2, 3], settle="all", after=lambda s: ended.append(1)).ainvoke({})
            assert (result.outcome, result.state.got, ended) == ("done", got, [1]), failing
            assert [s.error for s in result.history if s.node == "work"] == [
                f"ValueError: bad {i}" if i in failing else None for i in (1, 2, 3)
            ]

    async def test_all_records_timeouts_and_failed_sub_graphs_and_joins_go_on(self):
        gate = asyncio.Event()

        async def slow(state):
            await gate.wait()  # never set: the node's timeout cancels it

        def boom(state):
            raise ValueError("inner boom")

        inner = Graph("inner")
        inner.add_node("ok", lambda s: {"inner": 1})
        inner.add_node("boom", boom)
        inner.add_edge(START, "ok")
        inner.add_edge("ok", "boom")
        inner.add_edge("boom", END)
        merged = []
        g = Graph("arms", state=Bag, settle="all")
        g.add_node("plan", lambda s: None)
        g.add_node("slow", slow, timeout=0.02)
        g.add_node("sub", inner, input=lambda s: {}, output=lambda c: {"got": ["sub"]})
        g.add_node("fine", lambda s: {"got": ["fine"]})
        g.add_node("merge", lambda s: merged.append(list(s.got)))
        g.add_edge(START, "plan")
        g.add_edge("plan", ["slow", "sub", "fine"])
        g.add_edge(["slow", "sub", "fine"], "merge")
        g.add_edge("merge", END)
        async with asyncio.timeout(10):
            result = await g.ainvoke({})
        assert result.outcome == "done", result.reason
        assert merged == [["fine"]]  # the join did not wait for the branches that failed
        assert [(s.path, s.branch, s.error) for s in result.history] == [
            ("plan", None, None),
            ("slow", "slow", "node 'slow' timed out after 0.02 s (timeout=0.02) at step 2"),
            ("sub/ok", "sub", None),
            ("sub/boom", "sub", "ValueError: inner boom"),
            ("sub", "sub", "node 'sub/boom' failed at step 2: ValueError: inner boom"),
            ("fine", "fine", None),
            ("merge", None, None),
        ]

    async def test_fail_fast_cancels_siblings_and_a_fixed_node_resumes(self, tmp_path):
        calls: list[int] = []
        cancelled: list[int] = []
        all_in = asyncio.Event()

        async def work(item):
            calls.append(item)
            if len(calls) == 4:
                all_in.set()
            if item == 1:
                return {"got": ["1"]}  # finishes before the failure
            if item == 2:
                await all_in.wait()
                raise ValueError("cannot do 2")
            await forever(cancelled, item)

        store = SQLiteCheckpointer(str(tmp_path / "runs.db"))
        g = mapped(work)
        async with asyncio.timeout(10):  # (siblings left running would wait for ever)
            result = await g.ainvoke({}, checkpointer=store)
        assert result.outcome == "failed"
        assert result.reason == "branch 'work[1]' (node 'work', payload 2) failed at step 3: ValueError: cannot do 2"
        assert sorted(cancelled) == [3, 4]
        last = store.get(result.thread)
        assert (last.status, last.step, last.state["got"]) == ("failed", 1, [])
        assert [(f.node, f.payload) for f in last.frames] == [("work", 1), ("work", 2), ("work", 3), ("work", 4)]

        async def fixed(item):
            calls.append(item)
            return {"got": [str(item)]}

        calls.clear()
        g.add_node("work", fixed, replace=True)
        done = await g.ainvoke(Resume(result.thread), checkpointer=store)
        assert done.outcome == "done", done.reason
        assert done.state.got == ["1", "2", "3", "4"]
        assert calls == [2, 3, 4]  # the branch that had finished was not run again
        assert [(s.step, s.branch) for s in store.history(result.thread)][-5:] == [
            (2, "work[0]"),
            (3, "work[1]"),
            (4, "work[2]"),
            (5, "work[3]"),
            (6, None),
        ]


class TestFailFastNamesTheBranchThatRaised:
    """Whatever the order of the branches and when each finishes, the reason names the one that
    raised; a sibling the engine cancelled is never the reason."""

    SHAPES = ("map", "send", "fan-out", "sub-graph")

    @staticmethod
    def shaped(shape: str, names: list[str], work) -> Graph:
        def arm(name):
            async def node(state):
                return await work(name)

            return node

        g = Graph(shape, state=Bag)
        if shape == "map":
            g.add_node("work", work)
            g.add_edge(START, "work", each=lambda s: names)
            g.add_edge("work", END)
        elif shape == "send":
            g.add_node("plan", lambda s: [Send("work", name) for name in names], destinations=["work"])
            g.add_node("work", work)
            g.add_edge(START, "plan")
            g.add_edge("work", END)
        else:
            fan = Graph("fan", state=Bag)
            for name in names:
                fan.add_node(name, arm(name))
                fan.add_edge(name, END)
            fan.add_edge(START, names)
            if shape == "fan-out":
                return fan
            g.add_node("inner", fan)
            g.add_edge(START, "inner")
            g.add_edge("inner", END)
        return g

    @pytest.mark.parametrize("shape", SHAPES)
    async def test_under_random_orders_and_timings(self, shape):
        rng = random.Random(f"fail-fast {shape}")
        for _ in range(12):
            names = rng.sample(["x", "y", "z", "w", "v"], 4)
            bad = rng.choice(names)
            delays = {name: rng.uniform(0, 0.02) for name in names}
            delays[bad] = rng.uniform(0, 0.004)

            async def work(name):
                await asyncio.sleep(delays[name])
                if name == bad:
                    raise ValueError(f"{name} is bad")
                return {"got": [name]}

            async with asyncio.timeout(10):
                result = await self.shaped(shape, names, work).ainvoke({})
            assert result.outcome == "failed"
            assert "CancelledError" not in result.reason
            index = names.index(bad)
            if shape in ("map", "send"):
                assert result.reason.startswith(
                    f"branch 'work[{index}]' (node 'work', payload {bad!r}) failed at step "
                )
            elif shape == "fan-out":
                assert result.reason.startswith(f"branch {bad!r} (node {bad!r}) failed at step ")
            else:
                assert result.reason.startswith(f"branch {bad!r} (node 'inner/{bad}') failed at step ")
            assert result.reason.endswith(f"ValueError: {bad} is bad"), result.reason


class TestSettleAllListsEveryFailure:
    async def test_each_failed_branch_is_an_error_event_and_a_record(self):
        async def work(item):
            await asyncio.sleep(0)
            if item in (2, 4):
                raise ValueError(f"no {item}")
            return {"got": [str(item)]}

        events = []
        result = await mapped(work, items=[1, 2, 3, 4], settle="all").ainvoke({}, on_event=events.append)
        assert result.outcome == "done"
        assert [(e.branch, e.error) for e in events if e.type == "error"] == [
            ("work[1]", "branch 'work[1]' (node 'work') failed at step 3: ValueError: no 2"),
            ("work[3]", "branch 'work[3]' (node 'work') failed at step 5: ValueError: no 4"),
        ]
        # The trace rebuilt from the history lists them too.
        assert [e for e in result.events() if e.type == "error"] == [e for e in events if e.type == "error"]


# -- 3. stopping a run while its branches wait --------------------------------------------------


@pytest.mark.parametrize("finished", [0, 2])
async def test_cancel_during_a_map_keeps_the_superstep_for_a_resume(tmp_path, finished):
    entered: list[int] = []
    cancelled: list[int] = []
    block = [True]

    async def work(item):
        entered.append(item)
        if block[0] and item > finished:
            await forever(cancelled, item)
        return {"got": [str(item)]}

    store = SQLiteCheckpointer(str(tmp_path / "runs.db"))
    g = mapped(work)
    run = g.start({}, checkpointer=store, display=False)
    await wait_until(lambda: len(entered) == 4)
    run.cancel()
    async with asyncio.timeout(10):
        result = await run
    assert result.outcome == "aborted"
    assert result.reason == "cancelled during 4 branches at step 2"
    assert sorted(cancelled) == list(range(finished + 1, 5))  # every branch still running was cancelled
    last = store.get(result.thread)
    assert (last.status, last.step) == ("aborted", 1)
    assert [f.payload for f in last.frames] == [1, 2, 3, 4]
    assert [entry["step"] for entry in last.settled] == list(range(2, 2 + finished))
    block[0] = False
    entered.clear()
    done = await g.ainvoke(Resume(result.thread), checkpointer=store)
    assert done.outcome == "done" and done.state.got == ["1", "2", "3", "4"]
    assert entered == list(range(finished + 1, 5))  # the branches that had finished are not run again


# -- 4. limits shared by every branch -----------------------------------------------------------


class TestLimits:
    async def test_a_time_budget_spent_in_branches_cancels_them_all(self):
        cancelled: list[int] = []

        async def work(item):
            await forever(cancelled, item)

        async with asyncio.timeout(10):
            result = await mapped(work).ainvoke({}, budget=Budget(seconds=0.05))
        assert result.outcome == "aborted"
        assert result.reason.startswith("budget exceeded: seconds 0.05 used up during node 'work' at step ")
        assert sorted(cancelled) == [1, 2, 3, 4]

    async def test_max_steps_counts_every_branch(self):
        called: list[int] = []

        async def work(item):
            called.append(item)
            return {"got": [str(item)]}

        # plan is step 1; the four branches would be steps 2..5.
        short = await mapped(work, max_steps=4).ainvoke({})
        assert (short.outcome, short.reason) == ("done", "max_steps=4 reached before END (next node: 'work')")
        assert called == [] and [s.node for s in short.history] == ["plan"]
        exact = await mapped(work, max_steps=5, on_max_steps="flag").ainvoke({})
        assert exact.hit_max_steps and exact.reason == "max_steps=5 reached before END (next node: 'end')"
        assert exact.state.got == ["1", "2", "3", "4"]

    async def test_max_concurrency_bounds_the_branches_running_at_once(self):
        running = [0]
        most = [0]

        async def work(item):
            running[0] += 1
            most[0] = max(most[0], running[0])
            for _ in range(5):  # stay inside while the other tasks get their turns
                await asyncio.sleep(0)
            running[0] -= 1
            return {"got": [str(item)]}

        items = list(range(8))
        for limit, expected in ((2, 2), (3, 3), (None, 8)):
            most[0] = 0
            result = await mapped(work, items=items, max_concurrency=limit).ainvoke({})
            assert result.state.got == [str(i) for i in items]
            assert most[0] == expected, (limit, most[0])


# -- 5. joins -----------------------------------------------------------------------------------


async def test_a_join_waits_for_sources_of_different_lengths():
    merges: list[list[str]] = []
    gates = {"a": asyncio.Event(), "a2": asyncio.Event(), "b": asyncio.Event()}

    def node(name):
        async def fn(state):
            await gates[name].wait()
            return {"got": [name]}

        return fn

    g = Graph("join", state=Bag)
    g.add_node("plan", lambda s: None)
    for name in gates:
        g.add_node(name, node(name))
    g.add_node("merge", lambda s: merges.append(list(s.got)))
    g.add_edge(START, "plan")
    g.add_edge("plan", ["a", "b"])
    g.add_edge("a", "a2")
    g.add_edge(["a2", "b"], "merge")
    g.add_edge("merge", END)
    for first in ("b", "a"):  # the short line finishes first, then the long one
        merges.clear()
        for gate in gates.values():
            gate.clear()
        run = g.start({}, display=False)
        gates[first].set()
        await wait_until(lambda: run.branches and [b.status for b in run.branches].count("done") == 1)
        assert merges == []
        for gate in gates.values():
            gate.set()
        async with asyncio.timeout(10):
            result = await run
        assert result.outcome == "done", result.reason
        assert merges == [["a", "b", "a2"]]
        assert [(s.node, s.branch) for s in result.history] == [
            ("plan", None),
            ("a", "a"),
            ("b", "b"),
            ("a2", "a"),
            ("merge", None),
        ]


# -- 6. what a node may return as Send items ----------------------------------------------------


class TestSendValidation:
    def run(self, returned, *, is_async=False) -> object:
        def split(state):
            return returned

        async def asplit(state):
            return returned

        g = Graph("sends", state=Bag)
        g.add_node("split", asplit if is_async else split, destinations=["work"])
        g.add_node("work", lambda item: {"got": [str(item)]})
        g.add_edge(START, "split")
        g.add_edge("split", END)
        g.add_edge("work", END)
        return g.invoke({})

    def test_bad_send_items_fail_the_run_naming_the_node(self):
        cases = [
            ([Send("wrok", 1)], "node 'split' sent to 'wrok', which is not a node of the graph (did you mean 'work'?)"),
            ([Send("work", object())], "node 'split' sent 'work' a payload that cannot be stored as JSON"),
            (
                [{"last": "x"}, Send("work", 1), {"last": "y"}],
                "node 'split' returned two updates with its Send items; return one dict",
            ),
            (
                [Send("work", 1), "work"],
                "node 'split' returned str 'work' among its Send items; return Send(node, payload) items",
            ),
            (
                [Send("split", 1)],
                "node 'split' sent to 'split', but it declares destinations=['work']; add 'split' there",
            ),
        ]
        for returned, message in cases:
            for is_async in (False, True):
                result = self.run(returned, is_async=is_async)
                assert result.outcome == "failed", (returned, result.reason)
                assert message in result.reason, (returned, result.reason)
                assert result.state.got == []

    def test_a_bare_send_and_a_tuple_of_them_are_fine(self):
        assert self.run(Send("work", 1)).state.got == ["1"]
        assert self.run((Send("work", 1), Send("work", 2), {"last": "t"})).state.got == ["1", "2"]
