"""Engine cost of parallel branches and sub-graph nodes, beside plain asyncio measured in the same run.

Workloads:
  (1) a map of 16 branches into an async node that sleeps 50 ms: the run's wall time
      beside ``asyncio.gather`` of the same 16 calls. The branches must overlap, so the
      run should take one sleep and a little, not 16 sleeps;
  (2) a node returning 1,000 ``Send`` items to a trivial async node that returns its
      item into an ``append`` field, and the same with 10,000: the engine's time per
      branch, (run - gather of the same 1,000 coroutines) / 1,000. The figure at 10,000
      must match the one at 1,000: a cost per branch that grows with the count is a defect;
  (3) a 2-node cycle run for 500 iterations whose first node is a 3-node sub-graph (on
      the parent's state, and with input/output mappings), against the same cycle with
      the 3 nodes inline: the cost of one call of the sub-graph node;
  (4) (1) and (2) again with a MemoryCheckpointer and a SQLiteCheckpointer, since a
      superstep writes one checkpoint holding every branch's step.
Every run checks its result (all items, in order; every step recorded), so a broken
engine cannot print good figures. Graphs run with ``ainvoke`` on the loop the baseline
uses, so both sides pay the same loop and neither pays a thread hop.

Run: python bench/branches.py [--repeat N]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterable
from typing import Annotated, Any, NamedTuple

import pydantic

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from nbgraph import END, START, Graph, MemoryCheckpointer, Send, SQLiteCheckpointer, append  # noqa: E402

SLEEPERS = 16
NAP = 0.05
SEND_COUNTS = (1_000, 10_000)
SUBGRAPH_CALLS = 500

StoreFactory = Callable[[], Any]


class Sample(NamedTuple):
    seconds: float
    gc: float
    """Seconds the cyclic garbage collector ran within ``seconds``."""


Timed = Callable[[], Awaitable[Sample]]


class GcClock:
    """Sums the time the cyclic garbage collector runs (a ``gc.callbacks`` entry).

    Thousands of live branches can push a run over the threshold of a full
    collection that a smaller run stays under; timing the collector shows how much
    of a cost per branch that grows with the count is the collector's.
    """

    def __init__(self) -> None:
        self.total = 0.0
        self._started = 0.0

    def __call__(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._started = time.perf_counter()
        else:
            self.total += time.perf_counter() - self._started


GC_CLOCK = GcClock()


def timed_call(t0: float, gc0: float) -> Sample:
    return Sample(time.perf_counter() - t0, GC_CLOCK.total - gc0)


class Items(pydantic.BaseModel):
    out: Annotated[list[int], append] = []


async def nap(item: int) -> dict[str, list[int]]:
    await asyncio.sleep(NAP)
    return {"out": [item]}


async def echo(item: int) -> dict[str, list[int]]:
    return {"out": [item]}


# -- (1) and (2): branches ----------------------------------------------------------


def map_graph(count: int) -> Graph:
    g = Graph("naps", state=Items, max_steps=count + 10)
    g.add_node("plan", lambda s: None)
    g.add_node("nap", nap)
    g.add_edge(START, "plan")
    g.add_edge("plan", "nap", each=lambda s: range(count))
    g.add_edge("nap", END)
    return g


def send_graph(count: int) -> Graph:
    g = Graph("sends", state=Items, max_steps=count + 10)
    g.add_node("plan", lambda s: [Send("echo", i) for i in range(count)])
    g.add_node("echo", echo)
    g.add_edge(START, "plan")
    g.add_edge("plan", "echo")
    g.add_edge("echo", END)
    return g


def check_items(result: Any, count: int, store: Any) -> None:
    """The run folded every branch's item in frontier order, and its store kept them."""
    assert result.outcome == "done", (result.outcome, result.reason)
    expected = list(range(count))
    assert list(result.state.out) == expected, f"state holds {len(result.state.out)} items, out of order or lost"
    assert sum(record.branch is not None for record in result.history) == count, "a branch left no step record"
    if store is not None:
        saved = store.get(result.thread)
        assert saved is not None and list(saved.state["out"]) == expected, "the last checkpoint lacks the items"


def graph_run(g: Graph, count: int, factory: StoreFactory) -> Timed:
    g.compile()  # compiled once, outside the timing, as a notebook's graph is

    async def timed() -> Sample:
        store = factory()
        gc0, t0 = GC_CLOCK.total, time.perf_counter()
        result = await g.ainvoke({}, checkpointer=store)
        sample = timed_call(t0, gc0)
        check_items(result, count, store)
        return sample

    return timed


def gather_run(fn: Callable[[int], Awaitable[dict[str, list[int]]]], count: int) -> Timed:
    """The baseline: the same coroutines in plain ``asyncio.gather``, their items collected."""

    async def timed() -> Sample:
        gc0, t0 = GC_CLOCK.total, time.perf_counter()
        results = await asyncio.gather(*(fn(i) for i in range(count)))
        out = [item for result in results for item in result["out"]]
        sample = timed_call(t0, gc0)
        assert out == list(range(count))
        return sample

    return timed


async def best(runs: Iterable[Timed], repeat: int) -> list[Sample]:
    """The fastest sample of each run over ``repeat`` rounds, the runs interleaved within
    a round so that a slow spell of the machine falls on all of them rather than on one."""
    runs = list(runs)
    samples: list[list[Sample]] = [[] for _ in runs]
    for _ in range(repeat):
        for run, kept in zip(runs, samples, strict=True):
            gc.collect()
            kept.append(await run())
    return [min(kept) for kept in samples]


# -- (3): a sub-graph node against the same nodes inline ---------------------------


def bump(state: Any) -> dict[str, int]:
    return {"n": state["n"] + 1}


def bump_k(state: Any) -> dict[str, int]:
    return {"k": state["k"] + 1}


def add_three(g: Graph, fn: Callable[[Any], dict[str, int]]) -> None:
    g.add_node("a", fn)
    g.add_node("b", fn)
    g.add_node("c", fn)
    g.add_edge("a", "b")
    g.add_edge("b", "c")


def inner_graph(name: str, fn: Callable[[Any], dict[str, int]]) -> Graph:
    g = Graph(name)
    add_three(g, fn)
    g.add_edge(START, "a")
    g.add_edge("c", END)
    return g


def close_cycle(g: Graph, first: str, last: str) -> Graph:
    """``first`` ... ``last`` -> check -> ``first``, until the three bumps a call makes add up."""
    g.add_node("check", lambda s: None)
    g.add_edge(START, first)
    g.add_edge(last, "check")
    g.add_edge("check", END, when=lambda s: s["n"] >= 3 * SUBGRAPH_CALLS, label="done")
    g.add_edge("check", first)
    return g


def inline_cycle() -> Graph:
    g = Graph("inline", max_steps=4 * SUBGRAPH_CALLS + 10, max_same_node=10)
    add_three(g, bump)
    return close_cycle(g, "a", "c")


def shared_cycle() -> Graph:
    g = Graph("shared", max_steps=2 * SUBGRAPH_CALLS + 10, max_same_node=10)
    g.add_node("sub", inner_graph("inner", bump))
    return close_cycle(g, "sub", "sub")


def mapped_cycle() -> Graph:
    g = Graph("mapped", max_steps=2 * SUBGRAPH_CALLS + 10, max_same_node=10)
    g.add_node("sub", inner_graph("inner", bump_k), input=lambda s: {"k": s["n"]}, output=lambda s: {"n": s["k"]})
    return close_cycle(g, "sub", "sub")


def cycle_run(g: Graph, records: int, nested: bool) -> Timed:
    g.compile()

    async def timed() -> Sample:
        gc0, t0 = GC_CLOCK.total, time.perf_counter()
        result = await g.ainvoke({"n": 0})
        sample = timed_call(t0, gc0)
        assert result.outcome == "done" and result.state["n"] == 3 * SUBGRAPH_CALLS, (result.outcome, result.reason)
        assert len(result.history) == records, f"{len(result.history)} step records, expected {records}"
        # The sub-graph's steps must really run nested, under the node that runs it.
        assert any(record.path == "sub/a" for record in result.history) == nested
        return sample

    return timed


# -- the table ---------------------------------------------------------------------


def engine_time(ours: Sample, theirs: Sample, count: int, *, collector: bool = True) -> float:
    """nbgraph's time over its baseline's, per branch (or per call); without ``collector``,
    the garbage collector's time inside each is left out of both."""
    if collector:
        return (ours.seconds - theirs.seconds) / count
    return ((ours.seconds - ours.gc) - (theirs.seconds - theirs.gc)) / count


def row(label: str, ours: Sample, theirs: Sample, count: int) -> str:
    return (
        f"{label:<36}{ours.seconds * 1e3:>12.2f}{theirs.seconds * 1e3:>11.2f}"
        f"{engine_time(ours, theirs, count) * 1e6:>12.2f}{ours.gc / count * 1e6:>10.2f}"
    )


async def sleepers(repeat: int, stores: dict[str, StoreFactory]) -> None:
    print(f"(1) {SLEEPERS} branches sleeping {NAP * 1e3:.0f} ms (a map); per branch")
    for name, factory in stores.items():
        ours, theirs = await best(
            (graph_run(map_graph(SLEEPERS), SLEEPERS, factory), gather_run(nap, SLEEPERS)), repeat
        )
        print(row(f"    {name}", ours, theirs, SLEEPERS))


async def sends(repeat: int, stores: dict[str, StoreFactory]) -> None:
    print("(2) Send branches of a trivial async node; per branch")
    small, large = SEND_COUNTS
    growth = []
    for name, factory in stores.items():
        measured = {}
        for count in SEND_COUNTS:
            # A 10,000-branch run takes ten times as long: fewer rounds keep the script short.
            rounds = repeat if count == small else max(2, repeat // 2)
            measured[count] = await best(
                (graph_run(send_graph(count), count, factory), gather_run(echo, count)), rounds
            )
            print(row(f"    {count:,} branches, {name}", *measured[count], count))
        ratio = engine_time(*measured[large], large) / engine_time(*measured[small], small)
        bare = engine_time(*measured[large], large, collector=False) / engine_time(
            *measured[small], small, collector=False
        )
        growth.append(f"{name} {ratio:.2f}x ({bare:.2f}x)")
    print(f"    engine us per branch at {large:,} over {small:,} (without the collector): {', '.join(growth)}")


async def subgraphs(repeat: int) -> None:
    print(f"(3) a 3-node sub-graph node in a {SUBGRAPH_CALLS}-iteration cycle; plain = its 3 nodes inline; per call")
    inline, shared, mapped = await best(
        (
            cycle_run(inline_cycle(), 4 * SUBGRAPH_CALLS, nested=False),
            cycle_run(shared_cycle(), 5 * SUBGRAPH_CALLS, nested=True),
            cycle_run(mapped_cycle(), 5 * SUBGRAPH_CALLS, nested=True),
        ),
        repeat,
    )
    print(row("    shared state", shared, inline, SUBGRAPH_CALLS))
    print(row("    input/output mappings", mapped, inline, SUBGRAPH_CALLS))


async def measure(repeat: int, stores: dict[str, StoreFactory]) -> None:
    print(
        f"python {sys.version.split()[0]}, best of {repeat} (3 for 10,000 branches); nbgraph and plain run on one loop"
    )
    print(
        "engine = (nbgraph - plain) in us per branch or call; gc = the collector's time inside nbgraph's run, the same way"
    )
    print(f"{'workload':<36}{'nbgraph ms':>12}{'plain ms':>11}{'engine us':>12}{'gc us':>10}")
    await sleepers(repeat, stores)
    await sends(repeat, stores)
    # Each of these runs takes milliseconds: more rounds, for a best that is not a slow spell.
    await subgraphs(3 * repeat)
    small, large = SEND_COUNTS
    print(
        f"targets: (1) <= 60 ms wall for {SLEEPERS} x {NAP * 1e3:.0f} ms; (2) <= 50 us engine per branch at "
        f"{small:,} (none), the same at {large:,}; (3) <= 20 us engine per sub-graph call; "
        "(4) stores: printed beside none"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    gc.callbacks.append(GC_CLOCK)
    with tempfile.TemporaryDirectory(prefix="nbgraph-bench-") as tmp:
        counter = iter(range(10**6))
        stores: dict[str, StoreFactory] = {
            "none": lambda: None,
            "memory": MemoryCheckpointer,
            # A file per run: every run writes to a new file, as a new notebook's store does.
            "sqlite": lambda: SQLiteCheckpointer(os.path.join(tmp, f"bench{next(counter)}.db")),
        }
        asyncio.run(measure(args.repeat, stores))


if __name__ == "__main__":
    main()
