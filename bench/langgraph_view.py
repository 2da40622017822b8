"""What nbgraph's live view costs a LangGraph run: a 200-step loop watched and unwatched.

The graph is a LangGraph ``StateGraph`` whose one node loops on itself 200 times (200
supersteps, a conditional edge each), compiled with an ``InMemorySaver``. Each run is
started the way a notebook starts it (``nbgraph.langgraph.start()`` on a running loop):
watched, a real ``GraphView`` is bound to it and every comm message it would send to
the browser is counted where it leaves (``comm.publish_msg``; outside a kernel they go
nowhere); unwatched, nothing is bound. Two node kinds: one that awaits (like a node doing
I/O) and one that never awaits (LangGraph runs it in a worker thread). The runs
alternate, each kind's best of ``--repeat`` is kept, and ``app.ainvoke`` (LangGraph's
own, with no stream) is printed beside them for scale.

Target: watched / unwatched wall time <= 1.1x.

Run: python bench/langgraph_view.py [--steps N] [--repeat N]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import sys
import time
from typing import Any, TypedDict

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from langgraph.checkpoint.memory import InMemorySaver  # noqa: E402
from langgraph.graph import END, START, StateGraph  # noqa: E402

import nbgraph.langgraph as nlg  # noqa: E402


class Count(TypedDict):
    n: int


async def awaiting(state: Count) -> dict[str, int]:
    await asyncio.sleep(0)
    return {"n": state["n"] + 1}


def blocking(state: Count) -> dict[str, int]:
    return {"n": state["n"] + 1}


def loop_app(node: Any, steps: int) -> Any:
    g = StateGraph(Count)
    g.add_node("work", node)
    g.add_edge(START, "work")
    g.add_conditional_edges("work", lambda s: "again" if s["n"] < steps else "done", {"again": "work", "done": END})
    return g.compile(checkpointer=InMemorySaver())


def config(steps: int) -> dict[str, Any]:
    return {"recursion_limit": steps + 10}


def count_messages(view: nlg.LangGraphView) -> list[int]:
    sent = [0]
    publish = view.comm.publish_msg

    def counting(*args: Any, **kwargs: Any) -> Any:
        sent[0] += 1
        return publish(*args, **kwargs)

    view.comm.publish_msg = counting
    return sent


async def timed_run(app: Any, steps: int, watched: bool) -> tuple[float, int]:
    t0 = time.perf_counter()
    run = nlg.start(app, {"n": 0}, config(steps), display=False)
    sent = [0]
    if watched:
        view = nlg.LangGraphView.for_run(run)
        sent = count_messages(view)
    values = await run
    elapsed = time.perf_counter() - t0
    assert values == {"n": steps} and len(run.history) == steps, values
    if watched:
        assert view.status["outcome"] == "done" and view.visits == {"work": steps}
        assert view.fired == {"__start__\u2192work": 1, "work\u2192work": steps - 1, "work\u2192__end__": 1}
    return elapsed, sent[0]


async def langgraph_alone(app: Any, steps: int) -> float:
    t0 = time.perf_counter()
    values = await app.ainvoke({"n": 0}, {**config(steps), "configurable": {"thread_id": os.urandom(8).hex()}})
    assert values == {"n": steps}
    return time.perf_counter() - t0


async def measure(steps: int, repeat: int) -> None:
    print(f"python {sys.version.split()[0]}, {steps}-step LangGraph loop, best of {repeat}")
    print(f"{'node':<10}{'ainvoke':>10}{'unwatched':>11}{'watched':>10}{'ratio':>8}{'messages':>10}")
    worst = 0.0
    for name, node in (("awaits", awaiting), ("blocking", blocking)):
        app = loop_app(node, steps)
        await timed_run(app, steps, watched=True)  # warm up: imports, first compiles
        alone, bare, seen = [], [], []
        for _ in range(repeat):
            gc.collect()
            alone.append(await langgraph_alone(app, steps))
            gc.collect()
            bare.append((await timed_run(app, steps, watched=False))[0])
            gc.collect()
            seen.append(await timed_run(app, steps, watched=True))
        wall, messages = min(seen)
        ratio = wall / min(bare)
        worst = max(worst, ratio)
        print(
            f"{name:<10}{min(alone) * 1e3:>8.1f}ms{min(bare) * 1e3:>9.1f}ms{wall * 1e3:>8.1f}ms"
            f"{ratio:>7.2f}x{messages:>10}"
        )
    print(f"watched / unwatched, the worse of the two: {worst:.2f}x (target <= 1.1x)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    asyncio.run(measure(args.steps, args.repeat))


if __name__ == "__main__":
    main()
