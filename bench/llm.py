"""What an ``llm_node`` adds to a model call, against the bare ``openai`` client.

Both talk to the same local OpenAI-compatible server (``tests/openai_server.py``,
started here in its own process) that streams a 200-piece reply. The bare side
makes the streamed call and joins the text; the nbgraph side runs a one-node graph
whose ``llm_node`` makes the same call through ``OpenAIModel`` and records the
reply, usage and step. Calls alternate between the two so drift hits both alike.

Target: under 10% added time per call.

Run: python bench/llm.py [--calls N] [--tokens N]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))

import openai  # noqa: E402

from nbgraph import END, START, Graph, MessagesState, OpenAIModel, llm_node  # noqa: E402
from nbgraph.llm import UserMessage  # noqa: E402

SYSTEM = "You are a benchmark."
QUESTION = "Stream me a long answer."


def start_server(tokens: int) -> tuple[subprocess.Popen[str], str]:
    server = subprocess.Popen(
        [sys.executable, os.path.join(HERE, "..", "tests", "openai_server.py"), "--port", "0", "--tokens", str(tokens)],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert server.stdout is not None
    line = server.stdout.readline().split()
    if not line or line[0] != "READY":
        server.kill()
        raise RuntimeError(f"the benchmark server did not start: {line}")
    return server, line[1]


async def bare_call(client: openai.AsyncOpenAI) -> str:
    stream = await client.chat.completions.create(
        model="bench",
        messages=[{"role": "system", "content": SYSTEM}, {"role": "user", "content": QUESTION}],
        stream=True,
        stream_options={"include_usage": True},
    )
    parts = []
    async for chunk in stream:
        for choice in chunk.choices:
            if choice.delta.content:
                parts.append(choice.delta.content)
    return "".join(parts)


async def measure(calls: int, tokens: int, base_url: str) -> None:
    client = openai.AsyncOpenAI(base_url=base_url, api_key="bench", max_retries=0)
    model = OpenAIModel("bench", base_url=base_url, api_key="bench", max_retries=0)
    g = Graph("bench", state=MessagesState)
    g.add_node("agent", llm_node(SYSTEM, model=model))
    g.add_edge(START, "agent")
    g.add_edge("agent", END)
    g.compile()
    question = {"messages": [UserMessage(content=QUESTION)]}

    async def graph_call() -> str:
        result = await g.ainvoke(question)
        assert result.outcome == "done", result.reason
        return result.state.messages[-1].content

    # Warm both connection pools and check both see the same reply.
    assert await bare_call(client) == await graph_call()
    bare, graph = [], []
    for _ in range(calls):
        for fn, times in ((bare_call, bare), (graph_call, graph)):
            t0 = time.perf_counter()
            await (fn(client) if fn is bare_call else fn())
            times.append(time.perf_counter() - t0)
    await client.close()
    await model.aclose()
    b, n = statistics.median(bare), statistics.median(graph)
    print(
        f"python {sys.version.split()[0]}, openai {openai.__version__}; {calls} calls each, {tokens}-piece streamed reply"
    )
    print(f"{'':<24}{'median':>10}{'mean':>10}")
    print(f"{'bare openai client':<24}{b * 1e3:>8.2f}ms{statistics.mean(bare) * 1e3:>8.2f}ms")
    print(f"{'llm_node in a graph':<24}{n * 1e3:>8.2f}ms{statistics.mean(graph) * 1e3:>8.2f}ms")
    print(f"added per call: {(n - b) * 1e3:.2f} ms ({(n / b - 1) * 100:+.1f}%); target under +10%")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=100)
    parser.add_argument("--tokens", type=int, default=200)
    args = parser.parse_args()
    server, base_url = start_server(args.tokens)
    try:
        asyncio.run(measure(args.calls, args.tokens, base_url))
    finally:
        server.terminate()
        server.wait()


if __name__ == "__main__":
    main()
