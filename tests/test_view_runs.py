"""Runs started from a view: fork by click, a click that resumes an ended run, and cells that
change a run while it waits (a re-run %%node swaps its code in, a re-run %%graph offers a fork)."""

from __future__ import annotations

from collections import Counter

import pytest
from IPython.core.interactiveshell import InteractiveShell
from turns import wait_until, within

from nbgraph import END, START, Graph, SQLiteCheckpointer
from nbgraph.widget import GraphView, graph_redefined


def triage(calls: Counter, *, urgent_to: str = "escalate") -> Graph:
    """classify -> (escalate | reply) -> END; ``urgent_to`` is the routing a cell would edit."""

    def node(name):
        def run(state):
            calls[name] += 1
            return {"trail": [*state.get("trail", []), name]}

        run.__name__ = name
        return run

    g = Graph("triage")
    for name in ("read", "classify", "escalate", "reply"):
        g.add_node(name, node(name))
    g.add_edge(START, "read")
    g.add_edge("read", "classify")
    g.add_edge("classify", urgent_to, when=lambda s: "urgent" in s["text"], label="urgent")
    g.add_edge("classify", "reply" if urgent_to == "escalate" else "escalate")
    g.add_edge("escalate", END)
    g.add_edge("reply", END)
    return g


async def test_fork_from_here_reuses_the_earlier_steps_and_draws_the_new_path_beside_the_old():
    calls: Counter = Counter()
    g = triage(calls)
    run = g.start({"text": "urgent: the server is down"}, display=False)
    view = GraphView.for_run(run)
    assert (await within(run)).path == ["read", "classify", "escalate"]
    assert view.can_fork
    # The routing cell is edited: urgent mail now gets a reply.
    fixed = triage(calls, urgent_to="reply")
    graph_redefined(fixed)
    assert view.handle({"type": "fork", "step": 2})
    fork = view.observer.run
    result = await within(fork)
    assert result.path == ["read", "classify", "reply"]
    assert calls == Counter(read=1, classify=1, escalate=1, reply=1)  # nothing before the fork ran again
    await wait_until(lambda: view.status.get("state") == "done")
    assert view.previous == {
        "thread": run.thread,
        "step": 2,
        "visits": {"read": 1, "classify": 1, "escalate": 1},
        "fired": {"__start__→read": 1, "read→classify": 1, "classify→escalate": 1, "escalate→__end__": 1},
    }
    assert view.visits == {"read": 1, "classify": 1, "reply": 1}
    assert view.fired["classify→reply"] == 1 and "classify→escalate" not in view.fired
    assert any(f"fork of {run.thread} after step 2" in line for line in view.log)
    assert [edge["label"] for edge in view.dag["edges"] if edge["from"] == "classify" and edge["to"] == "reply"] == [
        "urgent"
    ]


async def test_a_fork_of_a_stored_thread_from_a_replay_view(tmp_path):
    calls: Counter = Counter()
    store = SQLiteCheckpointer(tmp_path / "runs.db")
    g = triage(calls)
    done = g.invoke({"text": "urgent"}, checkpointer=store, thread="mail-1")
    view = GraphView.replay((store, "mail-1"), g)
    assert view.can_fork
    fork = view.fork(1, graph=triage(calls, urgent_to="reply"))
    assert (await within(fork)).path == ["read", "classify", "reply"]
    assert calls == Counter(read=1, classify=2, escalate=1, reply=1)  # classify is after step 1: it runs again
    assert view.previous["thread"] == done.thread == "mail-1"
    with pytest.raises(ValueError, match="the run has steps 0 to 3 to fork from, not 9"):
        view.fork(9)


def test_a_trace_has_no_checkpoints_to_fork():
    view = GraphView.replay(triage(Counter()).invoke({"text": "hi"}).to_ndjson(), triage(Counter()))
    assert not view.can_fork
    with pytest.raises(ValueError, match="no run with checkpoints to fork"):
        view.handle({"type": "fork", "step": 1})


async def test_an_answer_to_an_ended_interrupted_run_resumes_it_in_the_view_rerunning_what_the_pause_said():
    asked: list[str] = []

    async def ask(state, ctx):
        asked.append("ask")
        return {"topic": await ctx.request_input("Topic?")}

    g = Graph("asker")
    g.add_node("ask", ask)
    g.add_node("write", lambda s: {"text": f"on {s['topic']}"})
    g.add_edge(START, "ask")
    g.add_edge("ask", "write")
    g.add_edge("write", END)
    run = g.start({}, durable=True, display=False)  # it cannot wait: it ends interrupted
    view = GraphView.for_run(run)
    paused = await within(run)
    assert paused.outcome == "interrupted"
    await wait_until(lambda: view.pending)
    (pause,) = view.pending
    assert pause["reruns"]["note"] == "a resume runs 'ask' again from its start"
    assert not view.handle({"type": "answer", "pause_id": "not-that-one", "value": "x"})
    assert view.handle({"type": "answer", "pause_id": pause["id"], "value": "tides"})
    resumed = await within(view.observer.run)
    assert (resumed.outcome, resumed.state["text"]) == ("done", "on tides")
    assert asked == ["ask", "ask"]  # as the pause said
    await wait_until(lambda: view.status.get("state") == "done")
    assert view.visits == {"ask": 1, "write": 1} and view.pending == []
    assert view.reruns == {"ask": 1}


@pytest.fixture
def shell():
    sh = InteractiveShell.instance()
    sh.run_cell("%load_ext nbgraph", store_history=False)
    sh.user_ns.clear()
    yield sh
    sh.user_ns.clear()


CELL = """START -> ask
ask -> write -> END
"""


async def test_a_re_run_node_cell_reaches_a_waiting_run_that_no_view_shows(shell, capsys):
    shell.run_cell_magic("node", "ask", "return {'topic': await ctx.request_input('Topic?')}")
    shell.run_cell_magic("node", "write", "return {'text': 'old ' + state['topic']}")
    shell.run_cell_magic("graph", "drafts", CELL)
    run = shell.user_ns["drafts"].start({}, display=False)
    other = shell.user_ns["drafts"].start({}, display=False)
    await within(run.next_pause())
    await within(other.next_pause())
    other.answer("first")  # it ends before the cell: nothing to swap into
    assert (await within(other)).state["text"] == "old first"
    capsys.readouterr()
    shell.run_cell_magic("node", "write", "return {'text': 'new ' + state['topic']}")
    said = capsys.readouterr().out
    assert f"its new code is swapped into run {run.thread}" in said and other.thread not in said
    assert run.replaced == ("write",)
    run.answer("tides")
    assert (await within(run)).state["text"] == "new tides"


async def test_a_re_run_node_cell_swaps_its_code_into_the_waiting_run_and_a_graph_cell_offers_a_fork(shell, capsys):
    shell.run_cell_magic("node", "ask", "return {'topic': await ctx.request_input('Topic?')}")
    shell.run_cell_magic("node", "write", "return {'text': 'old ' + state['topic']}")
    shell.run_cell_magic("graph", "drafts", CELL)
    g = shell.user_ns["drafts"]
    run = g.start({}, display=False)
    view = GraphView.for_run(run)
    await within(run.next_pause())
    capsys.readouterr()
    shell.run_cell_magic("node", "write", "return {'text': 'new ' + state['topic']}")
    assert f"its new code is swapped into run {run.thread}" in capsys.readouterr().out
    await wait_until(lambda: view.swapped == ["write"])
    assert any("node write: new code from the re-run cell" in line for line in view.log)

    shell.run_cell_magic("graph", "drafts", "START -> write -> END\n")
    assert f"run {run.thread} of drafts waits: its view offers to fork it" in capsys.readouterr().out
    assert view.redefined["step"] == 0 and "redefined while this run waits" in view.redefined["note"]
    assert view.handle({"type": "fork", "onto": "new"})
    assert not view.handle({"type": "fork", "onto": "new"})  # a second click: done already
    assert (await within(run)).outcome == "aborted"  # the waiting run gave way to its fork
    fork = view.observer.run
    assert fork is not run and fork.plan.graph is shell.user_ns["drafts"]
    await wait_until(lambda: view.observer.run.done)
    assert (await within(fork)).outcome == "failed"  # the new definition starts at write, which needs a topic
    assert [node["id"] for node in view.dag["nodes"]] == [START, "write", END]
