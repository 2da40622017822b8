"""Batches: one graph run on many inputs at once, with a table of how each ended.

It sits above the engine and below the notebook layer: a :class:`Batch` runs each
input as one engine run through an :class:`Executor` (the local one awaits them on the
running loop; a remote one runs the same per-input function, :func:`run_job`,
elsewhere), keeps a :class:`BatchProgress` that watchers subscribe to, and returns
one :class:`BatchRow` per input, as a pandas DataFrame when pandas is installed.
:func:`compare` runs the same inputs through two versions of a graph; :func:`evaluate` runs
k samples of each input and grades them, with pass rates and their intervals.
"""

from __future__ import annotations

from ._batch import Batch, abatch, batch, register_view
from ._compare import acompare, compare
from ._evaluate import Evaluation, Graded, Sample, Score, Verdict, aevaluate, evaluate, model_grader, wilson
from ._executor import Executor, Finished, Job, LocalExecutor, run_job
from ._progress import BatchProgress, ProgressEvent
from ._table import BatchRow, Difference

__all__ = [
    "Batch",
    "BatchProgress",
    "BatchRow",
    "Difference",
    "Evaluation",
    "Executor",
    "Finished",
    "Graded",
    "Job",
    "LocalExecutor",
    "ProgressEvent",
    "Sample",
    "Score",
    "Verdict",
    "abatch",
    "acompare",
    "aevaluate",
    "batch",
    "compare",
    "evaluate",
    "model_grader",
    "register_view",
    "run_job",
    "wilson",
]
