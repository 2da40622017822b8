"""The course's stated method for a lesson's minutes (notebooks/README.md, the teacher's guide).

A lesson takes the time to read it, to run its cells, and to do its exercises:

- reading: its prose, and what its cells print, at READING words a minute; its code at CODE
  lines a minute;
- running: its cells' own seconds, timed in a run whose pauses are answered at once (the
  teacher's guide keeps each lesson's figures: `test_course_rerun.py` times them again);
- exercises: EXERCISE minutes each (its task and hint read, its check run and its answer read),
  and LINE minutes, quick to slow, for each line its worked answer writes that the learner has
  not read already (in the lesson, the case study's parts before it, or an earlier answer).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import nbformat
from course_mutants import LESSONS, lesson_of, solutions

READING = 180
"""Words a minute a learner reads to themself, prose or printed."""
CODE = 8
"""Lines of code a minute a learner reads."""
EXERCISE = 2
"""Minutes an exercise takes besides its code."""
LINE = (1.0, 1.5)
"""Minutes a line of the worked answer takes to write, thinking included: quick, slow."""


@dataclass(frozen=True)
class Timed:
    """What a timed run of a lesson gave: its cells' seconds, and the words they printed."""

    seconds: float
    printed: int


def _code(path: Path) -> set[str]:
    cells = nbformat.read(path, as_version=4).cells
    return {line.strip() for cell in cells if cell.cell_type == "code" for line in cell.source.splitlines()}


def written() -> dict[str, list[int]]:
    """For each lesson with exercises, the lines each worked answer writes that the learner has not
    read before: not in the lesson, the case study's earlier parts, or an earlier answer."""
    found: dict[str, list[int]] = {}
    for solution in solutions():
        read: set[str] = set()
        for exercise in solution.exercises:
            lesson = lesson_of(exercise)
            study = lesson.stem.split("-")[0]
            parts = [p for p in LESSONS if p.stem.split("-")[0] == study and p.name <= lesson.name]
            for part in parts if lesson.stem.startswith("c") else [lesson]:
                read |= _code(part)
            lines = {
                line.strip()
                for source in exercise.answer
                for line in source.splitlines()
                if line.strip() and not line.strip().startswith("#")
            }
            found.setdefault(lesson.name, []).append(len(lines - read))
            read |= lines
    return found


def reading(notebook: nbformat.NotebookNode) -> tuple[int, int]:
    """The lesson's words of prose and its lines of code."""
    words = sum(len(cell.source.split()) for cell in notebook.cells if cell.cell_type == "markdown")
    lines = sum(
        1 for cell in notebook.cells if cell.cell_type == "code" for line in cell.source.splitlines() if line.strip()
    )
    return words, lines


def minutes(notebook: nbformat.NotebookNode, timed: Timed, lines_written: list[int]) -> tuple[int, int]:
    """The lesson's minutes, quick and slow, by the stated method."""
    words, lines = reading(notebook)
    base = (words + timed.printed) / READING + lines / CODE + timed.seconds / 60
    quick, slow = (base + sum(EXERCISE + n * rate for n in lines_written) for rate in LINE)
    return round(quick), round(slow)


GUIDE = Path(__file__).parents[1] / "notebooks" / "reference" / "instructors-guide.md"
_ROW = re.compile(
    r"^\| \[(?P<lesson>[^]]+)\]\(\.\./(?P=lesson)\.ipynb\) \| (?P<words>\d+) \| (?P<lines>\d+) \| (?P<printed>\d+) "
    r"\| (?P<seconds>[\d.]+) \| (?P<written>[^|]*) \| (?P<minutes>\d+(?:–\d+)?) \|$",
    re.M,
)


def guide_rows() -> dict[str, re.Match[str]]:
    """The rows of the guide's table of minutes, by lesson file name."""
    return {f"{row['lesson']}.ipynb": row for row in _ROW.finditer(GUIDE.read_text(encoding="utf-8"))}


def timed_in_guide(row: re.Match[str]) -> Timed:
    return Timed(float(row["seconds"]), int(row["printed"]))


def said(quick: int, slow: int) -> str:
    """Minutes as the course writes them: "24–27", or "26" when quick and slow agree."""
    return f"{quick}–{slow}" if quick != slow else str(quick)
