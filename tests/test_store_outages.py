"""A store that fails in the middle of a run: the step whose write failed runs again on
resume, exactly once, whatever the store recorded as the run ended.

A run fans out four branches a round for twelve rounds. In round 8 something goes wrong
underneath, for real: another connection holds SQLite's write lock past the busy
timeout, the tmpfs under the file fills up, the file is made immutable, the
redis-server (append-only, synced at every write) is killed with SIGKILL and started
again, or the network loses the reply to a write that landed. The fault is mended
either while the run records that it failed (the hardest case: that last write goes
through) or after it has ended. The run ends ``failed`` naming the store, the thread
and the step; the store holds nothing past the last step whose write succeeded; and a
resume from a fresh store object ends with exactly the uninterrupted run's texts and
step records, round 8's branches having run twice (once cut short, once for good) and
every other one once.
"""

from __future__ import annotations

import json
import re
import sqlite3
import subprocess
import sys
import threading
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import pydantic
import pytest
from faults import RedisProcess, ReplyLosingProxy, fill_up, tmpfs

from nbgraph import (
    END,
    START,
    CheckpointError,
    Graph,
    MemoryCheckpointer,
    RedisCheckpointer,
    Resume,
    Send,
    SQLiteCheckpointer,
    append,
)

ROUNDS, BRANCHES, FAULT_AT = 12, 4, 8
EXPECTED = [f"r{r}b{b}" for r in range(ROUNDS) for b in range(BRANCHES)]
BEFORE_FAULT = EXPECTED[: FAULT_AT * BRANCHES]


class Rounds(pydantic.BaseModel):
    round: int = 0
    texts: Annotated[list[str], append] = []


def rounds_graph(calls: Counter, fault: Callable[[], Any] | None = None) -> Graph:
    """plan -> four ``work`` branches -> next, ROUNDS times; ``fault`` strikes in round FAULT_AT's first branch."""

    def work(payload):
        r, b = payload
        calls[r, b] += 1
        if fault is not None and (r, b) == (FAULT_AT, 0) and calls[r, b] == 1:
            fault()
        return {"texts": [f"r{r}b{b}"]}

    g = Graph("rounds", state=Rounds, max_steps=1000)
    g.add_node("plan", lambda s: [Send("work", (s.round, b)) for b in range(BRANCHES)], destinations=["work"])
    g.add_node("work", work)
    g.add_node("next", lambda s: {"round": s.round + 1})
    g.add_edge(START, "plan")
    g.add_edge("work", "next")
    g.add_edge("next", "plan", when=lambda s: s.round < ROUNDS, label="more rounds")
    g.add_edge("next", END)
    return g


def outline(history) -> list[tuple]:
    return [(s.step, s.node, s.branch, s.update and tuple(s.update.get("texts", ()))) for s in history]


REFERENCE = outline(rounds_graph(Counter()).invoke({}, checkpointer=MemoryCheckpointer()).history)


def run_into(
    store, fault: Callable[[], Any], mend_while_failing: Callable[[], Any] | None, *, failing: str, reason: str
) -> Counter:
    """Run the rounds on ``store`` until ``fault`` fails a write; check what the run says
    and what the store holds. ``mend_while_failing`` runs as the run records its failure."""
    calls: Counter = Counter()
    seen = []

    def listen(event):
        seen.append(event.type)
        if event.type == "error" and mend_while_failing is not None:
            mend_while_failing()  # (the run's last write, its status, comes after this)

    result = rounds_graph(calls, fault).invoke({}, thread="rounds", checkpointer=store, on_event=listen)
    assert result.outcome == "failed", result.reason
    found = re.fullmatch(
        rf"{re.escape(store.name)}: could not {failing} \(thread 'rounds', step (\d+)\): {reason}", result.reason
    )
    assert found, result.reason
    assert isinstance(result.error, CheckpointError) and (result.error.store, result.error.thread) == (
        store.name,
        "rounds",
    )
    assert seen.count("error") == 1 and seen[-1] == "done"
    # Round FAULT_AT ran and was cut short: the run stands where the store stands.
    assert calls[FAULT_AT, BRANCHES - 1] == 1 and calls[FAULT_AT + 1, 0] == 0
    assert list(result.state.texts) == BEFORE_FAULT
    return calls


def check_store_holds_only_what_was_written(store) -> None:
    last = store.get("rounds")
    assert last.status in ("failed", "running")  # ("running": the store could not take the status either)
    assert last.state["texts"] == BEFORE_FAULT and last.state["round"] == FAULT_AT
    assert [frame.node for frame in last.frames] == ["work"] * BRANCHES
    assert outline(store.history("rounds")) == REFERENCE[: len(store.history("rounds"))]
    assert store.history("rounds")[-1].node == "plan"


def resume_exactly(make_store: Callable[[], Any], calls: Counter) -> None:
    """Resume from a store object of its own: the uninterrupted run's texts and records,
    round FAULT_AT's branches run once more and nothing else again."""
    store = make_store()
    done = rounds_graph(calls).invoke(Resume("rounds"), checkpointer=store)
    assert done.outcome == "done", done.reason
    assert list(done.state.texts) == EXPECTED
    assert outline(store.history("rounds")) == REFERENCE
    assert {key: n for key, n in calls.items() if n != 1} == {(FAULT_AT, b): 2 for b in range(BRANCHES)}
    assert sum(calls.values()) == ROUNDS * BRANCHES + BRANCHES


# -- SQLite -----------------------------------------------------------------------------

MENDED = ["while the run records its failure", "after the run has ended"]


@pytest.mark.parametrize("mended", MENDED)
def test_sqlite_write_lock_held_past_the_busy_timeout(tmp_path, mended):
    path = tmp_path / "runs.db"
    store = SQLiteCheckpointer(path, busy_timeout=0.2)
    holder = sqlite3.connect(path, isolation_level=None)  # another program using the same file
    release = lambda: holder.execute("ROLLBACK")  # noqa: E731
    calls = run_into(
        store,
        lambda: holder.execute("BEGIN IMMEDIATE"),
        release if mended == MENDED[0] else None,
        failing="write",
        reason=r"OperationalError: database is locked",
    )
    if mended == MENDED[1]:
        release()
    check_store_holds_only_what_was_written(store)
    resume_exactly(lambda: SQLiteCheckpointer(path), calls)
    holder.close()
    store.close()


@pytest.mark.parametrize("mended", MENDED)
def test_sqlite_on_a_tmpfs_that_fills_up(tmp_path, mended):
    with tmpfs(tmp_path / "disk", "2m") as disk:
        path, filler = disk / "runs.db", disk / "filler"
        store = SQLiteCheckpointer(path)
        calls = run_into(
            store,
            lambda: fill_up(filler),
            filler.unlink if mended == MENDED[0] else None,
            failing="write",
            reason=r"the disk is full \(database or disk is full\)",
        )
        if mended == MENDED[1]:
            # While the disk is still full, another process reads the last good checkpoint.
            read = in_another_process("read", path, "rounds")
            assert (read["step"], read["status"], read["next"]) == (
                len(store.history("rounds")),
                "running",
                ["work"] * BRANCHES,
            )
            assert read["state"]["texts"] == BEFORE_FAULT
            filler.unlink()
        check_store_holds_only_what_was_written(store)
        resume_exactly(lambda: SQLiteCheckpointer(path), calls)
        store.close()


@pytest.mark.parametrize("mended", MENDED)
def test_sqlite_file_made_immutable(tmp_path, mended):
    path = tmp_path / "runs.db"
    files = [str(path), str(path) + "-wal"]  # not the -shm: SQLite maps it, and a write there is SIGBUS
    store = SQLiteCheckpointer(path)
    thaw = lambda: subprocess.run(["chattr", "-i", *files], check=True)  # noqa: E731
    try:
        calls = run_into(
            store,
            lambda: subprocess.run(["chattr", "+i", *files], check=True),
            thaw if mended == MENDED[0] else None,
            failing="write",
            reason=r"OperationalError: disk I/O error",
        )
    finally:
        thaw()
    check_store_holds_only_what_was_written(store)
    resume_exactly(lambda: SQLiteCheckpointer(path), calls)
    store.close()


def in_another_process(command: str, path: Path, thread: str) -> dict | None:
    done = subprocess.run(
        [sys.executable, str(Path(__file__).with_name("programs") / "sqlite_thread.py"), command, str(path), thread],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout) if command == "read" else None


def test_the_last_good_checkpoint_reads_back_from_a_full_disk_that_nobody_has_open(tmp_path):
    """Opening a WAL file makes its shared-memory index, which needs room: the file is read as it is."""
    with tmpfs(tmp_path / "disk", "2m") as disk:
        path, filler = disk / "runs.db", disk / "filler"
        in_another_process("run", path, "count")  # it ends, and nothing holds the file open
        fill_up(filler)
        read = in_another_process("read", path, "count")
        assert (read["status"], read["steps"], read["state"]["n"]) == ("done", 20, 20)
        assert read["state"]["seen"] == [f"step {n}" for n in range(1, 21)]

        store = SQLiteCheckpointer(path)
        assert store.get("count").state["n"] == 20 and len(store.history("count")) == 20
        # (Open for reading only, or open for writing but with no room to write: the disk is full either way.)
        with pytest.raises(CheckpointError, match=r"could not take the lease \(thread 'rounds'\): the disk is full"):
            rounds_graph(Counter()).invoke({}, thread="rounds", checkpointer=store)
        filler.unlink()  # room is made: the same store object writes again
        again = rounds_graph(Counter()).invoke({}, thread="rounds", checkpointer=store)
        assert again.outcome == "done" and list(again.state.texts) == EXPECTED
        store.close()


# -- Redis ------------------------------------------------------------------------------

OUTAGES = ["back while the run records its failure", 0.6, 1.0, 1.4]
"""When the server comes back: at once as the run records its failure, or so many seconds
after the failed write (the run's last write, its status, then fails too)."""


@pytest.mark.parametrize("outage", OUTAGES)
def test_redis_killed_mid_run_and_started_again(tmp_path, outage):
    server = RedisProcess(tmp_path, appendonly=True)
    server.start()
    timers: list[threading.Timer] = []

    def start_later():
        # Counted from the failed write, not from the kill: a busy machine may take longer
        # than the outage to reach the write, which would then find the server back.
        timers.append(threading.Timer(outage, server.start))
        timers[0].start()

    try:
        store = RedisCheckpointer(server.url)
        calls = run_into(
            store,
            server.kill,
            server.start if outage == OUTAGES[0] else start_later,
            failing="write",
            reason=r"ConnectionError: Error 111 connecting to .*",
        )
        for timer in timers:
            timer.join()  # the server is back
        check_store_holds_only_what_was_written(RedisCheckpointer(server.url))
        resume_exactly(lambda: RedisCheckpointer(server.url), calls)
    finally:
        server.kill()


def test_redis_reply_lost_after_the_write_landed(tmp_path):
    """The client cannot tell a write that landed from one that did not; sent again, it counts once."""
    server = RedisProcess(tmp_path)
    server.start()
    proxy = ReplyLosingProxy(server.port, marker=b":steps")
    try:
        calls: Counter = Counter()
        store = RedisCheckpointer(proxy.url)
        result = rounds_graph(calls, proxy.armed.set).invoke({}, thread="rounds", checkpointer=store)
        assert proxy.lost == 1
        assert result.outcome == "done", result.reason
        assert list(result.state.texts) == EXPECTED
        assert outline(RedisCheckpointer(server.url).history("rounds")) == REFERENCE
        assert set(calls.values()) == {1}
    finally:
        proxy.close()
        server.kill()
