"""Limits and budgets: what a run has used, and when it must stop."""

from __future__ import annotations

import time
from typing import NamedTuple

__all__ = ["Aborted", "Budget", "Meter"]


class Budget(NamedTuple):
    """Limits checked before every step and every LLM call; exceeding one aborts the run.

    ``turns`` counts LLM calls, ``tokens`` and ``cost`` what the model reported,
    ``seconds`` the run's own time (waiting for a person never counts).
    """

    turns: int | None = None
    tokens: int | None = None
    cost: float | None = None
    seconds: float | None = None


class Aborted(BaseException):
    """Unwinds a node when a budget is exhausted (never swallowed by ``except Exception``)."""

    def __init__(self, reason: str) -> None:
        self.reason = reason
        super().__init__(reason)


class Meter:
    """What a run has used (tokens, cost, LLM turns, its own time) against its budget.

    Time spent waiting for a person is counted in ``waited`` and left out of the
    run's own time; a resumed run starts from the seconds its earlier parts used.
    """

    __slots__ = ("budget", "tokens", "cost", "turns", "prior_seconds", "waited", "t0")

    def __init__(self, budget: Budget | None) -> None:
        self.budget = budget
        self.tokens = 0
        self.cost = 0.0
        self.turns = 0
        self.prior_seconds = 0.0
        self.waited = 0.0
        self.t0 = time.perf_counter()

    def add(self, tokens: int, cost: float, turns: int) -> None:
        self.tokens += tokens
        self.cost += cost
        self.turns += turns

    def elapsed(self) -> float:
        """The run's own seconds so far, earlier parts of a resumed run included."""
        return self.prior_seconds + time.perf_counter() - self.t0 - self.waited

    def over(self) -> str | None:
        """Why the run must stop now, or None while every limit holds."""
        budget = self.budget
        if budget is None:
            return None
        if budget.turns is not None and self.turns >= budget.turns:
            return f"budget exceeded: turns {self.turns} >= {budget.turns}"
        if budget.tokens is not None and self.tokens >= budget.tokens:
            return f"budget exceeded: tokens {self.tokens} >= {budget.tokens}"
        if budget.cost is not None and self.cost >= budget.cost:
            return f"budget exceeded: cost {self.cost:.4f} >= {budget.cost}"
        if budget.seconds is not None:
            elapsed = self.elapsed()
            if elapsed >= budget.seconds:
                return f"budget exceeded: seconds {elapsed:.3f} >= {budget.seconds}"
        return None

    def check(self) -> None:
        """Raise :class:`Aborted` if a limit is exceeded."""
        reason = self.over()
        if reason is not None:
            raise Aborted(reason)
