"""Start a map whose upper-case items ask for a name, or resume it with answers by pause id.

Run by ``forked.Forker``: ``main(job)`` in a process forked per job, ``warm()`` once in their parent.
"""

from typing import Annotated

import pydantic

from nbgraph import END, START, Graph, RedisCheckpointer, Resume, SQLiteCheckpointer, append


class Names(pydantic.BaseModel):
    items: list[str] = []
    got: Annotated[list[str], append] = []
    done: bool = False


def build(log):
    def note(line):
        with open(log, "a") as out:
            out.write(line + "\n")

    async def work(item, ctx):
        note(f"enter {item}")
        answer = await ctx.request_input(f"name for {item}?") if item.isupper() else "-"
        note(f"exit {item}")
        return {"got": [f"{item}={answer}"]}

    g = Graph("names", state=Names)
    g.add_node("plan", lambda s: note("enter plan"))
    g.add_node("work", work)
    g.add_node("done", lambda s: note("enter done") or {"done": True})
    g.add_edge(START, "plan")
    g.add_edge("plan", "work", each=lambda s: s.items)
    g.add_edge("work", "done")
    g.add_edge("done", END)
    return g


def warm():
    build("unused").compile()
    Names(got=["x"]).model_dump(mode="json")


def main(job):
    if job["kind"] == "sqlite":
        store = SQLiteCheckpointer(job["where"])
    else:
        store = RedisCheckpointer(job["where"], prefix=job["prefix"])
    g = build(job["log"])
    entered = []

    def listen(e):
        if e.type == "node-enter":
            entered.append([e.path, e.branch, e.rerun])

    if job["command"] == "start":
        result = g.invoke({"items": job["items"]}, thread=job["thread"], checkpointer=store, on_event=listen)
    else:
        result = g.invoke(Resume(job["thread"], job["answers"]), checkpointer=store, on_event=listen)
    return {
        "outcome": result.outcome,
        "reason": result.reason,
        "got": result.state.got,
        "done": result.state.done,
        "pauses": [{"id": p.id, "branch": p.branch, "prompt": p.prompt} for p in result.pauses],
        "entered": entered,
    }
