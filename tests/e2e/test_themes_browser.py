"""The view in every host's theme, in Chromium: JupyterLab light and dark, VS Code light and dark
(with the JupyterLab variables its ipywidgets renderer injects and its white panels), Colab's
light and dark output frames (its widget manager's variables too) and marimo light and dark (its
own stylesheet, the view in a shadow root), as ``theme_hosts`` reproduces each page.

In each, real views (``themed_views``: a run paused at an approval whose deadline is near, a tool
call's form, a running node, a run that ended with a denial and its inspector open, a node that
failed, a batch with an edge's inputs listed) are drawn by the built module, and:

- every HTML text passes axe-core's color-contrast rule (4.5:1), and the text axe cannot decide
  on passes it measured here;
- every SVG text (node labels, badges, edge labels, counts) is 4.5:1 on what is drawn under it;
- every control is made out by its outline or fill at 3:1, its focus ring at 3:1; every line of
  the graph (node outlines and their states, edges) is 3:1 on the canvas;
- the view's background is the host's, in its scheme (no light box in a dark theme), and VS
  Code's white panels do not show round it.
"""

from __future__ import annotations

import functools
import http.server
import re
import threading
from pathlib import Path

import pytest
import themed_views
from drawings import ROOT
from playwright.sync_api import expect
from theme_hosts import (
    COLAB_THEMES,
    HOSTS,
    IPYWIDGETS_ROOT,
    LAB_THEMES,
    MARIMO_VARIABLES,
    VSCODE_THEMES,
    marimo_stylesheet,
)

from conftest import ARTIFACTS

AXE = ROOT / "js" / "node_modules" / "axe-core" / "axe.min.js"
TIMEOUT = 10_000


class _Site(http.server.SimpleHTTPRequestHandler):
    """The repository, each host's page at /host/<name>.html, and the hosts' own stylesheets."""

    def log_message(self, *args) -> None:
        pass

    def do_GET(self) -> None:
        if self.path == "/favicon.ico":
            self._send(b"", "image/x-icon", 204)
        elif self.path.startswith("/host/"):
            name = self.path.removeprefix("/host/").removesuffix(".html")
            self._send(HOSTS[name].page().encode(), "text/html")
        elif self.path.startswith("/lab-themes/"):
            self._file(LAB_THEMES / self.path.removeprefix("/lab-themes/"))
        elif self.path == "/marimo/index.css":
            self._file(marimo_stylesheet())
        else:
            super().do_GET()

    def _file(self, path: Path) -> None:
        self._send(path.read_bytes(), "text/css")

    def _send(self, body: bytes, kind: str, status: int = 200) -> None:
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture(scope="module")
def site():
    assert AXE.exists(), f"{AXE} is missing: run `cd js && npm ci` first"
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Site, directory=str(ROOT)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_port}"
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="module")
def states():
    return themed_views.states()


def _open(browser, site: str, host: str, errors: list[str]):
    context = browser.new_context(viewport={"width": 1200, "height": 1400}, reduced_motion="reduce")
    page = context.new_page()
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.goto(f"{site}/host/{host}.html")
    page.wait_for_function("() => window.ready === true", timeout=TIMEOUT)
    return context, page


def _look(page, state: dict, name: str) -> None:
    """Draw ``state`` and bring up what it is there to show."""
    page.evaluate("state => window.show(state)", state)
    view = page.locator(".nbg-root")
    if name == "paused":
        expect(view.locator(".nbg-pause-deadline.nbg-deadline-warn")).to_be_visible(timeout=TIMEOUT)
        expect(view.locator(".nbg-pause-reason")).to_be_visible()
        expect(view.locator("button.nbg-approve")).to_be_visible()
        expect(view.locator(".nbg-decision")).to_have_count(1)
    elif name == "tool":
        expect(view.locator(".nbg-tool-call .nbg-field-input").first).to_be_visible(timeout=TIMEOUT)
    elif name == "running":
        expect(view.locator(".nbg-state-running")).to_be_visible(timeout=TIMEOUT)
    elif name in ("finished", "failed"):
        # The inspector: a node that ran, clicked; the step that failed, from its log line.
        if name == "finished":
            view.locator('.nbg-node[data-node="draft"]').click()
        else:
            view.locator('.nbg-log-step[data-where="parse"]').click()
        node = "draft" if name == "finished" else "parse"
        expect(view.locator(".nbg-inspector")).to_have_attribute("data-path", node, timeout=TIMEOUT)
        expect(view.locator("input.nbg-replay-range")).to_be_visible()
        if name == "finished":
            expect(view.locator('.nbg-decision[data-verdict="denied"]')).to_have_count(1)
        else:
            expect(view.locator(".nbg-insp-raised, .nbg-insp-error").first).to_be_visible()
    elif name == "batch":
        view.locator('.nbg-hist-edge[data-edge="work\u2192odd"] .nbg-count-bg').click()
        expect(view.locator(".nbg-input-id").first).to_be_visible(timeout=TIMEOUT)
    # Keyboard use, so a focused control shows the ring a keyboard user sees.
    page.keyboard.press("Tab")


def _problems(found: dict) -> dict[str, list[str]]:
    return {k: found[k] for k in ("axe", "html", "svgText", "lines", "controls", "unanswered") if found[k]}


def test_the_css_reads_no_host_variable_the_frames_do_not_reproduce():
    css = "".join((ROOT / "js" / "src" / f).read_text(encoding="utf-8") for f in ("widget.css", "batch.css"))
    read = set(re.findall(r"var\((--[\w-]+)", css))
    host = {v for v in read if not v.startswith("--nbg-")}
    assert {v for v in host if v.startswith("--jp-")} <= set(IPYWIDGETS_ROOT)
    for theme in VSCODE_THEMES.values():
        assert {v for v in host if v.startswith("--vscode-")} <= set(theme)
    for theme in COLAB_THEMES.values():
        assert {v for v in host if v.startswith("--colab-")} <= set(theme)
    others = {v for v in host if not v.startswith(("--jp-", "--vscode-", "--colab-"))}
    assert others == set(MARIMO_VARIABLES), "a host variable none of the frames sets"
    text = marimo_stylesheet().read_text(encoding="utf-8")
    assert all(f"{v}:" in text for v in MARIMO_VARIABLES)


@pytest.mark.parametrize("host", list(HOSTS))
def test_every_text_and_control_keeps_its_contrast_in_the_host_s_theme(browser, site, states, host):
    frame = HOSTS[host]
    errors: list[str] = []
    context, page = _open(browser, site, host, errors)
    try:
        seen = {}
        for name, state in states.items():
            _look(page, state, name)
            seen[name] = page.evaluate("() => window.audit()")
            ARTIFACTS.mkdir(exist_ok=True)
            page.locator(".nbg-root").screenshot(path=str(ARTIFACTS / f"theme-{host}-{name}.png"))
    finally:
        context.close()
    assert errors == []
    for name, found in seen.items():
        assert found["seen"]["axe"] >= 15 and found["seen"]["svgText"] >= 4 and found["seen"]["lines"] >= 5, found[
            "seen"
        ]
        assert _problems(found) == {}, f"{host}, {name}: {_problems(found)}"
        # The view is the host's background, in the host's scheme: no light box in a dark theme.
        assert found["background"] == frame.background, f"{host}, {name}: the view's background"
        assert found["scheme"] == ("dark" if frame.dark else "light"), f"{host}, {name}"
        # VS Code's panels, white whatever its theme, give way round a view alone.
        assert all(panel == "rgba(0, 0, 0, 0)" for panel in found["panels"]), f"{host}: {found['panels']}"
    if frame.mount == "vscode":
        assert all(len(found["panels"]) == 2 for found in seen.values())


def test_a_colour_below_its_contrast_is_found(browser, site, states):
    """The audit itself: a warning colour too pale for a light theme, and outlines too faint, are reported."""
    errors: list[str] = []
    context, page = _open(browser, site, "jupyterlab-light", errors)
    try:
        page.add_style_tag(content=".nbg-root { --nbg-warn: #f0a020; --nbg-line: #d8d8d8; }")
        _look(page, states["paused"], "paused")
        found = page.evaluate("() => window.audit()")
    finally:
        context.close()
    assert any("nbg-pause-node" in line for line in found["axe"]), found["axe"]
    assert any("nbg-node-box" in line for line in found["lines"]), found["lines"]
    assert any("nbg-button" in line and "outline" in line for line in found["controls"]), found["controls"]
