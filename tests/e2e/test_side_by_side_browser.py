"""Two runs side by side in a real JupyterLab: a fork and the run it came from drawn on one
graph, each path in its colour, the step where they part marked on the graph and in the
frame table, the state diff at the first difference; reachable by keyboard, clean under axe
in light and dark themes. A ``SideBySide`` left as a cell's value displays as the same view."""

from __future__ import annotations

from test_approvals_browser import focused, run_fresh
from test_decisions_browser import both_themes
from test_widget_browser import TIMEOUT


def test_a_fork_and_its_run_drawn_side_by_side_with_their_parting_step_marked(lab, page):
    panel = run_fresh(page, lab, "side_by_side.ipynb")
    view = panel.locator(".jp-Cell").nth(0).locator(".nbg-root.nbg-compared")
    view.wait_for(timeout=TIMEOUT)

    # Where the paths part (frame 3): the run drafted again, the fork published.
    draft, publish = view.locator('[data-node="draft"]'), view.locator('[data-node="publish"]')
    assert draft.get_attribute("data-parted") == "run" and publish.get_attribute("data-parted") == "fork"
    assert "nbg-parted" in draft.get_attribute("class").split()
    assert draft.locator(".nbg-parted-mark").text_content() == "parts: run"
    assert view.locator(".nbg-parted").count() == 2
    assert view.locator(".nbg-controls").is_hidden()  # (nothing runs here to steer or stop)
    # The edge only the run took is in the run's colour; what both took, in the colour of a path taken.
    again = view.locator('[data-edge="review\u2192draft"]')
    assert "nbg-side-a" in again.get_attribute("class").split()
    assert "nbg-side-both" in view.locator('[data-edge="draft\u2192review"]').get_attribute("class").split()
    colour = "el => getComputedStyle(el).stroke"
    accent = view.evaluate("el => getComputedStyle(el).getPropertyValue('--nbg-side-a').trim()")
    assert accent and again.locator("path").first.evaluate(colour) != view.locator(
        '[data-edge="draft\u2192review"] path'
    ).first.evaluate(colour)

    # The table marks the parting row and the first differing one; the diff is there.
    parted = view.locator(".nbg-sides-row.nbg-sides-parted")
    assert parted.get_attribute("data-frame") == "3"
    assert parted.locator("td").all_text_contents() == ["3", "draft", "publish", "paths part"]
    differs = view.locator(".nbg-sides-row.nbg-sides-differs")
    assert differs.locator("td").all_text_contents() == ["1", "draft", "draft", "first state difference"]
    assert view.locator(".nbg-sides-summary").text_content() == (
        "The paths part at frame 3; the states first differ at frame 1."
    )
    assert view.locator(".nbg-sides-change").all_text_contents() == ["version: run 1, fork 5"]

    # The keyboard reaches the table, a region of its own: Tab from the view's first stop.
    view.locator("button, [tabindex='0']").first.focus()
    seen = [focused(page)["cls"]]
    while seen[-1] != "nbg-sides-scroll" and len(seen) < 10:
        page.keyboard.press("Tab")
        seen.append(focused(page)["cls"])
    assert seen[-1] == "nbg-sides-scroll", seen

    assert both_themes(page, view, "side-by-side") == {"light": [], "dark": []}

    # The comparison itself, left as a cell's value, is the same view.
    shown = panel.locator(".jp-Cell").nth(1).locator(".nbg-root.nbg-compared")
    shown.wait_for(timeout=TIMEOUT)
    assert shown.locator(".nbg-sides-row.nbg-sides-parted").get_attribute("data-frame") == "3"
