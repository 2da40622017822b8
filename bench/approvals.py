"""What a person's decision on a tool call costs the engine, beside what an ask costs.

Each figure is the cost of the pause alone: a run that pauses and is answered, minus the same
run without the pause, measured in the same process.

  ask:   a node that asks (``ctx.request_input``) and a node that does not;
  tool:  an LLM node (scripted model) whose one tool call waits for a decision, and the same
         node whose tool needs none;
  both again in a conversation of 1,000 messages (what a pause costs late in a long chat).

Live: ``start()``, answered with ``run.answer`` as the pause opens (the median run). Durable: ``invoke`` ends
``interrupted`` in a SQLite file, a ``Resume`` answers (the node runs again from its start,
taking up its kept turn instead of asking the model again).

Run: python bench/approvals.py [--runs N]
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from typing import Any

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from nbgraph import END, START, Graph, MessagesState, Resume, SQLiteCheckpointer  # noqa: E402
from nbgraph.llm import Reply, ScriptedModel, llm_node, tool  # noqa: E402


def _one_node(name: str, fn: Any, state: Any = None) -> Graph:
    g = Graph(name, state=state)
    g.add_node("n", fn)
    g.add_edge(START, "n")
    g.add_edge("n", END)
    return g


def ask_graphs() -> tuple[Graph, Graph]:
    async def asks(state, ctx):
        return {"messages": [{"role": "user", "content": await ctx.request_input("go on?")}]}

    async def says(state, ctx):
        return {"messages": [{"role": "user", "content": "yes"}]}

    return _one_node("ask", asks, MessagesState), _one_node("say", says, MessagesState)


def tool_graphs() -> tuple[Graph, Graph]:
    def model() -> ScriptedModel:
        # Answers the conversation it is given, as a real model would, in any process.
        return ScriptedModel(
            lambda messages: (
                "done" if messages[-1].role == "tool" else Reply(tool_calls=[("send", {"to": "ada@example.com"})])
            )
        )

    def send(to: str) -> str:
        """Send a note."""
        return "sent"

    waits = tool(send, approval=True)
    return (
        _one_node("asks", llm_node("x", model=model(), tools=[waits]), MessagesState),
        _one_node("runs", llm_node("x", model=model(), tools=[send]), MessagesState),
    )


def conversation(messages: int) -> dict[str, Any]:
    said = [{"role": "user" if i % 2 == 0 else "assistant", "content": f"message {i}"} for i in range(messages)]
    return {"messages": said}


def live(graph: Graph, state: Callable[[], dict[str, Any]], runs: int, pauses: bool) -> float:
    async def all_runs() -> float:
        took = []
        for _ in range(runs):
            given = state()  # (the input is built outside the time: both runs take the same)
            t0 = time.perf_counter()
            run = graph.start(given, display=False)
            if pauses:
                pause = await run.next_pause(timeout=10)
                run.answer("approve" if pause.kind == "tool" else "yes", pause=pause.id)
            await run
            took.append(time.perf_counter() - t0)
        return statistics.median(took)

    return asyncio.run(all_runs())


def durable(graph: Graph, state: Callable[[], dict[str, Any]], runs: int, pauses: bool, tmp: str) -> float:
    store = SQLiteCheckpointer(tempfile.mktemp(suffix=".db", dir=tmp))
    given = [state() for _ in range(runs)]
    t0 = time.perf_counter()
    for i in range(runs):
        result = graph.invoke(given[i], thread=f"t{i}", checkpointer=store)
        if pauses:
            pause = result.pauses[0]
            result = graph.invoke(Resume(result, "approve" if pause.kind == "tool" else "yes"), checkpointer=store)
        assert result.outcome == "done", result.reason
    return (time.perf_counter() - t0) / runs


def best(measure: Callable[..., float], *args: Any) -> float:
    return min(measure(*args) for _ in range(5))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=200)
    args = parser.parse_args()
    runs, tmp = args.runs, tempfile.mkdtemp(prefix="nbgraph-approvals-")
    asks, says = ask_graphs()
    waits, runs_at_once = tool_graphs()
    print(f"python {sys.version.split()[0]}; microseconds a pause adds to a run, best of 5 x {runs} runs")
    print(f"{'pause':<40}{'live':>10}{'durable (SQLite)':>18}")
    for label, paused, plain, messages in (
        ("ask (ctx.request_input)", asks, says, 1),
        ("tool call waiting for a decision", waits, runs_at_once, 1),
        ("ask, 1,000-message conversation", asks, says, 1_000),
        ("tool call, 1,000-message conversation", waits, runs_at_once, 1_000),
    ):
        state = functools.partial(conversation, messages)
        row = [
            (best(live, paused, state, runs, True) - best(live, plain, state, runs, False)) * 1e6,
            (best(durable, paused, state, runs, True, tmp) - best(durable, plain, state, runs, False, tmp)) * 1e6,
        ]
        print(f"{label:<40}{row[0]:>10.0f}{row[1]:>18.0f}")
    print("target: a tool call's pause costs no more than an ask's, live and durable")


if __name__ == "__main__":
    main()
