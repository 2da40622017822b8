"""The notebook layer's display hooks: a live view for started runs, the widget for graphs,
the batch view for batches and comparisons.

Importing this module registers them with :mod:`nbgraph.hooks` and :mod:`nbgraph.batch`.
"""

from __future__ import annotations

from . import hooks
from .batch import register_view
from .batch_view import show_batch, show_comparison
from .widget import graph_mimebundle, show_run

hooks.register(show_run=show_run, widget_bundle=graph_mimebundle)
register_view(show_batch, compare=show_comparison)
