"""The live view in a real JupyterLab: the run animates, and typed answers and clicks drive it."""

from __future__ import annotations

from conftest import ARTIFACTS

TIMEOUT = 30_000  # ms; each wait ends as soon as its condition holds


def open_notebook(page, lab, notebook: str):
    """Open ``notebook`` and wait until its kernel is connected and idle; returns the notebook panel."""
    page.goto(lab.notebook_url(notebook), timeout=TIMEOUT)
    panel = page.locator(".jp-NotebookPanel:visible")
    panel.locator(".jp-Notebook").wait_for(timeout=TIMEOUT)
    page.wait_for_function(
        """() => {
            const panel = window.jupyterapp?.shell.currentWidget;
            const kernel = panel?.sessionContext?.session?.kernel;
            return panel?.context?.isReady && kernel?.connectionStatus === 'connected' && kernel?.status === 'idle';
        }""",
        timeout=TIMEOUT,
    )
    return panel


def printed(scope, prefix: str) -> str:
    """The line a cell printed that starts with ``prefix``, once the whole line is there.

    Read as ``textContent``: JupyterLab skips drawing cells scrolled out of view, and the
    ``innerText`` of an element not drawn is empty; and a printed line can reach the page
    in more than one piece, so the wait is for its newline.
    """
    found = scope.page.wait_for_function(
        """([scope, prefix]) => {
            for (const out of scope.querySelectorAll('.jp-RenderedText[data-mime-type="application/vnd.jupyter.stdout"]')) {
                const text = out.textContent;
                if (text.startsWith(prefix) && text.endsWith('\\n')) return text;
            }
            return null;
        }""",
        arg=[scope.element_handle(timeout=TIMEOUT), prefix],
        timeout=TIMEOUT,
    )
    return found.json_value().strip()


def run_all(page, lab, notebook: str):
    """Open ``notebook``, wait for its kernel, run every cell; returns the notebook panel."""
    panel = open_notebook(page, lab, notebook)
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
    assert printed(panel, "RESULT") == "RESULT done ask->pick->plan->book three days in Kyoto, double room"
    fired = view.locator(".nbg-edge.nbg-fired").evaluate_all("els => els.map(e => e.dataset.edge)")
    assert set(fired) == {
        "__start__\u2192ask",
        "ask\u2192pick",
        "pick\u2192plan",
        "plan\u2192book",
        "book\u2192__end__",
    }
    unfired = view.locator(".nbg-edge.nbg-unfired").evaluate_all("els => els.map(e => e.dataset.edge)")
    assert unfired == ["plan\u2192__end__"]
    ARTIFACTS.mkdir(exist_ok=True)
    view.screenshot(path=str(ARTIFACTS / "widget-done.png"))

    # The view follows JupyterLab's theme through its CSS variables.
    def label_colour() -> str:
        return view.locator(".nbg-node-label").first.evaluate("el => getComputedStyle(el).fill")

    # (Lab keeps its theme between tests: switch to whichever one is not showing.)
    was_light = page.evaluate("() => document.body.dataset.jpThemeLight") == "true"
    other = "Dark" if was_light else "Light"
    before = label_colour()
    page.evaluate("t => window.jupyterapp.commands.execute('apputils:change-theme', {theme: t})", f"JupyterLab {other}")
    page.wait_for_function(
        "want => document.body.dataset.jpThemeLight === want", arg=str(not was_light).lower(), timeout=TIMEOUT
    )
    page.wait_for_function(
        "before => getComputedStyle(document.querySelector('.jp-NotebookPanel .nbg-live .nbg-node-label')).fill !== before",
        arg=before,
        timeout=TIMEOUT,
    )
    page.locator("#jupyterlab-splash").wait_for(state="detached", timeout=TIMEOUT)
    view.screenshot(path=str(ARTIFACTS / f"widget-done-{other.lower()}.png"))


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
    assert printed(panel, "RESULT") == "RESULT aborted cancelled ['go faster']"


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
        arg=reply,
        timeout=TIMEOUT,
    )
    assert text.is_visible() and view.get_attribute("data-state") == "paused"
    assert view.get_attribute("data-current") == "agent"
    view.locator("button.nbg-approve").click()
    page.wait_for_function(
        "() => document.querySelector('.jp-NotebookPanel .nbg-live').dataset.state === 'done'", timeout=TIMEOUT
    )
    assert printed(panel, "RESULT") == f"RESULT done {reply}"
    # The finished run still shows what the node streamed.
    assert text.inner_text() == reply and text.is_visible()


def test_branches_pauses_and_a_sub_graph_frame(lab, page):
    panel = run_all(page, lab, "branches.ipynb")
    view = panel.locator(".nbg-root.nbg-live")
    view.wait_for(timeout=TIMEOUT)
    live = "document.querySelector('.jp-NotebookPanel .nbg-live')"

    # flights and hotels both wait for the notebook's "Book" button: two nodes pulse at once.
    page.wait_for_function(
        f"""() => [...{live}.querySelectorAll('.nbg-node.nbg-current')]
            .map(e => e.dataset.node).sort().join() === 'flights,hotels'""",
        timeout=TIMEOUT,
    )
    pulses = view.locator(".nbg-node.nbg-current > .nbg-node-box").evaluate_all(
        "els => els.map(e => getComputedStyle(e).animationName)"
    )
    assert pulses == ["nbg-pulse", "nbg-pulse"]
    assert sorted(view.get_attribute("data-running").split()) == ["flights", "hotels"]
    # The fan-out's arms and the join's are drawn as such; the join's arms end on one bar.
    assert view.locator(".nbg-edge.nbg-fanout").count() == 2
    assert view.locator(".nbg-edge.nbg-join").count() == 2
    assert view.locator('.nbg-join-point[data-join="gather"]').count() == 1
    assert view.locator(".nbg-node.nbg-map").evaluate_all("els => els.map(e => e.dataset.node)") == ["ask"]

    # The sub-graph is a closed frame; a click opens it onto its own nodes, Enter closes and opens it.
    frame = view.locator('.nbg-node[data-node="research"]')
    handle = frame.locator("> .nbg-frame-handle")
    inner = view.locator('.nbg-node[data-node^="research/"]')
    assert inner.count() == 0 and handle.get_attribute("aria-expanded") == "false"
    handle.click()
    inner.first.wait_for(timeout=TIMEOUT)
    assert sorted(inner.evaluate_all("els => els.map(e => e.dataset.node)")) == [
        "research/__end__",
        "research/__start__",
        "research/rank",
        "research/search",
    ]
    handle = view.locator('.nbg-node[data-node="research"] > .nbg-frame-handle')
    assert handle.get_attribute("aria-expanded") == "true"
    assert handle.evaluate("el => el === document.activeElement")  # the keyboard stays on the frame
    page.keyboard.press("Enter")
    inner.first.wait_for(state="detached", timeout=TIMEOUT)
    page.keyboard.press("Enter")
    inner.first.wait_for(timeout=TIMEOUT)
    assert inner.count() == 4
    # The keys went to the frame, not to the notebook (Enter would put a cell in edit mode).
    assert handle.evaluate("el => el === document.activeElement")
    assert panel.locator(".jp-Notebook.jp-mod-commandMode").count() == 1

    panel.locator("button.release-book").click()

    # The map asks about each city at once: one box per pause, each with its own field.
    boxes = view.locator(".nbg-pause")
    page.wait_for_function(f"() => {live}.querySelectorAll('.nbg-pause').length === 2", timeout=TIMEOUT)
    assert boxes.evaluate_all("els => els.map(e => e.dataset.branch)") == ["ask[0]", "ask[1]"]
    first = view.locator('.nbg-pause[data-branch="ask[0]"]')
    second = view.locator('.nbg-pause[data-branch="ask[1]"]')
    assert second.locator(".nbg-pause-node").inner_text().lower() == "input \u2014 ask \u00b7 branch ask[1]"
    assert second.locator(".nbg-pause-prompt").inner_text() == "What should we see in Oslo?"
    badge = view.locator('.nbg-node[data-node="ask"] .nbg-progress-text')
    page.wait_for_function(
        f"() => {live}.querySelector('[data-node=\"ask\"] .nbg-progress-text').textContent === '0/2'", timeout=TIMEOUT
    )
    first.locator("input.nbg-answer").fill("temples")  # typed, not sent yet: answering the other keeps it
    ARTIFACTS.mkdir(exist_ok=True)
    view.screenshot(path=str(ARTIFACTS / "widget-branches-paused.png"))

    # The second pause first, sent with Enter from its field.
    second.locator("input.nbg-answer").fill("fjords")
    second.locator("input.nbg-answer").press("Enter")
    page.wait_for_function(f"() => {live}.querySelectorAll('.nbg-pause').length === 1", timeout=TIMEOUT)
    page.wait_for_function(
        f"() => {live}.querySelector('[data-node=\"ask\"] .nbg-progress-text').textContent === '1/2'", timeout=TIMEOUT
    )
    assert first.locator("input.nbg-answer").input_value() == "temples"
    first.locator("button.nbg-submit").click()

    # The sub-graph runs; its search waits for "Search": it pulses inside the open frame.
    page.wait_for_function(
        f"() => {live}.querySelector('[data-node=\"research/search\"]').classList.contains('nbg-current')",
        timeout=TIMEOUT,
    )
    assert "nbg-current" in frame.get_attribute("class")
    assert badge.text_content() == "2/2"
    panel.locator("button.release-search").click()

    page.wait_for_function(f"() => {live}.dataset.state === 'done'", timeout=TIMEOUT)
    # The last cell prints the result: JupyterLab draws only the cells near the viewport.
    page.evaluate(
        "() => { const nb = window.jupyterapp.shell.currentWidget.content; nb.scrollToItem(nb.widgets.length - 1); }"
    )
    # Both answers, in branch order (Kyoto's first) though Oslo's was given first.
    assert (
        printed(panel, "RESULT") == "RESULT done ['flights', 'hotels'] ['Kyoto: temples', 'Oslo: fjords'] guides True"
    )
    fired = set(
        view.locator(".nbg-edge.nbg-fired").evaluate_all("els => els.map(e => e.dataset.edge || e.dataset.join)")
    )
    assert {
        "plan\u2192flights",
        "plan\u2192hotels",
        "flights\u2192gather",
        "hotels\u2192gather",
        "gather",
        "gather\u2192ask",
        "research/__start__\u2192research/search",
        "research/search\u2192research/rank",
        "research/rank\u2192research/__end__",
    } <= fired
    assert view.locator(".nbg-node.nbg-current").count() == 0

    # Legible in both JupyterLab themes: text on its own background keeps a 4.5:1 contrast.
    def contrasts() -> dict:
        return view.evaluate(CONTRASTS)

    def theme() -> str:
        return "light" if page.evaluate("() => document.body.dataset.jpThemeLight") == "true" else "dark"

    first = theme()
    seen = {first: contrasts()}
    view.screenshot(path=str(ARTIFACTS / f"widget-branches-{first}.png"))
    other = "dark" if first == "light" else "light"
    page.evaluate(
        "t => window.jupyterapp.commands.execute('apputils:change-theme', {theme: t})", f"JupyterLab {other.title()}"
    )
    page.wait_for_function(
        "want => document.body.dataset.jpThemeLight === want", arg=str(other == "light").lower(), timeout=TIMEOUT
    )
    page.locator("#jupyterlab-splash").wait_for(state="detached", timeout=TIMEOUT)
    page.wait_for_function(
        f"fill => getComputedStyle({live}.querySelector('.nbg-node-label')).fill !== fill",
        arg=seen[first]["label"][0],
        timeout=TIMEOUT,
    )
    seen[other] = contrasts()
    view.screenshot(path=str(ARTIFACTS / f"widget-branches-{other}.png"))
    for name, pairs in seen.items():
        for what, (fg, bg, ratio) in pairs.items():
            assert ratio >= 4.5, f"{name} theme: {what} {fg} on {bg} has contrast {ratio:.2f}"
    assert seen["light"]["label"][0] != seen["dark"]["label"][0]


# Text colour against the colour behind it for the view's text on its own boxes (WCAG contrast ratio);
# colours as computed: rgb, rgba, or color(srgb ...) where the view mixes them.
CONTRASTS = """root => {
    const rgba = (c) => {
        const srgb = c.match(/color\\(srgb ([\\d.e-]+) ([\\d.e-]+) ([\\d.e-]+)(?: \\/ ([\\d.e-]+))?\\)/);
        if (srgb) return [+srgb[1] * 255, +srgb[2] * 255, +srgb[3] * 255, srgb[4] === undefined ? 1 : +srgb[4]];
        const [r, g, b, a = 1] = c.match(/[\\d.]+/g).map(Number);
        return [r, g, b, a];
    };
    const lum = (rgb) => {
        const [r, g, b] = rgb.map((v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; });
        return 0.2126 * r + 0.7152 * g + 0.0722 * b;
    };
    const ratio = (fg, bg) => {
        const back = rgba(bg);
        const front = rgba(fg);
        const seen = back.slice(0, 3).map((v, i) => front[3] * front[i] + (1 - front[3]) * v); // text drawn over its background
        const [x, y] = [lum(seen), lum(back.slice(0, 3))].sort((p, q) => q - p);
        return (x + 0.05) / (y + 0.05);
    };
    const style = (sel, prop) => getComputedStyle(root.querySelector(sel))[prop];
    const pairs = {
        label: [style('[data-node="plan"] .nbg-node-label', 'fill'), style('[data-node="plan"] .nbg-node-box', 'fill')],
        progress: [style('[data-node="ask"] .nbg-progress-text', 'fill'), style('[data-node="ask"] .nbg-progress-box', 'fill')],
        frame: [style('[data-node="research"] > .nbg-frame-handle .nbg-node-label', 'fill'),
                style('[data-node="research"] > .nbg-frame-handle .nbg-node-box', 'fill')],
        inner: [style('[data-node="research/rank"] .nbg-node-label', 'fill'), style('[data-node="research/rank"] .nbg-node-box', 'fill')],
        edge: [style('.nbg-each .nbg-edge-label', 'fill'), getComputedStyle(root).backgroundColor],
        log: [style('.nbg-log', 'color'), getComputedStyle(root).backgroundColor],
    };
    return Object.fromEntries(Object.entries(pairs).map(([k, [fg, bg]]) => [k, [fg, bg, ratio(fg, bg)]]));
}"""
