"""RedisCheckpointer against a real redis-server on loopback."""

from __future__ import annotations

import pytest
import redis

from nbgraph import END, START, Graph, RedisCheckpointer, ThreadBusy

from redis_server import redis_server


@pytest.fixture(scope="module")
def redis_url(tmp_path_factory):
    with redis_server(str(tmp_path_factory.mktemp("redis"))) as url:
        yield url


@pytest.fixture
def store(redis_url):
    checkpointer = RedisCheckpointer(redis_url, ttl=600, prefix="test")
    yield checkpointer
    checkpointer._redis.close()


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
    done = ask_graph().resume(paused.thread, "Porto", checkpointer=other)
    assert done.outcome == "done" and done.state["booked"] == "hotel in Porto"
    assert [c.step for c in other.list(paused.thread)] == [0, 1, 2]
    assert other.get(paused.thread).status == "done"
    assert other.get(paused.thread, 1).state == {"who": "ada", "city": "Porto"}
    other._redis.close()


def test_checkpoints_expire_after_ttl(store):
    result = ask_graph().invoke({}, checkpointer=store)
    ttl = store._redis.ttl(f"test:thread:{result.thread}")
    assert 0 < ttl <= 600


def test_lock_is_set_nx_ex_and_owned(store, redis_url):
    other = RedisCheckpointer(redis_url, prefix="test")
    with store.lock("t"):
        key_ttl = store._redis.ttl("test:lock:t")
        assert 0 < key_ttl <= store.lock_ttl
        with pytest.raises(ThreadBusy, match="thread 't' is being run by another worker"):
            with other.lock("t"):
                pass
    with other.lock("t"):
        pass
    assert store._redis.exists("test:lock:t") == 0
    other._redis.close()


def test_release_never_frees_another_owners_lock(store):
    with store.lock("u"):
        # Our lock expired and somebody else took it: leaving must not delete theirs.
        store._redis.set("test:lock:u", "someone-else")
    assert store._redis.get("test:lock:u") == b"someone-else"


def test_missing_thread(store):
    assert store.get("nope") is None and store.list("nope") == []


def test_repr_hides_credentials(redis_url):
    url = redis_url.replace("redis://", "redis://user:s3cret-pass@")
    store = RedisCheckpointer(url)
    assert "s3cret" not in repr(store)
    store._redis.close()


def test_unreachable_server_is_a_clear_error():
    from redis_server import free_port

    store = RedisCheckpointer(f"redis://127.0.0.1:{free_port()}/0")
    with pytest.raises(redis.ConnectionError):
        store.get("t")
