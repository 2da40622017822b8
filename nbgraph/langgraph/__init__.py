"""nbgraph's live view for LangGraph graphs: watch, answer, replay and fork them in a notebook.

The user's LangGraph code is not changed: a compiled graph (``app = builder.compile(...)``)
is drawn from ``app.get_graph()``, run with ``app.astream(...)`` and read back from its
checkpointer (``get_state_history``, ``update_state``).

- :func:`view` draws the graph: nodes, edges, conditional edges labelled with their
  path-map keys, sub-graphs as frames that open, self-loops.
- :func:`start` runs it as a task of the running loop, shown live: the running nodes
  pulse, the log shows the steps and the models' streamed text, an ``interrupt()`` opens
  a pause box answered with ``Command(resume=...)`` (a review of tool calls, from the agent
  inbox or LangChain's human-in-the-loop middleware, is a form per call), a static
  breakpoint waits for Continue (with a correction to the state, if given), Stop cancels.
  ``await run`` gives the final state.
- :func:`resume` answers the pauses a thread ended waiting at (a run nobody answered, or a
  thread read back after a restart) and goes on from there.
- :func:`replay` shows a thread that has ended (or stopped at an interrupt) from its
  checkpoints, with the step slider; nothing runs. :func:`history` gives its steps (from
  any saver; :func:`ahistory` awaits them).
- :func:`fork` (or "Fork from here" in a view) goes on from the checkpoint after a step,
  with LangGraph's ``update_state`` applying an update there first, or with a new input.

Needs ``pip install 'nbgraph[langgraph]'``.
"""

from __future__ import annotations

try:
    import langgraph.graph  # noqa: F401
except ImportError as exc:  # (langgraph is an optional extra)
    from ..errors import NbgraphError

    class MissingExtra(NbgraphError, ImportError):
        """An optional extra nbgraph needs is not installed."""

    raise MissingExtra(
        f"nbgraph.langgraph needs LangGraph, which is not installed ({exc}): pip install 'nbgraph[langgraph]'"
    ) from exc

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from .. import hooks
from ..answering import Given
from ._drawing import Shape, shape_of
from ._pauses import open_pauses
from ._result import LangGraphResult
from ._run import LangGraphRun, UnsupportedByLangGraph
from ._starts import forked, resumed
from ._thread import Checkpoints, ThreadSteps, aread_checkpoints, entries_of, read_checkpoints

if TYPE_CHECKING:
    from ._view import LangGraphView

__all__ = [
    "LangGraphResult",
    "LangGraphRun",
    "LangGraphView",
    "Shape",
    "ThreadSteps",
    "UnsupportedByLangGraph",
    "ahistory",
    "fork",
    "history",
    "replay",
    "resume",
    "start",
    "view",
]


def __getattr__(name: str) -> Any:
    # The view loads the widget layer (anywidget) only when asked for.
    if name == "LangGraphView":
        from ._view import LangGraphView

        return LangGraphView
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def view(app: Any, *, xray: bool | int = True) -> LangGraphView:
    """The view of a compiled LangGraph graph (display it, or end a cell with it): sub-graphs
    ``xray`` levels deep (``True``: all) as frames that open. Nothing runs."""
    from ._view import LangGraphView

    return LangGraphView(shape_of(app, xray))


def start(
    app: Any,
    input: Any = None,
    config: Mapping[str, Any] | None = None,
    *,
    context: Any = None,
    durability: str | None = None,
    interrupt_before: str | Sequence[str] | None = None,
    interrupt_after: str | Sequence[str] | None = None,
    display: bool | None = None,
    xray: bool | int = True,
) -> LangGraphRun:
    """Run ``app`` with ``input`` (a state, or a ``Command``) and ``config`` as a task of the
    running loop and return its :class:`LangGraphRun`; in a Jupyter kernel a live view of it
    is displayed (``display=False`` turns that off).

    A config without a ``thread_id`` gets a fresh one; one with a ``checkpoint_id`` starts
    there, as ``invoke(input, config)`` does. ``await run`` gives the final state.

    ``context`` (what ``Runtime.context`` gives a node, for a graph built with
    ``context_schema=``), ``durability``, ``interrupt_before`` and ``interrupt_after`` are
    ``astream``'s: every stream of the run is given them (a resume and a fork of it too),
    and the view draws the breakpoints given here. ``recursion_limit`` is read from
    ``config``, as LangGraph reads it.

    Raises:
        RuntimeError: no event loop is running (outside a notebook: ``asyncio.run(main())``).
    """
    breaks = {
        name: list(value) if not isinstance(value, str) else value
        for name, value in (("interrupt_before_nodes", interrupt_before), ("interrupt_after_nodes", interrupt_after))
        if value is not None
    }
    if breaks:  # (as astream's own are: the graph's compiled ones, replaced)
        app = app.copy(update=breaks)
    options = {"context": context, "durability": durability}
    run = LangGraphRun(app, input, config, shape_of(app, xray), options=options)
    _display(run, display)
    return run.launch()


def history(app: Any, config: Mapping[str, Any], *, xray: bool | int = True) -> ThreadSteps:
    """The steps of the thread ``config`` names, read from ``app``'s checkpointer: ``frames``
    for the step slider, ``records``, ``inspect(step)``. Nothing runs.

    Any saver: one that reads only asynchronously (``AsyncSqliteSaver`` in a notebook cell)
    is read with its asynchronous interface in a thread of its own.

    Raises:
        ValueError: ``app`` has no checkpointer, or the thread has no checkpoint.
    """
    _needs_checkpointer(app)
    return _thread_steps(app, config, read_checkpoints(app, config), xray)


async def ahistory(app: Any, config: Mapping[str, Any], *, xray: bool | int = True) -> ThreadSteps:
    """:func:`history`, read with the checkpointer's asynchronous interface."""
    _needs_checkpointer(app)
    return _thread_steps(app, config, await aread_checkpoints(app, config), xray)


def _needs_checkpointer(app: Any) -> None:
    if app.checkpointer is None:
        raise ValueError(
            "a LangGraph thread is read from its graph's checkpointer, and this graph has none: "
            "compile it with checkpointer=InMemorySaver() (or another saver)"
        )


def _thread_steps(app: Any, config: Mapping[str, Any], read: Checkpoints, xray: bool | int) -> ThreadSteps:
    if not read.chain:
        thread = (config.get("configurable") or {}).get("thread_id")
        raise ValueError(f"thread {thread!r} has no checkpoint in {app.checkpointer!r}")
    plan = shape_of(app, xray)
    entries, checkpoints = entries_of(read, plan)
    latest = read.chain[-1]
    waiting = latest.next
    at_latest = not (config.get("configurable") or {}).get("checkpoint_id")  # (else its pauses are past)
    last = [entry.record for entry in entries]
    return ThreadSteps(
        app,
        dict(config),
        plan,
        tuple(entries),
        checkpoints,
        "interrupted" if waiting else "done",
        f"waiting to run {', '.join(waiting)}" if waiting else None,
        (
            "a checkpoint does not record when each node ran: a step's time is its superstep's",
            "a checkpoint does not record a Send's payload: such a step shows no input",
        ),
        tuple(open_pauses(latest, plan.breakpoints, last, inner=app.get_state)) if at_latest else (),
    )


def replay(source: Any, config: Mapping[str, Any] | None = None, *, xray: bool | int = True) -> LangGraphView:
    """The view of a thread as it ended (or stopped, at an interrupt or a breakpoint), with a
    step slider at its last step; nothing runs. "Fork from here" in its inspector forks it.

    ``source``: a compiled graph with the ``config`` naming its thread, or the thread's
    steps already read (:func:`history`, :func:`ahistory`).
    """
    from ._view import LangGraphView

    steps = _steps_of(source, config, xray)
    shown = LangGraphView(steps.plan, steps=steps)
    shown.show_ended(steps)
    shown.can_fork = True
    return shown


def fork(
    source: Any,
    config: Mapping[str, Any] | None = None,
    *,
    step: int,
    update: Mapping[str, Any] | None = None,
    input: Any = None,
    context: Any = None,
    durability: str | None = None,
    display: bool | None = None,
    xray: bool | int = True,
) -> LangGraphRun:
    """Go on from the checkpoint after ``step`` of a thread, as a new run: ``update`` is
    written there first with LangGraph's ``update_state`` (as the node that ran last
    there), then the graph runs on from it in the same thread. Nothing up to ``step``
    runs again; the path the thread took before stays in its checkpoints.

    With ``input`` (a state), the graph takes it there as a new input, as LangGraph's
    ``invoke(input, config with that checkpoint_id)`` does: another question to a chat
    as it stood after ``step``. ``context`` and ``durability`` are ``astream``'s (a run's
    own are kept when not given).

    ``source``: a compiled graph with the ``config`` naming its thread, or the thread's
    steps already read (:func:`history`, :func:`ahistory`).

    Raises:
        ValueError: the thread has no step ``step`` to fork from.
    """
    options = {"context": context, "durability": durability}
    run = forked(_steps_of(source, config, xray), step, update, input, options)
    _display(run, display)
    return run.launch()


def resume(
    source: Any,
    config: Mapping[str, Any] | None = None,
    *,
    answer: Any = None,
    pause: str | None = None,
    reason: str | None = None,
    by: str | None = None,
    shown: str | None = None,
    context: Any = None,
    durability: str | None = None,
    display: bool | None = None,
    xray: bool | int = True,
) -> LangGraphRun:
    """Answer the pauses a thread ended waiting at and go on from there, as a new run in the
    same thread: a run nobody answered (``run.result()``, ended ``interrupted``), or a thread
    read back from its checkpointer, in this process or after a restart.

    ``answer``, ``pause``, ``reason``, ``by`` and ``shown`` are read as
    :meth:`LangGraphRun.answer` reads them: the answer to the one open pause, to the one
    ``pause`` names, or a mapping of pause ids to answers, checked before anything runs and
    recorded (``via="langgraph"``); pauses left unanswered stay open in the new run. As
    LangGraph resumes, each interrupted node runs again from its start and its
    ``interrupt()`` returns the answer (decisions on tool calls in the shape its code reads);
    a breakpoint's correction is written with ``update_state`` first.

    ``context`` and ``durability`` are ``astream``'s (a run's own are kept when not given).

    ``source``: a :class:`LangGraphResult`, a compiled graph with the ``config`` naming its
    thread, or the thread's steps already read (:func:`history`, :func:`ahistory`).

    Raises:
        NoPendingRequest: the thread waits at no pause.
        ResumeError: the answer names a pause the thread does not wait at, cannot say which of
            several it is for, does not fit its pause, cannot be kept, or comes from someone
            the pause does not wait for; nothing runs.
    """
    steps = source.replay() if isinstance(source, LangGraphResult) else _steps_of(source, config, xray)
    options = {"context": context, "durability": durability}
    run = resumed(steps, answer, pause, options, Given("langgraph", by, reason, shown))
    _display(run, display)
    return run.launch()


def _steps_of(source: Any, config: Mapping[str, Any] | None, xray: bool | int) -> ThreadSteps:
    if isinstance(source, ThreadSteps):
        return source
    if config is None:
        raise TypeError("give the thread's config with the graph: (app, {'configurable': {'thread_id': ...}})")
    return history(source, config, xray=xray)


def _display(run: LangGraphRun, display: bool | None) -> None:
    if display is False or not hooks.in_notebook():
        return
    from ._view import LangGraphView, show

    show(LangGraphView.for_run(run), run.plan.mermaid)
