"""Engine overhead per node execution, against a plain-Python loop measured in the same run.

Workloads:
  (a) a 2-node cycle run for 1,000 iterations (2,000 node executions in one run);
  (b) a 5-node linear pipeline invoked 1,000 times (5,000 node executions);
each with no checkpointer, a MemoryCheckpointer and a SQLiteCheckpointer. The
baseline calls the same node functions and folds their updates into a dict.
Also: memory retained per recorded step over a 20,000-step run (MemoryCheckpointer).

Run: python bench/engine.py [--repeat N]
"""

from __future__ import annotations

import argparse
import gc
import os
import statistics
import sys
import tempfile
import time
import tracemalloc

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from nbgraph import END, START, Graph, MemoryCheckpointer, SQLiteCheckpointer  # noqa: E402

CYCLE_ITERATIONS = 1_000
PIPELINE_RUNS = 1_000
PIPELINE_NODES = 5


def bump(state):
    return {"n": state["n"] + 1}


def cycle_graph(iterations: int) -> Graph:
    g = Graph("cycle", max_steps=2 * iterations + 10, max_same_node=10)
    g.add_node("work", bump)
    g.add_node("check", lambda s: None)
    g.add_edge(START, "work")
    g.add_edge("work", "check")
    g.add_edge("check", END, when=lambda s: s["n"] >= iterations, label="done")
    g.add_edge("check", "work")
    return g


def pipeline_graph() -> Graph:
    g = Graph("pipeline")
    names = [f"p{i}" for i in range(PIPELINE_NODES)]
    for name in names:
        g.add_node(name, bump)
    g.add_edge(START, names[0])
    for a, b in zip(names, names[1:]):
        g.add_edge(a, b)
    g.add_edge(names[-1], END)
    return g


def baseline_cycle(iterations: int) -> float:
    t0 = time.perf_counter()
    state = {"n": 0}
    check = lambda s: None  # noqa: E731
    while True:
        state = {**state, **bump(state)}
        check(state)
        if state["n"] >= iterations:
            break
    return time.perf_counter() - t0


def baseline_pipeline(runs: int) -> float:
    t0 = time.perf_counter()
    for _ in range(runs):
        state = {"n": 0}
        for _ in range(PIPELINE_NODES):
            state = {**state, **bump(state)}
    return time.perf_counter() - t0


def run_cycle(store_factory) -> float:
    g = cycle_graph(CYCLE_ITERATIONS)
    g.compile()
    store = store_factory()
    t0 = time.perf_counter()
    result = g.invoke({"n": 0}, checkpointer=store)
    elapsed = time.perf_counter() - t0
    assert result.state["n"] == CYCLE_ITERATIONS, result
    return elapsed


def run_pipeline(store_factory) -> float:
    g = pipeline_graph()
    g.compile()
    store = store_factory()
    t0 = time.perf_counter()
    for _ in range(PIPELINE_RUNS):
        result = g.invoke({"n": 0}, checkpointer=store)
    elapsed = time.perf_counter() - t0
    assert result.state["n"] == PIPELINE_NODES
    return elapsed


def best(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        gc.collect()
        times.append(fn())
    return min(times)


def retained_per_step(steps: int = 20_000) -> tuple[float, float]:
    """Bytes retained per step by a finished run with and without a MemoryCheckpointer."""
    figures = []
    for store in (None, MemoryCheckpointer()):
        g = cycle_graph(steps // 2)
        g.compile()
        gc.collect()
        tracemalloc.start()
        before = tracemalloc.get_traced_memory()[0]
        result = g.invoke({"n": 0}, checkpointer=store)
        gc.collect()
        after = tracemalloc.get_traced_memory()[0]
        tracemalloc.stop()
        assert len(result.history) == steps
        figures.append((after - before) / steps)
        del result
    return figures[0], figures[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    tmp = tempfile.mkdtemp(prefix="nbgraph-bench-")
    counter = iter(range(10**6))
    stores = {
        "none": lambda: None,
        "memory": MemoryCheckpointer,
        "sqlite": lambda: SQLiteCheckpointer(os.path.join(tmp, f"bench{next(counter)}.db")),
    }
    cycle_nodes = 2 * CYCLE_ITERATIONS
    pipeline_nodes = PIPELINE_RUNS * PIPELINE_NODES
    base_cycle = best(lambda: baseline_cycle(CYCLE_ITERATIONS), args.repeat) / cycle_nodes * 1e6
    base_pipe = best(lambda: baseline_pipeline(PIPELINE_RUNS), args.repeat) / pipeline_nodes * 1e6
    print(f"python {sys.version.split()[0]}, best of {args.repeat}; figures are microseconds per node execution")
    print(f"{'workload':<34}{'nbgraph':>10}{'plain':>9}{'overhead':>10}{'ratio':>9}")
    for label, fn, nodes, base in (
        ("(a) 2-node cycle x1000", run_cycle, cycle_nodes, base_cycle),
        ("(b) 5-node pipeline x1000 runs", run_pipeline, pipeline_nodes, base_pipe),
    ):
        for store_name, factory in stores.items():
            repeat = args.repeat if store_name != "sqlite" else max(1, args.repeat // 2)
            per_node = best(lambda: fn(factory), repeat) / nodes * 1e6
            print(
                f"{label + ', ' + store_name:<34}{per_node:>10.2f}{base:>9.2f}"
                f"{per_node - base:>10.2f}{per_node / base:>8.0f}x"
            )
    fast, memory = retained_per_step()
    print(f"retained per recorded step over 20,000 steps: {fast:.0f} B (no checkpointer), {memory:.0f} B (MemoryCheckpointer)")
    print("targets: overhead <= 10 us (none), <= 20 us (memory); <= 1024 B retained per step")


if __name__ == "__main__":
    main()
