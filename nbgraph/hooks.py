"""Display hooks: the seam between the engine and the notebook layer.

Nothing below the notebook layer names IPython, marimo or a widget. The notebook layer
registers itself here when it is imported (``%load_ext nbgraph`` does so, and so
does the first graph or run displayed inside a Jupyter kernel or a marimo notebook, which
loads the views installed under the ``nbgraph.views`` entry point); anywhere else
(scripts, CI, plain Python) a graph shows as text, a started run shows nothing, and
``await run`` waits for the run.

Jupyter asks an object for its mimebundle (``_repr_mimebundle_``); marimo first asks for
what to show in its place (``_display_``, :func:`displayed`), and draws an anywidget as it is.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

__all__ = [
    "VIEWS",
    "awaited",
    "displayed",
    "graph_mimebundle",
    "in_kernel",
    "in_marimo",
    "in_notebook",
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
_view_of: list[Callable[[Any], Any]] = []


def register(
    *,
    show_run: Callable[[Any], Any],
    widget_bundle: Callable[[Any], Bundle],
    awaited: Waiting | None = None,
    view_of: Callable[[Any], Any] | None = None,
) -> None:
    """Install the notebook layer's hooks (it calls this when imported)."""
    _show_run[:] = [show_run]
    _widget_bundle[:] = [widget_bundle]
    _awaited[:] = [awaited] if awaited is not None else []
    _view_of[:] = [view_of] if view_of is not None else []


def in_kernel() -> bool:
    """True inside a running Jupyter kernel (checked without importing IPython)."""
    ipython_module = sys.modules.get("IPython")
    if ipython_module is None or "ipykernel" not in sys.modules:
        return False
    shell = ipython_module.get_ipython()
    return shell is not None and getattr(shell, "kernel", None) is not None


def in_marimo() -> bool:
    """True inside a marimo notebook (checked without importing marimo)."""
    running = getattr(sys.modules.get("marimo"), "running_in_notebook", None)
    return running is not None and bool(running())


def in_notebook() -> bool:
    """True where views show: a Jupyter kernel, or a marimo notebook."""
    return in_kernel() or in_marimo()


VIEWS = "nbgraph.views"
"""The entry-point group of the layers that show runs: loading one registers its hooks here.
nbgraph's own notebook layer is one (``pyproject.toml``); this layer never names it."""


def notebook_layer() -> bool:
    """Load the views installed (once) inside a kernel or marimo; False where widgets cannot show."""
    if not in_notebook():
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
    side by side: the widget and a picture of it) where it renders; with the view's metadata
    where it has some (on Colab)."""
    if notebook_layer():
        data, metadata = _widget_bundle[0](shown)
        bundle.update(data)
        if metadata:
            return bundle, metadata
    return bundle


class _Bundle:
    """A mimebundle for marimo to show (its ``_repr_mimebundle_``)."""

    def __init__(self, bundle: dict[str, Any] | Bundle) -> None:
        self.bundle = bundle

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, Any] | Bundle:
        return self.bundle


def displayed(shown: Any, bundle: Callable[[], dict[str, Any] | Bundle]) -> Any:
    """What marimo shows for ``shown`` (a graph, a run, two runs side by side) as a cell's output,
    through its display protocol (``_display_``): the view, which marimo draws as it draws any
    anywidget; where no view can show, ``bundle()``."""
    if notebook_layer() and _view_of:
        return _view_of[0](shown)
    return _Bundle(bundle())


def awaited(run: Any, waiting: Coroutine[Any, Any, T]) -> Coroutine[Any, Any, T]:
    """What ``await run`` awaits: ``waiting`` (the run's result), or inside a kernel the
    notebook layer's wait for it, which fails at once, saying what to do, where the run
    pauses for a click the kernel cannot read while the cell awaits."""
    if notebook_layer() and _awaited:
        return _awaited[0](run, waiting)
    return waiting
