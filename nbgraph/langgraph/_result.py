"""How a LangGraph run ended: :class:`LangGraphResult`, what ``run.result()`` gives.

It holds the outcome and the graph's latest state, the pauses the run ended waiting at (which
:func:`~nbgraph.langgraph.resume` answers), the answers its pauses got, and the run's steps,
which it replays and inspects without running anything.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..decision import Decision
from ..history import Step
from ..pauses import Pause
from ._thread import ThreadSteps

__all__ = ["LangGraphResult"]


class LangGraphResult:
    """How a :class:`LangGraphRun` ended: ``outcome``, ``reason``, ``values``, ``history``."""

    def __init__(
        self,
        steps: ThreadSteps,
        outcome: str,
        reason: str | None,
        values: Mapping[str, Any],
        pauses: tuple[Pause, ...] = (),
        error: BaseException | None = None,
        decisions: tuple[Decision, ...] = (),
    ) -> None:
        self._steps = steps
        self.outcome = outcome
        """``done``, ``interrupted`` (open pauses nobody answered), ``aborted`` (stopped) or ``failed``."""
        self.reason = reason
        self.values = dict(values)
        """The graph's state at its latest checkpoint."""
        self.pauses = pauses
        """The pauses it ended waiting at (``interrupted``): :func:`~nbgraph.langgraph.resume` answers them."""
        self.error = error
        self.thread = steps.thread
        self.decisions = list(decisions)
        """The answers the run's pauses got, as :class:`~nbgraph.decision.Decision` records, in the
        order they were given (a resume's first). A LangGraph checkpoint keeps no such record: a
        thread read back from its saver has only the answers given since."""

    @property
    def history(self) -> list[Step]:
        return self._steps.records

    def replay(self) -> ThreadSteps:
        """The run's steps as the view's slider scrubs them (``frames``); nothing runs."""
        return self._steps

    def problems(self) -> list[Any]:
        """None: LangGraph checks a graph when it compiles it, and a failed step carries its error."""
        return []

    def inspect(self, step: int | Step) -> Any:
        """One step seen whole (an :class:`~nbgraph.inspection.Inspection`): a top-level step
        number (its latest record) or a record of ``history``."""
        return self._steps.inspect(step)

    def __repr__(self) -> str:
        reason = f" ({self.reason})" if self.reason else ""
        return f"<LangGraphResult {self.outcome}{reason}: {len(self._steps.entries)} steps, thread {self.thread!r}>"
