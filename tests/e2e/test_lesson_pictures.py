"""A picture of each tutorial's first view, for a projector and for GitHub (where the live view
does not render): each test runs one lesson in a real JupyterLab, every pause answered from
code, and compares its first view, once the run in it has ended, with
notebooks/reference/views/<lesson>.png.

The first view is the first one that shows a run (a live run or a batch); a lesson that shows
none (6, and the capstone's solution) gives its first drawing of a graph. The capstone's own
notebook draws no graph until the learner writes it, so its picture comes from its solution.

As with the docs' pictures (test_pictures.py, whose machinery this reuses): a picture that
differs is written in place and the test fails naming it; NBGRAPH_PICTURES=write makes them
all again.
"""

from __future__ import annotations

import shutil

import pytest
from test_pictures import (
    DURATIONS,
    SCALE,
    WINDOW,
    Album,
    in_kernel,
    set_theme,
    shoot,
    view_at,
)
from test_widget_browser import TIMEOUT, open_notebook

from conftest import ARTIFACTS, HERE

COURSE = HERE.parent.parent / "notebooks"
VIEWS = COURSE / "reference" / "views"
RUN_ALL_TIMEOUT = 120_000  # ms: the longest lesson, run whole

# Each lesson (its path in the course) and how its first view ends: the run's outcome, "idle"
# for a drawing without a run, "finished" for a batch. (A graph defined again by a later
# %%graph cell is drawn again in its first drawing too: the capstone's shows the whole desk.)
LESSONS = {
    "01-first-graph.ipynb": "done",
    "02-graph-language.ipynb": "done",
    "03-llm-agents.ipynb": "done",
    "04-debugging.ipynb": "done",
    "05-state-and-reducers.ipynb": "done",
    "06-limits-and-budgets.ipynb": "idle",
    "07-stop-resume-fork.ipynb": "aborted",
    "08-branches-and-subgraphs.ipynb": "done",
    "solutions/09-capstone.ipynb": "idle",
    "10-langgraph.ipynb": "done",
    "11-evaluating-an-agent.ipynb": "finished",
    "12-grading-samples.ipynb": "done",
}


@pytest.fixture(scope="module")
def course(lab):
    """The course's lessons, their helpers and recordings and the capstone's solution, in the lab's
    folder course/."""
    root = lab.root / "course"
    (root / "solutions").mkdir(parents=True, exist_ok=True)
    for notebook in COURSE.glob("*.ipynb"):
        shutil.copy(notebook, root / notebook.name)
    shutil.copy(COURSE / "course.py", root / "course.py")
    shutil.copytree(COURSE / "recordings", root / "recordings", dirs_exist_ok=True)
    shutil.copy(COURSE / "solutions" / "09-capstone.ipynb", root / "solutions" / "09-capstone.ipynb")
    return "course"


@pytest.fixture
def page(browser, request):
    """test_pictures' page (fixed size and pixel ratio, durations wrapped to be hidden); the
    lesson's kernel is shut down after, and on failure a picture of the page is kept."""
    context = browser.new_context(
        viewport=WINDOW, device_scale_factor=SCALE, color_scheme="light", locale="en-US", timezone_id="UTC"
    )
    context.add_init_script(DURATIONS)
    page = context.new_page()
    yield page
    try:
        if getattr(request.node, "failed_call", False):
            ARTIFACTS.mkdir(exist_ok=True)
            page.screenshot(path=str(ARTIFACTS / f"{request.node.name}-failed.png"))
        page.evaluate("() => window.jupyterapp?.shell.currentWidget?.sessionContext?.shutdown()")
    finally:
        context.close()


@pytest.fixture
def album(browser):
    return Album(browser.version, VIEWS)


def run_lesson(page, lab, notebook: str):
    """Open ``notebook``, have its cells act at once (nobody clicks here), run every cell and
    wait until the last has run; returns the notebook panel."""
    panel = open_notebook(page, lab, notebook)
    set_theme(page, "light")
    # The lab's server leaves NBGRAPH_AUTO_ANSWER out (the other browser tests click), so this
    # kernel gets it here.
    in_kernel(page, "import os; os.environ['NBGRAPH_AUTO_ANSWER'] = '1'")
    page.evaluate("() => { window.jupyterapp.commands.execute('notebook:run-all-cells'); }")
    ended = page.wait_for_function(
        """() => {
            const panel = window.jupyterapp.shell.currentWidget;
            const cells = panel.content.widgets.filter(
                (cell) => cell.model.type === 'code' && cell.model.sharedModel.getSource().trim());
            for (const cell of cells) {
                const error = cell.model.outputs.toJSON().find((out) => out.output_type === 'error');
                if (error) return `cell ${panel.content.widgets.indexOf(cell)}: ${error.ename}: ${error.evalue}`;
            }
            const idle = panel.sessionContext.session?.kernel?.status === 'idle';
            return idle && cells.every((cell) => cell.model.executionCount !== null) ? 'ran' : null;
        }""",
        timeout=RUN_ALL_TIMEOUT,
    ).json_value()
    assert ended == "ran", f"{notebook} failed at {ended}"
    return panel


def first_view(page) -> int:
    """The index of the first cell whose view shows a run, or else of the first with a view."""
    found = page.evaluate(
        """() => {
            const cells = window.jupyterapp.shell.currentWidget.content.widgets;
            const first = (selector) => cells.findIndex((cell) => cell.node.querySelector(selector));
            const run = first('.nbg-root.nbg-live, .nbg-root.nbg-batch');
            return run >= 0 ? run : first('.nbg-root');
        }"""
    )
    assert found >= 0, "no cell shows a view"
    return found


def picture_of(notebook: str) -> str:
    """The picture's name: the lesson's, for the capstone's solution too."""
    return notebook.removeprefix("solutions/").removesuffix(".ipynb")


@pytest.mark.parametrize("notebook", list(LESSONS), ids=picture_of)
def test_the_first_view_of_each_lesson(lab, course, page, album, notebook):
    panel = run_lesson(page, lab, f"{course}/{notebook}")
    cell = first_view(page)
    view = view_at(panel, cell)
    # The run in it has ended (a drawing without a run is "idle" from the start), as the lesson has it.
    page.wait_for_function(
        "el => el.dataset.finished === 'true' || !['running', 'paused'].includes(el.dataset.state)",
        arg=view.element_handle(),
        timeout=TIMEOUT,
    )
    ended = "finished" if view.get_attribute("data-finished") == "true" else view.get_attribute("data-state")
    assert ended == LESSONS[notebook], f"the first view (cell {cell}) ended {ended!r}, not {LESSONS[notebook]!r}"
    album.keep(picture_of(notebook), [shoot(page, view)])
    album.verdict()


def test_every_tutorial_has_its_picture_taken():
    tutorials = {path.name for path in COURSE.glob("[01][0-9]-*.ipynb")}
    taken = {notebook.removeprefix("solutions/") for notebook in LESSONS}
    assert taken == tutorials
