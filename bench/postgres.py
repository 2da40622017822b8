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
import sys
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager

import psycopg
from psycopg.conninfo import make_conninfo

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
sys.path.insert(0, os.path.join(HERE, "..", "tests"))

from engine import (  # noqa: E402
    CONVERSATION_STEPS,
    CYCLE_ITERATIONS,
    baseline_cycle,
    best,
    fork_conversation,
    grow_conversation,
    resume_conversation,
    run_cycle,
)
from postgres_server import postgres_server  # noqa: E402
from redis_server import redis_server  # noqa: E402

from nbgraph import MemoryCheckpointer, PostgresCheckpointer, RedisCheckpointer, SQLiteCheckpointer  # noqa: E402


def conversation(dsn: str, steps: int = CONVERSATION_STEPS) -> dict[str, float]:
    """A conversation that grows by a message a step, kept in Postgres, then resumed and forked."""
    store = PostgresCheckpointer(dsn)
    g, writes = grow_conversation(store, steps)
    with psycopg.connect(dsn, autocommit=True) as conn:
        tables = ("nbgraph_steps", "nbgraph_snapshots", "nbgraph_forks", "nbgraph_leases")
        size = sum(conn.execute("SELECT pg_total_relation_size(%s)", (t,)).fetchone()[0] for t in tables)
        rows = conn.execute("SELECT count(*) FROM nbgraph_steps").fetchone()[0]
        snapshots = conn.execute("SELECT count(*) FROM nbgraph_snapshots").fetchone()[0]
    figures = {"size_mb": size / 1e6, "rows": rows, "snapshots": snapshots, **writes}
    figures["fork_ms"] = fork_conversation(g, store, steps)
    store.close()
    # (its pool is open before the clock starts: a worker keeps one for its life)
    return figures | resume_conversation(f"PostgresCheckpointer({dsn!r})", steps)


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
