"""A LangGraph graph in nbgraph's view, in a real JupyterLab: its interrupt answered by typing, and an
edge its drawing could not know drawn once the run takes it."""

from __future__ import annotations

from test_widget_browser import TIMEOUT, printed, run_all

from conftest import ARTIFACTS


def test_answer_a_langgraph_interrupt_by_typing_and_pressing_enter(lab, page):
    panel = run_all(page, lab, "langgraph.ipynb")
    view = panel.locator(".nbg-root.nbg-live")
    view.wait_for(timeout=TIMEOUT)
    page.wait_for_function(
        "() => document.querySelectorAll('.jp-NotebookPanel .nbg-live .nbg-node').length === 5", timeout=TIMEOUT
    )
    nodes = view.locator(".nbg-node").evaluate_all("els => els.map(e => e.dataset.node)")
    assert sorted(nodes) == ["__end__", "__start__", "ask", "plan", "research"]

    # The interrupt: its question, and the note that LangGraph runs the node again from its start.
    answer = view.locator("input.nbg-answer")
    answer.wait_for(timeout=TIMEOUT)
    prompt = view.locator(".nbg-pause-prompt").inner_text()
    assert prompt == "Which city should we visit?"  # the question alone; what answering runs again is said once
    assert (
        "Answering runs it again: a resume runs 'ask' again from its start"
        in view.locator(".nbg-pause-rerun").inner_text()
    )
    assert view.get_attribute("data-current") == "ask"
    answer.fill("Kyoto")
    answer.press("Enter")

    # The run goes on and ends: the page says so, and so does the kernel (the awaiting cell prints).
    page.wait_for_function(
        "() => document.querySelector('.jp-NotebookPanel .nbg-live').dataset.state === 'done'", timeout=TIMEOUT
    )
    assert printed(panel, "RESULT") == "RESULT done ask->research->plan three days in Kyoto (Kyoto: temples, markets)"
    fired = view.locator(".nbg-edge.nbg-fired").evaluate_all("els => els.map(e => e.dataset.edge)")
    assert set(fired) == {
        "__start__\u2192ask",
        "ask\u2192research",
        "research\u2192plan",
        "plan\u2192__end__",
    }
    # research's Command(goto="plan") has no annotation: the edge is drawn once taken, marked as discovered.
    taken = view.locator(".nbg-edge.nbg-dynamic")
    assert taken.evaluate_all("els => els.map(e => e.dataset.edge)") == ["research\u2192plan"]
    assert (
        "discovered while running: declare it with a Command[Literal['plan', ...]]"
        in taken.locator("title").first.text_content()
    )
    ARTIFACTS.mkdir(exist_ok=True)
    view.screenshot(path=str(ARTIFACTS / "langgraph-done.png"))
