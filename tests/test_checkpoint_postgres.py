"""PostgresCheckpointer against a real PostgreSQL server on loopback.

The store's contract (rows, snapshots, forks, leases, fencing, one run per thread), a
long thread resumed exactly, processes racing for one thread, the crash-consistency,
racing and takeover tests of SQLite and Redis run again on Postgres, a server stopped
mid-run and started again, and batches on the local and the Ray executor. Each test
keeps its tables in a schema of its own on the session's server; a test that stops a
server has one of its own.
"""

from __future__ import annotations

import json
import os
import pickle
import re
import subprocess
import sys
import uuid
from collections import Counter
from pathlib import Path
from typing import Annotated, Any

import postgres_server
import psycopg
import pydantic
import pytest
import test_checkpoint as contract
import test_durable_crash as crash
from forked import Forker
from graphs import trip_graph
from postgres_server import PostgresServer, schema_dsn
from redis_server import free_port
from test_store_outages import (
    MENDED,
    check_store_holds_only_what_was_written,
    resume_exactly,
    run_into,
)

from nbgraph import (
    END,
    START,
    CheckpointError,
    Fork,
    Graph,
    LeaseLost,
    MemoryCheckpointer,
    PostgresCheckpointer,
    Resume,
    ThreadBusy,
    ThreadExists,
    append,
)

PROGRAMS = Path(__file__).with_name("programs")


@pytest.fixture
def store(postgres_dsn):
    checkpointer = PostgresCheckpointer(postgres_dsn)
    yield checkpointer
    checkpointer.close()


def sql(dsn: str, query: str, *args: Any) -> list[tuple]:
    """What the tables hold, read with a connection of the test's own."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        cursor = conn.execute(query, args)
        return cursor.fetchall() if cursor.description else []


# -- the store's contract -------------------------------------------------------------


def test_interrupt_and_resume_through_postgres(store, postgres_dsn):
    paused = trip_graph().invoke({"who": "ada"}, checkpointer=store)
    assert paused.outcome == "interrupted"
    # Another worker with a pool of its own picks the thread up.
    other = PostgresCheckpointer(postgres_dsn)
    done = trip_graph().invoke(Resume(paused.thread, "Porto"), checkpointer=other)
    assert done.outcome == "done" and done.state["booked"] == "hotel in Porto"
    assert [s.step for s in other.history(paused.thread)] == [1, 2]
    assert other.get(paused.thread).status == "done"
    assert other.get(paused.thread, 1).state == {"who": "ada", "city": "Porto"}
    assert store.threads() == [paused.thread]
    other.close()


class Note(pydantic.BaseModel):
    id: str
    text: str


class Notes(pydantic.BaseModel):
    n: int = 0
    notes: Annotated[list[Note], append] = []


def test_a_row_per_step_holds_its_change_and_the_state_is_whole_only_in_snapshots(store, postgres_dsn):
    g = Graph("notes", state=Notes)
    g.add_node("a", lambda s: {"n": 1, "notes": [Note(id="a", text="from a")]})
    g.add_node("b", lambda s: {"n": 11, "notes": [Note(id="b", text="from b")]})
    g.add_edge(START, "a")
    g.add_edge("a", "b")
    g.add_edge("b", END)
    result = g.invoke({}, checkpointer=store)
    rows = sql(
        postgres_dsn, "SELECT step, data, patches FROM nbgraph_steps WHERE thread = %s ORDER BY step", result.thread
    )
    assert [step for step, _, _ in rows] == [0, 1, 2]
    last = json.loads(rows[-1][1])
    assert last["status"] == "done" and last["graph"] == "notes" and "state" not in last
    # Step 2 stored what it changed: n set, one note appended; not the notes before it.
    assert json.loads(rows[2][2]) == [{"set": {"n": 11}, "extend": {"notes": [{"id": "b", "text": "from b"}]}}]
    snapshots = sql(postgres_dsn, "SELECT step, state FROM nbgraph_snapshots WHERE thread = %s", result.thread)
    assert [(step, json.loads(state)) for step, state in snapshots] == [(0, {"n": 0, "notes": []})]
    assert store.get(result.thread).state == {
        "n": 11,
        "notes": [{"id": "a", "text": "from a"}, {"id": "b", "text": "from b"}],
    }


def test_a_lease_says_who_holds_it_and_lapses_on_the_servers_clock(store, postgres_dsn):
    other = PostgresCheckpointer(postgres_dsn)
    lease = store.acquire("t", "run-a")
    with pytest.raises(
        ThreadBusy,
        match=r"thread 't' is being run by run 'run-a' in process \d+ on host '.+' since \d\d:\d\d:\d\d; its lease "
        r"ends in (2\d|30) s \(Postgres store postgresql://127.0.0.1:\d+/postgres\)\. Wait for it, or if that run is "
        r"gone, take the thread over with checkpointer.unlock\('t'\) or resume with force=True",
    ) as info:
        other.acquire("t")
    assert info.value.holder.token == lease.token
    # The lease ends on the server's clock: pushed back by a renewal, taken once it has passed.
    left = "SELECT expires - extract(epoch FROM clock_timestamp()) FROM nbgraph_leases WHERE thread = 't'"
    sql(postgres_dsn, "UPDATE nbgraph_leases SET expires = expires - 20 WHERE thread = 't'")
    assert 0 < sql(postgres_dsn, left)[0][0] <= 10
    renewed = store.renew(lease)
    assert renewed is not None and renewed.token == lease.token
    assert 20 < sql(postgres_dsn, left)[0][0] <= 30
    sql(postgres_dsn, "UPDATE nbgraph_leases SET expires = expires - 31 WHERE thread = 't'")
    taken = other.acquire("t", "run-b")
    assert sql(postgres_dsn, "SELECT token, run FROM nbgraph_leases WHERE thread = 't'") == [(taken.token, "run-b")]
    assert store.renew(lease) is None  # the lapsed lease is not ours any more...
    store.release(lease)  # ...and letting it go leaves the new holder's alone
    assert sql(postgres_dsn, "SELECT token FROM nbgraph_leases WHERE thread = 't'") == [(taken.token,)]
    other.release(taken)
    assert sql(postgres_dsn, "SELECT count(*) FROM nbgraph_leases") == [(0,)]
    other.close()


def test_a_lease_held_on_another_host_is_waited_for_until_it_lapses(store, postgres_dsn):
    insert = (
        "INSERT INTO nbgraph_leases VALUES ('t', 'theirs', 'far-run', 'elsewhere', 1, NULL, 0, "
        "extract(epoch FROM clock_timestamp()) + %s)"
    )
    sql(postgres_dsn, insert, 30)
    with pytest.raises(ThreadBusy, match="run 'far-run' in process 1 on host 'elsewhere'"):
        store.acquire("t")
    sql(postgres_dsn, "DELETE FROM nbgraph_leases")
    sql(postgres_dsn, insert, -1)  # lapsed a second ago
    assert store.acquire("t").token == sql(postgres_dsn, "SELECT token FROM nbgraph_leases")[0][0]


def test_a_holder_on_this_host_whose_process_is_gone_loses_the_lease_at_once(store, postgres_dsn):
    code = (
        "import sys\n"
        "from nbgraph import PostgresCheckpointer\n"
        "lease = PostgresCheckpointer(sys.argv[1]).acquire('t', 'gone-run')\n"
        "print(lease.pid, flush=True)\n"
        "import os; os._exit(0)  # without letting the lease go, as a killed kernel would\n"
    )
    done = subprocess.run([sys.executable, "-c", code, postgres_dsn], capture_output=True, text=True, check=True)
    gone_pid = int(done.stdout)
    assert sql(postgres_dsn, "SELECT pid, run FROM nbgraph_leases") == [(gone_pid, "gone-run")]
    lease = store.acquire("t", "mine")  # its 30 s have not passed: its pid is gone
    assert sql(postgres_dsn, "SELECT token, pid FROM nbgraph_leases") == [(lease.token, os.getpid())]


def test_a_write_without_the_lease_is_refused_and_changes_nothing(store):
    g = trip_graph()
    paused = g.invoke({}, checkpointer=store)
    run_lease = store.acquire(paused.thread, "mine")
    store.unlock(paused.thread)  # someone takes the thread over
    thief = store.acquire(paused.thread, "theirs")
    before = store.get(paused.thread)
    with pytest.raises(LeaseLost, match=f"this run's lease on thread '{paused.thread}' lapsed or was taken over"):
        store.put(paused.thread, before._replace(step=before.step + 1, status="done"), lease=run_lease)
    with pytest.raises(LeaseLost):
        store.put(paused.thread, before._replace(status="failed"), lease=run_lease)  # (the same step again)
    assert store.get(paused.thread) == before
    store.release(thief)


def test_force_takes_a_thread_over_and_the_old_holder_writes_nothing(store, postgres_dsn):
    async def ask(state, ctx):
        return {"n": int(await ctx.request_input("how many?"))}

    g = Graph("ask")
    g.add_node("ask", ask)
    g.add_edge(START, "ask")
    g.add_edge("ask", END)
    paused = g.invoke({}, checkpointer=store)
    stuck = PostgresCheckpointer(postgres_dsn)
    held = stuck.acquire(paused.thread, "stuck-run")  # a live run of this process that never ends
    with pytest.raises(ThreadBusy, match="being run by run 'stuck-run'"):
        g.invoke(Resume(paused, "3"), checkpointer=store)
    done = g.invoke(Resume(paused, "3", force=True), checkpointer=store)
    assert done.outcome == "done" and done.state == {"n": 3}
    with pytest.raises(LeaseLost, match=f"lease on thread '{paused.thread}' lapsed or was taken over"):
        stuck.put(paused.thread, store.get(paused.thread), lease=held)
    assert store.get(paused.thread).status == "done"
    stuck.release(held)
    stuck.close()


def test_one_run_per_thread_unless_it_is_replaced_on_purpose(store):
    first = trip_graph().invoke({}, thread="trip", checkpointer=store)
    assert first.outcome == "interrupted"
    first_run = store.get("trip").run
    with pytest.raises(
        ThreadExists, match=r"thread 'trip' already holds a run of graph 'trip' \(interrupted at step 0\)"
    ):
        trip_graph().invoke({}, thread="trip", checkpointer=store)
    # Replacing it deletes the thread's rows, not the lease the replacing run holds.
    again = trip_graph().invoke({"who": "bo"}, thread="trip", checkpointer=store, replace=True)
    assert again.outcome == "interrupted", again.reason
    kept = store.get("trip")
    assert kept.state == {"who": "bo"} and kept.run not in (None, first_run)


def counting_graph(limit: int) -> Graph:
    g = Graph("count", max_steps=1000, max_same_node=1000)
    g.add_node("inc", lambda s: {"n": s.n + 1})
    g.add_edge(START, "inc")
    g.add_edge("inc", "inc", when=lambda s: s.n < limit, label=f"n < {limit}")
    g.add_edge("inc", END)
    return g


def test_a_fork_points_at_its_parent_instead_of_copying_it(store, postgres_dsn):
    parent = counting_graph(300).invoke({"n": 0}, thread="parent", checkpointer=store)
    assert (parent.outcome, parent.state["n"]) == ("done", 300)
    steps_of = "SELECT step FROM nbgraph_steps WHERE thread = %s ORDER BY step"
    parent_rows = sql(postgres_dsn, "SELECT * FROM nbgraph_steps WHERE thread = 'parent' ORDER BY step")
    longer = counting_graph(310).invoke(Fork("parent", step=150, thread="longer"), checkpointer=store)
    assert (longer.outcome, longer.state["n"], len(longer.history)) == ("done", 310, 310)
    # The fork wrote its own steps from 150 on, and a row that points at the parent's.
    assert sql(postgres_dsn, steps_of, "longer") == [(step,) for step in range(150, 311)]
    assert sql(postgres_dsn, "SELECT * FROM nbgraph_forks") == [("longer", "parent", 150)]
    assert store.get("longer", 100).state == store.get("parent", 100).state == {"n": 100}
    assert [s.step for s in store.history("longer")] == list(range(1, 311))
    assert sql(postgres_dsn, "SELECT * FROM nbgraph_steps WHERE thread = 'parent' ORDER BY step") == parent_rows
    assert sorted(store.threads()) == ["longer", "parent"]
    store.delete("longer")
    assert store.get("longer") is None and store.history("longer") == [] and store.threads() == ["parent"]
    assert sql(postgres_dsn, "SELECT count(*) FROM nbgraph_forks") == [(0,)]


def test_missing_thread(store):
    assert store.get("nope") is None and store.history("nope") == [] and store.threads() == []


def test_a_corrupt_row_is_a_checkpoint_error_naming_the_store_thread_and_step(store, postgres_dsn):
    paused = trip_graph().invoke({}, thread="t", checkpointer=store)
    assert paused.outcome == "interrupted"
    sql(postgres_dsn, "UPDATE nbgraph_steps SET data = '{not json' WHERE thread = 't' AND step = 0")
    with pytest.raises(CheckpointError) as info:
        trip_graph().invoke(Resume("t", "Porto"), checkpointer=store)
    assert re.fullmatch(
        r"Postgres store postgresql://127.0.0.1:\d+/postgres: the row of thread 't' at step 0 is not valid JSON \(.+\)",
        str(info.value),
    ), str(info.value)
    assert (info.value.store, info.value.thread, info.value.step) == (store.name, "t", 0)


def test_the_name_and_repr_never_show_the_password(postgres):
    url = postgres.dsn.replace("postgres@", "postgres:s3cret-pass@")
    store = PostgresCheckpointer(url)  # (the test server trusts loopback: any password will do)
    assert store.name == f"Postgres store postgresql://127.0.0.1:{postgres.port}/postgres"
    assert "s3cret" not in repr(store) and "s3cret" not in store.name
    store.close()


def test_an_unreachable_server_is_a_checkpoint_error_naming_it_without_the_password():
    port = free_port()
    with pytest.raises(CheckpointError) as info:
        PostgresCheckpointer(f"postgresql://postgres:s3cret-pass@127.0.0.1:{port}/postgres")
    assert re.fullmatch(
        rf"Postgres store postgresql://127.0.0.1:{port}/postgres: could not open: OperationalError: .*Connection refused.*",
        str(info.value),
    ), str(info.value)
    assert "s3cret" not in str(info.value)
    with pytest.raises(CheckpointError, match=r"^PostgresCheckpointer: the dsn is not a PostgreSQL URL"):
        PostgresCheckpointer("not a dsn")


def test_the_store_loads_without_psycopg_and_names_the_extra_when_made():
    code = (
        "import sys\n"
        "sys.modules['psycopg'] = None  # as if it were not installed\n"
        "from nbgraph import *\n"
        "try:\n"
        "    PostgresCheckpointer('postgresql://127.0.0.1/db')\n"
        "except ImportError as exc:\n"
        "    print(exc)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "PostgresCheckpointer needs psycopg and psycopg-pool: pip install 'nbgraph[postgres]'"


def test_a_store_pickles_as_its_connection_options_and_opens_its_own_pool(store, postgres_dsn):
    paused = trip_graph().invoke({}, checkpointer=store)
    copied = pickle.loads(pickle.dumps(PostgresCheckpointer(postgres_dsn, lease_ttl=7.0, timeout=3.0)))
    assert (copied.name, copied.lease_ttl, copied.timeout) == (store.name, 7.0, 3.0)
    assert copied.get(paused.thread).status == "interrupted"  # the same schema, through the same options
    copied.close()


# The checkpoint contract the other stores pass (resume after a failure, state_at).
TestResumeAfterFailure = contract.TestResumeAfterFailure


# -- a long thread -------------------------------------------------------------------


class Talk(pydantic.BaseModel):
    messages: Annotated[list[str], append] = []


TALK = 250


def talk_graph(ask_at: int | None) -> Graph:
    """One message a step, TALK in all; with ``ask_at``, the node asks a person on that step first."""

    async def say(state, ctx):
        if ctx.step == ask_at:
            await ctx.request_input("go on?")
        n = len(state.messages)
        return {"messages": [f"message {n}: " + "lorem ipsum " * (5 + n % 11)]}

    g = Graph("talk", state=Talk, max_steps=TALK + 10, max_same_node=TALK + 10)
    g.add_node("say", say)
    g.add_edge(START, "say")
    g.add_edge("say", "say", when=lambda s: len(s.messages) < TALK, label="more")
    g.add_edge("say", END)
    return g


def outline(history) -> list[tuple]:
    return [(s.step, s.node, s.visit, s.update, s.edge, s.error) for s in history]


def test_a_thread_of_250_steps_resumes_exactly(store, postgres_dsn):
    straight = talk_graph(None).invoke({}, checkpointer=MemoryCheckpointer())
    paused = talk_graph(200).invoke({}, thread="long", checkpointer=store)
    assert (paused.outcome, len(paused.state.messages)) == ("interrupted", 199)
    resumed = talk_graph(200).invoke(Resume("long", "yes"), checkpointer=PostgresCheckpointer(postgres_dsn))
    assert resumed.outcome == "done", resumed.reason
    assert resumed.state == straight.state
    assert outline(resumed.history) == outline(straight.history)
    reread = PostgresCheckpointer(postgres_dsn)
    assert outline(reread.history("long")) == outline(straight.history)
    for step in (0, 1, 57, 199, 200, TALK):  # each step's state rebuilds from a snapshot and the patches after it
        assert reread.get("long", step).state["messages"] == straight.state.messages[:step]
    # A row per step holding its one message; the state whole only now and then.
    patches = sql(postgres_dsn, "SELECT max(length(patches)) FROM nbgraph_steps WHERE thread = 'long'")[0][0]
    snapshots = sql(postgres_dsn, "SELECT count(*) FROM nbgraph_snapshots WHERE thread = 'long'")[0][0]
    assert patches < 300 and 2 <= snapshots <= 10, (patches, snapshots)
    reread.close()


# -- processes racing for one thread --------------------------------------------------

RACE = PROGRAMS / "postgres_resume_race.py"


def test_processes_resuming_one_thread_at_once_take_turns_one_at_a_time(postgres_dsn, tmp_path):
    """Six processes resume the same paused thread at the same moment: one runs it, inside its
    last node until every other has tried; each of the others is told ThreadBusy naming it."""
    racers = 6
    tried = tmp_path / "tried"
    tried.mkdir()
    with Forker(tmp_path, RACE) as forker:
        (started,) = forker.run({"command": "start", "dsn": postgres_dsn, "thread": "trip"})
        assert started == {"outcome": "interrupted"}
        ended = forker.run(
            *(
                {
                    "command": "resume",
                    "dsn": postgres_dsn,
                    "thread": "trip",
                    "city": f"city {i}",
                    "tried": str(tried),
                    "racers": racers,
                }
                for i in range(racers)
            )
        )
    won = [result for result in ended if "outcome" in result]
    assert len(won) == 1, ended
    winner = won[0]
    assert winner["outcome"] == "done" and winner["state"]["by"] == winner["pid"]
    busy = [result for result in ended if "busy" in result]
    assert len(busy) == racers - 1 and {result["holder"] for result in busy} == {winner["pid"]}, ended
    assert all(f"in process {winner['pid']} " in result["busy"] for result in busy)
    store = PostgresCheckpointer(postgres_dsn)
    assert store.get("trip").state == winner["state"] and [s.step for s in store.history("trip")] == [1, 2]
    store.close()


# -- SIGKILL at random moments, two workers racing, a stopped holder -----------------------
# The same tests as SQLite's and Redis's, with children that keep the conversation in Postgres.


class PostgresSpec(crash.Spec):
    def open(self) -> PostgresCheckpointer:
        return PostgresCheckpointer(self.where, lease_ttl=self.lease_ttl)

    def holder_pid(self, store: Any, thread: str) -> int | None:
        found = sql(self.where, "SELECT pid FROM nbgraph_leases WHERE thread = %s", thread)
        return found[0][0] if found else None

    def lease_lapsed(self, store: Any, thread: str) -> bool:
        found = sql(
            self.where,
            "SELECT expires <= extract(epoch FROM clock_timestamp()) FROM nbgraph_leases WHERE thread = %s",
            thread,
        )
        return not found or found[0][0]


@pytest.fixture
def backend(postgres_dsn):
    """Makes a Spec for the test's store."""
    return lambda lease_ttl=30.0: PostgresSpec("postgres", postgres_dsn, lease_ttl)


@pytest.fixture
def spawn(tmp_path):
    """Start children; every one still alive at the end is killed."""
    children: list[crash.Child] = []

    def start(spec: crash.Spec, thread: str, *, paced: bool = True, handshake: bool = False) -> crash.Child:
        child = crash.Child(tmp_path, spec, thread, paced=paced, handshake=handshake)
        children.append(child)
        return child

    yield start
    for child in children:
        if child.proc.poll() is None:
            child.proc.kill()
        child.proc.wait(timeout=crash.TIMEOUT)
        for pipe in (child.proc.stdin, child.proc.stdout):
            if pipe is not None:
                pipe.close()


chat = crash.chat
test_sigkill_at_random_moments_loses_and_repeats_nothing = (
    crash.test_sigkill_at_random_moments_loses_and_repeats_nothing
)
test_two_workers_racing_for_a_thread_under_a_short_lease = (
    crash.test_two_workers_racing_for_a_thread_under_a_short_lease
)
test_a_stopped_holder_is_taken_over_and_its_next_write_refused = (
    crash.test_a_stopped_holder_is_taken_over_and_its_next_write_refused
)


# -- the server stopped mid-run ------------------------------------------------------------


@pytest.fixture(scope="module")
def own_server():
    """A server of this module's tests, which they stop and start again."""
    with postgres_server.postgres_server() as server:
        yield server


@pytest.mark.parametrize("mended", MENDED)
def test_a_server_stopped_mid_run_fails_it_naming_the_store_and_once_started_again_the_thread_resumes_exactly(
    own_server: PostgresServer, mended: str
):
    """The server is stopped (``pg_ctl stop -m immediate``, a crash) from inside a node of round 8;
    started again while the run records its failure, or after the run has ended."""
    schema = f"stopped_{uuid.uuid4().hex[:8]}"
    sql(own_server.dsn, f"CREATE SCHEMA {schema}")
    dsn = schema_dsn(own_server.dsn, schema)
    store = PostgresCheckpointer(dsn, timeout=5.0)
    try:
        calls = run_into(
            store,
            lambda: own_server.stop("immediate"),
            own_server.start if mended == MENDED[0] else None,
            failing="write",
            reason=rf"OperationalError: connection failed: connection to server at \"127\.0\.0\.1\", port {own_server.port} "
            r"failed: Connection refused .*",
        )
        if mended == MENDED[1]:
            own_server.start()
        check_store_holds_only_what_was_written(store)  # (the same store object, its connections renewed)
        resume_exactly(lambda: PostgresCheckpointer(dsn), calls)
        assert sql(dsn, "SELECT count(*) FROM nbgraph_leases") == [(0,)]
    finally:
        store.close()


# -- batches ------------------------------------------------------------------------------


class Item(pydantic.BaseModel):
    n: int
    doubled: int = 0


def doubling_graph(log: str) -> Graph:
    def work(state):
        with open(log, "a") as out:
            out.write(f"{state.n}\n")
        if state.n == 3:
            raise RuntimeError("three is not allowed")
        return {"doubled": 2 * state.n}

    g = Graph("doubling", state=Item)
    g.add_node("work", work)
    g.add_edge(START, "work")
    g.add_edge("work", END)
    return g


def rows_of(table) -> list[tuple]:
    return [(row.input_id, row.outcome, row.thread) for row in table]


def test_a_batch_keeps_its_rows_in_postgres_and_a_rerun_reads_them_back(store, postgres_dsn, tmp_path):
    log = tmp_path / "log.txt"
    inputs = {n: {"n": n} for n in range(6)}
    rows = doubling_graph(str(log)).batch(inputs, checkpointer=store, batch="b", progress=False, table="rows")
    assert rows_of(rows) == [(n, "failed" if n == 3 else "done", f"b/{n}") for n in inputs]
    assert {n: store.get(f"b/{n}").state["doubled"] for n in inputs if n != 3} == {0: 0, 1: 2, 2: 4, 4: 8, 5: 10}
    again = doubling_graph(str(log)).batch(
        inputs, checkpointer=PostgresCheckpointer(postgres_dsn), batch="b", progress=False, table="rows"
    )
    assert rows_of(again) == rows_of(rows)
    assert Counter(log.read_text().split()) == {str(n): 1 for n in inputs}  # nothing ran twice


def test_a_batch_on_ray_workers_shares_the_postgres_store(store, postgres_dsn, tmp_path):
    import ray

    here = Path(__file__).resolve().parent
    log = tmp_path / "log.txt"
    inputs = {n: {"n": n} for n in range(6)}
    # The workers import this module's functions by name, as Ray ships code.
    path = os.pathsep.join([str(here), str(here.parent)])
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, runtime_env={"env_vars": {"PYTHONPATH": path}})
    try:
        rows = doubling_graph(str(log)).batch(
            inputs, checkpointer=store, batch="on-ray", executor="ray", progress=False, table="rows"
        )
    finally:
        ray.shutdown()
    assert rows_of(rows) == [(n, "failed" if n == 3 else "done", f"on-ray/{n}") for n in inputs]
    assert "three is not allowed" in rows[3].error
    # The workers wrote the threads into this store's tables; this process reads them back.
    assert {n: store.get(f"on-ray/{n}").state["doubled"] for n in inputs if n != 3} == {0: 0, 1: 2, 2: 4, 4: 8, 5: 10}
    assert Counter(log.read_text().split()) == {str(n): 1 for n in inputs}
    assert sql(postgres_dsn, "SELECT count(*) FROM nbgraph_leases") == [(0,)]  # every run let its lease go
