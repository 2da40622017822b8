"""Start a map of five asking branches, or answer one of its pauses by id, in turn with the others.

Run by ``forked.Forker``: ``main(job)`` in a process forked per job, ``warm()`` once in their parent.
"""

import fcntl
from typing import Annotated

import pydantic

from nbgraph import END, START, Graph, RedisCheckpointer, Resume, ResumeError, Send, SQLiteCheckpointer, merge


class Asked(pydantic.BaseModel):
    items: list[str] = []
    answers: Annotated[dict[str, object], merge] = {}


async def ask(item, ctx):
    return {"answers": {item: await ctx.request_input(f"answer for {item}")}}


def build():
    g = Graph("asking", state=Asked)
    g.add_node("fan", lambda s: [Send("ask", item) for item in s.items], destinations=["ask"])
    g.add_node("ask", ask)
    g.add_edge(START, "fan")
    g.add_edge("ask", END)
    return g


def warm():
    build().compile()


def main(job):
    store = (
        SQLiteCheckpointer(job["where"])
        if job["kind"] == "sqlite"
        else RedisCheckpointer(job["where"], prefix=job["prefix"])
    )
    g = build()
    if job["command"] == "start":
        result = g.invoke({"items": job["items"]}, thread=job["thread"], checkpointer=store)
        return {"pauses": [[p.id, p.prompt[-1]] for p in result.pauses]}
    # Ten processes start at once and take turns in whatever order the lock hands them out:
    # each resumes from the thread as the ones before it left it.
    with open(job["turns"], "a") as turns:
        fcntl.flock(turns, fcntl.LOCK_EX)
        try:
            result = g.invoke(Resume(job["thread"], {job["pause"]: job["answer"]}), checkpointer=store)
        except ResumeError as refused:
            return {"refused": str(refused)}
        return {"outcome": result.outcome, "answers": result.state.answers, "open": len(result.pauses)}
