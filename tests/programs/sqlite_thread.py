"""A thread on a SQLite file, from a process of its own: ``python sqlite_thread.py run FILE
THREAD`` runs a twenty-step count to its end; ``python sqlite_thread.py read FILE THREAD``
prints the thread's last checkpoint as JSON."""

from __future__ import annotations

import json
import sys
from typing import Annotated

import pydantic

from nbgraph import END, START, Graph, SQLiteCheckpointer, append

STEPS = 20


class Count(pydantic.BaseModel):
    n: int = 0
    seen: Annotated[list[str], append] = []


def count_graph() -> Graph:
    g = Graph("count", state=Count, max_same_node=STEPS)
    g.add_node("count", lambda s: {"n": s.n + 1, "seen": [f"step {s.n + 1}"]})
    g.add_edge(START, "count")
    g.add_edge("count", "count", when=lambda s: s.n < STEPS, label=f"n < {STEPS}")
    g.add_edge("count", END)
    return g


def main(command: str, path: str, thread: str) -> None:
    store = SQLiteCheckpointer(path)
    if command == "run":
        result = count_graph().invoke({}, thread=thread, checkpointer=store)
        assert result.outcome == "done", result.reason
        return
    last = store.get(thread)
    assert last is not None, f"no thread {thread!r} in {path}"
    print(
        json.dumps(
            {
                "step": last.step,
                "status": last.status,
                "state": dict(last.state),
                "next": [frame.node for frame in last.frames],
                "steps": len(store.history(thread)),
            }
        )
    )


if __name__ == "__main__":
    main(*sys.argv[1:])
