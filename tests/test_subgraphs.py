"""Sub-graphs: a Graph run as a node, on the parent's state or through input/output
mappings; paths on steps and events; the child's own max_steps; pauses deep inside,
resumed from other processes; mapped and sent-to sub-graphs; failures inside."""

from __future__ import annotations

import asyncio
import uuid
from collections import Counter
from pathlib import Path
from typing import Annotated

import pydantic
import pytest
from forked import Forker

from nbgraph import END, START, Graph, MemoryCheckpointer, RedisCheckpointer, Resume, Send, SQLiteCheckpointer, append


class Notes(pydantic.BaseModel):
    n: int = 0
    notes: Annotated[list[str], append] = []


def chain(name: str, *nodes: tuple[str, object], **options) -> Graph:
    """START -> each node in turn -> END."""
    g = Graph(name, **options)
    for node, fn in nodes:
        g.add_node(node, fn)
    names = [START, *(node for node, _ in nodes), END]
    for source, target in zip(names, names[1:], strict=False):
        g.add_edge(source, target)
    return g


class TestSharedState:
    def test_the_child_works_on_the_parents_state_and_paths_nest(self):
        inner = chain(
            "inner",
            ("a", lambda s: {"n": s.n + 1, "notes": ["a"]}),
            ("b", lambda s: {"n": s.n * 10, "notes": ["b"]}),
            state=Notes,
        )
        outer = chain(
            "outer",
            ("pre", lambda s: {"n": 1, "notes": ["pre"]}),
            ("research", inner),
            ("post", lambda s: {"n": s.n + 5, "notes": ["post"]}),
            state=Notes,
        )
        live = []
        result = outer.invoke({}, on_event=live.append)
        assert result.outcome == "done", result.reason
        assert (result.state.n, result.state.notes) == (25, ["pre", "a", "b", "post"])
        assert [(s.step, s.path) for s in result.history] == [
            (1, "pre"),
            (1, "research/a"),
            (2, "research/b"),
            (2, "research"),
            (3, "post"),
        ]
        assert result.state_at(2).n == 20  # the sub-graph's steps fold in as the step that ran it
        kinds = [(e.type, e.path) for e in live if e.type in ("node-enter", "node-exit")]
        assert kinds == [
            ("node-enter", "pre"),
            ("node-exit", "pre"),
            ("node-enter", "research"),
            ("node-enter", "research/a"),
            ("node-exit", "research/a"),
            ("node-enter", "research/b"),
            ("node-exit", "research/b"),
            ("node-exit", "research"),
            ("node-enter", "post"),
            ("node-exit", "post"),
        ]
        assert [(e.type, e.path) for e in result.events() if e.type in ("node-enter", "node-exit")] == kinds

    def test_input_and_output_map_between_different_states(self):
        seen = []

        def double(state):
            seen.append(dict(state))
            return {"v": state["v"] * 2}

        inner = chain("calc", ("double", double), ("plus", lambda s: {"v": s["v"] + 1}))
        outer = Graph("outer", state=Notes)
        outer.add_node("calc", inner, input=lambda s: {"v": s.n}, output=lambda c: {"n": c["v"], "notes": ["calc"]})
        outer.add_edge(START, "calc")
        outer.add_edge("calc", END)
        result = outer.invoke({"n": 20, "notes": ["kept"]})
        assert (result.state.n, result.state.notes) == (41, ["kept", "calc"])
        assert seen == [{"v": 20}]  # the child sees only what input gave it
        assert [(s.path, s.update) for s in result.history] == [
            ("calc/double", {"v": 40}),
            ("calc/plus", {"v": 41}),
            ("calc", {"n": 41, "notes": ["calc"]}),
        ]


class TestChildMaxSteps:
    def loop(self, **options) -> Graph:
        inner = Graph("loop", **options)
        inner.add_node("inc", lambda s: {"n": s["n"] + 1})
        inner.add_edge(START, "inc")
        inner.add_edge("inc", "inc")
        # The parent's own limit (2) is far below the child's steps: each counts its own.
        return chain("outer", ("sub", inner), ("after", lambda s: {"after": s["n"]}), max_steps=2)

    def test_the_childs_limit_ends_the_child_and_the_parent_goes_on(self):
        result = self.loop(max_steps=4).invoke({"n": 0})
        assert (result.outcome, result.reason, result.hit_max_steps) == ("done", None, False)
        assert result.state == {"n": 4, "after": 4}
        assert [s.path for s in result.history] == ["sub/inc"] * 4 + ["sub", "after"]

    def test_a_flagged_child_flags_the_run(self):
        result = self.loop(max_steps=3, on_max_steps="flag").invoke({"n": 0})
        assert result.outcome == "done" and result.hit_max_steps
        assert result.reason == "sub-graph 'sub': max_steps=3 reached before END (next node: 'inc')"
        assert result.state == {"n": 3, "after": 3}

    def test_a_raising_child_fails_the_run(self):
        result = self.loop(max_steps=3, on_max_steps="raise").invoke({"n": 0})
        assert result.outcome == "failed"
        assert "graph 'loop' reached max_steps=3 before END" in result.reason


class TestMappedSubGraphs:
    def asking_map(self) -> Graph:
        async def ask(state, ctx):
            return {"answer": await ctx.request_input(f"about {state['item']}?")}

        inner = chain("inner", ("ask", ask), ("shout", lambda s: {"answer": s["answer"].upper()}))
        outer = Graph("outer", state=Notes)
        outer.add_node("plan", lambda s: None)
        outer.add_node(
            "sub", inner, input=lambda item: {"item": item}, output=lambda c: {"notes": [f"{c['item']}={c['answer']}"]}
        )
        outer.add_node("end", lambda s: {"n": len(s.notes)})
        outer.add_edge(START, "plan")
        outer.add_edge("plan", "sub", each=lambda s: ["x", "y", "z"])
        outer.add_edge("sub", "end")
        outer.add_edge("end", END)
        return outer

    def test_a_mapped_sub_graphs_pauses_are_told_apart(self, tmp_path):
        g = self.asking_map()
        store = SQLiteCheckpointer(str(tmp_path / "runs.db"))
        first = g.invoke({}, checkpointer=store)
        assert first.outcome == "interrupted"
        assert [(p.path, p.branch, p.prompt) for p in first.pauses] == [
            ("sub/ask", f"sub[{i}]", f"about {item}?") for i, item in enumerate("xyz")
        ]
        assert len({p.slot for p in first.pauses}) == 3
        y = first.pauses[1]
        second = g.invoke(Resume(first.thread, {y.id: "why"}), checkpointer=store)
        assert second.outcome == "interrupted"  # answering y answered y only
        assert [p.id for p in second.pauses] == [first.pauses[0].id, first.pauses[2].id]
        done = g.invoke(Resume(first.thread, {first.pauses[2].id: "zed", first.pauses[0].id: "ex"}), checkpointer=store)
        assert done.outcome == "done", done.reason
        assert done.state.notes == ["x=EX", "y=WHY", "z=ZED"] and done.state.n == 3
        inner_steps = [(s.path, s.branch) for s in done.history if s.path.startswith("sub/")]
        assert sorted(inner_steps) == sorted((f"sub/{n}", f"sub[{i}]") for i in range(3) for n in ("ask", "shout"))

    async def test_a_mapped_sub_graph_answered_live_in_reverse(self):
        run = self.asking_map().start({}, display=False)
        for _ in range(2000):
            if len(run.pauses) == 3:
                break
            await asyncio.sleep(0)
        assert [b.status for b in run.branches] == ["paused"] * 3
        for pause in reversed(run.pauses):
            run.answer(pause.prompt[6] * 2, pause=pause.id)
        result = await run
        assert result.state.notes == ["x=XX", "y=YY", "z=ZZ"]

    def test_with_settle_all_a_failed_sub_graph_branch_stays_settled_across_a_resume(self):
        calls = []

        async def ask(state, ctx):
            calls.append(state["item"])
            if state["item"] == 1:
                raise ValueError("one fails")
            return {"v": await ctx.request_input(f"{state['item']}?")}

        inner = chain("inner", ("ask", ask))
        g = Graph("outer", state=Notes, settle="all")
        g.add_node("plan", lambda s: None)
        g.add_node("sub", inner, input=lambda i: {"item": i}, output=lambda c: {"notes": [f"{c['item']}={c['v']}"]})
        g.add_edge(START, "plan")
        g.add_edge("plan", "sub", each=lambda s: [1, 2])
        g.add_edge("sub", END)
        store = MemoryCheckpointer()
        paused = g.invoke({}, checkpointer=store)
        assert paused.outcome == "interrupted" and [p.branch for p in paused.pauses] == ["sub[1]"]
        assert list(store.get(paused.thread).levels) == ["sub@sub[1]"]  # the failed branch's level closed
        done = g.invoke(Resume(paused, "two"), checkpointer=store)
        assert done.outcome == "done" and done.state.notes == ["2=two"]
        assert calls == [1, 2, 2]  # the failed branch is not run again, the paused one re-runs its start
        assert [(s.path, s.branch, s.error) for s in done.history if s.branch == "sub[0]"] == [
            ("sub/ask", "sub[0]", "ValueError: one fails"),
            ("sub", "sub[0]", "node 'sub/ask' failed at step 1: ValueError: one fails"),
        ]

    def test_send_into_a_sub_graph_node(self):
        inner = chain("inner", ("up", lambda s: {"v": s["v"].upper()}))
        g = Graph("outer", state=Notes)
        g.add_node("split", lambda s: [{"n": 7}, Send("sub", "p"), Send("sub", "q")], destinations=["sub"])
        g.add_node("sub", inner, input=lambda item: {"v": item}, output=lambda c: {"notes": [c["v"]]})
        g.add_edge(START, "split")
        g.add_edge("sub", END)
        result = g.invoke({})
        assert result.outcome == "done", result.reason
        assert (result.state.n, result.state.notes) == (7, ["P", "Q"])
        assert [(s.step, s.path, s.branch) for s in result.history] == [
            (1, "split", None),
            (1, "sub/up", "sub[0]"),
            (2, "sub", "sub[0]"),
            (1, "sub/up", "sub[1]"),
            (3, "sub", "sub[1]"),
        ]

    def test_a_sub_graph_on_the_shared_state_refuses_a_payload(self):
        g = Graph("outer", state=Notes)
        g.add_node("split", lambda s: [Send("sub", 1), Send("sub", 2)], destinations=["sub"])
        g.add_node("sub", chain("inner", ("a", lambda s: None), state=Notes))
        g.add_edge(START, "split")
        g.add_edge("sub", END)
        result = g.invoke({})
        assert result.outcome == "failed"
        assert (
            "node 'sub' runs sub-graph 'inner' on this graph's state, so a Send's payload has nowhere to go"
            in result.reason
        )


class TestCallsAskAfresh:
    """Each call of a sub-graph is its own: a question its node asked in the first call is
    asked again in the second, live and across a resume, and the first call's answer is
    dropped once that call ends."""

    @staticmethod
    def looped(calls: list[int]) -> Graph:
        async def ask(state, ctx):
            calls.append(state["round"])
            return {"said": await ctx.request_input(f"round {state['round']}?")}

        inner = chain("inner", ("ask", ask))
        g = Graph("outer", state=Notes)
        g.add_node(
            "sub", inner, input=lambda s: {"round": s.n}, output=lambda c: {"n": c["round"] + 1, "notes": [c["said"]]}
        )
        g.add_edge(START, "sub")
        g.add_edge("sub", END, when=lambda s: s.n == 2)
        g.add_edge("sub", "sub")
        return g

    async def test_live(self):
        calls: list[int] = []
        run = self.looped(calls).start({}, display=False)
        for answer in ("first", "second"):
            pause = await run.next_pause(timeout=5)
            run.answer(answer, pause=pause.id)
            assert not run.pauses  # the answer was taken
        result = await run
        assert result.state.notes == ["first", "second"] and calls == [0, 1]

    @pytest.mark.parametrize("kind", ["sqlite", "redis"])
    def test_durable(self, tmp_path, request, kind):
        calls: list[int] = []
        g = self.looped(calls)
        if kind == "sqlite":
            store = SQLiteCheckpointer(str(tmp_path / "runs.db"))
        else:
            store = RedisCheckpointer(request.getfixturevalue("redis_url"), prefix=f"afresh-{uuid.uuid4().hex[:8]}")
        first = g.invoke({}, checkpointer=store)
        assert first.outcome == "interrupted" and first.pauses[0].prompt == "round 0?"
        second = g.invoke(Resume(first, "first"), checkpointer=store)
        assert second.outcome == "interrupted" and second.pauses[0].prompt == "round 1?"
        assert list(store.get(second.thread).answers) == []  # the ended call's answer went with it
        done = g.invoke(Resume(second, "second"), checkpointer=store)
        assert done.outcome == "done" and done.state.notes == ["first", "second"]
        assert calls == [0, 0, 1, 1]  # each call's node re-ran its start once, on its own resume


def test_a_failing_sub_graph_keeps_the_parents_checkpoint_and_resumes(tmp_path):
    calls = []

    def note(name, update):
        def fn(state):
            calls.append(name)
            return update

        return fn

    def boom(state):
        calls.append("boom")
        raise ValueError("inner boom")

    inner = chain("inner", ("a", note("a", {"a": 1})), ("boom", boom))
    outer = chain("outer", ("pre", note("pre", {"pre": 1})), ("sub", inner), ("post", note("post", {"post": 1})))
    store = SQLiteCheckpointer(str(tmp_path / "runs.db"))
    failed = outer.invoke({}, checkpointer=store)
    assert (failed.outcome, failed.reason) == ("failed", "node 'sub/boom' failed at step 2: ValueError: inner boom")
    last = store.get(failed.thread)
    assert (last.status, last.step, dict(last.state)) == ("failed", 1, {"pre": 1})
    assert [f.path for f in last.frames] == ["sub"] and list(last.levels) == ["sub"]
    calls.clear()
    inner.add_node("boom", note("boom", {"ok": True}), replace=True)  # the parent sees its sub-graph changed
    done = outer.invoke(Resume(failed.thread), checkpointer=store)
    assert done.outcome == "done", done.reason
    assert done.state == {"pre": 1, "a": 1, "ok": True, "post": 1}
    assert calls == ["boom", "post"]  # the child resumed at its own failed step
    assert store.threads() == [failed.thread]


def test_a_denial_inside_a_sub_graph_keeps_the_whole_history(tmp_path):
    """The thread ends at the denied node, with every step before it: the parent's, and the
    sub-graph's own (its state change dropped with the sub-graph's)."""
    inner = Graph("inner", state=Notes)
    inner.add_node("a", lambda s: {"n": s.n + 1})
    inner.add_node("b", lambda s: {"n": s.n + 10}, approval=True)
    inner.add_edge(START, "a")
    inner.add_edge("a", "b")
    inner.add_edge("b", END)
    outer = chain("outer", ("pre", lambda s: {"n": 100}), ("sub", inner), ("post", lambda s: {"n": 0}), state=Notes)
    store = SQLiteCheckpointer(str(tmp_path / "runs.db"))
    asked = outer.invoke({}, checkpointer=store)
    assert asked.outcome == "interrupted", asked.reason
    denied = outer.invoke(Resume(asked, False))
    assert (denied.outcome, denied.reason) == ("denied", "approval of 'b' was denied")
    walked = [(step.step, step.path) for step in denied.history]
    assert walked == [(1, "pre"), (1, "sub/a"), (2, "sub/b")]
    assert [(step.step, step.path) for step in store.history(denied.thread)] == walked
    last = store.get(denied.thread)
    assert (last.status, last.step, dict(last.state)) == ("denied", 2, {"n": 100, "notes": []})
    store.close()


# -- three levels deep, resumed from other processes -----------------------------------------------

JOBS = Path(__file__).with_name("programs") / "deep_pause.py"


def test_a_pause_three_levels_deep_resumed_in_other_processes(tmp_path, redis_url):
    stores = {
        "sqlite": {"kind": "sqlite", "where": str(tmp_path / "runs.db")},
        "redis": {"kind": "redis", "where": redis_url, "prefix": f"deep-{uuid.uuid4().hex[:8]}"},
    }
    jobs = {
        kind: {**store, "thread": f"deep-{kind}", "log": str(tmp_path / f"{kind}.log")}
        for kind, store in stores.items()
    }
    with Forker(tmp_path, JOBS) as forker:
        started = forker.run(*({**job, "command": "start"} for job in jobs.values()))
        for result in started:
            assert result["outcome"] == "interrupted", result["reason"]
            assert [p["path"] for p in result["pauses"]] == ["mid/inner/ask"]
            assert result["threads"] == [result["threads"][0]]  # the levels live in the parent's thread
        resumed = forker.run(
            *(
                {**job, "command": "resume", "answers": {result["pauses"][0]["id"]: "yes"}}
                for job, result in zip(jobs.values(), started, strict=True)
            )
        )
    for kind, result in zip(jobs, resumed, strict=True):
        assert result["outcome"] == "done", result["reason"]
        assert result["state"] == {"n": 4, "answer": "yes", "final": 4}
        assert result["threads"] == [f"deep-{kind}"]
        # The run re-entered each level where it stopped: only the paused node ran its start again.
        assert result["entered"] == [
            ["mid", False],
            ["mid/inner", False],
            ["mid/inner/ask", True],
            ["mid/inner/after", False],
            ["end", False],
        ]
        assert result["history"] == [
            [1, "c"],
            [1, "mid/b"],
            [1, "mid/inner/a"],
            [2, "mid/inner/ask"],
            [3, "mid/inner/after"],
            [2, "mid/inner"],
            [2, "mid"],
            [3, "end"],
        ]
        log = Counter((tmp_path / f"{kind}.log").read_text().splitlines())
        assert log == Counter({"c": 1, "b": 1, "a": 1, "ask": 2, "ask answered": 1, "after": 1, "end": 1})
