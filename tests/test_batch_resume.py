"""Resumable batches: killed with SIGKILL mid-way, or stopped, then called again with the same id
and store; every input runs to its end exactly once.

Real child processes on a real SQLite file. The final node appends a line to a log per run that
reaches it (the first node too), so the log counts how often each input ran. A child says where it
stands with a line on stdout ("blocked 4": input 4 waits inside its node for ever), so the test
kills it at a known place without sleeping.
"""

from __future__ import annotations

import asyncio
import json
import os
import select
import signal
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pydantic
from turns import wait_until, within

from nbgraph import END, START, Batch, Graph, SQLiteCheckpointer

TIMEOUT = 30.0
"""Seconds a child may take to say its next line before the test fails (a hung child, not a slow one)."""
INPUTS = 12
CONCURRENCY = 3


class Item(pydantic.BaseModel):
    n: int
    doubled: int = 0


def build(log: str, blocked: set[int], gate: asyncio.Event | None = None) -> Graph:
    """first -> work -> last; ``work`` blocks for ever on the inputs in ``blocked`` (or waits for ``gate``)."""

    def note(line: str) -> None:
        with open(log, "a") as out:
            out.write(line + "\n")

    def first(state):
        note(f"first {state.n}")

    async def work(state):
        if state.n in blocked:
            print(f"blocked {state.n}", flush=True)
            await asyncio.Event().wait()
        if gate is not None:
            await gate.wait()
        return {"doubled": 2 * state.n}

    def last(state):
        note(f"last {state.n}")

    g = Graph("items", state=Item)
    g.add_node("first", first)
    g.add_node("work", work)
    g.add_node("last", last)
    g.add_edge(START, "first")
    g.add_edge("first", "work")
    g.add_edge("work", "last")
    g.add_edge("last", END)
    return g


CHILD = Path(__file__).with_name("programs") / "nightly_batch.py"
"""The batch of ``build``'s graph, in a process of its own."""


class _Child:
    """A child process running the batch, read a line at a time from its stdout (no buffering
    behind select's back: one read may hold several lines, so they are split here)."""

    def __init__(self, tmp_path: Path, blocked: str) -> None:
        self.process = subprocess.Popen(
            [sys.executable, str(CHILD), str(tmp_path / "batch.db"), str(tmp_path / "log.txt"), blocked],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=tmp_path,
        )
        self._pending = b""

    def line(self) -> str:
        stdout = self.process.stdout
        assert stdout is not None
        while b"\n" not in self._pending:
            ready, _, _ = select.select([stdout], [], [], TIMEOUT)
            assert ready, f"the child said nothing for {TIMEOUT} s"
            chunk = os.read(stdout.fileno(), 65536)
            if not chunk:
                self.process.wait(TIMEOUT)
                raise AssertionError(f"the child ended early: {self._close()}")
            self._pending += chunk
        line, self._pending = self._pending.split(b"\n", 1)
        return line.decode().strip()

    def rows(self) -> list[list]:
        line = self.line()
        assert self.process.wait(TIMEOUT) == 0
        self._close()
        assert line.startswith("rows "), line
        return json.loads(line[len("rows ") :])

    def kill(self) -> None:
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(TIMEOUT)
        self._close()

    def _close(self) -> str:
        assert self.process.stdout is not None and self.process.stderr is not None
        self.process.stdout.close()
        err = self.process.stderr.read().decode()
        self.process.stderr.close()
        return err


def _ran(tmp_path: Path) -> Counter[str]:
    return Counter((tmp_path / "log.txt").read_text().splitlines())


def test_a_batch_killed_mid_way_resumes_and_runs_each_input_to_its_end_once(tmp_path):
    # Inputs 0-2 finish; 3-5 then take the three slots and block inside `work`, after `first` ran
    # and was checkpointed. The child is killed there, with three runs mid-way and six never started.
    child = _Child(tmp_path, "3,4,5")
    blocked = {child.line() for _ in range(CONCURRENCY)}
    assert blocked == {"blocked 3", "blocked 4", "blocked 5"}
    child.kill()
    before = _ran(tmp_path)
    assert before == Counter({**{f"first {n}": 1 for n in range(6)}, **{f"last {n}": 1 for n in range(3)}})

    # The same batch again, in a new process: the finished ones are read back, the three killed
    # mid-way continue from `work` (their leases died with the child), the rest start.
    rows = _Child(tmp_path, "").rows()
    assert [row[:3] for row in rows] == [[str(n), "done", ["first", "work", "last"]] for n in range(INPUTS)]
    assert [row[4] for row in rows] == [f"nightly/{n}" for n in range(INPUTS)]
    assert _ran(tmp_path) == Counter({f"{node} {n}": 1 for n in range(INPUTS) for node in ("first", "last")})

    # Once more: everything is finished, nothing runs.
    again = _Child(tmp_path, "").rows()
    assert again == rows
    assert _ran(tmp_path) == Counter({f"{node} {n}": 1 for n in range(INPUTS) for node in ("first", "last")})
    store = SQLiteCheckpointer(tmp_path / "batch.db")
    assert store.get("nightly/4").state == {"n": 4, "doubled": 8}
    store.close()


async def test_a_stopped_batch_continues_where_it_stopped(tmp_path):
    log = str(tmp_path / "log.txt")
    store = SQLiteCheckpointer(tmp_path / "batch.db")
    gate = asyncio.Event()
    g = build(log, set(), gate)
    inputs = {str(n): {"n": n} for n in range(8)}
    batch = Batch(g, inputs, concurrency=3, checkpointer=store, batch="b", progress=False, table="rows")
    task = asyncio.get_running_loop().create_task(batch.run())
    await wait_until(lambda: batch.progress.running == 3)
    await wait_until(lambda: _ran(tmp_path)["first 2"] == 1)  # the three are inside `work`
    batch.stop()  # what the view's Stop does
    rows = await within(task)
    assert [row.outcome for row in rows] == ["aborted"] * 3 + ["skipped"] * 5
    assert rows[0].error == "cancelled during node 'work' at step 2"

    gate.set()
    rows = await within(g.abatch(inputs, concurrency=3, checkpointer=store, batch="b", progress=False, table="rows"))
    assert [(row.outcome, row.path) for row in rows] == [("done", ("first", "work", "last"))] * 8
    assert _ran(tmp_path) == Counter({f"{node} {n}": 1 for n in range(8) for node in ("first", "last")})
    store.close()


def test_a_second_process_running_the_same_batch_at_once_gets_busy_rows_not_a_crash(tmp_path):
    # While a child holds inputs 0-2 mid-run, this process runs the same batch: those three are
    # failed rows saying the thread is busy; the rest run here (the child never gets to them).
    child = _Child(tmp_path, "0,1,2")
    assert {child.line() for _ in range(CONCURRENCY)} == {"blocked 0", "blocked 1", "blocked 2"}
    try:
        store = SQLiteCheckpointer(tmp_path / "batch.db")
        g = build(str(tmp_path / "log.txt"), set())
        rows = g.batch(
            {str(n): {"n": n} for n in range(5)}, checkpointer=store, batch="nightly", progress=False, table="rows"
        )
        assert [row.outcome for row in rows] == ["failed"] * 3 + ["done"] * 2
        assert rows[0].error.startswith("input '0': ") and "nightly/0" in rows[0].error
        assert rows[0].thread == "nightly/0"
        store.close()
    finally:
        child.kill()
