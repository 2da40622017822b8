"""Each exercise's check, tried against mutants of its worked solution (tests/course_mutants.py says
how they are made and judged): of the mutants that change what the check can see, a lesson's
checks refuse at least nine in ten with a message naming the real cause, and the teacher's guide
gives each lesson's score as it is."""

from __future__ import annotations

import re
import time

import pytest
from checkbank import NOTEBOOKS
from course_mutants import VERDICTS, Report, Solution, solutions, try_mutants

SOLUTIONS = solutions()
GUIDE = NOTEBOOKS / "reference" / "instructors-guide.md"


def row(report: Report) -> str:
    """The lesson's row in the guide's table of mutation scores."""
    name = report.solution.removesuffix(".ipynb")
    counts = " | ".join(str(report.count(verdict)) for verdict in VERDICTS)
    return f"| [{name}](../solutions/{report.solution}) | {len(report.judged)} | {counts} | {report.score:.0%} |"


@pytest.mark.parametrize("solution", SOLUTIONS, ids=lambda solution: solution.name.removesuffix(".ipynb"))
def test_the_checks_refuse_nine_in_ten_mutants_that_change_what_they_see_naming_the_cause(solution: Solution):
    started = time.perf_counter()
    report = try_mutants(solution)
    print(f"{solution.name}: {len(report.judged)} mutants in {time.perf_counter() - started:.1f} s")
    assert report.score >= 0.9, "\n".join(report.misses())
    guide = GUIDE.read_text(encoding="utf-8")
    assert row(report) in guide, f"the guide's row for {solution.name} should read:\n{row(report)}"


def test_the_guide_has_a_row_for_each_solution_and_no_other():
    guide = GUIDE.read_text(encoding="utf-8")
    rows = re.findall(r"^\| \[[^]]+\]\(\.\./solutions/([^)]+)\) \| \d+ \|", guide, re.M)
    assert rows == [solution.name for solution in SOLUTIONS]
