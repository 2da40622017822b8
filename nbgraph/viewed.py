"""What the live view reads of a run and asks of it: the door between a run and its view.

:class:`~nbgraph.widget.GraphView` and the :class:`~nbgraph._observer.RunObserver` that
feeds it meet a run only through :class:`ViewedRun`: its progress (steps recorded so
far, the nodes running, the open pauses), the rare events it announces, the verbs a
click sends (answer, stop, steer) and how it ended. The engine's :class:`~nbgraph.Run`
gives one (``run.viewed``); a run of another engine drawn by the same view (:mod:`nbgraph.langgraph`) is
another. What only the engine can do with a run (inspect a step, fork, resume, list and revoke
standing approvals, :class:`ViewedApprovals`) stays with the view that shows the engine's
runs, and a view of another engine's runs brings its own.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from .answering import Via
    from .history import BranchState, Step
    from .pauses import Pause
    from .plan import Breakpoints

__all__ = ["ViewedApprovals", "ViewedPlan", "ViewedResult", "ViewedRun"]


class ViewedPlan(Protocol):
    """The graph a viewed run walks, as far as the view reads it."""

    @property
    def name(self) -> str: ...

    @property
    def max_steps(self) -> int | None:
        """The most steps a run may take (None: no limit the view can show)."""
        ...


class ViewedResult(Protocol):
    """How a viewed run ended."""

    @property
    def outcome(self) -> str: ...

    @property
    def reason(self) -> str | None: ...

    @property
    def pauses(self) -> tuple[Pause, ...]:
        """The pauses left open when the run ended ``interrupted``."""
        ...

    def replay(self) -> Any:
        """The run as frames for the view's step slider (``frames``: ``ReplayFrame`` s)."""
        ...

    def problems(self) -> list[Any]:
        """What went wrong in the run, where the drawing shows it (``Problem`` s)."""
        ...


class ViewedRun(Protocol):
    """A run as its live view sees it: read at the view's pace, never once per step."""

    @property
    def thread(self) -> str: ...

    @property
    def plan(self) -> ViewedPlan: ...

    @property
    def step(self) -> int:
        """The step under way or last taken, as the status line counts them."""
        ...

    @property
    def done(self) -> bool: ...

    @property
    def live(self) -> bool:
        """Under way, and waits for answers where it pauses."""
        ...

    @property
    def recorded(self) -> int:
        """How many step records the run has (what :meth:`history_since` counts)."""
        ...

    @property
    def history(self) -> list[Step]: ...

    def history_since(self, count: int) -> list[Step]:
        """The step records after the first ``count``."""
        ...

    @property
    def running(self) -> tuple[str, ...]:
        """The paths of the nodes being called now."""
        ...

    @property
    def branches(self) -> list[BranchState]:
        """The branches of the supersteps under way, each with its status."""
        ...

    @property
    def upcoming(self) -> str | None:
        """The node running now or next to run; None once the run has ended."""
        ...

    @property
    def pauses(self) -> tuple[Pause, ...]:
        """The pauses open now, oldest first."""
        ...

    @property
    def replaced(self) -> tuple[str, ...]:
        """Nodes whose code was swapped into the run."""
        ...

    @property
    def checkpointer(self) -> Any:
        """Where the run keeps its checkpoints (None: nowhere, so nothing to fork from)."""
        ...

    @property
    def breakpoints(self) -> Breakpoints: ...

    @breakpoints.setter
    def breakpoints(self, value: Breakpoints) -> None: ...

    def subscribe(self, listener: Callable[[Any], Any], *, steps: bool = True) -> Callable[[], None]:
        """Call ``listener(event)`` for each :mod:`nbgraph.events` event from now on; returns an
        unsubscribe function. ``steps=False`` leaves out the per-step events."""
        ...

    def answer(
        self,
        value: Any = None,
        *,
        pause: str | None = None,
        shown: str | None = None,
        reason: str | None = None,
        by: str | None = None,
        via: Via = "code",
    ) -> None:
        """Answer a pause as :meth:`nbgraph.Run.answer` does (the view passes ``via="view"``
        and the digest of what it showed)."""
        ...

    def cancel(self) -> None: ...

    def steer(self, text: str) -> None: ...

    def stop_waiting(self, why: str) -> None:
        """Nobody will answer: end the run ``interrupted`` at its open pauses, saying ``why``."""
        ...

    def result(self) -> ViewedResult: ...


class ViewedApprovals(Protocol):
    """A run's standing approvals, as the view lists them and revokes them by a click (the
    engine's :class:`~nbgraph.Run` has them; a run of another engine drawn in the view has none)."""

    @property
    def standing(self) -> tuple[Any, ...]:
        """The standing approvals in force, oldest first: each with ``id``, ``tool``, ``scope``,
        ``by``, ``at``, ``when`` and ``reason``."""
        ...

    def revoke(self, standing: str) -> None:
        """End the standing approval ``standing`` (its id): later calls of its tool ask again."""
        ...


if TYPE_CHECKING:
    from .engine import Run, RunView

    _ENGINE_RUN: type[ViewedRun] = RunView  # the engine's runs, as their view sees them
    _ENGINE_APPROVALS: type[ViewedApprovals] = Run
