"""Where a run starts: a new input, a thread a run stopped on (:class:`Resume`), or a step of a
thread (:class:`Fork`). Every way of running a graph (``invoke``, ``ainvoke``, ``start``,
``astream``) takes any of the three as its input.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, NamedTuple

from ..answering import Given, Via
from .persistence import fork_thread, store_for
from .run import Run, remember, resumed_run

if TYPE_CHECKING:
    from ..checkpoint.base import Checkpointer
    from ..plan import Plan
    from .limits import Budget

__all__ = ["Fork", "Resume", "open_run"]


class Resume(NamedTuple):
    """Continue a thread from where its run stopped: a pause, a failure, a stop.

    ``run`` is the stopped run's result (or ``Run``) or its thread id. ``answer`` answers
    its open pause: any value for the one pause open, or ``{pause.id: answer, ...}`` for
    several (:func:`nbgraph.pauses.bind` says which pause an answer is for); with the
    result, a plain answer is bound to the pause it shows. A breakpoint needs no answer.
    ``pause`` names the pause when ``run`` is a thread id. ``force=True`` takes the thread
    from a run whose process is gone on another host.

    >>> paused = g.invoke({"topic": "tides"})                  # doctest: +SKIP
    >>> g.invoke(Resume(paused, "yes")).outcome                # doctest: +SKIP
    'done'
    """

    run: Any
    answer: Any = None
    pause: str | None = None
    force: bool = False
    reason: str | None = None
    """Why the answer is what it is, for the decision's record."""
    by: str | None = None
    """Who answers (default: :func:`nbgraph.answering.identity`)."""
    shown: str | None = None
    """The digest of what the person saw (``pause.shown``): the answer is refused if the pause shows something else."""
    via: Via = "resume"


class Fork(NamedTuple):
    """Start a new thread from a thread's checkpoint after ``step``, with the graph as it is
    defined now: nothing up to ``step`` runs again, and the routing out of it is done
    afresh. ``update`` edits the state there (through the reducers); ``thread`` names the
    new thread (a fresh id by default).

    >>> g.invoke(Fork(result, step=2, update={"tone": "kind"}))  # doctest: +SKIP
    """

    run: Any
    step: int
    update: Mapping[str, Any] | None = None
    thread: str | None = None


def open_run(
    plan: Plan,
    source: Any,
    *,
    thread: str | None = None,
    checkpointer: Checkpointer | None = None,
    budget: Budget | None = None,
    on_event: Callable[[Any], Any] | None = None,
    stepping: bool = False,
    replace: bool = False,
    live: bool = False,
    pace: float = 0.0,
) -> Run:
    """A run of ``plan`` from ``source`` (an input, a :class:`Resume` or a :class:`Fork`), not
    yet started; a resumed or forked one already holds its thread's lease.

    Raises:
        ResumeError: a Resume with nothing to resume, or an answer that does not fit.
        ThreadBusy: another live run holds the thread.
        TypeError: ``thread=`` given with a Resume (its thread is the stopped run's).
    """
    options: dict[str, Any] = {"budget": budget, "on_event": on_event, "stepping": stepping, "live": live, "pace": pace}
    if isinstance(source, Resume):
        if thread is not None:
            raise TypeError("Resume(...) continues the stopped run's own thread: give no thread=")
        where, store, pauses = _where(plan, source.run, checkpointer)
        pause = source.pause
        if pause is None and source.answer is not None and len(pauses) == 1:
            from ..pauses import answers_by_id

            if not answers_by_id(source.answer):
                pause = pauses[0].id  # the answer is for the pause the caller saw
        given = Given(source.via, source.by, source.reason, source.shown)
        return resumed_run(plan, where, store, source.answer, pause=pause, force=source.force, given=given, **options)
    if isinstance(source, Fork):
        ran = getattr(source.run, "run", source.run)
        if isinstance(ran, Run) and checkpointer is None:
            remember(ran)  # (a run without a store, such as a plain invoke(), is forked from memory)
        where, store, _ = _where(plan, source.run, checkpointer)
        new_thread = fork_thread(plan, store, where, source.step, source.update, source.thread or thread)
        return resumed_run(plan, new_thread, store, **options)
    return Run(plan, source, thread=thread, checkpointer=checkpointer, replace=replace, **options)


def _where(plan: Plan, run_or_thread: Any, checkpointer: Any) -> tuple[str, Any, tuple[Any, ...]]:
    """The thread, its store, and the pauses the caller saw open."""
    if isinstance(run_or_thread, str):
        return run_or_thread, store_for(plan, checkpointer), ()
    run = getattr(run_or_thread, "run", run_or_thread)  # (a RunResult's run)
    if not isinstance(run, Run):
        raise TypeError(f"expected a thread id, a Run or a RunResult, got {type(run_or_thread).__name__}")
    pauses = run_or_thread.pauses if run_or_thread is not run or not run.done else run.result().pauses
    return run.thread, checkpointer or run.checkpointer or store_for(plan, None), pauses
