"""Checkpoints in Redis, shared by many kernels and workers: the same log as SQLite.

A thread's keys share one hash tag (``{prefix}:{thread}:...``), so a thread lives in
one slot of a cluster and its writes run as one Lua script: the script checks the
run's lease (redis-py's own lock, extended by its owner only) and that the step
follows the stored one, then writes the row, and a snapshot when one is due. A write
sent again after its reply was lost finds itself stored and counts as landed. Data
never expires unless ``ttl`` asks it to. A server that cannot be reached after a
few retries with backoff is a :class:`~nbgraph.CheckpointError` naming the URL.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from ..errors import CheckpointError, LeaseLost, ThreadBusy
from ..secrets import register_secret
from ._dsn import spilled, unreadable
from .leases import (
    DEFAULT_TTL,
    Lease,
    busy_message,
    holder_alive,
    lost_message,
    new_lease,
    taking_message,
)
from .log import LogStore, Row

__all__ = ["RedisCheckpointer"]

_NOT_A_URL = "RedisCheckpointer: the url is not a Redis URL"

# KEYS: lock, steps, patches, answers, snapshots, head
# ARGV: token ("" for no lease), step, data, patches, answers ("" unchanged), snapshot ("" none), replace ("1"/"0"), ttl ("" none)
_WRITE = """
if ARGV[1] ~= '' then
    local holder = redis.call('get', KEYS[1])
    if not holder then return -2 end
    if holder ~= ARGV[1] then return 0 end
end
local head = redis.call('get', KEYS[6])
if ARGV[7] == '0' and head and tonumber(head) >= tonumber(ARGV[2]) then
    -- The same write again (its reply was lost and the client retried): it has landed.
    if tonumber(head) == tonumber(ARGV[2]) and redis.call('hget', KEYS[2], ARGV[2]) == ARGV[3] then return 1 end
    return -1
end
if ARGV[7] == '0' and (not head) and ARGV[1] ~= '' and ARGV[2] ~= '0' then return -1 end
redis.call('hset', KEYS[2], ARGV[2], ARGV[3])
redis.call('hset', KEYS[3], ARGV[2], ARGV[4])
if ARGV[5] ~= '' then redis.call('hset', KEYS[4], ARGV[2], ARGV[5]) end
if ARGV[6] ~= '' then redis.call('hset', KEYS[5], ARGV[2], ARGV[6]) end
if ARGV[7] == '0' then redis.call('set', KEYS[6], ARGV[2]) end
if ARGV[8] ~= '' then
    for i = 2, 6 do redis.call('expire', KEYS[i], ARGV[8]) end
end
return 1
"""

# KEYS: lock; ARGV: the value of the dead holder's lock, ours, milliseconds. Takes the lock
# only from that holder, so two workers that both saw it dead cannot both take it.
_TAKE_OVER = """
if redis.call('get', KEYS[1]) == ARGV[1] then
    redis.call('set', KEYS[1], ARGV[2], 'PX', ARGV[3])
    return 1
end
return 0
"""


def _value(lease: Lease) -> str:
    """The lock's value for ``lease``: the lease itself, without the expiry that renewals move."""
    return json.dumps({**lease.to_json(), "expires": None}, sort_keys=True, separators=(",", ":"))


class RedisCheckpointer(LogStore):
    """Checkpoints in Redis: a log of steps per thread, readable by every worker.

    Args:
        url: a Redis URL such as ``redis://127.0.0.1:6379/0``.
        ttl: seconds a thread's data lives after its last write. None (the default)
            keeps it until deleted; with a TTL, a thread nobody writes to (a run
            paused for a person, a finished run) disappears when it runs out.
        lease_ttl: seconds a run's lease lasts unless renewed (a live run renews it
            every third of that); a holder on this host whose process is gone loses
            it at once.
        prefix: key prefix, so several applications can share one database.
    """

    def __init__(
        self,
        url: str = "redis://127.0.0.1:6379/0",
        *,
        ttl: int | None = None,
        lease_ttl: float = DEFAULT_TTL,
        prefix: str = "nbgraph",
        client: Any = None,
    ) -> None:
        super().__init__()
        try:
            import redis
        except ImportError:
            raise ImportError("RedisCheckpointer needs the redis package: pip install 'nbgraph[redis]'") from None
        if client is None:
            client = _client(url)
        self._redis = client
        self._errors = redis.RedisError
        self.ttl = ttl
        self.lease_ttl = lease_ttl
        self.prefix = prefix
        kwargs = client.connection_pool.connection_kwargs
        self.url = f"redis://{kwargs.get('host')}:{kwargs.get('port')}/{kwargs.get('db')}"  # never the password
        self.name = f"Redis store {self.url}"
        self._write_script = client.register_script(_WRITE)
        self._take_over = client.register_script(_TAKE_OVER)

    def _key(self, thread: str, part: str) -> str:
        return f"{self.prefix}:{{{thread}}}:{part}"

    @contextmanager
    def _failures(self, doing: str, thread: str | None = None, step: int | None = None) -> Iterator[None]:
        try:
            yield
        except self._errors as exc:
            where = f" (thread {thread!r}" + (f", step {step}" if step is not None else "") + ")" if thread else ""
            raise CheckpointError(
                f"{self.name}: could not {doing}{where}: {type(exc).__name__}: {exc}",
                store=self.name,
                thread=thread,
                step=step,
            ) from exc

    # -- rows -------------------------------------------------------------------------

    def _head(self, thread: str) -> int | None:
        with self._failures("read", thread):
            head = self._redis.get(self._key(thread, "head"))
        return None if head is None else int(head)

    def _rows_at(self, thread: str, steps: list[int]) -> list[Row]:
        if not steps:
            return []
        with self._failures("read", thread):
            pipe = self._redis.pipeline(transaction=False)
            for part in ("steps", "patches", "answers"):
                pipe.hmget(self._key(thread, part), steps)
            data, patches, answers = pipe.execute()
        return [
            Row(step, d.decode(), p.decode() if p is not None else "[]", a.decode() if a is not None else None)
            for step, d, p, a in zip(steps, data, patches, answers, strict=True)
            if d is not None
        ]

    def _last(self, thread: str) -> Row | None:
        head = self._head(thread)
        if head is None:
            return None
        rows = self._rows_at(thread, [head])
        return rows[0] if rows else None

    def _row(self, thread: str, step: int) -> Row | None:
        rows = self._rows_at(thread, [step])
        return rows[0] if rows else None

    def _rows(self, thread: str, after: int, upto: int) -> list[Row]:
        return self._rows_at(thread, list(range(after + 1, upto + 1)))

    def _data(self, thread: str) -> list[tuple[int, str]]:
        with self._failures("read", thread):
            rows = self._redis.hgetall(self._key(thread, "steps"))
        return sorted((int(step), data.decode()) for step, data in rows.items())

    def _latest_at(self, thread: str, part: str, upto: int) -> tuple[int, str] | None:
        with self._failures("read", thread):
            steps = [int(s) for s in self._redis.hkeys(self._key(thread, part))]
            below = [s for s in steps if s <= upto]
            if not below:
                return None
            step = max(below)
            text = self._redis.hget(self._key(thread, part), step)
        return None if text is None else (step, text.decode())

    def _snapshot(self, thread: str, upto: int) -> tuple[int, str] | None:
        return self._latest_at(thread, "snapshots", upto)

    def _answers(self, thread: str, upto: int) -> str | None:
        found = self._latest_at(thread, "answers", upto)
        return None if found is None else found[1]

    def _parent(self, thread: str) -> tuple[str, int] | None:
        with self._failures("read", thread):
            text = self._redis.get(self._key(thread, "parent"))
        if text is None:
            return None
        parent, step = json.loads(text)
        return parent, step

    def _link(self, thread: str, parent: str, step: int) -> None:
        with self._failures("write", thread, step):
            self._redis.set(self._key(thread, "parent"), json.dumps([parent, step]), ex=self.ttl)

    def _write(self, thread: str, row: Row, *, replace: bool, snapshot: str | None, lease: Lease | None) -> None:
        keys = [self._key(thread, part) for part in ("lock", "steps", "patches", "answers", "snapshots", "head")]
        args = [
            _value(lease) if lease is not None else "",
            row.step,
            row.data,
            row.patches,
            row.answers or "",
            snapshot or "",
            "1" if replace else "0",
            self.ttl if self.ttl is not None else "",
        ]
        with self._failures("write", thread, row.step):
            written = self._write_script(keys=keys, args=args)
        if written == 1:
            return
        if written == -1:
            raise CheckpointError(
                f"{self.name}: thread {thread!r} does not end before step {row.step} any more, so step {row.step} "
                "cannot follow it; its earlier steps were lost (a restarted server without persistence?) or "
                "changed by another writer",
                store=self.name,
                thread=thread,
                step=row.step,
            )
        why = (
            " (the lease is gone from the server: another run took the thread and finished, or the server "
            "restarted and lost its data)"
            if written == -2
            else ""
        )
        raise LeaseLost(lost_message(thread, self.name) + why)

    def _drop(self, thread: str) -> None:
        parts = ("steps", "patches", "answers", "snapshots", "head", "parent")
        with self._failures("delete", thread):
            self._redis.delete(*(self._key(thread, part) for part in parts))

    def threads(self) -> list[str]:
        with self._failures("read"):
            keys = self._redis.scan_iter(match=f"{self.prefix}:{{*}}:head")
            return [key.decode()[len(self.prefix) + 2 : -len("}:head")] for key in keys]

    # -- leases -----------------------------------------------------------------------
    # The lock's value is the lease itself (JSON), so who holds it and the lock are one
    # key, set and taken over atomically; redis-py's Lock extends and frees it, for its
    # owner only.

    def _lock(self, lease: Lease) -> Any:
        from redis.lock import Lock

        lock = Lock(self._redis, self._key(lease.thread, "lock"), timeout=self.lease_ttl, thread_local=False)
        lock.local.token = _value(lease).encode()
        return lock

    def _holder(self, thread: str) -> tuple[Lease, str] | None:
        """The lease holding ``thread`` (with when it lapses) and the lock's value, or None."""
        key = self._key(thread, "lock")
        pipe = self._redis.pipeline(transaction=True)
        pipe.get(key)
        pipe.pttl(key)
        value, left = pipe.execute()
        if value is None:
            return None
        value = value.decode()
        held = Lease(**json.loads(value))
        return held._replace(expires=time.time() + left / 1000 if left > 0 else held.since), value

    def acquire(self, thread: str, run: str | None = None, *, force: bool = False) -> Lease:
        lease = new_lease(thread, run, self.lease_ttl)
        held: Lease | None = None
        with self._failures("take the lease", thread):
            if force:
                self.unlock(thread)
            # Each round reads the holder afresh: another worker may take or free the thread
            # between taking the lock and reading who holds it.
            for _ in range(3):
                if self._lock(lease).acquire(blocking=False, token=_value(lease)):
                    return self._held(lease)
                found = self._holder(thread)
                if found is None:
                    continue  # freed meanwhile
                held, value = found
                if holder_alive(held) is not False:
                    break
                # Its process on this host is gone: take the lock from that holder, and only from it.
                if self._take_over(
                    keys=[self._key(thread, "lock")], args=[value, _value(lease), int(self.lease_ttl * 1000)]
                ):
                    return self._held(lease)
                held = None  # another worker took it first: who, the next round reads
        raise ThreadBusy(
            busy_message(thread, held, self.name) if held is not None else taking_message(thread, self.name),
            holder=held,
        )

    def renew(self, lease: Lease) -> Lease | None:
        from redis.exceptions import LockNotOwnedError

        with self._failures("renew the lease", lease.thread):
            try:
                self._lock(lease).extend(self.lease_ttl, replace_ttl=True)
            except LockNotOwnedError:
                return None
        return lease._replace(expires=time.time() + self.lease_ttl)

    def release(self, lease: Lease) -> None:
        from redis.exceptions import LockNotOwnedError

        super().release(lease)
        with self._failures("release the lease", lease.thread):
            try:
                self._lock(lease).release()
            except LockNotOwnedError:
                pass  # it lapsed or was taken over: it is not ours to free

    def unlock(self, thread: str) -> None:
        """Take ``thread`` over from whoever holds it: that run's next write is refused."""
        with self._failures("unlock", thread):
            self._redis.delete(self._key(thread, "lock"))

    def close(self) -> None:
        self._redis.close()

    def __repr__(self) -> str:
        return f"RedisCheckpointer({self.url!r})"


def _client(url: str) -> Any:
    """A client of the server at ``url`` (it connects when first asked something); a URL it cannot
    read is a CheckpointError naming the server, never the password."""
    import redis
    from redis.backoff import ExponentialBackoff
    from redis.retry import Retry

    try:
        client = redis.Redis.from_url(
            url,
            retry=Retry(ExponentialBackoff(cap=0.5, base=0.02), 4),
            # (named, not left to the default: redis-py before 6 retries nothing unless told which errors)
            retry_on_error=[redis.ConnectionError, redis.TimeoutError],
            socket_connect_timeout=2.0,
            socket_timeout=5.0,
        )
    except (ValueError, TypeError) as exc:
        unread, misread = str(exc), False
    else:
        kwargs = client.connection_pool.connection_kwargs
        misread = spilled(url, kwargs, ("password",))
        if not misread:
            if kwargs.get("password"):
                register_secret(kwargs["password"])  # (whatever quotes it later is redacted)
            return client
        unread = "part of the password reads as the host, port or database"
    # (Raised out here, not from the parser's error: it, or the error it came from, may quote the
    # password, as urllib does a port that is part of it.)
    raise CheckpointError(unreadable(_NOT_A_URL, url, unread, spilled=misread))
