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

Then what the decision's record and the digest of what the pause showed cost of that: the
same runs (live; durable in a MemoryCheckpointer and in SQLite) beside themselves with the
two stubbed out in the same process (a constant digest, one prebuilt record), and each part
alone: ``shown_digest`` of the pause, ``decision_of`` its answer, the record as JSON.

Run: python bench/approvals.py [--runs N] [--record-only]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from typing import Any

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

import nbgraph.decision  # noqa: E402
import nbgraph.pauses  # noqa: E402
from nbgraph import END, START, Graph, MemoryCheckpointer, MessagesState, Resume, SQLiteCheckpointer  # noqa: E402
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


def durable(
    graph: Graph, state: Callable[[], dict[str, Any]], runs: int, pauses: bool, tmp: str, memory: bool = False
) -> float:
    store = MemoryCheckpointer() if memory else SQLiteCheckpointer(tempfile.mktemp(suffix=".db", dir=tmp))
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


@contextlib.contextmanager
def without_record() -> Iterator[None]:
    """Pauses with a constant digest and answers with one prebuilt record: the same runs,
    without what the digest and the record cost to make (keeping the record still costs)."""
    digest, record = nbgraph.pauses.shown_digest, nbgraph.decision.decision_of
    fixed = nbgraph.decision.Decision(
        pause_id="0" * 32, kind="tool", path="n", step=1, shown="0" * 32, by="bench", at="", via="code", verdict=""
    )
    nbgraph.pauses.shown_digest = lambda pause: "0" * 32  # (the pause's validator reads the module's name)
    nbgraph.decision.decision_of = lambda pause, answer, **given: fixed  # (the engine imports it where it answers)
    try:
        yield
    finally:
        nbgraph.pauses.shown_digest, nbgraph.decision.decision_of = digest, record


def paired(graph: Graph, how: str, runs: int, tmp: str) -> tuple[float, float]:
    """Seconds of CPU one run that pauses takes with the record and the digest, and without
    (stubbed), run by run in turn; the median of each. CPU time, not the clock's: the two
    differ by microseconds, which another process on the machine would drown."""
    kept: list[float] = []
    stubbed: list[float] = []
    given = [conversation(1) for _ in range(2 * runs)]

    def answer(pause: Any) -> str:
        return "approve" if pause.kind == "tool" else "yes"

    if how == "live":

        async def all_runs() -> None:
            for i in range(2 * runs):
                with without_record() if i % 2 else contextlib.nullcontext():
                    t0 = time.process_time()
                    run = graph.start(given[i], display=False)
                    pause = await run.next_pause(timeout=10)
                    run.answer(answer(pause), pause=pause.id)
                    await run
                    (stubbed if i % 2 else kept).append(time.process_time() - t0)

        asyncio.run(all_runs())
    else:
        store = MemoryCheckpointer() if how == "memory" else SQLiteCheckpointer(tempfile.mktemp(suffix=".db", dir=tmp))
        for i in range(2 * runs):
            with without_record() if i % 2 else contextlib.nullcontext():
                t0 = time.process_time()
                result = graph.invoke(given[i], thread=f"t{i}", checkpointer=store)
                result = graph.invoke(Resume(result, answer(result.pauses[0])), checkpointer=store)
                (stubbed if i % 2 else kept).append(time.process_time() - t0)
            assert result.outcome == "done", result.reason
    return statistics.median(kept), statistics.median(stubbed)


def micro(fn: Callable[[], Any], times: int = 2_000) -> float:
    """Microseconds one call of ``fn`` takes (best of 5 batches)."""
    took = []
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(times):
            fn()
        took.append((time.perf_counter() - t0) / times)
    return min(took) * 1e6


def a_tool_pause() -> Any:
    """A tool pause as the engine opens one, with the decision that answers it."""
    waits, _ = tool_graphs()
    paused = waits.invoke(conversation(1), checkpointer=MemoryCheckpointer())
    (pause,) = paused.pauses
    return pause, nbgraph.pauses.read_answer(pause, "approve")


def record_costs(runs: int, tmp: str) -> None:
    """The decision's record and the pause's digest: what they add to a pause, and each part."""
    waits, _ = tool_graphs()
    asks, _ = ask_graphs()
    print()
    print(
        f"the record and the digest: CPU microseconds a run takes with them and without (stubbed), "
        f"median of {runs} runs each, best of 5"
    )
    print(f"{'pause':<34}{'with':>9}{'without':>9}{'record':>9}{'target':>9}")
    for label, graph in (("ask", asks), ("tool call", waits)):
        for how, name, target in (
            ("live", "live", 20),
            ("memory", "durable, MemoryCheckpointer", 200),
            ("sqlite", "durable, SQLite", 200),
        ):
            rounds = [paired(graph, how, runs, tmp) for _ in range(5)]
            kept = min(k for k, _ in rounds)
            stubbed = min(s for _, s in rounds)
            row = f"{label}, {name}"
            print(
                f"{row:<34}{kept * 1e6:>9.0f}{stubbed * 1e6:>9.0f}{(kept - stubbed) * 1e6:>9.1f}{'<= ' + str(target):>9}"
            )
    pause, answer = a_tool_pause()
    decision = nbgraph.decision.decision_of(pause, answer, via="code")
    print("each part, microseconds a call (a tool pause, its approval):")
    print(f"    shown_digest(pause)            {micro(lambda: nbgraph.pauses.shown_digest(pause)):>8.1f}")
    print(
        f"    decision_of(pause, answer)     {micro(lambda: nbgraph.decision.decision_of(pause, answer, via='code')):>8.1f}"
    )
    print(f"    the record as JSON             {micro(decision.model_dump_json):>8.1f}")
    print(f"    ({len(decision.model_dump_json())} bytes of JSON in each answer event)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--record-only", action="store_true", help="only what the record and the digest cost")
    args = parser.parse_args()
    runs, tmp = args.runs, tempfile.mkdtemp(prefix="nbgraph-approvals-")
    if args.record_only:
        record_costs(runs, tmp)
        return
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
    record_costs(runs, tmp)


if __name__ == "__main__":
    main()
