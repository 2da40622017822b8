"""Start a run with breakpoints (or in step mode), or resume it with a fresh graph object.

Run by ``forked.Forker``: ``main(job)`` in a process forked per job.
"""

from nbgraph import END, START, Graph, Resume, SQLiteCheckpointer


def build(breakpoints):
    g = Graph("chain")
    for name in "abcd":
        g.add_node(name, lambda s, name=name: {"path": s.get("path", "") + name})
    g.add_edge(START, "a")
    g.add_edge("a", "b")
    g.add_edge("b", "c")
    g.add_edge("c", "d")
    g.add_edge("d", END)
    if breakpoints is not None:
        g.breakpoints(**breakpoints)
    return g


def main(job):
    g = build(job.get("breakpoints"))
    store = SQLiteCheckpointer(job["db"])
    if job["command"] == "start":
        result = g.invoke({}, thread=job["thread"], checkpointer=store, stepping=job.get("stepping", False))
    else:
        result = g.invoke(Resume(job["thread"], job.get("answer")), checkpointer=store)
    return {
        "outcome": result.outcome,
        "path": result.state.get("path", ""),
        "pause": [result.pauses[0].at, result.pauses[0].path] if result.pauses else None,
    }
