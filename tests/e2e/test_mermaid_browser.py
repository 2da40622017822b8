"""Exported mermaid is valid: JupyterLab's own mermaid renderer draws it without a syntax error."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from urllib.parse import unquote

sys.path.insert(0, str(Path(__file__).parent.parent))

from test_export import shaped_graph  # noqa: E402

TIMEOUT = 60_000  # ms; each wait ends as soon as its condition holds


def rendered_svg(lab, page, mermaid: str) -> str:
    """Open a notebook whose one markdown cell holds ``mermaid``; the SVG JupyterLab drew."""
    cell = {"cell_type": "markdown", "metadata": {}, "source": f"```mermaid\n{mermaid}```\n"}
    notebook = {"cells": [cell], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    (lab.root / "shapes.ipynb").write_text(json.dumps(notebook))
    page.goto(lab.notebook_url("shapes.ipynb"), timeout=TIMEOUT)
    drawn = page.locator(".jp-NotebookPanel:visible .jp-RenderedMermaid")
    drawn.first.wait_for(timeout=TIMEOUT)
    assert "jp-mod-warning" not in (drawn.first.get_attribute("class") or ""), drawn.first.inner_text()
    # JupyterLab shows the diagram as an image of the SVG mermaid produced.
    source = drawn.first.locator("img").get_attribute("src")
    assert source is not None and source.startswith("data:image/svg+xml,"), source
    return unquote(source.removeprefix("data:image/svg+xml,"))


def test_fan_out_joins_maps_and_sub_graphs_render_in_jupyterlab(lab, page):
    svg = rendered_svg(lab, page, shaped_graph().to_mermaid())
    assert "Syntax error" not in svg
    labels = re.findall(r'<span class="nodeLabel"[^>]*>(?:<p>)?([^<]*)', svg)
    # Every node once, the sub-graph's cluster titled with its node's name around its own.
    expected = ["START", "plan", "x", "y", "merge", "work ×N", "research", "START", "a", "b", "END", "done", "END"]
    assert sorted(labels) == sorted(expected)
    assert len(re.findall(r'<g class="cluster[ "]', svg)) == 1
