"""Breakpoints in a real JupyterLab: `%graph run NAME --step`, answered with the pause panel's
Continue / Step / Stop buttons."""

from __future__ import annotations

from test_widget_browser import TIMEOUT, printed, run_all


def test_step_continue_and_stop_in_the_view(lab, page):
    panel = run_all(page, lab, "breakpoints.ipynb")
    view = panel.locator(".nbg-root.nbg-live")
    view.wait_for(timeout=TIMEOUT)

    # Step mode: paused before the first node.
    box = view.locator('.nbg-pause-breakpoint[data-path="plan"]')
    box.wait_for(timeout=TIMEOUT)
    assert box.locator(".nbg-pause-node").text_content() == "Breakpoint \u2014 plan"
    assert box.locator(".nbg-pause-prompt").inner_text() == "Paused before 'plan'"
    assert box.locator("button").all_text_contents() == ["Continue", "Step", "Stop"]
    assert box.locator(".nbg-break-update").count() == 0  # before a node: nothing to show yet
    box.locator("button.nbg-break-step").click()

    # Step: paused again before the next node, though it has no breakpoint.
    box = view.locator('.nbg-pause-breakpoint[data-path="act"]')
    box.wait_for(timeout=TIMEOUT)
    assert box.locator(".nbg-pause-prompt").inner_text() == "Paused before 'act'"
    page.wait_for_function(
        "() => document.querySelector('.jp-NotebookPanel .nbg-live').dataset.state === 'paused'", timeout=TIMEOUT
    )
    box.locator("button.nbg-break-continue").click()

    # Continue: on to the breakpoint after act, which shows what act returned.
    update = view.locator(".nbg-pause-breakpoint .nbg-break-update")
    update.wait_for(timeout=TIMEOUT)
    assert '"note": "acted"' in update.inner_text()
    box = view.locator(".nbg-pause-breakpoint")
    assert box.locator(".nbg-pause-prompt").inner_text() == "Paused after 'act'"
    box.locator("button.nbg-break-stop").click()

    # Stop: the run ends aborted, in the page and in the kernel; wrap never ran.
    page.wait_for_function(
        "() => document.querySelector('.jp-NotebookPanel .nbg-live').dataset.state === 'aborted'", timeout=TIMEOUT
    )
    assert printed(panel, "RESULT") == (
        "RESULT aborted | stopped at the breakpoint after 'act' (step 2) | ['plan', 'act']"
    )
    assert view.locator(".nbg-pause").count() == 0
