"""The engine inside a real Jupyter kernel: the cell's loop is already running."""

from __future__ import annotations

import nbformat
import pytest
from kernel_session import KERNEL_HEARS_WHILE_AWAITING
from nbclient import NotebookClient

CELLS = [
    """
import asyncio
from nbgraph import END, START, Graph, Resume

async def fetch(state):
    await asyncio.sleep(0)
    return {"n": state.n + 1}

async def ask(state, ctx):
    return {"answer": await ctx.request_input("Continue?", options=["yes", "no"])}

g = Graph("kernel")
g.add_node("fetch", fetch)
g.add_node("ask", ask)
g.add_edge(START, "fetch")
g.add_edge("fetch", "ask", when=lambda s: s.n > 1, label="n > 1")
g.add_edge("fetch", END)
g.add_edge("ask", END)
from nbgraph.hooks import in_kernel
asyncio.get_running_loop().is_running(), in_kernel()
""",
    # A synchronous invoke() inside the kernel's running loop, with an async node.
    """
result = g.invoke({"n": 0})
print(result.outcome, result.state["n"])
""",
    # It never waits for a person: it ends interrupted and says what to do instead.
    """
paused = g.invoke({"n": 1})
print(paused.outcome)
print("run = g.start(...)" in paused.reason)
print(g.invoke(Resume(paused.thread, "yes")).state["answer"])
""",
    # A live run is a task of the kernel's loop; the cell that started it returns at once.
    """
run = g.start({"n": 1}, display=False)
print(run.done)
""",
    """
pause = await run.next_pause(timeout=10)
run.answer("no")
final = await run
print(final.outcome, final.state["answer"])
""",
]


@pytest.fixture(scope="module")
def outputs():
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(source.strip()) for source in CELLS]
    NotebookClient(nb, timeout=60, kernel_name="python3").execute()
    return ["".join(_text(o) for o in cell.outputs) for cell in nb.cells]


def _text(output) -> str:
    """What a cell shows as text: its streams, and the plain text of results and displays."""
    if output.output_type == "stream":
        return output.text
    if output.output_type in ("execute_result", "display_data"):
        return output.data.get("text/plain", "")
    if output.output_type == "error":
        return f"{output.ename}: {output.evalue}"
    return ""


def test_loop_is_running_in_cells(outputs):
    # The cell's own result: the kernel's loop is running, and nbgraph knows it is in a kernel.
    assert outputs[0] == "(True, True)"


def test_sync_invoke_with_async_nodes_in_a_kernel(outputs):
    assert outputs[1] == "done 1\n"


def test_sync_invoke_never_waits_for_a_person(outputs):
    assert outputs[2] == "interrupted\nTrue\nyes\n"


def test_start_returns_at_once_and_is_answered_later(outputs):
    assert outputs[3] == "False\n"
    assert outputs[4] == "done no\n"


# -- %%graph in a kernel: a re-run cell updates the graph it displayed ---------------------


@pytest.fixture(scope="module")
def kernel():
    """A real ipykernel, driven message by message through jupyter_client."""
    from jupyter_client.manager import start_new_kernel

    manager, client = start_new_kernel(kernel_name="python3")
    try:
        yield client
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)


def execute(client, code: str) -> list[dict]:
    """Run one cell; its iopub messages (streams, displays, display updates, comms)."""
    messages: list[dict] = []
    reply = client.execute_interactive(code, output_hook=messages.append, timeout=60)
    assert reply["content"]["status"] == "ok", reply["content"]
    return messages


def contents(messages: list[dict], msg_type: str) -> list[dict]:
    return [m["content"] for m in messages if m["msg_type"] == msg_type]


def mermaid_block(*lines: str) -> str:
    return "```mermaid\nflowchart TD\n" + "".join(f"    {line}\n" for line in lines) + "```\n"


def test_rerunning_a_graph_cell_updates_its_display_in_place(kernel):
    execute(
        kernel, "%load_ext nbgraph\ndef a(state): return None\ndef b(state): return None\ndef c(state): return None"
    )
    first = execute(kernel, "%%graph flow\nSTART -> a -> b -> END")
    second = execute(kernel, "%%graph flow\nSTART -> a -> c -> END")
    display_id = "nbgraph-graph-flow"
    first_graph = mermaid_block(
        '__start__(["START"])',
        'n_a["a"]',
        'n_b["b"]',
        '__end__(["END"])',
        "__start__ -.-> n_a",
        "n_a -.-> n_b",
        "n_b -.-> __end__",
    )
    second_graph = mermaid_block(
        '__start__(["START"])',
        'n_a["a"]',
        'n_c["c"]',
        '__end__(["END"])',
        "__start__ -.-> n_a",
        "n_a -.-> n_c",
        "n_c -.-> __end__",
    )

    # The first run displays the graph under a display id: the widget, and mermaid text.
    displayed = contents(first, "display_data")
    assert [d["transient"] for d in displayed] == [{"display_id": display_id}]
    shown = displayed[0]
    assert shown["data"]["text/markdown"] == first_graph
    assert "application/vnd.jupyter.widget-view+json" in shown["data"]

    # The second run replaces what that display shows with the new graph, in place.
    updates = contents(second, "update_display_data")
    assert [u["transient"] for u in updates] == [{"display_id": display_id}]
    updated = updates[0]
    assert updated["data"]["text/markdown"] == second_graph
    assert updated["data"]["text/plain"] == "<Graph 'flow': 2 nodes, 3 edges/routers>"
    assert "application/vnd.jupyter.widget-view+json" in updated["data"]
    # ...and shows it below the re-run cell too, under the same id.
    displayed = contents(second, "display_data")
    assert [(d["transient"], d["data"]["text/markdown"]) for d in displayed] == [
        ({"display_id": display_id}, second_graph)
    ]


def test_a_notebook_run_headless_without_answers_ends_saying_how(monkeypatch):
    """Run All with nobody to click and no auto-answer switch: the run waiting for a person
    gives up after NBGRAPH_HEADLESS_WAIT seconds, and the cell awaiting it fails with a
    message that says how to answer, instead of hanging until the cell timeout."""
    from nbclient.exceptions import CellExecutionError

    monkeypatch.delenv("NBGRAPH_AUTO_ANSWER", raising=False)  # (the kernel inherits this environment)
    monkeypatch.setenv("NBGRAPH_HEADLESS_WAIT", "1")
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell(source)
        for source in (
            "%load_ext nbgraph",
            "from nbgraph import END, START, Graph\n\n"
            "async def ask_topic(state, ctx):\n"
            "    return {'topic': await ctx.request_input('What should the post be about?')}\n\n"
            "g = Graph('writer')\n"
            "g.add_node('ask_topic', ask_topic)\n"
            "g.add_edge(START, 'ask_topic')\n"
            "g.add_edge('ask_topic', END)\n"
            "run = g.start({})",
            "result = await run\nassert result.outcome == 'done', result.reason",
        )
    ]
    client = NotebookClient(nb, timeout=120, kernel_name="python3")
    with pytest.raises(CellExecutionError) as failed:
        client.execute()
    error = failed.value
    assert "result = await run" in str(error)  # the cell that waited for the run is the one that failed
    if not KERNEL_HEARS_WHILE_AWAITING:
        # No click could reach that cell anyway (ipykernel before 7.4): it failed at once, saying how to answer.
        assert error.ename == "CannotWaitHere"
        assert "or answer from code before `await run`: run.answer(value, pause=" in error.evalue
        return
    assert error.ename == "AssertionError"  # the notebook's own check, with the run's reason
    assert error.evalue.startswith(
        "waiting for input at node 'ask_topic': What should the post be about? — nobody answered within 1 s"
    )
    assert "NBGRAPH_AUTO_ANSWER=1" in error.evalue
