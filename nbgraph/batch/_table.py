"""The result table of a batch: one typed row per input, as a DataFrame when pandas is there."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, NamedTuple

__all__ = ["BatchRow", "Difference", "to_table"]


class BatchRow(NamedTuple):
    """How one input of a batch ended."""

    input_id: Any
    """The input's key: its position in a list, or its key in a dict of inputs."""
    outcome: str
    """A run's outcome (``done``, ``failed``, ``aborted``, ``interrupted``, ``denied``), or
    ``skipped``: the batch stopped (its budget, or a Stop) before this input started."""
    path: tuple[str, ...]
    """The nodes the input's run executed, in order."""
    tokens: int
    cost: float
    duration: float
    """Seconds: wall time of the run in this call, or (an input finished by an earlier
    call of the same batch) the run's own recorded time."""
    error: str | None
    """Why it did not end ``done``: the run's reason, or what was wrong with the input."""
    thread: str | None
    """The thread the run keeps (``g.invoke(Resume(thread), checkpointer=...)``); None if it never started."""


class Difference(NamedTuple):
    """One input run through two versions of a graph (see :func:`nbgraph.batch.compare`)."""

    input_id: Any
    changed: tuple[str, ...]
    """What differs: any of ``path``, ``outcome``, ``cost``; empty when nothing does."""
    path_a: tuple[str, ...]
    path_b: tuple[str, ...]
    outcome_a: str
    outcome_b: str
    cost_a: float
    cost_b: float


def to_table(
    rows: Sequence[NamedTuple] | Iterable[NamedTuple],
    fields: Sequence[str],
    *,
    pandas: bool | None = None,
    **attrs: Any,
) -> Any:
    """``rows`` as a pandas DataFrame (columns ``fields``) when pandas can be imported, else the list.

    ``pandas=False`` always returns the list; ``pandas=True`` requires pandas. ``attrs``
    go into ``DataFrame.attrs`` (a plain list has nowhere to keep them).
    """
    rows = list(rows)
    if pandas is False:
        return rows
    try:
        import pandas as pd
    except ImportError:
        if pandas:
            raise ImportError("a DataFrame needs pandas: pip install pandas") from None
        return rows
    frame = pd.DataFrame.from_records(rows, columns=list(fields))
    frame.attrs.update(attrs)
    return frame


def rows_of(table: Any, kind: Any) -> list[Any]:
    """The typed rows of a table :func:`to_table` made (a DataFrame or the list itself);
    ``kind`` is the rows' NamedTuple class."""
    if isinstance(table, list):
        return table
    to_records = getattr(table, "to_dict", None)
    if to_records is None:
        raise TypeError(
            f"expected a batch table (a DataFrame or a list of {kind.__name__}), got {type(table).__name__}"
        )
    return [kind(**{name: record[name] for name in kind._fields}) for record in to_records("records")]
