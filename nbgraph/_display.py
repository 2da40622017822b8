"""The notebook layer's display hooks: a live view for started runs, the widget for graphs.

Importing this module registers them with :mod:`nbgraph.hooks`.
"""

from __future__ import annotations

from . import hooks
from .widget import graph_mimebundle, show_run

hooks.register(show_run=show_run, widget_bundle=graph_mimebundle)
