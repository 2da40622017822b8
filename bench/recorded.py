"""What replaying a recorded run costs, against the same run on the offline scripted model.

Workload: one LLM node that runs 50 times in a row, its conversation growing by a reply a
step (51 messages at the end). The baseline runs it on a ``ScriptedModel``, measured in the
same process; the run is then recorded from that model into an NDJSON file and replayed
from it (each request digested and looked up, each reply streamed back), the graphs
compiled beforehand on both sides. Reading the file (``recorded(None, path,
mode="replay")``) is timed apart, and added for the figure in all. Both runs' states are
checked equal, so a broken replay cannot print good figures.

Targets: the replayed run <= 2x the scripted run, and reading + run <= 100 ms in all.

Run: python bench/recorded.py [--steps N] [--repeat N]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from nbgraph import END, START, Graph, MessagesState, ScriptedModel, llm_node, recorded  # noqa: E402
from nbgraph.llm import UserMessage  # noqa: E402


def talk(model, steps: int) -> Graph:
    g = Graph("talk", state=MessagesState, model=model, max_steps=steps + 1, max_same_node=steps + 1)
    g.add_node("agent", llm_node("You keep the conversation going."))
    g.add_edge(START, "agent")
    g.add_edge("agent", "agent", when=lambda s: len(s.messages) <= steps, label="more")
    g.add_edge("agent", END)
    return g


def reply(messages) -> str:
    return f"Reply {len(messages)}: a sentence or two of what a model would say at this point."


def contents(result) -> list[str]:
    return [m.content for m in result.state.messages]


def best(measure, repeat: int) -> float:
    return min(measure() for _ in range(repeat))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    question = {"messages": [UserMessage(content="Tell me about recorded runs.")]}
    path = Path(tempfile.mkdtemp(prefix="nbgraph-bench-")) / "talk.ndjson"

    scripted_graph = talk(ScriptedModel(reply), args.steps)
    expected = scripted_graph.invoke(question)
    assert expected.path == ["agent"] * args.steps, expected.reason
    talk(recorded(ScriptedModel(reply), path, mode="record"), args.steps).invoke(question)

    def scripted() -> float:
        t0 = time.perf_counter()
        result = scripted_graph.invoke(question)
        elapsed = time.perf_counter() - t0
        assert contents(result) == contents(expected)
        return elapsed

    replay_graph = talk(recorded(None, path, mode="replay"), args.steps)
    replay_graph.compile()

    def replayed() -> float:
        t0 = time.perf_counter()
        result = replay_graph.invoke(question)
        elapsed = time.perf_counter() - t0
        assert contents(result) == contents(expected), result.reason
        return elapsed

    def loaded() -> float:
        t0 = time.perf_counter()
        model = recorded(None, path, mode="replay")
        elapsed = time.perf_counter() - t0
        assert model.exchanges == args.steps
        return elapsed

    base = best(scripted, args.repeat) * 1e3
    replay = best(replayed, args.repeat) * 1e3
    load = best(loaded, args.repeat) * 1e3
    size = path.stat().st_size / 1024
    print(f"python {sys.version.split()[0]}, best of {args.repeat}; a {args.steps}-step run of one LLM node")
    print(f"{'run':<40}{'ms':>8}{'ratio':>9}")
    print(f"{'scripted model (baseline)':<40}{base:>8.1f}{1:>8.2f}x")
    print(f"{'replayed from the recording':<40}{replay:>8.1f}{replay / base:>8.2f}x")
    print(f"{'reading the recording':<40}{load:>8.1f}  ({size:.0f} KB, {args.steps} exchanges)")
    print(f"{'replay in all (reading + run)':<40}{load + replay:>8.1f}{(load + replay) / base:>8.2f}x")
    print("targets: the replayed run <= 2x the scripted run, and reading + run <= 100 ms in all")


if __name__ == "__main__":
    main()
