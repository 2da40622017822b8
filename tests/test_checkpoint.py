"""Checkpointers, resume after failure, cancel, fork, and a resume in another process."""

from __future__ import annotations

import asyncio
import gc
import json
import math
import os
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Annotated, Any

import pydantic
import pytest

import nbgraph.engine.walker as walker
from nbgraph import (
    END,
    START,
    Fork,
    Graph,
    MemoryCheckpointer,
    Resume,
    SQLiteCheckpointer,
    ThreadBusy,
    ThreadExists,
    append,
    default_checkpointer,
)
from nbgraph.engine import execute, open_run

TRIP_BOOKING = Path(__file__).with_name("programs") / "trip_booking.py"
"""Starts or resumes a run asking for a city on a SQLite file, one call a process."""


class Note(pydantic.BaseModel):
    id: str
    text: str


class State(pydantic.BaseModel):
    n: int = 0
    notes: Annotated[list[Note], append] = []


def flaky_graph(fixed: bool) -> Graph:
    def step_a(state):
        return {"n": state.n + 1, "notes": [Note(id="a", text="from a")]}

    def step_b(state):
        if not fixed:
            raise ConnectionError("service down")
        return {"n": state.n + 10, "notes": [Note(id="b", text="from b")]}

    g = Graph("flaky", state=State)
    g.add_node("a", step_a)
    g.add_node("b", step_b)
    g.add_edge(START, "a")
    g.add_edge("a", "b")
    g.add_edge("b", END)
    return g


@pytest.fixture(params=["memory", "sqlite", "none"])
def store(request, tmp_path):
    if request.param == "memory":
        return MemoryCheckpointer()
    if request.param == "sqlite":
        return SQLiteCheckpointer(tmp_path / "runs.db")
    return None


def test_replace_replaces_a_finished_thread_in_every_store(store):
    g = Graph("count")
    g.add_node("count", lambda s: {"n": s.get("n", 0) + 1})
    g.add_edge(START, "count")
    g.add_edge("count", END)
    assert g.invoke({}, thread="t", checkpointer=store).state == {"n": 1}
    again = g.invoke({"n": 5}, thread="t", checkpointer=store, replace=True)
    assert (again.outcome, again.state) == ("done", {"n": 6}), again.reason
    assert [step.update for step in again.history] == [{"n": 6}]  # nothing of the old run is left in it
    if store is not None:
        assert [step.update for step in store.history("t")] == [{"n": 6}]


class TestResumeAfterFailure:
    def test_failed_node_keeps_the_checkpoint_and_resumes(self, store):
        result = flaky_graph(fixed=False).invoke({}, checkpointer=store)
        assert result.outcome == "failed"
        assert result.reason == "node 'b' failed at step 2: ConnectionError: service down"
        assert result.state.n == 1
        kept = (store or default_checkpointer()).get(result.thread)
        assert kept.step == 1 and kept.status == "failed" and kept.next == "b"
        # The node is redefined (a fixed graph), then the run is retried from where it failed.
        done = flaky_graph(fixed=True).invoke(Resume(result.thread), checkpointer=store)
        assert done.outcome == "done"
        assert done.state.n == 11
        assert [note.id for note in done.state.notes] == ["a", "b"]
        assert done.path == ["a", "b"]

    def test_state_at_reads_checkpoints(self, store):
        result = flaky_graph(fixed=True).invoke({}, checkpointer=store)
        assert result.state_at(0).n == 0
        assert result.state_at(1).n == 1
        assert result.state_at(2).n == 11
        with pytest.raises(ValueError, match="step must be between 0 and 2"):
            result.state_at(3)


def open_handles(path: Path) -> int:
    """How many file descriptors of this process have ``path`` open."""
    fds = Path("/proc/self/fd")
    return sum(1 for fd in fds.iterdir() if os.path.realpath(fd) == str(path.resolve()))


class TestSQLiteConnections:
    """A store opens a connection per thread that uses it; none outlives its use."""

    def use_from_threads(self, store: SQLiteCheckpointer, count: int, *, together: bool) -> None:
        if together:  # all alive at once, each with its own connection
            barrier = threading.Barrier(count)
            threads = [threading.Thread(target=lambda: (store.threads(), barrier.wait())) for _ in range(count)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
        else:
            for _ in range(count):
                thread = threading.Thread(target=store.threads)
                thread.start()
                thread.join()

    def test_close_closes_the_connection_of_every_thread(self, tmp_path):
        path = tmp_path / "runs.db"
        store = SQLiteCheckpointer(path)
        self.use_from_threads(store, 3, together=True)
        assert open_handles(path) == 4  # this thread's and three others'
        store.close()
        assert open_handles(path) == 0
        assert store.threads() == []  # and it opens again when used

    def test_a_store_nobody_refers_to_closes_its_connections(self, tmp_path):
        path = tmp_path / "runs.db"
        store = SQLiteCheckpointer(path)
        self.use_from_threads(store, 3, together=True)
        del store
        gc.collect()
        assert open_handles(path) == 0

    def test_closing_while_another_thread_renews_its_lease_does_not_crash_the_process(self, tmp_path):
        """Closing a store closed the renewer thread's connection under its statement, and the process
        died in libsqlite3 (SIGSEGV) within a few thousand closes. In a child process, so a crash is
        seen as one."""
        code = f"""
import threading
from nbgraph import SQLiteCheckpointer

store = SQLiteCheckpointer({str(tmp_path / "runs.db")!r})
lease = store.acquire("t")
closing = threading.Event()

def renew_until_closed():
    global lease
    while not closing.is_set():
        lease = store.renew(lease) or lease

renewer = threading.Thread(target=renew_until_closed)
renewer.start()
for _ in range(100_000):
    store.close()
closing.set()
renewer.join()
print("renewed", store.renew(lease) is not None)
"""
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
        assert (done.returncode, done.stdout) == (0, "renewed True\n"), done.stderr[-2000:]

    def test_threads_that_come_and_go_leave_no_connection_behind(self, tmp_path):
        path = tmp_path / "runs.db"
        store = SQLiteCheckpointer(path)
        self.use_from_threads(store, 5, together=False)
        few = open_handles(path)  # this thread's, the last one's until the next connects, one SQLite keeps
        self.use_from_threads(store, 200, together=False)
        assert open_handles(path) == few <= 3
        store.close()


class TestSQLite:
    def test_a_row_per_step_holds_its_change_and_the_state_is_whole_in_snapshots(self, tmp_path):
        path = tmp_path / "runs.db"
        result = flaky_graph(fixed=True).invoke({}, checkpointer=SQLiteCheckpointer(path))
        db = sqlite3.connect(path)
        rows = db.execute(
            "SELECT step, data, patches FROM nbgraph_steps WHERE thread = ? ORDER BY step", (result.thread,)
        ).fetchall()
        assert [step for step, _, _ in rows] == [0, 1, 2]
        last = json.loads(rows[-1][1])
        assert last["status"] == "done" and last["graph"] == "flaky" and "state" not in last
        assert [s["node"] for s in last["steps"]] == ["b"] and last["steps"][0]["edge"]["target"] == END
        # Step 2 stored what it changed: n set, one note appended; not the notes before it.
        assert json.loads(rows[2][2]) == [{"set": {"n": 11}, "extend": {"notes": [{"id": "b", "text": "from b"}]}}]
        snapshots = db.execute(
            "SELECT step, state FROM nbgraph_snapshots WHERE thread = ?", (result.thread,)
        ).fetchall()
        assert [(step, json.loads(state)) for step, state in snapshots] == [(0, {"n": 0, "notes": []})]
        db.close()
        rebuilt = SQLiteCheckpointer(path).get(result.thread)
        assert rebuilt.state == {"n": 11, "notes": [{"id": "a", "text": "from a"}, {"id": "b", "text": "from b"}]}

    def test_types_come_back_from_json(self, tmp_path):
        store = SQLiteCheckpointer(tmp_path / "runs.db")
        result = flaky_graph(fixed=False).invoke({}, checkpointer=store)
        done = flaky_graph(fixed=True).invoke(Resume(result.thread), checkpointer=store)
        assert all(isinstance(note, Note) for note in done.state.notes)

    def test_unserializable_state_is_an_error_not_pickle(self, tmp_path):
        g = Graph("odd")
        g.add_node("a", lambda s: {"thing": object()})
        g.add_edge(START, "a")
        g.add_edge("a", END)
        result = g.invoke({}, checkpointer=SQLiteCheckpointer(tmp_path / "runs.db"))
        assert result.outcome == "failed"
        assert "field 'thing' holds object, which is not JSON-serializable" in result.reason
        assert result.state == {}

    def test_a_lease_is_one_writer_per_thread_and_says_who_holds_it(self, tmp_path):
        first = SQLiteCheckpointer(tmp_path / "runs.db")
        second = SQLiteCheckpointer(tmp_path / "runs.db")
        lease = first.acquire("t1", "run-a")
        with pytest.raises(
            ThreadBusy,
            match=r"thread 't1' is being run by run 'run-a' in process \d+ on host '.+' since \d\d:\d\d:\d\d; "
            r"its lease ends in \d+ s \(SQLite store .*runs.db\)\. Wait for it, or if that run is gone, take the "
            r"thread over with checkpointer.unlock\('t1'\) or resume with force=True",
        ) as info:
            second.acquire("t1")
        assert info.value.holder.token == lease.token
        second.acquire("t2")
        first.release(lease)
        assert second.acquire("t1").run is None

    def test_resume_in_another_process(self, tmp_path):
        db = tmp_path / "runs.db"

        def run(*args: str) -> list[str]:
            done = subprocess.run(
                [sys.executable, str(TRIP_BOOKING), str(db), *args],
                capture_output=True,
                text=True,
                timeout=60,
                check=True,
            )
            return done.stdout.split(maxsplit=2)

        outcome, thread, _ = run("start")
        assert outcome == "interrupted"
        outcome, resumed_thread, booked = run("resume", thread, "Lisbon")
        assert (outcome, resumed_thread, booked.strip()) == ("done", thread, "hotel in Lisbon")

    def test_processes_opening_one_new_file_at_once_all_get_it(self, tmp_path):
        # Switching a new file to WAL needs it to itself, and SQLite says "locked" at once
        # instead of waiting: eight processes forked at the same moment, twenty files.
        failed = []
        for trial in range(20):
            path = str(tmp_path / f"runs-{trial}.db")
            pids = []
            for _ in range(8):
                pid = os.fork()
                if pid == 0:
                    code = 1
                    try:
                        code = 0 if SQLiteCheckpointer(path).get("t") is None else 2
                    finally:
                        os._exit(code)
                pids.append(pid)
            failed += [pid for pid in pids if os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) != 0]
        assert failed == []


class TestCancel:
    async def test_cancel_leaves_a_consistent_checkpoint(self):
        store = MemoryCheckpointer()
        entered = asyncio.Event()
        never = asyncio.Event()

        async def hang(state):
            entered.set()
            await never.wait()
            return {"n": 999}

        g = Graph("hang", state=State)
        g.add_node("a", lambda s: {"n": 1})
        g.add_node("hang", hang)
        g.add_edge(START, "a")
        g.add_edge("a", "hang")
        g.add_edge("hang", END)
        run = g.start({}, checkpointer=store, display=False)
        await entered.wait()
        run.cancel()
        result = await run
        assert result.outcome == "aborted"
        assert result.reason == "cancelled during node 'hang' at step 2"
        saved = store.get(run.thread)
        assert (saved.step, saved.status, saved.next, saved.state["n"]) == (1, "aborted", "hang", 1)

        g.add_node("hang", lambda s: {"n": s.n + 1}, replace=True)
        done = g.invoke(Resume(run.thread), checkpointer=store)
        assert done.outcome == "done" and done.state.n == 2

    async def test_a_live_run_of_blocking_nodes_still_lets_the_loop_in(self, monkeypatch):
        # Sync nodes never await; the walker must still give the loop a turn every
        # _LOOP_TURN_INTERVAL of run time, so a Stop (cancel) scheduled on the loop lands
        # while the run goes on. The run's clock is the node's: each step takes exactly
        # `tick` seconds of it, whatever the machine's speed.
        tick = 1 / 1024  # exact in binary floating point
        clock = {"now": 1000.0}
        monkeypatch.setattr(time, "perf_counter", lambda: clock["now"])
        store = MemoryCheckpointer()
        loop = asyncio.get_running_loop()
        stop_after, end = 100, 10_000
        runs = []

        def slow(state):
            clock["now"] += tick  # blocking work, never awaits
            if state.n + 1 == stop_after:
                loop.call_soon(runs[0].cancel)  # the Stop click arrives during this step
            return {"n": state.n + 1}

        g = Graph("busy", state=State, max_steps=2 * end, max_same_node=2 * end)
        g.add_node("slow", slow)
        g.add_edge(START, "slow")
        g.add_edge("slow", "slow", when=lambda s: s.n < end)
        g.add_edge("slow", END)
        runs.append(g.start({}, checkpointer=store, display=False))
        result = await runs[0]
        assert result.outcome == "aborted", result.reason
        stopped = result.state.n
        # It lands at the walker's next turn for the loop: at most one interval's worth of steps later.
        assert stop_after <= stopped <= stop_after + math.ceil(walker._LOOP_TURN_INTERVAL / tick) + 1 < end
        assert result.reason == f"cancelled during node 'slow' at step {stopped + 1}"
        assert len(result.history) == stopped
        saved = store.get(runs[0].thread)
        assert (saved.status, saved.step, saved.next, saved.state["n"]) == ("aborted", stopped, "slow", stopped)

    async def test_same_thread_cannot_run_twice_at_once(self):
        store = MemoryCheckpointer()
        gate = asyncio.Event()

        async def wait(state):
            await gate.wait()

        g = Graph("busy")
        g.add_node("wait", wait)
        g.add_edge(START, "wait")
        g.add_edge("wait", END)
        first = g.start({}, thread="shared", checkpointer=store, display=False)
        with pytest.raises(ThreadBusy, match="thread 'shared' is being run by run '[0-9a-f]+' in process"):
            g.start({}, thread="shared", checkpointer=store, display=False)
        gate.set()
        assert (await first).outcome == "done"
        # One run per thread: a new run on it must say it replaces the old one.
        with pytest.raises(
            ThreadExists, match=r"thread 'shared' already holds a run of graph 'busy' \(done at step 1\)"
        ):
            g.start({}, thread="shared", checkpointer=store, display=False)
        again = g.start({}, thread="shared", checkpointer=store, display=False, replace=True)
        assert (await again).outcome == "done" and [s.step for s in store.history("shared")] == [1]


class TestFork:
    def graph(self, threshold: int) -> Graph:
        g = Graph("fork", state=State)
        g.add_node("inc", lambda s: {"n": s.n + 1})
        g.add_node("big", lambda s: {"notes": [Note(id="big", text="big")]})
        g.add_node("small", lambda s: {"notes": [Note(id="small", text="small")]})
        g.add_edge(START, "inc")
        g.add_edge("inc", "big", when=lambda s: s.n > threshold, label=f"n > {threshold}")
        g.add_edge("inc", "small")
        g.add_edge("big", END)
        g.add_edge("small", END)
        return g

    def test_fork_with_changed_routing_takes_the_new_path(self):
        store = MemoryCheckpointer()
        first = self.graph(threshold=5).invoke({}, checkpointer=store)
        assert first.path == ["inc", "small"]
        forked = self.graph(threshold=0).invoke(Fork(first, step=1), checkpointer=store)
        assert forked.thread != first.thread
        assert forked.path == ["inc", "big"]
        assert [n.id for n in forked.state.notes] == ["big"]
        # The original thread is untouched.
        assert store.get(first.thread).state["notes"][0].id == "small"

    def test_fork_with_an_update(self):
        store = MemoryCheckpointer()
        first = self.graph(threshold=5).invoke({}, checkpointer=store)
        forked = self.graph(threshold=5).invoke(Fork(first.thread, step=1, update={"n": 50}), checkpointer=store)
        assert forked.path == ["inc", "big"] and forked.state.n == 50

    def test_fork_of_a_missing_step(self):
        store = MemoryCheckpointer()
        first = self.graph(threshold=5).invoke({}, checkpointer=store)
        from nbgraph import ResumeError

        with pytest.raises(ResumeError, match="has no checkpoint for step 9"):
            self.graph(5).invoke(Fork(first, step=9), checkpointer=store)

    async def test_started_runs_are_forkable_by_default(self):
        run = self.graph(threshold=5).start({}, display=False)
        await run
        forked = self.graph(threshold=0).invoke(Fork(run, step=1))
        assert forked.path == ["inc", "big"]


class TestDefaultStore:
    """What start() keeps in the process-wide store, and for how long."""

    def graph(self, ask: bool = False) -> Graph:
        async def node(state, ctx):
            if ask:
                await ctx.request_input("ok?")
            return {"n": state.n + 1}

        g = Graph("kept", state=State)
        g.add_node("a", node)
        g.add_edge(START, "a")
        g.add_edge("a", END)
        return g

    async def finished(self, **options) -> Any:
        # Awaited in a task of its own, as a notebook cell is: the loop then holds nothing of the run.
        box = []

        async def run_it():
            run = self.graph().start({}, display=False, **options)
            await run
            box.append(run)

        await asyncio.create_task(run_it())
        return box.pop()

    async def test_a_finished_run_is_kept_while_it_is_referenced(self):
        import gc

        store = default_checkpointer()
        run = await self.finished()
        result, thread = run.result(), run.thread
        assert store.get(thread).status == "done"
        del run
        gc.collect()
        assert store.get(thread) is not None  # its result still refers to it
        del result
        gc.collect()
        assert store.get(thread) is None

    async def test_an_interrupted_run_stays_resumable_when_dropped(self):
        import gc

        run = self.graph(ask=True).start({}, display=False, durable=True)
        thread = (await run).thread
        del run
        gc.collect()
        assert default_checkpointer().get(thread).status == "interrupted"
        assert (await self.graph(ask=True).ainvoke(Resume(thread, "yes"))).state.n == 1

    async def test_a_newer_run_on_the_same_thread_is_not_forgotten_with_the_old_one(self):
        import gc

        first = await self.finished(thread="reused")
        second = await self.finished(thread="reused", replace=True)
        del first
        gc.collect()
        assert default_checkpointer().get("reused") is not None
        del second
        gc.collect()
        assert default_checkpointer().get("reused") is None

    def test_a_store_keeps_at_most_max_threads(self):
        store = MemoryCheckpointer(max_threads=2)
        for thread in ("t1", "t2", "t3"):
            self.graph().invoke({}, thread=thread, checkpointer=store)
        assert store.threads() == ["t2", "t3"]
        self.graph().invoke({}, thread="t2", checkpointer=MemoryCheckpointer())
        store.put("t2", store.get("t2"))  # writing a thread makes it the newest
        self.graph().invoke({}, thread="t4", checkpointer=store)
        assert store.threads() == ["t2", "t4"]


class TestLeases:
    async def test_a_live_run_keeps_renewing_its_lease_through_a_long_node(self, tmp_path):
        path = tmp_path / "runs.db"
        store = SQLiteCheckpointer(path, lease_ttl=0.3)
        release = asyncio.Event()

        async def long(state):
            await release.wait()
            return {"n": 1}

        g = Graph("long", state=State)
        g.add_node("long", long)
        g.add_edge(START, "long")
        g.add_edge("long", END)
        run = g.start({}, checkpointer=store, display=False)
        db = sqlite3.connect(path)

        def expires():
            return db.execute("SELECT expires FROM nbgraph_leases WHERE thread = ?", (run.thread,)).fetchone()[0]

        first = expires()
        seen = [first]
        for _ in range(400):  # bounded: the renewer runs every 0.1 s
            if seen[-1] > first + 0.5:
                break
            await asyncio.sleep(0.01)
            seen.append(expires())
        assert seen[-1] > first + 0.5, "the lease was not renewed while the node ran"
        with pytest.raises(ThreadBusy):
            SQLiteCheckpointer(path).acquire(run.thread)  # still held: its holder is alive and renewing
        release.set()
        assert (await run).outcome == "done"
        assert db.execute("SELECT count(*) FROM nbgraph_leases").fetchone()[0] == 0  # released at the end
        db.close()

    def test_a_resumed_run_reads_one_row_and_its_history_on_demand(self, tmp_path):
        path = tmp_path / "runs.db"
        g = Graph("count", state=State, max_steps=100, max_same_node=100)

        async def inc(state):
            return {"n": state.n + 1, "notes": [Note(id=f"n{state.n}", text="x")]}

        async def ask(state, ctx):
            return {"n": state.n + int(await ctx.request_input("more?"))}

        g.add_node("inc", inc)
        g.add_node("ask", ask)
        g.add_edge(START, "inc")
        g.add_edge("inc", "inc", when=lambda s: s.n < 30)
        g.add_edge("inc", "ask")
        g.add_edge("ask", END)
        paused = g.invoke({}, checkpointer=SQLiteCheckpointer(path))
        assert paused.outcome == "interrupted" and paused.state.n == 30
        store = SQLiteCheckpointer(path)
        read = []
        history = store.history
        store.history = lambda thread: read.append(thread) or history(thread)  # type: ignore[method-assign]
        run = open_run(g.compile(), Resume(paused.thread, "5"), checkpointer=store)
        assert read == [] and run.viewed.recorded == 30  # the totals came with the last row
        result = asyncio.run(execute(run))
        assert result.state.n == 35 and read == []
        assert [s.step for s in result.history] == list(range(1, 32)) and read == [paused.thread]
        where = [(s.step, s.node, s.visit, s.edge) for s in result.history[:30]]
        assert where == [(s.step, s.node, s.visit, s.edge) for s in paused.history]
        assert [s.visit for s in result.history if s.node == "inc"][-1] == 30

    def test_force_takes_a_thread_over_and_the_old_holder_writes_nothing(self, tmp_path):
        from nbgraph import LeaseLost

        async def ask(state, ctx):
            return {"n": int(await ctx.request_input("how many?"))}

        g = Graph("ask", state=State)
        g.add_node("ask", ask)
        g.add_edge(START, "ask")
        g.add_edge("ask", END)
        store = SQLiteCheckpointer(tmp_path / "runs.db")
        paused = g.invoke({}, checkpointer=store)
        stuck = SQLiteCheckpointer(tmp_path / "runs.db")
        held = stuck.acquire(paused.thread, "stuck-run")  # a live run of this process that never ends
        with pytest.raises(ThreadBusy, match="being run by run 'stuck-run'"):
            g.invoke(Resume(paused, "3"), checkpointer=store)
        done = g.invoke(Resume(paused, "3", force=True), checkpointer=store)
        assert done.outcome == "done" and done.state.n == 3
        with pytest.raises(LeaseLost, match=f"lease on thread '{paused.thread}' lapsed or was taken over"):
            stuck.put(paused.thread, store.get(paused.thread), lease=held)
        assert store.get(paused.thread).status == "done"
        stuck.release(held)


def test_a_resume_keeps_the_same_node_streak():
    # max_same_node counts a node's runs in a row across a pause: a resume must not reset it.
    def build(asks: bool) -> Graph:
        async def loop(state, ctx):
            if asks and state.n == 2:
                await ctx.request_input("go on?")
            return {"n": state.n + 1}

        g = Graph("streak", max_same_node=4)
        g.add_node("a", loop)
        g.add_edge(START, "a")
        g.add_edge("a", "a", when=lambda s: s.n < 10, label="n < 10")
        g.add_edge("a", END)
        return g

    straight = build(asks=False).invoke({"n": 0})
    store = MemoryCheckpointer()
    paused = build(asks=True).invoke({"n": 0}, checkpointer=store)
    assert paused.outcome == "interrupted" and paused.state["n"] == 2
    resumed = build(asks=True).invoke(Resume(paused, "yes"), checkpointer=store)
    assert (
        (resumed.outcome, resumed.reason)
        == (straight.outcome, straight.reason)
        == ("aborted", "node 'a' ran 4 times in a row (max_same_node=4)")
    )
    assert resumed.state["n"] == straight.state["n"]
