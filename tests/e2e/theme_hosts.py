"""The pages a view is drawn in where notebooks run: what each host puts around a widget's output.

Each frame reproduces what its host gives an output, from the host's own code (read with the
versions named below), so the theme test sees the view as it is there:

- **JupyterLab 4** (and Voila, Notebook 7): its light and dark themes' stylesheets, loaded from
  the JupyterLab installed here, and the attributes its theme manager sets on ``<body>``
  (``data-jp-theme-light``, ``data-jp-theme-name``, ``color-scheme``).
- **VS Code**: its webview's theme (``--vscode-*`` on ``<html>``, ``vscode-light``/``vscode-dark``
  on ``<body>``; ``src/vs/workbench/contrib/webview/browser/pre/index.html``), with the colours of
  its default themes (``extensions/theme-defaults/themes/dark_modern.json``, ``light_modern.json``);
  the ipywidgets renderer's page (npm ``@vscode/jupyter-ipywidgets8`` 1.0.9 bundles
  ``@jupyter-widgets/controls``' ``css/labvariables.css``: JupyterLab's *light* variables on
  ``:root``, whatever VS Code's theme) and vscode-jupyter's renderer (its
  ``ipywidgets/renderer/styles.css`` paints ``.cell-output-ipywidget-background`` white with
  ``!important``; ``kernel/index.ts`` and ``manager.ts`` nest the widget's element so).
- **Colab**: its output frame's ``html[theme]`` (Colab's advice for outputs, googlecolab/colabtools
  issues 1214 and 2485) and its ``--colab-*`` variables (the values of its light and dark
  themes), and its widget manager (googlecolab/colab-cdn-widget-manager ``src/index.css``: the same
  ``labvariables.css``, then four ``--jp-*`` mapped to ``--colab-*``).
- **marimo** (0.25, installed here): its own stylesheet, the classes and attribute its theme
  provider sets on ``<body>`` (``dark dark-theme``, ``data-theme``), and a widget drawn inside a
  custom element's shadow root that adopts the page's stylesheets and the widget's CSS.
"""

from __future__ import annotations

import html
import sys
from dataclasses import dataclass, field
from pathlib import Path

import marimo

LAB_THEMES = Path(sys.prefix) / "share" / "jupyter" / "lab" / "themes" / "@jupyterlab"
MARIMO_ASSETS = Path(marimo.__file__).parent / "_static" / "assets"

IPYWIDGETS_ROOT = {
    # @jupyter-widgets/controls css/labvariables.css, as @vscode/jupyter-ipywidgets8 1.0.9 and
    # colab-cdn-widget-manager bundle it (the md-* colours it names, resolved).
    "--jp-ui-font-color0": "rgba(0, 0, 0, 1)",
    "--jp-ui-font-color1": "rgba(0, 0, 0, 0.8)",
    "--jp-ui-font-color2": "rgba(0, 0, 0, 0.5)",
    "--jp-ui-font-color3": "rgba(0, 0, 0, 0.3)",
    "--jp-content-font-color1": "black",
    "--jp-layout-color0": "white",
    "--jp-layout-color1": "white",
    "--jp-layout-color2": "#eeeeee",
    "--jp-layout-color3": "#bdbdbd",
    "--jp-border-color1": "#9e9e9e",
    "--jp-border-color2": "#e0e0e0",
    "--jp-brand-color0": "#1976d2",
    "--jp-brand-color1": "#2196f3",
    "--jp-warn-color1": "#ff9800",
    "--jp-error-color1": "#f44336",
    "--jp-success-color1": "#4caf50",
    "--jp-ui-font-family": "'Helvetica Neue', Helvetica, Arial, sans-serif",
    "--jp-code-font-family": "monospace",
}

VSCODE_THEMES = {
    # Dark Modern and Light Modern, VS Code's default themes (the colours the view reads, and
    # the fonts every webview has).
    "dark": {
        "--vscode-editor-background": "#1F1F1F",
        "--vscode-editor-foreground": "#CCCCCC",
        "--vscode-textLink-foreground": "#4daafc",
        "--vscode-focusBorder": "#0078D4",
        "--vscode-font-family": "system-ui, 'Ubuntu', 'Droid Sans', sans-serif",
        "--vscode-editor-font-family": "'Droid Sans Mono', 'monospace', monospace",
    },
    "light": {
        "--vscode-editor-background": "#FFFFFF",
        "--vscode-editor-foreground": "#3B3B3B",
        "--vscode-textLink-foreground": "#0D9488",
        "--vscode-focusBorder": "#0D9488",
        "--vscode-font-family": "system-ui, 'Ubuntu', 'Droid Sans', sans-serif",
        "--vscode-editor-font-family": "'Droid Sans Mono', 'monospace', monospace",
    },
}

COLAB_THEMES = {
    # Colab's html and html[theme='dark'] variables (paper-* colours resolved).
    "light": {
        "--colab-primary-surface-color": "#ffffff",
        "--colab-primary-text-color": "#212121",
        "--colab-secondary-surface-color": "#f7f7f7",
        "--colab-anchor-color": "#00e",
        "--colab-border-color": "#dadada",
    },
    "dark": {
        "--colab-primary-surface-color": "#383838",
        "--colab-primary-text-color": "#d5d5d5",
        "--colab-secondary-surface-color": "#454545",
        "--colab-anchor-color": "#64b5f6",
        "--colab-border-color": "#616161",
    },
}

COLAB_WIDGET_MANAGER = {
    "--jp-widgets-color": "var(--colab-primary-text-color)",
    "--jp-layout-color2": "var(--colab-secondary-surface-color)",
    "--jp-ui-font-color1": "var(--colab-primary-text-color)",
    "--jp-widgets-input-background-color": "var(--colab-secondary-surface-color)",
}

MARIMO_VARIABLES = ("--foreground", "--background", "--link")
"""The marimo variables the view reads (its stylesheet sets them for light and dark)."""


def _block(selector: str, variables: dict[str, str]) -> str:
    return selector + " {\n" + "".join(f"  {name}: {value};\n" for name, value in variables.items()) + "}\n"


def marimo_stylesheet() -> Path:
    """marimo's own stylesheet (the one with its light and dark variables)."""
    for path in sorted(MARIMO_ASSETS.glob("index-*.css")):
        text = path.read_text(encoding="utf-8")
        if ".dark,.dark-theme" in text and "--background:" in text:
            return path
    raise FileNotFoundError(f"no marimo stylesheet with its light and dark variables in {MARIMO_ASSETS}")


@dataclass(frozen=True)
class Host:
    """A page as a host makes it round a widget's output."""

    name: str
    background: str
    """The colour the host draws behind outputs, which the view's own background must be."""
    dark: bool
    html_attrs: str = ""
    body_attrs: str = ""
    styles: str = ""
    """The host's CSS, in the page's head."""
    sheets: tuple[str, ...] = ()
    """Stylesheets the host loads (served paths)."""
    mount: str = "plain"
    """How the widget's element sits in the page: ``plain``, ``vscode`` (the renderer's nested
    white panels), ``shadow`` (marimo's custom element)."""
    variables: dict[str, str] = field(default_factory=dict)

    def page(self) -> str:
        links = "".join(f'<link rel="stylesheet" href="{html.escape(href)}">' for href in self.sheets)
        view_css = (
            ""
            if self.mount == "shadow"
            else (
                '<link rel="stylesheet" href="/nbgraph/static/widget.css">'
                '<link rel="stylesheet" href="/nbgraph/static/batch.css">'
            )
        )
        return PAGE.format(
            html_attrs=self.html_attrs,
            body_attrs=self.body_attrs,
            head=links + f"<style>{self.styles}</style>" + view_css,
            mount=self.mount,
        )


def _jupyterlab(theme: str) -> Host:
    light = theme == "light"
    return Host(
        name=f"jupyterlab-{theme}",
        background="rgb(255, 255, 255)" if light else "rgb(17, 17, 17)",
        dark=not light,
        body_attrs=(
            f'data-jp-theme-light="{str(light).lower()}" data-jp-theme-name="JupyterLab {theme.title()}" '
            f'style="color-scheme: {theme}; background: var(--jp-layout-color0)"'
        ),
        sheets=(f"/lab-themes/theme-{theme}-extension/index.css",),
    )


def _vscode(theme: str) -> Host:
    variables = VSCODE_THEMES[theme]
    style = "; ".join(f"{k}: {v}" for k, v in variables.items())
    return Host(
        name=f"vscode-{theme}",
        background="rgb(31, 31, 31)" if theme == "dark" else "rgb(255, 255, 255)",
        dark=theme == "dark",
        # The notebook's background shows through the webview's transparent body.
        html_attrs=f'style="{style}; background: var(--vscode-editor-background)"',
        body_attrs=f'class="vscode-{theme}" data-vscode-theme-kind="vscode-{theme}" style="background: transparent"',
        styles=_block(":root", IPYWIDGETS_ROOT)
        + ".cell-output-ipywidget-background { background: white !important; }\n",
        mount="vscode",
        variables=variables,
    )


def _colab(theme: str) -> Host:
    return Host(
        name=f"colab-{theme}",
        background="rgb(56, 56, 56)" if theme == "dark" else "rgb(255, 255, 255)",
        dark=theme == "dark",
        html_attrs=f'theme="{theme}" style="background: var(--colab-primary-surface-color)"',
        body_attrs='style="background: transparent"',
        styles=_block("html", COLAB_THEMES["light"])
        + _block("html[theme='dark']", COLAB_THEMES["dark"])
        + _block(":root", IPYWIDGETS_ROOT)
        + _block(":root", COLAB_WIDGET_MANAGER),
        variables=COLAB_THEMES[theme],
    )


def _marimo(theme: str) -> Host:
    return Host(
        name=f"marimo-{theme}",
        background="rgb(24, 28, 26)" if theme == "dark" else "rgb(255, 255, 255)",
        dark=theme == "dark",
        body_attrs=f'class="{theme} {theme}-theme" data-theme="{theme}"',
        sheets=("/marimo/index.css",),
        mount="shadow",
    )


HOSTS = {
    host.name: host
    for host in (
        _jupyterlab("light"),
        _jupyterlab("dark"),
        _vscode("light"),
        _vscode("dark"),
        _colab("light"),
        _colab("dark"),
        _marimo("light"),
        _marimo("dark"),
    )
}

PAGE = """<!doctype html>
<html {html_attrs}><head><meta charset="utf-8">{head}</head>
<body {body_attrs}><div id="out" style="width: 1100px; padding: 12px"></div>
<script src="/js/node_modules/axe-core/axe.min.js"></script>
<script type="module">
import {{ audit, show }} from "/tests/e2e/themed_page.js";
window.show = (state) => show(state, "{mount}");
window.audit = audit;
window.ready = true;
</script></body></html>
"""
