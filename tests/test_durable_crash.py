"""Durable runs under real crashes: SIGKILL at random moments, two workers racing for one
thread, and a stuck holder fenced off once its lease lapsed.

Everything here is real: child Python processes running nbgraph from this checkout,
SIGKILL / SIGSTOP / SIGCONT, one SQLite file shared by processes, a redis-server on
loopback. A child tells the test where it is with a line per step on stdout; a
"paced" child also waits for a line on stdin inside its node before the node returns,
so the test decides where a child stands when it is killed, stopped or let go,
without sleeping. The only waiting on the clock is bounded polling of something
observable (a lease's expiry in the store, a process's state in /proc), and, in the
race, checking for three lease lifetimes that the winner's renewed lease still holds.

Run with ``-s`` to see where test 1's kills landed; ``NBGRAPH_CRASH_SEED`` varies them.
"""

from __future__ import annotations

import importlib.util
import itertools
import json
import os
import random
import select
import signal
import sqlite3
import subprocess
import sys
import threading
import time
import uuid
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

from nbgraph import RedisCheckpointer, Resume, SQLiteCheckpointer, ThreadBusy

REPO = Path(__file__).resolve().parents[1]
MESSAGES = 50
TIMEOUT = 30.0
"""Seconds any single wait on a child may take before the test fails (a hung child, not a slow one)."""

PROGRAMS = Path(__file__).with_name("programs")
CHILD = PROGRAMS / "chat_child.py"
"""A child: starts the conversation of ``chat_graph.py`` on a thread, or resumes it."""


# -- stores -------------------------------------------------------------------------------


class Spec:
    """Where a store lives, so the test and its children open the same one."""

    def __init__(self, kind: str, where: str, lease_ttl: float, prefix: str = "") -> None:
        self.kind, self.where, self.lease_ttl, self.prefix = kind, where, lease_ttl, prefix

    def args(self) -> list[str]:
        return [self.kind, self.where, self.prefix or "-", repr(self.lease_ttl)]

    def open(self) -> Any:
        if self.kind == "sqlite":
            return SQLiteCheckpointer(self.where, lease_ttl=self.lease_ttl)
        return RedisCheckpointer(self.where, prefix=self.prefix, lease_ttl=self.lease_ttl)

    def holder_pid(self, store: Any, thread: str) -> int | None:
        """The pid the thread's lease names, read from the store itself."""
        if self.kind == "sqlite":
            with closing(sqlite3.connect(self.where)) as conn:
                row = conn.execute("SELECT pid FROM nbgraph_leases WHERE thread = ?", (thread,)).fetchone()
            return None if row is None else row[0]
        text = store._redis.get(store._key(thread, "lock"))  # the lock's value is the lease
        return None if text is None else json.loads(text)["pid"]

    def lease_lapsed(self, store: Any, thread: str) -> bool:
        """Whether no unexpired lease holds ``thread`` (its holder stopped renewing it)."""
        if self.kind == "sqlite":
            with closing(sqlite3.connect(self.where)) as conn:
                row = conn.execute("SELECT expires FROM nbgraph_leases WHERE thread = ?", (thread,)).fetchone()
            return row is None or (row[0] is not None and row[0] <= time.time())
        return store._redis.pttl(store._key(thread, "lock")) < 0  # -2: the lock key is gone


@pytest.fixture(params=["sqlite", "redis"])
def backend(request, tmp_path):
    """Makes a Spec for a fresh store of the parametrized kind."""
    kind = request.param

    def make(lease_ttl: float = 30.0) -> Spec:
        if kind == "sqlite":
            return Spec("sqlite", str(tmp_path / f"runs-{uuid.uuid4().hex[:6]}.db"), lease_ttl)
        return Spec("redis", request.getfixturevalue("redis_url"), lease_ttl, prefix=f"crash-{uuid.uuid4().hex[:8]}")

    return make


# -- children -----------------------------------------------------------------------------

_ids = itertools.count()


class Child:
    """One child process, read line by line with a deadline."""

    def __init__(self, tmp_path: Path, spec: Spec, thread: str, *, paced: bool, handshake: bool) -> None:
        self.stderr_path = tmp_path / f"child-{next(_ids)}.stderr"
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
        command = [
            sys.executable,
            str(CHILD),
            *spec.args(),
            thread,
            str(int(paced)),
            str(int(handshake)),
        ]
        with open(self.stderr_path, "wb") as err:
            self.proc = subprocess.Popen(
                command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err, cwd=REPO, env=env, bufsize=0
            )
        self.pid = self.proc.pid
        self._buffer = b""
        self.said: list[str] = []

    def line(self, timeout: float = TIMEOUT) -> str | None:
        """The child's next line, or None once it closed stdout (it exited)."""
        assert self.proc.stdout is not None
        deadline = time.monotonic() + timeout
        while b"\n" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(f"child {self.pid} said nothing for {timeout} s; {self.describe()}")
            ready, _, _ = select.select([self.proc.stdout], [], [], left)
            if ready:
                chunk = os.read(self.proc.stdout.fileno(), 65536)
                if not chunk:
                    if not self._buffer:
                        return None
                    self._buffer += b"\n"  # a last line without its newline
                self._buffer += chunk
        raw, _, self._buffer = self._buffer.partition(b"\n")
        text = raw.decode()
        self.said.append(text)
        return text

    def go(self, steps: int = 1) -> None:
        """Let the node the child waits in return (and the next ``steps - 1`` ones, without waiting)."""
        assert self.proc.stdin is not None
        self.proc.stdin.write(b"go\n" * steps)

    def run_free(self) -> None:
        """Close stdin: the child stops waiting in its nodes."""
        assert self.proc.stdin is not None
        self.proc.stdin.close()

    def kill(self) -> int:
        self.proc.kill()
        return self.proc.wait(timeout=TIMEOUT)

    def rest(self) -> list[str]:
        """Every line up to the child's exit, which must be a clean one."""
        lines = []
        while (text := self.line()) is not None:
            lines.append(text)
        code = self.proc.wait(timeout=TIMEOUT)
        assert code == 0, f"child {self.pid} exited with {code}; {self.describe()}"
        return lines

    def stderr(self) -> str:
        return self.stderr_path.read_text(errors="replace")

    def describe(self) -> str:
        return f"it said {self.said[-6:]!r}; stderr: {self.stderr()[-3000:]!r}"

    def state(self) -> str:
        """The process state letter from /proc (R, S, T for stopped, ...)."""
        with open(f"/proc/{self.pid}/stat", "rb") as stat:
            return stat.read().rsplit(b")", 1)[1].split()[0].decode()


@pytest.fixture
def spawn(tmp_path):
    """Start children running CHILD; every one still alive at the end is killed."""
    children: list[Child] = []

    def start(spec: Spec, thread: str, *, paced: bool = True, handshake: bool = False) -> Child:
        child = Child(tmp_path, spec, thread, paced=paced, handshake=handshake)
        children.append(child)
        return child

    yield start
    for child in children:
        if child.proc.poll() is None:
            child.proc.kill()  # SIGKILL ends a stopped process too
        child.proc.wait(timeout=TIMEOUT)
        for pipe in (child.proc.stdin, child.proc.stdout):
            if pipe is not None:
                pipe.close()


@pytest.fixture
def chat():
    """The conversation graph module, loaded in this process from the same file the children run."""
    spec = importlib.util.spec_from_file_location("chat_graph", PROGRAMS / "chat_graph.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def wait_until(condition: Any, what: str, timeout: float = 10.0) -> None:
    """Poll an observable condition, bounded; the short pause is the poll interval, not synchronisation."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting until {what}")
        time.sleep(0.01)


def words(line: str | None) -> tuple[str, str]:
    if line is None:
        return "eof", ""
    word, _, rest = line.partition(" ")
    return word, rest


def expected_ids(count: int) -> list[str]:
    return [f"m{i:03d}" for i in range(count)]


def check_thread(store: Any, thread: str) -> int:
    """The thread's log is whole: steps 1..n once each, and the state after each step has
    exactly one message per step, in order. Returns n (-1: no checkpoint yet).

    The latest checkpoint and the log are two reads. A database server may still commit what a
    killed child sent just before it died, between them: the two are read again until the
    latest checkpoint is the same before and after the log."""
    deadline = time.monotonic() + TIMEOUT
    while True:
        last = store.get(thread)
        history = store.history(thread)
        again = store.get(thread)
        if (None if last is None else last.step) == (None if again is None else again.step):
            break
        if time.monotonic() > deadline:
            break
    if last is None:
        assert history == []
        return -1
    steps = [s.step for s in history]
    assert steps == list(range(1, last.step + 1)), f"stored steps {steps} after the latest checkpoint at {last.step}"
    ids = [m["id"] for m in last.state["messages"]]
    assert ids == expected_ids(last.step), f"messages {ids} after step {last.step}"
    assert last.state["turns"] == last.step
    return last.step


def check_while_written(store: Any, thread: str) -> None:
    """What a reader sees while a writer works is whole: a checkpoint and its state agree,
    and the log has every step up to it (and perhaps one more, written meanwhile)."""
    last = store.get(thread)
    if last is None:
        return
    assert [m["id"] for m in last.state["messages"]] == expected_ids(last.step)
    assert last.state["turns"] == last.step
    steps = [s.step for s in store.history(thread)]
    assert steps == list(range(1, len(steps) + 1)) and len(steps) >= last.step, steps


def same_steps(history: list[Any]) -> list[tuple[Any, ...]]:
    return [(s.step, s.node, s.visit, s.update, s.edge, s.error) for s in history]


def run_ids(store: Any, thread: str, steps: range) -> set[str | None]:
    return {store.get(thread, step).run for step in steps}


# -- 1. crash consistency -----------------------------------------------------------------


def test_sigkill_at_random_moments_loses_and_repeats_nothing(backend, spawn):
    """SIGKILL a child 30+ times anywhere in a 50-step conversation (before its first line,
    while it takes the thread, inside a node, racing its write, inside a burst of steps run
    at full speed); the next child starts at once and takes the dead holder's lease (its
    30 s lease has not lapsed: its pid is gone). After every kill the stored log is whole;
    at the end it is the uninterrupted run's, step for step."""
    spec = backend()  # the default 30 s lease: only the dead pid lets the next child in
    store = spec.open()
    seed = int(os.environ.get("NBGRAPH_CRASH_SEED", "20240611"))
    rng = random.Random(f"{seed}-{spec.kind}")
    thread, reference = "conversation", "reference"

    ref = spawn(spec, reference, paced=False)
    said = [words(x)[0] for x in ref.rest()]
    assert said == ["begin", *["step"] * MESSAGES, "result"], said
    assert store.get(reference).status == "done"

    kills, children, progress = 0, 0, -1
    where_killed: dict[str, int] = {}
    raced = {"landed": 0, "lost": 0}
    finished: list[str] = []
    while not finished:
        children += 1
        assert children <= 200, f"no end after {children} children ({kills} kills, at step {progress}); seed {seed}"
        target = rng.randint(0, 3)  # the number of step lines to see before the kill
        how = rng.choices(["in-node", "race", "burst"], weights=[4, 4, 2])[0]
        if kills < 42 * max(progress, 0) / MESSAGES:
            # Behind on kills for the steps done (42 over the run, spread along it): kill this
            # one before it writes a step.
            target, how = rng.randint(0, 1), "in-node"
        child = spawn(spec, thread)
        killed_at = None
        if target == 0 and rng.random() < 0.3:
            killed_at = "at spawn"
        seen = 0
        while killed_at is None:
            word, rest = words(child.line())
            assert word != "busy", (
                f"child {child.pid} could not take the thread after child {children - 1} was killed: "
                f"{json.loads(rest)}; seed {seed}"
            )
            if word in ("result", "finished", "eof"):
                finished = [f"{word} {rest}".strip(), *child.rest()]
                break
            if word == "begin" and target == 0:
                killed_at = "after begin"
            elif word == "step":
                seen += 1
                if seen < target:
                    child.go()
                elif how == "in-node":
                    killed_at = "in node"
                elif how == "race":
                    child.go()
                    for _ in range(rng.randint(0, 3)):  # read the thread while it writes: the kill lands later
                        check_while_written(store, thread)
                    killed_at = "racing the write"
                else:
                    child.go(rng.randint(2, 4))  # a burst of steps at full speed; the kill lands inside it
                    word, rest = words(child.line())
                    if word == "step":
                        killed_at = "mid-burst"
                    else:
                        finished = [f"{word} {rest}".strip(), *child.rest()]
                        break
        if killed_at is not None:
            code = child.kill()
            if code == -signal.SIGKILL:
                kills += 1
                where_killed[killed_at] = where_killed.get(killed_at, 0) + 1
            else:  # it finished the run just before the signal
                assert code == 0, f"child {child.pid} exited with {code}; {child.describe()}"
                finished = child.rest()
        step = check_thread(store, thread)
        if killed_at == "racing the write" and code == -signal.SIGKILL:  # did the raced write land first?
            raced["landed" if step == max(progress, 0) + target else "lost"] += 1
        assert step >= progress, f"the thread went back from step {progress} to {step}; seed {seed}"
        progress = step

    last_word, last_said = words(finished[-1])
    assert last_word == "finished" or (last_word == "result" and json.loads(last_said)["outcome"] == "done"), finished
    print(f"{spec.kind}: {kills} kills over {children} children ({where_killed}; raced writes {raced}); seed {seed}")
    assert kills >= 30, f"only {kills} kills ({where_killed}); seed {seed}"

    final, expected = store.get(thread), store.get(reference)
    assert (final.status, final.step) == (expected.status, expected.step) == ("done", MESSAGES)
    assert final.state == expected.state
    ids = [m["id"] for m in final.state["messages"]]
    assert ids == expected_ids(MESSAGES) and len(set(ids)) == MESSAGES
    history = store.history(thread)
    assert [s.step for s in history] == list(range(1, MESSAGES + 1))
    assert same_steps(history) == same_steps(store.history(reference))
    for step in range(MESSAGES + 1):  # every step's state rebuilds from snapshots and patches
        assert store.get(thread, step).state == store.get(reference, step).state, f"state after step {step}"
    store.release(store.acquire(thread))  # the last child let its lease go


# -- 2. two workers racing ----------------------------------------------------------------


def test_two_workers_racing_for_a_thread_under_a_short_lease(backend, spawn, chat):
    """Two children resume the same unfinished thread at the same moment, eight times over,
    each time taking over from the previous winner, SIGKILLed inside a node. Exactly one
    advances; the other is told ThreadBusy naming the winner's process. The winner's 0.5 s
    lease outlives its TTL while its node waits (renewed in the background), and every
    step written in a round is the winner's run's."""
    spec = backend(lease_ttl=0.5)
    store = spec.open()
    thread = "contested"

    # An unfinished thread whose holder died: steps 1..9 written, killed inside step 10.
    first = spawn(spec, thread)
    while True:
        word, rest = words(first.line())
        if word == "step" and rest.split()[0] == "10":
            break
        if word == "step":
            first.go()
    assert first.kill() == -signal.SIGKILL
    assert check_thread(store, thread) == 9
    segments = [(range(1, 10), run_ids(store, thread, range(1, 10)))]
    assert len(segments[0][1]) == 1

    rounds = 8
    for round_ in range(rounds):
        at = check_thread(store, thread)
        racers = [spawn(spec, thread, handshake=True) for _ in range(2)]
        for racer in racers:
            assert [racer.line(), racer.line()] == ["begin resume", "ready"], racer.describe()
        for racer in racers:
            racer.go()  # both take the thread's lease now
        first_words = {racer.pid: words(racer.line()) for racer in racers}
        outcomes = sorted(word for word, _ in first_words.values())
        assert outcomes == ["busy", "step"], f"round {round_}: {first_words}"
        winner = next(r for r in racers if first_words[r.pid][0] == "step")
        loser = next(r for r in racers if r is not winner)
        assert first_words[winner.pid][1].split()[0] == str(at + 1)
        busy = json.loads(first_words[loser.pid][1])
        assert f"thread {thread!r} is being run by run " in busy and f"in process {winner.pid} " in busy, busy
        assert loser.rest() == []
        assert spec.holder_pid(store, thread) == winner.pid

        if round_ in (0, rounds - 1):
            # The winner waits in its node for three lease lifetimes; nobody can take the thread meanwhile.
            held_since = time.monotonic()
            while time.monotonic() - held_since < 3 * spec.lease_ttl:
                with pytest.raises(ThreadBusy, match=f"in process {winner.pid} "):
                    store.acquire(thread)
                time.sleep(0.05)  # poll interval
            assert spec.holder_pid(store, thread) == winner.pid

        if round_ < rounds - 1:
            for _ in range(3):  # three more steps, then it dies inside the fourth
                winner.go()
                assert words(winner.line())[0] == "step", winner.describe()
            assert winner.kill() == -signal.SIGKILL
            assert check_thread(store, thread) == at + 3
        else:
            winner.run_free()
            lines = winner.rest()
            assert json.loads(words(lines[-1])[1]) == {"outcome": "done", "reason": None}, lines
        end = check_thread(store, thread)
        segment = range(at + 1, end + 1)
        runs = run_ids(store, thread, segment)
        assert len(runs) == 1 and None not in runs, f"round {round_}: steps {segment} written by runs {runs}"
        segments.append((segment, runs))

    assert check_thread(store, thread) == MESSAGES
    all_runs = [runs for _, runs in segments]
    assert len(set().union(*all_runs)) == len(segments), f"a run id wrote in two rounds: {segments}"
    assert [s.step for s in store.history(thread)] == list(range(1, MESSAGES + 1))
    reference = chat.build().invoke({}, thread="reference", checkpointer=store)
    assert reference.outcome == "done"
    assert store.get(thread).state == store.get("reference").state
    assert same_steps(store.history(thread)) == same_steps(store.history("reference"))


# -- 3. a stuck holder is taken over and fenced off ---------------------------------------


def stop_cleanly(child: Child, spec: Spec) -> None:
    """SIGSTOP the child at a moment it holds no SQLite write lock (its lease renewer could
    be inside a transaction; a stopped process would then lock the file for everyone)."""
    for _ in range(50):
        os.kill(child.pid, signal.SIGSTOP)
        wait_until(lambda: child.state() == "T", f"child {child.pid} is stopped")
        if spec.kind != "sqlite":
            return
        probe = sqlite3.connect(spec.where, timeout=0, isolation_level=None)
        try:
            probe.execute("BEGIN IMMEDIATE")
            probe.execute("ROLLBACK")
            return
        except sqlite3.OperationalError as exc:
            assert "locked" in str(exc), exc
        finally:
            probe.close()
        os.kill(child.pid, signal.SIGCONT)
        wait_until(lambda: child.state() != "T", f"child {child.pid} runs again")
    raise AssertionError("the child held the SQLite write lock every time it was stopped")


@pytest.mark.parametrize("takeover", ["new-holder-mid-step", "new-holder-finished"])
def test_a_stopped_holder_is_taken_over_and_its_next_write_refused(backend, spawn, chat, takeover):
    """A child holds the thread with a 0.5 s lease and waits inside step 6; SIGSTOP freezes
    it and its renewer. Once the lease has lapsed in the store, this process resumes the
    thread. Then the child is continued and its node returns: its write of step 6 is
    refused (LeaseLost), its run ends `failed` saying so, and the log holds only the new
    holder's steps from step 6 on. Either while the new holder sits inside step 6 with
    nothing of it written (only the lease check stands between the old holder and the
    store), or after the new holder finished and let the lease go."""
    spec = backend(lease_ttl=0.5)
    store = spec.open()
    thread = "stuck"

    child = spawn(spec, thread)
    while True:
        word, rest = words(child.line())
        assert word in ("begin", "step"), child.describe()
        if word == "step" and rest.split()[0] == "6":
            break  # waiting inside step 6, steps 1..5 written
        if word == "step":
            child.go()
    assert check_thread(store, thread) == 5
    assert spec.holder_pid(store, thread) == child.pid
    old_run = store.get(thread).run

    stop_cleanly(child, spec)
    assert spec.holder_pid(store, thread) == child.pid  # still its lease: the process exists, only stopped
    wait_until(lambda: spec.lease_lapsed(store, thread), "the stopped child's lease has lapsed")
    assert child.state() == "T"

    mine = spec.open()
    result: dict[str, Any] = {}
    inside, leave = threading.Event(), threading.Event()
    if takeover == "new-holder-finished":
        result["run"] = chat.build().invoke(Resume(thread), checkpointer=mine)
        assert result["run"].outcome == "done", result["run"].reason
        assert spec.holder_pid(store, thread) is None  # it let its lease go
    else:

        def hold(step: int, count: int) -> None:
            if not inside.is_set():
                inside.set()
                assert leave.wait(TIMEOUT)

        def resume() -> None:
            result["run"] = chat.build(hold).invoke(Resume(thread), checkpointer=mine)

        runner = threading.Thread(target=resume, daemon=True)
        runner.start()
        assert inside.wait(TIMEOUT), "the takeover never reached its first node"
        assert spec.holder_pid(store, thread) == os.getpid()
        assert check_thread(store, thread) == 5  # nothing of step 6 written yet

    try:
        os.kill(child.pid, signal.SIGCONT)
        child.go()  # its node for step 6 returns; the write comes next
        word, rest = words(child.line())
        assert word == "result", f"the old holder went on after losing its lease: {child.describe()}"
        ended = json.loads(rest)
        assert ended["outcome"] == "failed", ended
        assert f"lease on thread {thread!r} lapsed or was taken over" in ended["reason"], ended
        assert "nothing more was written" in ended["reason"], ended
        assert child.rest() == []
        assert "Traceback" not in child.stderr(), child.stderr()
        if takeover == "new-holder-mid-step":
            assert check_thread(store, thread) == 5
    finally:
        leave.set()  # the new holder goes on (a no-op when it has finished already)

    if takeover == "new-holder-mid-step":
        runner.join(TIMEOUT)
        assert not runner.is_alive()
        assert result["run"].outcome == "done", result["run"].reason

    final = store.get(thread)
    assert (final.status, final.step) == ("done", MESSAGES)  # the old holder's "failed" was refused too
    assert check_thread(store, thread) == MESSAGES
    assert run_ids(store, thread, range(1, 6)) == {old_run}
    new_runs = run_ids(store, thread, range(6, MESSAGES + 1))
    assert len(new_runs) == 1 and old_run not in new_runs and None not in new_runs, new_runs
    reference = chat.build().invoke({}, thread="reference", checkpointer=mine)
    assert reference.outcome == "done"
    assert final.state == store.get("reference").state
    assert same_steps(store.history(thread)) == same_steps(store.history("reference"))
