"""ThreadBusy says who holds the thread (which run, process and host, since when, until when) and
how to take it over, in every store, and carries that holder's lease."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from nbgraph import MemoryCheckpointer, PostgresCheckpointer, RedisCheckpointer, SQLiteCheckpointer, ThreadBusy
from nbgraph.checkpoint.leases import Lease

Store = MemoryCheckpointer | SQLiteCheckpointer | RedisCheckpointer | PostgresCheckpointer

STORES = ["memory", "sqlite", "redis", "postgres"]

TAKE_OVER = r"take the thread over with checkpointer\.unlock\('busy'\) or resume with force=True"

# A second holder in a process of its own: it takes the thread, says so, and holds it (its lease
# renewed) until the test closes its stdin.
HOLDER = """
import sys
from nbgraph import PostgresCheckpointer, RedisCheckpointer, SQLiteCheckpointer
kind, where, prefix = sys.argv[1:]
if kind == "sqlite":
    store = SQLiteCheckpointer(where)
elif kind == "redis":
    store = RedisCheckpointer(where, prefix=prefix)
else:
    store = PostgresCheckpointer(where)
lease = store.acquire("busy", "holder-run")
print(lease.pid, flush=True)
sys.stdin.read()
store.release(lease)
"""


@pytest.fixture
def where(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[str, str, str]:
    """The store's kind, what it opens (a file, a URL, a DSN) and its key prefix (for Redis)."""
    kind: str = request.param
    if kind == "redis":
        return kind, request.getfixturevalue("redis_url"), f"test-{uuid.uuid4().hex[:8]}"
    if kind == "postgres":
        return kind, request.getfixturevalue("postgres_dsn"), ""
    return kind, str(tmp_path / "store.db"), ""


def open_store(kind: str, where: str, prefix: str) -> Store:
    if kind == "memory":
        return MemoryCheckpointer()
    if kind == "sqlite":
        return SQLiteCheckpointer(where)
    if kind == "redis":
        return RedisCheckpointer(where, prefix=prefix)
    return PostgresCheckpointer(where)


@contextmanager
def second_holder(kind: str, where: str, prefix: str, store: Store) -> Iterator[int]:
    """Another run holding thread 'busy': in a process of its own, but for the memory store (which
    lives in this one). Yields the holder's process id."""
    if kind == "memory":
        lease = store.acquire("busy", "holder-run")
        yield lease.pid
        return
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, kind, where, prefix],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert holder.stdin is not None and holder.stdout is not None
    try:
        pid = int(holder.stdout.readline())
        assert pid == holder.pid
        yield pid
    finally:
        holder.stdin.close()
        holder.stdout.close()
        holder.wait(timeout=30)


@pytest.mark.parametrize("where", STORES, indirect=True)
def test_thread_busy_names_the_holder_and_how_to_take_over(where: tuple[str, str, str]) -> None:
    kind, path, prefix = where
    store = open_store(kind, path, prefix)
    with second_holder(kind, path, prefix, store) as pid:
        with pytest.raises(ThreadBusy) as info:
            store.acquire("busy", "mine")
        # Who (run, process, host), since when, until when, in which store; then how to take over.
        until = "its lease lasts until that run lets it go" if kind == "memory" else r"its lease ends in \d+ s"
        named = "in this process" if kind == "memory" else store.name
        assert re.fullmatch(
            rf"thread 'busy' is being run by run 'holder-run' in process {pid} on host "
            rf"{re.escape(repr(socket.gethostname()))} since \d\d:\d\d:\d\d; {until} "
            rf"\({re.escape(named)}\)\. Wait for it, or if that run is gone, {TAKE_OVER}",
            str(info.value),
        ), str(info.value)
        holder = info.value.holder
        assert isinstance(holder, Lease)
        assert (holder.thread, holder.run, holder.pid, holder.host) == ("busy", "holder-run", pid, socket.gethostname())
        assert (holder.expires is None) == (kind == "memory")
        # The way out it names works: force=True takes the thread from the live holder.
        taken = store.acquire("busy", "mine", force=True)
        assert taken.pid == os.getpid()
        store.release(taken)
    if not isinstance(store, MemoryCheckpointer):
        store.close()


@pytest.fixture
def shared(
    request: pytest.FixtureRequest,
) -> Iterator[tuple[RedisCheckpointer | PostgresCheckpointer, RedisCheckpointer | PostgresCheckpointer]]:
    """Two stores on one Redis or PostgreSQL database: the test's, and a second holder's."""
    opened: list[RedisCheckpointer | PostgresCheckpointer]
    if request.param == "redis":
        url: str = request.getfixturevalue("redis_url")
        prefix = f"test-{uuid.uuid4().hex[:8]}"
        opened = [RedisCheckpointer(url, prefix=prefix), RedisCheckpointer(url, prefix=prefix)]
    else:
        dsn: str = request.getfixturevalue("postgres_dsn")
        opened = [PostgresCheckpointer(dsn), PostgresCheckpointer(dsn)]
    yield opened[0], opened[1]
    for store in opened:
        store.close()


def vanishing(
    monkeypatch: pytest.MonkeyPatch, store: RedisCheckpointer | PostgresCheckpointer, times: int
) -> list[str]:
    """Make the first ``times`` reads of the holder find none, as if another worker took or freed
    the thread between taking its lock and reading who holds it; returns the reads made."""
    read = store._holder
    made: list[str] = []

    def holder(thread: str) -> object:
        made.append(thread)
        return None if len(made) <= times else read(thread)

    monkeypatch.setattr(store, "_holder", holder)
    return made


@pytest.mark.parametrize("shared", ["redis", "postgres"], indirect=True)
def test_a_holder_that_could_not_be_read_is_read_again(
    shared: tuple[RedisCheckpointer | PostgresCheckpointer, RedisCheckpointer | PostgresCheckpointer],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    store, other = shared
    held = other.acquire("busy", "holder-run")
    made = vanishing(monkeypatch, store, 1)
    with pytest.raises(ThreadBusy, match=rf"being run by run 'holder-run' .*{TAKE_OVER}$") as info:
        store.acquire("busy", "mine")
    assert len(made) == 2
    assert isinstance(info.value.holder, Lease) and info.value.holder.token == held.token
    other.release(held)


@pytest.mark.parametrize("shared", ["redis", "postgres"], indirect=True)
def test_a_holder_never_read_is_another_worker_taking_the_thread(
    shared: tuple[RedisCheckpointer | PostgresCheckpointer, RedisCheckpointer | PostgresCheckpointer],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    store, other = shared
    held = other.acquire("busy", "holder-run")
    made = vanishing(monkeypatch, store, 99)
    with pytest.raises(ThreadBusy) as info:
        store.acquire("busy", "mine")
    assert len(made) == 3  # (read again, each time in vain)
    assert str(info.value) == (
        f"thread 'busy' is being taken by another worker right now ({store.name}): it changed hands each time "
        "its holder was read. Try again in a moment, or if no other run should hold it, take the thread over "
        "with checkpointer.unlock('busy') or resume with force=True"
    )
    assert info.value.holder is None
    other.release(held)
