"""A pause with a deadline in a real JupyterLab: its box counts the time left down, warns near
the end, says what happens then, and once the deadline has passed says so; the decision the
deadline made is listed in the view; an answer given too late is refused in its box."""

from __future__ import annotations

import re

from test_approvals_browser import run_fresh
from test_decisions_browser import both_themes, wait_state
from test_widget_browser import TIMEOUT, printed


def test_the_box_counts_down_the_time_left_warns_near_the_end_and_says_what_then(lab, page):
    panel = run_fresh(page, lab, "deadline.ipynb")
    quick = panel.locator(".jp-Cell").nth(1).locator(".nbg-root.nbg-live")
    box = quick.locator('.nbg-pause-approval[data-path="send"]')
    box.wait_for(timeout=TIMEOUT)
    assert box.locator(".nbg-pause-deciders").text_content() == "Anyone may decide"
    assert box.locator(".nbg-pause-you").text_content() == "You are alice"
    line = box.locator(".nbg-pause-deadline")
    assert line.get_attribute("role") == "timer"
    first = line.locator(".nbg-deadline-text").text_content()
    assert re.fullmatch(r"0:(1[0-2]|0\d) left, then denied", first), first
    assert "nbg-deadline-warn" not in line.get_attribute("class")  # (12 s to wait: the warning is for its last fifth)
    # It counts down, once a second, and warns in the last fifth of the wait (2.4 s of 12), which
    # a screen reader hears once.
    line.locator(".nbg-deadline-text").filter(has_not_text=first).wait_for(timeout=TIMEOUT)
    page.wait_for_function(
        """() => document.querySelectorAll('.jp-NotebookPanel .jp-Cell')[1]
            .querySelector('.nbg-pause-deadline')?.classList.contains('nbg-deadline-warn')""",
        timeout=TIMEOUT,
    )
    assert re.fullmatch(r"0:0[0-3] left to decide|Time is up: denied", line.locator("[aria-live]").text_content())

    # Nobody decided in time: the deadline denied it, and the run went where a denial goes.
    wait_state(page, 1, "done")
    assert printed(panel, "QUICK") == "QUICK ['send', 'hold'] [('denied', 'deadline', 'deadline')]"
    log = quick.locator(".nbg-decisions")
    assert log.locator(".nbg-decision-head").all_text_contents() == ["deadline denied send"]
    assert re.fullmatch(
        r"step 1 \u00b7 by the deadline \u00b7 \d\d:\d\d:\d\d", log.locator(".nbg-decision-meta").text_content()
    )
    assert log.locator(".nbg-decision-reason").text_content().startswith("no answer by its deadline, ")

    # A run that could not wait ended at the pause: its box counts down too, and once the time
    # is up says so, warning, until the thread is resumed.
    slow = panel.locator(".jp-Cell").nth(2).locator(".nbg-root.nbg-live")
    ended = slow.locator('.nbg-pause-approval[data-ended="true"]')
    ended.wait_for(timeout=TIMEOUT)
    over = ended.locator(".nbg-pause-deadline.nbg-deadline-warn.nbg-deadline-over")
    over.wait_for(timeout=TIMEOUT)
    assert over.locator(".nbg-deadline-text").text_content() == "Time is up: denied"
    assert both_themes(page, ended, "decisions-deadline") == {"light": [], "dark": []}
    # An answer now is refused, and the box says why: the deadline decides it.
    ended.locator("input.nbg-pause-reason").focus()
    page.keyboard.type("late")
    page.keyboard.press("Enter")
    refused = ended.locator(".nbg-pause-refused")
    refused.wait_for(timeout=TIMEOUT)
    assert refused.get_attribute("role") == "alert"
    said = refused.text_content()
    assert "is past its deadline" in said and "its deadline decides it, denied. Nothing was answered" in said
    assert "nbg-sent" not in ended.get_attribute("class")  # it can be answered again, as it says how
    assert slow.locator(".nbg-error").is_hidden()
