"""A marimo notebook (``marimo_letter.py``) in marimo's editor: a graph, a started run and a batch
show their views as the cells' outputs, with no ``mo.ui.anywidget`` in the notebook; a click on
Approve answers the run, which then finishes; nbgraph's mermaid is drawn by marimo; and a cell
awaiting a paused run fails at once, saying what to do (marimo reads a click only between cells)."""

from __future__ import annotations

import shutil
from pathlib import Path

from notebook_servers import marimo

from conftest import page_errors

TIMEOUT = 60_000  # ms; each wait ends as soon as its condition holds
NOTEBOOK = Path(__file__).parent / "marimo_letter.py"


def test_marimo_shows_the_views_as_outputs_and_a_click_answers_the_run(tmp_path, page):
    source = NOTEBOOK.read_text()
    assert "anywidget" not in source.replace("no wrapper", "") and "GraphView" not in source
    shutil.copy(NOTEBOOK, tmp_path / NOTEBOOK.name)
    errors = page_errors(page)
    with marimo(tmp_path / NOTEBOOK.name) as url:
        page.goto(url, timeout=TIMEOUT)
        graph = page.locator(".nbg-root:not(.nbg-live):not(.nbg-batch)")  # the graph, the first cell's value
        run = page.locator(".nbg-root.nbg-live")  # the run the second cell started
        approve = run.locator("button.nbg-approve")
        approve.wait_for(timeout=TIMEOUT)
        for view in (graph, run):
            assert view.locator(".nbg-title").text_content() == "letter"
            for node in ("draft", "send"):
                view.locator(f'svg [data-node="{node}"]').wait_for(timeout=TIMEOUT)
        assert run.get_attribute("data-state") == "paused"

        approve.click()
        page.locator(".nbg-root.nbg-live[data-state='done']").wait_for(timeout=TIMEOUT)
        assert "done" in (run.locator(".nbg-status").text_content() or "")

        # The graph's mermaid, drawn by marimo's mermaid as a diagram.
        drawn = page.locator('svg[aria-roledescription^="flowchart"]')
        drawn.wait_for(timeout=TIMEOUT)
        labels = set(drawn.locator(".nodeLabel").all_text_contents())
        assert labels == {"START", "draft ✓", "send", "END"}, labels

        # The batch awaited in a cell: its view, finished.
        batch = page.locator(".nbg-root.nbg-batch[data-finished='true']")
        batch.wait_for(timeout=TIMEOUT)
        assert (batch.get_attribute("data-ended"), batch.get_attribute("data-total")) == ("3", "3")
        assert batch.locator(".nbg-title").text_content() == "count \u2014 batch"

        # The cell that awaits a paused run failed at once, saying why and what to do.
        said = page.get_by_text("for an answer that cannot reach it while this cell awaits the run")
        said.first.wait_for(timeout=TIMEOUT)
        text = said.first.text_content() or ""
        assert "marimo hands a view's click to the kernel only after the running cell ends" in text
        assert (
            "end this cell without awaiting the run, answer in its view, and read run.result() in the next cell" in text
        )
    assert errors == []
