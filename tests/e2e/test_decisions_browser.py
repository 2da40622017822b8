"""Decisions in a real JupyterLab: a pause's box says who may decide and who you are, takes a
reason (Enter in it approves), sends the digest of what it showed; the run's decisions are
listed in the view, up to the replay's frame; a denial's edge is drawn; a tool call's box
approves every later call of its tool by a click, and Revoke ends that."""

from __future__ import annotations

import re

from test_approvals_browser import answers_sent, audit, focused, run_fresh, switch_theme
from test_widget_browser import TIMEOUT, printed

from conftest import ARTIFACTS


def wait_state(page, cell: int, state: str) -> None:
    page.wait_for_function(
        """([cell, state]) => document.querySelectorAll('.jp-NotebookPanel .jp-Cell')[cell]
            .querySelector('.nbg-live')?.dataset.state === state""",
        arg=[cell, state],
        timeout=TIMEOUT,
    )


def both_themes(page, scope, name: str) -> dict:
    """The serious axe violations in ``scope`` in each theme, with a picture of it in each."""
    seen = {}
    for _ in range(2):
        theme = "light" if page.evaluate("() => document.body.dataset.jpThemeLight") == "true" else "dark"
        seen[theme] = audit(page, scope)
        ARTIFACTS.mkdir(exist_ok=True)
        scope.screenshot(path=str(ARTIFACTS / f"{name}-{theme}.png"))
        switch_theme(page)
    return seen


def test_a_decision_made_with_a_reason_is_listed_in_the_view_and_a_denial_takes_its_drawn_edge(lab, page):
    sent = answers_sent(page)
    panel = run_fresh(page, lab, "decisions.ipynb")
    view = panel.locator(".jp-Cell").nth(1).locator(".nbg-root.nbg-live")
    box = view.locator('.nbg-pause-approval[data-path="draft"]')
    box.wait_for(timeout=TIMEOUT)

    # The box says who may decide and who answers from here; with no deadline, no clock.
    assert box.locator(".nbg-pause-deciders").text_content() == "Anyone may decide"
    assert box.locator(".nbg-pause-you").text_content() == "You are alice"
    assert box.locator(".nbg-pause-deadline").count() == 0

    # send's denial leads to hold: drawn as an edge of its own, dashed and labelled.
    denied = view.locator('[data-edge="send\u2192hold"]')
    assert denied.get_attribute("class").split() == ["nbg-edge", "nbg-denied"]
    assert denied.locator(".nbg-edge-label").text_content() == "denied"
    assert denied.locator("path").first.evaluate("el => getComputedStyle(el).strokeDasharray") == "8px, 3px"

    # By keyboard: from Deny, Tab to the reason; type it; Enter approves.
    box.locator("button.nbg-deny").focus()
    page.keyboard.press("Tab")
    assert focused(page)["cls"] == "nbg-pause-reason"
    assert box.locator("input.nbg-pause-reason").get_attribute("placeholder") == "Why\u2026 (Enter approves)"
    page.keyboard.type("reads well")
    assert both_themes(page, box, "decisions-box") == {"light": [], "dark": []}
    box.locator("input.nbg-pause-reason").focus()
    page.keyboard.press("Enter")

    # send asks before it runs: denied, with a reason, by a click.
    gate = view.locator('.nbg-pause-approval[data-path="send"]')
    gate.wait_for(timeout=TIMEOUT)
    gate.locator("input.nbg-pause-reason").fill("not today")
    gate.locator("button.nbg-deny").click()
    wait_state(page, 1, "done")
    assert printed(panel, "LETTER") == (
        "LETTER ['draft', 'send', 'hold'] "
        "[('draft', 'approved', 'alice', 'view', 'reads well'), ('send', 'denied', 'alice', 'view', 'not today')]"
    )
    # Each answer carried the digest of what its box showed, and its reason.
    assert len(sent) == 2
    for frame, (kind, reason) in zip(sent, [("approve", "reads well"), ("deny", "not today")], strict=True):
        assert f'"type":"{kind}"' in frame and f'"reason":"{reason}"' in frame
        assert re.search(r'"shown":"[0-9a-f]{32}"', frame)
    assert "nbg-fired" in denied.get_attribute("class").split()  # the run took the denial's edge

    # The decision log, readable in the view: who, what, where, when, how, why.
    log = view.locator(".nbg-decisions")
    assert log.locator("summary").text_content() == "Decisions (2)"
    assert log.evaluate("el => el.open") is True
    assert log.locator(".nbg-decision-head").all_text_contents() == ["alice approved draft", "alice denied send"]
    assert log.locator(".nbg-decision-reason").all_text_contents() == ["reads well", "not today"]
    metas = log.locator(".nbg-decision-meta").all_text_contents()
    assert [re.sub(r"\d\d:\d\d:\d\d", "HH:MM:SS", meta) for meta in metas] == [
        "step 1 \u00b7 in the view \u00b7 HH:MM:SS",
        "step 2 \u00b7 in the view \u00b7 HH:MM:SS",
    ]
    assert both_themes(page, log, "decisions-log") == {"light": [], "dark": []}

    # At an earlier frame of the replay, the decisions made up to it.
    slider = view.locator(".nbg-replay")
    slider.locator("input.nbg-replay-range").focus()
    page.keyboard.press("Home")
    page.keyboard.press("ArrowRight")
    assert slider.get_attribute("data-frame") == "1"
    assert log.locator("summary").text_content() == "Decisions up to frame 1 (1 of 2)"
    assert log.locator(".nbg-decision-head").all_text_contents() == ["alice approved draft"]
    page.keyboard.press("End")
    assert log.locator("summary").text_content() == "Decisions (2)"

    # The summary opens and closes the list from the keyboard.
    log.locator("summary").focus()
    page.keyboard.press("Enter")
    assert log.evaluate("el => el.open") is False


def test_every_later_call_of_a_tool_is_approved_by_a_click_and_revoke_ends_it(lab, page):
    panel = run_fresh(page, lab, "standing.ipynb")
    view = panel.locator(".jp-Cell").nth(1).locator(".nbg-root.nbg-live")
    first = view.locator('.nbg-pause-tool .nbg-tool-call[data-tool="refund"]')
    first.wait_for(timeout=TIMEOUT)
    offer = first.locator("button.nbg-tool-standing")
    assert offer.text_content() == "Approve every later refund call in this run"
    view.locator(".nbg-pause-tool input.nbg-pause-reason").fill("small amounts")
    offer.click()

    # The second refund runs without asking; the note, another tool, waits for a person.
    note = view.locator('.nbg-pause-tool .nbg-tool-call[data-tool="note"]')
    note.wait_for(timeout=TIMEOUT)
    standing = view.locator(".nbg-standing")
    standing.locator(".nbg-standing-item").wait_for(timeout=TIMEOUT)
    assert standing.locator(".nbg-standing-text").all_text_contents() == [
        "refund: every later call in this run, approved by alice: small amounts"
    ]
    revoke = standing.locator("button.nbg-revoke")
    assert revoke.get_attribute("aria-label") == "Revoke the standing approval of refund"
    assert both_themes(page, view.locator(".nbg-side"), "decisions-standing") == {"light": [], "dark": []}
    revoke.focus()
    page.keyboard.press("Enter")
    standing.wait_for(state="hidden", timeout=TIMEOUT)
    page.wait_for_function(
        """() => [...document.querySelectorAll('.jp-NotebookPanel .jp-Cell')[1].querySelectorAll('.nbg-log-line')]
            .some((line) => line.textContent.includes('standing approval of refund revoked'))""",
        timeout=TIMEOUT,
    )

    # Revoked: after the note is rejected, the third refund asks again.
    note.locator("button.nbg-tool-reject").click()
    third = view.locator('.nbg-pause-tool .nbg-tool-call[data-tool="refund"]')
    third.wait_for(timeout=TIMEOUT)
    assert third.locator('input[name="order"]').input_value() == "A3"
    third.locator("button.nbg-tool-approve").click()
    wait_state(page, 1, "done")
    assert printed(panel, "DESK") == (
        "DESK ['A1', 'A2', 'A3'] [('approved', 'view'), ('approved', 'standing'), ('rejected', 'view'), ('approved', 'view')]"
    )
    heads = view.locator(".nbg-decisions .nbg-decision-head").all_text_contents()
    assert heads == [
        "alice approved refund in agent, and every later refund call in this run",
        "alice approved refund in agent",
        "alice rejected note in agent",
        "alice approved refund in agent",
    ]
    vias = view.locator(".nbg-decisions .nbg-decision").evaluate_all("els => els.map((el) => el.dataset.via)")
    assert vias == ["view", "standing", "view", "view"]
