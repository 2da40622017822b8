"""Pauses that show what they ask about, in a real JupyterLab: a tool call's arguments as a form
edited and approved by keyboard alone (an invalid edit stopped in the browser, next to its
field), and an approval's diff of the state and the node the run goes to next."""

from __future__ import annotations

from test_widget_browser import TIMEOUT, printed

from conftest import ARTIFACTS, HERE

AXE = HERE.parent.parent / "js" / "node_modules" / "axe-core" / "axe.min.js"
DRAFT = (
    "Dear customer, thank you for writing to us about order A1. "
    "We are sorry the parcel arrived damaged. Your refund of 200 EUR is on its way "
    "and should reach your account within five working days. Kind regards, the support desk"
)


def run_fresh(page, lab, notebook: str):
    """Open ``notebook`` on a restarted kernel with its outputs cleared, then run every cell.

    The two tests share the notebook, and each leaves a run waiting in its kernel (the other
    test's), which keeps the kernel busy: a restart makes each test the same in either order.
    The kernel is restarted once it has started (a restart while it starts can leave it
    "starting", deaf to the cells run next), and the cells run once it has answered since.
    """
    page.goto(lab.notebook_url(notebook), timeout=TIMEOUT)
    panel = page.locator(".jp-NotebookPanel:visible")
    panel.locator(".jp-Notebook").wait_for(timeout=TIMEOUT)
    page.wait_for_function(
        """() => {
            const panel = window.jupyterapp?.shell.currentWidget;
            const kernel = panel?.sessionContext?.session?.kernel;
            return panel?.context?.isReady && kernel?.connectionStatus === 'connected'
                && ['idle', 'busy'].includes(kernel.status);
        }""",
        timeout=TIMEOUT,
    )
    page.evaluate(
        """async () => {
            const session = window.jupyterapp.shell.currentWidget.sessionContext;
            await session.restartKernel();
            await session.session.kernel.requestKernelInfo();
            await window.jupyterapp.commands.execute('notebook:clear-all-cell-outputs');
        }"""
    )
    page.wait_for_function(
        """() => {
            const session = window.jupyterapp.shell.currentWidget.sessionContext;
            const kernel = session.session?.kernel;
            return session.isReady && !session.isRestarting && kernel?.connectionStatus === 'connected'
                && kernel?.status === 'idle';
        }""",
        timeout=TIMEOUT,
    )
    page.evaluate("() => { window.jupyterapp.commands.execute('notebook:run-all-cells'); }")
    return panel


def answers_sent(page) -> list[str]:
    """Every message the page sends the kernel that answers a pause (they carry its ``pause_id``),
    as sent on the kernel's websocket: what reached the wire, whatever the page shows."""
    sent: list[str] = []

    def watch(socket) -> None:
        def frame(payload) -> None:
            text = payload.decode("utf-8", "replace") if isinstance(payload, bytes) else payload
            if '"pause_id"' in text:
                sent.append(text)

        socket.on("framesent", frame)

    page.on("websocket", watch)
    return sent


def audit(page, scope) -> list[dict]:
    """The serious and critical axe-core violations in ``scope`` (after `cd js && npm ci`)."""
    assert AXE.exists(), f"{AXE} is missing: run `cd js && npm ci` first"
    if not page.evaluate("() => typeof window.axe === 'object'"):
        page.add_script_tag(path=str(AXE))
    return scope.evaluate(
        """async (el) => {
            const result = await axe.run(el, { resultTypes: ['violations'] });
            return result.violations.filter((v) => ['serious', 'critical'].includes(v.impact)).map((v) => ({
                id: v.id, help: v.help, nodes: v.nodes.slice(0, 6).map((n) => `${n.target.join(' ')}: ${n.failureSummary}`),
            }));
        }"""
    )


def switch_theme(page) -> str:
    """Switch JupyterLab to the theme that is not showing; returns its name ("light" or "dark")."""
    was_light = page.evaluate("() => document.body.dataset.jpThemeLight") == "true"
    other = "dark" if was_light else "light"
    page.evaluate(
        "t => window.jupyterapp.commands.execute('apputils:change-theme', {theme: t})", f"JupyterLab {other.title()}"
    )
    page.wait_for_function(
        "want => document.body.dataset.jpThemeLight === want", arg=str(not was_light).lower(), timeout=TIMEOUT
    )
    page.locator("#jupyterlab-splash").wait_for(state="detached", timeout=TIMEOUT)
    return other


def focused(page) -> dict:
    """What has the keyboard: its tag, name, classes and text."""
    return page.evaluate(
        """() => { const el = document.activeElement;
            return { tag: el.tagName.toLowerCase(), name: el.name || '', cls: el.className || '', text: el.textContent }; }"""
    )


def test_a_tool_call_is_edited_and_approved_by_keyboard(lab, page):
    sent = answers_sent(page)
    panel = run_fresh(page, lab, "approvals.ipynb")
    view = panel.locator(".jp-Cell").nth(2).locator(".nbg-root.nbg-live")
    box = view.locator(".nbg-pause-tool")
    box.wait_for(timeout=TIMEOUT)

    # The box names what it asks; the call shows its name, description and arguments as a form.
    assert box.get_attribute("role") == "group"
    assert box.get_attribute("aria-label").startswith("Tool call for agent: ")
    call = box.locator('.nbg-tool-call[data-tool="refund"]')
    assert call.locator(".nbg-tool-name").text_content() == "refund"
    assert call.locator(".nbg-tool-desc").text_content() == "Refund part or all of an order."
    # Each control is the one its label names (a real <label for>).
    order = call.locator("#" + call.locator("label", has_text="order").get_attribute("for"))
    amount = call.locator("#" + call.locator("label", has_text="amount").get_attribute("for"))
    assert order.evaluate("el => [el.type, el.value, el.getAttribute('aria-required')]") == ["text", "A1", "true"]
    assert amount.evaluate("el => [el.type, el.value, el.getAttribute('aria-required')]") == ["number", "200", "true"]
    assert call.locator(".nbg-required").count() == 2
    buttons = box.locator("button").all_text_contents()
    assert buttons == ["Approve", "Approve every later refund call in this run", "Reject", "Respond"]

    # An invalid edit, by keyboard: the required order cleared, text that is no number in amount,
    # and Enter. Each field says its problem in place; nothing is sent.
    order.focus()
    page.keyboard.press("Control+A")
    page.keyboard.press("Backspace")
    page.keyboard.press("Tab")
    assert focused(page)["name"] == "amount"
    page.keyboard.press("Control+A")
    page.keyboard.type("1e")
    page.keyboard.press("Enter")
    for field, message in ((order, "is required"), (amount, "must be a number")):
        error_id = field.get_attribute("aria-describedby")
        assert field.get_attribute("aria-invalid") == "true"
        assert error_id, "the field names its problem (aria-describedby)"
        assert call.locator(f"#{error_id}").text_content() == message
        assert call.locator(f"#{error_id}").is_visible()
    assert focused(page)["name"] == "order"  # the keyboard is taken to the first problem
    assert "nbg-sent" not in box.get_attribute("class")
    assert view.locator(".nbg-error").is_hidden()  # (a refusal from the kernel would show here)

    # Legible, and no axe violations, with the problems showing, in both themes.
    seen = {}
    for _ in range(2):
        theme = "light" if page.evaluate("() => document.body.dataset.jpThemeLight") == "true" else "dark"
        seen[theme] = audit(page, box)
        ARTIFACTS.mkdir(exist_ok=True)
        box.screenshot(path=str(ARTIFACTS / f"approvals-tool-invalid-{theme}.png"))
        switch_theme(page)
    assert seen == {"light": [], "dark": []}
    assert sent == []  # (seconds after the Enter: an answer sent would have reached the wire by now)

    # Put right by keyboard: the order typed again, the amount changed, Tab to Approve, Enter.
    order.focus()
    page.keyboard.type("A1")
    assert order.get_attribute("aria-invalid") is None  # a problem goes once its field is edited
    page.keyboard.press("Tab")
    page.keyboard.press("Control+A")
    page.keyboard.type("150")
    page.keyboard.press("Tab")
    now = focused(page)
    assert now["tag"] == "button" and "nbg-tool-approve" in now["cls"]
    assert now["text"] == "Approve with edits"
    page.keyboard.press("Enter")

    # The tool ran once, with the edited arguments, and the model read its result.
    page.wait_for_function(
        "() => document.querySelectorAll('.jp-NotebookPanel .jp-Cell')[2].querySelector('.nbg-live').dataset.state === 'done'",
        timeout=TIMEOUT,
    )
    assert printed(panel, "TOOL") == "TOOL done [('A1', 150.0)] Done: refunded 150 EUR on A1"
    assert len(sent) == 1
    assert '"type":"edit"' in sent[0] and '"arguments":{"order":"A1","amount":150}' in sent[0]
    assert view.locator(".nbg-pause").count() == 0


def test_an_approval_shows_the_change_and_where_the_run_goes(lab, page):
    panel = run_fresh(page, lab, "approvals.ipynb")
    view = panel.locator(".jp-Cell").nth(1).locator(".nbg-root.nbg-live")
    box = view.locator('.nbg-pause-approval[data-path="draft"]')
    box.wait_for(timeout=TIMEOUT)
    assert box.get_attribute("role") == "group"
    assert box.get_attribute("aria-label") == "Approval for draft: Approve the result of 'draft'?"

    # The update's changes, one row per field: the old value struck, the new one beside it.
    draft = box.locator('.nbg-change[data-field="draft"]')
    assert draft.locator(".nbg-change-field").text_content() == "draft"
    assert draft.locator(".nbg-change-before .nbg-value").text_content() == '""'
    assert (
        draft.locator(".nbg-change-before .nbg-value").evaluate("el => getComputedStyle(el).textDecorationLine")
        == "line-through"
    )
    # The new letter is long: folded to its first line, unfolded with Enter from the keyboard.
    after = draft.locator(".nbg-change-after details.nbg-fold")
    assert after.evaluate("el => el.open") is False
    head = after.locator("summary")
    assert head.locator(".nbg-fold-text").text_content() == DRAFT[:72] + "\u2026"
    head.focus()
    page.keyboard.press("Enter")
    page.wait_for_function(
        """() => document.querySelectorAll('.jp-NotebookPanel .jp-Cell')[1]
            .querySelector('.nbg-change[data-field="draft"] .nbg-change-after details').open""",
        timeout=TIMEOUT,
    )
    assert after.locator("pre").inner_text() == DRAFT
    # Keys pressed in the box are the box's: Enter, and a letter, are not the notebook's commands
    # (in command mode "a" would insert a cell above).
    page.keyboard.press("a")
    assert panel.locator(".jp-Cell").count() == 4
    assert panel.locator(".jp-Notebook.jp-mod-commandMode").count() == 1
    # A list the update appended to shows only what it appended.
    notes = box.locator('.nbg-change[data-field="notes"]')
    assert notes.locator(".nbg-change-count").text_content() == "+ 1 item"
    assert notes.locator(".nbg-change-item").all_text_contents() == ["drafted"]
    assert notes.locator(".nbg-change-before").count() == 0
    assert box.locator(".nbg-approval-next").text_content() == "Next if approved: send"
    assert box.locator("button").all_text_contents() == ["Approve", "Deny"]
    seen = {}
    for _ in range(2):
        theme = "light" if page.evaluate("() => document.body.dataset.jpThemeLight") == "true" else "dark"
        seen[theme] = audit(page, box)
        ARTIFACTS.mkdir(exist_ok=True)
        box.screenshot(path=str(ARTIFACTS / f"approvals-after-{theme}.png"))
        switch_theme(page)
    assert seen == {"light": [], "dark": []}
    head.focus()  # (where the keyboard was before the audit)

    # Approved (Tab from the fold to Approve, Enter): the run goes on to `send`, which asks first,
    # showing the state it would run on, the approved letter in it.
    page.keyboard.press("Tab")
    assert focused(page)["text"] == "Approve"
    page.keyboard.press("Enter")
    before = view.locator('.nbg-pause-approval[data-path="send"]')
    before.wait_for(timeout=TIMEOUT)
    assert before.locator(".nbg-pause-prompt").text_content() == "Let 'send' run?"
    state = before.locator(".nbg-approval-input")
    assert state.locator('[data-field="topic"] dd').text_content() == "order A1"
    assert state.locator('[data-field="draft"] summary .nbg-fold-text').text_content() == DRAFT[:72] + "\u2026"
    assert state.locator('[data-field="sent"] dd').text_content() == "false"
    assert audit(page, before) == []
    before.locator("button.nbg-approve").click()
    page.wait_for_function(
        "() => document.querySelectorAll('.jp-NotebookPanel .jp-Cell')[1].querySelector('.nbg-live').dataset.state === 'done'",
        timeout=TIMEOUT,
    )
    assert view.locator(".nbg-pause").count() == 0
