"""The pictures of the view in the README and the docs, taken from the real view in a real
JupyterLab: each test runs a small notebook (pictures_*.ipynb) to a state and compares the view
with its picture in docs/images/.

A picture that differs from the one there (beyond the few pixels anti-aliasing may move) is
written in its place and the test fails, naming it: look at the new picture (git shows it
changed) and commit it. A change to the view that changes a picture is seen in the diff, and
the pictures are never stale. Each picture records the Chromium that made it: another version
draws text a little differently, so a picture made by another version is held to a looser
rule (a changed box, row or panel still shows; a glyph drawn differently does not), and
NBGRAPH_PICTURES=write makes them all again with this one.

Made to be the same on every run: fixed data, a fixed window and pixel ratio, the light theme
(the README's picture in the dark one too), animations stopped, no hover or focus ring, and
what is never the same twice hidden: the elapsed time, each step's duration, the batch's runs
per second, the time of each decision.
"""

from __future__ import annotations

import io
import os
from pathlib import Path

import pytest
from PIL import Image, ImageChops
from PIL.PngImagePlugin import PngInfo
from test_widget_browser import TIMEOUT, open_notebook

from conftest import HERE

PICTURES = HERE.parent.parent / "docs" / "images"
WINDOW = {"width": 1120, "height": 1150}
SCALE = 2  # device pixels per CSS pixel: sharp on high-density screens

# A pixel has changed when a colour channel moved by more than NOISE; a picture has changed when
# more than ALLOWED pixels have. Anti-aliasing moves a few pixels by a little; a changed word,
# line or colour moves hundreds by a lot.
NOISE = 64
ALLOWED = 24
# Another Chromium's text rendering moves the pixels of glyph edges, a few in a hundred of the
# picture; a view that changed moves whole regions.
ALLOWED_ACROSS_BROWSERS = 0.02

# Applied while each picture is taken: what differs from run to run, hidden; the running node's
# pulse stopped (at full strength; the moving picture sets its phase itself).
HIDE = """
.nbg-stat-elapsed, .nbg-stat[data-stat="runs/s"], .pictures-duration, .nbg-decision-when { display: none !important; }
.nbg-current > .nbg-node-box, .nbg-current > .nbg-frame-handle > .nbg-node-box { animation: none !important; }
"""

# A step's duration ends its log line ("   3  ask  0.4 ms") and the inspector's figures: put it
# in a span of its own (which HIDE hides), whenever the view draws one. The line's text is
# unchanged, so a click on it still opens its step.
DURATIONS = """(() => {
    const DURATION = /\\s+(\\u00b7\\s+)?[\\d.]+ ms$/;
    const wrap = (el) => {
        if (el.querySelector('.pictures-duration')) return;
        const text = el.textContent;
        const found = DURATION.exec(text);
        if (!found) return;
        const span = document.createElement('span');
        span.className = 'pictures-duration';
        span.textContent = found[0];
        el.replaceChildren(text.slice(0, found.index), span);
    };
    const SELECTOR = '.nbg-log-line, .nbg-insp-stats';
    new MutationObserver((records) => {
        for (const record of records) {
            const target = record.target.nodeType === 1 ? record.target : record.target.parentElement;
            if (target && target.matches(SELECTOR)) wrap(target);
            for (const node of record.addedNodes) {
                if (node.nodeType !== 1) continue;
                if (node.matches(SELECTOR)) wrap(node);
                node.querySelectorAll(SELECTOR).forEach(wrap);
            }
        }
    }).observe(document, { childList: true, subtree: true, characterData: true });
})();"""


@pytest.fixture
def page(browser):
    """A page of a fixed size and pixel ratio; the notebook's kernel is shut down after."""
    context = browser.new_context(
        viewport=WINDOW, device_scale_factor=SCALE, color_scheme="light", locale="en-US", timezone_id="UTC"
    )
    context.add_init_script(DURATIONS)
    page = context.new_page()
    yield page
    try:  # the runs left waiting in it would keep the kernel for the rest of the session
        page.evaluate("() => window.jupyterapp?.shell.currentWidget?.sessionContext?.shutdown()")
    finally:
        context.close()


class Album:
    """The pictures one test takes, each compared with (and if need be written over) the one in
    ``folder`` (docs/images/ unless told)."""

    def __init__(self, browser_version: str, folder: Path = PICTURES) -> None:
        self.folder = folder
        self.made_by = f"Chromium {browser_version}"
        self.write_anyway = os.environ.get("NBGRAPH_PICTURES") == "write"
        self.changed: list[str] = []

    def keep(self, name: str, frames: list, durations: list[int] | None = None) -> None:
        """Compare ``frames`` (one for a still picture) with FOLDER/NAME.png; write them if they differ."""
        path = self.folder / f"{name}.png"
        if path.exists():
            with Image.open(path) as old:
                width, height = old.size
                same_browser = old.info.get("Software") == self.made_by
                allowed = ALLOWED if same_browser else int(ALLOWED_ACROSS_BROWSERS * width * height)
                if not self.write_anyway and not _differ(_frames_of(old), frames, allowed):
                    return
        self.folder.mkdir(parents=True, exist_ok=True)
        info = PngInfo()
        info.add_text("Software", self.made_by)
        if len(frames) == 1:
            frames[0].save(path, optimize=True, pnginfo=info)
        else:
            frames[0].save(
                path, save_all=True, append_images=frames[1:], duration=durations, loop=0, pnginfo=info, optimize=True
            )
        self.changed.append(path.name)

    def verdict(self) -> None:
        if self.changed:
            pytest.fail(
                f"pictures changed: {', '.join(self.changed)}. The new ones are written in "
                f"{self.folder.relative_to(HERE.parent.parent).as_posix()}/: "
                "look at them and commit them (running the test again passes)."
            )


@pytest.fixture
def album(browser):
    return Album(browser.version)


def _frames_of(image) -> list:
    frames = []
    for index in range(getattr(image, "n_frames", 1)):
        image.seek(index)
        frames.append(image.convert("RGB"))
    return frames


def _differ(old: list, new: list, allowed: int) -> bool:
    if len(old) != len(new):
        return True
    for before, after in zip(old, new, strict=True):
        if before.size != after.size:
            return True
        # The largest channel difference of each pixel, then how many are above NOISE.
        r, g, b = ImageChops.difference(before, after).split()
        largest = ImageChops.lighter(ImageChops.lighter(r, g), b)
        if sum(largest.histogram()[NOISE + 1 :]) > allowed:
            return True
    return False


def shoot(page, view, style: str = HIDE):
    """The view as it looks once it has settled: the same picture twice in a row."""
    page.mouse.move(0, 0)
    page.evaluate("() => document.activeElement?.blur()")
    last = None
    for _ in range(30):
        page.evaluate("() => new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done)))")
        png = view.screenshot(animations="disabled", caret="hide", scale="device", style=style, timeout=TIMEOUT)
        if png == last:
            return Image.open(io.BytesIO(png)).convert("RGB")
        last = png
    raise AssertionError("the view kept changing: no two pictures of it in a row were the same")


def set_theme(page, theme: str) -> None:
    """Show JupyterLab's ``theme`` ("light" or "dark")."""
    want = str(theme == "light").lower()
    if page.evaluate("() => document.body.dataset.jpThemeLight") == want:
        return
    page.evaluate(
        "t => window.jupyterapp.commands.execute('apputils:change-theme', {theme: t})", f"JupyterLab {theme.title()}"
    )
    page.wait_for_function("want => document.body.dataset.jpThemeLight === want", arg=want, timeout=TIMEOUT)
    page.locator("#jupyterlab-splash").wait_for(state="detached", timeout=TIMEOUT)


def open_and_run(page, lab, notebook: str):
    """Open ``notebook`` in the light theme with its code hidden (the views are what is shown), and run it."""
    panel = open_notebook(page, lab, notebook)
    set_theme(page, "light")
    page.evaluate(
        """async () => {
            await window.jupyterapp.commands.execute('notebook:hide-all-cell-code');
            window.jupyterapp.commands.execute('notebook:run-all-cells');
        }"""
    )
    return panel


def view_at(panel, cell: int):
    """The view under the notebook's ``cell`` (0-based), scrolled to the top of the notebook's panel."""
    view = panel.locator(".jp-Cell").nth(cell).locator(".nbg-root")
    panel.page.evaluate("i => window.jupyterapp.shell.currentWidget.content.scrollToItem(i, 'start')", cell)
    view.wait_for(timeout=TIMEOUT)
    return view


def in_kernel(page, code: str) -> None:
    """Run ``code`` in the notebook's kernel, outside its cells."""
    page.evaluate(
        """async (code) => {
            const kernel = window.jupyterapp.shell.currentWidget.sessionContext.session.kernel;
            const reply = await kernel.requestExecute({ code, store_history: false }).done;
            if (reply.content.status !== 'ok') throw new Error(`${reply.content.ename}: ${reply.content.evalue}`);
        }""",
        code,
    )


def test_a_run_waiting_at_an_approval_and_a_tool_call(lab, page, album):
    panel = open_and_run(page, lab, "pictures_pause.ipynb")
    view = view_at(panel, 1)
    box = view.locator('.nbg-pause-approval[data-path="draft"]')
    box.wait_for(timeout=TIMEOUT)
    assert box.locator(".nbg-change").evaluate_all("els => els.map(e => e.dataset.field)") == ["reply", "notes"]
    assert box.locator(".nbg-approval-next").text_content() == "Next if approved: send"
    album.keep("pause", [shoot(page, view)])
    set_theme(page, "dark")
    album.keep("pause-dark", [shoot(page, view)])
    set_theme(page, "light")

    tool = view_at(panel, 2)
    call = tool.locator('.nbg-pause-tool .nbg-tool-call[data-tool="refund"]')
    call.wait_for(timeout=TIMEOUT)
    assert tool.locator(".nbg-pause-tool button").all_text_contents() == [
        "Approve",
        "Approve every later refund call in this run",
        "Reject",
        "Respond",
    ]
    album.keep("tool-call", [shoot(page, tool)])
    album.verdict()


def test_a_run_stopped_at_a_breakpoint(lab, page, album):
    panel = open_and_run(page, lab, "pictures_breakpoint.ipynb")
    view = view_at(panel, 1)
    box = view.locator('.nbg-pause-breakpoint[data-path="write"]')
    box.locator(".nbg-break-update").wait_for(timeout=TIMEOUT)
    assert box.locator(".nbg-pause-prompt").inner_text() == "Paused after 'write'"
    assert view.locator(".nbg-bp-on-before").count() == 1  # publish's, before it
    album.keep("breakpoint", [shoot(page, view)])
    album.verdict()


def test_branches_waiting_for_their_answers(lab, page, album):
    panel = open_and_run(page, lab, "pictures_branches.ipynb")
    view = view_at(panel, 1)
    boxes = view.locator(".nbg-pause-input")
    page.wait_for_function(
        "el => el.querySelectorAll('.nbg-pause-input').length === 2", arg=view.element_handle(), timeout=TIMEOUT
    )
    assert [p.strip() for p in boxes.locator(".nbg-pause-prompt").all_inner_texts()] == [
        "What should we see in Kyoto?",
        "What should we see in Oslo?",
    ]
    assert set(view.locator(".nbg-node.nbg-visited").evaluate_all("els => els.map(e => e.dataset.node)")) >= {
        "plan",
        "flights",
        "hotels",
        "gather",
    }
    album.keep("branches", [shoot(page, view)])
    album.verdict()


def test_a_fork_beside_the_run_it_came_from(lab, page, album):
    panel = open_and_run(page, lab, "pictures_fork.ipynb")
    # The routing cell has been run again (urgent mail now gets a reply) once its output is there.
    panel.locator(".jp-Cell").nth(4).locator(".jp-OutputArea-output").first.wait_for(state="attached", timeout=TIMEOUT)
    view = view_at(panel, 2)
    view.locator('.nbg-log-step[data-step="2"]').click()
    fork = view.locator(".nbg-inspector button.nbg-fork")
    fork.wait_for(timeout=TIMEOUT)
    fork.click()
    view.locator(".nbg-fork-legend").wait_for(timeout=TIMEOUT)
    view.locator('.nbg-edge.nbg-fired[data-edge="classify\u2192reply"]').wait_for(timeout=TIMEOUT)
    page.wait_for_function("el => el.dataset.state === 'done'", arg=view.element_handle(), timeout=TIMEOUT)
    assert view.locator('.nbg-edge.nbg-was-fired[data-edge="classify\u2192escalate"]').count() == 1
    assert "Forked from run ticket-42 after step 2." in view.locator(".nbg-fork-legend").inner_text()
    view.locator(".nbg-inspector .nbg-insp-close").click()
    view.locator(".nbg-inspector").wait_for(state="hidden", timeout=TIMEOUT)
    album.keep("fork", [shoot(page, view)])
    album.verdict()


def test_a_batch_with_its_counts_on_the_edges(lab, page, album):
    panel = open_and_run(page, lab, "pictures_batch.ipynb")
    view = view_at(panel, 1)
    page.wait_for_function("el => el.dataset.finished === 'true'", arg=view.element_handle(), timeout=TIMEOUT)
    counts = view.locator(".nbg-hist-edge[data-count]").evaluate_all(
        "els => Object.fromEntries(els.map(e => [e.dataset.edge, e.dataset.count]))"
    )
    assert {k: v for k, v in counts.items() if k.startswith("classify")} == {
        "classify\u2192billing": "10",
        "classify\u2192shipping": "6",
        "classify\u2192other": "4",
    }
    view.locator('[data-edge="classify\u2192billing"] .nbg-count-bg').click()
    view.locator(".nbg-input-heading").wait_for(timeout=TIMEOUT)
    album.keep("batch", [shoot(page, view)])
    album.verdict()


def test_a_langgraph_graph_waiting_at_its_interrupt(lab, page, album):
    panel = open_and_run(page, lab, "pictures_langgraph.ipynb")
    view = view_at(panel, 1)
    view.locator("input.nbg-answer").wait_for(timeout=TIMEOUT)
    assert view.locator(".nbg-pause-prompt").inner_text() == "Which city should we visit?"
    album.keep("langgraph", [shoot(page, view)])
    album.verdict()


# The moving picture: each node's turn in four phases of its pulse (as the view pulses it), then
# the run as it ended, held.
PULSE = (1.0, 0.65, 0.35, 0.65)
PHASE_MS = 275
END_MS = 2500
NARROW = {"width": 900, "height": 1150}
TURNS = [("draft", 0), ("review", 1), ("draft", 2), ("review", 3), ("publish", 4)]


def test_a_run_moving_through_its_graph(lab, page, album):
    page.set_viewport_size(NARROW)  # the graph is narrow, and the log short
    panel = open_and_run(page, lab, "pictures_moving.ipynb")
    view = view_at(panel, 1)
    frames: list = []
    durations: list[int] = []
    for node, steps_done in TURNS:
        page.wait_for_function(
            """([el, node, done]) => el.dataset.current === node && el.dataset.state === 'running'
                && el.querySelectorAll('.nbg-log-step').length === done""",
            arg=[view.element_handle(), node, steps_done],
            timeout=TIMEOUT,
        )
        for strength in PULSE:
            pulse = f".nbg-current > .nbg-node-box {{ stroke-opacity: {strength} !important; }}"
            frames.append(shoot(page, view, HIDE + pulse))
            durations.append(PHASE_MS)
        in_kernel(page, "go.release()")  # the node's go-ahead
    page.wait_for_function("el => el.dataset.state === 'done'", arg=view.element_handle(), timeout=TIMEOUT)
    # (The step slider an ended run shows is left out: the frames keep one size.)
    frames.append(shoot(page, view, HIDE + ".nbg-replay { display: none !important; }"))
    durations.append(END_MS)
    assert len({frame.size for frame in frames}) == 1, [frame.size for frame in frames]
    album.keep("run-moving", frames, durations)
    album.verdict()
