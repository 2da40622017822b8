"""Breakpoints and step mode: where a run pauses for a person to look, live and durable.

Live runs share the test's loop: the test waits for a pause with ``run.next_pause``
(or polls ``run.pauses`` turn by turn), never by the clock.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Annotated

import nbformat
import pydantic
import pytest
from forked import Forker
from nbclient import NotebookClient
from turns import wait_until, within

from nbgraph import (
    END,
    START,
    Fork,
    Graph,
    GraphValidationError,
    MemoryCheckpointer,
    NoPendingRequest,
    Resume,
    ResumeError,
    SQLiteCheckpointer,
    append,
    parse_ndjson,
)


def chain(ran: list[str] | None = None) -> Graph:
    """a -> b -> c -> d, each noting that it ran."""
    ran = ran if ran is not None else []

    def node(name, update):
        def fn(state):
            ran.append(name)
            return update(state)

        return fn

    g = Graph("chain")
    g.add_node("a", node("a", lambda s: {"n": s.n + 1}))
    g.add_node("b", node("b", lambda s: {"n": s.n * 10}))
    g.add_node("c", node("c", lambda s: {"n": s.n + 2}))
    g.add_node("d", node("d", lambda s: {"done": True}))
    g.add_edge(START, "a")
    g.add_edge("a", "b")
    g.add_edge("b", "c")
    g.add_edge("c", "d")
    g.add_edge("d", END)
    return g


def nested(ran: list[str]) -> Graph:
    """a -> research (a sub-graph: search -> write) -> b."""

    def note(name, update=None):
        def fn(state):
            ran.append(name)
            return update

        return fn

    inner = Graph("inner")
    inner.add_node("search", note("research/search", {"found": "x"}))
    inner.add_node("write", note("research/write", {"report": "r"}))
    inner.add_edge(START, "search")
    inner.add_edge("search", "write")
    inner.add_edge("write", END)
    outer = Graph("outer")
    outer.add_node("a", note("a", {"n": 1}))
    outer.add_node("research", inner)
    outer.add_node("b", note("b", {"n": 2}))
    outer.add_edge(START, "a")
    outer.add_edge("a", "research")
    outer.add_edge("research", "b")
    outer.add_edge("b", END)
    return outer


class Grades(pydantic.BaseModel):
    items: list[str] = []
    grades: Annotated[list[str], append] = []
    merged: str = ""


def mapped(ran: list[str]) -> Graph:
    """plan -> grade (a branch per item, async) -> merge."""

    async def grade(item):
        await asyncio.sleep(0)
        ran.append(item)
        return {"grades": [f"{item}:ok"]}

    g = Graph("grading", state=Grades)
    g.add_node("plan", lambda s: None)
    g.add_node("grade", grade)
    g.add_node("merge", lambda s: {"merged": "+".join(s.grades)})
    g.add_edge(START, "plan")
    g.add_edge("plan", "grade", each=lambda s: s.items)
    g.add_edge("grade", "merge")
    g.add_edge("merge", END)
    return g


class TestDeclaring:
    def test_unknown_names_are_build_errors_with_the_closest_names(self):
        g = chain().breakpoints(before=["bb"], after=["__end__", "a/x"])
        with pytest.raises(GraphValidationError) as caught:
            g.compile()
        assert caught.value.problems == [
            "breakpoint before 'bb': the graph has no node 'bb' (did you mean 'b'?)",
            "breakpoint after '__end__': END is not a node; a breakpoint names a node that runs",
            "breakpoint after 'a/x': node 'a' is not a sub-graph, so 'a/x' names no node inside it",
        ]

    def test_a_path_names_a_node_inside_a_sub_graph(self):
        g = nested([]).breakpoints(before=["research/serch"])
        with pytest.raises(
            GraphValidationError,
            match=(
                r"breakpoint before 'research/serch': in sub-graph 'research' \(graph 'inner'\): "
                r"no node 'serch' \(did you mean 'search'\?\)"
            ),
        ):
            g.compile()
        g.breakpoints(before=["research/search"], after=["research"])
        assert g.compile().breakpoints == (frozenset({"research/search"}), frozenset({"research"}))

    def test_names_must_be_lists_of_strings(self):
        with pytest.raises(TypeError, match=r"breakpoints\(before=...\) takes a list of node names, got 'a'"):
            chain().breakpoints(before="a")
        with pytest.raises(TypeError, match=r"breakpoints\(after=...\): a node name is a non-empty string, got 3"):
            chain().breakpoints(after=[3])

    def test_calling_again_replaces_and_no_arguments_clear(self):
        g = chain()
        assert g.declared_breakpoints is None and g.compile().breakpoints is None
        g.breakpoints(before=["a", "b"])
        g.breakpoints(after=["c"])
        assert g.compile().breakpoints == (frozenset(), frozenset({"c"}))
        g.breakpoints()
        assert g.declared_breakpoints == (frozenset(), frozenset())
        assert g.invoke({"n": 0}).outcome == "done"

    def test_a_sub_graphs_own_breakpoints_count_under_its_node(self):
        ran: list[str] = []
        outer = nested(ran)
        inner = outer.nodes["research"].graph
        assert outer.compile().breakpoints is None
        inner.breakpoints(after=["write"])  # the outer plan is stale now
        assert outer.compile().breakpoints == (frozenset(), frozenset({"research/write"}))
        paused = outer.invoke({})
        assert (paused.outcome, paused.pauses[0].path, paused.pauses[0].at) == (
            "interrupted",
            "research/write",
            "after",
        )


class TestDurable:
    def test_before_a_node_it_has_not_run(self):
        ran: list[str] = []
        g = chain(ran).breakpoints(before=["b"])
        paused = g.invoke({"n": 1})
        pause = paused.pauses[0]
        assert paused.outcome == "interrupted" and ran == ["a"]
        assert (pause.kind, pause.at, pause.node, pause.path, pause.step) == ("breakpoint", "before", "b", "b", 2)
        assert pause.options == ("continue", "step", "stop")
        assert paused.reason.startswith(
            "paused at the breakpoint before 'b' — answer with g.invoke(Resume(result, 'continue'))"
        )
        assert paused.state == {"n": 2}
        done = g.invoke(Resume(paused, "continue"))
        assert done.outcome == "done", done.reason
        assert ran == ["a", "b", "c", "d"] and done.state == {"n": 22, "done": True}

    def test_after_a_node_its_update_is_shown_and_its_routing_waits(self):
        ran: list[str] = []
        g = chain(ran).breakpoints(after=["b"])
        paused = g.invoke({"n": 1})
        pause = paused.pauses[0]
        assert (pause.at, pause.node, pause.step, pause.update) == ("after", "b", 2, {"n": 20})
        assert ran == ["a", "b"] and paused.state == {"n": 20}
        done = g.invoke(Resume(paused, "continue"))
        assert done.outcome == "done" and ran == ["a", "b", "c", "d"]  # b did not run again
        assert [s.node for s in done.history] == ["a", "b", "c", "d"]
        assert done.history[1].edge.target == "c"

    def test_the_answer_is_checked_and_any_case_goes(self):
        g = chain().breakpoints(before=["b"])
        paused = g.invoke({"n": 1})
        with pytest.raises(ResumeError, match=r"a breakpoint is answered with 'continue', 'step' or 'stop'; got 'go'"):
            g.invoke(Resume(paused, "go"))
        assert g.invoke(Resume(paused, "Continue")).outcome == "done"  # any case

    def test_a_resume_without_an_answer_goes_on_from_a_breakpoint(self):
        ran: list[str] = []
        g = chain(ran).breakpoints(before=["b"], after=["c"])
        paused = g.invoke({"n": 1})
        again = g.invoke(Resume(paused.thread))  # a breakpoint asks no question: as 'continue'
        assert (again.outcome, again.pauses[0].at, again.pauses[0].path, ran) == (
            "interrupted",
            "after",
            "c",
            ["a", "b", "c"],
        )
        assert g.invoke(Resume(again.thread)).outcome == "done" and ran == ["a", "b", "c", "d"]

    def test_a_resume_without_an_answer_goes_on_from_breakpoints_in_every_branch(self):
        g = Graph("fan")
        g.add_node("a", lambda s: {"a": 1})
        g.add_node("b", lambda s: {"b": 1})
        g.add_edge(START, ["a", "b"])
        g.add_edge("a", END)
        g.add_edge("b", END)
        g.breakpoints(before=["a", "b"])
        paused = g.invoke({})
        assert sorted(p.path for p in paused.pauses) == ["a", "b"]
        done = g.invoke(Resume(paused.thread))
        assert done.outcome == "done" and done.state == {"a": 1, "b": 1}

    def test_step_pauses_before_the_next_node_and_continue_at_the_next_breakpoint(self):
        ran: list[str] = []
        g = chain(ran).breakpoints(before=["b"], after=["d"])
        stops = []
        result = g.invoke({"n": 1})
        for answer in ("step", "continue", "continue"):
            stops.append((result.pauses[0].at, result.pauses[0].path, list(ran)))
            result = g.invoke(Resume(result, answer))
        assert stops == [
            ("before", "b", ["a"]),
            ("before", "c", ["a", "b"]),  # step: paused before the next node though c has no breakpoint
            ("after", "d", ["a", "b", "c", "d"]),
        ]
        assert result.outcome == "done"

    def test_stop_ends_aborted_and_the_checkpoint_resumes(self):
        ran: list[str] = []
        g = chain(ran).breakpoints(before=["b"], after=["c"])
        store = MemoryCheckpointer()
        paused = g.invoke({"n": 1}, checkpointer=store)
        stopped = g.invoke(Resume(paused, "stop"), checkpointer=store)
        assert (stopped.outcome, stopped.reason) == ("aborted", "stopped at the breakpoint before 'b' (step 2)")
        assert stopped.pauses == () and ran == ["a"] and stopped.state == {"n": 2}
        again = g.invoke(
            Resume(stopped.thread), checkpointer=store
        )  # b still has its breakpoint: it pauses there again
        assert again.pauses[0].path == "b" and again.pauses[0].id != paused.pauses[0].id
        after_c = g.invoke(Resume(again, "continue"), checkpointer=store)
        assert (after_c.pauses[0].at, after_c.pauses[0].path) == ("after", "c")
        stopped = g.invoke(Resume(after_c, "stop"), checkpointer=store)
        assert stopped.outcome == "aborted" and ran == ["a", "b", "c"]
        last = store.get(stopped.thread)
        assert (last.status, last.step, [f.node for f in last.frames]) == ("aborted", 3, ["d"])  # c routed and saved
        done = g.invoke(Resume(stopped.thread), checkpointer=store)
        assert done.outcome == "done" and ran == ["a", "b", "c", "d"]  # nothing ran twice
        assert done.state == chain().invoke({"n": 1}).state

    def test_the_trace_shows_each_pause_where_a_live_run_does(self):
        g = chain().breakpoints(before=["b"], after=["c"])
        result = g.invoke({"n": 1})
        result = g.invoke(Resume(result, "continue"))
        result = g.invoke(Resume(result, "step"))
        result = g.invoke(Resume(result, "continue"))
        events = list(parse_ndjson(result.to_ndjson()))
        seen = [
            (e.type, getattr(e, "node", None) or (e.pause.path if e.type == "interrupt" else e.__dict__.get("answer")))
            for e in events
            if e.type in ("node-enter", "node-exit", "interrupt", "answer")
        ]
        assert seen == [
            ("node-enter", "a"),
            ("node-exit", "a"),
            ("interrupt", "b"),
            ("answer", "continue"),
            ("node-enter", "b"),
            ("node-exit", "b"),
            ("node-enter", "c"),
            ("node-exit", "c"),
            ("interrupt", "c"),
            ("answer", "step"),
            ("interrupt", "d"),
            ("answer", "continue"),
            ("node-enter", "d"),
            ("node-exit", "d"),
        ]
        assert [e.pause.at for e in events if e.type == "interrupt"] == ["before", "after", "before"]


class TestSubGraphs:
    def test_a_path_pauses_inside_and_a_resume_enters_where_it_stopped(self):
        ran: list[str] = []
        g = nested(ran).breakpoints(before=["research/write"], after=["research/search"])
        store = MemoryCheckpointer()
        first = g.invoke({}, checkpointer=store)
        assert (first.pauses[0].at, first.pauses[0].path, first.pauses[0].update) == (
            "after",
            "research/search",
            {"found": "x"},
        )
        second = g.invoke(Resume(first, "continue"), checkpointer=store)
        assert (second.pauses[0].at, second.pauses[0].path) == ("before", "research/write")
        assert ran == ["a", "research/search"]
        done = g.invoke(Resume(second, "continue"), checkpointer=store)
        assert done.outcome == "done", done.reason
        assert ran == ["a", "research/search", "research/write", "b"]  # search ran once
        assert done.state == {"n": 2, "found": "x", "report": "r"}

    async def test_step_walks_node_by_node_into_the_sub_graph(self):
        ran: list[str] = []
        run = nested(ran).start({}, display=False, stepping=True)
        stops = []
        while (pause := await within(run.next_pause())) is not None:
            stops.append((pause.path, list(ran)))
            run.answer("step")
        result = await within(run)
        assert result.outcome == "done", result.reason
        assert stops == [
            ("a", []),
            ("research", ["a"]),
            ("research/search", ["a"]),
            ("research/write", ["a", "research/search"]),
            ("b", ["a", "research/search", "research/write"]),
        ]

    async def test_stop_inside_a_sub_graph_keeps_it_resumable(self):
        ran: list[str] = []
        g = nested(ran).breakpoints(after=["research/search"])
        store = MemoryCheckpointer()
        run = g.start({}, display=False, checkpointer=store)
        pause = await within(run.next_pause())
        run.answer("stop", pause=pause.id)
        stopped = await within(run)
        assert (
            stopped.outcome == "aborted"
            and stopped.reason == "stopped at the breakpoint after 'research/search' (step 1)"
        )
        g.breakpoints()  # this graph sets its own (none): the resume does not stop again
        done = g.invoke(Resume(stopped), checkpointer=store)
        assert done.outcome == "done", done.reason
        assert ran == ["a", "research/search", "research/write", "b"]

    @pytest.mark.parametrize("live", [True, False])
    async def test_stop_after_a_sub_graphs_last_node_does_not_run_it_again(self, live):
        ran: list[str] = []
        g = nested(ran).breakpoints(after=["research/write"])
        store = MemoryCheckpointer()
        if live:
            run = g.start({}, display=False, checkpointer=store)
            run.answer("stop", pause=(await within(run.next_pause())).id)
            stopped = await within(run)
        else:
            stopped = await g.ainvoke(Resume(await g.ainvoke({}, checkpointer=store), "stop"), checkpointer=store)
        assert stopped.outcome == "aborted"
        done = await g.breakpoints().ainvoke(Resume(stopped), checkpointer=store)
        assert done.outcome == "done", done.reason
        assert ran == ["a", "research/search", "research/write", "b"]

    async def test_stop_inside_a_sub_graph_in_a_branch_ends_the_run_aborted(self):
        ran: list[str] = []
        inner = Graph("inner")
        inner.add_node("search", lambda s: ran.append(f"search {s.q}") or {"found": s.q})
        inner.add_node("write", lambda s: ran.append(f"write {s.q}") or {"report": s.found.upper()})
        inner.add_edge(START, "search")
        inner.add_edge("search", "write")
        inner.add_edge("write", END)
        g = Graph("fan", state=Grades)
        g.add_node("plan", lambda s: None)
        g.add_node("research", inner, input=lambda q: {"q": q}, output=lambda r: {"grades": [r.report]})
        g.add_edge(START, "plan")
        g.add_edge("plan", "research", each=lambda s: s.items)
        g.add_edge("research", END)
        g.breakpoints(after=["research/search"])
        store = MemoryCheckpointer()
        run = g.start({"items": ["x", "y"]}, display=False, checkpointer=store)
        first = await within(run.next_pause())
        assert (first.path, first.branch) == ("research/search", "research[0]")
        run.answer("stop", pause=first.id)
        stopped = await within(run)
        assert (stopped.outcome, stopped.reason) == (
            "aborted",
            "stopped at the breakpoint after 'research/search' in branch 'research[0]' (step 1)",
        )
        done = g.breakpoints().invoke(Resume(stopped), checkpointer=store)
        assert done.outcome == "done", done.reason
        assert done.state.grades == ["X", "Y"]
        assert ran.count("search x") == 1  # the stopped branch went on where it stopped

    @pytest.mark.parametrize("shape", ["sub-graph in a sub-graph", "map in a sub-graph"])
    async def test_stop_deep_inside_a_branch_ends_the_run_aborted(self, shape):
        class Q(pydantic.BaseModel):
            q: str = ""
            found: Annotated[list[str], append] = []

        search = Graph("search", state=Q)
        search.add_node("search", lambda s: {"found": [s.q]})
        search.add_edge(START, "search")
        search.add_edge("search", END)
        job = Graph("job", state=Q)
        if shape == "sub-graph in a sub-graph":
            job.add_node("inner", search)
            job.add_edge(START, "inner")
            job.add_edge("inner", END)
            where = "job/inner/search"
        else:
            job.add_node("split", lambda s: None)
            job.add_node("search", lambda q: {"found": [q]})
            job.add_edge(START, "split")
            job.add_edge("split", "search", each=lambda s: [s.q + "1", s.q + "2"])
            job.add_edge("search", END)
            where = "job/search"
        g = Graph("fan", state=Grades)
        g.add_node("plan", lambda s: None)
        g.add_node("job", job, input=lambda q: {"q": q}, output=lambda r: {"grades": list(r.found)})
        g.add_edge(START, "plan")
        g.add_edge("plan", "job", each=lambda s: s.items)
        g.add_edge("job", END)
        g.breakpoints(after=[where])
        store = MemoryCheckpointer()
        run = g.start({"items": ["x", "y"]}, display=False, checkpointer=store)
        pause = await within(run.next_pause())
        assert pause.path == where
        run.answer("stop", pause=pause.id)
        stopped = await within(run)
        assert stopped.outcome == "aborted" and stopped.reason.startswith(f"stopped at the breakpoint after {where!r}")
        done = await g.breakpoints().ainvoke(Resume(stopped), checkpointer=store)
        assert done.outcome == "done", done.reason
        assert len(done.state.grades) == (2 if shape == "sub-graph in a sub-graph" else 4)


class TestLive:
    async def test_continue_goes_to_the_next_breakpoint(self):
        ran: list[str] = []
        seen = []
        run = chain(ran).breakpoints(before=["b", "d"]).start({"n": 1}, display=False, on_event=seen.append)
        first = await within(run.next_pause())
        assert (first.path, ran, run.pauses) == ("b", ["a"], (first,))
        run.answer("continue")
        second = await within(run.next_pause())
        assert (second.path, ran) == ("d", ["a", "b", "c"])  # c has none: no pause there
        run.answer("continue")
        result = await within(run)
        assert result.outcome == "done" and ran == ["a", "b", "c", "d"]
        breaks = [
            (e.type, e.pause.path if e.type == "interrupt" else e.answer)
            for e in seen
            if e.type in ("interrupt", "answer")
        ]
        assert breaks == [("interrupt", "b"), ("answer", "continue"), ("interrupt", "d"), ("answer", "continue")]
        with pytest.raises(NoPendingRequest, match=r"waits for no answer \(it has finished\)"):
            run.answer("continue")

    async def test_answers_are_checked_and_stop_ends_aborted(self):
        ran: list[str] = []
        run = chain(ran).breakpoints(after=["a"]).start({"n": 1}, display=False)
        pause = await within(run.next_pause())
        assert pause.update == {"n": 2}
        with pytest.raises(ResumeError, match="got 'maybe'"):
            run.answer("maybe", pause=pause.id)
        assert run.pauses == (pause,)  # still waiting
        run.answer("stop", pause=pause.id)
        with pytest.raises(ResumeError, match="is not open: it was answered already, with 'stop', at node 'a'"):
            run.answer("stop", pause=pause.id)  # a duplicate is refused, saying how it was answered
        result = await within(run)
        assert (result.outcome, result.reason) == ("aborted", "stopped at the breakpoint after 'a' (step 1)")
        assert ran == ["a"] and result.state == {"n": 2}
        done = chain(ran).invoke(Resume(result))  # a fresh graph: the thread's breakpoint (after a) is behind it
        assert done.outcome == "done" and ran == ["a", "b", "c", "d"]  # a was routed and saved, not run again

    @pytest.mark.parametrize("at", ["before", "after"])
    async def test_cancel_at_a_breakpoint_ends_aborted_saying_where(self, at):
        ran: list[str] = []
        seen = []
        run = chain(ran).breakpoints(**{at: ["b"]}).start({"n": 1}, display=False, on_event=seen.append)
        await within(run.next_pause())
        run.cancel()
        result = await within(run)
        assert (result.outcome, result.reason) == ("aborted", f"cancelled at the breakpoint {at} 'b' (step 2)")
        assert ran == (["a"] if at == "before" else ["a", "b"])
        assert [e.node for e in seen if e.type == "node-exit"] == ran  # each node's exit told once
        assert result.pauses == () and run.pauses == ()

    async def test_the_views_buttons_answer_a_breakpoint(self):
        from nbgraph.widget import GraphView

        ran: list[str] = []
        run = chain(ran).start({"n": 1}, display=False, stepping=True)
        view = GraphView.for_run(run)
        for answer in ("step", "continue"):
            pause = await within(run.next_pause())
            await wait_until(lambda: view.pending and view.pending[0]["id"] == pause.id)
            shown = view.pending[0]
            assert (shown["kind"], shown["at"], shown["options"]) == (
                "breakpoint",
                "before",
                ["continue", "step", "stop"],
            )
            assert view.handle({"type": "answer", "pause_id": pause.id, "value": answer})
        result = await within(run)
        assert result.outcome == "done" and ran == ["a", "b", "c", "d"]

    async def test_a_breakpoint_in_a_map_pauses_each_branch(self):
        ran: list[str] = []
        g = mapped(ran).breakpoints(before=["grade"], after=["merge"])
        run = g.start({"items": ["x", "y", "z"]}, display=False)
        await within(wait_until(lambda: len(run.pauses) == 3))
        pauses = {p.branch: p for p in run.pauses}
        assert sorted(pauses) == ["grade[0]", "grade[1]", "grade[2]"] and ran == []
        assert {b.status for b in run.branches} == {"paused"}
        run.answer("continue", pause=pauses["grade[2]"].id)  # any order
        await wait_until(lambda: ran == ["z"])
        run.answer("continue", pause=pauses["grade[0]"].id)
        run.answer("continue", pause=pauses["grade[1]"].id)
        after = await within(run.next_pause())
        assert (after.path, after.update) == ("merge", {"merged": "x:ok+y:ok+z:ok"})  # folded in item order
        run.answer("continue")
        result = await within(run)
        assert result.outcome == "done" and sorted(ran) == ["x", "y", "z"]

    async def test_step_mode_pauses_every_branch_and_one_step_answers_them_all(self):
        ran: list[str] = []
        run = mapped(ran).start({"items": ["x", "y", "z"]}, display=False, stepping=True)
        assert (await within(run.next_pause())).path == "plan"
        run.answer("step")
        await within(wait_until(lambda: len(run.pauses) == 3))
        assert sorted(p.branch for p in run.pauses) == ["grade[0]", "grade[1]", "grade[2]"] and ran == []
        run.answer("step")  # all three
        merge = await within(run.next_pause())
        assert (merge.path, sorted(ran)) == ("merge", ["x", "y", "z"])
        run.answer("continue")
        assert (await within(run)).state.merged == "x:ok+y:ok+z:ok"


class TestBranchesDurable:
    async def test_each_branch_pauses_and_a_partial_resume_keeps_the_others(self, tmp_path):
        ran: list[str] = []
        g = mapped(ran).breakpoints(before=["grade"])
        store = SQLiteCheckpointer(str(tmp_path / "runs.db"))
        first = await g.ainvoke({"items": ["x", "y"]}, checkpointer=store)
        assert first.outcome == "interrupted" and ran == []
        by_branch = {p.branch: p for p in first.pauses}
        assert sorted(by_branch) == ["grade[0]", "grade[1]"]
        second = await g.ainvoke(Resume(first.thread, {by_branch["grade[1]"].id: "continue"}), checkpointer=store)
        assert ran == ["y"] and [p.id for p in second.pauses] == [by_branch["grade[0]"].id]  # the same id
        done = await g.ainvoke(Resume(second, "continue"), checkpointer=store)
        assert done.outcome == "done", done.reason
        assert ran == ["y", "x"] and done.state.merged == "x:ok+y:ok"

    async def test_after_in_a_branch_and_stop_keeps_the_finished_branch(self, tmp_path):
        ran: list[str] = []
        g = mapped(ran).breakpoints(after=["grade"])
        store = SQLiteCheckpointer(str(tmp_path / "runs.db"))
        run = g.start({"items": ["x", "y"]}, display=False, checkpointer=store)
        await within(wait_until(lambda: len(run.pauses) == 2))
        pauses = sorted(run.pauses, key=lambda p: p.branch)
        assert [p.update for p in pauses] == [{"grades": ["x:ok"]}, {"grades": ["y:ok"]}]
        run.answer("stop", pause=pauses[0].id)
        stopped = await within(run)
        assert (
            stopped.outcome == "aborted"
            and stopped.reason == "stopped at the breakpoint after 'grade' in branch 'grade[0]' (step 2)"
        )
        g.breakpoints()
        done = await g.ainvoke(Resume(stopped), checkpointer=store)
        assert done.outcome == "done", done.reason
        assert sorted(ran) == ["x", "y", "y"]  # x was kept; y was cut short and ran again
        assert done.state.merged == "x:ok+y:ok"


JOBS = Path(__file__).with_name("programs") / "breakpoint_jobs.py"


def test_breakpoints_and_step_mode_persist_with_the_thread_across_processes(tmp_path):
    db = str(tmp_path / "runs.db")
    with Forker(tmp_path, JOBS) as forker:

        def run(**job):
            return forker.run({"db": db, **job})[0]

        first = run(command="start", thread="t1", breakpoints={"before": ["b"], "after": ["c"]})
        assert first == {"outcome": "interrupted", "path": "a", "pause": ["before", "b"]}
        # Fresh graph objects without breakpoints: the thread's apply.
        assert run(command="resume", thread="t1", answer="continue") == {
            "outcome": "interrupted",
            "path": "abc",
            "pause": ["after", "c"],
        }
        assert run(command="resume", thread="t1", answer="continue")["outcome"] == "done"

        # A graph that sets its own (here: none) replaces them.
        run(command="start", thread="t2", breakpoints={"before": ["b", "d"]})
        assert run(command="resume", thread="t2", answer="continue", breakpoints={}) == {
            "outcome": "done",
            "path": "abcd",
            "pause": None,
        }

        # Step mode is kept too: each process pauses before the next node.
        stops = [run(command="start", thread="t3", stepping=True)]
        while stops[-1]["outcome"] == "interrupted":
            stops.append(run(command="resume", thread="t3", answer="step"))
        assert [s["pause"] for s in stops] == [["before", n] for n in "abcd"] + [None]
        assert stops[-1]["path"] == "abcd"
        assert len(forker.pids) == 10


def test_a_forked_thread_keeps_its_parents_breakpoints():
    ran: list[str] = []
    g = chain(ran).breakpoints(before=["c"])
    store = MemoryCheckpointer()
    paused = g.invoke({"n": 1}, checkpointer=store)
    fresh = chain(ran)
    forked = fresh.invoke(Fork(paused, step=1), checkpointer=store)
    assert (forked.outcome, forked.pauses[0].path) == ("interrupted", "c")


@pytest.mark.parametrize("slot", ["__breakpoints__", "__budget__", "__trace__"])
def test_a_reserved_slot_is_refused(slot):
    async def ask(state, ctx):
        return {"x": await ctx.request_input("?", slot=slot)}

    g = Graph("ask")
    g.add_node("ask", ask)
    g.add_edge(START, "ask")
    g.add_edge("ask", END)
    result = g.invoke({})
    assert result.outcome == "failed" and "slots starting with '__' are the run's own" in result.reason


KERNEL_CELLS = [
    "%load_ext nbgraph",
    """
ran = []
def plan(state):
    ran.append("plan")
    return {"n": 1}
def act(state):
    ran.append("act")
    return {"n": state.n + 1}
""",
    "%%graph walk\nSTART -> plan -> act -> END",
    "%graph run walk --step",
    """
from nbgraph.widget import GraphView
view = GraphView.for_run(_run)
pause = await _run.next_pause(timeout=10)
print(pause.kind, pause.at, pause.path, ran)
print(view.handle({"type": "answer", "pause_id": pause.id, "value": "step"}))
pause = await _run.next_pause(timeout=10)
print(pause.at, pause.path, ran)
_run.answer("continue")
result = await _run
print(result.outcome, ran)
""",
]


def test_graph_run_step_in_a_kernel():
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(source.strip()) for source in KERNEL_CELLS]
    NotebookClient(nb, timeout=60, kernel_name="python3").execute()
    started = "".join(o.get("text", "") for o in nb.cells[3].outputs if o.output_type == "stream")
    assert "it pauses before every node" in started
    out = "".join(o.get("text", "") for o in nb.cells[4].outputs if o.output_type == "stream")
    assert out.splitlines() == [
        "breakpoint before plan []",
        "True",
        "before act ['plan']",
        "done ['plan', 'act']",
    ]


def test_the_pause_round_trips_through_json():
    paused = chain().breakpoints(after=["a"]).invoke({"n": 1})
    data = json.loads(paused.pauses[0].model_dump_json())
    assert (data["kind"], data["at"], data["update"]) == ("breakpoint", "after", {"n": 2})
