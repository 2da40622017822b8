"""The live view in a real JupyterLab: the run animates, a typed answer and a click finish it."""

from __future__ import annotations

from conftest import ARTIFACTS

TIMEOUT = 30_000  # ms; each wait ends as soon as its condition holds


def test_answer_and_approve_in_the_widget(lab, page):
    page.goto(lab.notebook_url("trip.ipynb"), timeout=TIMEOUT)
    panel = page.locator(".jp-NotebookPanel:visible")
    panel.locator(".jp-Notebook").wait_for(timeout=TIMEOUT)
    # Wait until the notebook's kernel is connected and idle, then run every cell.
    page.wait_for_function(
        """() => {
            const panel = window.jupyterapp?.shell.currentWidget;
            const kernel = panel?.sessionContext?.session?.kernel;
            return panel?.context?.isReady && kernel?.connectionStatus === 'connected' && kernel?.status === 'idle';
        }""",
        timeout=TIMEOUT,
    )
    page.evaluate("() => { window.jupyterapp.commands.execute('notebook:run-all-cells'); }")

    view = panel.locator(".nbg-root.nbg-live")
    view.wait_for(timeout=TIMEOUT)
    # The SVG shows every node, START and END included.
    page.wait_for_function(
        "() => document.querySelectorAll('.jp-NotebookPanel .nbg-live .nbg-node').length === 5", timeout=TIMEOUT
    )
    nodes = view.locator(".nbg-node").evaluate_all("els => els.map(e => e.dataset.node)")
    assert sorted(nodes) == ["__end__", "__start__", "ask", "book", "plan"]
    labels = view.locator(".nbg-edge-label").all_text_contents()
    assert labels == ["state.city"]

    # First pause: the input request; the current node is `ask`.
    answer = view.locator("input.nbg-answer")
    answer.wait_for(timeout=TIMEOUT)
    assert view.get_attribute("data-current") == "ask"
    assert view.locator(".nbg-node.nbg-current").get_attribute("data-node") == "ask"
    assert "Which city should we visit?" in view.locator(".nbg-pause-prompt").inner_text()
    answer.fill("Kyoto")
    view.locator("button.nbg-submit").click()

    # Second pause: the approval of `book`; the current node has moved on.
    approve = view.locator("button.nbg-approve")
    approve.wait_for(timeout=TIMEOUT)
    page.wait_for_function(
        "() => document.querySelector('.jp-NotebookPanel .nbg-live').dataset.current === 'book'", timeout=TIMEOUT
    )
    visited = view.locator(".nbg-node.nbg-visited").evaluate_all("els => els.map(e => e.dataset.node)")
    assert {"ask", "plan"} <= set(visited)
    approve.click()

    # The run completes: the page says so, and so does the kernel (the awaiting cell prints).
    page.wait_for_function(
        "() => document.querySelector('.jp-NotebookPanel .nbg-live').dataset.state === 'done'", timeout=TIMEOUT
    )
    output = panel.locator('.jp-RenderedText[data-mime-type="application/vnd.jupyter.stdout"]', has_text="RESULT")
    output.wait_for(timeout=TIMEOUT)
    assert output.inner_text().strip() == "RESULT done ask->plan->book three days in Kyoto"
    fired = view.locator(".nbg-edge.nbg-fired").evaluate_all("els => els.map(e => e.dataset.edge)")
    assert set(fired) == {"__start__\u2192ask", "ask\u2192plan", "plan\u2192book", "book\u2192__end__"}
    unfired = view.locator(".nbg-edge.nbg-unfired").evaluate_all("els => els.map(e => e.dataset.edge)")
    assert unfired == ["plan\u2192__end__"]
    ARTIFACTS.mkdir(exist_ok=True)
    view.screenshot(path=str(ARTIFACTS / "widget-done.png"))

    # The view follows JupyterLab's theme through its CSS variables.
    def label_colour() -> str:
        return view.locator(".nbg-node-label").first.evaluate("el => getComputedStyle(el).fill")

    light = label_colour()
    page.evaluate("() => window.jupyterapp.commands.execute('apputils:change-theme', {theme: 'JupyterLab Dark'})")
    page.wait_for_function("() => document.body.dataset.jpThemeLight === 'false'", timeout=TIMEOUT)
    page.wait_for_function(
        "light => getComputedStyle(document.querySelector('.jp-NotebookPanel .nbg-live .nbg-node-label')).fill !== light",
        arg=light, timeout=TIMEOUT,
    )
    page.locator("#jupyterlab-splash").wait_for(state="detached", timeout=TIMEOUT)
    view.screenshot(path=str(ARTIFACTS / "widget-done-dark.png"))
