"""Start a trip that asks for a city, or resume it at the same moment as other processes.

Run by ``forked.Forker``: ``main(job)`` in a process forked per job, ``warm()`` once in their parent.
A process that wins the thread stays inside ``book`` until every racer has tried to take it,
so the others find it held, not finished.
"""

import os
import time
from pathlib import Path

from nbgraph import END, START, Graph, PostgresCheckpointer, Resume, ThreadBusy

WAIT = 30.0
"""Seconds the winner waits for the others before it fails (a racer that never came, not a slow one)."""


def build(tried=None, racers=0):
    async def ask(state, ctx):
        return {"city": await ctx.request_input("Which city?")}

    def book(state):
        if tried is not None:
            deadline = time.monotonic() + WAIT
            while len(list(tried.iterdir())) < racers - 1:  # bounded polling of the others' marks
                assert time.monotonic() < deadline, "the other racers never tried"
                time.sleep(0.01)
        return {"booked": f"hotel in {state.city}", "by": os.getpid()}

    g = Graph("trip")
    g.add_node("ask", ask)
    g.add_node("book", book)
    g.add_edge(START, "ask")
    g.add_edge("ask", "book")
    g.add_edge("book", END)
    return g


def warm():
    import psycopg_pool  # noqa: F401  (imported once in the parent; pools start their threads per job)

    build().compile()


def main(job):
    store = PostgresCheckpointer(job["dsn"])
    if job["command"] == "start":
        return {"outcome": build().invoke({}, thread=job["thread"], checkpointer=store).outcome}
    tried = Path(job["tried"])
    try:
        result = build(tried, job["racers"]).invoke(Resume(job["thread"], job["city"]), checkpointer=store)
    except ThreadBusy as busy:
        (tried / str(os.getpid())).touch()
        return {"busy": str(busy), "holder": busy.holder.pid}
    return {"outcome": result.outcome, "state": result.state, "pid": os.getpid()}
