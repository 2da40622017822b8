"""Check banks: learners' answers to the course's exercises, each tried against the exercise's
own check in a fresh kernel.

A bank lives in ``tests/course_banks/``, one module per lesson, whose ``EXERCISES`` lists
:class:`Exercise` entries. A wrong answer is a plausible mistake: the check must refuse it
("Not yet:") and its message must contain ``says``, the words that point the learner at
what to look at. A right answer differs from the solution and must pass ("Solved:").
"""

from __future__ import annotations

import importlib
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
    """A learner's answer: the cells they run after the lesson's cells tagged ``build``."""

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
    """The statement that prints the verdict, exactly as the lesson's check cell has it."""
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


def verdict_on(exercise: Exercise, answer: Answer) -> str:
    """What the exercise's check prints for ``answer``: in a fresh kernel the lesson's cells
    tagged ``build`` run (``course.rebuild``), then the answer's cells, then the check."""
    driver = nbformat.v4.new_notebook()
    sources = [f"import course\ncourse.rebuild({exercise.lesson!r})", *answer.cells, exercise.check]
    driver.cells = [nbformat.v4.new_code_cell(source) for source in sources]
    run_in_the_course(driver)
    failed = [
        (cell.source, shown(cell)) for cell in driver.cells[:-1] if any(o.output_type == "error" for o in cell.outputs)
    ]
    if failed:
        source, error = failed[0]
        return f"(the answer's cell failed before the check ran)\n{source}\n{error}"
    return shown(driver.cells[-1])
