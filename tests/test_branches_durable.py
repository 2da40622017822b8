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

import pytest
from forked import Forker
from redis_server import redis_server

JOBS = '''
"""Start a map whose upper-case items ask for a name, or resume it with answers by pause id."""
import json
from typing import Annotated

import pydantic

from nbgraph import END, START, Graph, RedisCheckpointer, Resume, SQLiteCheckpointer, append


class Names(pydantic.BaseModel):
    items: list[str] = []
    got: Annotated[list[str], append] = []
    done: bool = False


def build(log):
    def note(line):
        with open(log, "a") as out:
            out.write(line + "\\n")

    async def work(item, ctx):
        note(f"enter {item}")
        answer = await ctx.request_input(f"name for {item}?") if item.isupper() else "-"
        note(f"exit {item}")
        return {"got": [f"{item}={answer}"]}

    g = Graph("names", state=Names)
    g.add_node("plan", lambda s: note("enter plan"))
    g.add_node("work", work)
    g.add_node("done", lambda s: note("enter done") or {"done": True})
    g.add_edge(START, "plan")
    g.add_edge("plan", "work", each=lambda s: s.items)
    g.add_edge("work", "done")
    g.add_edge("done", END)
    return g


def warm():
    build("unused").compile()
    Names(got=["x"]).model_dump(mode="json")


def main(job):
    if job["kind"] == "sqlite":
        store = SQLiteCheckpointer(job["where"])
    else:
        store = RedisCheckpointer(job["where"], prefix=job["prefix"])
    g = build(job["log"])
    entered = []
    listen = lambda e: e.type == "node-enter" and entered.append([e.path, e.branch, e.rerun])
    if job["command"] == "start":
        result = g.invoke({"items": job["items"]}, thread=job["thread"], checkpointer=store, on_event=listen)
    else:
        result = g.invoke(Resume(job["thread"], job["answers"]), checkpointer=store, on_event=listen)
    return {
        "outcome": result.outcome, "reason": result.reason, "got": result.state.got, "done": result.state.done,
        "pauses": [{"id": p.id, "branch": p.branch, "prompt": p.prompt} for p in result.pauses],
        "entered": entered,
    }
'''


@pytest.fixture(scope="module")
def redis_url(tmp_path_factory):
    with redis_server(str(tmp_path_factory.mktemp("redis"))) as url:
        yield url


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
