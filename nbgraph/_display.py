"""The notebook layer's display hooks: a live view for started runs, the widget for graphs
(and in marimo for a graph, a run or two runs left as a cell's value), the batch view for
batches and comparisons, and ``await run`` that fails at once where no
click could reach a paused run while the cell awaits it; after each cell, the outputs of the
views whose runs ended meanwhile are sent again (:func:`nbgraph._module.resend_settled`).

Importing this module registers them with :mod:`nbgraph.hooks` and :mod:`nbgraph.batch`.
"""

from __future__ import annotations

from IPython.core.getipython import get_ipython

from . import hooks
from ._module import resend_settled
from .batch import register_view
from .batch_view import show_batch, show_comparison
from .waiting import wait_in_cell, watch_cells
from .widget import graph_mimebundle, show_run, view_of

hooks.register(show_run=show_run, widget_bundle=graph_mimebundle, awaited=wait_in_cell, view_of=view_of)
register_view(show_batch, compare=show_comparison)
if (shell := get_ipython()) is not None:
    watch_cells(shell)
    shell.events.register("post_run_cell", resend_settled)
