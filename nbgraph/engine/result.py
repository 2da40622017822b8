"""How a run ended: :class:`RunResult`, with its history, trace, inspection and replay."""

from __future__ import annotations

from os import PathLike
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..export import to_dag
from ..history import Step
from .ending import Ending, Outcome
from .listeners import trace

if TYPE_CHECKING:
    from ..pauses import Pause
    from .run import Run
    from .walker import Walker

__all__ = ["RunResult"]


class RunResult:
    """How a run ended: ``outcome``, ``reason``, ``state``, ``history`` and more."""

    __slots__ = (
        "_history",
        "_run",
        "_walker",
        "cost",
        "error",
        "hit_max_steps",
        "outcome",
        "pauses",
        "reason",
        "state",
        "thread",
        "tokens",
        "turns",
    )

    def __init__(self, run: Run, ending: Ending, walker: Walker) -> None:
        self._run = run
        self._walker = walker
        self.outcome: Outcome = ending.outcome
        self.reason = ending.reason
        self.state = walker.plan.schema.output(walker.state_shown())
        self._history: tuple[Step, ...] | None = None
        self.hit_max_steps = ending.hit_max_steps
        self.pauses: tuple[Pause, ...] = ending.pauses
        """The pauses left open when the run ended ``interrupted`` (several when parallel
        branches wait), oldest first."""
        self.thread = run.thread
        self.error = ending.error
        meter = walker.meter
        self.tokens = meter.tokens
        self.cost = meter.cost
        self.turns = meter.turns

    @property
    def run(self) -> Run:
        """The run that ended so (its graph, its thread, its history so far)."""
        return self._run

    @property
    def history(self) -> tuple[Step, ...]:
        """Every step the thread took, earlier runs' included (read from the store when first asked)."""
        if self._history is None:
            self._history = tuple(self._walker.full_history())
        return self._history

    @property
    def decisions(self) -> list[Any]:
        """Every answer people (and deadlines, and standing approvals) gave the thread's pauses,
        as :class:`~nbgraph.decision.Decision` records, in the order of its steps."""
        from ..decision import decided_in

        return decided_in(self.history)

    @property
    def path(self) -> list[str]:
        """The nodes executed, in order."""
        return [step.node for step in self.history if step.error is None]

    def state_at(self, step: int) -> Any:
        """The state after ``step`` (0 is the input)."""
        return self._run.state_at(step)

    def events(self) -> list[Any]:
        """The run's events, in order, rebuilt from its history."""
        walker = self._walker
        history = self.history
        start = walker.start_edge
        if start is None and history and history[0].step == 1:
            start = walker.plan.start_edge(history[0].node)
        return list(
            trace(
                self.thread,
                walker.plan.name,
                start,
                history,
                outcome=self.outcome,
                reason=self.reason,
                error_type=type(self.error).__name__,
                pauses=self.pauses,
                step=walker.step,
                hit_max_steps=self.hit_max_steps,
                resumed=walker.input is None,  # it continued from a checkpoint
            )
        )

    def to_ndjson(self) -> str:
        """The event trace as NDJSON."""
        from ..events import to_ndjson

        return to_ndjson(self.events())

    def to_dag(self) -> dict[str, Any]:
        """DAG JSON with ``fired`` marked on the edges this run took."""
        return to_dag(self._run.plan, self.history)

    def inspect(self, step: int | Step) -> Any:
        """One step seen whole (an :class:`~nbgraph.inspection.Inspection`): the state it saw, its
        update as a diff, every edge out of its node with its condition's value, tokens, cost,
        time, LLM messages. ``step`` is a step number or a record of ``history``; no node runs."""
        from ..inspection import inspect_step

        return inspect_step(self, step)

    def replay(self) -> Any:
        """The run as frames to scrub through (a :class:`~nbgraph.replay.Replay`); no node runs."""
        from ..replay import Replay

        return Replay.from_result(self)

    def to_html(self, path: str | PathLike[str]) -> Path:
        """Write one self-contained HTML file that replays this run with the step slider and the
        inspector: no kernel, no network, in any browser, on a static site or inside another page
        (see :mod:`nbgraph.share`). Returns its path.

        >>> result.to_html("run.html")                # doctest: +SKIP
        """
        return self.replay().to_html(path)

    def problems(self) -> list[Any]:
        """Conditions, maps and routers that raised, and nodes no edge out of matched, in this run."""
        from ..inspection import run_problems

        return run_problems(self)

    def __repr__(self) -> str:
        reason = f" ({self.reason})" if self.reason else ""
        return f"<RunResult {self.outcome}{reason}: {self._walker.recorded} steps, thread {self.thread!r}>"
