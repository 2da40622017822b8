"""The same inputs through two versions of a graph: which changed path, outcome or cost."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ..engine.runner import run_blocking
from ..hooks import in_notebook, notebook_layer
from . import _batch
from ._batch import Batch
from ._table import BatchRow, Difference, rows_of, to_table

__all__ = ["acompare", "compare"]

_COST_TOLERANCE = 1e-9


def compare(a: Any, b: Any, inputs: Iterable[Any] | Mapping[Any, Any] | None = None, **options: Any) -> Any:
    """One :class:`Difference` per input between two versions of a graph, in the order of the inputs.

    ``a`` and ``b`` are graphs (both then run a batch on ``inputs``, with the batch
    ``options`` of :class:`Batch`; ``batch="x"`` keeps them as ``x.a`` and ``x.b``) or
    tables that batches returned already. Inside a Jupyter kernel it also shows a drawing
    of the edges each version took and the inputs that changed (``progress=False``: not).
    ``changed`` names what differs (``path``,
    ``outcome``, ``cost``). Returns a DataFrame when pandas is installed, else the rows
    (``table=`` as for a batch).

    Example::

        diff = compare(g_before, g_after, questions)
        diff[diff.changed.map(bool)]          # the inputs whose route, outcome or cost moved
    """
    return run_blocking(acompare(a, b, inputs, **options), all_sync=False)


async def acompare(a: Any, b: Any, inputs: Iterable[Any] | Mapping[Any, Any] | None = None, **options: Any) -> Any:
    """Async :func:`compare`."""
    table = options.pop("table", "auto")
    batch = options.pop("batch", None)
    sides = []
    for side, which in ((a, "a"), (b, "b")):
        if hasattr(side, "compile"):
            if inputs is None:
                raise TypeError(f"compare() got a graph as {which}: pass inputs= to run it on")
            run = Batch(side, inputs, batch=None if batch is None else f"{batch}.{which}", table="rows", **options)
            sides.append(await run.run())
        else:
            sides.append(rows_of(side, BatchRow))
    rows_a = {row.input_id: row for row in sides[0]}
    rows_b = {row.input_id: row for row in sides[1]}
    missing = [key for key in rows_a if key not in rows_b] + [key for key in rows_b if key not in rows_a]
    if missing:
        raise ValueError(f"the two tables do not hold the same inputs: {missing[:10]!r} are in one only")
    differences = []
    for key, row_a in rows_a.items():
        row_b = rows_b[key]
        changed = tuple(
            name
            for name, differs in (
                ("path", tuple(row_a.path) != tuple(row_b.path)),
                ("outcome", row_a.outcome != row_b.outcome),
                ("cost", abs(row_a.cost - row_b.cost) > _COST_TOLERANCE),
            )
            if differs
        )
        differences.append(
            Difference(
                key,
                changed,
                tuple(row_a.path),
                tuple(row_b.path),
                row_a.outcome,
                row_b.outcome,
                row_a.cost,
                row_b.cost,
            )
        )
    if options.get("progress") is None and in_notebook():
        if not _batch._compare_views:
            notebook_layer()
        if _batch._compare_views:
            _batch._compare_views[0](differences, a, b)
    return to_table(differences, Difference._fields, pandas={"auto": None, "rows": False, "pandas": True}[table])
