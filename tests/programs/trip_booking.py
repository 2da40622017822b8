"""ask (which city?) -> book -> END on a SQLite file, one call a process.

    python trip_booking.py DB start
    python trip_booking.py DB resume THREAD ANSWER

prints the outcome, the thread and what was booked ("-" for nothing yet).
"""

import sys

from nbgraph import END, START, Graph, Resume, SQLiteCheckpointer


def build():
    async def ask(state, ctx):
        return {"city": await ctx.request_input("Which city?")}

    g = Graph("trip")
    g.add_node("ask", ask)
    g.add_node("book", lambda s: {"booked": f"hotel in {s.city}"})
    g.add_edge(START, "ask")
    g.add_edge("ask", "book")
    g.add_edge("book", END)
    return g


if __name__ == "__main__":
    store = SQLiteCheckpointer(sys.argv[1])
    if sys.argv[2] == "start":
        result = build().invoke({}, checkpointer=store)
    else:
        result = build().invoke(Resume(sys.argv[3], sys.argv[4]), checkpointer=store)
    print(result.outcome, result.thread, result.state.get("booked", "-"))
