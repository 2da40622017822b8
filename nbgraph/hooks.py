"""Display hooks: the seam between the engine and the notebook layer.

Nothing below the notebook layer names IPython or a widget. The notebook layer
registers itself here when it is imported (``%load_ext nbgraph`` does so, and so
does the first graph or run displayed inside a Jupyter kernel, which loads the
views installed under the ``nbgraph.views`` entry point); anywhere else
(scripts, CI, plain Python) a graph shows as text and a started run shows nothing.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

__all__ = ["VIEWS", "graph_mimebundle", "in_kernel", "notebook_layer", "register", "run_started", "view_mimebundle"]

_show_run: list[Callable[[Any], Any]] = []
_widget_bundle: list[Callable[[Any], dict[str, Any]]] = []


def register(*, show_run: Callable[[Any], Any], widget_bundle: Callable[[Any], dict[str, Any]]) -> None:
    """Install the notebook layer's hooks (it calls this when imported)."""
    _show_run[:] = [show_run]
    _widget_bundle[:] = [widget_bundle]


def in_kernel() -> bool:
    """True inside a running Jupyter kernel (checked without importing IPython)."""
    ipython_module = sys.modules.get("IPython")
    if ipython_module is None or "ipykernel" not in sys.modules:
        return False
    shell = ipython_module.get_ipython()
    return shell is not None and getattr(shell, "kernel", None) is not None


VIEWS = "nbgraph.views"
"""The entry-point group of the layers that show runs: loading one registers its hooks here.
nbgraph's own notebook layer is one (``pyproject.toml``); this layer never names it."""


def notebook_layer() -> bool:
    """Load the views installed (once) inside a kernel; False where widgets cannot show."""
    if not in_kernel():
        return False
    if not _show_run:
        from importlib.metadata import entry_points

        for view in entry_points(group=VIEWS):
            try:
                view.load()
            except ImportError:  # (a view whose widget libraries are missing shows nothing)
                continue
    return bool(_show_run)


def run_started(run: Any) -> None:
    """A run was started with ``g.start()``: show a live view of it, where one can show."""
    if notebook_layer():
        _show_run[0](run)


def graph_mimebundle(graph: Any, mermaid: str) -> dict[str, Any]:
    """What a displayed graph shows: the widget where it renders, mermaid text always."""
    return view_mimebundle(graph, {"text/plain": repr(graph), "text/markdown": f"```mermaid\n{mermaid}```\n"})


def view_mimebundle(shown: Any, bundle: dict[str, Any]) -> dict[str, Any]:
    """``bundle`` (what shows without widgets), with the view of ``shown`` (a graph, two runs
    side by side) where it renders."""
    if notebook_layer():
        bundle.update(_widget_bundle[0](shown))
    return bundle
