"""``await run`` in a cell, on every kernel: a click in the view answers the run while the cell
awaits it (ipykernel 7.4 and later), or the cell fails at once saying what to do, and the run,
still waiting, takes the click once the cell has ended (older kernels: Colab's ipykernel 6.17).

Each test drives a real kernel of this environment as a front-end does; `.ci/colab` runs them
again where the kernel is Colab's, so both halves of each are exercised."""

from __future__ import annotations

import html
import re
import time
import urllib.request
from pathlib import Path

import nbformat
from kernel_session import KERNEL_HEARS_WHILE_AWAITING, kernel
from notebook_servers import voila

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


COURSE = f"""
import sys
sys.path.insert(0, {str(Path(__file__).parent.parent / "notebooks")!r})
import course
"""


def test_the_course_waits_for_a_click_only_where_one_can_reach_the_cell():
    """On a kernel that reads no click while a cell waits, the lesson's cell says so and answers at
    once (never pretending to wait for the learner); elsewhere the learner's click answers."""
    with kernel(NBGRAPH_HEADLESS_WAIT="0", COURSE_WAIT="600") as k:
        k.run(LETTER + COURSE)
        cell = k.send("run = letter.start({'text': ''})\nresult = await course.answer_or_wait(run, [True])")
        view = k.view_of(cell)
        pause = k.pause_shown(view)
        k.click(view, {"type": "approve", "pause_id": pause["id"]})
        assert k.reply(cell, timeout=30)["status"] == "ok"
        said = k.printed(cell)
        if KERNEL_HEARS_WHILE_AWAITING:
            assert said == (
                "Your turn, in the view above: 'draft' ran: press Approve to keep what it changed, or Deny to "
                "drop it. This cell waits up to 600 s, then answers for you.\n"
            )
        else:
            assert said.startswith(
                "Your turn would be in the view above ('draft' ran: press Approve to keep what it changed, or Deny "
                "to drop it), but this kernel (ipykernel 6.17.1) reads a click in a view only after the running "
                "cell ends"
            )
            assert "start the run in a cell of its own" in said
            assert said.endswith("Answered from code: Approve at 'draft'.\n")
        assert k.run("print(result.outcome, [d.via for d in result.decisions])") == (
            "done ['view']\n" if KERNEL_HEARS_WHILE_AWAITING else "done ['code']\n"
        )

        # Stop, as a lesson asks for it while a node hangs.
        cell = k.send(
            "import asyncio\n"
            "hang = Graph('hang')\n"
            "async def wait_for_ci(state):\n"
            "    await asyncio.sleep(600)\n"
            "hang.add_node('ci', wait_for_ci)\n"
            "hang.add_edge(START, 'ci')\n"
            "hang.add_edge('ci', END)\n"
            "stuck = hang.start({})\n"
            "stopped = await course.act_or_wait(stuck, 'press Stop', stuck.cancel, acted=lambda: stuck.done)\n"
            "print(stopped.outcome)"
        )
        view = k.view_of(cell)
        if KERNEL_HEARS_WHILE_AWAITING:  # (elsewhere the cell stops the run at once: no click is awaited)
            k.view_update(view, "running", lambda running: running == ["ci"])
        k.click(view, {"type": "stop"})
        assert k.reply(cell, timeout=30)["status"] == "ok"
        said = k.printed(cell)
        if KERNEL_HEARS_WHILE_AWAITING:
            assert said.startswith("Your turn, in the view above: press Stop. This cell waits up to 600 s")
            assert said.endswith("Done in the view.\naborted\n")
        else:
            assert said.startswith("Your turn would be in the view above (press Stop), but this kernel")
            assert said.endswith(
                "so this cell does it for you. To click yourself, start the run in a cell of its own (run = ...start(...)), answer in its view, and read run.result() in the next cell.\naborted\n"
            )


def test_in_voilas_default_mode_a_cell_awaiting_a_paused_run_fails_within_seconds(tmp_path):
    """Voilà runs every cell before its page (and its views) shows: no click can come while a cell
    awaits. The cell fails after the few seconds a progressively rendered page would need to say
    hello, naming Voilà, and the page is served; it used to stay blank until the run gave up on
    its browser (NBGRAPH_HEADLESS_WAIT=0 here: never)."""
    notebook = nbformat.v4.new_notebook()
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    notebook.cells = [
        nbformat.v4.new_code_cell(LETTER),
        nbformat.v4.new_code_cell("run = letter.start({'text': ''})\nresult = await run"),
    ]
    nbformat.write(notebook, tmp_path / "letter.ipynb")
    with voila(tmp_path / "letter.ipynb", NBGRAPH_HEADLESS_WAIT="0") as url:
        asked = time.monotonic()
        chunks: list[bytes] = []
        with urllib.request.urlopen(url, timeout=60) as response:
            # Voilà keeps a page that waits alive with a heartbeat every few seconds: read until it ends.
            while chunk := response.read1(1 << 16):
                chunks.append(chunk)
                assert time.monotonic() - asked < 30, "the page is still waiting after 30 s"
        took = time.monotonic() - asked
        page = b"".join(chunks).decode()
    text = html.unescape(re.sub(r"<[^>]+>", "", page))
    assert "CannotWaitHere" in text, text[-2000:]
    assert "waits at 'draft' (approval) for an answer that cannot reach it while this cell awaits the run: " in text
    assert "Voilà shows the page, and the run's view with it, only once every cell has run" in text
    assert "leave `await run` out of the notebook" in text
    assert took < 20, f"the page took {took:.1f} s"
