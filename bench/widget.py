"""What the live view costs a run: a 10,000-step loop with and without the observer.

Both runs are started the way a notebook starts them (``g.start()`` on a running
loop). The observed run feeds a real ``GraphView``; every comm message it would
send to the browser is counted where it leaves (``comm.publish_msg``). Two node
kinds are measured: one that awaits (like a node doing I/O) and one that never
awaits. A plain-Python loop doing the same updates gives the floor.

Targets: observed / unobserved wall time under 1.5x; fewer than 30 comm messages
per second of run time.

Run: python bench/widget.py [--steps N] [--repeat N]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from nbgraph import END, START, Graph  # noqa: E402
from nbgraph.widget import GraphView  # noqa: E402


async def awaiting(state):
    await asyncio.sleep(0)
    return {"n": state["n"] + 1}


def blocking(state):
    return {"n": state["n"] + 1}


def loop_graph(node, steps: int) -> Graph:
    g = Graph("loop", max_steps=steps + 5, max_same_node=steps + 5)
    g.add_node("work", node)
    g.add_edge(START, "work")
    g.add_edge("work", "work", when=lambda s: s["n"] < steps, label="n < steps")
    g.add_edge("work", END)
    g.compile()
    return g


def count_messages(view: GraphView) -> list[int]:
    sent = [0]
    publish = view.comm.publish_msg

    def counting(*args, **kwargs):
        sent[0] += 1
        return publish(*args, **kwargs)

    view.comm.publish_msg = counting
    return sent


async def timed_run(graph: Graph, steps: int, observed: bool) -> tuple[float, int]:
    run = graph.start({"n": 0}, display=False)
    sent = [0]
    if observed:
        view = GraphView.for_run(run)
        sent = count_messages(view)
    t0 = time.perf_counter()
    result = await run
    elapsed = time.perf_counter() - t0
    assert result.outcome == "done" and result.state["n"] == steps, result
    if observed:
        assert view.status["outcome"] == "done" and view.visits == {"work": steps}
    return elapsed, sent[0]


async def plain_loop(node, steps: int) -> float:
    t0 = time.perf_counter()
    state = {"n": 0}
    while state["n"] < steps:
        out = node(state)
        if asyncio.iscoroutine(out):
            out = await out
        state = {**state, **out}
    return time.perf_counter() - t0


async def measure(steps: int, repeat: int) -> None:
    print(f"python {sys.version.split()[0]}, {steps:,}-step loop, best of {repeat}")
    print(f"{'node':<10}{'plain':>9}{'no view':>10}{'view':>9}{'ratio':>8}{'messages':>10}{'msg/s':>8}")
    for name, node in (("awaits", awaiting), ("blocking", blocking)):
        graph = loop_graph(node, steps)
        plain, bare, seen = [], [], []
        for _ in range(repeat):
            gc.collect()
            plain.append(await plain_loop(node, steps))
            gc.collect()
            bare.append((await timed_run(graph, steps, observed=False))[0])
            gc.collect()
            seen.append(await timed_run(graph, steps, observed=True))
        wall, messages = min(seen)
        print(
            f"{name:<10}{min(plain) * 1e3:>7.1f}ms{min(bare) * 1e3:>8.1f}ms{wall * 1e3:>7.1f}ms"
            f"{wall / min(bare):>7.2f}x{messages:>10}{messages / wall:>8.1f}"
        )
    print("targets: ratio < 1.5x; < 30 messages per second of run time")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    asyncio.run(measure(args.steps, args.repeat))


if __name__ == "__main__":
    main()
