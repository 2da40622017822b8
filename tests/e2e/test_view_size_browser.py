"""A large graph in a real JupyterLab: it opens fitted, zooms, pans and follows the run; a log ends at its last line."""

from __future__ import annotations

from test_widget_browser import TIMEOUT, printed, run_all

from conftest import ARTIFACTS

MAX_HEIGHT = 600  # px: the drawing's height on screen at most (js/src/zoom.js)
READABLE = 0.75  # the smallest scale a graph opens at

# The view's transform and the drawing's size, read from the page.
STATE = """root => {
    const canvas = root.querySelector('.nbg-canvas');
    const svg = canvas.querySelector(':scope > .nbg-svg');
    const t = root.querySelector('.nbg-scene').getAttribute('transform') || '';
    const m = t.match(/translate\\(([-\\d.e]+) ([-\\d.e]+)\\) scale\\(([-\\d.e]+)\\)/);
    return {x: +m[1], y: +m[2], scale: +m[3], follow: canvas.dataset.follow,
            width: +svg.dataset.width, height: +svg.dataset.height};
}"""

# Text against the colour behind it (WCAG contrast ratio), for the toolbar's buttons.
CONTRAST = """el => {
    const rgb = (c) => c.match(/[\\d.]+/g).slice(0, 3).map(Number);
    const lum = (c) => {
        const [r, g, b] = rgb(c).map((v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; });
        return 0.2126 * r + 0.7152 * g + 0.0722 * b;
    };
    const style = getComputedStyle(el);
    let back = el;
    while (back && /rgba\\(.*, 0\\)|transparent/.test(getComputedStyle(back).backgroundColor)) back = back.parentElement;
    const [x, y] = [lum(style.color), lum(getComputedStyle(back).backgroundColor)].sort((p, q) => q - p);
    return (x + 0.05) / (y + 0.05);
}"""


def centre(box: dict) -> tuple[float, float]:
    return box["x"] + box["width"] / 2, box["y"] + box["height"] / 2


def inside(inner: dict, outer: dict, slack: float = 1.0) -> bool:
    return (
        inner["x"] >= outer["x"] - slack
        and inner["y"] >= outer["y"] - slack
        and inner["x"] + inner["width"] <= outer["x"] + outer["width"] + slack
        and inner["y"] + inner["height"] <= outer["y"] + outer["height"] + slack
    )


def view_of(panel, page, name: str):
    return panel.locator(".nbg-root").filter(has=page.locator(".nbg-title", has_text=name))


def release(panel, page) -> None:
    """Approve the run still waiting, if a failed check left it so, so that the kernel is free for the next test."""
    approve = view_of(panel, page, "forty").locator("button.nbg-approve:enabled")
    if approve.count():
        approve.click()


def test_a_large_graph_opens_fitted_zooms_pans_and_follows_the_run(lab, page):
    panel = run_all(page, lab, "view_size.ipynb")
    try:
        check_the_large_graph(panel, page)
    finally:
        release(panel, page)


def check_the_large_graph(panel, page) -> None:
    view = view_of(panel, page, "forty")
    view.locator("button.nbg-approve").wait_for(timeout=TIMEOUT)  # paused at `publish`, near the bottom
    svg = view.locator(".nbg-canvas > .nbg-svg")
    publish = view.locator('.nbg-node[data-node="publish"]')
    selector = '.jp-NotebookPanel .nbg-root[data-current="publish"]'

    # Opens fitted: as wide as the room, the whole width in view, at most MAX_HEIGHT tall.
    state = view.evaluate(STATE)
    room = svg.bounding_box()
    assert room["height"] <= MAX_HEIGHT + 0.5 and state["height"] * state["scale"] > MAX_HEIGHT
    assert state["width"] > room["width"] >= state["width"] * READABLE, (
        "the graph is wider than the room, and fits it readably"
    )
    assert abs(state["scale"] - room["width"] / state["width"]) < 0.01
    drawn = view.locator(".nbg-scene").bounding_box()
    assert drawn["x"] >= room["x"] - 1 and drawn["x"] + drawn["width"] <= room["x"] + room["width"] + 1

    # Follows the run: `publish`, far below where the drawing opened, was brought into view.
    where = publish.bounding_box()
    assert (where["y"] - room["y"] - state["y"]) > room["height"], "publish was out of view when the drawing opened"
    page.wait_for_function(
        f"""() => {{
            const root = document.querySelector('{selector}');
            const a = root.querySelector('[data-node="publish"]').getBoundingClientRect();
            const b = root.querySelector('.nbg-canvas > .nbg-svg').getBoundingClientRect();
            return a.top >= b.top && a.bottom <= b.bottom && a.left >= b.left && a.right <= b.right;
        }}""",
        timeout=TIMEOUT,
    )
    follow = view.locator("button.nbg-follow")
    assert follow.is_visible() and follow.get_attribute("aria-pressed") == "true"

    # Every control is labelled and reachable with Tab: the drawing, the frame in it, the buttons.
    labels = view.locator(".nbg-zoombar button").evaluate_all(
        "els => els.map(e => [e.getAttribute('aria-label'), e.title, e.textContent])"
    )
    assert [label[0] for label in labels] == [
        "Zoom in (+)",
        "Zoom out (\u2212)",
        "Fit the whole graph (0)",
        "Follow the running node",
    ]
    assert all(label[0] == label[1] for label in labels)
    assert svg.get_attribute("tabindex") == "0" and "+ and \u2212 zoom" in svg.get_attribute("aria-label")

    # Tab: the bar's buttons, the drawing, then the nodes the run reached (each opens its step
    # in the inspector) and the frame.
    def focused():
        return page.evaluate("() => document.activeElement.getAttribute('aria-label')")

    view.locator(".nbg-zoombar button").first.focus()
    reached = [focused()]
    for _ in range(5):
        page.keyboard.press("Tab")
        reached.append(focused())
    assert reached[:4] == [label[0] for label in labels]
    assert "+ and \u2212 zoom" in reached[4]
    assert reached[5] == "Inspect the latest step of step_00"
    for _ in range(60):
        page.keyboard.press("Tab")
        if focused() == "Open sub-graph review":
            break
    else:
        raise AssertionError("the sub-graph's frame is not reachable with Tab")

    # A plain wheel over a drawing without the focus scrolls the notebook, not the drawing.
    page.evaluate("() => document.activeElement.blur()")
    page.mouse.move(*centre(publish.bounding_box()))
    page.mouse.wheel(0, -120)
    view.locator(".nbg-hint").wait_for(timeout=TIMEOUT)
    assert view.evaluate(STATE)["scale"] == state["scale"]

    # With the focus, the wheel zooms around the pointer: the node under it stays under it.
    svg.focus()
    before = publish.bounding_box()
    page.mouse.move(*centre(before))
    page.mouse.wheel(0, -300)
    page.wait_for_function(
        f"scale => +document.querySelector('{selector} .nbg-canvas').dataset.scale > scale + 0.01",
        arg=state["scale"],
        timeout=TIMEOUT,
    )
    zoomed = view.evaluate(STATE)
    after = publish.bounding_box()
    assert abs(centre(after)[0] - centre(before)[0]) < 1.5 and abs(centre(after)[1] - centre(before)[1]) < 1.5
    assert abs(after["width"] / before["width"] - zoomed["scale"] / state["scale"]) < 0.02
    assert zoomed["follow"] == "off" and follow.get_attribute("aria-pressed") == "false"  # moved by hand

    # Dragging pans, from a node or from a frame, and a drag is not a click on the frame.
    start = centre(after)
    page.mouse.move(*start)
    page.mouse.down()
    page.mouse.move(start[0] + 60, start[1] + 90, steps=6)
    page.mouse.up()
    dragged = publish.bounding_box()
    assert abs(dragged["x"] - after["x"] - 60) < 1 and abs(dragged["y"] - after["y"] - 90) < 1
    handle = view.locator('.nbg-node[data-node="review"] > .nbg-frame-handle')
    grip = centre(handle.bounding_box())
    page.mouse.move(*grip)
    page.mouse.down()
    page.mouse.move(grip[0], grip[1] - 40, steps=4)
    page.mouse.up()
    assert abs(publish.bounding_box()["y"] - dragged["y"] + 40) < 1
    assert handle.get_attribute("aria-expanded") == "false"

    # Keys while the drawing has the focus: + and - zoom, the arrows pan, 0 fits; the notebook gets none of them.
    cell = "() => window.jupyterapp.shell.currentWidget.content.activeCellIndex"
    active = page.evaluate(cell)
    svg.focus()
    one = view.evaluate(STATE)
    page.keyboard.press("+")
    two = view.evaluate(STATE)
    assert abs(two["scale"] / one["scale"] - 1.25) < 1e-6
    page.keyboard.press("ArrowRight")
    page.keyboard.press("ArrowUp")
    three = view.evaluate(STATE)
    assert abs(three["x"] - two["x"] + 60) < 1e-6 and abs(three["y"] - two["y"] - 60) < 1e-6
    page.keyboard.press("ArrowDown")
    page.keyboard.press("-")
    assert abs(view.evaluate(STATE)["scale"] - one["scale"]) < 1e-6
    page.keyboard.press("0")
    fitted = view.evaluate(STATE)
    assert abs(fitted["scale"] - min(room["width"] / fitted["width"], room["height"] / fitted["height"])) < 1e-3
    assert inside(view.locator(".nbg-scene").bounding_box(), svg.bounding_box())
    assert page.evaluate(cell) == active and panel.locator(".jp-Notebook.jp-mod-commandMode").count() == 1

    # Following again: the Follow button brings the running node back into view.
    for key in ["+", "+", "+", "Shift+ArrowUp", "Shift+ArrowUp", "Shift+ArrowUp"]:
        page.keyboard.press(key)
    assert not inside(publish.bounding_box(), svg.bounding_box()), "publish is out of view"
    follow.click()
    assert follow.get_attribute("aria-pressed") == "true"
    page.wait_for_function(
        f"""() => {{
            const root = document.querySelector('{selector}');
            const a = root.querySelector('[data-node="publish"]').getBoundingClientRect();
            const b = root.querySelector('.nbg-canvas > .nbg-svg').getBoundingClientRect();
            return a.top >= b.top && a.bottom <= b.bottom && a.left >= b.left && a.right <= b.right;
        }}""",
        timeout=TIMEOUT,
    )

    # A sub-graph frame opens in the zoomed view where it is, its nodes inside it; Enter closes it.
    page.wait_for_function(f"() => !document.querySelector('{selector} .nbg-canvas').dataset.moving", timeout=TIMEOUT)
    closed = handle.bounding_box()
    handle.click()
    inner = view.locator('.nbg-node[data-node^="review/"]')
    inner.first.wait_for(timeout=TIMEOUT)
    assert sorted(inner.evaluate_all("els => els.map(e => e.dataset.node)")) == [
        "review/__end__",
        "review/__start__",
        "review/read",
        "review/score",
    ]
    opened = handle.bounding_box()
    assert abs(centre(opened)[0] - centre(closed)[0]) < 2 and abs(opened["y"] - closed["y"]) < 2, (
        "the frame kept its place"
    )
    assert handle.get_attribute("aria-expanded") == "true" and handle.evaluate("el => el === document.activeElement")
    for node in inner.all():
        assert inside(node.bounding_box(), opened)
    assert view.evaluate(STATE)["follow"] == "off"  # the reader is looking at the frame
    page.keyboard.press("Enter")
    inner.first.wait_for(state="detached", timeout=TIMEOUT)
    assert abs(handle.bounding_box()["y"] - closed["y"]) < 2

    # The toolbar is legible in both themes (Follow pressed too).
    follow.click()
    assert follow.get_attribute("aria-pressed") == "true"

    def contrasts() -> list[float]:
        return [button.evaluate(CONTRAST) for button in view.locator(".nbg-zoombar button").all()]

    light = page.evaluate("() => document.body.dataset.jpThemeLight") == "true"
    seen = [contrasts()]
    page.evaluate(
        "t => window.jupyterapp.commands.execute('apputils:change-theme', {theme: t})",
        "JupyterLab Dark" if light else "JupyterLab Light",
    )
    page.wait_for_function(
        "want => document.body.dataset.jpThemeLight === want", arg=str(not light).lower(), timeout=TIMEOUT
    )
    page.locator("#jupyterlab-splash").wait_for(state="detached", timeout=TIMEOUT)
    seen.append(contrasts())
    ARTIFACTS.mkdir(exist_ok=True)
    view.screenshot(path=str(ARTIFACTS / "view-size-zoomed.png"))
    for ratios in seen:
        assert min(ratios) >= 4.5, ratios

    # Approved, the run ends; Follow goes away with it, and the log shows the run's last lines.
    view.locator("button.nbg-approve").click()
    assert printed(panel, "RESULT") == "RESULT done True"
    page.wait_for_function(
        "() => [...document.querySelectorAll('.jp-NotebookPanel .nbg-root')].some(r => r.dataset.state === 'done' && r.querySelector('.nbg-title').textContent === 'forty')",
        timeout=TIMEOUT,
    )
    assert follow.is_hidden()
    assert_log_ends_in_view(view, "notify")
    assert page.locator(".jp-Dialog").count() == 0  # no "0 0" reached the notebook (it restarts the kernel)


def assert_log_ends_in_view(view, last: str) -> None:
    """The log is scrolled to its end: its last line is in view, and is the run's last step."""
    log = view.locator(".nbg-log")
    line = log.locator(".nbg-log-line").last
    assert last in line.inner_text()
    assert inside(line.bounding_box(), log.bounding_box(), slack=0.5), (line.bounding_box(), log.bounding_box())
    assert log.evaluate("el => el.scrollHeight > el.clientHeight + 100"), "the log is longer than its box"


def test_a_finished_runs_log_shows_its_last_lines(lab, page):
    panel = run_all(page, lab, "view_size.ipynb")
    try:
        assert printed(panel, "LOOP") == "LOOP done 40"
        view = view_of(panel, page, "loop")
        page.wait_for_function(
            "() => [...document.querySelectorAll('.jp-NotebookPanel .nbg-root')].some(r => r.dataset.state === 'done')",
            timeout=TIMEOUT,
        )
        assert_log_ends_in_view(view, "  40  work")
    finally:
        # The other run waits for its approval: give it, so the notebook's last cell ends.
        view_of(panel, page, "forty").locator("button.nbg-approve").wait_for(timeout=TIMEOUT)
        release(panel, page)
