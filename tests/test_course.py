"""The course in notebooks/: Run All with nobody at the keyboard ends every tutorial with its notes
(never a failed check or a hang), a real model is set up without guessing its name, and every
lesson is timed, linked and solved."""

from __future__ import annotations

import getpass
import importlib.util
import re
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import nbformat
import pytest
from checkbank import NOTEBOOKS, shown
from course_pace import guide_rows
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError
from openai_server import OpenAIServer, Reply

TUTORIALS = sorted([*NOTEBOOKS.glob("0*.ipynb"), *NOTEBOOKS.glob("1*.ipynb")])
CASES = sorted(NOTEBOOKS.glob("c*.ipynb"))
LESSONS = TUTORIALS + CASES

# A cell where the lesson waits for a person: the helper call is the cell's own statement, not one
# inside `if real:` (the real-model cells skip offline).
_YOUR_TURN = re.compile(r"^\S.*course\.(answer_or_wait|act_or_wait)\(", re.M)
_LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")


def _read(path: Path) -> nbformat.NotebookNode:
    return nbformat.read(path, as_version=4)


def _interactive(cell: nbformat.NotebookNode) -> bool:
    return cell.cell_type == "code" and bool(_YOUR_TURN.search(cell.source))


def _execute(path: Path, monkeypatch: pytest.MonkeyPatch, **env: str | None) -> nbformat.NotebookNode:
    """Run a notebook top to bottom in a fresh kernel, which inherits this environment."""
    for name, value in env.items():
        if value is None:
            monkeypatch.delenv(name, raising=False)
        else:
            monkeypatch.setenv(name, value)
    notebook = _read(path)
    client = NotebookClient(
        notebook, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}}
    )
    client.execute()
    return notebook


# -- Run All with nobody there ---------------------------------------------------------------

UNANSWERED = TUTORIALS + [path for path in CASES if any(_interactive(cell) for cell in _read(path).cells)]


@pytest.mark.parametrize("path", UNANSWERED, ids=lambda path: path.stem)
def test_run_all_with_nobody_answering_ends_with_the_friendly_notes(path, monkeypatch):
    """No auto-answer switch, no browser, and nobody acting: every cell that waits for a person says
    so, waits its visible time, acts itself and says that too, and the checks after it pass."""
    notebook = _execute(path, monkeypatch, NBGRAPH_AUTO_ANSWER=None, COURSE_WAIT="1", NBGRAPH_HEADLESS_WAIT="0")
    for cell in filter(_interactive, notebook.cells):
        text = shown(cell)
        assert "Your turn, in the view above:" in text and "waits up to 1 s" in text, (cell.source, text)
        assert "so this cell answered for you" in text or "so this cell does it for you" in text, (cell.source, text)
    printed = [shown(cell) for cell in notebook.cells if cell.cell_type == "code" and shown(cell).strip()]
    if any(cell.cell_type == "markdown" and cell.source.startswith("## Checks") for cell in notebook.cells):
        assert any("all checks passed" in text for text in printed), path.name
    assert printed[-1].startswith(("Not yet:", "Skipped: offline", "all checks passed")), printed[-1]


def test_a_run_no_browser_shows_gives_up_waiting_and_the_cell_resumes_it(monkeypatch):
    """The kernel has no browser: the run stops waiting after NBGRAPH_HEADLESS_WAIT, long before the
    lesson's own wait is over, and the cell answers from code and resumes the run from its checkpoint."""
    notebook = _execute(
        NOTEBOOKS / "01-first-graph.ipynb",
        monkeypatch,
        NBGRAPH_AUTO_ANSWER=None,
        COURSE_WAIT="600",
        NBGRAPH_HEADLESS_WAIT="1",
    )
    (waiting,) = filter(_interactive, notebook.cells)
    text = shown(waiting)
    assert "No browser shows this notebook" in text and "resumed the run from its checkpoint" in text, text
    assert "done -> ask_topic -> draft -> review -> draft -> review -> publish" in text
    assert any("all checks passed" in shown(cell) for cell in notebook.cells if cell.cell_type == "code")


# -- a real model -----------------------------------------------------------------------------


@pytest.fixture
def server() -> Iterator[OpenAIServer]:
    """The local OpenAI-compatible server; it answers "ok" unless a test scripts otherwise."""
    with OpenAIServer() as started:
        yield started


def _has_real_model_section(path: Path) -> bool:
    return any(cell.cell_type == "code" and "course.real_model(" in cell.source for cell in _read(path).cells)


REAL_MODEL = [path for path in LESSONS if _has_real_model_section(path)]


@pytest.mark.parametrize("path", REAL_MODEL, ids=lambda path: path.stem)
def test_a_real_model_section_runs_on_the_server_it_is_given(path, server: OpenAIServer, monkeypatch):
    """With a server's address and a model name in the environment, the setup cell, the smoke test
    and the lesson's real run go there (no cell says it skipped), and every request names that model."""
    notebook = _execute(
        path,
        monkeypatch,
        NBGRAPH_AUTO_ANSWER="1",
        OPENAI_BASE_URL=server.base_url,
        NBGRAPH_MODEL="course-model",
        OPENAI_API_KEY=None,
    )
    text = "".join(shown(cell) for cell in notebook.cells if cell.cell_type == "code")
    assert f"Real model: course-model at {server.base_url}" in text
    assert "Smoke test passed: course-model replied 'ok'" in text
    assert "Skipped: offline" not in text
    assert len(server.requests) >= 2  # the smoke test, then the lesson's own run
    assert {request["model"] for request in server.requests} == {"course-model"}


def test_the_course_map_says_which_lessons_have_a_real_model_section():
    """A tutorial's row says "yes" in its last column, a case study's row names its part: exactly the
    notebooks with a setup cell."""
    marked = set()
    for row in (NOTEBOOKS / "README.md").read_text(encoding="utf-8").splitlines():
        links = [link for link in _LINK.findall(row) if link.endswith(".ipynb")]
        last = row.rstrip(" |").rsplit("|", 1)[-1].strip()
        if links and last == "yes":
            marked.add(links[0])
        elif links and (part := re.fullmatch(r"part (\d+)", last)):
            marked.add(links[int(part.group(1)) - 1])
    assert marked == {path.name for path in REAL_MODEL}


@pytest.fixture
def course(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    """notebooks/course.py, imported here, in an environment that configures no model."""
    for name in ("OPENAI_BASE_URL", "OPENAI_API_KEY", "NBGRAPH_MODEL"):
        monkeypatch.delenv(name, raising=False)
    spec = importlib.util.spec_from_file_location("course", NOTEBOOKS / "course.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_server_without_a_model_name_is_refused_not_guessed(course, monkeypatch):
    with pytest.raises(course.CourseError, match=r"BASE_URL is 'http://localhost:11434/v1' but MODEL is empty"):
        course.real_model(base_url="http://localhost:11434/v1")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://localhost:8000/v1")
    with pytest.raises(course.CourseError, match=r"http://localhost:8000/v1/models lists them"):
        course.real_model()
    monkeypatch.setenv("NBGRAPH_MODEL", "Qwen/Qwen2.5-7B-Instruct")
    chosen = course.real_model()
    assert (chosen.name, chosen.base_url) == ("Qwen/Qwen2.5-7B-Instruct", "http://localhost:8000/v1")


def test_no_model_configured_stays_offline_and_says_how_to_set_one(course, capsys):
    assert course.real_model() is None
    assert "Offline: no real model is set" in capsys.readouterr().out
    course.smoke_test(None)
    assert capsys.readouterr().out == "Smoke test skipped: offline (no real model set above).\n"
    with pytest.raises(course.CourseError, match="MODEL is 'llama3.2' but there is nowhere to send it"):
        course.real_model(model="llama3.2")


def test_a_key_alone_is_openai_with_its_default_model(course, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-0123456789abcdef")
    chosen = course.real_model()
    assert (chosen.name, chosen.base_url) == ("gpt-4o-mini", None)


def test_a_key_typed_into_the_hidden_field_reaches_the_server(course, server, monkeypatch, capsys):
    typed = "sk-typed-0123456789abcdef"
    monkeypatch.setattr(getpass, "getpass", lambda prompt: typed)  # the person at the keyboard
    chosen = course.real_model(model="course-model", base_url=server.base_url, ask_for_key=True)
    course.smoke_test(chosen)
    chosen.close()
    assert "Smoke test passed: course-model replied 'ok'" in capsys.readouterr().out
    assert server.headers[0]["authorization"] == f"Bearer {typed}"


def test_a_smoke_test_that_reaches_no_model_says_why(course, server):
    server.script(Reply(status=404, text="The model `course-model` does not exist"))
    chosen = course.real_model(model="course-model", base_url=server.base_url)
    with pytest.raises(course.CourseError, match=r"the smoke test got no reply from course-model: .*does not exist"):
        course.smoke_test(chosen)
    chosen.close()


# -- course.rebuild ---------------------------------------------------------------------------


def test_rebuild_runs_only_the_cells_tagged_build_and_names_one_that_fails(tmp_path, monkeypatch):
    def lesson(*cells: tuple[str, list[str]]) -> nbformat.NotebookNode:
        notebook = nbformat.v4.new_notebook()
        notebook.cells = [nbformat.v4.new_code_cell(source, metadata={"tags": tags}) for source, tags in cells]
        return notebook

    nbformat.write(
        lesson(("defined = 1", ["build"]), ("ran_a_run = True", []), ("%load_ext nbgraph", ["build"])),
        tmp_path / "good.ipynb",
    )
    nbformat.write(lesson(("x = 1", ["build"]), ("1 / 0", ["build"])), tmp_path / "bad.ipynb")
    driver = nbformat.v4.new_notebook()
    driver.cells = [
        nbformat.v4.new_code_cell(f"import sys\nsys.path.insert(0, {str(NOTEBOOKS)!r})\nimport course"),
        nbformat.v4.new_code_cell('course.rebuild("good.ipynb")\nprint(defined, "ran_a_run" in globals())'),
        nbformat.v4.new_code_cell('course.rebuild("bad.ipynb")'),
    ]
    monkeypatch.delenv("NBGRAPH_AUTO_ANSWER", raising=False)
    client = NotebookClient(driver, timeout=60, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}})
    with pytest.raises(CellExecutionError) as failed:
        client.execute()
    assert shown(driver.cells[1]) == "Rebuilt good.ipynb: its 2 cells tagged build ran here.\n1 False\n"
    assert failed.value.ename == "CourseError"
    assert failed.value.evalue == "bad.ipynb, cell 2 (tagged build) failed: ZeroDivisionError: division by zero"


# -- the shape of the course -------------------------------------------------------------------


@pytest.mark.parametrize("path", LESSONS, ids=lambda path: path.stem)
def test_every_lesson_says_its_time_and_links_the_map_the_cheat_sheet_and_the_glossary(path):
    """The header's minutes are the teacher's guide's, by the stated method (course_pace.py): half
    an hour or so a tutorial or a case study's part, and the capstone within a teacher's 50–80."""
    notebook = _read(path)
    header = notebook.cells[0].source
    for target in ("README.md", "reference/cheatsheet.md", "reference/glossary.md"):
        assert f"]({target})" in header, (path.name, target)
    said = re.search(r" · (\d+(?:–\d+)?) minutes · ", header)
    assert said, path.name
    row = guide_rows()[path.name]
    assert said.group(1) == row["minutes"], (path.name, said.group(1), row["minutes"])
    quick, slow = map(int, (row["minutes"].split("–") * 2)[:2])
    if path.stem == "09-capstone":
        assert 50 <= quick <= slow <= 80, row["minutes"]
    else:
        assert slow <= (40 if path in TUTORIALS else 45), (path.name, row["minutes"])


@pytest.mark.parametrize("path", TUTORIALS, ids=lambda path: path.stem)
def test_every_tutorial_says_which_of_the_twelve_it_is(path):
    number = int(path.stem.split("-")[0])
    assert f"*Tutorial {number} of {len(TUTORIALS)}" in _read(path).cells[0].source, path.name


def test_the_capstones_header_shows_nothing_of_the_solution():
    """Other tutorials link a picture of their first view; the capstone's would be the solution's graph."""
    header = _read(NOTEBOOKS / "09-capstone.ipynb").cells[0].source
    assert "views/" not in header and "solutions/" not in header.split("\n\n")[1], header


def test_the_builder_api_is_explained_before_a_lesson_first_uses_it():
    """`Graph(...)`, `add_node` and `add_edge` are explained in prose above the first code cell that
    uses them, in the order the course is taken."""
    for path in LESSONS:
        cells = _read(path).cells
        first = next((at for at, c in enumerate(cells) if c.cell_type == "code" and "Graph(" in c.source), None)
        if first is None:
            continue
        prose = "\n".join(c.source for c in cells[:first] if c.cell_type == "markdown")
        assert all(word in prose for word in ("`Graph(", "add_node", "add_edge")), path.name
        return
    raise AssertionError("no lesson builds a graph in Python")


def test_tutorial_11_names_labels_a_metric_and_a_held_out_set_and_the_glossary_defines_them():
    prose = "\n".join(
        c.source for c in _read(NOTEBOOKS / "11-evaluating-an-agent.ipynb").cells if c.cell_type == "markdown"
    )
    glossary = (NOTEBOOKS / "reference" / "glossary.md").read_text(encoding="utf-8")
    for term, entry in (
        ("**label**", "**Label.**"),
        ("**metric**", "**Metric.**"),
        ("**held-out**", "**Held-out set.**"),
    ):
        assert term in prose and entry in glossary, term


def test_tutorial_12_names_samples_graders_pass_rates_and_intervals_and_the_glossary_defines_them():
    prose = "\n".join(
        c.source for c in _read(NOTEBOOKS / "12-grading-samples.ipynb").cells if c.cell_type == "markdown"
    )
    glossary = (NOTEBOOKS / "reference" / "glossary.md").read_text(encoding="utf-8")
    for term, entry in (
        ("**sample**", "**Sample.**"),
        ("**grader**", "**Grader.**"),
        ("**pass rate**", "**Pass rate.**"),
        ("**interval**", "**Interval.**"),
    ):
        assert term in prose and entry in glossary, term
    assert "**Recording.**" in glossary


def test_tutorial_12_replays_what_the_recording_script_records():
    """The lesson's graph and judge send the requests examples/recorded_samples.py records (its prompt,
    its criteria, its fifty messages), so the recording step the lesson shows makes a file it reads."""
    spec = importlib.util.spec_from_file_location(
        "recorded_samples", NOTEBOOKS.parent / "examples" / "recorded_samples.py"
    )
    assert spec is not None and spec.loader is not None
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    code = "\n".join(c.source for c in _read(NOTEBOOKS / "12-grading-samples.ipynb").cells if c.cell_type == "code")
    assert f"PROMPT = {script.PROMPT!r}" in code
    assert "".join(re.findall(r'"([^"]*)"', code.split("CRITERIA = (", 1)[1].split(")\n", 1)[0])) == script.CRITERIA
    spec = importlib.util.spec_from_file_location("course", NOTEBOOKS / "course.py")
    assert spec is not None and spec.loader is not None
    course = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(course)
    cases = course.triage_cases()
    assert {key: (case["message"], case["label"]) for key, case in cases.items()} == script.CASES
    judged, labelled = script.evaluate_offline(course.RECORDINGS / "triage.ndjson")
    assert (judged.overall.passed, labelled.overall.passed, labelled.overall.samples) == (108, 108, 150)


@pytest.mark.parametrize("path", TUTORIALS, ids=lambda path: path.stem)
def test_every_tutorial_has_objectives_a_summary_and_what_to_try_next(path):
    text = "\n".join(cell.source for cell in _read(path).cells if cell.cell_type == "markdown")
    assert "**You will learn to**" in text or "> **The brief.**" in text, path.name
    assert re.search(r"^## What you (learned|built)", text, re.M) and "## Try next" in text, path.name


@pytest.mark.parametrize("path", LESSONS, ids=lambda path: path.stem)
def test_every_exercise_has_a_hint_and_a_solution_that_rebuilds_its_lesson(path):
    notebook = _read(path)
    exercises = [
        cell.source
        for cell in notebook.cells
        if cell.cell_type == "markdown" and cell.source.startswith(("## Exercise", "## Milestone"))
    ]
    if path in TUTORIALS:
        assert exercises, f"{path.name} has no exercise"
    for exercise in exercises:
        assert "<details><summary>Hint" in exercise, (path.name, exercise[:60])
    if not exercises:
        return
    links = {link for cell in notebook.cells if cell.cell_type == "markdown" for link in _LINK.findall(cell.source)}
    (solution,) = {link for link in links if link.startswith("solutions/")}
    solved = _read(NOTEBOOKS / solution)
    assert f'course.rebuild("../{path.name}")' in "\n".join(cell.source for cell in solved.cells), (path.name, solution)


def test_every_markdown_link_of_the_course_leads_somewhere():
    pages = [*NOTEBOOKS.glob("*.md"), *NOTEBOOKS.glob("reference/*.md")]
    notebooks = [*NOTEBOOKS.glob("*.ipynb"), *NOTEBOOKS.glob("solutions/*.ipynb")]
    texts = [(page, page.read_text(encoding="utf-8")) for page in pages]
    texts += [(path, cell.source) for path in notebooks for cell in _read(path).cells if cell.cell_type == "markdown"]
    broken = [
        (source.relative_to(NOTEBOOKS).as_posix(), link)
        for source, text in texts
        for link in _LINK.findall(text)
        if "://" not in link and not (source.parent / link).exists()
    ]
    assert broken == []


def test_the_course_map_lists_every_lesson_and_every_lesson_has_a_way_out():
    course_map = (NOTEBOOKS / "README.md").read_text(encoding="utf-8")
    assert {path.name for path in LESSONS} <= set(_LINK.findall(course_map))
    for path in LESSONS:
        last = _read(path).cells[-1]
        assert last.cell_type == "markdown" and (".ipynb)" in last.source or "README.md)" in last.source), path.name


@pytest.mark.parametrize("path", LESSONS, ids=lambda path: path.stem)
def test_the_course_map_gives_each_lesson_the_minutes_its_header_says(path):
    course_map = (NOTEBOOKS / "README.md").read_text(encoding="utf-8")
    in_a_table = re.search(
        rf"\[{re.escape(path.stem)}\]\({re.escape(path.name)}\) \|[^|\n]*\| (\d+(?:–\d+)?) \|", course_map
    )
    in_a_list = re.search(rf"\]\({re.escape(path.name)}\) \((\d+(?:–\d+)?)\)", course_map)
    found = in_a_table or in_a_list
    assert found, f"the course map gives no minutes for {path.name}"
    header = re.search(r" · (\d+(?:–\d+)?) minutes · ", _read(path).cells[0].source)
    assert header and found.group(1) == header.group(1), (path.name, found.group(1), header and header.group(1))
