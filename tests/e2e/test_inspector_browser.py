"""The inspector and the step slider in a real JupyterLab: a finished run's log line opens
its step (node, diff), Escape closes it and gives the focus back; the slider scrubs the
drawing back to an earlier current node with fewer visited nodes; a visited node opens its
latest step; GraphView.replay of an NDJSON file renders, scrubs and inspects, running no node."""

from __future__ import annotations

from test_marks_browser import open_notebook, run_cells
from test_widget_browser import TIMEOUT, printed


def visited(root) -> set[str]:
    return set(root.locator(".nbg-node.nbg-visited").evaluate_all("els => els.map(e => e.dataset.node)"))


def test_inspect_a_finished_run_and_scrub_it(lab, page):
    panel = open_notebook(page, lab, "inspector.ipynb")
    cells = panel.locator(".jp-Notebook .jp-Cell")
    run_cells(page, 0, 4)
    assert printed(panel, "DONE") == "DONE done 5 3"  # setup, count x3, finish

    view = cells.nth(1).locator(".nbg-root")
    slider = view.locator(".nbg-replay")
    slider.wait_for(state="visible", timeout=TIMEOUT)  # the run has ended: its frames came
    rng = slider.locator("input[type=range]")
    assert rng.input_value() == "5" and rng.get_attribute("max") == "5"
    assert visited(view) == {"setup", "count", "finish"}
    fired_at_end = view.locator(".nbg-edge.nbg-fired").count()

    # A step's log line opens the inspector on that step; Escape closes it, the focus returns.
    line = view.locator('.nbg-log-step[data-step="3"]')
    line.click()
    inspector = view.locator(".nbg-inspector")
    page.wait_for_function("el => el.dataset.step === '3'", arg=inspector.element_handle(), timeout=TIMEOUT)
    assert inspector.is_visible()
    assert "Step 3 \u00b7 count" in inspector.locator(".nbg-insp-head").inner_text()
    assert inspector.locator(".nbg-insp-chg").first.inner_text() == "~ n: 1 \u2192 2"
    candidates = inspector.locator(".nbg-insp-candidate").all_inner_texts()
    assert "\u2713 n < 3: true" in candidates and "\u00b7 n >= 3: false" in candidates
    assert inspector.evaluate("el => el === document.activeElement")
    page.keyboard.press("Escape")
    inspector.wait_for(state="hidden", timeout=TIMEOUT)
    assert line.evaluate("el => el === document.activeElement")
    # And by keyboard: Enter on a focused line.
    view.locator('.nbg-log-step[data-step="1"]').focus()
    page.keyboard.press("Enter")
    page.wait_for_function(
        "el => el.dataset.step === '1' && !el.hidden", arg=inspector.element_handle(), timeout=TIMEOUT
    )
    assert inspector.locator(".nbg-insp-head").inner_text().startswith("Step 1 \u00b7 setup")
    page.keyboard.press("Escape")
    inspector.wait_for(state="hidden", timeout=TIMEOUT)

    # A visited node opens its latest step.
    view.locator('.nbg-node[data-node="count"] .nbg-node-label').click()
    page.wait_for_function(
        "el => el.dataset.step === '4' && !el.hidden", arg=inspector.element_handle(), timeout=TIMEOUT
    )
    assert inspector.locator(".nbg-insp-fired").inner_text() == "fired: count \u2192 finish (n >= 3)"
    page.keyboard.press("Escape")
    # And by keyboard: a node the run reached is in the Tab order; Enter opens its latest step.
    node = view.locator('.nbg-node[data-node="count"]')
    assert (
        node.get_attribute("tabindex") == "0" and node.get_attribute("aria-label") == "Inspect the latest step of count"
    )
    node.focus()
    page.keyboard.press("Enter")
    page.wait_for_function(
        "el => el.dataset.step === '4' && !el.hidden", arg=inspector.element_handle(), timeout=TIMEOUT
    )
    page.keyboard.press("Escape")
    inspector.wait_for(state="hidden", timeout=TIMEOUT)
    assert node.evaluate("el => el === document.activeElement")

    # The slider, by arrow keys: back two frames (frame 3: count's 2nd step, then current).
    rng.focus()
    page.keyboard.press("ArrowLeft")
    page.keyboard.press("ArrowLeft")
    page.wait_for_function("el => el.dataset.frame === '3'", arg=view.element_handle(), timeout=TIMEOUT)
    assert view.get_attribute("data-current") == "count"
    assert visited(view) == {"setup"}  # count is the current node, finish has not run
    assert "frame 3 / 5 \u00b7 step 3 \u00b7 count" == slider.locator(".nbg-replay-label").inner_text()
    assert view.locator(".nbg-edge.nbg-fired").count() < fired_at_end
    assert "nbg-fired" not in view.locator('.nbg-edge[data-edge="count\u2192finish"]').get_attribute("class")
    # Back to the start with the button, then dragged to the end: the run as it ended.
    slider.locator(".nbg-replay-prev").click()
    slider.locator(".nbg-replay-prev").click()
    page.wait_for_function("el => el.dataset.frame === '1'", arg=view.element_handle(), timeout=TIMEOUT)
    assert view.get_attribute("data-current") == "setup" and visited(view) == set()
    rng.fill("5")
    page.wait_for_function("el => el.dataset.frame === ''", arg=view.element_handle(), timeout=TIMEOUT)
    assert visited(view) == {"setup", "count", "finish"} and view.get_attribute("data-current") == ""

    # GraphView.replay of an NDJSON file: drawn at its last frame, scrubs, inspects; no node ran.
    replayed = cells.nth(3).locator(".nbg-root")
    replayed.locator(".nbg-replay").wait_for(state="visible", timeout=TIMEOUT)
    assert visited(replayed) == {"setup", "count", "finish"}
    assert replayed.locator(".nbg-log-step").count() == 5
    back = replayed.locator("input[type=range]")
    back.focus()
    page.keyboard.press("Home")
    page.keyboard.press("ArrowRight")
    page.keyboard.press("ArrowRight")
    page.wait_for_function("el => el.dataset.frame === '2'", arg=replayed.element_handle(), timeout=TIMEOUT)
    assert replayed.get_attribute("data-current") == "count" and visited(replayed) == {"setup"}
    replayed.locator(".nbg-replay-inspect").click()
    shown = replayed.locator(".nbg-inspector")
    page.wait_for_function("el => el.dataset.step === '2' && !el.hidden", arg=shown.element_handle(), timeout=TIMEOUT)
    assert "Step 2 \u00b7 count" in shown.locator(".nbg-insp-head").inner_text()
    assert printed(panel, "RAN") == "RAN 3"  # the replay and the inspections ran no node
