"""Checkpoints in PostgreSQL, shared by many kernels and workers: the same log as SQLite and Redis.

A row per step, snapshots now and then, fork links and leases live in four tables,
created on first use in the first schema of the connection's search path. Every
statement runs on its own (autocommit) through a psycopg pool. A write is one
statement that locks the run's lease row and writes only while the lease holds the
run's token, so a takeover waits for a write under way and the next write of the
old holder is refused (fencing). Lease times are the server's clock, so workers on
several hosts agree on when a lease lapses; a holder on this host whose process is
gone loses it at once. A server that cannot be reached is a
:class:`~nbgraph.CheckpointError` naming its URL, never its password.
"""

from __future__ import annotations

import logging
import os
import select
import threading
import time
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Final, LiteralString

from ..errors import CheckpointError, LeaseLost, ThreadBusy
from ..secrets import register_secret
from ._dsn import PASSWORD_OPTIONS, spilled, unreadable
from .leases import DEFAULT_TTL, Lease, busy_message, holder_alive, lost_message, new_lease, taking_message
from .log import LogStore, Row

if TYPE_CHECKING:
    import psycopg

__all__ = ["PostgresCheckpointer"]

# The store reports a server that went away itself (a CheckpointError naming it); the pool's own
# account of the connections it drops goes only where the application sends its logs.
logging.getLogger("psycopg.pool").addHandler(logging.NullHandler())

# (Processes opening a new database at once: the advisory lock has them create the tables in turn.)
_SCHEMA: Final = """
SELECT pg_advisory_xact_lock(7305428712968392001);
CREATE TABLE IF NOT EXISTS nbgraph_steps (
    thread TEXT NOT NULL,
    step INTEGER NOT NULL,
    data TEXT NOT NULL,
    patches TEXT NOT NULL,
    answers TEXT,
    PRIMARY KEY (thread, step)
);
CREATE INDEX IF NOT EXISTS nbgraph_steps_answered ON nbgraph_steps (thread, step) WHERE answers IS NOT NULL;
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
    started DOUBLE PRECISION,
    since DOUBLE PRECISION NOT NULL,
    expires DOUBLE PRECISION NOT NULL
);
"""

_NOW: Final = "extract(epoch FROM clock_timestamp())::float8"
"""The server's clock, in seconds since the epoch: every lease's expiry is on it."""

_ROW: Final = "SELECT step, data, patches, answers FROM nbgraph_steps WHERE thread = %s"

# A new holder takes the lease if there is none, or it lapsed, or it is forced, or its holder
# was found dead (its token given, so two workers that both saw it dead cannot both take it).
_TAKE: Final = f"""
INSERT INTO nbgraph_leases AS held (thread, token, run, host, pid, started, since, expires)
VALUES (%(thread)s, %(token)s, %(run)s, %(host)s, %(pid)s, %(started)s, %(since)s, {_NOW} + %(ttl)s)
ON CONFLICT (thread) DO UPDATE SET
    token = excluded.token, run = excluded.run, host = excluded.host, pid = excluded.pid,
    started = excluded.started, since = excluded.since, expires = excluded.expires
WHERE %(force)s OR held.expires <= {_NOW} OR held.token = %(dead)s
RETURNING 1
"""
_HOLDER: Final = f"SELECT token, run, host, pid, started, since, expires - {_NOW} FROM nbgraph_leases WHERE thread = %s"


def _write_sql(*, replace: bool, fenced: bool) -> LiteralString:
    """One statement that writes a step's row (and its snapshot, if given); fenced, only while
    the lease row holds the run's token, which it locks until the write commits."""
    held = (
        "held AS (SELECT 1 FROM nbgraph_leases WHERE thread = %(thread)s AND token = %(token)s FOR SHARE), "
        if fenced
        else ""
    )
    if replace:
        written = (
            "UPDATE nbgraph_steps SET data = %(data)s, patches = %(patches)s, answers = coalesce(%(answers)s, answers) "
            "WHERE thread = %(thread)s AND step = %(step)s" + (" AND EXISTS (SELECT 1 FROM held)" if fenced else "")
        )
    else:
        written = (
            "INSERT INTO nbgraph_steps (thread, step, data, patches, answers) "
            "SELECT %(thread)s, %(step)s, %(data)s, %(patches)s, %(answers)s" + (" FROM held" if fenced else "")
        )
    return (
        f"WITH {held}written AS ({written} RETURNING step), "
        "snapshot AS (INSERT INTO nbgraph_snapshots (thread, step, state) "
        "SELECT %(thread)s, step, %(snapshot)s FROM written WHERE %(snapshot)s::text IS NOT NULL "
        "ON CONFLICT (thread, step) DO UPDATE SET state = excluded.state) "
        f"SELECT {'(SELECT count(*) FROM held)' if fenced else '1'}, (SELECT count(*) FROM written)"
    )


# The hot path of a durable run: four fixed statements, which psycopg prepares once per connection.
_WRITES: dict[tuple[bool, bool], LiteralString] = {
    (replace, fenced): _write_sql(replace=replace, fenced=fenced)
    for replace in (False, True)
    for fenced in (False, True)
}

_MAX_CONNECTIONS = 8

_NOT_A_DSN: Final = "PostgresCheckpointer: the dsn is not a PostgreSQL URL or connection string"


class PostgresCheckpointer(LogStore):
    """Checkpoints in a PostgreSQL database: a log of steps per thread, readable by every worker.

    Needs ``pip install 'nbgraph[postgres]'`` (psycopg 3 and its pool). The tables are
    created in the first schema of the search path (``?options=-csearch_path%3Dmine`` in
    the URL puts them in the schema ``mine``).

    Args:
        dsn: a PostgreSQL URL (``postgresql://user:password@host:5432/db``) or
            connection string (``host=... dbname=...``).
        lease_ttl: seconds a run's lease lasts unless renewed (a live run renews it
            every third of that); a holder on this host whose process is gone loses
            it at once.
        timeout: seconds a call waits to connect, or for a free connection of the pool,
            before it fails (the run then ends ``failed``, resumable).
    """

    def __init__(self, dsn: str = "", *, lease_ttl: float = DEFAULT_TTL, timeout: float = 10.0) -> None:
        super().__init__()
        try:
            import psycopg
            from psycopg.conninfo import conninfo_to_dict
            from psycopg_pool import ConnectionPool
        except ImportError:
            raise ImportError(
                "PostgresCheckpointer needs psycopg and psycopg-pool: pip install 'nbgraph[postgres]'"
            ) from None
        unread: str | None = None
        try:
            params = conninfo_to_dict(dsn)
        except psycopg.Error as exc:
            params, unread = {}, " ".join(str(exc).split())
        # (Raised out here, not from the parser's error: that may quote the password.)
        if unread is not None:
            raise CheckpointError(unreadable(_NOT_A_DSN, dsn, unread))
        if spilled(dsn, params, PASSWORD_OPTIONS):
            why = "part of the password reads as the host, port or database"
            raise CheckpointError(unreadable(_NOT_A_DSN, dsn, why, spilled=True))
        for option in PASSWORD_OPTIONS:
            if params.get(option):
                register_secret(str(params[option]))  # (whatever quotes it later is redacted)
        self.url = _public_url(params)
        """The server and database (never the password)."""
        self.name = f"Postgres store {self.url}"
        self.lease_ttl = lease_ttl
        self.timeout = timeout
        self._dsn = dsn
        self._errors = psycopg.Error
        self._gone = psycopg.OperationalError
        self._unsure = True
        """Whether the server may be gone (at first, and once it hung up or failed): the next call then
        asks it directly, rather than wait for the pool to make a connection it may never make."""
        options = {"autocommit": True, "connect_timeout": max(1, round(timeout))}
        self._connect = lambda: psycopg.connect(dsn, **options)
        # The pool gives up reconnecting at once: a call that finds no connection grows it again
        # then, rather than wait out a backoff that began while the server was down.
        self._pool = ConnectionPool(
            dsn,
            kwargs=options,
            min_size=1,
            max_size=_MAX_CONNECTIONS,
            timeout=timeout,
            reconnect_timeout=0,
            num_workers=1,
            name=self.url,
            open=True,
        )
        # A store nobody refers to closes its pool (at exit the process's end closes the connections).
        weakref.finalize(self, _close_soon, self._pool).atexit = False
        with self._failures("open"), self._connection() as conn, conn.transaction():
            conn.execute(_SCHEMA)

    # -- connections ------------------------------------------------------------------

    @contextmanager
    def _connection(self) -> Iterator[psycopg.Connection]:
        """A connection of the pool that the server has not hung up on."""
        pool = self._pool
        for _ in range(_MAX_CONNECTIONS + 1):  # (each round drops a connection the server closed)
            if self._unsure:
                # (So a run whose write found the server gone records its end, and lets its lease
                # go, without waiting: each call fails at once while the server is down.)
                self._connect().close()
                self._unsure = False
            conn = pool.getconn()
            if not _hung_up(conn):
                break
            conn.close()
            pool.putconn(conn)  # (the pool replaces a closed connection)
            self._unsure = True
        else:
            raise self._gone("the server closed every connection as soon as it was made")
        try:
            yield conn
        finally:
            pool.putconn(conn)

    @contextmanager
    def _failures(self, doing: str, thread: str | None = None, step: int | None = None) -> Iterator[None]:
        """Turn a failure of the server into a CheckpointError that names it."""
        try:
            yield
        except self._errors as exc:
            if isinstance(exc, self._gone):
                self._unsure = True
            raise self._error(doing, exc, thread, step) from exc

    def _error(self, doing: str, exc: Exception, thread: str | None, step: int | None) -> CheckpointError:
        where = f" (thread {thread!r}" + (f", step {step}" if step is not None else "") + ")" if thread else ""
        why = " ".join(str(exc).split())  # (libpq's messages run over several lines)
        return CheckpointError(
            f"{self.name}: could not {doing}{where}: {type(exc).__name__}: {why}",
            store=self.name,
            thread=thread,
            step=step,
        )

    def _all(self, thread: str | None, sql: LiteralString, *args: object) -> list[tuple]:
        with self._failures("read", thread), self._connection() as conn:
            return conn.execute(sql, args).fetchall()

    def _one(self, thread: str, sql: LiteralString, *args: object) -> tuple | None:
        with self._failures("read", thread), self._connection() as conn:
            return conn.execute(sql, args).fetchone()

    # -- rows -------------------------------------------------------------------------

    def _last(self, thread: str) -> Row | None:
        found = self._one(thread, f"{_ROW} ORDER BY step DESC LIMIT 1", thread)
        return None if found is None else Row(*found)

    def _row(self, thread: str, step: int) -> Row | None:
        found = self._one(thread, f"{_ROW} AND step = %s", thread, step)
        return None if found is None else Row(*found)

    def _rows(self, thread: str, after: int, upto: int) -> list[Row]:
        rows = self._all(thread, f"{_ROW} AND step > %s AND step <= %s ORDER BY step", thread, after, upto)
        return [Row(*row) for row in rows]

    def _data(self, thread: str) -> list[tuple[int, str]]:
        return self._all(thread, "SELECT step, data FROM nbgraph_steps WHERE thread = %s ORDER BY step", thread)

    def _snapshot(self, thread: str, upto: int) -> tuple[int, str] | None:
        return self._one(
            thread,
            "SELECT step, state FROM nbgraph_snapshots WHERE thread = %s AND step <= %s ORDER BY step DESC LIMIT 1",
            thread,
            upto,
        )

    def _answers(self, thread: str, upto: int) -> str | None:
        found = self._one(
            thread,
            "SELECT answers FROM nbgraph_steps WHERE thread = %s AND step <= %s AND answers IS NOT NULL "
            "ORDER BY step DESC LIMIT 1",
            thread,
            upto,
        )
        return None if found is None else found[0]

    def _parent(self, thread: str) -> tuple[str, int] | None:
        return self._one(thread, "SELECT parent, step FROM nbgraph_forks WHERE thread = %s", thread)

    def _link(self, thread: str, parent: str, step: int) -> None:
        with self._failures("write", thread, step), self._connection() as conn:
            conn.execute(
                "INSERT INTO nbgraph_forks (thread, parent, step) VALUES (%s, %s, %s) "
                "ON CONFLICT (thread) DO UPDATE SET parent = excluded.parent, step = excluded.step",
                (thread, parent, step),
            )

    def _write(self, thread: str, row: Row, *, replace: bool, snapshot: str | None, lease: Lease | None) -> None:
        args = {
            "thread": thread,
            "step": row.step,
            "data": row.data,
            "patches": row.patches,
            "answers": row.answers,
            "snapshot": snapshot,
            "token": lease.token if lease is not None else None,
        }
        with self._failures("write", thread, row.step), self._connection() as conn:
            found = conn.execute(_WRITES[replace, lease is not None], args).fetchone()
        assert found is not None  # (the statement's last SELECT is one row)
        held, written = found
        if not held:
            raise LeaseLost(lost_message(thread, self.name))
        if not written:
            raise CheckpointError(
                f"{self.name}: thread {thread!r} has no step {row.step} any more, so it cannot be written over; "
                "the thread was deleted or changed by another writer",
                store=self.name,
                thread=thread,
                step=row.step,
            )

    def _drop(self, thread: str) -> None:
        # (Not the lease: a run that replaces the thread holds it.)
        with self._failures("delete", thread), self._connection() as conn, conn.transaction():
            for table in ("nbgraph_steps", "nbgraph_snapshots", "nbgraph_forks"):
                conn.execute(f"DELETE FROM {table} WHERE thread = %s", (thread,))

    def threads(self) -> list[str]:
        return [row[0] for row in self._all(None, "SELECT DISTINCT thread FROM nbgraph_steps ORDER BY thread")]

    # -- leases -----------------------------------------------------------------------

    def _take(self, lease: Lease, *, force: bool, dead: str | None) -> bool:
        args = {**lease.to_json(), "ttl": self.lease_ttl, "force": force, "dead": dead}
        with self._connection() as conn:
            return conn.execute(_TAKE, args).fetchone() is not None

    def _holder(self, thread: str) -> Lease | None:
        """The lease holding ``thread`` (when it lapses on this machine's clock), or None."""
        with self._connection() as conn:
            found = conn.execute(_HOLDER, (thread,)).fetchone()
        if found is None:
            return None
        token, run, host, pid, started, since, left = found
        return Lease(thread, token, run, host, pid, started, since, time.time() + left)

    def acquire(self, thread: str, run: str | None = None, *, force: bool = False) -> Lease:
        lease = new_lease(thread, run, self.lease_ttl)
        held: Lease | None = None
        with self._failures("take the lease", thread):
            dead = None
            for _ in range(3):  # (another worker may take or free the thread between two statements)
                if self._take(lease, force=force, dead=dead):
                    return self._held(lease)
                held = self._holder(thread)
                if held is not None and holder_alive(held) is not False:
                    break
                dead = held.token if held is not None else None
        raise ThreadBusy(
            busy_message(thread, held, self.name) if held is not None else taking_message(thread, self.name),
            holder=held,
        )

    def renew(self, lease: Lease) -> Lease | None:
        with self._failures("renew the lease", lease.thread), self._connection() as conn:
            count = conn.execute(
                f"UPDATE nbgraph_leases SET expires = {_NOW} + %s WHERE thread = %s AND token = %s",
                (self.lease_ttl, lease.thread, lease.token),
            ).rowcount
        return lease._replace(expires=time.time() + self.lease_ttl) if count else None

    def release(self, lease: Lease) -> None:
        super().release(lease)
        with self._failures("release the lease", lease.thread), self._connection() as conn:
            conn.execute("DELETE FROM nbgraph_leases WHERE thread = %s AND token = %s", (lease.thread, lease.token))

    def unlock(self, thread: str) -> None:
        """Take ``thread`` over from whoever holds it: that run's next write is refused."""
        with self._failures("unlock", thread), self._connection() as conn:
            conn.execute("DELETE FROM nbgraph_leases WHERE thread = %s", (thread,))

    def close(self) -> None:
        self._pool.close()

    def __reduce__(self) -> tuple[Any, ...]:
        # A store travels (to a Ray worker, say) as what it connects with; each process opens its own pool.
        return (_reopen, (self._dsn, self.lease_ttl, self.timeout))

    def __repr__(self) -> str:
        return f"PostgresCheckpointer({self.url!r})"


def _public_url(params: dict[str, Any]) -> str:
    """The server and database a connection string names, with libpq's defaults (never the password)."""
    host = params.get("host") or os.environ.get("PGHOST") or "localhost"
    port = params.get("port") or os.environ.get("PGPORT") or 5432
    return f"postgresql://{host}:{port}/{params.get('dbname') or os.environ.get('PGDATABASE') or ''}"


def _close_soon(pool: Any) -> None:
    """Close ``pool`` from a thread of its own: the garbage collector may call this in the pool's
    worker thread (when it is the thread that happened to collect), which cannot wait for itself."""
    threading.Thread(target=pool.close, name=f"{pool.name}-closing", daemon=True).start()


def _reopen(dsn: str, lease_ttl: float, timeout: float) -> PostgresCheckpointer:
    return PostgresCheckpointer(dsn, lease_ttl=lease_ttl, timeout=timeout)


def _hung_up(conn: psycopg.Connection) -> bool:
    """Whether the server closed this idle connection (a restart, an administrator): an idle
    connection has nothing to read, so anything there is its goodbye or the end of the stream."""
    poll = select.poll()
    poll.register(conn.fileno(), select.POLLIN)
    if not poll.poll(0):
        return False
    try:
        conn.execute("")  # (a notice it sent is read and the connection kept)
    except Exception:
        return True
    return False
