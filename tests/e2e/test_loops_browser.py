"""An agent that loops on itself, in a real JupyterLab: the live view, the inspector, replay, the
batch view and a comparison draw the loop on its node; the drawings keep their geometry; the
views pass an axe-core audit in the light and dark themes; a message the protocol does not
allow is refused in the browser with a console error."""

from __future__ import annotations

import re

from drawings import ROOT
from playwright.sync_api import expect
from test_widget_browser import TIMEOUT, printed, run_all

from conftest import ARTIFACTS

AXE = ROOT / "js" / "node_modules" / "axe-core" / "axe.min.js"
LOOP = "agent\u2192agent"
NUDGE = 'state.status == "in_progress" and not state.tool_calls and state.nudges < 1'
LIVE = "document.querySelector('.jp-NotebookPanel .nbg-root.nbg-live')"


def _load_checks(page) -> None:
    """axe-core (js/node_modules, after `cd js && npm ci`) and the drawing's geometry checks, in the page."""
    assert AXE.exists(), f"{AXE} is missing: run `cd js && npm ci` first"
    page.add_script_tag(path=str(AXE))
    geometry = (ROOT / "js" / "test" / "geometry.js").read_text(encoding="utf-8")
    script = re.sub(r"^export ", "", geometry, flags=re.MULTILINE)
    page.add_script_tag(
        content=f"(() => {{ {script}\nwindow.nbgGeometry = {{ drawnDrawing, geometryProblems }}; }})();"
    )


def _geometry(view) -> list[str]:
    return view.evaluate(
        "root => window.nbgGeometry.geometryProblems(window.nbgGeometry.drawnDrawing(root.querySelector('.nbg-svg')))"
    )


def _audit(page) -> list[dict]:
    """The serious and critical axe-core violations in the notebook's nbgraph views."""
    return page.evaluate(
        """async () => {
            const views = document.querySelectorAll('.jp-NotebookPanel .nbg-root');
            const result = await axe.run(views, { resultTypes: ['violations'] });
            return result.violations.filter((v) => ['serious', 'critical'].includes(v.impact)).map((v) => ({
                id: v.id, impact: v.impact, help: v.help,
                nodes: v.nodes.slice(0, 6).map((n) => `${n.target.join(' ')}: ${n.failureSummary}`),
            }));
        }"""
    )


# Text against what is drawn behind it (WCAG contrast ratio): badges over their node, the running
# node's label over its box; colours as computed (rgb, rgba or color(srgb ...)), alpha composited.
CONTRASTS = """root => {
    const parse = (c) => {
        const srgb = c.match(/color\\(srgb ([\\d.e-]+) ([\\d.e-]+) ([\\d.e-]+)(?: \\/ ([\\d.e-]+))?\\)/);
        if (srgb) return [+srgb[1] * 255, +srgb[2] * 255, +srgb[3] * 255, srgb[4] === undefined ? 1 : +srgb[4]];
        const [r, g, b, a = 1] = c.match(/[\\d.]+/g).map(Number);
        return [r, g, b, a];
    };
    const over = (top, under) => top.slice(0, 3).map((v, i) => top[3] * v + (1 - top[3]) * under[i]).concat(1);
    const lum = (rgb) => {
        const [r, g, b] = rgb.slice(0, 3).map((v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; });
        return 0.2126 * r + 0.7152 * g + 0.0722 * b;
    };
    const fill = (el) => parse(getComputedStyle(el).fill);
    const page = parse(getComputedStyle(root).backgroundColor);
    const ratio = (text, ...layers) => {
        const back = layers.reduceRight((under, layer) => over(layer, under), page);
        const [x, y] = [lum(over(text, back)), lum(back)].sort((p, q) => q - p);
        return Math.round(((x + 0.05) / (y + 0.05)) * 100) / 100;
    };
    const node = (path) => root.querySelector(`[data-node="${path}"]`);
    const badge = (path, kind) => {
        const box = node(path).querySelector(`.nbg-badge-${kind}`);
        return ratio(fill(box.nextElementSibling), fill(box), fill(node(path).querySelector('.nbg-node-box')));
    };
    return {
        llm: badge('agent', 'llm'),
        tools: badge('agent', 'tools'),
        approval: badge('review', 'approval'),
        running: ratio(fill(node('review').querySelector('.nbg-node-label')), fill(node('review').querySelector('.nbg-node-box'))),
        visits: ratio(fill(node('agent').querySelector('.nbg-visits'))),
    };
}"""


def _theme(page) -> str:
    return "light" if page.evaluate("() => document.body.dataset.jpThemeLight") == "true" else "dark"


def _switch_theme(page, view) -> str:
    """Switch JupyterLab to its other theme; returns its name once the view is drawn in it."""
    other = "dark" if _theme(page) == "light" else "light"
    before = view.locator(".nbg-node-label").first.evaluate("el => getComputedStyle(el).fill")
    page.evaluate(
        "t => window.jupyterapp.commands.execute('apputils:change-theme', {theme: t})", f"JupyterLab {other.title()}"
    )
    page.wait_for_function(
        "want => document.body.dataset.jpThemeLight === want", arg=str(other == "light").lower(), timeout=TIMEOUT
    )
    page.locator("#jupyterlab-splash").wait_for(state="detached", timeout=TIMEOUT)
    expect(view.locator(".nbg-node-label").first).not_to_have_css("fill", before, timeout=TIMEOUT)
    return other


def test_a_loop_on_itself_in_every_view_with_geometry_and_an_accessibility_audit(lab, page):
    panel = run_all(page, lab, "loops.ipynb")
    cells = panel.locator(".jp-Notebook .jp-Cell")
    live = panel.locator(".nbg-root.nbg-live")
    live.locator("button.nbg-approve").wait_for(timeout=TIMEOUT)  # the agent looped and the run waits at review
    _load_checks(page)

    # The live view: the loop fired (twice: the agent ran three times), drawn on its node.
    page.wait_for_function(f"() => {LIVE}.dataset.current === 'review'", timeout=TIMEOUT)
    loop = live.locator(f'.nbg-edge[data-edge="{LOOP}"]')
    expect(loop).to_have_class(re.compile(r"\bnbg-fired\b"), timeout=TIMEOUT)
    expect(live.locator('[data-node="agent"] .nbg-visits')).to_have_text("\u00d73", timeout=TIMEOUT)
    assert _geometry(live) == []
    # The long condition: two lines on the drawing ending in an ellipsis, the whole of it on hover.
    nudge = live.locator('.nbg-edge[data-edge="agent\u2192wrapper_nudge"] .nbg-edge-text')
    lines = nudge.locator("tspan").all_text_contents()
    assert len(lines) == 2 and lines[-1].endswith("\u2026") and NUDGE.startswith(lines[0])
    assert nudge.locator("> title").text_content() == NUDGE

    # The inspector shows the agent's last step with the whole condition it tried.
    live.locator('.nbg-node[data-node="agent"]').click()
    inspector = live.locator(".nbg-inspector")
    expect(inspector).to_have_attribute("data-path", "agent", timeout=TIMEOUT)
    tried = inspector.locator(".nbg-insp-candidate").all_text_contents()
    assert f"\u00b7 {NUDGE}: false" in tried, tried

    # The batch view: the loop has its count (three of the four runs took it) and width.
    batch = cells.nth(1).locator(".nbg-root.nbg-batch")
    page.wait_for_function(
        "() => document.querySelector('.jp-NotebookPanel .jp-Cell:nth-child(2) .nbg-batch')?.dataset.finished === 'true'",
        timeout=TIMEOUT,
    )
    expect(batch.locator(f'[data-edge="{LOOP}"] .nbg-count-text')).to_have_text("3")
    expect(batch.locator(f'[data-edge="{LOOP}"] path:not(.nbg-hit)').first).to_have_css(
        "stroke-width", "8.1px", timeout=TIMEOUT
    )
    assert _geometry(batch) == []
    # The comparison: both versions looped, the new one on one input only.
    compared = cells.nth(2).locator('.nbg-root.nbg-batch[data-mode="compare"]')
    expect(compared.locator(f'[data-edge="{LOOP}"]')).to_have_attribute("data-side", "both")
    expect(compared.locator(f'[data-edge="{LOOP}"] .nbg-count-text')).to_have_text("3\u21921")
    assert _geometry(compared) == []

    # The axe-core audit and the contrast of what it cannot see (SVG text), in both themes.
    seen = {}
    for _ in range(2):
        theme = _theme(page)
        seen[theme] = (_audit(page), live.evaluate(CONTRASTS))
        live.screenshot(path=str(ARTIFACTS / f"loops-{theme}.png"))
        batch.screenshot(path=str(ARTIFACTS / f"loops-batch-{theme}.png"))
        _switch_theme(page, live)
    for theme, (violations, contrasts) in seen.items():
        assert violations == [], f"{theme} theme: {violations}"
        low = {what: ratio for what, ratio in contrasts.items() if ratio < 4.5}
        assert low == {}, f"{theme} theme: text below 4.5:1 on its background: {low}"
    assert set(seen) == {"light", "dark"}

    # A message the protocol does not allow is refused in the browser, with a console error.
    with page.expect_console_message(
        lambda m: m.type == "error" and "refused a message" in m.text, timeout=TIMEOUT
    ) as said:
        cells.nth(3).locator("button.send-bad").click()
    assert said.value.text == (
        'nbgraph graph view: refused a message from the kernel, message "inspection" needs "path" (a string)'
    )

    # Approved, the run ends; the slider replays it: before the loop fired, then after.
    live.locator("button.nbg-approve").click()
    page.wait_for_function(f"() => {LIVE}.dataset.state === 'done'", timeout=TIMEOUT)
    assert printed(panel, "RESULT") == "RESULT done ['agent', 'agent', 'agent', 'review']"
    slider = live.locator("input.nbg-replay-range")
    slider.focus()
    page.keyboard.press("Home")
    expect(live).to_have_attribute("data-frame", "0")
    expect(loop).not_to_have_class(re.compile(r"\bnbg-fired\b"))
    page.keyboard.press("ArrowRight")
    page.keyboard.press("ArrowRight")
    expect(live).to_have_attribute("data-frame", "2")
    expect(loop).to_have_class(re.compile(r"\bnbg-fired\b"))
    assert _geometry(live) == []
