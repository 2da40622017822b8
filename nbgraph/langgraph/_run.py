"""A LangGraph run as nbgraph's view watches it: :class:`LangGraphRun`.

The run streams the graph as a task of the running loop; it reads the stream into step
records (see :mod:`._steps`) and holds, between two streams, the pauses LangGraph
stopped at (see :mod:`._pauses`): the interrupts its nodes raised (``interrupt(value)``,
questions or reviews of tool calls) and its static breakpoints. Once every open pause has
its answer it goes on, as LangGraph goes on: a stream from the thread's checkpoint, with
``Command(resume={interrupt id: answer})``, in which each interrupted node runs again from
its start and ``interrupt()`` returns its answer; at a breakpoint answered with a
correction, after ``update_state`` has written it. How it ended is a
:class:`~._result.LangGraphResult`; a run that goes on from a thread's steps is made by
:mod:`._starts`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Generator, Mapping, Sequence
from typing import Any, NamedTuple

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command

from .. import events, hooks
from ..answering import Given, Via
from ..decision import Decision
from ..engine.listeners import Listeners
from ..engine.people import check_decider
from ..errors import NbgraphError, NoPendingRequest, ResumeError, RunStillRunning
from ..history import BranchState, Step
from ..names import new_id
from ..pauses import Pause, answered_here, answers_by_id
from ..plan import Breakpoints
from ..state import to_jsonable
from ._drawing import Shape
from ._inline_saver import runnable
from ._pauses import Break, Read, Where, bind_answer, decision_for, open_pauses, read_given
from ._result import LangGraphResult
from ._steps import Entry, StepBook
from ._thread import ThreadSteps

__all__ = ["IN_LANGGRAPH", "LangGraphRun", "UnsupportedByLangGraph"]

_MODES = ["debug", "messages", "custom"]

IN_LANGGRAPH = Given("langgraph")
"""An answer given from code at the LangGraph door (``run.answer``, ``nbgraph.langgraph.resume``)."""


class UnsupportedByLangGraph(NbgraphError, ValueError):
    """Asked of a LangGraph run something nbgraph's runs do and LangGraph's do not."""


class _Stopped(Exception):
    """A breakpoint was answered ``stop``."""


class _Unanswered(Exception):
    """``stop_waiting`` was called while pauses were open."""


class _Answered(NamedTuple):
    """One answer given at the door: its pause, the answer as given, as read, and its record."""

    pause: Pause
    answer: Any
    read: Read
    decision: Decision


class LangGraphRun:
    """One run of a compiled LangGraph graph, streamed as a task of the running loop.

    The verbs are those of nbgraph's :class:`~nbgraph.Run`: :meth:`answer` (an interrupt
    with its value, a review of tool calls with decisions, a breakpoint with ``"continue"``,
    ``"step"`` or ``"stop"``, what no answer means ``"continue"``, or with
    ``{"answer": "continue", "update": {...}}``), :meth:`approve` / :meth:`deny` (``True`` /
    ``False`` to the one open interrupt), :meth:`cancel`, :meth:`next_pause`,
    :meth:`subscribe`; ``await run`` gives the graph's final state (a dict), :meth:`result`
    how it ended.
    """

    def __init__(
        self,
        app: Any,
        input: Any,
        config: Mapping[str, Any] | None,
        plan: Shape,
        *,
        shared: ThreadSteps | None = None,
        fork: tuple[Mapping[str, Any], Any] | None = None,
        waiting: Sequence[Pause] = (),
        options: Mapping[str, Any] | None = None,
    ) -> None:
        config = dict(config or {})
        configurable = dict(config.get("configurable") or {})
        configurable.setdefault("thread_id", new_id())
        self._first = {**config, "configurable": configurable}
        """The config of the run's first stream: a checkpoint_id given there is where it starts."""
        configurable = {key: value for key, value in configurable.items() if key != "checkpoint_id"}
        if not isinstance(app.checkpointer, BaseCheckpointSaver):
            # As a live nbgraph run keeps its checkpoints in memory: LangGraph writes the
            # checkpoints a view reads (supersteps, interrupts, forks) only to a saver.
            app = app.copy(update={"checkpointer": InMemorySaver()})
        self.app = app
        self.config: dict[str, Any] = {**config, "configurable": configurable}
        self.thread = str(configurable["thread_id"])
        self.plan = plan._replace(max_steps=config.get("recursion_limit"))
        self.replaced: tuple[str, ...] = ()
        self._input = input
        self._fork = fork
        self.options: dict[str, Any] = {key: value for key, value in (options or {}).items() if value is not None}
        """What each stream is given besides the input and config (``context``, ``durability``)."""
        self._streaming = {"stream_mode": _MODES, "subgraphs": True, **self.options}
        self._entries: list[Entry] = list(shared.entries) if shared is not None else []
        self._records = [entry.record for entry in self._entries]
        self._listeners = Listeners(thread=self.thread)
        self._book = StepBook(plan.routes, self._entries, self._records, self._listeners)
        if shared is not None:
            self._book.checkpoints.update(shared.checkpoints)
        self._pauses: dict[str, Pause] = {pause.id: pause for pause in waiting}
        """The pauses open now: those the thread waits at when the run resumes it, then those it stops at."""
        self._given: dict[str, Any] = {}
        """Pause id -> its answer, read (:func:`._pauses.read_given`)."""
        self._told: dict[str, str] = {}
        self._decisions: list[Decision] = []
        self._resuming: list[_Answered] = []
        """A resume's answers to the pauses it starts at (told once it runs)."""
        self._changed = asyncio.Event()
        self._unanswered: str | None = None
        self._task: asyncio.Task[LangGraphResult] | None = None
        self._result: LangGraphResult | None = None

    # -- what it is doing ----------------------------------------------------------------

    @property
    def step(self) -> int:
        """The latest superstep of the graph itself (sub-graphs count their own)."""
        return self._book.step

    @property
    def done(self) -> bool:
        return self._result is not None

    @property
    def live(self) -> bool:
        return self._result is None

    @property
    def checkpointer(self) -> Any:
        return self.app.checkpointer

    @property
    def decisions(self) -> list[Decision]:
        """The answers given to the run's pauses so far, as :class:`~nbgraph.decision.Decision`
        records, in the order they were given."""
        return list(self._decisions)

    @property
    def recorded(self) -> int:
        return len(self._records)

    @property
    def history(self) -> list[Step]:
        return list(self._records)

    def history_since(self, count: int) -> list[Step]:
        return self._records[count:]

    @property
    def running(self) -> tuple[str, ...]:
        return self._book.running

    @property
    def branches(self) -> list[BranchState]:
        return [
            BranchState(task.node, task.path, task.branch or task.node, task.status)
            for group in self._book.groups()
            for task in group
        ]

    @property
    def upcoming(self) -> str | None:
        if self._result is not None:
            return None
        running = self._book.running
        return running[0] if running else None

    @property
    def pauses(self) -> tuple[Pause, ...]:
        """The pauses open now and not yet answered, oldest first."""
        return tuple(pause for pause in self._pauses.values() if pause.id not in self._given)

    @property
    def breakpoints(self) -> Breakpoints:
        """The graph's static breakpoints (``interrupt_before`` / ``interrupt_after``), by path."""
        return self.plan.breakpoints

    @breakpoints.setter
    def breakpoints(self, value: Breakpoints) -> None:
        raise UnsupportedByLangGraph(
            "a LangGraph graph's breakpoints are compiled into it: "
            "compile it with interrupt_before=[...] / interrupt_after=[...] and start it again"
        )

    def steps(self) -> ThreadSteps:
        """The run's steps so far, as the inspector and a fork read them."""
        return ThreadSteps(
            self.app, self.config, self.plan, tuple(self._entries), dict(self._book.checkpoints), options=self.options
        )

    def subscribe(self, listener: Callable[[Any], Any], *, steps: bool = True) -> Callable[[], None]:
        """Call ``listener(event)`` for each :mod:`nbgraph.events` event from now on; returns an
        unsubscribe function. ``steps=False`` leaves out ``node-enter``, ``node-exit`` and ``route``."""
        return self._listeners.subscribe(listener, steps=steps)

    # -- talking to it -------------------------------------------------------------------

    def answer(
        self,
        value: Any = None,
        *,
        pause: str | None = None,
        shown: str | None = None,
        reason: str | None = None,
        by: str | None = None,
        via: Via = "langgraph",
    ) -> None:
        """Answer the open pause, or the one ``pause`` names, or several with a mapping of
        pause ids (interrupt ids) to answers; the run goes on once every open pause has one.

        A review of tool calls (kind ``"tool"``) takes a decision per call (``"approve"``,
        ``"reject"``, ``[{"type": "edit", "arguments": {...}}, ...]``), or its idiom's own
        answer as its client sends it (the agent inbox's ``[{"type": "accept", "args": None}]``,
        the middleware's ``{"decisions": [...]}``); the node gets it in the shape its code
        reads. A breakpoint takes ``"continue"``, ``"step"``, ``"stop"`` or ``{"answer":
        "continue", "update": {field: value}}``, the update written with LangGraph's
        ``update_state`` before the graph goes on.

        Every answer is checked before the graph runs on it: it must fit its pause and be
        something a checkpoint keeps (JSON, finite numbers, within
        :func:`nbgraph.storable.answer_limit`); refused, nothing ran and the pause still waits.
        Each is recorded (:class:`~nbgraph.decision.Decision`, in the ``answer`` event and
        :attr:`decisions`) as :meth:`nbgraph.Run.answer` records it: ``by`` whom (default
        :func:`~nbgraph.decision.identity`; one of ``pause.deciders`` when it names some),
        ``via`` which door (the view says ``"view"``), why (``reason``); ``shown``, the digest
        of what the person saw (``pause.shown``), refuses the answer if the pause shows
        something else.

        Raises:
            NoPendingRequest: the run waits for no answer now.
            ResumeError: the answer names a pause that is not open, cannot say which of
                several it is for, does not fit its pause (not one of its options, a decision
                its call does not take, an edit outside the tool's schema, an update of a field
                the state does not have), cannot be kept, or comes from someone the pause does
                not wait for.
        """
        open_ = self.pauses
        if not open_ and pause is None and not answers_by_id(value):
            raise NoPendingRequest(
                f"run {self.thread!r} waits for no answer"
                + (" (it has finished)" if self.done else "; use `await run.next_pause()` to wait for a pause")
            )
        given = bind_answer(open_, value, pause, thread=self.thread, story=self._story, shown=shown)
        answered = self._read(open_, given, Given(via, by, reason, shown))
        self._give(answered)
        self._tell(answered)

    def answer_on_launch(
        self, open_: Sequence[Pause], value: Any, pause: str | None = None, how: Given = IN_LANGGRAPH
    ) -> None:
        """Answer the pauses ``open_`` a resumed run starts waiting at, before it is launched,
        by the rule :meth:`answer` follows (``how``: by whom, why, through which door); the
        listeners hear the answers as the run announces the pauses.

        Raises:
            ResumeError: as :meth:`answer`.
        """
        given = bind_answer(open_, value, pause, thread=self.thread, story=self._story, shown=how.shown)
        answered = self._read(open_, given, how)
        self._give(answered)
        self._resuming = answered

    def _story(self, pause_id: str) -> str | None:
        """How a pause that is not open was answered: in this run, or in the run whose steps it goes on from."""
        told = self._told.get(pause_id)
        if told is not None:
            return told
        asked = (pair for entry in self._entries for pair in entry.answers if pair[0].id == pause_id)
        return next((answered_here(pause, answer) for pause, answer in asked), None)

    def _read(self, open_: Sequence[Pause], given: Mapping[str, Any], how: Given) -> list[_Answered]:
        """The answers read and checked against their pauses, and their records; any that does not
        fit raises before any is given."""
        kinds = {p.id: p for p in open_}
        answered: list[_Answered] = []
        for pid, answer in given.items():
            asked = kinds[pid]
            check_decider(asked, how.by)
            read = read_given(asked, answer, self.app)
            answered.append(_Answered(asked, answer, read, decision_for(asked, read, how)))
        return answered

    def _give(self, answered: Sequence[_Answered]) -> None:
        """Give the pauses their answers, as read."""
        for asked, answer, read, decision in answered:
            self._given[asked.id] = read.given
            self._told[asked.id] = answered_here(asked, answer)
            self._decisions.append(decision)
            if asked.kind != "breakpoint":
                self._book.answers.setdefault((asked.path, asked.step, asked.branch), []).append((asked, answer))
        if not self.pauses:
            self._changed.set()

    def _tell(self, answered: Sequence[_Answered]) -> None:
        """Tell the listeners the answers given, each with its record."""
        for asked, answer, _, decision in answered:
            self._listeners.emit_if(
                lambda asked=asked, answer=answer, decision=decision: events.Answer(
                    thread=self.thread,
                    step=asked.step,
                    path=asked.path,
                    branch=asked.branch,
                    pause_id=asked.id,
                    answer=to_jsonable(answer, strict=False),
                    decision=decision,
                )
            )

    def approve(self, *, reason: str | None = None) -> None:
        """Answer the one open interrupt with ``True`` (a review: approve every call)."""
        self.answer(True, pause=self._only().id, reason=reason)

    def deny(self, *, reason: str | None = None) -> None:
        """Answer the one open interrupt with ``False`` (a review: reject every call)."""
        self.answer(False, pause=self._only().id, reason=reason)

    def _only(self) -> Pause:
        open_ = self.pauses
        if len(open_) != 1:
            raise ResumeError(
                f"run {self.thread!r} waits for {len(open_)} answers: answer each with run.answer(value, pause=id)"
                if open_
                else f"run {self.thread!r} waits for no answer"
            )
        return open_[0]

    def steer(self, text: str) -> None:
        raise UnsupportedByLangGraph(
            "a LangGraph run takes no message while it runs: its nodes read only their state "
            "(answer an interrupt, or fork with an update, instead)"
        )

    def cancel(self) -> None:
        """Stop the run: it ends ``aborted``; the thread keeps its latest checkpoint."""
        if self._task is not None and not self._task.done():
            self._task.cancel()

    def stop_waiting(self, why: str) -> None:
        """Nobody will answer: the run ends ``interrupted`` at its open pauses, saying ``why``;
        the thread stays interrupted, so ``nlg.resume(run.result(), answer=...)`` (or
        ``start(app, Command(resume=...), config)``) goes on."""
        self._unanswered = why
        self._changed.set()

    async def next_pause(self, timeout: float | None = None) -> Pause | None:
        """Wait until the run opens a pause (returned) or ends (None)."""

        async def wait() -> Pause | None:
            while True:
                if self.pauses:
                    return self.pauses[0]
                if self._result is not None:
                    return None
                self._changed.clear()
                await self._changed.wait()

        return await asyncio.wait_for(wait(), timeout)

    def result(self) -> LangGraphResult:
        """How the run ended.

        Raises:
            RunStillRunning: the run has not ended; ``await run`` instead.
        """
        if self._result is None:
            raise RunStillRunning(
                f"run {self.thread!r} of graph {self.plan.name!r} is still running (step {self.step}) "
                "- use `await run` to wait for it"
            )
        return self._result

    # -- running it ----------------------------------------------------------------------

    def launch(self) -> LangGraphRun:
        """Run it as a task of the running loop."""
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            raise RuntimeError(
                "nbgraph.langgraph.start() needs a running event loop (a notebook cell, or async code: "
                "asyncio.run(main()) where main awaits the run)"
            ) from None
        self._task = loop.create_task(self._execute())
        return self

    def __await__(self) -> Generator[Any, None, dict[str, Any]]:
        # In a kernel, the notebook layer's wait: it fails at once where no click could answer a pause.
        return hooks.awaited(self, self._values()).__await__()

    async def _values(self) -> dict[str, Any]:
        if self._task is None:
            raise RunStillRunning("this run was not started; use nbgraph.langgraph.start(app, input, config)")
        result = await asyncio.shield(self._task)
        if result.error is not None:
            raise result.error
        return result.values

    async def _execute(self) -> LangGraphResult:
        asked = list(self._pauses.values())  # (a resume starts at the pauses its thread waits at)
        self._listeners.emit_if(
            lambda: events.RunStart(
                thread=self.thread,
                step=self.step,
                graph=self.plan.name,
                resumed=self._fork is not None or bool(asked),
            )
        )
        outcome, reason, error = "done", None, None
        try:
            self.app = await runnable(self.app, self.config)
            config: Mapping[str, Any] = self._first
            if self._fork is not None:
                at, update = self._fork
                config = await self.app.aupdate_state(at, update) if update is not None else at
            command, before = self._input, None
            if asked:
                self._announce(asked)
                self._tell(self._resuming)
            while True:
                if asked:
                    await self._answered()
                    command, before = await self._going_on(asked)
                    config = self.config
                await self._stream(command, config, before)
                config = self.config  # the thread's latest checkpoint, from now on
                state = await self.app.aget_state(config, subgraphs=True)  # (a sub-graph may have stopped the run)
                if not state.next:
                    break
                asked = self._open(state)
        except _Stopped:
            outcome, reason = "aborted", "stopped at a breakpoint"
        except asyncio.CancelledError:
            outcome, reason = "aborted", "stopped (run.cancel(), or Stop in the view)"
        except _Unanswered:
            outcome, reason = "interrupted", self._unanswered
        except Exception as exc:
            outcome, reason, error = "failed", f"{type(exc).__name__}: {exc}", exc
        return self._finish(outcome, reason, error)

    async def _stream(self, command: Any, config: Mapping[str, Any], before: Any) -> None:
        options = self._streaming if before is None else {**self._streaming, "interrupt_before": before}
        read = self._book.read
        async for namespace, mode, chunk in self.app.astream(command, config, **options):
            read(namespace, mode, chunk)

    def _open(self, state: Any) -> list[Pause]:
        """The pauses a stream stopped at: its interrupts, else its static breakpoints."""

        def where(interrupt: Any) -> Where | None:
            asked = self._book.where(interrupt.id)
            return None if asked is None else Where(*asked)

        asked = open_pauses(state, self.plan.breakpoints, self._book.last, where)
        for pause in asked:
            self._pauses[pause.id] = pause
        self._announce(asked)
        return asked

    def _announce(self, asked: Sequence[Pause]) -> None:
        for pause in asked:
            self._listeners.emit_if(
                lambda pause=pause: events.Interrupt(
                    thread=self.thread, step=pause.step, path=pause.path, branch=pause.branch, pause=pause
                )
            )
        self._changed.set()

    async def _answered(self) -> None:
        while self.pauses:
            if self._unanswered is not None:
                raise _Unanswered
            self._changed.clear()
            await self._changed.wait()

    async def _going_on(self, asked: Sequence[Pause]) -> tuple[Any, Any]:
        """The input and ``interrupt_before`` of the stream that goes on from the answers; at a
        breakpoint, the corrections the answers carry are written first, as LangGraph's
        ``update_state(config, values)`` writes them (after a node: as that node)."""
        given = {pause.id: self._given.pop(pause.id) for pause in asked}
        self._pauses.clear()
        if asked[0].kind != "breakpoint":
            return Command(resume=given), None
        breaks: list[Break] = list(given.values())
        if any(answer.word == "stop" for answer in breaks):
            raise _Stopped
        for pause in asked:
            update = given[pause.id].update
            if update is not None:
                await self.app.aupdate_state(self.config, update, as_node=pause.node if pause.at == "after" else None)
        return None, "*" if any(answer.word == "step" for answer in breaks) else None

    def _finish(self, outcome: str, reason: str | None, error: BaseException | None) -> LangGraphResult:
        self._book.settle_unfinished()
        pauses = self.pauses if outcome == "interrupted" else ()
        steps = self.steps()._replace(outcome=outcome, reason=reason, pauses=pauses)
        result = self._result = LangGraphResult(
            steps, outcome, reason, self._book.values, pauses, error, tuple(self._decisions)
        )
        self._listeners.emit_if(lambda: events.Done(thread=self.thread, step=self.step, outcome=outcome, reason=reason))
        self._changed.set()
        return result

    def __repr__(self) -> str:
        status = self._result.outcome if self._result else f"running, step {self.step}"
        return f"<LangGraphRun {self.plan.name!r} thread={self.thread!r} ({status})>"
