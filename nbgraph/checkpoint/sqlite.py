"""Durable checkpoints in one SQLite file: a row per step, snapshots now and then, leases.

Several processes may share the file. A run's lease lives in the file too, with
the holder's host and pid, so a resume right after its process was killed takes
the thread over at once; every write checks the lease in the same transaction.
Any failure of the file (a full disk, a read-only file, a corrupt one) is a
:class:`~nbgraph.CheckpointError` naming the path.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
import urllib.parse
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from typing import NamedTuple

from ..errors import CheckpointError, LeaseLost, ThreadBusy
from .leases import (
    DEFAULT_TTL,
    Lease,
    busy_message,
    lost_message,
    may_take_over,
    new_lease,
)
from .log import LogStore, Row

__all__ = ["SQLiteCheckpointer"]

_FORMAT = 2
_SCHEMA = """
CREATE TABLE IF NOT EXISTS nbgraph_steps (
    thread TEXT NOT NULL,
    step INTEGER NOT NULL,
    data TEXT NOT NULL,
    patches TEXT NOT NULL,
    answers TEXT,
    PRIMARY KEY (thread, step)
);
CREATE TABLE IF NOT EXISTS nbgraph_snapshots (
    thread TEXT NOT NULL,
    step INTEGER NOT NULL,
    state TEXT NOT NULL,
    PRIMARY KEY (thread, step)
);
CREATE TABLE IF NOT EXISTS nbgraph_forks (
    thread TEXT PRIMARY KEY,
    parent TEXT NOT NULL,
    step INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS nbgraph_leases (
    thread TEXT PRIMARY KEY,
    token TEXT NOT NULL,
    run TEXT,
    host TEXT NOT NULL,
    pid INTEGER NOT NULL,
    started REAL,
    since REAL NOT NULL,
    expires REAL
);
"""
_HOLDS = "EXISTS (SELECT 1 FROM nbgraph_leases WHERE thread = ? AND token = ?)"
_INSERT = "INSERT INTO nbgraph_steps (thread, step, data, patches, answers) SELECT ?, ?, ?, ?, ?"
_UPDATE = "UPDATE nbgraph_steps SET data = ?, patches = ?, answers = coalesce(?, answers) WHERE thread = ? AND step = ?"
# A write with a lease happens only while the lease row still holds its token (fencing).
_INSERT_HELD = f"{_INSERT} WHERE {_HOLDS}"
_UPDATE_HELD = f"{_UPDATE} AND {_HOLDS}"
_SNAPSHOT = "INSERT OR REPLACE INTO nbgraph_snapshots (thread, step, state) VALUES (?, ?, ?)"


def _use_wal(conn: sqlite3.Connection, busy_timeout: float) -> None:
    """Put the file in WAL mode (it stays so: later connections find it set).

    Switching needs the file to itself, and SQLite answers "database is locked" at once
    instead of waiting while other processes open the same new file: wait here.
    """
    deadline = time.monotonic() + busy_timeout
    pause = 0.001
    while True:
        try:
            if conn.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
                conn.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                raise
        time.sleep(pause)
        pause = min(pause * 2, 0.05)


class SQLiteCheckpointer(LogStore):
    """Checkpoints in a SQLite database file, shared safely by several processes.

    A file that cannot be opened for writing because its disk is full is still read:
    its last good checkpoint, history and state, while every write is refused naming
    the full disk.

    Args:
        path: the database file (created if missing).
        lease_ttl: seconds a run's lease lasts unless renewed (a live run renews it
            every third of that); a holder on this host whose process is gone loses
            it at once.
        busy_timeout: seconds a write waits for another connection's write lock before
            it fails (the run then ends ``failed``, resumable).
    """

    def __init__(
        self, path: str | os.PathLike[str], *, lease_ttl: float = DEFAULT_TTL, busy_timeout: float = 30.0
    ) -> None:
        super().__init__()
        self.path = os.fspath(path)
        self.name = f"SQLite store {self.path}"
        self.lease_ttl = lease_ttl
        self.busy_timeout = busy_timeout
        self._connections = _Connections()
        # A store nobody refers to closes what it opened, in every thread that used it.
        weakref.finalize(self, self._connections.close_all)
        with self._failures("open"):
            conn = self._conn()
            version = conn.execute("PRAGMA user_version").fetchone()[0]
            old = conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'nbgraph_checkpoints'").fetchone()
            if old is not None or version not in (0, _FORMAT):
                raise CheckpointError(
                    f"{self.name} was written by another version of nbgraph (format {version or 1}, this one reads "
                    f"{_FORMAT}); use a new file",
                    store=self.name,
                )
            if version != _FORMAT:  # (a file made by this version is not written to until a run writes)
                with conn:
                    conn.executescript(_SCHEMA + f"PRAGMA user_version = {_FORMAT};")

    def _conn(self, *, write: bool = False) -> sqlite3.Connection:
        """This thread's connection; for a write, a writable one if the disk has room again."""
        mine = self._connections.mine()
        if mine is not None and not (write and mine.reader):
            return mine.conn
        return self._connections.open(*self._connect())

    def _connect(self) -> tuple[sqlite3.Connection, bool]:
        """A new connection, and whether it only reads (a full disk keeps the file from opening for writes)."""
        # Opened for this thread alone; another thread only closes it (close(), or after this thread ended).
        conn = sqlite3.connect(
            self.path, timeout=self.busy_timeout, isolation_level="DEFERRED", check_same_thread=False
        )
        try:
            _use_wal(conn, self.busy_timeout)
            conn.execute("PRAGMA synchronous=NORMAL")
        except sqlite3.Error as exc:
            conn.close()
            reader = self._reader() if isinstance(exc, sqlite3.OperationalError) else None
            if reader is None:
                raise
            return reader, True
        return conn, False

    def _reader(self) -> sqlite3.Connection | None:
        """A read-only connection to a file that a full disk keeps from being opened.

        Opening a WAL file creates its shared-memory index, which takes room on the disk.
        With no write-ahead log beside the file (nobody has it open, and its last writer
        folded the log in), the file alone holds every committed write, so it can be read
        as an immutable file. None when that is not so.
        """
        wal = f"{self.path}-wal"
        if not os.path.exists(self.path) or (os.path.exists(wal) and os.path.getsize(wal) > 0):
            return None
        try:
            stat = os.statvfs(os.path.dirname(os.path.abspath(self.path)))
        except OSError:
            return None
        if stat.f_bavail > 0:
            return None  # not a full disk: the error is the file's own
        uri = f"file:{urllib.parse.quote(os.path.abspath(self.path))}?immutable=1"
        return sqlite3.connect(uri, uri=True, isolation_level="DEFERRED", check_same_thread=False)

    @contextmanager
    def _failures(self, doing: str, thread: str | None = None, step: int | None = None) -> Iterator[None]:
        """Turn a failure of the file into a CheckpointError that names it."""
        try:
            with self._connections.in_use():
                yield
        except sqlite3.Error as exc:
            raise self._error(doing, exc, thread, step) from exc

    def _error(self, doing: str, exc: sqlite3.Error, thread: str | None, step: int | None) -> CheckpointError:
        where = f" (thread {thread!r}" + (f", step {step}" if step is not None else "") + ")" if thread else ""
        why = _explain(exc)
        mine = self._connections.mine()
        if mine is not None and mine.reader:
            why = f"the disk is full, so the file is open for reading only ({exc})"
        return CheckpointError(
            f"{self.name}: could not {doing}{where}: {why}", store=self.name, thread=thread, step=step
        )

    # -- rows -------------------------------------------------------------------------

    def _one(self, sql: str, *args: object) -> tuple | None:
        with self._failures("read", args[0] if args and isinstance(args[0], str) else None):
            return self._conn().execute(sql, args).fetchone()

    def _last(self, thread: str) -> Row | None:
        found = self._one(
            "SELECT step, data, patches, answers FROM nbgraph_steps WHERE thread = ? ORDER BY step DESC LIMIT 1", thread
        )
        return None if found is None else Row(*found)

    def _row(self, thread: str, step: int) -> Row | None:
        found = self._one(
            "SELECT step, data, patches, answers FROM nbgraph_steps WHERE thread = ? AND step = ?", thread, step
        )
        return None if found is None else Row(*found)

    def _rows(self, thread: str, after: int, upto: int) -> list[Row]:
        with self._failures("read", thread):
            rows = (
                self._conn()
                .execute(
                    "SELECT step, data, patches, answers FROM nbgraph_steps WHERE thread = ? AND step > ? AND step <= ? ORDER BY step",
                    (thread, after, upto),
                )
                .fetchall()
            )
        return [Row(*row) for row in rows]

    def _data(self, thread: str) -> list[tuple[int, str]]:
        with self._failures("read", thread):
            return (
                self._conn()
                .execute("SELECT step, data FROM nbgraph_steps WHERE thread = ? ORDER BY step", (thread,))
                .fetchall()
            )

    def _snapshot(self, thread: str, upto: int) -> tuple[int, str] | None:
        return self._one(
            "SELECT step, state FROM nbgraph_snapshots WHERE thread = ? AND step <= ? ORDER BY step DESC LIMIT 1",
            thread,
            upto,
        )

    def _answers(self, thread: str, upto: int) -> str | None:
        found = self._one(
            "SELECT answers FROM nbgraph_steps WHERE thread = ? AND step <= ? AND answers IS NOT NULL ORDER BY step DESC LIMIT 1",
            thread,
            upto,
        )
        return None if found is None else found[0]

    def _parent(self, thread: str) -> tuple[str, int] | None:
        return self._one("SELECT parent, step FROM nbgraph_forks WHERE thread = ?", thread)

    def _link(self, thread: str, parent: str, step: int) -> None:
        with self._failures("write", thread, step), self._conn(write=True) as conn:
            conn.execute(
                "INSERT OR REPLACE INTO nbgraph_forks (thread, parent, step) VALUES (?, ?, ?)", (thread, parent, step)
            )

    def _write(self, thread: str, row: Row, *, replace: bool, snapshot: str | None, lease: Lease | None) -> None:
        # The hot path of a durable run: statements are fixed strings, so SQLite's cache keeps them prepared.
        if replace:
            sql = _UPDATE if lease is None else _UPDATE_HELD
            args: tuple = (row.data, row.patches, row.answers, thread, row.step)
        else:
            sql = _INSERT if lease is None else _INSERT_HELD
            args = (thread, row.step, row.data, row.patches, row.answers)
        if lease is not None:
            args += (thread, lease.token)
        try:
            with self._connections.in_use():
                conn = self._conn(write=True)
                with conn:
                    if not conn.execute(sql, args).rowcount:
                        raise LeaseLost(lost_message(thread, self.name))
                    if snapshot is not None:
                        conn.execute(_SNAPSHOT, (thread, row.step, snapshot))
        except sqlite3.Error as exc:
            raise self._error("write", exc, thread, row.step) from exc

    def _drop(self, thread: str) -> None:
        with self._failures("delete", thread), self._conn(write=True) as conn:
            # The lease stays: the run that deletes a thread to start it again holds it.
            for table in ("nbgraph_steps", "nbgraph_snapshots", "nbgraph_forks"):
                conn.execute(f"DELETE FROM {table} WHERE thread = ?", (thread,))

    def threads(self) -> list[str]:
        with self._failures("read"):
            return [row[0] for row in self._conn().execute("SELECT DISTINCT thread FROM nbgraph_steps").fetchall()]

    # -- leases -----------------------------------------------------------------------

    def acquire(self, thread: str, run: str | None = None, *, force: bool = False) -> Lease:
        lease = new_lease(thread, run, self.lease_ttl)
        with self._failures("take the lease", thread), self._conn(write=True) as conn:
            conn.execute("BEGIN IMMEDIATE")  # read and take the lease as one step, against other processes
            found = conn.execute(
                "SELECT thread, token, run, host, pid, started, since, expires FROM nbgraph_leases WHERE thread = ?",
                (thread,),
            ).fetchone()
            if found is not None and not force:
                held = Lease(*found)
                if not may_take_over(held, time.time()):
                    raise ThreadBusy(busy_message(thread, held, self.name), holder=held)
            conn.execute("INSERT OR REPLACE INTO nbgraph_leases VALUES (?, ?, ?, ?, ?, ?, ?, ?)", lease)
        return self._held(lease)

    def renew(self, lease: Lease) -> Lease | None:
        renewed = lease._replace(expires=time.time() + self.lease_ttl)
        with self._failures("renew the lease", lease.thread), self._conn(write=True) as conn:
            count = conn.execute(
                "UPDATE nbgraph_leases SET expires = ? WHERE thread = ? AND token = ?",
                (renewed.expires, lease.thread, lease.token),
            ).rowcount
        return renewed if count else None

    def release(self, lease: Lease) -> None:
        super().release(lease)
        with self._failures("release the lease", lease.thread), self._conn(write=True) as conn:
            conn.execute("DELETE FROM nbgraph_leases WHERE thread = ? AND token = ?", (lease.thread, lease.token))

    def unlock(self, thread: str) -> None:
        """Take ``thread`` over from whoever holds it: that run's next write is refused."""
        with self._failures("unlock", thread), self._conn(write=True) as conn:
            conn.execute("DELETE FROM nbgraph_leases WHERE thread = ?", (thread,))

    def close(self) -> None:
        """Close every connection this store opened; a later call opens a new one."""
        self._connections.close_all()

    def __repr__(self) -> str:
        return f"SQLiteCheckpointer({self.path!r})"


class _Connection(NamedTuple):
    conn: sqlite3.Connection
    reader: bool


class _Connections:
    """A store's connections, one per thread that used it, so that they close together.

    SQLite connections are not shared between threads. One kept in a thread-local would be
    left to the garbage collector, unclosed, when its thread or its store goes. A connection
    closed by another thread while its own runs a statement on it crashes the process (the
    lease renewer's, when a run's store is closed), so each thread holds its connection for
    the length of an operation, and closing waits for the operation to end.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_thread: dict[threading.Thread, _Connection] = {}
        self._busy: dict[threading.Thread, threading.RLock] = {}

    def mine(self) -> _Connection | None:
        return self._by_thread.get(threading.current_thread())

    def in_use(self) -> threading.RLock:
        """This thread's hold on its connection, to take for one operation (reentrant)."""
        thread = threading.current_thread()
        busy = self._busy.get(thread)
        if busy is None:
            with self._lock:
                busy = self._busy.setdefault(thread, threading.RLock())
        return busy

    def open(self, conn: sqlite3.Connection, reader: bool) -> sqlite3.Connection:
        """Keep ``conn`` as this thread's connection, closing the one it replaces and those of ended threads."""
        with self._lock:
            ended = [thread for thread in self._by_thread if not thread.is_alive()]
            done = [self._by_thread.pop(thread).conn for thread in ended]
            for thread in [thread for thread in self._busy if not thread.is_alive()]:
                del self._busy[thread]
            replaced = self._by_thread.get(threading.current_thread())
            if replaced is not None:
                done.append(replaced.conn)
            self._by_thread[threading.current_thread()] = _Connection(conn, reader)
        for old in done:
            old.close()
        return conn

    def close_all(self) -> None:
        with self._lock:
            done = [(self._busy.get(thread), connection.conn) for thread, connection in self._by_thread.items()]
            self._by_thread.clear()
        for busy, conn in done:
            if busy is None:
                conn.close()
                continue
            with busy:  # its thread's operation ends first
                conn.close()


def _explain(exc: sqlite3.Error) -> str:
    text = str(exc)
    if "disk is full" in text:
        return f"the disk is full ({text})"
    if "readonly" in text or "read-only" in text or "unable to open" in text:
        return f"the file, or its directory, cannot be written ({text})"
    if "not a database" in text or "malformed" in text:
        return f"the file is corrupt or not an nbgraph database ({text})"
    return f"{type(exc).__name__}: {text}"
