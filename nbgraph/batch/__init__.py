"""Batches: one graph run on many inputs at once, with a table of how each ended.

It sits above the engine and below the notebook layer: a :class:`Batch` runs each
input as one engine run through an :class:`Executor` (the local one awaits them on the
running loop; a remote one runs the same per-input function, :func:`run_job`,
elsewhere), keeps a :class:`BatchProgress` that watchers subscribe to, and returns
one :class:`BatchRow` per input, as a pandas DataFrame when pandas is installed.
:func:`compare` runs the same inputs through two versions of a graph.
"""

from __future__ import annotations

from ._batch import Batch, abatch, batch, register_view
from ._compare import acompare, compare
from ._executor import Executor, Finished, Job, LocalExecutor, run_job
from ._progress import BatchProgress, ProgressEvent
from ._table import BatchRow, Difference

__all__ = [
    "Batch",
    "BatchProgress",
    "BatchRow",
    "Difference",
    "Executor",
    "Finished",
    "Job",
    "LocalExecutor",
    "ProgressEvent",
    "abatch",
    "acompare",
    "batch",
    "compare",
    "register_view",
    "run_job",
]
