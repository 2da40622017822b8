"""Checkpoints in Redis, shared by many kernels and workers; ``SET NX EX`` locks."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from ..errors import ThreadBusy
from ..names import new_id
from .base import Checkpoint

__all__ = ["RedisCheckpointer"]

# Deletes the lock only if this owner still holds it (a lock that expired and was
# taken by another run must not be released by the first).
_RELEASE = """
if redis.call('get', KEYS[1]) == ARGV[1] then
    return redis.call('del', KEYS[1])
end
return 0
"""


class RedisCheckpointer:
    """One Redis hash per thread (step -> checkpoint JSON), expiring ``ttl`` seconds after the last write.

    Args:
        url: a Redis URL such as ``redis://127.0.0.1:6379/0``.
        ttl: seconds a thread's checkpoints live after its last write (None: forever).
        lock_ttl: seconds after which the lock of a crashed writer expires.
        prefix: key prefix, so several applications can share one database.
    """

    def __init__(
        self,
        url: str = "redis://127.0.0.1:6379/0",
        *,
        ttl: int | None = 3600,
        lock_ttl: int = 3600,
        prefix: str = "nbgraph",
        client: Any = None,
    ) -> None:
        if client is None:
            try:
                import redis
            except ImportError:
                raise ImportError(
                    "RedisCheckpointer needs the redis package: pip install 'nbgraph[redis]'"
                ) from None
            client = redis.Redis.from_url(url)
        self._redis = client
        self.ttl = ttl
        self.lock_ttl = lock_ttl
        self.prefix = prefix
        self._release = client.register_script(_RELEASE)
        self._held: dict[str, str] = {}

    def _key(self, thread: str) -> str:
        return f"{self.prefix}:thread:{thread}"

    def _lock_key(self, thread: str) -> str:
        return f"{self.prefix}:lock:{thread}"

    def put(self, thread: str, checkpoint: Checkpoint) -> None:
        key = self._key(thread)
        pipe = self._redis.pipeline(transaction=True)
        pipe.hset(key, str(checkpoint.step), checkpoint.to_json())
        if self.ttl is not None:
            pipe.expire(key, self.ttl)
        owner = self._held.get(thread)
        if owner is not None:
            # Each write renews our lock, so a long run keeps it while a crashed one loses it.
            pipe.set(self._lock_key(thread), owner, xx=True, ex=self.lock_ttl)
        pipe.execute()

    def get(self, thread: str, step: int | None = None) -> Checkpoint | None:
        key = self._key(thread)
        if step is None:
            steps = [int(s) for s in self._redis.hkeys(key)]
            if not steps:
                return None
            step = max(steps)
        data = self._redis.hget(key, str(step))
        return None if data is None else Checkpoint.from_json(data)

    def list(self, thread: str) -> list[Checkpoint]:
        rows = self._redis.hgetall(self._key(thread))
        return [Checkpoint.from_json(rows[k]) for k in sorted(rows, key=int)]

    def delete(self, thread: str) -> None:
        self._redis.delete(self._key(thread))

    @contextmanager
    def lock(self, thread: str) -> Iterator[None]:
        key = self._lock_key(thread)
        owner = new_id()
        if not self._redis.set(key, owner, nx=True, ex=self.lock_ttl):
            raise ThreadBusy(f"thread {thread!r} is being run by another worker (Redis lock {key!r})")
        self._held[thread] = owner
        try:
            yield
        finally:
            self._held.pop(thread, None)
            self._release(keys=[key], args=[owner])

    def __repr__(self) -> str:
        kwargs = self._redis.connection_pool.connection_kwargs
        return f"RedisCheckpointer(host={kwargs.get('host')!r}, port={kwargs.get('port')!r}, db={kwargs.get('db')!r})"
