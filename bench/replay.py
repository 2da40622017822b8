"""What reading a run back costs: the inspector on the last step of a long stored thread,
and replay frames built from it.

Workload: a conversation that grows by a message a step, kept in a SQLiteCheckpointer for
2,000 steps, then read from a fresh store object on the same file (as another process
would). Printed: the time and the store rows and snapshots one inspection of step 2,000
reads, beside what one ``store.get(thread)`` (a resume's read) costs; the time to build
the 2,001 replay frames (folding 2,000 updates through the reducers) and to inspect a
frame from them. Every figure checks its answer, so a broken reader cannot print good
figures.

Run: python bench/replay.py [--steps N] [--repeat N]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from nbgraph import END, START, Graph, MessagesState, SQLiteCheckpointer  # noqa: E402
from nbgraph.inspection import inspect_step  # noqa: E402
from nbgraph.llm import UserMessage  # noqa: E402
from nbgraph.replay import Replay  # noqa: E402


class Counting(SQLiteCheckpointer):
    """Counts the rows and snapshots a read takes."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.rows = self.snapshots = self.histories = 0

    def _rows(self, thread, after, upto):
        rows = super()._rows(thread, after, upto)
        self.rows += len(rows)
        return rows

    def _snapshot(self, thread, upto):
        self.snapshots += 1
        return super()._snapshot(thread, upto)

    def _data(self, thread):
        self.histories += 1
        return super()._data(thread)


def conversation(steps: int) -> Graph:
    g = Graph("long", state=MessagesState, max_steps=steps, max_same_node=steps + 1)
    g.add_node("talk", lambda s: {"messages": [UserMessage(content=f"message {len(s.messages)} " + "x" * 100)]})
    g.add_edge(START, "talk")
    g.add_edge("talk", "talk", when=lambda s: len(s.messages) < steps, label="more")
    g.add_edge("talk", END)
    return g


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=2_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    steps = args.steps
    g = conversation(steps)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "long.db")
        g.invoke({}, checkpointer=SQLiteCheckpointer(path), thread="t")

        times, reads = [], None
        for _ in range(args.repeat):
            store = Counting(path)
            t0 = time.perf_counter()
            seen = inspect_step("t", steps, checkpointer=store, graph=g)
            times.append(time.perf_counter() - t0)
            assert seen.change.appended["messages"][0]["content"].startswith(f"message {steps - 1} ")
            assert len(seen.input["messages"]) == steps - 1
            reads = (store.rows, store.snapshots, store.histories)
        resume = Counting(path)
        t0 = time.perf_counter()
        assert len(resume.get("t").state["messages"]) == steps
        get_time = time.perf_counter() - t0
        print(
            f"inspect step {steps} of a {steps}-step SQLite thread: {statistics.median(times) * 1000:.1f} ms "
            f"(median of {args.repeat}); read {reads[0]} rows, {reads[1]} snapshots, {reads[2]} full histories"
        )
        print(
            f"  beside one store.get(thread), a resume's read: {get_time * 1000:.1f} ms, {resume.rows} rows, "
            f"{resume.snapshots} snapshot"
        )

        builds, looks = [], []
        for _ in range(args.repeat):
            store = SQLiteCheckpointer(path)
            t0 = time.perf_counter()
            frames = Replay.from_thread(store, "t", g)
            builds.append(time.perf_counter() - t0)
            assert len(frames) == steps + 1 and len(frames[-1].values["messages"]) == steps
            t0 = time.perf_counter()
            seen = frames.inspect(steps // 2)
            looks.append(time.perf_counter() - t0)
            assert seen.change.appended["messages"][0]["content"].startswith(f"message {steps // 2 - 1} ")
        print(
            f"replay frames of the same thread: {statistics.median(builds) * 1000:.0f} ms to build {steps + 1} frames "
            f"({statistics.median(builds) / steps * 1e6:.0f} µs a step), {statistics.median(looks) * 1000:.1f} ms "
            "to inspect one"
        )
    slider_message(10_000)


def slider_message(steps: int) -> None:
    """What a view's step slider is sent at the end of a long run: its frames, packed."""
    from nbgraph._shown import pack_frames

    g = Graph("cycle", max_steps=steps, max_same_node=steps)
    g.add_node("a", lambda s: {"n": s.get("n", 0) + 1})
    g.add_node("b", lambda s: {"n": s["n"] + 1})
    g.add_edge(START, "a")
    g.add_edge("a", "b")
    g.add_edge("b", "a", when=lambda s: s["n"] < steps, label="more")
    g.add_edge("b", END)
    frames = g.invoke({}).replay()
    assert len(frames) == steps + 1
    packed = json.dumps(pack_frames(frames), separators=(",", ":"))
    assert json.loads(packed)["rows"][-1][0] == steps
    print(
        f"the slider's frames of a {steps:,}-step run: one message of {len(packed) / 1e6:.2f} MB "
        f"({len(packed) / steps:.0f} bytes a frame)"
    )


if __name__ == "__main__":
    main()
