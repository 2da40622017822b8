"""Batches: many runs of one graph at once, beside what the same work costs without a batch.

1. 1,000 runs of a 5-node graph whose one async node awaits 20 ms, as a local batch
   with concurrency 100: the ideal is 1,000 x 20 ms / 100 = 0.2 s plus the engine's own
   time (target: within 1.5x of 0.2 s). Beside it, the same 1,000 runs as
   ``g.ainvoke`` calls under an ``asyncio.Semaphore(100)``, and the engine's own time
   per run measured with a node that awaits nothing (batch against bare ``ainvoke``).
2. A one-node ``llm_node`` graph against the tests' local OpenAI-compatible server
   (``tests/openai_server.py``, in its own process), as a batch, beside the bare
   ``openai`` client making the same streamed calls at the same concurrency (target:
   the batch keeps at least 90% of the bare client's throughput).
3. The Ray executor: its figure goes in the marked place below, beside these.

Rounds alternate between the sides so drift hits both alike; the best round of each is
printed, with the range over the rounds.

Run: python bench/batch.py [--runs N] [--calls N] [--concurrency N] [--rounds N]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))

import openai  # noqa: E402
from llm import start_server  # noqa: E402  (bench/llm.py: the tests' OpenAI-compatible server)

from nbgraph import END, START, Graph, MessagesState, OpenAIModel, llm_node  # noqa: E402
from nbgraph.llm import UserMessage  # noqa: E402

SYSTEM = "You are a benchmark."
QUESTION = "Answer briefly."


def five_nodes(wait: float) -> Graph:
    """START -> a -> fetch (awaits ``wait`` s) -> b -> c -> d -> END; dict state."""

    async def fetch(state):
        await asyncio.sleep(wait)
        return {"fetched": state["n"] * 2}

    g = Graph("five")
    g.add_node("a", lambda s: {"seen": 1})
    g.add_node("fetch", fetch)
    g.add_node("b", lambda s: {"b": s["fetched"] + 1})
    g.add_node("c", lambda s: {"c": s["b"] + 1})
    g.add_node("d", lambda s: {"d": s["c"] + 1})
    g.add_edge(START, "a")
    g.add_edge("a", "fetch")
    g.add_edge("fetch", "b")
    g.add_edge("b", "c")
    g.add_edge("c", "d")
    g.add_edge("d", END)
    g.compile()
    return g


async def gathered(g: Graph, inputs: list[dict], concurrency: int) -> float:
    """The same runs as ainvoke calls under a semaphore, all scheduled at once."""
    gate = asyncio.Semaphore(concurrency)

    async def one(value: dict) -> None:
        async with gate:
            result = await g.ainvoke(value)
            assert result.outcome == "done", result.reason

    t0 = time.perf_counter()
    await asyncio.gather(*(one(value) for value in inputs))
    return time.perf_counter() - t0


async def pooled(g: Graph, inputs: list[dict], concurrency: int) -> float:
    """The same runs as ainvoke calls from ``concurrency`` tasks that share the inputs: a batch's
    shape without its rows, progress and budgets, so the difference is what the batch itself costs."""
    remaining = iter(inputs)

    async def worker() -> None:
        for value in remaining:
            result = await g.ainvoke(value)
            assert result.outcome == "done", result.reason

    t0 = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return time.perf_counter() - t0


async def batched(g: Graph, inputs: list[dict], concurrency: int) -> float:
    t0 = time.perf_counter()
    rows = await g.abatch(inputs, concurrency=concurrency, progress=False, table="rows")
    elapsed = time.perf_counter() - t0
    assert all(row.outcome == "done" for row in rows), [row for row in rows if row.outcome != "done"][:3]
    return elapsed


def spread(times: list[float], scale: float = 1.0, unit: str = "s", digits: int = 3) -> str:
    return f"{min(times) * scale:.{digits}f} {unit} (rounds: {min(times) * scale:.{digits}f}-{max(times) * scale:.{digits}f})"


async def part_one(runs: int, concurrency: int, rounds: int) -> None:
    inputs = [{"n": i} for i in range(runs)]
    many = inputs * 5  # the engine's own time is short: more runs, so the noise of one round weighs less
    slow, fast = five_nodes(0.020), five_nodes(0.0)
    ideal = runs * 0.020 / concurrency
    await batched(slow, inputs[:200], concurrency)  # warm up
    await pooled(fast, inputs, concurrency)
    times: dict[str, list[float]] = {"batch": [], "pool": [], "gather": [], "batch0": [], "pool0": []}
    for _ in range(rounds):
        times["batch"].append(await batched(slow, inputs, concurrency))
        times["pool"].append(await pooled(slow, inputs, concurrency))
        times["gather"].append(await gathered(slow, inputs, concurrency))
        times["batch0"].append(await batched(fast, many, concurrency))
        times["pool0"].append(await pooled(fast, many, concurrency))
    best = min(times["batch"])
    print(
        f"1. {runs:,} runs of a 5-node graph, one node awaits 20 ms, concurrency {concurrency} (best of {rounds} rounds)"
    )
    print(f"   ideal (runs x 20 ms / concurrency)            {ideal:.3f} s")
    print(
        f"   g.abatch                                      {spread(times['batch'])}  = {best / ideal:.2f}x ideal (target <= 1.5x)"
    )
    print(
        f"   g.ainvoke from {concurrency} tasks sharing the inputs   {spread(times['pool'])}  = {min(times['pool']) / ideal:.2f}x ideal"
    )
    print(
        f"   g.ainvoke under a Semaphore({concurrency}), gathered   {spread(times['gather'])}  = {min(times['gather']) / ideal:.2f}x ideal"
    )
    per_batch, per_pool = min(times["batch0"]) / len(many) * 1e6, min(times["pool0"]) / len(many) * 1e6
    print(
        f"   engine time per run ({len(many):,} runs, the node awaiting nothing): g.abatch {per_batch:.0f} us, g.ainvoke from {concurrency} tasks "
        f"{per_pool:.0f} us ({(per_batch / per_pool - 1) * 100:+.0f}%)"
    )


async def part_two(calls: int, concurrency: int, rounds: int, tokens: int) -> None:
    server, base_url = start_server(tokens)
    try:
        client = openai.AsyncOpenAI(base_url=base_url, api_key="bench", max_retries=0)
        model = OpenAIModel("bench", base_url=base_url, api_key="bench", max_retries=0)
        g = Graph("llm-batch", state=MessagesState)
        g.add_node("agent", llm_node(SYSTEM, model=model))
        g.add_edge(START, "agent")
        g.add_edge("agent", END)
        g.compile()
        inputs = [{"messages": [UserMessage(content=QUESTION)]} for _ in range(calls)]

        async def bare_call() -> str:
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

        async def bare_at(width: int, count: int) -> float:
            """``count`` calls from ``width`` tasks sharing them: the shape of a batch."""
            remaining = iter(range(count))

            async def worker() -> None:
                for _ in remaining:
                    await bare_call()

            t0 = time.perf_counter()
            await asyncio.gather(*(worker() for _ in range(width)))
            return time.perf_counter() - t0

        async def bare() -> float:
            return await bare_at(concurrency, calls)

        # Warm both connection pools at the concurrency measured, a few new connections at a time
        # (the server's listen backlog is 5: a burst of new connections gets some reset).
        width = 4
        while True:
            await bare_at(min(width, concurrency), 2 * width)
            await batched(g, inputs[: 2 * width], min(width, concurrency))
            if width >= concurrency:
                break
            width += 4
        bare_times, batch_times, pool_times = [], [], []
        for _ in range(rounds):
            bare_times.append(await bare())
            batch_times.append(await batched(g, inputs, concurrency))
            pool_times.append(await pooled(g, inputs, concurrency))
        await client.close()
        await model.aclose()
    finally:
        server.terminate()
        server.wait()
    b, n = calls / min(bare_times), calls / min(batch_times)
    print(
        f"2. {calls} streamed calls ({tokens}-piece replies) to the local OpenAI-compatible server, concurrency {concurrency}"
    )
    print(f"   bare openai client                          {b:8.0f} calls/s  ({spread(bare_times)} per round)")
    print(f"   batch of a 1-node llm_node graph            {n:8.0f} calls/s  ({spread(batch_times)} per round)")
    p = calls / min(pool_times)
    print(
        f"   g.ainvoke from {concurrency} tasks, no batch           {p:8.0f} calls/s  ({spread(pool_times)} per round)"
    )
    print(f"   batch / bare throughput: {n / b * 100:.0f}% (target >= 90%); batch / ainvoke: {n / p * 100:.0f}%")


def part_ray(runs: int, concurrency: int, rounds: int) -> None:
    # ---- RAY EXECUTOR: its figure goes here -----------------------------------------------
    # The same 1,000 runs as part 1 with executor="ray" (nbgraph[ray], a local Ray cluster and a
    # Redis checkpointer), printed in the same format beside the local batch's figure.
    # ----------------------------------------------------------------------------------------
    import tempfile

    import ray

    sys.path.insert(0, os.path.join(HERE, "..", "tests"))
    from redis_server import redis_server

    from nbgraph import RedisCheckpointer
    from nbgraph.batch import Job, run_job
    from nbgraph.batch.ray import RayExecutor

    rounds = min(rounds, 3)  # (a round on Ray takes seconds, not tenths)
    t0 = time.perf_counter()
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    started = time.perf_counter() - t0
    g = five_nodes(0.020)
    inputs = [{"n": i} for i in range(runs)]
    ideal = runs * 0.020 / concurrency
    try:
        with tempfile.TemporaryDirectory() as folder, redis_server(folder) as url:
            store = RedisCheckpointer(url)
            executor = RayExecutor()

            def one(executor: object) -> float:
                t0 = time.perf_counter()
                rows = g.batch(
                    inputs, concurrency=concurrency, checkpointer=store, executor=executor, progress=False, table="rows"
                )
                elapsed = time.perf_counter() - t0
                assert all(row.outcome == "done" for row in rows), [row for row in rows if row.outcome != "done"][:3]
                return elapsed

            @ray.remote(max_retries=3)
            def task(graph: Graph, job: Job, spec: object) -> object:
                from nbgraph.batch.ray import _rebuild_store

                done = asyncio.run(run_job(graph, job._replace(checkpointer=_rebuild_store(spec))))
                return done._replace(result=None)

            def tasks(count: int) -> float:
                """One plain Ray task per input (what the executor does not do), for the comparison."""
                from nbgraph.batch.ray import _store_spec

                spec = ray.put(_store_spec(store))
                bare = Graph("five")
                bare.__dict__.update({**g.__dict__, "checkpointer": None, "_plan": None})
                t0 = time.perf_counter()
                refs = [task.remote(bare, Job(i, {"n": i}, f"tasks-{t0}/{i}"), spec) for i in range(count)]
                assert all(done.row.outcome == "done" for done in ray.get(refs))
                return time.perf_counter() - t0

            one(executor)  # warm up: the actors start
            times: dict[str, list[float]] = {"ray": [], "local": []}
            for _ in range(rounds):
                times["ray"].append(one(executor))
                times["local"].append(one(None))
            small = max(runs // 5, 1)
            task_time = min(tasks(small) for _ in range(2))
            executor.shutdown()
    finally:
        ray.shutdown()
    print(
        f"3. the same {runs:,} runs with a Redis store, concurrency {concurrency}, executor='ray' on a local Ray runtime "
        f"(num_cpus=2, ray.init took {started:.1f} s; best of {rounds} rounds)"
    )
    print(
        f"   g.batch, executor='ray' (2 async actors)       {spread(times['ray'])}  = {min(times['ray']) / ideal:.2f}x ideal, "
        f"{runs / min(times['ray']):.0f} runs/s"
    )
    print(
        f"   g.batch, local executor, same Redis store       {spread(times['local'])}  = {min(times['local']) / ideal:.2f}x ideal, "
        f"{runs / min(times['local']):.0f} runs/s"
    )
    print(
        f"   one plain Ray task per input ({small} runs)           {small / task_time:.0f} runs/s (why the executor uses async actors)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--calls", type=int, default=240)
    parser.add_argument("--concurrency", type=int, default=100)
    parser.add_argument("--llm-concurrency", type=int, default=16)
    parser.add_argument("--tokens", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    print(f"python {sys.version.split()[0]}, openai {openai.__version__}")
    asyncio.run(part_one(args.runs, args.concurrency, args.rounds))
    asyncio.run(part_two(args.calls, args.llm_concurrency, args.rounds, args.tokens))
    part_ray(args.runs, args.concurrency, args.rounds)


if __name__ == "__main__":
    main()
