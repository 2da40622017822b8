"""The debugger's runs in a real JupyterLab: fork from a step beside the old path, an answer that
resumes an ended run (said before it is given), a budget raised from the view, and a fork onto a
graph redefined while its run waits."""

from __future__ import annotations

from test_widget_browser import TIMEOUT, run_all


def view_of(panel, cell: int):
    """The view displayed by the notebook's ``cell`` (0-based), scrolled to: JupyterLab draws
    only the cells near the viewport."""
    panel.page.evaluate("i => window.jupyterapp.shell.currentWidget.content.scrollToItem(i, 'start')", cell)
    return panel.locator(".jp-Cell").nth(cell).locator(".nbg-root")


def state_of(panel, cell: int, state: str) -> None:
    panel.locator(".jp-Cell").nth(cell).locator(f'.nbg-root[data-state="{state}"]').wait_for(timeout=TIMEOUT)


def test_fork_from_a_step_draws_the_new_path_beside_the_old(lab, page):
    panel = run_all(page, lab, "debugger.ipynb")
    first = view_of(panel, 2)
    first.wait_for(timeout=TIMEOUT)
    state_of(panel, 2, "done")
    assert first.locator('.nbg-edge.nbg-fired[data-edge="classify→escalate"]').count() == 1
    # The routing cell below has been re-run (urgent mail now gets a reply): fork after classify.
    panel.locator(".jp-Cell").nth(4).locator(".jp-OutputArea").first.wait_for(state="attached", timeout=TIMEOUT)
    first.locator('.nbg-log-step[data-step="2"]').click()
    fork = first.locator(".nbg-inspector button.nbg-fork")
    fork.wait_for(timeout=TIMEOUT)
    assert fork.inner_text() == "Fork from here"
    fork.click()
    legend = first.locator(".nbg-fork-legend")
    legend.wait_for(timeout=TIMEOUT)
    assert "after step 2. Dashed: its path that this run did not take." in legend.inner_text()
    first.locator('.nbg-edge.nbg-fired[data-edge="classify→reply"]').wait_for(timeout=TIMEOUT)
    state_of(panel, 2, "done")
    # The old path beside the new one: the edge the first run took, dashed, and the node it visited.
    assert first.locator('.nbg-edge.nbg-was-fired[data-edge="classify→escalate"]').count() == 1
    assert first.locator('.nbg-node.nbg-was-visited[data-node="escalate"]').count() == 1
    assert first.locator('.nbg-node.nbg-visited[data-node="reply"]').count() == 1
    log = first.locator(".nbg-log").inner_text()
    assert "after step 2: steps up to 2 are reused, nothing before runs again" in log
    assert log.index("classify") < log.index("reply")


def test_answering_an_ended_run_resumes_it_as_the_warning_said(lab, page):
    panel = run_all(page, lab, "debugger.ipynb")
    view = view_of(panel, 5)
    box = view.locator(".nbg-pause-input")
    box.wait_for(timeout=TIMEOUT)
    # Said on the box and on the node before any answer.
    assert box.locator(".nbg-pause-rerun").inner_text() == (
        "\u21bb Answering resumes the run from its checkpoint: a resume runs 'ask' again from its start."
    )
    assert view.locator('.nbg-node.nbg-rerun-warned[data-node="ask"]').count() == 1
    field = box.locator("input.nbg-answer")
    field.fill("tides")
    field.press("Enter")
    view.locator('.nbg-node.nbg-visited[data-node="write"]').wait_for(timeout=TIMEOUT)
    assert view.locator('.nbg-node.nbg-reran[data-node="ask"]').count() == 1
    assert view.locator(".nbg-pause").count() == 0
    assert "resumed from its checkpoint" in view.locator(".nbg-log").inner_text()


def test_a_budget_about_to_be_exceeded_is_raised_from_the_view(lab, page):
    panel = run_all(page, lab, "debugger.ipynb")
    view = view_of(panel, 6)
    box = view.locator(".nbg-pause-budget")
    box.wait_for(timeout=TIMEOUT)
    # textContent, not innerText: JupyterLab may leave a cell scrolled out of view undrawn, whose innerText is "".
    over = box.locator(".nbg-budget-over").text_content() or ""
    assert over.startswith("tokens: 200 used of 250, the next step may take 100")
    field = box.locator("input.nbg-budget-input")
    assert field.input_value() == "500"  # suggested: twice the limit
    field.fill("1000")
    field.press("Enter")
    view.locator(".nbg-stat-tokens b", has_text="600").wait_for(timeout=TIMEOUT)
    assert view.locator(".nbg-pause").count() == 0


def test_a_graph_redefined_while_its_run_waits_offers_a_fork_onto_it(lab, page):
    panel = run_all(page, lab, "debugger.ipynb")
    view = view_of(panel, 8)
    box = view.locator(".nbg-pause-input")
    box.wait_for(timeout=TIMEOUT)
    # A live run answered here runs nothing again; the note says what a resume would.
    assert box.locator(".nbg-pause-rerun").inner_text().startswith("\u21bb Answered here, nothing runs again;")
    offer = view.locator(".nbg-redefined")
    offer.wait_for(timeout=TIMEOUT)
    assert "graph 'drafts' was redefined while this run waits" in offer.inner_text()
    offer.locator("button.nbg-fork-onto").click()
    # The view now shows the fork, on the new definition: START -> write -> END.
    view.locator('.nbg-node.nbg-visited[data-node="write"]').wait_for(timeout=TIMEOUT)
    assert view.locator('.nbg-node[data-node="ask"]').count() == 0
    assert offer.is_hidden()
