"""The batch view in a real JupyterLab: a batch's counts reach the end, each edge shows its
count and is as wide as its share, and a click (or Enter) on an edge lists its inputs."""

from __future__ import annotations

from playwright.sync_api import expect
from test_widget_browser import TIMEOUT, printed, run_all

from conftest import ARTIFACTS

ODD = "work\u2192odd"
EVEN = "work\u2192even"
FIRST = "__start__\u2192work"


def _edge(view, key: str):
    return view.locator(f'[data-edge="{key}"]')


def _has_width(edge, width: str) -> None:
    """The edge's line settles at ``width`` (its width is animated: read it once it has arrived)."""
    expect(edge.locator("path:not(.nbg-hit)").first).to_have_css("stroke-width", width, timeout=TIMEOUT)


def test_a_batch_s_counts_route_histogram_and_an_edge_s_inputs(lab, page):
    panel = run_all(page, lab, "batch.ipynb")
    cells = panel.locator(".jp-Notebook .jp-Cell")

    # `await g.abatch(...)`: the view under the cell counts the runs to the end.
    view = cells.nth(1).locator(".nbg-root.nbg-batch")
    view.wait_for(timeout=TIMEOUT)
    page.wait_for_function(
        "() => document.querySelector('.jp-NotebookPanel .jp-Cell:nth-child(2) .nbg-batch')?.dataset.finished === 'true'",
        timeout=TIMEOUT,
    )
    assert view.get_attribute("data-ended") == "12"
    stats = dict(
        zip(
            view.locator(".nbg-stat").evaluate_all("els => els.map(e => e.dataset.stat)"),
            view.locator(".nbg-stat b").all_text_contents(),
            strict=True,
        )
    )
    assert {k: stats[k] for k in ("ended", "done", "failed", "running", "waiting", "tokens", "cost")} == {
        "ended": "12 / 12",
        "done": "12",
        "failed": "0",
        "running": "0",
        "waiting": "0",
        "tokens": "120",
        "cost": "$0.0120",
    }
    assert float(stats["runs/s"]) > 0

    # Each edge: its count on it, its width by count (every run took the first edge: the widest).
    assert _edge(view, ODD).get_attribute("data-count") == "6"
    assert _edge(view, ODD).locator(".nbg-count-text").text_content() == "6"
    assert _edge(view, FIRST).locator(".nbg-count-text").text_content() == "12"
    _has_width(_edge(view, FIRST), "9px")
    _has_width(_edge(view, ODD), "6.9px")

    # A click on an edge's count lists the inputs that took it.
    _edge(view, ODD).locator(".nbg-count-bg").click()
    heading = view.locator(".nbg-input-heading")
    heading.wait_for(timeout=TIMEOUT)
    assert heading.text_content() == "work \u2192 odd: 6 inputs"
    assert view.locator(".nbg-input-id").all_text_contents() == ["q1", "q3", "q5", "q7", "q9", "q11"]
    # Tab reaches the edges; Enter on one lists its inputs.
    _edge(view, EVEN).focus()
    page.keyboard.press("Enter")
    page.wait_for_function(
        "() => document.querySelector('.jp-NotebookPanel .jp-Cell:nth-child(2) .nbg-input-heading')?.textContent.includes('even')",
        timeout=TIMEOUT,
    )
    assert view.locator(".nbg-input-id").all_text_contents() == ["q0", "q2", "q4", "q6", "q8", "q10"]

    # `g.batch(...)` from a synchronous cell shows its view under that cell too.
    sync = cells.nth(2).locator(".nbg-root.nbg-batch")
    sync.wait_for(timeout=TIMEOUT)
    page.wait_for_function(
        "() => document.querySelector('.jp-NotebookPanel .jp-Cell:nth-child(3) .nbg-batch')?.dataset.ended === '12'",
        timeout=TIMEOUT,
    )

    # compare(): the edges each version took, and the inputs whose path changed.
    compared = cells.nth(3).locator('.nbg-root.nbg-batch[data-mode="compare"]')
    compared.wait_for(timeout=TIMEOUT)
    assert _edge(compared, ODD).get_attribute("data-side") == "both"
    assert _edge(compared, ODD).locator(".nbg-count-text").text_content() == "6\u21921"
    assert _edge(compared, EVEN).locator(".nbg-count-text").text_content() == "6\u219211"
    changed = compared.locator(".nbg-compare-table tr[data-input]")
    assert changed.evaluate_all("rows => rows.map(r => r.dataset.input)") == ["q3", "q5", "q7", "q9", "q11"]
    assert changed.first.locator(".nbg-cmp-old").text_content() == "\u2212 work \u2192 odd"
    assert changed.first.locator(".nbg-cmp-new").text_content() == "+ work \u2192 even"
    view.screenshot(path=str(ARTIFACTS / "batch-view.png"))
    compared.screenshot(path=str(ARTIFACTS / "batch-compare.png"))
    page.evaluate("() => window.jupyterapp.commands.execute('apputils:change-theme', {theme: 'JupyterLab Dark'})")
    page.wait_for_function("() => document.body.dataset.jpThemeLight === 'false'", timeout=TIMEOUT)
    # In the dark theme the counts are light on dark (JupyterLab's own colours).
    fills = _edge(view, ODD).evaluate(
        "g => [g.querySelector('.nbg-count-text'), g.querySelector('.nbg-count-bg')].map(e => getComputedStyle(e).fill)"
    )
    assert fills[0] != fills[1] and fills[1] == view.evaluate("e => getComputedStyle(e).backgroundColor")
    view.screenshot(path=str(ARTIFACTS / "batch-view-dark.png"))
    compared.screenshot(path=str(ARTIFACTS / "batch-compare-dark.png"))


def test_stop_in_the_batch_view(lab, page):
    panel = run_all(page, lab, "batch_stop.ipynb")
    cells = panel.locator(".jp-Notebook .jp-Cell")

    # Stop: no run starts any more, the two under way end aborted (resumable), the rest are skipped.
    held = cells.nth(1).locator(".nbg-root.nbg-batch")
    held.wait_for(timeout=TIMEOUT)
    stop = held.locator("button.nbg-batch-stop")
    stop.wait_for(timeout=TIMEOUT)
    stop.click()
    held.locator(".nbg-pill.nbg-state-aborted").wait_for(timeout=TIMEOUT)
    assert stop.is_hidden()
    assert printed(cells.nth(1), "HELD") == "HELD [('aborted', 2), ('skipped', 10)]"
