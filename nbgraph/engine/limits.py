"""Limits and budgets: what a run has used, and when it must stop."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping
from contextvars import ContextVar
from typing import Any, Literal, NamedTuple

__all__ = ["Aborted", "Budget", "Deadline", "Meter", "Waits", "branch_waits", "node_deadline"]

_ASKED = ("turns", "tokens", "cost")


class Budget(NamedTuple):
    """Limits checked before every step and every LLM call; exceeding one aborts the run.

    ``turns`` counts LLM calls, ``tokens`` and ``cost`` what the model reported,
    ``seconds`` the run's own time (waiting for a person never counts).

    ``ask=True``: instead of aborting, the run pauses for a person (a pause of kind
    ``budget``) before a step that could take it past ``turns``, ``tokens`` or ``cost``
    (what it has used plus the most one step has taken so far), or when an LLM call
    finds one reached. The answer raises the limits and the run goes on, or stops it.
    """

    turns: int | None = None
    tokens: int | None = None
    cost: float | None = None
    seconds: float | None = None
    ask: bool = False


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

    __slots__ = (
        "_asked_at",
        "_mark",
        "asking",
        "budget",
        "chosen",
        "cost",
        "kept",
        "peak",
        "prior_seconds",
        "t0",
        "timed",
        "tokens",
        "turns",
        "waited",
    )

    def __init__(self, budget: Budget | None, *, chosen: bool = False) -> None:
        self.budget = budget
        self.chosen = chosen
        """The budget was given to this run, not taken from its graph (a resume keeps raised limits otherwise)."""
        self.kept = False
        """A person was asked about the budget: the thread keeps its limits (raised or not) for
        a resume, which holds to them rather than to its graph's."""
        self.timed = budget is not None and budget.seconds is not None
        """The run has a time budget, which async nodes are held to."""
        self.tokens = 0
        self.cost = 0.0
        self.turns = 0
        self.prior_seconds = 0.0
        self.waited = 0.0
        """Seconds during which someone was being asked (branches asking at once count once)."""
        self.t0 = time.perf_counter()
        self.asking = 0
        """How many people are being asked now."""
        self._asked_at = 0.0
        self.peak = [0, 0, 0.0]
        """The most one step (or superstep) has used so far: turns, tokens, cost."""
        self._mark = (0, 0, 0.0)

    def add(self, tokens: int, cost: float, turns: int) -> None:
        self.tokens += tokens
        self.cost += cost
        self.turns += turns

    def start(self) -> None:
        """The run's own clock starts now."""
        self.t0 = time.perf_counter()

    def slowed(self, seconds: float) -> None:
        """A live run waited ``seconds`` in slow motion: not the run's own time, which no budget counts."""
        self.waited += seconds

    def keep(self) -> None:
        """A person was asked about the budget: a resume elsewhere holds to these limits
        (raised or not), not its graph's."""
        self.kept = True

    def restore(
        self, kept: Mapping[str, Any] | None, used: tuple[int, float, int], peak: list[float], seconds: float
    ) -> None:
        """Go on from a thread that had ``used`` tokens, cost and turns, with the most one step took
        (``peak``) and its steps' ``seconds``; under the limits it ``kept``, raised by a person
        earlier in the thread, unless this run was given a budget of its own."""
        if kept is not None and not self.chosen:
            self.budget = Budget(**{key: kept[key] for key in Budget._fields if key in kept})
            self.timed = self.budget.seconds is not None
            self.kept = True
        self.add(*used)
        self.mark()
        self.peak = list(peak)
        self.prior_seconds = seconds

    def elapsed(self) -> float:
        """The run's own seconds so far, earlier parts of a resumed run included."""
        now = time.perf_counter()
        waiting = now - self._asked_at if self.asking else 0.0
        return self.prior_seconds + now - self.t0 - self.waited - waiting

    def ask(self) -> None:
        """Someone is being asked: the clock of the run's own time stops (if it runs)."""
        if not self.asking:
            self._asked_at = time.perf_counter()
        self.asking += 1

    def answered(self) -> None:
        self.asking -= 1
        if not self.asking:
            self.waited += time.perf_counter() - self._asked_at

    def over(self) -> str | None:
        """Why the run must stop now, or None while every limit holds."""
        budget = self.budget
        if budget is None:
            return None
        return self.spent() or self.out_of_time()

    def spent(self) -> str | None:
        """Which of turns, tokens and cost is used up, or None."""
        budget = self.budget
        assert budget is not None
        if budget.turns is not None and self.turns >= budget.turns:
            return f"budget exceeded: turns {self.turns} >= {budget.turns}"
        if budget.tokens is not None and self.tokens >= budget.tokens:
            return f"budget exceeded: tokens {self.tokens} >= {budget.tokens}"
        if budget.cost is not None and self.cost >= budget.cost:
            return f"budget exceeded: cost {self.cost:.4f} >= {budget.cost}"
        return None

    def out_of_time(self) -> str | None:
        budget = self.budget
        assert budget is not None
        if budget.seconds is not None:
            elapsed = self.elapsed()
            if elapsed >= budget.seconds:
                return f"budget exceeded: seconds {elapsed:.3f} >= {budget.seconds}"
        return None

    def mark(self) -> None:
        """What was used so far came before this run's steps (a resumed run's totals)."""
        self._mark = (self.turns, self.tokens, self.cost)

    def ahead(self, count: int) -> tuple[str, ...]:
        """The limits of an asking budget that the next ``count`` steps could pass: used plus
        ``count`` times the most one step has used, or a limit already reached (``count=0``:
        only those, in the middle of a step)."""
        budget = self.budget
        assert budget is not None
        used = (self.turns, self.tokens, self.cost)
        peak = self.peak
        if count:
            for i, value in enumerate(used):  # what was used since the last look was one step
                spent = value - self._mark[i]
                if spent > peak[i]:
                    peak[i] = spent
            self._mark = used
        over: list[str] = []
        for i, key in enumerate(_ASKED):
            limit = getattr(budget, key)
            if limit is not None and (used[i] >= limit or used[i] + peak[i] * count > limit):
                over.append(key)
        return tuple(over)

    def figures(self, over: tuple[str, ...], count: int = 1) -> dict[str, dict[str, float] | tuple[str, ...]]:
        """A budget pause's figures (see :class:`~nbgraph.pauses.BudgetFigures`)."""
        budget = self.budget
        assert budget is not None
        used = {"turns": self.turns, "tokens": self.tokens, "cost": round(self.cost, 6)}
        limits = {key: getattr(budget, key) for key in _ASKED if getattr(budget, key) is not None}
        ahead = {key: round(self.peak[i] * count, 6) for i, key in enumerate(_ASKED) if key in limits}
        suggested: dict[str, float] = {}
        for key, limit in limits.items():
            raised = max(limit * 2, used[key] + 2 * ahead[key])  # twice the limit, or room for two more steps
            suggested[key] = round(raised, 6) if key == "cost" else int(-(-raised // 1))
        return {"used": used, "limits": limits, "next": ahead, "over": over, "suggested": suggested}

    def raise_to(self, limits: dict[str, float]) -> Budget:
        """Raise the budget's limits (a person's answer to a budget pause)."""
        assert self.budget is not None
        self.budget = self.budget._replace(**limits)
        self.kept = True
        return self.budget

    def kept_limits(self) -> dict[str, Any] | None:
        """The limits a thread keeps for its resumes (None: its graph's hold)."""
        if not self.kept or self.budget is None:
            return None
        return {key: value for key, value in self.budget._asdict().items() if value is not None}

    def deadline(self, node: str, timeout: float | None) -> Deadline | None:
        """The time an async node may take: its own ``timeout``, or what is left of the
        run's time budget, whichever ends first (None: no limit)."""
        left = None
        if self.budget is not None and self.budget.seconds is not None:
            left = self.budget.seconds - self.elapsed()
        if timeout is None and left is None:
            return None
        if timeout is not None and (left is None or timeout <= left):
            return Deadline(timeout, f"node {node!r} timed out after {timeout:g} s (timeout={timeout:g})", "failed")
        assert left is not None and self.budget is not None and self.budget.seconds is not None
        return Deadline(
            max(left, 0.0), f"budget exceeded: seconds {self.budget.seconds:g} used up during node {node!r}", "aborted"
        )


class Deadline:
    """Cancels the run's task when an async node overruns its time.

    Waiting for a person holds the clock (:meth:`hold`, :meth:`go_on`). After the
    cancellation lands, ``fired`` tells the walker it was this deadline, not a Stop.
    """

    __slots__ = ("_armed_at", "_handle", "_task", "fired", "outcome", "reason", "seconds")

    def __init__(self, seconds: float, reason: str, outcome: Literal["failed", "aborted"]) -> None:
        self.seconds = seconds
        self.reason = reason
        self.outcome: Literal["failed", "aborted"] = outcome
        """``failed`` for a node's own timeout, ``aborted`` for the run's time budget."""
        self.fired = False
        self._task: asyncio.Task[Any] | None = None
        self._handle: asyncio.TimerHandle | None = None
        self._armed_at = 0.0

    def start(self) -> None:
        self._task = asyncio.current_task()
        self.go_on()

    def hold(self) -> None:
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None
            self.seconds -= time.perf_counter() - self._armed_at

    def go_on(self) -> None:
        if self._task is None or self.fired:
            return
        self._armed_at = time.perf_counter()
        self._handle = asyncio.get_running_loop().call_later(max(self.seconds, 0.0), self._fire)

    def stop(self) -> None:
        """The node is done: disarm, and clear a cancellation this deadline requested."""
        self.hold()
        if self.fired and self._task is not None:
            uncancel = getattr(self._task, "uncancel", None)  # Python 3.11+
            if uncancel is not None:
                uncancel()

    def _fire(self) -> None:
        self._handle = None
        self.fired = True
        if self._task is not None:
            self._task.cancel()


node_deadline: ContextVar[Deadline | None] = ContextVar("nbgraph_node_deadline", default=None)
"""The time limit of the async node running in this task, if it has one. Branches run
as tasks of their own, each with a copy of the context, so each sees its own node's."""


class Waits:
    """Seconds a node's call spent waiting for people, and the waits of the call it runs
    inside (a sub-graph node's): a call's duration leaves out its own waits, not those of
    the branches beside it."""

    __slots__ = ("outer", "seconds")

    def __init__(self, outer: Waits | None) -> None:
        self.seconds = 0.0
        self.outer = outer

    def add(self, seconds: float) -> None:
        """A person was waited for: in this call, and in every call it runs inside."""
        waits: Waits | None = self
        while waits is not None:
            waits.seconds += seconds
            waits = waits.outer


branch_waits: ContextVar[Waits | None] = ContextVar("nbgraph_branch_waits", default=None)
"""The waits of the node's call running in this task (branches run as tasks of their own)."""
