"""Batches: concurrency, budgets, per-input failures, the table, progress, compare, executors."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

import pydantic
import pytest
from turns import wait_until, within

from nbgraph import END, START, Batch, BatchRow, Budget, Graph, MemoryCheckpointer, Resume, compare
from nbgraph.batch import Finished, Job, LocalExecutor, ProgressEvent, run_job

REPO = Path(__file__).resolve().parents[1]
# (pandas is imported inside the tests that want it: a child process imports this module without it.)


class Numbers(pydantic.BaseModel):
    n: int
    route: str = ""


def routed(*, odd_when=lambda n: n % 2 == 1, fail_on=(), tokens=0, cost=0.0, in_flight=None) -> Graph:
    """START -> work -> odd | even -> END; ``work`` awaits, can fail, and reports usage."""

    async def work(state, ctx):
        if in_flight is not None:
            in_flight["now"] += 1
            in_flight["max"] = max(in_flight["max"], in_flight["now"])
        try:
            for _ in range(3):
                await asyncio.sleep(0)  # give the other runs turns, so they overlap
        finally:
            if in_flight is not None:
                in_flight["now"] -= 1
        if state.n in fail_on:
            raise ValueError(f"no {state.n}")
        ctx.add_usage(tokens=tokens, cost=cost)
        return {"route": "odd" if odd_when(state.n) else "even"}

    g = Graph("numbers", state=Numbers)
    g.add_node("work", work)
    g.add_node("odd", lambda s: None)
    g.add_node("even", lambda s: None)
    g.add_edge(START, "work")
    g.add_edge("work", "odd", when=lambda s: s.route == "odd", label="odd")
    g.add_edge("work", "even")
    g.add_edge("odd", END)
    g.add_edge("even", END)
    return g


async def test_never_more_runs_at_once_than_the_concurrency():
    in_flight = {"now": 0, "max": 0}
    g = routed(in_flight=in_flight)
    rows = await within(g.abatch([{"n": i} for i in range(40)], concurrency=4, progress=False, table="rows"))
    assert in_flight["max"] == 4  # the bound is reached, and never passed
    assert [row.outcome for row in rows] == ["done"] * 40
    assert in_flight["now"] == 0


def test_the_synchronous_batch_honours_the_concurrency_too():
    in_flight = {"now": 0, "max": 0}
    g = routed(in_flight=in_flight)
    rows = g.batch([{"n": i} for i in range(12)], concurrency=5, progress=False, table="rows")
    assert in_flight["max"] == 5
    assert {row.outcome for row in rows} == {"done"}


@pytest.mark.parametrize(
    "total, dimension", [(Budget(tokens=350), "tokens 400 >= 350"), (Budget(cost=0.035), "cost 0.04 >= 0.035")]
)
async def test_a_batch_budget_stops_new_runs_and_lets_running_ones_end(total, dimension):
    g = routed(tokens=100, cost=0.01)
    rows = await within(
        g.abatch([{"n": i} for i in range(20)], concurrency=2, total=total, progress=False, table="rows")
    )
    outcomes = [row.outcome for row in rows]
    ran = outcomes.count("done")
    # 4 runs reach the budget; a run already under way then (concurrency 2) still ends done.
    assert ran in (4, 5), outcomes
    assert outcomes == ["done"] * ran + ["skipped"] * (20 - ran)
    skipped = rows[-1]
    assert skipped.error == f"not started: batch budget exceeded: {dimension}"
    assert (skipped.thread, skipped.path, skipped.tokens) == (None, (), 0)
    assert sum(row.tokens for row in rows) == 100 * ran


async def test_a_per_run_budget_aborts_that_run_only():
    g = routed(tokens=100)
    rows = await within(
        g.abatch({"a": {"n": 1}, "b": {"n": 2}}, budget=Budget(tokens=50), progress=False, table="rows")
    )
    assert [row.outcome for row in rows] == ["aborted", "aborted"]
    assert "budget exceeded: tokens 100 >= 50" in rows[0].error


async def test_failures_are_rows_and_the_batch_goes_on():
    g = routed(fail_on={3})
    inputs = {"one": {"n": 1}, "three": {"n": 3}, "bad": {"n": "seven"}, "missing": {"route": "x"}, "four": {"n": 4}}
    rows = {row.input_id: row for row in await within(g.abatch(inputs, progress=False, table="rows"))}
    assert rows["one"].outcome == rows["four"].outcome == "done"
    assert rows["three"].outcome == "failed"
    assert rows["three"].error == "node 'work' failed at step 1: ValueError: no 3"
    assert rows["three"].thread.endswith("/three")
    # An input that does not fit the state is a failed row naming the input and the field; it never ran.
    bad = rows["bad"]
    assert (bad.outcome, bad.thread, bad.path) == ("failed", None, ())
    assert bad.error.startswith("input 'bad': input does not fit state Numbers: n: Input should be a valid integer")
    assert rows["missing"].error.startswith("input 'missing': input does not fit state Numbers: n: Field required")


def test_the_table_is_a_dataframe_with_a_row_per_input_in_input_order():
    import pandas as pd

    g = routed(fail_on={2}, tokens=7, cost=0.5)
    table = g.batch([{"n": 1}, {"n": 2}, {"n": 4}], progress=False)
    assert isinstance(table, pd.DataFrame)
    assert list(table.columns) == list(BatchRow._fields)
    assert list(table.columns[:7]) == ["input_id", "outcome", "path", "tokens", "cost", "duration", "error"]
    assert table.input_id.tolist() == [0, 1, 2]
    assert table.outcome.tolist() == ["done", "failed", "done"]
    assert table.path.tolist() == [("work", "odd"), (), ("work", "even")]
    assert table.tokens.tolist() == [7, 0, 7]
    assert table.cost.tolist() == [0.5, 0.0, 0.5]
    assert (table.duration > 0).all()
    assert table.attrs["batch"] == table.thread[0].split("/")[0]


def test_without_pandas_the_table_is_plain_rows():
    code = (
        "import sys\n"
        "sys.modules['pandas'] = None\n"
        "sys.path.insert(0, 'tests')\n"
        "from test_batch import routed\n"
        "rows = routed().batch({'x': {'n': 1}, 'y': {'n': 'no'}}, progress=False)\n"
        "print(type(rows).__name__, [type(r).__name__ for r in rows])\n"
        "print([(r.input_id, r.outcome, r.path) for r in rows])\n"
        "print(rows[1].error)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, check=True)
    lines = out.stdout.splitlines()
    assert lines[0] == "list ['BatchRow', 'BatchRow']"
    assert lines[1] == "[('x', 'done', ('work', 'odd')), ('y', 'failed', ())]"
    assert lines[2].startswith("input 'y': input does not fit state Numbers: n:")
    asked = subprocess.run(
        [sys.executable, "-c", code.replace("progress=False)", "progress=False, table='pandas')")],
        capture_output=True,
        text=True,
        cwd=REPO,
    )
    assert asked.returncode != 0
    assert asked.stderr.strip().splitlines()[-1] == "ImportError: a DataFrame needs pandas: pip install pandas"


async def test_progress_counts_runs_and_the_edges_each_input_took():
    g = routed(fail_on={5}, tokens=10, cost=0.25)
    batch = Batch(g, {f"i{n}": {"n": n} for n in range(6)}, concurrency=2, progress=False, table="rows", results=True)
    seen: list[ProgressEvent] = []
    running: list[int] = []
    batch.progress.subscribe(lambda progress, event: (seen.append(event), running.append(progress.running)))
    await within(batch.run())
    progress = batch.progress
    assert (progress.total, progress.ended, progress.done, progress.failed, progress.running) == (6, 6, 5, 1, 0)
    assert progress.outcomes == {"done": 5, "failed": 1}
    assert (progress.tokens, progress.cost) == (50, 1.25)
    assert progress.finished and progress.throughput > 0 and progress.waiting == 0
    assert max(running) == 2
    assert [e.kind for e in seen].count("start") == 6 and [e.kind for e in seen].count("end") == 6
    assert seen[-1].kind == "finish"
    # Each edge with the ids of the inputs whose run took it, once per run: a route histogram.
    assert {edge: sorted(ids) for edge, ids in progress.edges.items()} == {
        (START, "work"): ["i0", "i1", "i2", "i3", "i4", "i5"],  # i5 failed in work: it took the edge there
        ("work", "odd"): ["i1", "i3"],
        ("work", "even"): ["i0", "i2", "i4"],
        ("odd", END): ["i1", "i3"],
        ("even", END): ["i0", "i2", "i4"],
    }
    assert progress.edge_counts()[("work", "even")] == 3
    assert batch.results["i3"].path == ["work", "odd"] and batch.results["i5"].outcome == "failed"
    ended = [e for e in seen if e.kind == "end" and e.input_id == "i3"][0]
    assert ended.row.path == ("work", "odd") and (START, "work") in ended.edges


async def test_a_failing_progress_callback_is_dropped_with_a_warning_and_the_batch_goes_on():
    def broken(progress, event):
        raise KeyError("oops")

    with pytest.warns(RuntimeWarning, match="raised KeyError: 'oops'; it is unsubscribed and the batch goes on"):
        rows = await within(routed().abatch([{"n": 1}, {"n": 2}], progress=broken, table="rows"))
    assert [row.outcome for row in rows] == ["done", "done"]


def test_a_terminal_shows_a_tqdm_bar(capsys):
    routed().batch([{"n": n} for n in range(3)], table="rows")
    err = capsys.readouterr().err
    assert "numbers batch" in err and "3/3" in err and "failed=0" in err


async def test_stop_ends_running_runs_aborted_and_starts_no_more():
    gate = asyncio.Event()
    started = []

    async def wait(state):
        started.append(state.n)
        await gate.wait()
        return {}

    g = Graph("waits", state=Numbers)
    g.add_node("wait", wait)
    g.add_edge(START, "wait")
    g.add_edge("wait", END)
    batch = Batch(g, [{"n": n} for n in range(6)], concurrency=2, progress=False, table="rows")
    task = asyncio.get_running_loop().create_task(batch.run())
    await wait_until(lambda: len(started) == 2)
    batch.stop()
    rows = await within(task)
    assert [row.outcome for row in rows] == ["aborted", "aborted", "skipped", "skipped", "skipped", "skipped"]
    assert rows[0].error == "cancelled during node 'wait' at step 1"
    assert rows[2].error == "not started: stopped"
    assert batch.progress.stopped == "stopped"


async def test_cancelling_the_awaiting_task_stops_the_batch_and_lets_the_cancel_through():
    gate = asyncio.Event()
    started = []

    async def wait(state):
        started.append(state.n)
        await gate.wait()

    g = Graph("waits", state=Numbers)
    g.add_node("wait", wait)
    g.add_edge(START, "wait")
    g.add_edge("wait", END)
    batch = Batch(g, [{"n": n} for n in range(4)], concurrency=2, progress=False, table="rows")
    task = asyncio.get_running_loop().create_task(batch.run())
    await wait_until(lambda: len(started) == 2)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await within(task)
    assert [row.outcome for row in batch.table] == ["aborted", "aborted", "skipped", "skipped"]
    assert batch.table[2].error == "not started: cancelled"


def test_stop_from_another_thread_stops_a_synchronous_batch():
    import threading

    entered = threading.Event()
    release = asyncio.Event()

    async def wait(state):
        entered.set()
        await release.wait()

    g = Graph("waits", state=Numbers)
    g.add_node("wait", wait)
    g.add_edge(START, "wait")
    g.add_edge("wait", END)
    batch = Batch(g, [{"n": n} for n in range(3)], concurrency=1, progress=False, table="rows")
    from nbgraph.batch._batch import _settled
    from nbgraph.engine.runner import run_blocking

    outcome: list = []
    worker = threading.Thread(target=lambda: outcome.append(run_blocking(_settled(batch), all_sync=False)))
    worker.start()
    assert entered.wait(10)
    batch.stop()  # from this thread, while the batch runs on nbgraph's own loop
    worker.join(10)
    assert [row.outcome for row in outcome[0]] == ["aborted", "skipped", "skipped"]


async def test_retry_runs_failed_inputs_again_only_when_asked():
    store = MemoryCheckpointer()
    broken = {3}
    calls = []
    g = routed(fail_on=broken)
    g.add_listener(lambda event: calls.append(event.thread) if event.type == "run-start" else None)
    inputs = {"a": {"n": 1}, "b": {"n": 3}}
    first = await g.abatch(inputs, checkpointer=store, batch="r", progress=False, table="rows")
    assert [row.outcome for row in first] == ["done", "failed"]
    again = await g.abatch(inputs, checkpointer=store, batch="r", progress=False, table="rows")
    assert again == [first[0]._replace(duration=again[0].duration), first[1]._replace(duration=again[1].duration)]
    broken.clear()  # the node is fixed
    retried = await g.abatch(inputs, checkpointer=store, batch="r", retry=True, progress=False, table="rows")
    assert [(row.outcome, row.path) for row in retried] == [("done", ("work", "odd")), ("done", ("work", "odd"))]
    assert calls.count("r/a") == 1  # the finished input never ran again


async def test_an_interrupted_run_stays_interrupted_until_resumed():
    store = MemoryCheckpointer()
    g = Graph("asks")
    g.add_node("check", lambda s: None, approval=True)
    g.add_edge(START, "check")
    g.add_edge("check", END)
    rows = await g.abatch({"x": {"n": 1}}, checkpointer=store, batch="ask", progress=False, table="rows")
    assert rows[0].outcome == "interrupted" and rows[0].thread == "ask/x"
    again = await g.abatch({"x": {"n": 1}}, checkpointer=store, batch="ask", progress=False, table="rows")
    assert again[0].outcome == "interrupted"
    result = await g.ainvoke(Resume("ask/x", True), checkpointer=store)
    assert result.outcome == "done"


async def test_compare_two_versions_of_a_graph():
    before = routed(cost=0.1)
    after = routed(odd_when=lambda n: n % 3 == 0, fail_on={4}, cost=0.1)  # a routing cell edited, and a bug
    diff = await within(_acompare(before, after, [{"n": n} for n in range(5)]))
    assert [(d.input_id, d.changed) for d in diff] == [
        (0, ("path",)),
        (1, ("path",)),
        (2, ()),
        (3, ()),
        (4, ("path", "outcome", "cost")),
    ]
    assert (diff[1].path_a, diff[1].path_b) == (("work", "odd"), ("work", "even"))
    assert (diff[4].outcome_a, diff[4].outcome_b, diff[4].cost_a, diff[4].cost_b) == ("done", "failed", 0.1, 0.0)


def test_compare_takes_tables_already_made_and_gives_a_dataframe():
    import pandas as pd

    inputs = {"a": {"n": 1}, "b": {"n": 2}}
    table_a = routed().batch(inputs, progress=False)
    table_b = routed(odd_when=lambda n: True).batch(inputs, progress=False)
    diff = compare(table_a, table_b)
    assert isinstance(diff, pd.DataFrame)
    assert diff.changed.tolist() == [(), ("path",)]
    with pytest.raises(ValueError, match=r"the two tables do not hold the same inputs: \['c'\]"):
        compare(table_a, routed().batch({**inputs, "c": {"n": 3}}, progress=False))
    with pytest.raises(TypeError, match="compare\\(\\) got a graph as a: pass inputs="):
        compare(routed(), table_b)


async def _acompare(a, b, inputs):
    from nbgraph.batch import acompare

    return await acompare(a, b, inputs, progress=False, table="rows")


async def test_an_executor_runs_each_input_through_run_job():
    class Counting:
        def __init__(self) -> None:
            self.jobs: list[Job] = []

        async def run(self, graph, job: Job) -> Finished:
            self.jobs.append(job)
            return await run_job(graph, job)

    executor = Counting()
    batch = Batch(routed(), {"p": {"n": 1}, "q": {"n": 2}}, executor=executor, progress=False, table="rows")
    rows = await within(batch.run())
    assert [job.input_id for job in executor.jobs] == ["p", "q"]
    assert batch.results == {}  # kept only when asked for
    assert [job.thread for job in executor.jobs] == [row.thread for row in rows]
    assert executor.jobs[0].thread.endswith("/p") and executor.jobs[0].input == {"n": 1}
    assert repr(LocalExecutor()) == "LocalExecutor()"


async def test_an_executor_that_fails_fails_that_input_only():
    class Flaky:
        async def run(self, graph, job):
            if job.input_id == "lost":
                raise ConnectionError("worker gone")
            return await run_job(graph, job)

    rows = await within(
        routed().abatch({"ok": {"n": 1}, "lost": {"n": 2}}, executor=Flaky(), progress=False, table="rows")
    )
    assert rows[0].outcome == "done"
    assert rows[1].outcome == "failed"
    assert "executor" in rows[1].error and "ConnectionError: worker gone" in rows[1].error


def test_bad_arguments_say_what_was_wrong():
    g = routed()
    with pytest.raises(TypeError, match=r"inputs must be a list of inputs or a dict \{input id: input\}, got str"):
        g.batch("abc")
    with pytest.raises(ValueError, match="input ids 1 and '1' would share the thread of one run"):
        g.batch({1: {"n": 1}, "1": {"n": 2}})
    with pytest.raises(ValueError, match="concurrency must be a whole number of runs, at least 1, got 0"):
        g.batch([{"n": 1}], concurrency=0)
    with pytest.raises(ValueError, match="batch='x' makes the batch resumable from its checkpoints, and needs a store"):
        g.batch([{"n": 1}], batch="x")
    with pytest.raises(ValueError, match="retry=True runs again the failed runs a batch's store kept"):
        g.batch([{"n": 1}], retry=True)
    with pytest.raises(ValueError, match=r"a batch-wide total counts tokens and cost"):
        g.batch([{"n": 1}], total=Budget(seconds=3))
    with pytest.raises(TypeError, match="total must be a nbgraph.Budget, got dict"):
        g.batch([{"n": 1}], total={"tokens": 3})
    with pytest.raises(ValueError, match=r"unknown executor 'dask': expected one of 'local', 'ray'"):
        g.batch([{"n": 1}], executor="dask")
    with pytest.raises(TypeError, match="executor must be None, 'local', 'ray' or an object with an async run"):
        g.batch([{"n": 1}], executor=object())
    with pytest.raises(ValueError, match="table must be 'auto', 'rows' or 'pandas', got 'csv'"):
        g.batch([{"n": 1}], table="csv")
