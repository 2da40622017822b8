"""PostgresCheckpointer: a 2,000-step conversation, and the engine's 2-node loop beside the other stores.

1. A conversation that grows by a message a step, 2,000 steps, kept in Postgres: the
   write per step over its first and last 200 steps, a resume of it in a fresh process,
   the space its tables take, and a fork (as ``bench/engine.py`` measures it on SQLite).
2. The 2-node cycle of ``bench/engine.py`` (1,000 iterations, 2,000 node executions in
   one run) per node execution with no store, a MemoryCheckpointer, SQLite, Redis and
   Postgres, beside the plain-Python loop.

Postgres is measured twice: with its default durability (every commit waits for its WAL to
reach the disk, so a step costs the disk's flush) and with ``synchronous_commit=off`` set
for the store's connections in its URL (a server that crashes loses its last fraction of a
second of commits; a client that crashes loses nothing), which is how SQLite's WAL file
(``synchronous=NORMAL``) and a Redis without persistence run here.

The servers are started for the run, on loopback: a private PostgreSQL cluster (Debian's
``postgresql``) unless ``--dsn`` names one (the figures' tables then go in schemas of their
own, dropped at the end), and a redis-server as the tests start it.

Run: python bench/postgres.py [--repeat N] [--dsn DSN]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager

import psycopg
from psycopg.conninfo import make_conninfo

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
sys.path.insert(0, os.path.join(HERE, "..", "tests"))

from engine import _CONVERSATION, CONVERSATION_STEPS, CYCLE_ITERATIONS, baseline_cycle, best, run_cycle  # noqa: E402
from postgres_server import postgres_server  # noqa: E402
from redis_server import redis_server  # noqa: E402

from nbgraph import MemoryCheckpointer, PostgresCheckpointer, RedisCheckpointer, SQLiteCheckpointer  # noqa: E402
from nbgraph.engine.persistence import fork_thread  # noqa: E402


def conversation(dsn: str, steps: int = CONVERSATION_STEPS) -> dict[str, float]:
    """A conversation that grows by a message a step, kept in Postgres, then resumed and forked."""
    namespace: dict = {}
    exec(_CONVERSATION, namespace)
    store = PostgresCheckpointer(dsn)
    writes: list[float] = []
    put = store.put

    def timed_put(thread, checkpoint, **options):
        t0 = time.perf_counter()
        put(thread, checkpoint, **options)
        writes.append(time.perf_counter() - t0)

    store.put = timed_put  # type: ignore[method-assign]
    g = namespace["graph"](steps)
    paused = g.invoke({"messages": []}, thread="talk", checkpointer=store)
    assert paused.outcome == "interrupted" and len(paused.state["messages"]) == steps, paused
    with psycopg.connect(dsn, autocommit=True) as conn:
        tables = ("nbgraph_steps", "nbgraph_snapshots", "nbgraph_forks", "nbgraph_leases")
        size = sum(conn.execute("SELECT pg_total_relation_size(%s)", (t,)).fetchone()[0] for t in tables)
        rows = conn.execute("SELECT count(*) FROM nbgraph_steps").fetchone()[0]
        snapshots = conn.execute("SELECT count(*) FROM nbgraph_snapshots").fetchone()[0]
    window = 200
    figures = {
        "size_mb": size / 1e6,
        "rows": rows,
        "snapshots": snapshots,
        "write_first_us": statistics.mean(writes[1 : window + 1]) * 1e6,
        "write_last_us": statistics.mean(writes[-window - 1 : -1]) * 1e6,
    }
    t0 = time.perf_counter()
    fork_thread(g.compile(), store, "talk", steps // 2, None, "talk-fork")
    figures["fork_ms"] = (time.perf_counter() - t0) * 1000
    store.close()
    resume = (
        _CONVERSATION
        + f"""
import time, tracemalloc
import nbgraph.events, nbgraph.pauses  # what any process has loaded once it ran a graph with pauses
from nbgraph import PostgresCheckpointer, Resume
nbgraph.pauses.Pause(id="warm", kind="input", node="n", step=0)  # pydantic builds the model's validator once
from nbgraph.engine.runner import run_blocking
async def warm():
    return None
run_blocking(warm(), all_sync=False)  # the loop async nodes run on, started once per process
g = graph({steps})
g.compile()
store = PostgresCheckpointer({dsn!r})  # (its pool is open: a worker keeps one for its life)
tracemalloc.start()
t0 = time.perf_counter()
result = g.invoke(Resume("talk", "yes"), checkpointer=store)
seconds = time.perf_counter() - t0
peak = tracemalloc.get_traced_memory()[1]
assert result.outcome == "done" and len(result.state["messages"]) == {steps}, result
print(seconds, peak)
"""
    )
    out = subprocess.run(
        [sys.executable, "-c", resume],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONPATH": os.path.join(HERE, "..")},
    )
    seconds, peak = out.stdout.split()
    figures["resume_ms"] = float(seconds) * 1000
    figures["resume_mb"] = float(peak) / 1e6
    return figures


@contextmanager
def bench_schema(dsn: str, settings: str) -> Iterator[str]:
    """A connection string whose tables live in a new schema (dropped afterwards), with ``settings``."""
    schema = f"nbgraph_bench_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
    try:
        yield make_conninfo(dsn, options=f"-csearch_path={schema} {settings}".strip())
    finally:
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute(f"DROP SCHEMA {schema} CASCADE")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--dsn", help="an existing PostgreSQL server to use (default: start a private one)")
    args = parser.parse_args()
    with ExitStack() as stack:
        tmp = stack.enter_context(tempfile.TemporaryDirectory(prefix="nbgraph-bench-"))
        dsn = args.dsn or stack.enter_context(postgres_server(fsync=True)).dsn
        redis_url = stack.enter_context(redis_server(tmp))
        with psycopg.connect(dsn) as conn:
            version = conn.execute("SHOW server_version").fetchone()[0]
        print(f"python {sys.version.split()[0]}; PostgreSQL {version}")
        variants = {
            name: stack.enter_context(bench_schema(dsn, settings))
            for name, settings in (("postgres", ""), ("postgres, synchronous_commit=off", "-csynchronous_commit=off"))
        }

        for name, where in variants.items():
            talk = conversation(where)
            print(
                f"a {CONVERSATION_STEPS:,}-step conversation in {name}: tables {talk['size_mb']:.1f} MB "
                f"({talk['rows']:,} rows, {talk['snapshots']} snapshots); write per step "
                f"{talk['write_first_us']:.0f} us at the start, {talk['write_last_us']:.0f} us at the end; resume in "
                f"a fresh process {talk['resume_ms']:.0f} ms, {talk['resume_mb']:.1f} MB at peak; fork "
                f"{talk['fork_ms']:.1f} ms"
            )

        counter = iter(range(10**6))
        stores = {
            "none": lambda: None,
            "memory": MemoryCheckpointer,
            "sqlite": lambda: SQLiteCheckpointer(os.path.join(tmp, f"bench{next(counter)}.db")),
            "redis": lambda: RedisCheckpointer(redis_url, prefix=f"bench{next(counter)}"),
            **{name: lambda where=where: PostgresCheckpointer(where) for name, where in variants.items()},
        }
        nodes = 2 * CYCLE_ITERATIONS
        base = best(lambda: baseline_cycle(CYCLE_ITERATIONS), args.repeat) / nodes * 1e6
        print(f"2-node cycle x{CYCLE_ITERATIONS:,}, best of {args.repeat}, microseconds per node execution:")
        print(f"    {'store':<34}{'nbgraph':>10}{'plain':>9}{'overhead':>10}")
        for name, factory in stores.items():
            per_node = best(lambda factory=factory: run_cycle(factory), args.repeat) / nodes * 1e6
            print(f"    {name:<34}{per_node:>10.2f}{base:>9.2f}{per_node - base:>10.2f}")


if __name__ == "__main__":
    main()
