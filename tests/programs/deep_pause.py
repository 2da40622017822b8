"""outer: c -> mid (b -> inner (a -> ask -> after)) -> end; every call leaves a line in a log.

Run by ``forked.Forker``: ``main(job)`` in a process forked per job, ``warm()`` once in their parent.
"""

from nbgraph import END, START, Graph, RedisCheckpointer, Resume, SQLiteCheckpointer


def chain(name, *nodes):
    g = Graph(name)
    for node, fn in nodes:
        g.add_node(node, fn)
    names = [START, *(node for node, _ in nodes), END]
    for source, target in zip(names, names[1:], strict=False):
        g.add_edge(source, target)
    return g


def build(log):
    def note(line):
        with open(log, "a") as out:
            out.write(line + "\n")

    def count(name):
        def fn(state):
            note(name)
            return {"n": state.get("n", 0) + 1}

        return fn

    async def ask(state, ctx):
        note("ask")
        answer = await ctx.request_input("deep?")
        note("ask answered")
        return {"answer": answer}

    inner = chain("inner", ("a", count("a")), ("ask", ask), ("after", count("after")))
    mid = chain("mid", ("b", count("b")), ("inner", inner))
    return chain("outer", ("c", count("c")), ("mid", mid), ("end", lambda s: note("end") or {"final": s["n"]}))


def warm():
    build("unused").compile()


def main(job):
    if job["kind"] == "sqlite":
        store = SQLiteCheckpointer(job["where"])
    else:
        store = RedisCheckpointer(job["where"], prefix=job["prefix"])
    g = build(job["log"])
    entered = []

    def listen(e):
        if e.type == "node-enter":
            entered.append([e.path, e.rerun])

    if job["command"] == "start":
        result = g.invoke({}, thread=job["thread"], checkpointer=store, on_event=listen)
    else:
        result = g.invoke(Resume(job["thread"], job["answers"]), checkpointer=store, on_event=listen)
    return {
        "outcome": result.outcome,
        "reason": result.reason,
        "state": result.state,
        "entered": entered,
        "pauses": [{"id": p.id, "path": p.path} for p in result.pauses],
        "threads": store.threads(),
        "history": [[s.step, s.path] for s in store.history(job["thread"])],
    }
