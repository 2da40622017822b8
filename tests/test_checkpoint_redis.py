"""RedisCheckpointer against a real redis-server on loopback."""

from __future__ import annotations

import json
import uuid

import pytest
from graphs import trip_graph
from redis_server import free_port

from nbgraph import CheckpointError, LeaseLost, RedisCheckpointer, Resume, ThreadBusy


@pytest.fixture
def prefix() -> str:
    """The test's own key prefix on the session's shared server."""
    return f"test-{uuid.uuid4().hex[:8]}"


@pytest.fixture
def store(redis_url, prefix):
    checkpointer = RedisCheckpointer(redis_url, prefix=prefix)
    yield checkpointer
    checkpointer.close()


def test_interrupt_and_resume_through_redis(store, redis_url, prefix):
    paused = trip_graph().invoke({"who": "ada"}, checkpointer=store)
    assert paused.outcome == "interrupted"
    # Another worker with its own connection picks the thread up.
    other = RedisCheckpointer(redis_url, prefix=prefix)
    done = trip_graph().invoke(Resume(paused.thread, "Porto"), checkpointer=other)
    assert done.outcome == "done" and done.state["booked"] == "hotel in Porto"
    assert [s.step for s in other.history(paused.thread)] == [1, 2]
    assert other.get(paused.thread).status == "done"
    assert other.get(paused.thread, 1).state == {"who": "ada", "city": "Porto"}
    # One row per step, keyed under the thread's hash tag; the state itself only in snapshots.
    steps = store._redis.hgetall(f"{prefix}:{{{paused.thread}}}:steps")
    assert sorted(int(k) for k in steps) == [0, 1, 2]
    assert all("state" not in json.loads(v) for v in steps.values())
    other.close()


def test_data_is_kept_unless_a_ttl_is_asked_for(store, redis_url, prefix):
    kept = trip_graph().invoke({}, checkpointer=store)
    assert store._redis.ttl(f"{prefix}:{{{kept.thread}}}:steps") == -1  # a paused thread never expires silently
    expiring = RedisCheckpointer(redis_url, prefix=prefix, ttl=600)
    paused = trip_graph().invoke({}, checkpointer=expiring)
    assert 0 < expiring._redis.ttl(f"{prefix}:{{{paused.thread}}}:steps") <= 600
    expiring.close()


def test_a_lease_is_redis_pys_lock_and_says_who_holds_it(store, redis_url, prefix):
    other = RedisCheckpointer(redis_url, prefix=prefix)
    lease = store.acquire("t", "run-a")
    held = json.loads(store._redis.get(f"{prefix}:{{t}}:lock"))  # the lock's value is the lease: who, since when
    assert (held["token"], held["run"], held["pid"]) == (lease.token, "run-a", lease.pid)
    assert 0 < store._redis.pttl(f"{prefix}:{{t}}:lock") <= store.lease_ttl * 1000
    with pytest.raises(
        ThreadBusy,
        match=r"thread 't' is being run by run 'run-a' in process \d+ on host .*Redis store redis://127.0.0.1:\d+/0",
    ) as info:
        other.acquire("t")
    assert info.value.holder.token == lease.token
    renewed = store.renew(lease)
    assert renewed is not None and renewed.token == lease.token
    store.release(lease)
    assert store._redis.exists(f"{prefix}:{{t}}:lock") == 0
    other.release(other.acquire("t"))
    other.close()


def test_release_never_frees_another_owners_lease(store, prefix):
    lease = store.acquire("u")
    # Our lease lapsed and somebody else took it: leaving must not delete theirs.
    store._redis.set(f"{prefix}:{{u}}:lock", "someone-else")
    assert store.renew(lease) is None
    store.release(lease)
    assert store._redis.get(f"{prefix}:{{u}}:lock") == b"someone-else"


def test_a_write_without_the_lease_is_refused(store):
    g = trip_graph()
    paused = g.invoke({}, checkpointer=store)
    run_lease = store.acquire(paused.thread, "mine")
    store.unlock(paused.thread)  # someone takes the thread over
    thief = store.acquire(paused.thread, "theirs")
    with pytest.raises(LeaseLost, match=f"this run's lease on thread '{paused.thread}' lapsed or was taken over"):
        store.put(paused.thread, store.get(paused.thread), lease=run_lease)
    store.release(thief)


def test_missing_thread(store):
    assert store.get("nope") is None and store.history("nope") == []


def test_repr_hides_credentials(redis_url):
    url = redis_url.replace("redis://", "redis://user:s3cret-pass@")
    store = RedisCheckpointer(url)
    assert "s3cret" not in repr(store) and "s3cret" not in store.name
    store.close()


def test_unreachable_server_is_a_checkpoint_error_naming_it():
    port = free_port()
    store = RedisCheckpointer(f"redis://127.0.0.1:{port}/0")
    with pytest.raises(
        CheckpointError,
        match=rf"Redis store redis://127.0.0.1:{port}/0: could not read \(thread 't'\): ConnectionError",
    ):
        store.get("t")
