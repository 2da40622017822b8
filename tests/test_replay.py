"""Replay: a run's frames from a result, a live run, a stored thread or an NDJSON trace,
rebuilt from what the run recorded, with no node run again."""

from __future__ import annotations

import asyncio
from typing import Annotated

import pydantic
import pytest

from nbgraph import END, START, Graph, MemoryCheckpointer, Resume, SQLiteCheckpointer, append
from nbgraph.replay import Replay, replay


class Doc(pydantic.BaseModel):
    version: int = 0
    text: str = ""
    ok: bool = False
    published: str = ""
    notes: Annotated[list[str], append] = []


class Counter:
    """Counts every node call, so a test can tell that replaying ran none."""

    def __init__(self) -> None:
        self.calls = 0

    def wrap(self, fn):
        def node(state):
            self.calls += 1
            return fn(state)

        return node


def writer(counter: Counter, *, approval: bool = False) -> Graph:
    g = Graph("writer", state=Doc, max_steps=20)
    g.add_node(
        "draft",
        counter.wrap(
            lambda s: {"version": s.version + 1, "text": f"v{s.version + 1}", "notes": [f"draft {s.version + 1}"]}
        ),
    )
    g.add_node("review", counter.wrap(lambda s: {"ok": s.version >= 2}))
    g.add_node("publish", counter.wrap(lambda s: {"published": s.text}), approval=approval)
    g.add_edge(START, "draft")
    g.add_edge("draft", "review")
    g.add_edge("review", "publish", when=lambda s: s.ok, label="state.ok")
    g.add_edge("review", "draft")
    g.add_edge("publish", END)
    return g


def branching(counter: Counter) -> Graph:
    """A fan-out, a map over three letters, and a sub-graph on the shared state."""
    inner = Graph("inner", state=Doc)
    inner.add_node("a", counter.wrap(lambda s: {"notes": ["inner a"]}))
    inner.add_node("b", counter.wrap(lambda s: {"notes": ["inner b"]}))
    inner.add_edge(START, "a")
    inner.add_edge("a", "b")
    inner.add_edge("b", END)
    g = Graph("branching", state=Doc)
    g.add_node("plan", counter.wrap(lambda s: {"text": "xyz"}))
    g.add_node("left", counter.wrap(lambda s: {"notes": ["left"]}))
    g.add_node("right", counter.wrap(lambda s: {"notes": ["right"]}))
    g.add_node("work", counter.wrap(lambda letter: {"notes": [f"work {letter}"]}))
    g.add_node("research", inner)
    g.add_edge(START, "plan")
    g.add_edge("plan", ["left", "right"])
    g.add_edge(["left", "right"], "research")
    g.add_edge("research", "work", each=lambda s: list(s.text), label="each letter")
    g.add_edge("work", END)
    return g


def states(frames) -> list[dict]:
    return [frame.state for frame in frames]


class TestFromAResult:
    def test_frames_follow_the_run_step_by_step_with_counts_and_states(self):
        counter = Counter()
        result = writer(counter).invoke({})
        calls = counter.calls
        frames = result.replay()
        assert len(frames) == len(result.history) + 1 == 6
        assert [f.node for f in frames] == [None, "draft", "review", "draft", "review", "publish"]
        assert frames[0].state == Doc().model_dump()
        for frame in frames:
            assert frame.state == result.state_at(frame.step).model_dump()
        assert frames[3].visits == {"draft": 2, "review": 1}
        assert frames[3].fired == {(START, "draft"): 1, ("draft", "review"): 2, ("review", "draft"): 1}
        last = frames[-1]
        dag = result.to_dag()
        assert last.visits == {n["id"]: n["visits"] for n in dag["nodes"] if n.get("visits")}
        assert {k: v for k, v in last.fired.items()} == {
            (e["from"], e["to"]): e["fired"] for e in dag["edges"] if e["fired"]
        }
        for i in range(1, len(frames)):
            frames.inspect(i)
        assert counter.calls == calls  # no node ran while replaying or inspecting

    def test_frames_keep_the_path_and_branch_of_branches_and_sub_graph_steps(self):
        counter = Counter()
        result = branching(counter).invoke({})
        assert result.outcome == "done", result.reason
        calls = counter.calls
        frames = replay(result)
        assert [(f.path, f.branch) for f in frames[1:]] == [
            ("plan", None),
            ("left", "left"),
            ("right", "right"),
            ("research/a", None),
            ("research/b", None),
            ("research", None),
            ("work", "work[0]"),
            ("work", "work[1]"),
            ("work", "work[2]"),
        ]
        assert frames[5].state["notes"] == ["left", "right", "inner a", "inner b"]  # the sub-graph's step, as it ran
        assert frames[-1].visits == {
            "plan": 1,
            "left": 1,
            "right": 1,
            "research/a": 1,
            "research/b": 1,
            "research": 1,
            "work": 3,
        }
        assert frames[-1].fired[("research/__start__", "research/a")] == 1
        assert frames[-1].to_json(state=False)["fired"]["research/a\u2192research/b"] == 1
        assert frames[-1].state == result.state.model_dump()
        seen = frames.inspect(8)
        assert (seen.node, seen.branch, seen.payload, seen.change.appended) == (
            "work",
            "work[1]",
            "y",
            {"notes": ["work y"]},
        )
        assert counter.calls == calls

    def test_a_mapped_sub_graph_changes_the_run_state_only_through_its_output(self):
        inner = Graph("inner", state=Doc)
        inner.add_node("a", lambda s: {"notes": ["inside"], "version": 7})
        inner.add_edge(START, "a")
        inner.add_edge("a", END)
        g = Graph("outer", state=Doc)
        g.add_node("research", inner, input=lambda s: {}, output=lambda r: {"published": f"v{r.version}"})
        g.add_edge(START, "research")
        g.add_edge("research", END)
        frames = g.invoke({"text": "kept"}).replay()
        assert [f.path for f in frames[1:]] == ["research/a", "research"]
        assert frames[1].state == frames[0].state == Doc(text="kept").model_dump()  # its own state is not the run's
        assert frames[2].state == Doc(text="kept", published="v7").model_dump()

    async def test_a_live_run_replays_the_steps_it_has_taken(self):
        counter = Counter()
        run = writer(counter, approval=True).start({}, display=False)
        pause = await run.next_pause(timeout=5)
        assert pause is not None and pause.node == "publish"
        calls = counter.calls
        frames = Replay.from_result(run)
        # The step waiting for its approval is recorded once the person has answered.
        assert [f.node for f in frames] == [None, "draft", "review", "draft", "review"]
        assert frames[-1].state["ok"] is True and frames[-1].state["notes"] == ["draft 1", "draft 2"]
        assert frames.outcome is None  # still running
        run.approve({"text": "approved"})
        result = await run
        assert counter.calls == calls
        assert replay(result)[-1].state["text"] == "approved"


class TestFromAThread:
    def test_a_sqlite_thread_replays_in_another_process_without_running_anything(self, tmp_path):
        counter = Counter()
        path = tmp_path / "runs.db"
        g = branching(counter)
        result = g.invoke({}, checkpointer=SQLiteCheckpointer(path), thread="job")
        calls = counter.calls
        store = SQLiteCheckpointer(path)  # a fresh connection, as another process would open
        frames = replay("job", checkpointer=store, graph=g)
        assert states(frames) == states(result.replay())
        assert [(f.path, f.branch) for f in frames] == [(f.path, f.branch) for f in result.replay()]
        assert frames.outcome == "done"
        seen = frames.inspect(3)  # the right arm of the fan-out, from the checkpoint of its superstep
        assert (seen.node, seen.input["notes"], seen.routed_on) == ("right", [], "superstep")
        assert counter.calls == calls

    def test_a_memory_thread_and_one_read_without_its_graph(self):
        counter = Counter()
        store = MemoryCheckpointer()
        g = writer(counter)
        g.invoke({}, checkpointer=store, thread="t")
        with_graph = Replay.from_thread(store, "t", g)
        assert states(with_graph) == states(g.invoke({}).replay())
        loose = Replay.from_thread(store, "t")  # folded as a dict state: the latest value wins
        plain = ["version", "text", "ok", "published"]
        assert [{k: s[k] for k in plain} for s in states(loose)[1:]] == [
            {k: s[k] for k in plain} for s in states(with_graph)[1:]
        ]
        assert loose[-1].state["notes"] == ["draft 2"]  # an append field it cannot know of
        assert any("no graph was given" in note for note in loose.missing)
        assert loose.inspect(2).candidates == []

    def test_a_thread_that_is_not_there_or_of_another_graph_is_a_clear_error(self, tmp_path):
        store = SQLiteCheckpointer(tmp_path / "runs.db")
        counter = Counter()
        writer(counter).invoke({}, checkpointer=store, thread="t")
        with pytest.raises(ValueError, match="no thread 'nope'"):
            replay("nope", checkpointer=store)
        other = Graph("other")
        other.add_node("x", lambda s: None)
        other.add_edge(START, "x")
        other.add_edge("x", END)
        with pytest.raises(ValueError, match="holds a run of graph 'writer', not 'other'"):
            replay("t", checkpointer=store, graph=other)


class TestFromNDJSON:
    def test_a_trace_replays_from_its_text_and_from_a_file(self, tmp_path):
        counter = Counter()
        g = writer(counter, approval=True)
        paused = g.invoke({})
        result = g.invoke(Resume(paused, {"approved": True, "update": {"text": "edited"}}))
        text = result.to_ndjson()
        calls = counter.calls
        frames = replay(text, graph=g)
        (tmp_path / "trace.ndjson").write_text(text)
        from_file = Replay.from_ndjson(tmp_path / "trace.ndjson", graph=g)
        assert states(frames) == states(from_file) == states(result.replay())  # the input set nothing
        assert frames[-1].state["text"] == "edited"  # the person's edit, from the approval's answer event
        assert frames.outcome == "done" and frames.thread == result.thread
        assert any("does not carry the run's input" in note for note in frames.missing)
        seen = frames.inspect(5)
        assert (seen.edit, seen.started, seen.pauses[0].kind) == ({"text": "edited"}, None, "approval")
        assert [c.fired for c in frames.inspect(4).candidates] == [True, False]
        assert counter.calls == calls

    def test_a_trace_of_branches_and_sub_graphs_keeps_their_order_path_and_branch(self):
        counter = Counter()
        result = branching(counter).invoke({})
        frames = replay(result.to_ndjson(), graph=branching(Counter()))
        assert [(f.path, f.branch, f.step) for f in frames] == [(f.path, f.branch, f.step) for f in result.replay()]
        assert states(frames) == states(result.replay())

    async def test_a_trace_recorded_live_with_branches_finishing_out_of_order(self):
        counter = Counter()

        async def slow(letter):
            await asyncio.sleep({"x": 0.03, "y": 0.0, "z": 0.01}[letter])
            return {"notes": [f"work {letter}"]}

        g = Graph("live", state=Doc)
        g.add_node("plan", lambda s: {"text": "xyz"})
        g.add_node("work", slow)
        g.add_edge(START, "plan")
        g.add_edge("plan", "work", each=lambda s: list(s.text))
        g.add_edge("work", END)
        events = []
        result = await g.ainvoke({}, on_event=events.append)
        from nbgraph.events import to_ndjson

        frames = replay(to_ndjson(e for e in events if e.type != "text-delta"), graph=g)
        assert [f.branch for f in frames[1:]] == [None, "work[0]", "work[1]", "work[2]"]
        assert frames[-1].state["notes"] == result.state.notes == ["work x", "work y", "work z"]
        assert counter.calls == 0

    def test_a_failed_step_in_a_trace_is_a_failed_frame(self):
        g = Graph("boom", state=Doc)
        g.add_node("first", lambda s: {"version": 1})
        g.add_node("fails", lambda s: 1 / 0)
        g.add_edge(START, "first")
        g.add_edge("first", "fails")
        g.add_edge("fails", END)
        result = g.invoke({})
        frames = replay(result.to_ndjson())  # no graph: folded as a dict state
        assert [(f.node, f.error is not None) for f in frames[1:]] == [("first", False), ("fails", True)]
        assert "ZeroDivisionError" in frames[-1].error
        assert frames[-1].state == {"version": 1}
        assert frames.outcome == "failed"

    def test_a_step_that_failed_and_ran_again_on_resume_is_two_frames(self):
        broken = {"yes": True}

        def fails(s):
            if broken["yes"]:
                raise RuntimeError("not yet")
            return {"ok": True}

        g = Graph("retry", state=Doc)
        g.add_node("first", lambda s: {"version": 1})
        g.add_node("fails", fails)
        g.add_edge(START, "first")
        g.add_edge("first", "fails")
        g.add_edge("fails", END)
        store = MemoryCheckpointer()
        events: list = []  # both runs' events, written to one trace as they came
        failed = g.invoke({}, checkpointer=store, on_event=events.append)
        broken["yes"] = False
        result = g.invoke(Resume(failed), checkpointer=store, on_event=events.append)
        assert result.outcome == "done"
        from nbgraph.events import to_ndjson

        frames = replay(to_ndjson(events), graph=g)
        assert [(f.node, f.error) for f in frames[1:]] == [
            ("first", None),
            ("fails", "node 'fails' failed at step 2: RuntimeError: not yet"),
            ("fails", None),
        ]
        assert frames[-1].state["ok"] is True and frames[2].state["ok"] is False
        assert frames.outcome == "done"

    def test_bad_traces_are_clear_errors(self, tmp_path):
        with pytest.raises(ValueError, match="line 2 is not an nbgraph event"):
            replay('{"type": "run-start", "thread": "t", "step": 0, "graph": "g"}\n{"type": "nonsense"}\n')
        with pytest.raises(FileNotFoundError, match="no NDJSON trace at"):
            replay(str(tmp_path / "missing.ndjson"))
        with pytest.raises(TypeError, match="cannot replay int"):
            replay(42)
        counter = Counter()
        text = writer(counter).invoke({}).to_ndjson()
        other = Graph("other")
        other.add_node("x", lambda s: None)
        other.add_edge(START, "x")
        other.add_edge("x", END)
        with pytest.raises(ValueError, match="the trace is of graph 'writer', not 'other'"):
            replay(text, graph=other)
        frames = replay(text)
        with pytest.raises(ValueError, match="frame 0 is the run's input"):
            frames.inspect(0)
        with pytest.raises(IndexError, match="frames 0 to 5"):
            frames.inspect(6)
