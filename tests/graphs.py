"""Small graphs that several test files build alike."""

from __future__ import annotations

from typing import Any

from nbgraph import END, START, Graph


def trip_graph(name: str = "trip") -> Graph:
    """ask (asks for a city) -> book (a hotel there) -> END."""

    async def ask(state, ctx):
        return {"city": await ctx.request_input("Which city?")}

    g = Graph(name)
    g.add_node("ask", ask)
    g.add_node("book", lambda s: {"booked": f"hotel in {s.city}"})
    g.add_edge(START, "ask")
    g.add_edge("ask", "book")
    g.add_edge("book", END)
    return g


def one_node(fn: Any, state: Any = None, **options: Any) -> Graph:
    """START -> node -> END: ``fn`` as node "node" of a graph "one" on ``state``."""
    g = Graph("one", state=state, **options)
    g.add_node("node", fn)
    g.add_edge(START, "node")
    g.add_edge("node", END)
    return g
