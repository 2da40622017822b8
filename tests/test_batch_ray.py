"""Batches on Ray: a real local Ray runtime, a real redis-server, a Ray worker killed with SIGKILL.

One Ray runtime for the module (2 CPUs, no dashboard). The ray path must give the table the
local path gives for the same inputs (paths, outcomes), also when the worker running them is
killed mid-run: Ray restarts it and sends the calls again, and each input continues from its
checkpoint in Redis. The nodes append lines to a log, so the log counts how often each ran.
"""

from __future__ import annotations

import asyncio
import os
import signal
from collections import Counter
from pathlib import Path

import pydantic
import pytest
import ray
from openai_server import OpenAIServer
from openai_server import Reply as ServerReply

from nbgraph import (
    END,
    START,
    Graph,
    MemoryCheckpointer,
    MessagesState,
    OpenAIModel,
    RedisCheckpointer,
    SQLiteCheckpointer,
    llm_node,
    recorded,
)
from nbgraph.batch import Batch
from nbgraph.batch.ray import RayExecutor

HERE = Path(__file__).resolve().parent
PREFIX = "batch-ray"
"""The key prefix of these tests' batches on the session's shared redis-server."""
POLL = 0.05
POLLS = 1200
"""How often, and how many times, the test looks for a file a worker writes (a hung worker, not a slow one, fails)."""


class Item(pydantic.BaseModel):
    n: int
    doubled: int = 0


@pytest.fixture(scope="module")
def cluster():
    # The workers import this module's functions by name, as Ray ships code.
    path = os.pathsep.join([str(HERE), str(HERE.parent)])
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, runtime_env={"env_vars": {"PYTHONPATH": path}})
    yield
    ray.shutdown()


def build(log: str, block: str | None = None) -> Graph:
    """first -> work -> (big | small) -> last; work fails on n == 3. With ``block`` (a folder), ``work``
    writes its process id to ``{block}/{n}`` and waits for ever the first time it runs for an input."""

    def note(line: str) -> None:
        with open(log, "a") as out:
            out.write(line + "\n")

    def first(state):
        note(f"first {state.n}")

    async def work(state):
        if block is not None:
            marker = Path(block, str(state.n))
            if not marker.exists():
                # Written whole, then renamed: the test reads a marker only once it holds the pid.
                partial = Path(block, f".{state.n}.partial")
                partial.write_text(str(os.getpid()))
                partial.rename(marker)
                await asyncio.Event().wait()
        if state.n == 3:
            raise RuntimeError("three is not allowed")
        return {"doubled": 2 * state.n}

    def last(state):
        note(f"last {state.n}")

    g = Graph("ray-batch", state=Item)
    g.add_node("first", first)
    g.add_node("work", work)
    g.add_node("big", lambda s: None)
    g.add_node("small", lambda s: None)
    g.add_node("last", last)
    g.add_edge(START, "first")
    g.add_edge("first", "work")
    g.add_edge("work", "big", when=lambda s: s.doubled >= 8)
    g.add_edge("work", "small")
    g.add_edge("big", "last")
    g.add_edge("small", "last")
    g.add_edge("last", END)
    return g


INPUTS = {n: {"n": n} for n in range(8)} | {"bad": {"n": "not a number"}}


def shape(rows) -> list[tuple]:
    return [(row.input_id, row.outcome, row.path) for row in rows]


def counted(log: Path) -> Counter:
    return Counter(log.read_text().splitlines())


def test_a_batch_after_ray_was_shut_down_and_started_again_runs_on_new_actors(cluster, redis_url, tmp_path):
    # A new runtime numbers its jobs from the start again: actors of the old one must not be reused.
    store = RedisCheckpointer(redis_url, prefix=PREFIX)
    inputs = {n: {"n": n} for n in (1, 2)}
    before = build(str(tmp_path / "before.txt")).batch(
        inputs, checkpointer=store, batch="before-restart", executor="ray", progress=False, table="rows"
    )
    ray.shutdown()
    path = os.pathsep.join([str(HERE), str(HERE.parent)])
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, runtime_env={"env_vars": {"PYTHONPATH": path}})
    after = build(str(tmp_path / "after.txt")).batch(
        inputs, checkpointer=store, batch="after-restart", executor="ray", progress=False, table="rows"
    )
    assert [row.error for row in after] == [None, None]
    assert shape(after) == shape(before) == [(n, "done", ("first", "work", "small", "last")) for n in inputs]


def test_the_ray_path_gives_the_local_table_and_progress_as_rows_arrive(cluster, redis_url, tmp_path):
    local_log, ray_log = tmp_path / "local.txt", tmp_path / "ray.txt"
    local = build(str(local_log)).batch(
        INPUTS,
        checkpointer=RedisCheckpointer(redis_url, prefix=PREFIX),
        batch="local",
        progress=False,
        table="rows",
    )
    ended = []
    rows = build(str(ray_log)).batch(
        INPUTS,
        checkpointer=RedisCheckpointer(redis_url, prefix=PREFIX),
        batch="on-ray",
        executor="ray",
        table="rows",
        progress=lambda progress, event: (
            ended.append((event.input_id, progress.ended)) if event.kind == "end" else None
        ),
    )
    assert shape(rows) == shape(local)
    assert {row.input_id: row.outcome for row in rows} == {
        **{n: "done" for n in range(8) if n != 3},
        3: "failed",
        "bad": "failed",
    }
    assert rows[5].path == ("first", "work", "big", "last") and rows[1].path == ("first", "work", "small", "last")
    assert "three is not allowed" in rows[3].error and rows[3].thread == "on-ray/3"
    assert rows[-1].thread is None and "input 'bad'" in rows[-1].error
    assert counted(ray_log) == counted(local_log)
    # The progress counted each row as it came back, one at a time.
    assert [count for _, count in ended] == list(range(1, len(INPUTS) + 1))
    assert sorted(map(str, (input_id for input_id, _ in ended))) == sorted(map(str, INPUTS))


async def test_a_worker_killed_mid_run_is_retried_and_each_input_continues_from_its_checkpoint(
    cluster, redis_url, tmp_path
):
    blocked = tmp_path / "blocked"
    blocked.mkdir()
    ray_log, local_log = tmp_path / "ray.txt", tmp_path / "local.txt"
    inputs = {n: {"n": n} for n in range(6)}
    executor = RayExecutor(actors=1, retries=2)
    batch = Batch(
        build(str(ray_log), block=str(blocked)),
        inputs,
        checkpointer=RedisCheckpointer(redis_url, prefix=PREFIX),
        batch="killed",
        executor=executor,
        progress=False,
        table="rows",
    )
    running = asyncio.ensure_future(batch.run())
    try:
        # Every input waits inside `work`, in the one worker, after its first step's checkpoint.
        for _ in range(POLLS):
            if len(list(blocked.glob("[!.]*"))) == len(inputs):
                break
            await asyncio.sleep(POLL)
        pids = {marker.read_text() for marker in blocked.glob("[!.]*")}
        assert len(pids) == 1, (
            f"the inputs did not all reach the worker: {sorted(p.name for p in blocked.glob('[!.]*'))}"
        )
        os.kill(int(pids.pop()), signal.SIGKILL)
        rows = await asyncio.wait_for(running, 120)
    finally:
        executor.shutdown()
    local = await build(str(local_log)).abatch(inputs, progress=False, table="rows")
    assert shape(rows) == shape(local)
    assert [row.thread for row in rows] == [f"killed/{n}" for n in inputs]
    log = counted(ray_log)
    # Each input finished exactly once, and none started again from the top: it went on from `work`.
    assert log == counted(local_log)
    assert all(log[f"first {n}"] == 1 for n in inputs) and all(log[f"last {n}"] == 1 for n in inputs if n != 3)


def test_a_store_the_workers_cannot_reach_is_refused_with_what_to_pass(tmp_path):
    g = build(str(tmp_path / "log.txt"))
    for store, why in (
        (None, "executor='ray' needs a checkpointer"),
        (MemoryCheckpointer(), "cannot use a MemoryCheckpointer: it lives in this process"),
        (SQLiteCheckpointer(tmp_path / "runs.db"), "cannot use a SQLiteCheckpointer"),
    ):
        with pytest.raises(ValueError) as caught:
            g.batch([{"n": 1}], checkpointer=store, executor="ray", progress=False)
        assert why in str(caught.value)
        assert "pass checkpointer=RedisCheckpointer('redis://host:6379/0')" in str(caught.value)


def agent(model) -> Graph:
    g = Graph("ray-agent", state=MessagesState, model=model)
    g.add_node("agent", llm_node("You answer travellers."))
    g.add_edge(START, "agent")
    g.add_edge("agent", END)
    return g


def about(request: dict) -> ServerReply:
    return ServerReply(text=f"About {request['messages'][-1]['content']}")


def test_a_batch_recorded_on_ray_workers_replays_there_with_the_server_stopped(cluster, redis_url, tmp_path):
    # The workers record into the driver's file (one machine here); the replay ships the recording
    # itself with the model, so a worker needs neither the file, the server nor a key.
    path = tmp_path / "ray.ndjson"
    store = RedisCheckpointer(redis_url, prefix=PREFIX)
    cities = {
        city: {"messages": [{"role": "user", "content": f"{city}?"}]} for city in ("Paris", "Lyon", "Rome", "Oslo")
    }
    with OpenAIServer(about) as server:
        model = OpenAIModel(
            "gpt-4o-mini", base_url=server.base_url, api_key="sk-proj-RAYk9Rv2LmTq7XbWnQxZw", max_retries=0
        )
        first = agent(recorded(model, path, mode="record")).batch(
            cities, checkpointer=store, batch="ray-record", executor="ray", progress=False, table="rows"
        )
        assert len(server.requests) == len(cities)
    assert [row.outcome for row in first] == ["done"] * len(cities), [row.error for row in first]
    assert "sk-proj-RAY" not in path.read_text()

    offline = recorded(None, path, mode="replay")
    assert offline.exchanges == len(cities)
    second = agent(offline).batch(
        cities, checkpointer=store, batch="ray-replay", executor="ray", progress=False, table="rows"
    )
    assert [(row.outcome, row.path, row.tokens, row.cost) for row in second] == [
        (row.outcome, row.path, row.tokens, row.cost) for row in first
    ]
    for row in second:
        kept = store.get(row.thread)
        assert kept is not None and kept.state["messages"][-1]["content"] == f"About {row.input_id}?"
