"""RedisCheckpointer against a real redis-server on loopback."""

from __future__ import annotations

import json

import pytest
from redis_server import free_port, redis_server

from nbgraph import END, START, CheckpointError, Graph, LeaseLost, RedisCheckpointer, Resume, ThreadBusy


@pytest.fixture(scope="module")
def redis_url(tmp_path_factory):
    with redis_server(str(tmp_path_factory.mktemp("redis"))) as url:
        yield url


@pytest.fixture
def store(redis_url):
    checkpointer = RedisCheckpointer(redis_url, prefix="test")
    yield checkpointer
    checkpointer.close()


def ask_graph() -> Graph:
    async def ask(state, ctx):
        return {"city": await ctx.request_input("Which city?")}

    g = Graph("trip")
    g.add_node("ask", ask)
    g.add_node("book", lambda s: {"booked": f"hotel in {s.city}"})
    g.add_edge(START, "ask")
    g.add_edge("ask", "book")
    g.add_edge("book", END)
    return g


def test_interrupt_and_resume_through_redis(store, redis_url):
    paused = ask_graph().invoke({"who": "ada"}, checkpointer=store)
    assert paused.outcome == "interrupted"
    # Another worker with its own connection picks the thread up.
    other = RedisCheckpointer(redis_url, prefix="test")
    done = ask_graph().invoke(Resume(paused.thread, "Porto"), checkpointer=other)
    assert done.outcome == "done" and done.state["booked"] == "hotel in Porto"
    assert [s.step for s in other.history(paused.thread)] == [1, 2]
    assert other.get(paused.thread).status == "done"
    assert other.get(paused.thread, 1).state == {"who": "ada", "city": "Porto"}
    # One row per step, keyed under the thread's hash tag; the state itself only in snapshots.
    steps = store._redis.hgetall(f"test:{{{paused.thread}}}:steps")
    assert sorted(int(k) for k in steps) == [0, 1, 2]
    assert all("state" not in json.loads(v) for v in steps.values())
    other.close()


def test_data_is_kept_unless_a_ttl_is_asked_for(store, redis_url):
    kept = ask_graph().invoke({}, checkpointer=store)
    assert store._redis.ttl(f"test:{{{kept.thread}}}:steps") == -1  # a paused thread never expires silently
    expiring = RedisCheckpointer(redis_url, prefix="test", ttl=600)
    paused = ask_graph().invoke({}, checkpointer=expiring)
    assert 0 < expiring._redis.ttl(f"test:{{{paused.thread}}}:steps") <= 600
    expiring.close()


def test_a_lease_is_redis_pys_lock_and_says_who_holds_it(store, redis_url):
    other = RedisCheckpointer(redis_url, prefix="test")
    lease = store.acquire("t", "run-a")
    held = json.loads(store._redis.get("test:{t}:lock"))  # the lock's value is the lease: who, since when
    assert (held["token"], held["run"], held["pid"]) == (lease.token, "run-a", lease.pid)
    assert 0 < store._redis.pttl("test:{t}:lock") <= store.lease_ttl * 1000
    with pytest.raises(
        ThreadBusy,
        match=r"thread 't' is being run by run 'run-a' in process \d+ on host .*Redis store redis://127.0.0.1:\d+/0",
    ) as info:
        other.acquire("t")
    assert info.value.holder.token == lease.token
    renewed = store.renew(lease)
    assert renewed is not None and renewed.token == lease.token
    store.release(lease)
    assert store._redis.exists("test:{t}:lock") == 0
    other.release(other.acquire("t"))
    other.close()


def test_release_never_frees_another_owners_lease(store):
    lease = store.acquire("u")
    # Our lease lapsed and somebody else took it: leaving must not delete theirs.
    store._redis.set("test:{u}:lock", "someone-else")
    assert store.renew(lease) is None
    store.release(lease)
    assert store._redis.get("test:{u}:lock") == b"someone-else"


def test_a_write_without_the_lease_is_refused(store):
    g = ask_graph()
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
