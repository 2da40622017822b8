"""Display hooks: the seam between the engine and the notebook layer.

Nothing below the notebook layer names IPython or a widget. The notebook layer
registers itself here when it is imported (``%load_ext nbgraph`` does so, and so
does the first graph or run displayed inside a Jupyter kernel, which loads the
views installed under the ``nbgraph.views`` entry point); anywhere else
(scripts, CI, plain Python) a graph shows as text, a started run shows nothing, and
``await run`` waits for the run.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

__all__ = [
    "VIEWS",
    "awaited",
    "graph_mimebundle",
    "in_kernel",
    "notebook_layer",
    "register",
    "run_started",
    "view_mimebundle",
]

T = TypeVar("T")
Waiting = Callable[[Any, Coroutine[Any, Any, Any]], Coroutine[Any, Any, Any]]

_show_run: list[Callable[[Any], Any]] = []
Bundle = tuple[dict[str, Any], dict[str, Any]]  # a mimebundle's data and its metadata
_widget_bundle: list[Callable[[Any], Bundle]] = []
_awaited: list[Waiting] = []


def register(
    *,
    show_run: Callable[[Any], Any],
    widget_bundle: Callable[[Any], Bundle],
    awaited: Waiting | None = None,
) -> None:
    """Install the notebook layer's hooks (it calls this when imported)."""
    _show_run[:] = [show_run]
    _widget_bundle[:] = [widget_bundle]
    _awaited[:] = [awaited] if awaited is not None else []


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


def graph_mimebundle(graph: Any, mermaid: str) -> dict[str, Any] | Bundle:
    """What a displayed graph shows: the widget where it renders, mermaid text always."""
    return view_mimebundle(graph, {"text/plain": repr(graph), "text/markdown": f"```mermaid\n{mermaid}```\n"})


def view_mimebundle(shown: Any, bundle: dict[str, Any]) -> dict[str, Any] | Bundle:
    """``bundle`` (what shows without widgets), with the view of ``shown`` (a graph, two runs
    side by side) where it renders; with the view's metadata where it has some (on Colab)."""
    if notebook_layer():
        data, metadata = _widget_bundle[0](shown)
        bundle.update(data)
        if metadata:
            return bundle, metadata
    return bundle


def awaited(run: Any, waiting: Coroutine[Any, Any, T]) -> Coroutine[Any, Any, T]:
    """What ``await run`` awaits: ``waiting`` (the run's result), or inside a kernel the
    notebook layer's wait for it, which fails at once, saying what to do, where the run
    pauses for a click the kernel cannot read while the cell awaits."""
    if notebook_layer() and _awaited:
        return _awaited[0](run, waiting)
    return waiting
