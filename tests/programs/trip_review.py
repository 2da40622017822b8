"""ask (input) -> review (approval) -> END, runnable as a script against a SQLite file.

    python trip_review.py DB start THREAD
    python trip_review.py DB resume THREAD ANSWER

prints the outcome, then the kind and id of the open pause ("-" for none).
"""

import sys

from nbgraph import END, START, Graph, Resume, SQLiteCheckpointer


def build():
    async def ask(state, ctx):
        return {"city": await ctx.request_input("Which city?")}

    g = Graph("trip")
    g.add_node("ask", ask)
    g.add_node("review", lambda s: {"plan": "a week in " + s.city}, approval=True)
    g.add_edge(START, "ask")
    g.add_edge("ask", "review")
    g.add_edge("review", END)
    return g


if __name__ == "__main__":
    store = SQLiteCheckpointer(sys.argv[1])
    if sys.argv[2] == "start":
        result = build().invoke({}, thread=sys.argv[3], checkpointer=store)
    else:
        result = build().invoke(Resume(sys.argv[3], sys.argv[4]), checkpointer=store)
    pause = result.pauses[0] if result.pauses else None
    print(result.outcome, pause.kind if pause else "-", pause.id if pause else "-")
