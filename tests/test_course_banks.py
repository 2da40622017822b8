"""Every exercise's check is itself tested: a bank of plausible wrong answers it must refuse with
a message saying what to look at, and right answers unlike the solution it must pass."""

from __future__ import annotations

import ast
import re

import nbformat
import pytest
from checkbank import LESSONS, NOTEBOOKS, Answer, Exercise, banks, verdict_on
from course_pace import guide_rows, minutes, reading, said, timed_in_guide, written

EXERCISES = banks()


@pytest.fixture(autouse=True)
def _nobody_at_the_keyboard(monkeypatch: pytest.MonkeyPatch) -> None:
    """The lesson's cells that wait for a person act at once (its kernel inherits this)."""
    monkeypatch.setenv("NBGRAPH_AUTO_ANSWER", "1")


_HEADING = re.compile(r"^## (Exercise|Milestone)\b.*$", re.M)


def _cases(kind: str) -> list[tuple[Exercise, Answer]]:
    return [(exercise, answer) for exercise in EXERCISES for answer in getattr(exercise, kind)]


def _id(case: tuple[Exercise, Answer]) -> str:
    exercise, answer = case
    return f"{exercise.lesson.removesuffix('.ipynb')}|{exercise.heading.removeprefix('## ')}|{answer.why}"


@pytest.mark.parametrize("case", _cases("wrong"), ids=_id)
def test_a_wrong_answer_is_refused_with_a_message_that_says_where_to_look(case):
    exercise, answer = case
    said = verdict_on(exercise, answer)
    assert said.startswith("Not yet:"), said
    assert answer.says in said, said


@pytest.mark.parametrize("case", _cases("right"), ids=_id)
def test_a_right_answer_unlike_the_solution_passes(case):
    exercise, answer = case
    said = verdict_on(exercise, answer)
    assert said.startswith("Solved:"), said


def test_every_exercise_has_a_bank_of_two_wrong_answers_and_one_right_one():
    """An exercise (or a capstone milestone) without a bank, or with a check the lesson no longer
    has, is found here."""
    headings = {
        (path.name, match.group(0).strip())
        for path in LESSONS
        for cell in nbformat.read(path, as_version=4).cells
        if cell.cell_type == "markdown"
        for match in _HEADING.finditer(cell.source)
    }
    banked = {(exercise.lesson, exercise.heading): exercise for exercise in EXERCISES}
    assert sorted(headings - banked.keys()) == []
    assert sorted(banked.keys() - headings) == []
    for exercise in EXERCISES:
        assert len(exercise.wrong) >= 2 and len(exercise.right) >= 1, exercise.heading
        assert all(answer.says for answer in exercise.wrong), exercise.heading
        lesson = nbformat.read(NOTEBOOKS / exercise.lesson, as_version=4)
        assert any(exercise.check in cell.source for cell in lesson.cells if cell.cell_type == "code"), exercise.check


def _bound(source: str) -> set[str]:
    """The names a cell binds at its top level (a ``%%graph`` or ``%%node`` cell: the name it defines)."""
    if source.startswith(("%%graph", "%%node")):
        return {source.split()[1]}
    try:
        tree = compile(source, "<cell>", "exec", flags=ast.PyCF_ONLY_AST | ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
    except SyntaxError:
        return set()
    names = set()
    for statement in tree.body:  # type: ignore[attr-defined]
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(statement.name)
        elif isinstance(statement, (ast.Import, ast.ImportFrom)):
            names |= {(alias.asname or alias.name).split(".")[0] for alias in statement.names}
        else:
            targets = getattr(statement, "targets", None) or [getattr(statement, "target", None)]
            names |= {n.id for t in targets if t is not None for n in ast.walk(t) if isinstance(n, ast.Name)}
    return names


@pytest.mark.parametrize("exercise", EXERCISES, ids=lambda e: f"{e.lesson.removesuffix('.ipynb')}|{e.heading[3:]}")
def test_a_check_cell_never_binds_a_name_an_answer_binds(exercise):
    """A learner writes the answer above the check cell, then runs the check cell whole: a check
    cell that set `hotfix = None` would report a right answer missing."""
    lesson = nbformat.read(NOTEBOOKS / exercise.lesson, as_version=4)
    (check,) = [cell.source for cell in lesson.cells if cell.cell_type == "code" and exercise.check in cell.source]
    answered = {name for answer in (*exercise.wrong, *exercise.right) for cell in answer.cells for name in _bound(cell)}
    assert sorted(_bound(check) & answered) == []


def test_the_teachers_guide_lists_every_mistake_the_banks_try_and_each_lessons_minutes():
    """The guide's mistakes are the banks' wrong answers, and its minutes are the stated method's
    (course_pace.py) on each lesson's words, code and worked answers, with the timed figures it
    gives (test_course_rerun.py times them again): a bank or a lesson that changes without the
    guide is found here."""
    guide = (NOTEBOOKS / "reference" / "instructors-guide.md").read_text(encoding="utf-8")
    missing = [answer.why for exercise in EXERCISES for answer in exercise.wrong if f"- {answer.why}: " not in guide]
    assert missing == [], "add these mistakes under their exercise in notebooks/reference/instructors-guide.md"
    rows, lines_written = guide_rows(), written()
    assert sorted(rows) == sorted(path.name for path in LESSONS)
    for path in LESSONS:
        row, notebook, answers = rows[path.name], nbformat.read(path, as_version=4), lines_written.get(path.name, [])
        words, lines = reading(notebook)
        shown = ", ".join(map(str, answers)) or "—"
        expected = said(*minutes(notebook, timed_in_guide(row), answers))
        assert (int(row["words"]), int(row["lines"]), row["written"].strip(), row["minutes"]) == (
            words,
            lines,
            shown,
            expected,
        ), f"the guide's row for {path.name} should give {words} words, {lines} lines, {shown}, {expected} minutes"
