"""Marks on the drawing in a real JupyterLab: a graph's problem as a warning sign with its
message, a breakpoint clicked on a node that the next `%graph run` pauses at, and an LLM
node's tokens under it."""

from __future__ import annotations

from test_widget_browser import TIMEOUT, open_notebook, printed


def run_cells(page, first: int, last: int) -> None:
    """Run cells ``first`` to ``last`` (not waiting for them to finish)."""
    page.evaluate(
        """([first, last]) => {
            const app = window.jupyterapp;
            const notebook = app.shell.currentWidget.content;
            notebook.deselectAll();
            notebook.activeCellIndex = first;
            notebook.extendContiguousSelectionTo(last);
            app.commands.execute('notebook:run-cell');
        }""",
        [first, last],
    )


def test_problems_breakpoints_and_cost_on_the_drawing(lab, page):
    panel = open_notebook(page, lab, "marks.ipynb")
    cells = panel.locator(".jp-Notebook .jp-Cell")
    run_cells(page, 0, 4)

    # A node no edge reaches: a warning sign on it, the message in its title and aria-label.
    lost = cells.nth(1).locator(".nbg-root")
    sign = lost.locator('.nbg-node[data-node="act"] .nbg-problem')
    sign.wait_for(timeout=TIMEOUT)
    assert sign.is_visible()
    message = "node 'act' cannot be reached from START by any edge, router target or declared destination"
    assert sign.locator("title").text_content() == message
    assert sign.get_attribute("aria-label") == f"Problem: {message}"
    assert not lost.locator('.nbg-node[data-node="plan"] .nbg-problem').is_visible()

    # An LLM node on a ScriptedModel: its tokens under it once the run has ended.
    chat = cells.nth(2).locator(".nbg-root.nbg-live")
    chat.wait_for(timeout=TIMEOUT)
    tokens = int(printed(panel, "CHAT").split()[-1])
    assert printed(panel, "CHAT") == f"CHAT done {tokens}" and tokens > 0
    cost = chat.locator('.nbg-node[data-node="agent"] .nbg-cost')
    page.wait_for_function("el => el.textContent !== ''", arg=cost.element_handle(), timeout=TIMEOUT)
    assert cost.text_content() == f"{tokens} tok"

    # A click on a node's left edge sets a breakpoint before it, on the graph in the kernel.
    walk = cells.nth(4).locator(".nbg-root")
    marker = walk.locator('.nbg-bp[data-bp="act"]')
    marker.wait_for(timeout=TIMEOUT)
    assert marker.get_attribute("aria-pressed") == "false"
    marker.click()
    walk.locator('.nbg-bp.nbg-bp-on-before[data-bp="act"]').wait_for(timeout=TIMEOUT)
    assert marker.get_attribute("aria-pressed") == "true"
    assert walk.locator(".nbg-bp-on-before").count() == 1
    # "b" on a focused marker toggles too: on, then off again.
    wrap = walk.locator('.nbg-bp[data-bp="wrap"]')
    wrap.focus()
    page.keyboard.press("b")
    walk.locator('.nbg-bp.nbg-bp-on-before[data-bp="wrap"]').wait_for(timeout=TIMEOUT)
    page.keyboard.press("b")
    walk.locator('.nbg-bp:not(.nbg-bp-on-before)[data-bp="wrap"]').wait_for(timeout=TIMEOUT)

    # `%graph run walk` pauses before act, with the marker drawn in the run's view too.
    run_cells(page, 5, 6)
    view = cells.nth(5).locator(".nbg-root.nbg-live")
    box = view.locator('.nbg-pause-breakpoint[data-path="act"]')
    box.wait_for(timeout=TIMEOUT)
    assert box.locator(".nbg-pause-prompt").inner_text() == "Paused before 'act'"
    assert box.locator("button").all_text_contents() == ["Continue", "Step", "Stop"]
    assert view.locator('.nbg-bp[data-bp="act"]').get_attribute("aria-pressed") == "true"
    box.locator("button.nbg-break-continue").click()
    assert printed(panel, "RESULT") == "RESULT done | None | ['plan', 'act', 'wrap']"
