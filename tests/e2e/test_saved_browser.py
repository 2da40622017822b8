"""A lesson executed headless (nbclient) and converted to HTML (nbconvert), opened in Chromium
with every request to the network refused: each cell that displays a view shows its picture,
the run's as it ended."""

from __future__ import annotations

from pathlib import Path

import nbformat
from nbclient import NotebookClient
from nbconvert import HTMLExporter

from conftest import ARTIFACTS

LESSON = Path(__file__).parent.parent.parent / "notebooks" / "01-first-graph.ipynb"
WIDGET = "application/vnd.jupyter.widget-view+json"


def test_an_executed_lesson_as_html_shows_a_picture_under_every_view_cell_offline(page, tmp_path, monkeypatch):
    monkeypatch.setenv("NBGRAPH_AUTO_ANSWER", "1")
    notebook = nbformat.read(LESSON, as_version=4)
    NotebookClient(
        notebook, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(LESSON.parent)}}
    ).execute()
    views = [
        i for i, cell in enumerate(notebook.cells) if any(WIDGET in o.get("data", {}) for o in cell.get("outputs", ()))
    ]
    assert len(views) == 3
    html, _ = HTMLExporter().from_notebook_node(notebook)
    path = tmp_path / "lesson.html"
    path.write_text(html, encoding="utf-8")

    refused: list[str] = []

    def offline(route):
        if route.request.url.startswith("file:"):
            route.continue_()
        else:
            refused.append(route.request.url)
            route.abort()

    page.route("**/*", offline)
    page.goto(path.as_uri())
    page.wait_for_load_state("load")
    assert refused  # (the page asked the network for its scripts: none came)

    cells = page.locator(".jp-Cell")
    assert cells.count() == len(notebook.cells)
    for index in views:
        picture = cells.nth(index).locator(".jp-OutputArea-output img")
        assert picture.count() == 1, index
        box = picture.bounding_box()
        assert box is not None and box["width"] > 120 and box["height"] > 200, (index, box)
        assert picture.evaluate("img => img.complete && img.naturalWidth > 0"), index
    run = next(i for i in views if "writer.start(" in notebook.cells[i].source)
    caption = cells.nth(run).locator(".jp-OutputArea-output img").get_attribute("alt")
    assert caption == "writer \u00b7 done after 6 steps"
    ARTIFACTS.mkdir(exist_ok=True)
    cells.nth(run).screenshot(path=str(ARTIFACTS / "saved-lesson-run-offline.png"))
    # No other view cell shows a picture's worth of nothing: the pictures are where the views were.
    others = [i for i in range(len(notebook.cells)) if i not in views]
    assert all(cells.nth(i).locator(".jp-OutputArea-output img").count() == 0 for i in others)
