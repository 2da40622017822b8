"""The batch view from Python: its traits as a batch runs, coalesced updates, an edge's inputs, compare."""

from __future__ import annotations

import asyncio

import pydantic
import pytest
from turns import wait_until, within

from nbgraph import END, START, Batch, Graph, compare
from nbgraph.batch_view import BatchView


class Numbers(pydantic.BaseModel):
    n: int
    route: str = ""


def routed(*, odd_when=lambda n: n % 2 == 1, fail_on=(), gate: dict | None = None) -> Graph:
    """START -> work -> odd | even -> END; ``work`` uses 10 tokens and $0.25, fails on ``fail_on``,
    and waits for ``gate[n]`` (an asyncio.Event) when there is one."""

    async def work(state, ctx):
        if gate is not None and state.n in gate:
            await gate[state.n].wait()
        await asyncio.sleep(0)
        if state.n in fail_on:
            raise ValueError(f"no {state.n}")
        ctx.add_usage(tokens=10, cost=0.25)
        return {"route": "odd" if odd_when(state.n) else "even"}

    g = Graph("numbers", state=Numbers)
    g.add_node("work", work)
    g.add_node("odd", lambda s: None)
    g.add_node("even", lambda s: None)
    g.add_edge(START, "work")
    g.add_edge("work", "odd", when=lambda s: s.route == "odd", label="odd")
    g.add_edge("work", "even")
    g.add_edge("odd", END)
    g.add_edge("even", END)
    return g


class Updates:
    """Counts the state updates a view sends through its real comm."""

    def __init__(self, view: BatchView) -> None:
        self.sent: list[dict] = []
        original = view.comm.publish_msg

        def publish(msg_type, data=None, metadata=None, buffers=None, **keys):
            if data and data.get("method") == "update" and "counts" in data.get("state", {}):
                self.sent.append(data["state"])
            return original(msg_type, data=data, metadata=metadata, buffers=buffers, **keys)

        view.comm.publish_msg = publish


async def test_the_view_shows_the_counts_and_each_edge_s_runs_once_the_batch_ends():
    batch = Batch(
        routed(fail_on=(3,)), {f"i{n}": {"n": n} for n in range(6)}, concurrency=2, progress=False, table="rows"
    )
    view = BatchView.for_batch(batch)
    assert view.counts["total"] == 6 and view.counts["waiting"] == 6 and not view.counts["finished"]
    assert [node["id"] for node in view.dag["nodes"]] == [START, "work", "odd", "even", END]
    await within(batch.run())
    counts = view.counts
    assert {
        k: counts[k] for k in ("total", "ended", "done", "failed", "running", "waiting", "tokens", "cost", "finished")
    } == {
        "total": 6,
        "ended": 6,
        "done": 5,
        "failed": 1,
        "running": 0,
        "waiting": 0,
        "tokens": 50,
        "cost": 1.25,
        "finished": True,
    }
    assert counts["outcomes"] == {"done": 5, "failed": 1} and counts["throughput"] > 0 and counts["stopped"] is None
    assert view.edges == {
        f"{START}\u2192work": 6,
        "work\u2192odd": 2,
        "work\u2192even": 3,
        f"odd\u2192{END}": 2,
        f"even\u2192{END}": 3,
    }


async def test_however_many_runs_end_the_updates_are_coalesced_and_the_end_is_sent_at_once():
    batch = Batch(routed(), [{"n": n} for n in range(40)], concurrency=8, progress=False, table="rows")
    view = BatchView(batch.graph)
    updates = Updates(view)
    view.watch(batch.progress, max_rate=0.001)  # one update per 1,000 s at most
    await within(batch.run())
    # 80 starts and ends: one update when the view began to follow, one at once at the end.
    assert len(updates.sent) == 2
    assert updates.sent[-1]["counts"]["ended"] == 40 and updates.sent[-1]["counts"]["finished"] is True
    assert updates.sent[-1]["edges"][f"{START}\u2192work"] == 40


async def test_what_ends_within_an_interval_is_sent_when_the_interval_is_up_even_if_nothing_else_happens():
    gate = {5: asyncio.Event()}
    batch = Batch(routed(gate=gate), [{"n": n} for n in range(6)], concurrency=6, progress=False, table="rows")
    view = BatchView(batch.graph)
    view.watch(batch.progress, max_rate=5)  # the five quick runs end well within one interval
    five = asyncio.Event()
    view.observe(lambda change: change["new"].get("ended") == 5 and five.set(), "counts")
    task = asyncio.ensure_future(batch.run())
    await within(five.wait())  # no run ends after these five until the gate opens: the interval's flush sent them
    assert view.counts["running"] == 1 and view.counts["done"] == 5 and not view.counts["finished"]
    assert view.edges["work\u2192odd"] == 2
    gate[5].set()
    await within(task)
    assert view.counts["ended"] == 6 and view.counts["finished"]


async def test_an_edge_asked_for_lists_the_inputs_that_took_it_through_the_view_s_messages():
    batch = Batch(routed(), {"a": {"n": 1}, "b": {"n": 2}, "c": {"n": 3}}, progress=False, table="rows")
    view = BatchView.for_batch(batch)
    await within(batch.run())
    replies = []
    original = view.send
    view.send = lambda content, buffers=None: (replies.append(content), original(content, buffers))
    view._handle_custom_msg({"type": "inputs", "edge": "work\u2192odd"}, [])
    view._handle_custom_msg({"type": "inputs", "edge": "odd\u2192even"}, [])
    view._handle_custom_msg({"type": "inputs"}, [])
    view._handle_custom_msg({"type": "pan"}, [])
    assert replies[0] == {"type": "inputs", "edge": "work\u2192odd", "ids": ["a", "c"], "count": 2}
    assert replies[1] == {"type": "inputs", "edge": "odd\u2192even", "ids": [], "count": 0}
    assert replies[2] == {"type": "error", "message": "the batch view sent 'inputs' without 'edge' (a string)"}
    assert replies[3] == {
        "type": "error",
        "message": "the batch view sent an unknown message type 'pan'; expected one of: hello, inputs, stop",
    }


async def test_stop_in_the_view_starts_no_more_runs_and_ends_those_under_way_resumable(tmp_path):
    from nbgraph import SQLiteCheckpointer

    gate = {n: asyncio.Event() for n in range(6)}
    store = SQLiteCheckpointer(tmp_path / "runs.db")
    inputs = {f"i{n}": {"n": n} for n in range(6)}
    batch = Batch(routed(gate=gate), inputs, concurrency=2, checkpointer=store, batch="b", progress=False, table="rows")
    view = BatchView.for_batch(batch)
    assert view.stoppable
    task = asyncio.ensure_future(batch.run())
    await wait_until(lambda: batch.progress.running == 2)
    assert view.handle({"type": "stop"}) == {"type": "stopped"}
    rows = await within(task)
    assert [row.outcome for row in rows].count("aborted") == 2  # the two under way
    assert not any(row.outcome == "done" for row in rows) and not view.stoppable
    for event in gate.values():
        event.set()
    again = await within(
        Batch(routed(gate=gate), inputs, checkpointer=store, batch="b", progress=False, table="rows").run()
    )
    assert [row.outcome for row in again] == ["done"] * 6  # the same batch again goes on
    with pytest.raises(ValueError, match="follows no batch it can stop"):
        BatchView(routed()).handle({"type": "stop"})


async def test_a_comparison_draws_the_edges_each_version_took_and_lists_the_inputs_that_changed():
    before, after = routed(), routed(odd_when=lambda n: n == 1)  # the edited routing cell
    inputs = {"one": {"n": 1}, "two": {"n": 2}, "three": {"n": 3}, "four": {"n": 4}}
    table = await within(asyncio.to_thread(compare, before, after, inputs, progress=False, table="rows"))
    view = BatchView.for_comparison(table, after, before)
    assert view.mode == "compare"
    compared = view.compared
    assert compared["total"] == 4
    assert compared["edges"]["work\u2192odd"] == {"a": 2, "b": 1}
    assert compared["edges"]["work\u2192even"] == {"a": 2, "b": 3}
    assert compared["edges"][f"{START}\u2192work"] == {"a": 4, "b": 4}
    assert compared["rows"] == [
        {
            "id": "three",
            "changed": ["path"],
            "path_a": ["work", "odd"],
            "path_b": ["work", "even"],
            "outcome_a": "done",
            "outcome_b": "done",
            "cost_a": 0.25,
            "cost_b": 0.25,
        }
    ]
    reply = view.handle({"type": "inputs", "edge": "work\u2192odd"})
    assert reply == {
        "type": "inputs",
        "edge": "work\u2192odd",
        "a": ["one", "three"],
        "b": ["one"],
        "count_a": 2,
        "count_b": 1,
    }


def test_a_comparison_without_the_graphs_draws_the_nodes_and_edges_of_the_paths():
    from nbgraph.batch import Difference

    table = [
        Difference("x", ("path",), ("plan", "search"), ("plan", "answer"), "done", "done", 0.1, 0.1),
        Difference("y", ("outcome",), ("plan",), ("plan",), "done", "failed", 0.1, 0.1),
    ]
    view = BatchView.for_comparison(table)
    assert sorted(node["id"] for node in view.dag["nodes"]) == sorted([START, "plan", "search", "answer", END])
    assert view.compared["edges"] == {
        f"{START}\u2192plan": {"a": 2, "b": 2},
        "plan\u2192search": {"a": 1, "b": 0},
        f"search\u2192{END}": {"a": 1, "b": 0},
        "plan\u2192answer": {"a": 0, "b": 1},
        f"answer\u2192{END}": {"a": 0, "b": 1},
        f"plan\u2192{END}": {"a": 1, "b": 0},
    }
    assert [row["id"] for row in view.compared["rows"]] == ["x", "y"]


def test_the_notebook_layer_registers_the_batch_and_comparison_views():
    from nbgraph import _display  # noqa: F401
    from nbgraph.batch import _batch
    from nbgraph.batch_view import show_batch, show_comparison

    assert _batch._views == [show_batch] and _batch._compare_views == [show_comparison]
    assert repr(BatchView(routed())) == "BatchView(graph='numbers', mode='batch')"


def test_the_batch_view_handles_every_kind_its_protocol_declares(monkeypatch, caplog):
    from nbgraph import _observer
    from nbgraph._protocol import PROTOCOL, MessageError

    monkeypatch.setattr(_observer.Browser, "seen", False)
    view = BatchView(routed())
    replies = []
    original = view.send
    view.send = lambda content, buffers=None: (replies.append(content), original(content, buffers))
    assert sorted(PROTOCOL["batch"]["to_kernel"]) == ["hello", "inputs", "stop"]
    view._handle_custom_msg({"type": "hello"}, [])
    assert _observer.Browser.seen and replies == []  # hello is heard, not answered
    view._handle_custom_msg({"type": "inputs", "edge": "work\u2192odd"}, [])
    view._handle_custom_msg({"type": "stop"}, [])
    assert replies == [
        {"type": "inputs", "edge": "work\u2192odd", "ids": [], "count": 0},
        {"type": "error", "message": "this view follows no batch it can stop"},
    ]
    with pytest.raises(MessageError, match="the batch view sent 'inputs' whose 'edge' is not a string: 3"):
        view.handle({"type": "inputs", "edge": 3})
    # Refused, a message is answered with what was wrong and said in the kernel's log.
    view._handle_custom_msg({"type": "pan"}, [])
    said = "the batch view sent an unknown message type 'pan'; expected one of: hello, inputs, stop"
    assert replies[-1] == {"type": "error", "message": said}
    assert [r.getMessage() for r in caplog.records if r.name == "nbgraph.view"] == [f"refused a message: {said}"]
