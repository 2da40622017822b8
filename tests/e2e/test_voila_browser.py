"""A notebook served by Voilà, in its default mode and rendering progressively: the views draw
(the run's from whatever state its model first holds), no control shows that the run does not
offer, and a click on Approve answers the run, which then finishes. Rendering progressively,
the page shows while cells still run: a later cell awaiting the run gets its result from the
click (in the default mode such a cell fails at once: tests/test_waiting.py)."""

from __future__ import annotations

import nbformat
import pytest
from notebook_servers import voila

from conftest import page_errors

TIMEOUT = 60_000  # ms; each wait ends as soon as its condition holds

LETTER = """
from nbgraph import END, START, Graph

letter = Graph("letter")
letter.add_node("draft", lambda s: {"text": "Dear customer"}, approval=True)
letter.add_node("send", lambda s: {"sent": True})
letter.add_edge(START, "draft")
letter.add_edge("draft", "send")
letter.add_edge("send", END)
letter
"""


@pytest.mark.parametrize("options", [(), ("--progressive_rendering=True",)], ids=["default", "progressive"])
def test_voila_draws_the_views_and_a_click_answers_the_run(tmp_path, page, options):
    notebook = nbformat.v4.new_notebook()
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    notebook.cells = [nbformat.v4.new_code_cell(LETTER), nbformat.v4.new_code_cell("run = letter.start({'text': ''})")]
    progressive = bool(options)
    if progressive:
        notebook.cells.append(nbformat.v4.new_code_cell("result = await run\nprint('RESULT', result.outcome)"))
    nbformat.write(notebook, tmp_path / "letter.ipynb")
    errors = page_errors(page)
    with voila(tmp_path / "letter.ipynb", *options) as url:
        page.goto(url, timeout=TIMEOUT)
        graph = page.locator(".nbg-root:not(.nbg-live)")  # the graph, the first cell's value
        run = page.locator(".nbg-root.nbg-live")  # the run's view
        approve = run.locator("button.nbg-approve")
        approve.wait_for(timeout=TIMEOUT)
        for view in (graph, run):
            assert view.locator(".nbg-title").text_content() == "letter"
            for node in ("draft", "send"):
                view.locator(f'svg [data-node="{node}"]').wait_for(timeout=TIMEOUT)
        assert run.get_attribute("data-state") == "paused"
        # Only what the run offers: no fork onto a redefined graph, no text streamed.
        assert page.get_by_role("button", name="Fork onto the new graph").filter(visible=True).count() == 0
        assert run.locator(".nbg-text").is_hidden()

        approve.click()
        page.locator(".nbg-root.nbg-live[data-state='done']").wait_for(timeout=TIMEOUT)
        assert "done" in (run.locator(".nbg-status").text_content() or "")
        assert run.locator(".nbg-log").get_by_text("send", exact=False).count() >= 1
        if progressive:
            page.locator(".jp-OutputArea-output", has_text="RESULT done").wait_for(timeout=TIMEOUT)
    assert errors == []
