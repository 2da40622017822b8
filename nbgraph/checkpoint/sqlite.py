"""Durable checkpoints in one SQLite file: JSON rows, one transaction per step."""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

from ..errors import ThreadBusy
from ..names import new_id
from .base import Checkpoint

__all__ = ["SQLiteCheckpointer"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS nbgraph_checkpoints (
    thread TEXT NOT NULL,
    step INTEGER NOT NULL,
    data TEXT NOT NULL,
    PRIMARY KEY (thread, step)
);
CREATE TABLE IF NOT EXISTS nbgraph_locks (
    thread TEXT PRIMARY KEY,
    owner TEXT NOT NULL,
    expires REAL NOT NULL
);
"""


class SQLiteCheckpointer:
    """Checkpoints in a SQLite database file, shared safely by several processes.

    Args:
        path: the database file (created if missing), or ``":memory:"``.
        lock_ttl: seconds after which a lock left by a crashed process expires.
    """

    def __init__(self, path: str | os.PathLike[str], *, lock_ttl: float = 3600.0) -> None:
        self.path = os.fspath(path)
        self.lock_ttl = lock_ttl
        self._local = threading.local()
        with self._conn() as conn:
            conn.executescript(_SCHEMA)

    def _conn(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = sqlite3.connect(self.path, timeout=30.0, isolation_level="DEFERRED")
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            self._local.conn = conn
        return conn

    def put(self, thread: str, checkpoint: Checkpoint) -> None:
        data = checkpoint.to_json()
        with self._conn() as conn:
            conn.execute(
                "INSERT OR REPLACE INTO nbgraph_checkpoints (thread, step, data) VALUES (?, ?, ?)",
                (thread, checkpoint.step, data),
            )

    def get(self, thread: str, step: int | None = None) -> Checkpoint | None:
        conn = self._conn()
        if step is None:
            row = conn.execute(
                "SELECT data FROM nbgraph_checkpoints WHERE thread = ? ORDER BY step DESC LIMIT 1",
                (thread,),
            ).fetchone()
        else:
            row = conn.execute(
                "SELECT data FROM nbgraph_checkpoints WHERE thread = ? AND step = ?", (thread, step)
            ).fetchone()
        return None if row is None else Checkpoint.from_json(row[0])

    def list(self, thread: str) -> list[Checkpoint]:
        rows = self._conn().execute(
            "SELECT data FROM nbgraph_checkpoints WHERE thread = ? ORDER BY step", (thread,)
        ).fetchall()
        return [Checkpoint.from_json(row[0]) for row in rows]

    def threads(self) -> list[str]:
        rows = self._conn().execute("SELECT DISTINCT thread FROM nbgraph_checkpoints").fetchall()
        return [row[0] for row in rows]

    def delete(self, thread: str) -> None:
        with self._conn() as conn:
            conn.execute("DELETE FROM nbgraph_checkpoints WHERE thread = ?", (thread,))

    @contextmanager
    def lock(self, thread: str) -> Iterator[None]:
        owner = new_id()
        now = time.time()
        conn = self._conn()
        with conn:
            conn.execute("DELETE FROM nbgraph_locks WHERE thread = ? AND expires < ?", (thread, now))
            taken = conn.execute(
                "INSERT OR IGNORE INTO nbgraph_locks (thread, owner, expires) VALUES (?, ?, ?)",
                (thread, owner, now + self.lock_ttl),
            ).rowcount
        if not taken:
            raise ThreadBusy(
                f"thread {thread!r} is being run by another run or process ({self.path}); "
                "wait for it to finish"
            )
        try:
            yield
        finally:
            with conn:
                conn.execute("DELETE FROM nbgraph_locks WHERE thread = ? AND owner = ?", (thread, owner))

    def close(self) -> None:
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None

    def __repr__(self) -> str:
        return f"SQLiteCheckpointer({self.path!r})"
