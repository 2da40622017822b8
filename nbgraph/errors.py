"""Every exception nbgraph raises, as one tree.

::

    NbgraphError
    ├── GraphValidationError (ValueError)   compile() found problems; all listed at once
    ├── RoutingError (RuntimeError)         routing could not pick a next node
    │   └── NoEdgeMatched                   no edge out of a node held
    ├── InvalidUpdate (TypeError)           a node returned something the state cannot take
    ├── MaxStepsExceeded (RuntimeError)     on_max_steps="raise" and the limit was hit
    ├── RunStillRunning (RuntimeError)      a result was asked of a run that is not finished
    │   └── CannotWaitHere                  a cell awaits a paused run that no click can reach meanwhile
    ├── NoPendingRequest (RuntimeError)     answer()/approve()/deny() with nothing open
    ├── ThreadBusy (RuntimeError)           another run holds the thread's lease; says who and until when
    ├── LeaseLost (RuntimeError)            a run's lease was taken over or expired; it wrote nothing more
    ├── CheckpointError (RuntimeError)      a store failed, or holds data that cannot be read back
    ├── ThreadExists (ValueError)           a new run was given a thread that already holds one
    ├── ResumeError (ValueError)            nothing resumable for that thread, or the answer does not fit
    ├── GraphSyntaxError (SyntaxError)      a mistake in a %%graph or %%node cell, with line and column
    └── RunFailed                           raised by a node to end the run ``failed``

Messages name the graph, node, edge or field at fault and say how to fix it.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable

__all__ = [
    "CannotWaitHere",
    "CheckpointError",
    "GraphSyntaxError",
    "GraphValidationError",
    "InvalidUpdate",
    "LeaseLost",
    "MaxStepsExceeded",
    "NbgraphError",
    "NoEdgeMatched",
    "NoPendingRequest",
    "ResumeError",
    "RoutingError",
    "RunFailed",
    "RunStillRunning",
    "ThreadBusy",
    "ThreadExists",
]


class NbgraphError(Exception):
    """Root of every nbgraph error."""


class GraphValidationError(NbgraphError, ValueError):
    """The graph definition is invalid; ``problems`` lists every rule it breaks."""

    def __init__(self, graph: str, problems: list[str]) -> None:
        self.graph = graph
        self.problems = problems
        lines = "\n".join(f"  - {p}" for p in problems)
        noun = "problem" if len(problems) == 1 else "problems"
        super().__init__(f"graph {graph!r} is invalid ({len(problems)} {noun}):\n{lines}")


class RoutingError(NbgraphError, RuntimeError):
    """Routing out of ``node`` failed (a predicate raised, a router returned a bad name)."""

    def __init__(self, message: str, *, node: str) -> None:
        self.node = node
        super().__init__(message)


class NoEdgeMatched(RoutingError):
    """No edge out of ``node`` matched; ``candidates`` are the edges that were tried."""

    def __init__(self, node: str, candidates: list[str]) -> None:
        self.candidates = candidates
        tried = "\n".join(f"  - {c}" for c in candidates) or "  (none)"
        super().__init__(
            f"no edge out of {node!r} matched. Candidates, in the order tried:\n{tried}\n"
            "Add an unconditional edge as a fallback, or make one of the conditions hold.",
            node=node,
        )


class InvalidUpdate(NbgraphError, TypeError):
    """A node's return value, or a field in it, is not acceptable to the state."""

    def __init__(self, message: str, *, node: str | None = None, field: str | None = None) -> None:
        self.node = node
        self.field = field
        super().__init__(message)


class MaxStepsExceeded(NbgraphError, RuntimeError):
    """The run reached ``max_steps`` and the graph was built with ``on_max_steps="raise"``."""

    def __init__(self, graph: str, max_steps: int, node: str, result: object = None) -> None:
        self.max_steps = max_steps
        self.node = node
        self.result = result
        super().__init__(
            f"graph {graph!r} reached max_steps={max_steps} before END "
            f"(next node would have been {node!r}). Raise max_steps, or pass "
            'on_max_steps="return_last" or "flag" to get the last state instead.'
        )


class RunStillRunning(NbgraphError, RuntimeError):
    """The run has not finished yet."""


class CannotWaitHere(RunStillRunning):
    """A cell awaits a run at a pause that only a click could answer, on a kernel that reads
    no click while the cell runs (ipykernel before 7.4, marimo, Voilà): the run goes on,
    waiting; the message says how to answer it instead."""


class NoPendingRequest(NbgraphError, RuntimeError):
    """An answer was given but the run has no matching open request."""


class ThreadBusy(NbgraphError, RuntimeError):
    """Another run holds this thread's lease; ``holder`` is that lease (who, since when, until when)."""

    def __init__(self, message: str, *, holder: object = None) -> None:
        self.holder = holder
        super().__init__(message)


class LeaseLost(NbgraphError, RuntimeError):
    """A run's lease on its thread expired or was taken over: the write was refused, nothing was written."""


class CheckpointError(NbgraphError, RuntimeError):
    """A store failed (a full disk, a read-only file, a server gone), or what it holds cannot be read.

    ``store`` names it (its path or URL), with the ``thread`` and ``step`` at fault when known.
    """

    def __init__(self, message: str, *, store: str = "", thread: str | None = None, step: int | None = None) -> None:
        self.store = store
        self.thread = thread
        self.step = step
        super().__init__(message)


class ThreadExists(NbgraphError, ValueError):
    """A new run was given a thread id that already holds a run."""


class ResumeError(NbgraphError, ValueError):
    """There is nothing to resume for the given thread, or the answer does not fit."""


class GraphSyntaxError(NbgraphError, SyntaxError):
    """A mistake in a ``%%graph`` or ``%%node`` cell, at ``line`` (1-based) and ``column`` (1-based)."""

    def __init__(self, message: str, *, line: int, column: int, text: str, cell: str = "%%graph") -> None:
        self.message = message
        self.line = line
        self.column = max(1, column)
        self.source_line = text
        self.cell = cell
        super().__init__(message, (f"<{cell} cell>", line, self.column, text))

    def __str__(self) -> str:
        caret = " " * (self.column - 1) + "^"
        return f"{self.cell} cell, line {self.line}, column {self.column}: {self.message}\n    {self.source_line}\n    {caret}"


class RunFailed(NbgraphError):
    """Raise inside a node to end the run with outcome ``failed`` and this reason.

    Unlike any other exception, no traceback is attached to the result: the reason is
    the whole story (for example ``"stuck: the same tool call failed twice"``).
    """

    def __init__(self, reason: str) -> None:
        self.reason = reason
        super().__init__(reason)


def did_you_mean(name: str, choices: Iterable[str]) -> str:
    """Return ``" (did you mean 'x'?)"`` for the closest choice, or an empty string."""
    close = difflib.get_close_matches(name, list(choices), n=3, cutoff=0.6)
    if not close:
        return ""
    return " (did you mean " + " or ".join(repr(c) for c in close) + "?)"
