"""Durable runs under faults: a full disk, a read-only file, a Redis server that dies or
restarts, corrupt files and rows, the wrong graph, duplicate and unstorable answers,
node timeouts, traces across resumes, and forks that point at their parent.

Everything here is real: tmpfs mounts (the tests run as root), a redis-server of the
test's own that is killed and started again on the same port, ``chattr +i``, and
``sqlite3`` updates to the stored rows. No store is mocked.
"""

from __future__ import annotations

import asyncio
import importlib.util
import os
import re
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Annotated, Any

import pydantic
import pytest
from faults import RedisProcess, fill_up, tmpfs
from graphs import trip_graph

import nbgraph
from nbgraph import (
    END,
    START,
    Budget,
    CheckpointError,
    Fork,
    Graph,
    GraphValidationError,
    MemoryCheckpointer,
    RedisCheckpointer,
    Resume,
    ResumeError,
    SQLiteCheckpointer,
    append,
    parse_ndjson,
)

# Subprocesses import the same nbgraph as this process.
SUBPROCESS_ENV = {**os.environ, "PYTHONPATH": str(Path(nbgraph.__file__).resolve().parent.parent)}


# -- helpers ---------------------------------------------------------------------------


@pytest.fixture
def redis_process(tmp_path):
    server = RedisProcess(tmp_path)
    server.start()
    try:
        yield server
    finally:
        server.kill()


def rows_of(path: Path | str, thread: str, table: str = "nbgraph_steps") -> list[tuple]:
    db = sqlite3.connect(path)
    try:
        return db.execute(f"SELECT * FROM {table} WHERE thread = ? ORDER BY step", (thread,)).fetchall()
    finally:
        db.close()


# -- 1. a full disk -------------------------------------------------------------------


class Pages(pydantic.BaseModel):
    n: int = 0
    pages: Annotated[list[str], append] = []


PAGES = 8


def growing_graph() -> Graph:
    """One node that appends a 2,000-character page to the state per step, PAGES times."""
    g = Graph("grow", state=Pages, max_steps=100, max_same_node=100)
    g.add_node("grow", lambda s: {"n": s.n + 1, "pages": [f"page {s.n + 1}: " + "x" * 2000]})
    g.add_edge(START, "grow")
    g.add_edge("grow", "grow", when=lambda s: s.n < PAGES, label=f"n < {PAGES}")
    g.add_edge("grow", END)
    return g


def test_a_full_disk_fails_the_run_keeps_the_last_checkpoint_and_a_resume_finishes_after_room_is_made(tmp_path):
    with tmpfs(tmp_path / "disk", "512k") as disk:
        filler = disk / "filler"
        filler.write_bytes(b"\0" * 320 * 1024)  # someone else's file, taking most of the disk
        path = disk / "runs.db"
        store = SQLiteCheckpointer(path)
        try:
            g = growing_graph()
            result = g.invoke({}, thread="full", checkpointer=store)  # must not raise

            assert result.outcome == "failed"
            found = re.fullmatch(
                rf"SQLite store {re.escape(str(path))}: could not write \(thread 'full', step (\d+)\): "
                r"the disk is full \(database or disk is full\)",
                result.reason,
            )
            assert found, result.reason
            failed_at = int(found[1])
            assert 2 <= failed_at <= PAGES  # the disk filled mid-run, after steps were written
            assert isinstance(result.error, CheckpointError)
            assert (result.error.store, result.error.thread, result.error.step) == (store.name, "full", failed_at)
            # The run stands at the last step written, and so does the store.
            assert result.state.n == failed_at - 1 and result.path == ["grow"] * (failed_at - 1)
            last = store.get("full")
            assert (last.step, last.next, last.state["n"], len(last.state["pages"])) == (
                failed_at - 1,
                "grow",
                failed_at - 1,
                failed_at - 1,
            )
            assert [s.step for s in store.history("full")] == list(range(1, failed_at))

            filler.unlink()  # room is made
            done = growing_graph().invoke(Resume("full"), checkpointer=store)
            assert done.outcome == "done", done.reason
            assert done.state.n == PAGES and done.path == ["grow"] * PAGES
            assert [p.split(":")[0] for p in done.state.pages] == [f"page {i}" for i in range(1, PAGES + 1)]
            assert store.get("full").status == "done"
        finally:
            store.close()


def test_a_disk_left_full_to_the_last_byte_still_lets_the_thread_resume_once_room_is_made(tmp_path):
    # When the disk is full, the failed run cannot even write that it let go of its
    # thread; the resume after room is made must still go on from the last checkpoint.
    with tmpfs(tmp_path / "disk", "512k") as disk:
        path = disk / "runs.db"
        store = SQLiteCheckpointer(path)
        filled = False

        def grow(state):
            nonlocal filled
            if state.n + 1 == 3 and not filled:
                fill_up(disk / "filler")
                filled = True
            return {"n": state.n + 1, "pages": [f"page {state.n + 1}: " + "x" * 2000]}

        g = growing_graph()
        g.add_node("grow", grow, replace=True)
        try:
            result = g.invoke({}, thread="brim", checkpointer=store)
            assert result.outcome == "failed"
            assert result.reason == (
                f"SQLite store {path}: could not write (thread 'brim', step 3): the disk is full (database or disk is full)"
            )
            assert (store.get("brim").step, result.state.n) == (2, 2)

            (disk / "filler").unlink()
            done = g.invoke(Resume("brim"), checkpointer=store)
            assert done.outcome == "done", done.reason
            assert done.state.n == PAGES and done.path == ["grow"] * PAGES
        finally:
            store.close()


# -- 2. a read-only file --------------------------------------------------------------

FLOW = Path(__file__).with_name("programs") / "trip_review.py"


@pytest.fixture
def flow():
    """The FLOW program: ``flow.build()`` in this process, ``flow.run(db, *args)`` in another one."""
    spec = importlib.util.spec_from_file_location("trip_review", FLOW)
    assert spec is not None and spec.loader is not None
    loaded = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(loaded)

    class Flow:
        build = staticmethod(loaded.build)

        @staticmethod
        def run(db: Path, *args: str) -> list[str]:
            done = subprocess.run(
                [sys.executable, str(FLOW), str(db), *args],
                capture_output=True,
                text=True,
                timeout=60,
                env=SUBPROCESS_ENV,
                check=False,
            )
            assert done.returncode == 0, done.stderr
            return done.stdout.split()

    return Flow


def test_a_read_only_file_refuses_the_resume_naming_the_path_and_leaves_the_thread_intact(tmp_path, flow):
    with tmpfs(tmp_path / "ro", "1m") as disk:
        path = disk / "runs.db"
        # Another process starts the run and exits: nothing holds the file open.
        assert flow.run(path, "start", "trip-ro")[:2] == ["interrupted", "input"]
        store = SQLiteCheckpointer(path)
        store.close()
        subprocess.run(["mount", "-o", "remount,ro", str(disk)], check=True)
        try:
            with pytest.raises(CheckpointError) as info:
                flow.build().invoke(Resume("trip-ro", "Porto"), checkpointer=store)
            assert str(info.value) == (
                f"SQLite store {path}: could not take the lease (thread 'trip-ro'): "
                "the file, or its directory, cannot be written (unable to open database file)"
            )
            assert (info.value.store, info.value.thread) == (store.name, "trip-ro")
            with pytest.raises(CheckpointError, match=rf"^SQLite store {re.escape(str(path))}: could not open: "):
                SQLiteCheckpointer(path)
        finally:
            subprocess.run(["mount", "-o", "remount,rw", str(disk)], check=True)
        # Nothing was written: once the file can be written again, the thread goes on.
        assert store.get("trip-ro").status == "interrupted"
        resumed = flow.build().invoke(Resume("trip-ro", "Porto"), checkpointer=store)
        assert (resumed.outcome, resumed.pauses[0].kind) == ("interrupted", "approval")
        store.close()


def test_a_file_made_read_only_mid_run_fails_the_run_naming_the_path_thread_and_step(tmp_path):
    # chattr +i makes writes fail even for root, through file handles already open.
    path = tmp_path / "runs.db"
    files = [path, tmp_path / "runs.db-wal"]  # not the -shm: SQLite maps it, and a write there is SIGBUS
    store = SQLiteCheckpointer(path)

    def freeze(state):
        subprocess.run(["chattr", "+i", *map(str, files)], check=True)
        return {"n": 2}

    g = Graph("frozen")
    g.add_node("a", lambda s: {"n": 1})
    g.add_node("freeze", freeze)
    g.add_edge(START, "a")
    g.add_edge("a", "freeze")
    g.add_edge("freeze", END)
    try:
        result = g.invoke({}, thread="ro", checkpointer=store)
    finally:
        subprocess.run(["chattr", "-i", *map(str, files)], check=True)
    assert result.outcome == "failed"
    assert (
        result.reason == f"SQLite store {path}: could not write (thread 'ro', step 2): OperationalError: disk I/O error"
    )
    assert (result.error.store, result.error.thread, result.error.step) == (store.name, "ro", 2)
    assert (result.state, result.path) == ({"n": 1}, ["a"])  # the step that was not saved did not happen
    last = store.get("ro")
    assert (last.step, last.next, last.state) == (1, "freeze", {"n": 1})
    store.close()


# -- 3. Redis killed and restarted ----------------------------------------------------


def waiting_graph(entered: asyncio.Event, go: asyncio.Event) -> Graph:
    """a -> wait (until ``go``) -> c -> END, async, as a worker's graph would be."""

    async def a(state):
        return {"n": 1}

    async def wait(state):
        entered.set()
        await go.wait()
        return {"n": 2}

    async def c(state):
        return {"n": 3}

    g = Graph("worker")
    g.add_node("a", a)
    g.add_node("wait", wait)
    g.add_node("c", c)
    g.add_edge(START, "a")
    g.add_edge("a", "wait")
    g.add_edge("wait", "c")
    g.add_edge("c", END)
    return g


async def test_a_killed_redis_fails_the_run_naming_the_url_and_a_restarted_empty_one_is_not_resumed(redis_process):
    store = RedisCheckpointer(redis_process.url)
    entered, go = asyncio.Event(), asyncio.Event()
    g = waiting_graph(entered, go)
    try:
        run = g.start({}, thread="killed", checkpointer=store, display=False)
        await entered.wait()
        redis_process.kill()
        go.set()
        result = await run  # after the client's bounded retries; never a raw exception
        assert result.outcome == "failed"
        assert re.fullmatch(
            rf"Redis store {re.escape(redis_process.url)}: could not write \(thread 'killed', step 2\): "
            rf"ConnectionError: Error 111 connecting to 127\.0\.0\.1:{redis_process.port}\. Connection refused\.",
            result.reason,
        ), result.reason
        assert (result.error.store, result.error.thread, result.error.step) == (store.name, "killed", 2)
        assert (result.state, result.path) == ({"n": 1}, ["a"])

        redis_process.start()  # the same port, and no data: the thread's steps are gone
        with pytest.raises(ResumeError) as info:
            waiting_graph(entered, go).invoke(Resume("killed"), checkpointer=store)
        assert str(info.value) == (
            f"no checkpoint for thread 'killed' in RedisCheckpointer({redis_process.url!r}): pass the checkpointer "
            "the run used; if it was this one, the thread was deleted or the store lost its data"
        )
    finally:
        store.close()


async def test_a_redis_restarted_between_two_steps_never_lets_the_run_end_done(redis_process):
    store = RedisCheckpointer(redis_process.url)
    entered, go = asyncio.Event(), asyncio.Event()
    g = waiting_graph(entered, go)
    try:
        run = g.start({}, thread="restarted", checkpointer=store, display=False)
        await entered.wait()
        assert [s.step for s in store.history("restarted")] == [1]
        redis_process.kill()
        redis_process.start()  # back at once, empty: step 1 and the lease are gone
        go.set()
        result = await run
        assert result.outcome == "failed"
        assert result.reason == (
            f"this run's lease on thread 'restarted' lapsed or was taken over by another run "
            f"(Redis store {redis_process.url}); nothing more was written (the lease is gone from the server: "
            "another run took the thread and finished, or the server restarted and lost its data)"
        )
        assert (result.state, result.path) == ({"n": 1}, ["a"])
        assert store.get("restarted") is None and store.history("restarted") == []  # nothing written after the loss
    finally:
        store.close()


# -- 4. corrupt files and rows --------------------------------------------------------


def test_a_file_that_is_not_a_database_is_named(tmp_path):
    path = tmp_path / "garbage.db"
    path.write_bytes(b"\x13\x37 this is not a database, just bytes " * 200)
    with pytest.raises(CheckpointError) as info:
        SQLiteCheckpointer(path)
    assert str(info.value) == (
        f"SQLite store {path}: could not open: the file is corrupt or not an nbgraph database (file is not a database)"
    )
    assert info.value.store == f"SQLite store {path}"


def chain_graph() -> Graph:
    """a -> b -> c -> d (approval) -> END: interrupted with three steps taken (the fourth
    waits for its verdict, kept beside the third's checkpoint)."""
    g = Graph("chain")
    g.add_node("a", lambda s: {"a": 1})
    g.add_node("b", lambda s: {"b": 2})
    g.add_node("c", lambda s: {"c": 3})
    g.add_node("d", lambda s: {"d": 4}, approval=True)
    g.add_edge(START, "a")
    g.add_edge("a", "b")
    g.add_edge("b", "c")
    g.add_edge("c", "d")
    g.add_edge("d", END)
    return g


NOT_JSON = r"is not valid JSON \(.+\)"
NOT_A_CHECKPOINT = "is not an nbgraph checkpoint"


@pytest.mark.parametrize(
    ("column", "step", "text", "says", "reads"),
    [
        # The last row: every read of the thread needs it.
        ("data", 3, "{not json", NOT_JSON, ("get", "get_step", "history", "resume")),
        ("data", 3, '{"x": 1}', NOT_A_CHECKPOINT, ("get", "get_step", "history", "resume")),
        ("data", 3, "[1, 2]", NOT_A_CHECKPOINT, ("get", "get_step", "history", "resume")),
        # An earlier row: its step's checkpoint and the history need it (a resume reads only
        # the last row and the state, so the damage shows when its history is read).
        ("data", 2, '{"x": 1}', NOT_A_CHECKPOINT, ("get_step", "history", "resumed-history")),
        # An earlier row's patches: every state after it is rebuilt through them.
        ("patches", 2, "garbage", NOT_JSON, ("get", "get_step", "resume")),
        ("patches", 2, '{"set": {"b": 2}}', ".+", ("get", "get_step", "resume")),
        ("patches", 2, "[1]", ".+", ("get", "get_step", "resume")),
        # A checkpoint whose parts are not what a checkpoint holds.
        ("data", 3, '{"graph": "chain", "status": "interrupted", "frames": [{"x": 1}]}', ".+", ("get", "resume")),
        ("data", 3, '{"graph": "chain", "status": "interrupted", "pauses": [{"x": 1}]}', ".+", ("get", "resume")),
    ],
    ids=[
        "data-invalid-json",
        "data-json-object-not-a-checkpoint",
        "data-json-list",
        "earlier-data-not-a-checkpoint",
        "patches-invalid-json",
        "patches-json-not-a-list",
        "patches-list-of-non-patches",
        "frames-not-frames",
        "pauses-not-pauses",
    ],
)
def test_a_corrupt_row_is_a_checkpoint_error_naming_the_path_thread_and_step(tmp_path, column, step, text, says, reads):
    path = tmp_path / "runs.db"
    paused = chain_graph().invoke({}, thread="t", checkpointer=SQLiteCheckpointer(path))
    assert (paused.outcome, paused.pauses[0].kind) == ("interrupted", "approval")
    db = sqlite3.connect(path)
    with db:
        assert (
            db.execute(f"UPDATE nbgraph_steps SET {column} = ? WHERE thread = 't' AND step = ?", (text, step)).rowcount
            == 1
        )
    db.close()

    store = SQLiteCheckpointer(path)
    operations = {
        "get": lambda: store.get("t"),
        "get_step": lambda: store.get("t", step),
        "history": lambda: store.history("t"),
        "resume": lambda: chain_graph().invoke(Resume("t", True), checkpointer=store),
        "resumed-history": lambda: chain_graph().invoke(Resume("t", True), checkpointer=store).history,
    }
    for name in reads:
        with pytest.raises(CheckpointError) as info:
            operations[name]()
        message = str(info.value)
        assert re.fullmatch(
            rf"SQLite store {re.escape(str(path))}: the .*of thread 't' at step {step} {says}", message
        ), (
            name,
            message,
        )
        assert (info.value.store, info.value.thread, info.value.step) == (store.name, "t", step), name
    store.close()


# -- 5. the wrong graph ---------------------------------------------------------------


def test_a_resume_with_a_graph_that_lacks_the_node_or_has_another_name_is_refused(tmp_path):
    store = SQLiteCheckpointer(tmp_path / "runs.db")
    paused = trip_graph().invoke({}, thread="t5", checkpointer=store)
    assert (paused.outcome, paused.pauses[0].node) == ("interrupted", "ask")

    without_ask = Graph("trip")  # the same name, but `ask` was removed
    without_ask.add_node("book", lambda s: {"booked": "?"})
    without_ask.add_edge(START, "book")
    without_ask.add_edge("book", END)
    with pytest.raises(ResumeError) as info:
        without_ask.invoke(Resume("t5", "Porto"), checkpointer=store)
    assert str(info.value) == (
        "thread 't5' stopped at node 'ask', which graph 'trip' does not have; put the node back, "
        "or start from an earlier step with Fork('t5', step=...)"
    )

    with pytest.raises(ResumeError) as info:
        trip_graph("voyage").invoke(Resume("t5", "Porto"), checkpointer=store)
    assert str(info.value) == (
        "thread 't5' holds a run of graph 'trip', not 'voyage'; resume it with that graph, "
        "or start from its state in this one with Fork('t5', step=...)"
    )

    # Neither refusal touched the thread or kept its lease.
    assert store.get("t5").status == "interrupted"
    done = trip_graph().invoke(Resume("t5", "Porto"), checkpointer=store)
    assert (done.outcome, done.state["booked"]) == ("done", "hotel in Porto")
    store.close()


# -- 6. duplicate and stale answers ---------------------------------------------------


def two_approvals() -> Graph:
    g = Graph("publish")
    g.add_node("draft", lambda s: {"text": "draft"}, approval=True)
    g.add_node("publish", lambda s: {"published": s.text}, approval=True)
    g.add_edge(START, "draft")
    g.add_edge("draft", "publish")
    g.add_edge("publish", END)
    return g


def test_a_duplicated_or_stale_answer_is_refused_naming_the_open_pause(tmp_path):
    store = SQLiteCheckpointer(tmp_path / "runs.db")
    first = two_approvals().invoke({}, thread="t6", checkpointer=store)
    assert (first.outcome, first.pauses[0].node) == ("interrupted", "draft")
    second = two_approvals().invoke(Resume(first, True))
    assert (second.outcome, second.pauses[0].node) == ("interrupted", "publish")
    open_now = second.pauses[0]

    # The same answer again (a double click, a retried request) must not approve `publish`.
    with pytest.raises(ResumeError) as info:
        two_approvals().invoke(Resume(first, True))
    assert str(info.value) == (
        f"pause {first.pauses[0].id!r} is not open: it was answered already, approved, at node 'draft' (step 1). "
        f"Nothing was answered. Open now: {open_now.id!r} at node 'publish' (\"Approve the result of 'publish'?\")"
    )
    with pytest.raises(ResumeError, match=r"^'stale-id' is not a pause id \(answer pauses by their pause.id\)"):
        two_approvals().invoke(Resume("t6", True, pause="stale-id"), checkpointer=store)
    kept = store.get("t6")
    # (The step waiting for its verdict is kept whole, as a settled slot: the checkpoint is the step before it.)
    assert (kept.step, kept.status, kept.pauses[0].id, len(kept.settled)) == (1, "interrupted", open_now.id, 1)

    done = two_approvals().invoke(Resume("t6", True, pause=open_now.id), checkpointer=store)
    assert (done.outcome, done.state["published"]) == ("done", "draft")
    with pytest.raises(ResumeError) as info:
        two_approvals().invoke(Resume(second, True))
    assert str(info.value) == (
        f"thread 't6' already finished (done); pause {open_now.id!r} was answered already, approved, at node 'publish' "
        "(step 2); fork it to run again"
    )
    store.close()


def test_an_answer_for_a_thread_that_waits_for_none_is_refused(tmp_path):
    store = SQLiteCheckpointer(tmp_path / "runs.db")
    fixed = False

    def flaky(state):
        if not fixed:
            raise ConnectionError("service down")
        return {"b": 2}

    g = Graph("flaky")
    g.add_node("a", lambda s: {"a": 1})
    g.add_node("b", flaky)
    g.add_edge(START, "a")
    g.add_edge("a", "b")
    g.add_edge("b", END)
    failed = g.invoke({}, thread="t6b", checkpointer=store)
    assert failed.reason == "node 'b' failed at step 2: ConnectionError: service down"
    refusal = (
        "thread 't6b' is not waiting for an answer: it stopped failed "
        "(node 'b' failed at step 2: ConnectionError: service down); resume it without one"
    )
    with pytest.raises(ResumeError) as info:
        g.invoke(Resume("t6b", "an answer nobody asked for"), checkpointer=store)
    assert str(info.value) == refusal
    with pytest.raises(ResumeError) as info:
        g.invoke(Resume("t6b", pause="some-pause"), checkpointer=store)
    assert str(info.value) == refusal
    fixed = True
    done = g.invoke(Resume("t6b"), checkpointer=store)
    assert (done.outcome, done.state) == ("done", {"a": 1, "b": 2})
    store.close()


# -- 7. answers that cannot be stored -------------------------------------------------

UNSTORABLE = r"^the answer to 'Which city\?' at node 'ask' cannot be stored: .+; answer with plain data \(text, numbers, lists, dicts\)$"


def test_a_non_json_answer_to_a_durable_pause_is_refused_and_the_thread_stays_resumable(tmp_path):
    store = SQLiteCheckpointer(tmp_path / "runs.db")
    paused = trip_graph().invoke({}, thread="t7", checkpointer=store)
    with pytest.raises(ResumeError, match=UNSTORABLE):
        trip_graph().invoke(Resume("t7", object()), checkpointer=store)
    kept = store.get("t7")
    assert (kept.status, kept.pauses[0].id) == ("interrupted", paused.pauses[0].id)
    done = trip_graph().invoke(Resume("t7", "Porto"), checkpointer=store)
    assert (done.outcome, done.state["booked"]) == ("done", "hotel in Porto")
    store.close()


async def test_a_non_json_answer_to_a_live_pause_is_refused_and_the_pause_stays_open():
    run = trip_graph().start({}, checkpointer=MemoryCheckpointer(), display=False)
    pause = await run.next_pause()
    with pytest.raises(ResumeError, match=UNSTORABLE):
        run.answer(object())
    assert run.pauses == (pause,) and not run.done
    run.answer("Porto")
    result = await run
    assert (result.outcome, result.state["booked"]) == ("done", "hotel in Porto")


class Found(pydantic.BaseModel):
    found: Annotated[list[Any], append] = []


def test_a_branch_update_that_cannot_be_stored_beside_a_paused_branch_fails_the_run_naming_it(tmp_path):
    # The paused branch makes the run wait in a checkpoint, which must keep the finished branch too.
    store = SQLiteCheckpointer(tmp_path / "runs.db")
    fixed = False

    async def work(item, ctx):
        if item == "ask":
            return {"found": [await ctx.request_input("Which city?")]}
        return {"found": [item if fixed else object()]}

    g = Graph("mixed", state=Found)
    g.add_node("work", work)
    g.add_edge(START, "work", each=lambda s: ["ask", "kept"])
    g.add_edge("work", END)
    failed = g.invoke({}, thread="t7b", checkpointer=store)
    assert failed.outcome == "failed"
    assert failed.reason == (
        "the update of node 'work' in branch 'work[1]' (step 2) cannot be checkpointed: field 'found' holds list, "
        "which is not JSON-serializable (object is not JSON-serializable); store plain data or pydantic models in the state"
    )
    assert (failed.error.node, failed.error.field) == ("work", "found")
    fixed = True
    paused = g.invoke(Resume("t7b"), checkpointer=store)
    assert paused.outcome == "interrupted", paused.reason
    done = g.invoke(Resume(paused, "Porto"))
    assert (done.outcome, done.state.found) == ("done", ["Porto", "kept"])
    store.close()


# -- 8. node timeouts and time budgets ------------------------------------------------


def hanging_graph(timeout: float | None, hang: bool) -> Graph:
    async def slow(state):
        if hang:
            await asyncio.Event().wait()  # never set
        return {"slow": "finished"}

    g = Graph("hanging")
    g.add_node("a", lambda s: {"a": 1})
    g.add_node("slow", slow, timeout=timeout)
    g.add_edge(START, "a")
    g.add_edge("a", "slow")
    g.add_edge("slow", END)
    return g


def test_a_node_timeout_fails_the_run_and_a_resume_with_the_fixed_node_finishes(tmp_path):
    store = SQLiteCheckpointer(tmp_path / "runs.db")
    result = hanging_graph(0.2, hang=True).invoke({}, thread="t8", checkpointer=store)
    assert result.outcome == "failed"
    assert result.reason == "node 'slow' timed out after 0.2 s (timeout=0.2) at step 2"
    kept = store.get("t8")
    assert (kept.step, kept.status, kept.next, kept.reason) == (1, "failed", "slow", result.reason)
    done = hanging_graph(0.2, hang=False).invoke(Resume("t8"), checkpointer=store)
    assert (done.outcome, done.path, done.state) == ("done", ["a", "slow"], {"a": 1, "slow": "finished"})
    store.close()


def test_a_time_budget_aborts_an_async_node_that_never_returns():
    result = hanging_graph(None, hang=True).invoke({}, budget=Budget(seconds=0.3), checkpointer=MemoryCheckpointer())
    assert result.outcome == "aborted"
    assert result.reason == "budget exceeded: seconds 0.3 used up during node 'slow' at step 2"


async def test_time_waiting_for_a_person_counts_against_neither_the_node_timeout_nor_the_budget():
    async def ask(state, ctx):
        return {"answer": await ctx.request_input("Go on?")}

    g = Graph("patient")
    g.add_node("ask", ask, timeout=0.2)
    g.add_edge(START, "ask")
    g.add_edge("ask", END)
    run = g.start({}, checkpointer=MemoryCheckpointer(), budget=Budget(seconds=0.3), display=False)
    pause = await run.next_pause()
    await asyncio.sleep(0.5)  # the person takes longer than the node's timeout and the whole budget
    assert not run.done and run.pauses == (pause,)
    run.answer("yes")
    result = await run
    assert (result.outcome, result.reason, result.state) == ("done", None, {"answer": "yes"})


def test_a_timeout_on_a_synchronous_node_is_a_build_error():
    g = Graph("sync")
    g.add_node("s", lambda s: {"s": 1}, timeout=1)
    g.add_edge(START, "s")
    g.add_edge("s", END)
    with pytest.raises(GraphValidationError) as info:
        g.compile()
    assert info.value.problems == [
        "node 's': timeout= needs an async node (a synchronous one cannot be interrupted); make s an `async def`"
    ]


# -- 9. traces across resumes ---------------------------------------------------------


def outline(event: Any) -> tuple:
    kind = event.type
    if kind == "run-start":
        return (kind, event.resumed)
    if kind in ("node-enter", "node-exit"):
        return (kind, event.node, event.step)
    if kind == "route":
        return (kind, event.source, event.target)
    if kind == "interrupt":
        return (kind, event.pause.node, event.pause.kind, event.pause.id)
    if kind == "answer":
        return (kind, event.pause_id, event.answer)
    if kind == "done":
        return (kind, event.outcome)
    return (kind,)


def expected_trace(input_pause: str, approval_pause: str) -> list[tuple]:
    return [
        ("run-start", True),
        ("route", START, "ask"),
        ("node-enter", "ask", 1),
        ("interrupt", "ask", "input", input_pause),
        ("answer", input_pause, "Porto"),
        ("node-exit", "ask", 1),
        ("route", "ask", "review"),
        ("node-enter", "review", 2),
        ("node-exit", "review", 2),
        ("interrupt", "review", "approval", approval_pause),
        ("answer", approval_pause, {"approved": True, "update": None}),
        ("route", "review", END),
        ("done", "done"),
    ]


def test_a_thread_resumed_twice_from_fresh_graphs_traces_both_pauses_in_order(flow):
    store = MemoryCheckpointer()
    first = flow.build().invoke({}, thread="t9", checkpointer=store)
    second = flow.build().invoke(Resume("t9", "Porto"), checkpointer=store)
    third = flow.build().invoke(Resume("t9", True), checkpointer=store)
    assert (first.pauses[0].kind, second.pauses[0].kind, third.outcome) == ("input", "approval", "done")
    trace = [outline(e) for e in parse_ndjson(third.to_ndjson())]
    assert trace == expected_trace(first.pauses[0].id, second.pauses[0].id)
    assert third.state == {"city": "Porto", "plan": "a week in Porto"}


def test_a_thread_resumed_in_another_process_traces_both_pauses_in_order(tmp_path, flow):
    db = tmp_path / "runs.db"
    first = flow.build().invoke({}, thread="t9s", checkpointer=SQLiteCheckpointer(db))
    assert first.pauses[0].kind == "input"
    # The input is answered by another process...
    outcome, kind, approval_id = flow.run(db, "resume", "t9s", "Porto")
    assert (outcome, kind) == ("interrupted", "approval")
    # ...and the approval here, by a graph and a store that never saw the run.
    third = flow.build().invoke(Resume("t9s", True, pause=approval_id), checkpointer=SQLiteCheckpointer(db))
    assert third.outcome == "done"
    trace = [outline(e) for e in parse_ndjson(third.to_ndjson())]
    assert trace == expected_trace(first.pauses[0].id, approval_id)


# -- 10. forks point at their parent --------------------------------------------------


def counting_graph(limit: int) -> Graph:
    g = Graph("count", max_steps=5000, max_same_node=5000)
    g.add_node("inc", lambda s: {"n": s.n + 1})
    g.add_edge(START, "inc")
    g.add_edge("inc", "inc", when=lambda s: s.n < limit, label=f"n < {limit}")
    g.add_edge("inc", END)
    return g


def test_a_fork_of_a_long_thread_points_at_its_parent_instead_of_copying_it(tmp_path):
    path = tmp_path / "runs.db"
    store = SQLiteCheckpointer(path)
    parent = counting_graph(2000).invoke({"n": 0}, thread="parent", checkpointer=store)
    assert (parent.outcome, parent.state["n"], len(parent.history)) == ("done", 2000, 2000)
    parent_rows = rows_of(path, "parent")
    parent_snapshots = rows_of(path, "parent", "nbgraph_snapshots")
    assert len(parent_rows) == 2001

    # A fork that ends where it starts (n < 1000 no longer holds): one row, pointing at the parent.
    rows_at_start = []
    stopped = counting_graph(1000).invoke(
        Fork("parent", step=1000, thread="stopped"),
        checkpointer=store,
        on_event=lambda e: rows_at_start.append(len(rows_of(path, "stopped"))) if e.type == "run-start" else None,
    )
    assert rows_at_start == [1]
    assert (stopped.outcome, stopped.state["n"], len(stopped.history)) == ("done", 1000, 1000)
    assert [row[1] for row in rows_of(path, "stopped")] == [1000]
    assert rows_of(path, "stopped", "nbgraph_forks") == [("stopped", "parent", 1000)]

    # A fork that runs ten steps further writes those ten, not the thousand before them.
    longer = counting_graph(1010).invoke(Fork("parent", step=1000, thread="longer"), checkpointer=store)
    assert (longer.outcome, longer.state["n"], len(longer.history)) == ("done", 1010, 1010)
    assert [row[1] for row in rows_of(path, "longer")] == list(range(1000, 1011))
    assert longer.state_at(500) == parent.state_at(500) == {"n": 500}
    assert store.get("longer", 500).state == store.get("parent", 500).state == {"n": 500}
    assert [s.step for s in store.history("longer")] == list(range(1, 1011))

    # The parent is untouched.
    assert rows_of(path, "parent") == parent_rows
    assert rows_of(path, "parent", "nbgraph_snapshots") == parent_snapshots
    assert store.get("parent").state == {"n": 2000} and store.get("parent").status == "done"
    store.close()
