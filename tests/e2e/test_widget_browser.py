"""The live view in a real JupyterLab: the run animates, and typed answers and clicks drive it."""

from __future__ import annotations

from conftest import ARTIFACTS

TIMEOUT = 30_000  # ms; each wait ends as soon as its condition holds


def run_all(page, lab, notebook: str):
    """Open ``notebook``, wait for its kernel, run every cell; returns the notebook panel."""
    page.goto(lab.notebook_url(notebook), timeout=TIMEOUT)
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
    return panel


def test_answer_and_approve_in_the_widget(lab, page):
    panel = run_all(page, lab, "trip.ipynb")
    view = panel.locator(".nbg-root.nbg-live")
    view.wait_for(timeout=TIMEOUT)
    # The SVG shows every node, START and END included.
    page.wait_for_function(
        "() => document.querySelectorAll('.jp-NotebookPanel .nbg-live .nbg-node').length === 6", timeout=TIMEOUT
    )
    nodes = view.locator(".nbg-node").evaluate_all("els => els.map(e => e.dataset.node)")
    assert sorted(nodes) == ["__end__", "__start__", "ask", "book", "pick", "plan"]
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

    # Second pause: a choice, offered as one button per option.
    options = view.locator("button.nbg-option")
    options.first.wait_for(timeout=TIMEOUT)
    page.wait_for_function(
        "() => document.querySelector('.jp-NotebookPanel .nbg-live').dataset.current === 'pick'", timeout=TIMEOUT
    )
    assert options.all_text_contents() == ["single", "double"]
    options.nth(1).click()

    # Third pause: the approval of `book`; the current node has moved on.
    approve = view.locator("button.nbg-approve")
    approve.wait_for(timeout=TIMEOUT)
    page.wait_for_function(
        "() => document.querySelector('.jp-NotebookPanel .nbg-live').dataset.current === 'book'", timeout=TIMEOUT
    )
    visited = view.locator(".nbg-node.nbg-visited").evaluate_all("els => els.map(e => e.dataset.node)")
    assert {"ask", "pick", "plan"} <= set(visited)
    approve.click()

    # The run completes: the page says so, and so does the kernel (the awaiting cell prints).
    page.wait_for_function(
        "() => document.querySelector('.jp-NotebookPanel .nbg-live').dataset.state === 'done'", timeout=TIMEOUT
    )
    output = panel.locator('.jp-RenderedText[data-mime-type="application/vnd.jupyter.stdout"]', has_text="RESULT")
    output.wait_for(timeout=TIMEOUT)
    assert output.inner_text().strip() == "RESULT done ask->pick->plan->book three days in Kyoto, double room"
    fired = view.locator(".nbg-edge.nbg-fired").evaluate_all("els => els.map(e => e.dataset.edge)")
    assert set(fired) == {"__start__\u2192ask", "ask\u2192pick", "pick\u2192plan", "plan\u2192book", "book\u2192__end__"}
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


def test_steer_and_stop_a_running_graph(lab, page):
    panel = run_all(page, lab, "long.ipynb")
    view = panel.locator(".nbg-root.nbg-live")
    view.wait_for(timeout=TIMEOUT)
    # The run is under way: the step counter moves while the awaiting cell waits.
    page.wait_for_function(
        "() => /step (\\d{2,})/.test(document.querySelector('.jp-NotebookPanel .nbg-live').textContent)",
        timeout=TIMEOUT,
    )
    assert view.get_attribute("data-state") == "running"
    view.locator("input.nbg-steer-input").fill("go faster")
    view.locator("form.nbg-steer button").click()
    page.wait_for_function(
        "() => document.querySelector('.jp-NotebookPanel .nbg-live').textContent.includes('steer: go faster')",
        timeout=TIMEOUT,
    )
    view.locator("button.nbg-stop").click()
    page.wait_for_function(
        "() => document.querySelector('.jp-NotebookPanel .nbg-live').dataset.state === 'aborted'", timeout=TIMEOUT
    )
    output = panel.locator('.jp-RenderedText[data-mime-type="application/vnd.jupyter.stdout"]', has_text="RESULT")
    output.wait_for(timeout=TIMEOUT)
    assert output.inner_text().strip() == "RESULT aborted cancelled ['go faster']"


def test_an_llm_nodes_streamed_reply_shows_in_the_view(lab, page):
    panel = run_all(page, lab, "llm.ipynb")
    view = panel.locator(".nbg-root.nbg-live")
    view.wait_for(timeout=TIMEOUT)
    reply = "Kyoto in spring: temples, gardens and green tea."
    text = view.locator(".nbg-text")
    # The node has streamed its reply and waits for approval: the view shows the text.
    view.locator("button.nbg-approve").wait_for(timeout=TIMEOUT)
    page.wait_for_function(
        "reply => document.querySelector('.jp-NotebookPanel .nbg-live .nbg-text').textContent === reply",
        arg=reply, timeout=TIMEOUT,
    )
    assert text.is_visible() and view.get_attribute("data-state") == "paused"
    assert view.get_attribute("data-current") == "agent"
    view.locator("button.nbg-approve").click()
    page.wait_for_function(
        "() => document.querySelector('.jp-NotebookPanel .nbg-live').dataset.state === 'done'", timeout=TIMEOUT
    )
    output = panel.locator('.jp-RenderedText[data-mime-type="application/vnd.jupyter.stdout"]', has_text="RESULT")
    output.wait_for(timeout=TIMEOUT)
    assert output.inner_text().strip() == f"RESULT done {reply}"
    # The finished run still shows what the node streamed.
    assert text.inner_text() == reply and text.is_visible()
