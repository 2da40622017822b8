"""Custom data a node streams (a LangGraph node's ``get_stream_writer()``, an nbgraph node's
``ctx.emit("custom", data=...)``) reaches every listener and the view's log."""

from __future__ import annotations

from typing import TypedDict

from langgraph.config import get_stream_writer
from langgraph.graph import END, START, StateGraph

import nbgraph
import nbgraph.langgraph as nlg


class Job(TypedDict, total=False):
    done: int


def work(state: Job) -> Job:
    write = get_stream_writer()
    for part in (1, 2):
        write({"progress": part, "of": 2})
    return {"done": 2}


def app():
    g = StateGraph(Job)
    g.add_node("work", work)
    g.add_edge(START, "work")
    g.add_edge("work", END)
    return g.compile()


async def test_stream_writer_chunks_reach_listeners_and_the_log():
    heard = []
    run = nlg.start(app(), {}, display=False)
    run.subscribe(heard.append)
    view = nlg.LangGraphView.for_run(run)
    values = await run
    assert values == {"done": 2}
    custom = [event for event in heard if event.type == "custom"]
    assert [(e.path, e.node, e.data) for e in custom] == [
        ("work", "work", {"progress": 1, "of": 2}),
        ("work", "work", {"progress": 2, "of": 2}),
    ]
    assert [line.strip() for line in view.log if "progress" in line] == [
        'work: {"progress": 1, "of": 2}',
        'work: {"progress": 2, "of": 2}',
    ]


async def test_an_nbgraph_node_streams_custom_data_the_same_way():
    async def work(state, ctx):
        for part in (1, 2):
            ctx.emit("custom", data={"progress": part})
        return {"done": 2}

    g = nbgraph.Graph("job")
    g.add_node("work", work)
    g.add_edge(nbgraph.START, "work")
    g.add_edge("work", nbgraph.END)
    heard = []
    result = await g.ainvoke({}, on_event=heard.append)
    assert [(e.node, e.data) for e in heard if e.type == "custom"] == [
        ("work", {"progress": 1}),
        ("work", {"progress": 2}),
    ]
    assert [e.data for e in result.history[0].events if e.type == "custom"] == [{"progress": 1}, {"progress": 2}]
