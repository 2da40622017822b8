"""The seam between the engine and the notebook layer.

The engine never imports IPython or widgets. When a graph or run is displayed, or a
run is started inside a Jupyter kernel, these functions import the widget layer on
demand; anywhere else (scripts, CI, plain Python) they fall back to text.
"""

from __future__ import annotations

import sys
from typing import Any


def in_kernel() -> bool:
    """True inside a running Jupyter kernel (checked without importing IPython)."""
    ipython_module = sys.modules.get("IPython")
    if ipython_module is None or "ipykernel" not in sys.modules:
        return False
    shell = ipython_module.get_ipython()
    return shell is not None and getattr(shell, "kernel", None) is not None


def graph_mimebundle(graph: Any) -> dict[str, Any]:
    """What a displayed Graph shows: the widget where it renders, mermaid text always."""
    from .export import to_mermaid

    mermaid = to_mermaid(graph)
    bundle: dict[str, Any] = {
        "text/plain": repr(graph),
        "text/markdown": f"```mermaid\n{mermaid}```\n",
    }
    if in_kernel():
        try:
            from .widget import graph_mimebundle as widget_bundle
        except ImportError:
            return bundle
        bundle.update(widget_bundle(graph))
    return bundle


def show_run(run: Any) -> None:
    """Display a live view bound to ``run`` when started inside a kernel."""
    if not in_kernel():
        return
    try:
        from .widget import show_run as widget_show_run
    except ImportError:
        return
    widget_show_run(run)
