"""Check banks: learners' answers to the course's exercises, each tried against the exercise's
own check in a fresh kernel, the way a learner runs them.

A bank lives in ``tests/course_banks/``, one module per lesson, whose ``EXERCISES`` lists
:class:`Exercise` entries. A wrong answer is a plausible mistake: the check must refuse it
("Not yet:") and its message must contain ``says``, the words that point the learner at
what to look at. A right answer differs from the solution and must pass ("Solved:").

An answer runs as a learner runs it: the lesson's code cells in order down to the exercise's
check cell, with their live runs (pauses answered at once, as ``NBGRAPH_AUTO_ANSWER`` does),
then the answer's cells, then the whole check cell.
"""

from __future__ import annotations

import importlib
import re
from dataclasses import dataclass, field
from pathlib import Path

import nbformat
from nbclient import NotebookClient

NOTEBOOKS = Path(__file__).parents[1] / "notebooks"
BANKS = Path(__file__).parent / "course_banks"
LESSONS = sorted([*NOTEBOOKS.glob("0*.ipynb"), *NOTEBOOKS.glob("1*.ipynb"), *NOTEBOOKS.glob("c*.ipynb")])
"""The lessons: the tutorials, the capstone and the case studies' parts (not the solutions)."""


@dataclass(frozen=True)
class Answer:
    """A learner's answer: the cells they run after the lesson's cells above the check cell."""

    why: str
    """The mistake it makes (a wrong answer), or how it differs from the solution (a right one)."""
    cells: tuple[str, ...]
    says: str = ""
    """Words the check's message must contain when it refuses this answer."""


@dataclass(frozen=True)
class Exercise:
    """One exercise of a lesson, named by its heading, with the statement its check cell ends in."""

    lesson: str
    heading: str
    """The exercise's markdown heading as the lesson has it, e.g. ``## Exercise: a hotfix by fork``."""
    check: str
    """The statement that prints the verdict, exactly as the lesson's check cell has it (it finds
    that cell)."""
    wrong: tuple[Answer, ...] = field(default=())
    right: tuple[Answer, ...] = field(default=())


def banks() -> list[Exercise]:
    """Every exercise of every bank module, in the modules' order."""
    found: list[Exercise] = []
    for module in sorted(BANKS.glob("[!_]*.py")):
        found.extend(importlib.import_module(f"course_banks.{module.stem}").EXERCISES)
    return found


def shown(cell: nbformat.NotebookNode) -> str:
    """What a code cell shows as text: its streams, the plain text of its results, its error."""
    parts = []
    for output in cell.get("outputs", []):
        if output.output_type == "stream":
            parts.append(output.text)
        elif output.output_type in ("execute_result", "display_data"):
            parts.append(output.data.get("text/plain", ""))
        elif output.output_type == "error":
            parts.append(f"{output.ename}: {output.evalue}")
    return "".join(parts)


def verdict_in(text: str) -> str:
    """The verdict a check printed (from its last "Not yet:" or "Solved:" on), or all of ``text``."""
    said = [found.start() for found in re.finditer(r"^(Not yet:|Solved:)", text, re.M)]
    return text[said[-1] :] if said else text


def run_in_the_course(notebook: nbformat.NotebookNode) -> None:
    """Execute ``notebook`` in a fresh kernel whose folder is the course's, every cell even
    after one that failed (each keeps its error in its outputs)."""
    client = NotebookClient(
        notebook,
        timeout=120,
        kernel_name="python3",
        allow_errors=True,
        resources={"metadata": {"path": str(NOTEBOOKS)}},
    )
    client.execute()


def as_a_learner(exercise: Exercise, answer: Answer) -> nbformat.NotebookNode:
    """The notebook a learner runs for ``answer``: the lesson's code cells above the exercise's
    check cell, the answer's cells, then that check cell, whole."""
    lesson = nbformat.read(NOTEBOOKS / exercise.lesson, as_version=4)
    code = [cell for cell in lesson.cells if cell.cell_type == "code"]
    (check,) = [at for at, cell in enumerate(code) if exercise.check in cell.source]
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [
        *(nbformat.v4.new_code_cell(cell.source, metadata={"lesson": True}) for cell in code[:check]),
        *(nbformat.v4.new_code_cell(source, metadata={"answer": True}) for source in answer.cells),
        nbformat.v4.new_code_cell(code[check].source, metadata={"check": True}),
    ]
    return notebook


def verdict_on(exercise: Exercise, answer: Answer) -> str:
    """What the exercise's check cell prints for ``answer``, run as a learner runs it
    (:func:`as_a_learner`), in a fresh kernel."""
    notebook = as_a_learner(exercise, answer)
    run_in_the_course(notebook)
    *before, check = notebook.cells
    failed = [(cell, shown(cell)) for cell in before if any(o.output_type == "error" for o in cell.outputs)]
    lesson = [(cell.source, text) for cell, text in failed if cell.metadata.get("lesson")]
    assert not lesson, f"a cell of {exercise.lesson} failed before the answer:\n{lesson[0][0]}\n{lesson[0][1]}"
    if failed:
        cell, error = failed[0]
        return f"(the answer's cell failed before the check ran)\n{cell.source}\n{error}"
    return verdict_in(shown(check))
