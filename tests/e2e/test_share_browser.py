"""A run shared as one HTML file (`result.to_html`, `nbgraph html`), opened in Chromium from
file:// with every request but the file's aborted: the graph draws, the slider moves through
every frame and the highlighted node, the visited nodes and the inspected state follow it, the
decisions show up to where it stands; nothing needs a kernel, nothing is fetched, nothing is
logged as an error. It follows the reader's light or dark preference, passes an axe-core audit
in both, keeps a state's `</script>` as text, and sits inside another page (twice, and in an
iframe) without a style or an id crossing either way."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from drawings import ROOT
from test_share import HOSTILE, published, writer

from nbgraph import END, START

AXE = ROOT / "js" / "node_modules" / "axe-core" / "axe.min.js"
TIMEOUT = 10_000


class Offline:
    """A page that may read files only: every other request is aborted and kept, as is every
    console error, uncaught exception and dialog."""

    def __init__(self, browser, scheme: str = "light") -> None:
        self.context = browser.new_context(viewport={"width": 1300, "height": 900}, color_scheme=scheme)
        self.page = self.context.new_page()
        self.fetched: list[str] = []
        self.errors: list[str] = []
        self.page.route("**/*", self._route)
        self.page.on("console", lambda m: self.errors.append(m.text) if m.type in ("error", "warning") else None)
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        self.page.on("dialog", lambda d: (self.errors.append(f"dialog: {d.message}"), d.dismiss()))

    def _route(self, route) -> None:
        url = route.request.url
        if url.startswith("file://"):
            route.continue_()
        else:
            self.fetched.append(url)
            route.abort()

    def open(self, path: Path):
        self.page.goto(path.as_uri())
        self.page.wait_for_function(
            "() => [...document.querySelectorAll('[data-nbgraph-shared]')].every((h) => h.shadowRoot?.querySelector('.nbg-svg'))",
            timeout=TIMEOUT,
        )
        return self.page

    def assert_quiet(self) -> None:
        assert self.fetched == [], f"the page asked the network for {self.fetched}"
        assert self.errors == [], f"the page logged {self.errors}"


@pytest.fixture
def offline(browser):
    opened: list[Offline] = []

    def make(scheme: str = "light") -> Offline:
        opened.append(Offline(browser, scheme))
        return opened[-1]

    yield make
    for each in opened:
        each.context.close()


def _state(page, host: int = 0) -> dict:
    """What the shared view shows now: the frame, the highlighted node, the visited ones, the
    decisions listed, and the slider's label."""
    return page.evaluate(
        """(host) => {
            const root = document.querySelectorAll('[data-nbgraph-shared]')[host].shadowRoot;
            const view = root.querySelector('.nbg-root');
            const nodes = (cls) => [...root.querySelectorAll(`[data-node].${cls}`)].map((g) => g.dataset.node).sort();
            const decisions = root.querySelector('.nbg-decisions');
            return {
                frame: view.dataset.frame, current: view.dataset.current, highlighted: nodes('nbg-current'),
                visited: nodes('nbg-visited'), label: root.querySelector('.nbg-replay-label').textContent,
                decisions: decisions.hidden ? -1 : root.querySelectorAll('.nbg-decision').length,
            };
        }""",
        host,
    )


def _inspected(page, *, step: int, path: str):
    """The inspector, once it shows step ``step`` of node ``path``."""
    inspector = page.locator(".nbg-inspector")
    page.wait_for_function(
        """([step, path]) => {
            const panel = document.querySelector('[data-nbgraph-shared]').shadowRoot.querySelector('.nbg-inspector');
            return !panel.hidden && panel.dataset.step === String(step) && panel.dataset.path === path;
        }""",
        arg=[step, path],
        timeout=TIMEOUT,
    )
    return inspector


def test_the_file_replays_the_run_offline_frame_by_frame(offline, tmp_path):
    result = published()
    frames = result.replay()
    path = result.to_html(tmp_path / "run.html")
    shared = offline()
    page = shared.open(path)
    view = page.locator(".nbg-root")
    assert sorted(view.locator("[data-node]").evaluate_all("gs => gs.map((g) => g.dataset.node)")) == sorted(
        [START, "draft", "review", "publish", END]
    )
    last = len(frames) - 1
    assert _state(page)["label"] == f"frame {last} / {last} \u00b7 step {frames[last].step} \u00b7 publish"

    # Nothing that needs a kernel is there: no Stop or Steer, no breakpoint to set, no box to answer.
    assert not view.locator(".nbg-controls").is_visible()
    assert view.locator(".nbg-bp").evaluate_all("gs => gs.filter((g) => g.getBoundingClientRect().width > 0)") == []
    assert (
        view.locator(".nbg-pending button, .nbg-standing button, .nbg-fork-onto").evaluate_all(
            "bs => bs.filter((b) => b.offsetParent !== null)"
        )
        == []
    )

    page.locator(".nbg-replay-range").focus()
    page.keyboard.press("Home")
    decided_at = next(i for i, frame in enumerate(frames) if frame.decided)
    for index, frame in enumerate(frames):
        if index:
            page.locator(".nbg-replay-next").click()
        seen = _state(page)
        node = frame.path if 0 < index < last else None  # (the last frame: the run as it ended)
        assert seen["frame"] == ("" if index == last else str(index))
        assert (seen["current"], seen["highlighted"]) == (node or "", [node] if node else []), index
        visited = sorted(path for path, count in frame.visits.items() if count and path != node)
        assert seen["visited"] == visited, index
        assert seen["decisions"] == (1 if index >= decided_at else 0), index
        if index == 0:
            assert seen["label"] == f"frame 0 / {last} \u00b7 the input"
            continue
        # The inspector shows the step that made this frame: the state it saw, what it changed.
        page.locator(".nbg-replay-inspect").click()
        inspector = _inspected(page, step=frame.step, path=frame.path)
        state = json.loads(inspector.locator(".nbg-insp-json").text_content() or "")
        assert state == frames[index - 1].state, index
        assert inspector.locator(".nbg-fork").count() == 0  # (no "Fork from here" without a kernel)
        diff = inspector.locator(".nbg-insp-diff").text_content() or ""
        if frame.path == "draft":
            assert f"version: {frames[index - 1].state['version']} \u2192 {frame.state['version']}" in diff
        page.keyboard.press("Escape")
    # A log line and a visited node are inspected too, as the kernel's view would answer them.
    page.keyboard.press("End")
    view.locator(".nbg-log-step").nth(2).click()
    _inspected(page, step=3, path="draft")
    view.locator('[data-node="review"]').click()
    _inspected(page, step=max(r.step for r in frames.records if r.path == "review"), path="review")
    shared.assert_quiet()


@pytest.mark.parametrize(("scheme", "background"), [("light", "rgb(255, 255, 255)"), ("dark", "rgb(13, 17, 23)")])
def test_it_follows_the_readers_light_or_dark_preference_and_passes_an_axe_audit(offline, tmp_path, scheme, background):
    assert AXE.exists(), f"{AXE} is missing: run `cd js && npm ci` first"
    path = published().to_html(tmp_path / "run.html")
    shared = offline(scheme)
    page = shared.open(path)
    view = page.locator(".nbg-root")
    assert view.evaluate("el => getComputedStyle(el).backgroundColor") == background
    page.locator(".nbg-replay-range").focus()
    page.keyboard.press("Home")
    page.keyboard.press("ArrowRight")
    page.locator(".nbg-replay-inspect").click()
    page.locator(".nbg-inspector").wait_for(state="visible", timeout=TIMEOUT)
    page.add_script_tag(path=str(AXE))  # (its text, put in the page: nothing is fetched)
    violations = page.evaluate(
        """async () => {
            // (label-content-name-mismatch: a visited node's "Inspect the latest step of draft" is the
            // view's own, flagged wherever it is drawn; this audit is of the page and its two looks.)
            const result = await axe.run(document.querySelector('[data-nbgraph-shared]'), {
                resultTypes: ['violations'], rules: { 'label-content-name-mismatch': { enabled: false } },
            });
            return result.violations.filter((v) => ['serious', 'critical'].includes(v.impact)).map((v) => ({
                id: v.id, help: v.help, nodes: v.nodes.slice(0, 6).map((n) => `${n.target.join(' ')}: ${n.failureSummary}`),
            }));
        }"""
    )
    assert violations == [], violations
    shared.assert_quiet()


def test_a_script_end_tag_and_ten_megabytes_in_the_state_stay_text_in_a_small_page(offline, tmp_path):
    g = writer()
    g.add_node("draft", lambda s: {"version": s.version + 1, "notes": [HOSTILE]}, replace=True)
    path = g.invoke({"text": HOSTILE + "x" * 10_000_000}).to_html(tmp_path / "run.html")
    assert path.stat().st_size < 300_000
    shared = offline()
    page = shared.open(path)
    page.locator(".nbg-replay-range").focus()
    page.keyboard.press("Home")
    page.keyboard.press("ArrowRight")
    page.locator(".nbg-replay-inspect").click()
    inspector = page.locator(".nbg-inspector")
    inspector.wait_for(state="visible", timeout=TIMEOUT)
    assert "</script><script>alert('pwned')</script><!--" in (inspector.locator(".nbg-insp-json").text_content() or "")
    assert "+ notes[+]: \"</script><script>alert('pwned')</script>" in (
        inspector.locator(".nbg-insp-diff").text_content() or ""
    )
    assert "keeps the first 2,000 characters" in (inspector.locator(".nbg-insp-missing").first.text_content() or "")
    assert page.evaluate("() => document.querySelectorAll('script').length") == 2
    shared.assert_quiet()


HOST = """<!doctype html>
<html><head><meta charset="utf-8"><title>A book page</title>
<style>
  * {{ color: rgb(255, 0, 0) !important; font-family: serif !important; }}
  svg, button, input, .nbg-root, .nbg-svg {{ display: none !important; }}
  .book {{ border: 3px solid rgb(0, 0, 255); }}
</style></head>
<body>
<p class="book">A chapter of a book, with the run shared twice and framed once.</p>
<div class="nbg-controls book">the book's own nbg-controls</div>
<span class="nbg-share-note">the book's own note</span>
{include}
<p>Between the two.</p>
{include}
<iframe src="run.html" width="1200" height="600" title="The run"></iframe>
</body></html>
"""


def test_it_sits_inside_another_page_twice_and_in_an_iframe_with_no_style_or_id_crossing(offline, tmp_path):
    path = published().to_html(tmp_path / "run.html")
    host = tmp_path / "book.html"
    host.write_text(HOST.format(include=path.read_text(encoding="utf-8")), encoding="utf-8")
    shared = offline()
    page = shared.open(host)
    views = page.locator(".nbg-root")
    assert views.count() == 2
    for view in (views.nth(0), views.nth(1)):
        assert view.locator(".nbg-svg").bounding_box()["height"] > 100  # the book's `svg {display: none}` stays out
        assert view.evaluate("el => getComputedStyle(el).color") != "rgb(255, 0, 0)"
    # The shared file's styles stay in: the book's own elements of the same class names are untouched.
    assert page.locator("div.book.nbg-controls").is_visible()
    assert (
        page.locator("div.book.nbg-controls").evaluate("el => getComputedStyle(el).borderTopColor") == "rgb(0, 0, 255)"
    )
    assert page.locator("span.nbg-share-note").evaluate("el => getComputedStyle(el).fontSize") == "16px"
    assert page.evaluate("() => document.querySelectorAll('[id]').length") == 0
    # Each copy scrubs on its own.
    page.locator(".nbg-replay-range").first.focus()
    page.keyboard.press("Home")
    assert (_state(page, 0)["frame"], _state(page, 1)["frame"]) == ("0", "")
    # The framed copy draws as the file does on its own.
    frame = page.frames[1]
    frame.wait_for_function(
        "() => document.querySelector('[data-nbgraph-shared]').shadowRoot?.querySelector('.nbg-svg')", timeout=TIMEOUT
    )
    assert frame.locator("[data-node]").count() == 5
    shared.assert_quiet()


def test_the_command_makes_a_page_of_a_real_runs_trace_that_replays_it(offline, openai_server, tmp_path):
    from openai_server import Reply
    from test_cli import GRAPH_FILE, chat

    from nbgraph import OpenAIModel
    from nbgraph.llm import UserMessage

    openai_server.script(Reply(tool_calls=[("remember", {"note": "milk"})]), Reply(text="Noted: milk."))
    model = OpenAIModel("gpt-4o-mini", base_url=openai_server.base_url, api_key="sk-proj-" + "Q7" * 16, max_retries=0)
    try:
        result = chat(model).invoke({"messages": [UserMessage(content="Remember milk")]})
    finally:
        model.close()
    assert result.outcome == "done", result.reason
    (tmp_path / "run.ndjson").write_text(result.to_ndjson())
    (tmp_path / "graph.py").write_text(GRAPH_FILE)
    done = subprocess.run(
        [sys.executable, "-m", "nbgraph", "html", "run.ndjson", "--graph", "graph.py:g"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    shared = offline()
    page = shared.open(tmp_path / "run.html")
    page.locator(".nbg-replay-range").focus()
    page.keyboard.press("Home")
    page.keyboard.press("ArrowRight")
    assert _state(page)["highlighted"] == ["agent"]
    page.locator(".nbg-replay-inspect").click()
    llm = page.locator(".nbg-inspector .nbg-insp-llm")
    llm.wait_for(state="visible", timeout=TIMEOUT)
    assert "tool remember" in (llm.text_content() or "") and "Noted: milk." in (llm.text_content() or "")
    page.locator(".nbg-replay-range").focus()
    page.keyboard.press("ArrowRight")
    assert (_state(page)["highlighted"], _state(page)["visited"]) == ([], ["agent", "wrap"])  # (as it ended)
    shared.assert_quiet()
