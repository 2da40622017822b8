"""``await run`` in a cell, on every kernel: a click in the view answers the run while the cell
awaits it (ipykernel 7.4 and later), or the cell fails at once saying what to do, and the run,
still waiting, takes the click once the cell has ended (older kernels: Colab's ipykernel 6.17).

Each test drives a real kernel of this environment as a front-end does; `.ci/colab` runs them
again where the kernel is Colab's, so both halves of each are exercised."""

from __future__ import annotations

import re
import time

from kernel_session import KERNEL_HEARS_WHILE_AWAITING, kernel

LETTER = """
from nbgraph import END, START, Graph

letter = Graph("letter")
letter.add_node("draft", lambda s: {"text": "Dear customer"}, approval=True)
letter.add_node("send", lambda s: {"sent": True})
letter.add_edge(START, "draft")
letter.add_edge("draft", "send")
letter.add_edge("send", END)
"""


def test_await_run_is_answered_by_a_click_or_fails_at_once_saying_what_to_do():
    with kernel(NBGRAPH_HEADLESS_WAIT="0") as k:  # (0: a run waits for ever for a browser's hello)
        k.run(LETTER)
        cell = k.send("run = letter.start({'text': ''})\nresult = await run\nprint(result.outcome, result.state)")
        view = k.view_of(cell)
        pause = k.pause_shown(view)
        shown_at = time.monotonic()
        k.click(view, {"type": "approve", "pause_id": pause["id"]})  # while the cell awaits the run
        reply = k.reply(cell, timeout=30)
        took = time.monotonic() - shown_at
        if KERNEL_HEARS_WHILE_AWAITING:
            assert reply["status"] == "ok", reply
            assert k.printed(cell) == "done {'text': 'Dear customer', 'sent': True}\n"
            return
        # The click waits behind the cell: the cell fails at once instead of waiting for it.
        assert reply["status"] == "error" and reply["ename"] == "CannotWaitHere", reply
        assert took < 10, f"the cell failed {took:.1f} s after the pause showed"
        message = reply["evalue"]
        assert re.match(r"run '\w+' of graph 'letter' waits at 'draft' \(approval\) for an answer", message)
        assert "this kernel (ipykernel 6.17.1) reads a click in a view only after the running cell ends" in message
        assert "answer in its view, and read run.result() in the next cell" in message
        assert "run.approve() or run.deny()" in message
        # The run went on waiting; the click, read once the cell ended, answered it.
        assert k.run("print((await run).outcome, run.state['sent'])") == "done True\n"
        decided = k.run("print([(d.via, d.verdict) for d in run.decisions])")
        assert decided == "[('view', 'approved')]\n"


def test_a_cell_that_leaves_the_run_waiting_is_answered_by_a_click_on_any_kernel():
    with kernel(NBGRAPH_HEADLESS_WAIT="0") as k:
        k.run(LETTER)
        cell = k.send("run = letter.start({'text': ''})")
        view = k.view_of(cell)
        pause = k.pause_shown(view)
        k.reply(cell)
        k.click(view, {"type": "approve", "pause_id": pause["id"]})
        assert k.run("print((await run).outcome)") == "done\n"


def test_a_pause_answered_from_code_is_awaited_on_any_kernel():
    with kernel(NBGRAPH_HEADLESS_WAIT="0") as k:
        k.run(LETTER)
        printed = k.run(
            "run = letter.start({'text': ''})\n"
            "pause = await run.next_pause(timeout=10)\n"
            "run.approve()\n"
            "print((await run).outcome)"
        )
        assert printed == "done\n"
        # An answer given by a listener the moment the run pauses: nothing waits for a click.
        printed = k.run(
            "def approve_at_once(event):\n"
            "    if event.type == 'interrupt':\n"
            "        event_run.answer(True, pause=event.pause.id)\n"
            "event_run = letter.start({'text': ''}, on_event=approve_at_once)\n"
            "print((await event_run).outcome)"
        )
        assert printed == "done\n"


def test_a_task_a_cell_left_running_may_await_a_run():
    """Only the cell's own await holds the kernel: a task awaiting the run meanwhile blocks no click."""
    with kernel(NBGRAPH_HEADLESS_WAIT="0") as k:
        k.run(LETTER)
        cell = k.send(
            "import asyncio\n"
            "run = letter.start({'text': ''})\n"
            "async def follow():\n"
            "    return (await run).outcome\n"
            "follower = asyncio.ensure_future(follow())\n"
            "await run.next_pause(timeout=10)\n"
            "await asyncio.sleep(0.2)  # the follower awaits the paused run while this cell runs\n"
            "print(follower.done())"
        )
        view = k.view_of(cell)
        pause = k.pause_shown(view)
        k.reply(cell)
        assert k.printed(cell) == "False\n"
        k.click(view, {"type": "approve", "pause_id": pause["id"]})
        assert k.run("print(await follower)") == "done\n"


def test_no_browser_is_concluded_while_cells_keep_the_hello_from_a_deaf_kernel():
    """A kernel that reads a view's hello only between cells (a Run All on Colab) heard none while
    cells ran, which proves no headless run: the run gives up only once the kernel has been idle
    for the whole wait. A kernel that reads it meanwhile gives up during the cell, as before."""
    with kernel(NBGRAPH_HEADLESS_WAIT="1") as k:
        k.run(LETTER)
        cell = k.send("run = letter.start({'text': ''})")
        view = k.view_of(cell)
        k.reply(cell)
        printed = k.run("import asyncio\nawait asyncio.sleep(2.5)\nprint(run.done)")
        assert printed == ("True\n" if KERNEL_HEARS_WHILE_AWAITING else "False\n")
        # Idle now, and no browser says hello: the run ends, saying how to answer from code.
        status = k.view_update(view, "status", lambda s: s["state"] == "done", timeout=15)
        assert status["outcome"] == "interrupted"
        assert "no browser shows this notebook" in status["reason"]
