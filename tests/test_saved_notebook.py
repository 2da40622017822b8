"""A notebook saved with its views is small and true: the views' module is sent once per kernel
and never per view, a ``%%graph`` cell makes one view, a view's output carries a picture of it,
and a run's output shows how the run ended, in the notebook a headless run (nbclient) saves too."""

from __future__ import annotations

import base64
import json
import re
from pathlib import Path

import nbformat
from kernel_session import WIDGET, kernel
from nbclient import NotebookClient

LESSON = Path(__file__).parent.parent / "notebooks" / "01-first-graph.ipynb"
STATE = "application/vnd.jupyter.widget-state+json"

WRITER = """
from nbgraph import END, START, Graph

writer = Graph("writer")
writer.add_node("draft", lambda s: {"text": "Dear customer"})
writer.add_node("review", lambda s: {})
writer.add_edge(START, "draft")
writer.add_edge("draft", "review")
writer.add_edge("review", END);
"""


def _title(svg: str) -> str:
    found = re.search(r"<title>(.*?)</title>", svg)
    assert found is not None, svg[:200]
    return found.group(1)


def _run(k, code: str) -> str:
    """Run a cell to its end; its message id."""
    msg_id = k.send(code)
    assert k.reply(msg_id)["status"] == "ok"
    return msg_id


def _opened(k, since: int = 0) -> list[dict]:
    """The widget models the kernel has opened (their state as opened), in order."""
    return [
        m["content"]["data"]["state"]
        for m in k.published[since:]
        if m["msg_type"] == "comm_open" and m["content"].get("target_name") == "jupyter.widget"
    ]


def test_the_views_module_is_sent_once_and_a_view_holds_a_small_loader():
    with kernel(NBGRAPH_HEADLESS_WAIT="0") as k:
        k.run("%load_ext nbgraph\n" + WRITER)
        k.run("writer")
        k.run("run = writer.start({})\nresult = await run")
        k.run("from nbgraph.widget import GraphView\nGraphView.replay(result)")
        opened = [state for state in _opened(k) if state.get("_model_name") == "AnyModel"]
        modules = [state for state in opened if "code" in state]
        views = [state for state in opened if "code" not in state]
        assert len(modules) == 1 and len(views) == 3
        module = modules[0]
        assert len(module["code"]) > 100_000 and len(module["css"]) > 20_000 and "_css" not in module
        run_data = {"dag", "status", "visits", "fired", "frames", "decisions", "log", "breakpoints"}
        for view in views:
            assert view["module"] == next(
                m["content"]["comm_id"]
                for m in k.published
                if m["msg_type"] == "comm_open" and "code" in m["content"]["data"]["state"]
            )
            assert "_css" not in view and len(view["_esm"]) < 2_000
            rest = {key: value for key, value in view.items() if key not in run_data}
            assert len(json.dumps(rest)) < 10_000, sorted(rest)


def test_a_graph_cell_makes_one_view_for_both_of_its_outputs():
    with kernel(NBGRAPH_HEADLESS_WAIT="0") as k:
        k.run("%load_ext nbgraph")
        cell = "%%graph writer\nSTART -> draft -> END\n"
        k.run("def draft(state):\n    return {}")
        before = len(k.published)
        first = _run(k, cell)
        views = [s for s in _opened(k, before) if s.get("kind") == "graph"]
        assert len(views) == 1
        before = len(k.published)
        again = _run(k, cell)  # the same graph again: the earlier cell's output is updated to the new view
        views = [s for s in _opened(k, before) if s.get("kind") == "graph"]
        assert len(views) == 1
        shown = [
            m
            for m in k.published[before:]
            if m["msg_type"] in ("display_data", "update_display_data") and m["parent_header"].get("msg_id") == again
        ]
        assert [m["msg_type"] for m in shown] == ["update_display_data", "display_data"]
        ids = {m["content"]["data"][WIDGET]["model_id"] for m in shown}
        assert len(ids) == 1
        (earlier,) = [
            m for m in k.published if m["msg_type"] == "display_data" and m["parent_header"].get("msg_id") == first
        ]
        assert earlier["content"]["transient"] == shown[0]["content"]["transient"]  # the output updated


def test_a_run_s_output_carries_its_picture_and_is_updated_when_the_run_ends():
    with kernel(NBGRAPH_HEADLESS_WAIT="0") as k:
        k.run("%load_ext nbgraph\n" + WRITER)
        start = _run(k, "run = writer.start({})")
        (shown,) = [
            m["content"]
            for m in k.published
            if m["msg_type"] == "display_data" and m["parent_header"].get("msg_id") == start
        ]
        data = shown["data"]
        assert {WIDGET, "image/svg+xml", "text/html", "text/markdown", "text/plain"} <= set(data)
        html = data["text/html"]
        encoded = re.search(r'src="data:image/svg\+xml;base64,([^"]+)"', html)
        assert encoded is not None
        assert base64.b64decode(encoded.group(1)).decode() == data["image/svg+xml"]
        display_id = shown["transient"]["display_id"]
        # The run ends: its output is updated at once (a front-end saves what it holds) ...
        update = k.wait_for(
            lambda m: (
                m
                if m["msg_type"] == "update_display_data" and m["content"]["transient"]["display_id"] == display_id
                else None
            )
        )
        assert _title(update["content"]["data"]["image/svg+xml"]) == "writer \u00b7 done after 2 steps"
        assert update["content"]["data"][WIDGET] == data[WIDGET]
        # ... and again from the next cell that runs: the cell a headless run records.
        later = _run(k, "1")
        again = [
            m
            for m in k.published
            if m["msg_type"] == "update_display_data" and m["parent_header"].get("msg_id") == later
        ]
        assert len(again) == 1
        assert _title(again[0]["content"]["data"]["image/svg+xml"]) == "writer \u00b7 done after 2 steps"
        assert (
            not [  # once
                m
                for m in k.published
                if m["msg_type"] == "update_display_data" and m["parent_header"].get("msg_id") == _run(k, "2")
            ]
        )


def _execute(notebook: nbformat.NotebookNode, where: Path) -> nbformat.NotebookNode:
    NotebookClient(notebook, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(where)}}).execute()
    return notebook


def test_lesson_01_executed_and_saved_is_small_and_shows_its_finished_run(tmp_path, monkeypatch):
    monkeypatch.setenv("NBGRAPH_AUTO_ANSWER", "1")
    notebook = _execute(nbformat.read(LESSON, as_version=4), LESSON.parent)
    saved = tmp_path / LESSON.name
    nbformat.write(notebook, saved)
    assert saved.stat().st_size <= 150_000, saved.stat().st_size

    views = [
        (i, o) for i, cell in enumerate(notebook.cells) for o in cell.get("outputs", ()) if WIDGET in o.get("data", {})
    ]
    assert len(views) == 3  # the graph, the live run, its replay
    for _, output in views:
        assert {"image/svg+xml", "text/html"} <= set(output["data"])
    run_cell = next(i for i, cell in enumerate(notebook.cells) if "writer.start(" in cell.source)
    (run_output,) = [o for i, o in views if i == run_cell]
    assert _title(run_output["data"]["image/svg+xml"]) == "writer \u00b7 done after 6 steps"
    # The notebook keeps no copy of the views' module, and no view a reader could not draw.
    state = notebook.metadata.get("widgets", {}).get(STATE, {}).get("state", {})
    assert [m for m in state.values() if m["model_name"] == "AnyModel"] == []


def test_a_view_the_notebook_did_record_is_saved_as_its_run_ended(tmp_path):
    """A view opened by the cell that loads the notebook layer is in the saved widget state: it is
    saved finished, not as it was when that cell ended."""
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [
        nbformat.v4.new_code_cell(
            "import asyncio\n"
            "from nbgraph import END, START, Graph, hooks\n"
            "async def wait(state):\n"
            "    await asyncio.sleep(0.5)\n"
            "    return {}\n"
            "slow = Graph('slow')\n"
            "slow.add_node('draft', lambda s: {})\n"
            "slow.add_node('wait', wait)\n"
            "slow.add_edge(START, 'draft').add_edge('draft', 'wait').add_edge('wait', END)\n"
            "hooks.notebook_layer()  # (loaded here: this cell's views are recorded)\n"
            "run = slow.start({})"
        ),
        nbformat.v4.new_code_cell("result = await run\nresult.outcome"),
    ]
    _execute(notebook, tmp_path)
    state = notebook.metadata["widgets"][STATE]["state"]
    (view,) = [m["state"] for m in state.values() if m["state"].get("kind") == "graph"]
    assert view["status"]["state"] == "done" and view["status"]["outcome"] == "done"
    assert view["visits"] == {"draft": 1, "wait": 1}
    assert len([m for m in state.values() if "code" in m["state"]]) == 1  # the module, opened by that cell too
    assert notebook.cells[1].outputs[0]["data"]["text/plain"] == "'done'"


def test_no_view_is_recorded_when_the_notebook_layer_was_loaded_before(tmp_path):
    """The notebook layer loaded by an earlier cell: the views are opened in that cell's context,
    so the saved notebook keeps no state of them (nbconvert shows their pictures)."""
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [
        nbformat.v4.new_code_cell("%load_ext nbgraph"),
        nbformat.v4.new_code_cell(WRITER + "writer"),
        nbformat.v4.new_code_cell("run = writer.start({})"),
        nbformat.v4.new_code_cell("result = await run"),
    ]
    _execute(notebook, tmp_path)
    state = notebook.metadata.get("widgets", {}).get(STATE, {}).get("state", {})
    assert [m for m in state.values() if m["model_name"] == "AnyModel"] == []
    run_output = notebook.cells[2].outputs[0]
    assert _title(run_output["data"]["image/svg+xml"]) == "writer \u00b7 done after 2 steps"
