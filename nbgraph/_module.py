"""What every view is built on: the views' ES module, sent to the browser once per kernel, and
the output a view shows, with a picture of it for wherever no script runs.

The views' module (``static/widget.js`` and its stylesheets, about 165 KB) lives in one model
of its own, :class:`ViewsModule`, opened once per kernel. A view's own module is a loader of
a few hundred bytes (``static/loader.js``): it finds that model (its ``module`` trait names it)
through the widget manager, imports its code once a page and hands the view to it. So a view
costs the browser, and a notebook that saves its widgets' state, its run's data and no more.

A view's model is opened in the context the notebook layer was loaded in, not in the cell that
makes it. ipykernel 7 tells each message's cell by its context (ipykernel 6 by the request it
holds for the kernel, which is swapped for the opening), and a notebook executed
headless (nbclient: nbconvert, papermill) records only the widgets opened by the cell it is
running: so it saves no view, and no module, in the notebook's widget state, and its outputs
show each view's picture. A front-end with a kernel (JupyterLab, Notebook, VS Code, Voilà)
takes the model whatever cell it came from.

Each view's output carries a picture of it (:mod:`nbgraph.picture`: SVG, and the same as an
HTML image) beside the live view: GitHub, nbviewer, nbconvert's HTML and a PDF show that. A
view displayed with :meth:`ModuleView.show` has its output updated when its run or batch ends
(:meth:`ModuleView.settle`), so a saved notebook shows how it ended: at once, and again from
the next cell that runs, which is the cell a headless run records.
"""

from __future__ import annotations

import base64
import contextvars
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import anywidget
import traitlets

from .hooks import in_kernel, in_marimo

__all__ = ["ModuleView", "ViewsModule", "picture_parts", "resend_settled", "views_module"]

_STATIC = Path(__file__).parent / "static"
_HOME = contextvars.copy_context()
"""The context the notebook layer was loaded in: views' models are opened in it."""


def _stylesheet() -> str:
    return "\n".join((_STATIC / name).read_text(encoding="utf-8") for name in ("widget.css", "batch.css"))


class ViewsModule(anywidget.AnyWidget):
    """The views' ES module and stylesheet, in a model of their own, opened once per kernel."""

    _esm = "export default {};"

    code = traitlets.Unicode((_STATIC / "widget.js").read_text(encoding="utf-8")).tag(sync=True)
    """The views' ES module (``static/widget.js``), which each view's loader imports."""
    css = traitlets.Unicode(_stylesheet()).tag(sync=True)
    """The views' stylesheet, which a view's loader puts where the view is drawn (the page, or
    a shadow root)."""

    def open(self) -> None:
        _open_at_home(super().open)

    def __repr__(self) -> str:
        return "ViewsModule()"


_module: list[ViewsModule] = []


def views_module() -> ViewsModule:
    """The kernel's one :class:`ViewsModule`, opened the first time a view needs it."""
    if not _module or _module[0].comm is None:  # (none yet, or closed)
        _module[:] = [ViewsModule()]
    return _module[0]


def _home_parent() -> dict[str, Any] | None:
    if not in_kernel():
        return None
    from IPython import get_ipython

    return get_ipython().kernel.get_parent("shell")


_HOME_PARENT = _home_parent()
"""The request of the cell the notebook layer was loaded in."""


def _open_at_home(open_: Any) -> None:
    if in_kernel():
        _HOME.copy().run(_open_as_home_cell, open_)
    else:
        open_()


def _open_as_home_cell(open_: Any) -> None:
    from IPython import get_ipython

    kernel = get_ipython().kernel
    parent = kernel.get_parent("shell")
    if parent is _HOME_PARENT or _HOME_PARENT is None:  # (ipykernel 7: the context holds its cell's request)
        open_()
        return
    # ipykernel 6 keeps one request per kernel, the running cell's: the model is opened with the
    # home cell's and the running cell's is put back (with its identity, which routes input()).
    ident = kernel._parent_ident["shell"]  # (ipykernel 6 has no getter for it)
    kernel.set_parent(ident, _HOME_PARENT, "shell")
    try:
        open_()
    finally:
        kernel.set_parent(ident, parent, "shell")


def picture_parts(svg: str, caption: str) -> dict[str, str]:
    """An output's picture: the SVG, and the same as an HTML image (which nbconvert's HTML
    prefers to the mermaid text beside it)."""
    data = base64.b64encode(svg.encode("utf-8")).decode("ascii")
    alt = caption.replace("&", "&amp;").replace('"', "&quot;").replace("<", "&lt;")
    return {"image/svg+xml": svg, "text/html": f'<img src="data:image/svg+xml;base64,{data}" alt="{alt}">'}


_settled: dict[int, ModuleView] = {}
"""Views whose run or batch has ended since the last cell ran: their outputs are sent again."""


class ModuleView(anywidget.AnyWidget):
    """A view drawn by the views' module (through its loader), with a picture in its output."""

    _esm = _STATIC / "loader.js"

    module = traitlets.Unicode("").tag(sync=True)
    """The model id of the kernel's :class:`ViewsModule`, where the loader finds the views' code."""

    def __init__(self, **kwargs: Any) -> None:
        self._output_id: str | None = None
        self._output_extra: dict[str, Any] = {}
        super().__init__(module=views_module().model_id, **kwargs)

    def open(self) -> None:
        _open_at_home(super().open)

    def picture(self) -> tuple[str, str]:
        """The view as a picture (SVG text) and its caption, in words."""
        raise NotImplementedError

    def _repr_mimebundle_(self, **kwargs: Any) -> tuple[dict[str, Any], dict[str, Any]] | None:
        bundle: Any = super()._repr_mimebundle_(**kwargs)
        if bundle is None:
            return None
        data, metadata = bundle if isinstance(bundle, tuple) else (bundle, {})
        return {**data, **picture_parts(*self.picture())}, metadata

    def bundle(self) -> tuple[dict[str, Any], dict[str, Any]]:
        """What the view's output holds now: the widget, its picture, and what :meth:`show` added."""
        shown: Any = self._repr_mimebundle_()
        data, metadata = shown
        return {**data, **self._output_extra}, dict(metadata or {})

    def show(self, extra: Mapping[str, Any] = {}) -> None:
        """Display the view below the current cell, with ``extra`` (more of the output's
        mimebundle: the mermaid text), as an output :meth:`settle` updates; in marimo the view
        itself, which marimo draws as any anywidget (a bundle's mermaid it would show as text)."""
        if in_marimo():
            import marimo

            marimo.output.append(self)
            return
        from IPython.display import display

        self._output_id = f"nbgraph-view-{self.model_id}"
        self._output_extra = dict(extra)
        data, metadata = self.bundle()
        display(data, metadata=metadata, raw=True, display_id=self._output_id)

    def settle(self) -> None:
        """The view's run or batch has ended: its output's picture shows how, now and again
        from the next cell that runs (which a notebook executed headless records).

        Called with the final traits set but held (``hold_sync``), the output reaches the
        browser first: a front-end draws it again while the view still shows the run going,
        and the end arrives to the view drawn again."""
        self.show_picture()
        _settled[id(self)] = self

    def show_picture(self) -> None:
        """Put the view's picture as it stands now in its output (nothing when it has no output yet)."""
        if self._output_id is None:
            return
        from IPython.display import update_display

        data, metadata = self.bundle()
        update_display(data, metadata=metadata, raw=True, display_id=self._output_id)


def resend_settled(*_result: object) -> None:
    """Send again, from the cell that has just run, the outputs and data of the views that
    settled meanwhile (IPython's ``post_run_cell`` calls it): a notebook executed headless
    records what that cell sends, and nothing sent from the task a run ended in."""
    views = list(_settled.values())
    _settled.clear()
    for view in views:
        if view.comm is None:
            continue  # (closed)
        view.show_picture()
        # The run's data again (not the model's name: a notebook that did not record the view's
        # opening keeps no state of it, so nbconvert shows its picture).
        view.send_state([key for key in view.keys if not key.startswith("_")])
