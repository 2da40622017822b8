"""Several pauses open at once in a durable run, answered from other processes.

A process runs a map until it ends ``interrupted`` with its pauses open; then other
processes, one per answer (or per partial mapping of answers), resume the thread from
the store each in turn, in several orders, on SQLite and on a real redis-server.
Every node call appends a line to a file, so the test can tell which branches ran
again: finished ones never do, paused ones re-run their start (and their
``node-enter`` says ``rerun``). The processes are forked from one warm parent
(``forked.py``), those of different threads at the same time.
"""

from __future__ import annotations

import uuid
from collections import Counter
from pathlib import Path

import pytest
from forked import Forker

JOBS = Path(__file__).with_name("programs") / "named_branches.py"


@pytest.fixture(params=["sqlite", "redis"])
def store(request, tmp_path):
    """Where the children's store is: the same one for all of them."""
    if request.param == "sqlite":
        return {"kind": "sqlite", "where": str(tmp_path / "runs.db")}
    return {
        "kind": "redis",
        "where": request.getfixturevalue("redis_url"),
        "prefix": f"branches-{uuid.uuid4().hex[:8]}",
    }


ITEMS = {2: ["a", "B", "c", "D"], 5: ["a", "B", "C", "d", "E", "F", "G"]}
"""Upper-case items ask: 2 and 5 pauses, among branches that finish at once."""

SCHEDULES = {
    # thread: (its items, the pauses each resuming process answers, by position in the map)
    "two-forward": (2, [[0], [1]]),
    "two-reverse": (2, [[1], [0]]),
    "five-forward": (5, [[0], [1, 2], [3, 4]]),
    "five-reverse": (5, [[4, 3], [2], [1, 0]]),
    "five-mixed": (5, [[1], [3, 0], [4, 2]]),  # 2-4-1-5-3
}


def answer(pause: dict) -> str:
    return pause["prompt"][len("name for ")].lower() * 2  # "name for B?" -> "bb"


def test_pauses_answered_from_other_processes_in_several_orders(tmp_path, store):
    threads = {name: f"{name}-{uuid.uuid4().hex[:6]}" for name in SCHEDULES}
    logs = {name: tmp_path / f"{name}.log" for name in SCHEDULES}

    def job(name, **fields):
        return {**store, "thread": threads[name], "log": str(logs[name]), **fields}

    with Forker(tmp_path, JOBS) as forker:
        first = forker.run(*(job(name, command="start", items=ITEMS[n]) for name, (n, _) in SCHEDULES.items()))
        pauses = {}
        for name, result in zip(SCHEDULES, first, strict=True):
            asking = [item for item in ITEMS[SCHEDULES[name][0]] if item.isupper()]
            assert result["outcome"] == "interrupted", result["reason"]
            assert [p["prompt"] for p in result["pauses"]] == [f"name for {item}?" for item in asking]
            assert result["got"] == [] and not any(rerun for _, _, rerun in result["entered"])
            pauses[name] = result["pauses"]

        reruns: dict[str, Counter] = {name: Counter() for name in SCHEDULES}
        finals: dict[str, dict] = {}
        for r in range(max(len(schedule) for _, schedule in SCHEDULES.values())):
            names = [name for name, (_, schedule) in SCHEDULES.items() if r < len(schedule)]
            answers = {
                name: {pauses[name][k]["id"]: answer(pauses[name][k]) for k in SCHEDULES[name][1][r]} for name in names
            }
            results = forker.run(*(job(name, command="resume", answers=answers[name]) for name in names))
            for name, result in zip(names, results, strict=True):
                schedule = SCHEDULES[name][1]
                answered = {k for given in schedule[: r + 1] for k in given}
                before = {p["branch"] for k, p in enumerate(pauses[name]) if k not in answered - set(schedule[r])}
                # Every branch that was paused ran its start again, and said so; no finished one ran.
                work = [(branch, rerun) for path, branch, rerun in result["entered"] if path == "work"]
                assert sorted(work) == sorted((branch, True) for branch in before), (name, r)
                reruns[name].update(before)
                still_open = [p for k, p in enumerate(pauses[name]) if k not in answered]
                if still_open:
                    assert result["outcome"] == "interrupted", result["reason"]
                    assert result["pauses"] == still_open  # the same ids: answers given with them still land
                    assert result["got"] == []
                else:
                    assert result["outcome"] == "done", result["reason"]
                    assert result["entered"][-1] == ["done", None, False]
                    finals[name] = result
        assert len(forker.pids) == len(SCHEDULES) + sum(len(schedule) for _, schedule in SCHEDULES.values())

    for name, (n, _) in SCHEDULES.items():
        items = ITEMS[n]
        # Whatever the order, the same state, folded in map order.
        assert finals[name]["got"] == [f"{item}={item.lower() * 2 if item.isupper() else '-'}" for item in items]
        assert finals[name]["done"] is True
        expected = Counter({"enter plan": 1, "enter done": 1})
        for i, item in enumerate(items):
            expected[f"enter {item}"] = 1 + reruns[name][f"work[{i}]"]
            expected[f"exit {item}"] = 1  # each branch finished exactly once
        assert Counter(logs[name].read_text().splitlines()) == expected, name
