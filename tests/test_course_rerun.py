"""Every code cell of every lesson runs twice in a row, as a learner re-runs a cell to see it
again: the second run works too, and a check that passed the first time passes again."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest
from checkbank import LESSONS, run_in_the_course, shown

_PASSED = ("all checks passed", "Solved:")


def _twice(path: Path) -> nbformat.NotebookNode:
    """The lesson with each code cell followed by a copy of itself."""
    notebook = nbformat.read(path, as_version=4)
    cells = []
    for cell in notebook.cells:
        cells.append(cell)
        if cell.cell_type == "code":
            cells.append(nbformat.v4.new_code_cell(cell.source, metadata={"again": True}))
    notebook.cells = cells
    return notebook


@pytest.mark.parametrize("path", LESSONS, ids=lambda path: path.stem)
def test_every_code_cell_runs_twice_in_a_row(path, monkeypatch):
    monkeypatch.setenv("NBGRAPH_AUTO_ANSWER", "1")
    notebook = _twice(path)
    run_in_the_course(notebook)
    code = [cell for cell in notebook.cells if cell.cell_type == "code"]
    for first, again in zip(code[::2], code[1::2], strict=True):
        errors = [o for o in first.outputs + again.outputs if o.output_type == "error"]
        assert not errors, f"{path.name}: {first.source[:200]!r}\n{shown(first)}\n--- run again:\n{shown(again)}"
        for word in _PASSED:
            if word in shown(first):
                assert word in shown(again), f"{path.name}: {first.source[:200]!r}\n--- run again:\n{shown(again)}"
