"""The engine inside a real Jupyter kernel: the cell's loop is already running."""

from __future__ import annotations

import nbformat
import pytest
from nbclient import NotebookClient

CELLS = [
    """
import asyncio
from nbgraph import END, START, Graph

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
asyncio.get_running_loop().is_running()
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
print(g.resume(paused.thread, "yes").state["answer"])
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
    return ["".join(o.get("text", "") for o in cell.outputs if o.output_type == "stream") for cell in nb.cells]


def test_loop_is_running_in_cells(outputs):
    assert outputs[0] == ""


def test_sync_invoke_with_async_nodes_in_a_kernel(outputs):
    assert outputs[1] == "done 1\n"


def test_sync_invoke_never_waits_for_a_person(outputs):
    assert outputs[2] == "interrupted\nTrue\nyes\n"


def test_start_returns_at_once_and_is_answered_later(outputs):
    assert outputs[3] == "False\n"
    assert outputs[4] == "done no\n"
