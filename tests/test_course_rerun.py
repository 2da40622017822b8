"""Every code cell of every lesson runs twice in a row, as a learner re-runs a cell to see it
again: the second run works too, and a check that passed the first time passes again; the first
runs take about the time the teacher's guide reckons with. And once a lesson's exercises are
solved, its cells run again meet the changed graphs with a note, never an error."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import nbformat
import pytest
from checkbank import LESSONS, run_in_the_course, shown, verdict_in
from course_mutants import lesson_of, solutions
from course_pace import guide_rows, timed_in_guide

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


def _seconds(cell: nbformat.NotebookNode) -> float:
    """How long the kernel took to run ``cell`` (nbclient's timing of it)."""
    timing = cell.metadata.get("execution", {})
    began, ended = (datetime.fromisoformat(timing[key]) for key in ("iopub.execute_input", "shell.execute_reply"))
    return (ended - began).total_seconds()


@pytest.mark.parametrize("path", LESSONS, ids=lambda path: path.stem)
def test_every_code_cell_runs_twice_in_a_row(path, monkeypatch):
    """Each cell works run again, and the first runs take about the seconds and print about the
    words the teacher's guide reckons the lesson's minutes with: a lesson grown much slower or
    wordier than its minutes say is found here (the bounds are loose: machines differ)."""
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
    stated = timed_in_guide(guide_rows()[path.name])
    seconds, printed = sum(map(_seconds, code[::2])), sum(len(shown(cell).split()) for cell in code[::2])
    assert seconds <= 3 * stated.seconds + 10 and stated.seconds <= 3 * seconds + 10, (path.name, seconds, stated)
    assert abs(printed - stated.printed) <= 0.15 * stated.printed + 20, (path.name, printed, stated)


# -- after solving ------------------------------------------------------------------------------

SOLVED = {path: [e for s in solutions() for e in s.exercises if lesson_of(e) == path] for path in LESSONS}
SOLVED = {path: exercises for path, exercises in SOLVED.items() if exercises}
"""The lessons with exercises, and the worked answers of each (from its solution notebook)."""


def _solved_then_again(path: Path) -> nbformat.NotebookNode:
    """The lesson; the worked answers of its exercises, each followed by the lesson's check cell;
    then again each of its cells but those that define what the answers change (tagged build),
    and each check."""
    notebook = nbformat.read(path, as_version=4)
    code = [cell for cell in notebook.cells if cell.cell_type == "code"]
    cells = list(notebook.cells)
    checks = []
    for exercise in SOLVED[path]:
        call = exercise.check.splitlines()[0].split(" = ", 1)[-1]
        (check,) = [cell for cell in code if f"course.verdict({call}" in cell.source]
        checks.append(check)
        cells += [nbformat.v4.new_code_cell(source, metadata={"answer": True}) for source in exercise.answer]
        cells.append(nbformat.v4.new_code_cell(check.source, metadata={"solved": True}))
    cells += [
        nbformat.v4.new_code_cell(cell.source, metadata={"again": True, "check": cell in checks})
        for cell in code
        if "build" not in cell.metadata.get("tags", ()) or cell in checks
    ]
    notebook.cells = cells
    return notebook


@pytest.mark.parametrize("path", SOLVED, ids=lambda path: path.stem)
def test_after_solving_each_cell_run_again_says_what_changed_and_never_fails(path, monkeypatch):
    """Solved, a lesson's own cells meet the graphs its answers changed: run again, each works as
    before or says in a note what changed, never with an error, and a check gives its verdict."""
    monkeypatch.setenv("NBGRAPH_AUTO_ANSWER", "1")
    notebook = _solved_then_again(path)
    run_in_the_course(notebook)
    for cell in notebook.cells:
        if cell.cell_type != "code":
            continue
        where = f"{path.name}: {cell.source[:300]!r}\n{shown(cell)}"
        assert not [o for o in cell.outputs if o.output_type == "error"], where
        if cell.metadata.get("solved"):
            assert verdict_in(shown(cell)).startswith("Solved:"), where
        if cell.metadata.get("check"):
            assert verdict_in(shown(cell)).startswith(("Solved:", "Not yet:")), where
