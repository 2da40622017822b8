"""A kernel as Colab runs it (ipykernel 6.17.1, IPython 7.34, nbgraph installed beside them as a
user installs it there), in a real JupyterLab: the view's buttons answer an approval, and a cell
awaiting a paused run fails at once saying what to do, rather than waiting for a click that
this kernel reads only once the cell has ended."""

from __future__ import annotations

import time

import colab_kernel
from test_widget_browser import TIMEOUT, printed

from conftest import ARTIFACTS


def test_colabs_kernel_answers_by_click_and_a_cell_awaiting_a_paused_run_fails_at_once(lab, page):
    colab_kernel.python()  # (built once, and ahead in CI)
    page.goto(lab.notebook_url("colab.ipynb"), timeout=TIMEOUT)
    panel = page.locator(".jp-NotebookPanel:visible")
    panel.locator(".jp-Notebook").wait_for(timeout=TIMEOUT)
    page.wait_for_function(
        """() => {
            const panel = window.jupyterapp?.shell.currentWidget;
            const kernel = panel?.sessionContext?.session?.kernel;
            return panel?.context?.isReady && kernel?.connectionStatus === 'connected' && kernel?.status === 'idle';
        }""",
        timeout=TIMEOUT * 2,  # (a first start of this kernel compiles its packages' bytecode)
    )
    page.evaluate("() => { window.jupyterapp.commands.execute('notebook:run-all-cells'); }")
    assert printed(panel, "KERNEL") == "KERNEL 6.17.1 7.34.0"

    # The run pauses at the approval; the view shows it (the kernel's updates reach the page).
    cells = panel.locator(".jp-Cell")
    view = cells.nth(1).locator(".nbg-root.nbg-live")
    approve = view.locator("button.nbg-approve")
    approve.wait_for(timeout=TIMEOUT)
    shown = time.monotonic()

    # The cell awaiting the run fails at once, saying why and what to do (Run All stops there).
    error = cells.nth(2).locator('.jp-RenderedText[data-mime-type="application/vnd.jupyter.stderr"]')
    error.wait_for(timeout=10_000)
    took = time.monotonic() - shown
    text = error.text_content() or ""
    assert "CannotWaitHere" in text
    assert "this kernel (ipykernel 6.17.1) reads a click in a view only after the running cell ends" in text
    assert "end this cell without awaiting the run, answer in its view, and read run.result() in the next cell" in text
    assert took < 10, f"the cell failed {took:.1f} s after the pause showed"
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "colab-await-fails-at-once.png"))

    # The run went on waiting: Approve answers it now that no cell runs.
    approve.click()
    page.wait_for_function(
        "() => document.querySelectorAll('.jp-NotebookPanel .jp-Cell')[1].querySelector('.nbg-live').dataset.state === 'done'",
        timeout=TIMEOUT,
    )
    assert "done" in view.locator(".nbg-status").text_content()
    page.evaluate(
        """() => {
            const panel = window.jupyterapp.shell.currentWidget;
            panel.content.activeCellIndex = 3;
            window.jupyterapp.commands.execute('notebook:run-cell');
        }"""
    )
    assert printed(panel, "RESULT") == "RESULT done True"
