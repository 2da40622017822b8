"""The public run handle, :class:`Run`; how a run is launched, awaited and streamed; and
:class:`RunView`, the engine's run as its live view sees it."""

# pyright: reportPrivateUsage=false
# (``launch``, ``execute``, ``remember`` and ``resumed_run`` drive a Run through its private
# half: they are this module's own, kept off the class a user reads; tests/test_layers.py
# refuses such reads from any other module.)

from __future__ import annotations

import asyncio
import itertools
import weakref
from collections.abc import AsyncIterator, Callable, Generator, Mapping
from typing import TYPE_CHECKING, Any, Literal

from .. import hooks
from ..answering import IN_CODE, Given
from ..errors import MaxStepsExceeded, NoPendingRequest, RunStillRunning
from ..export import to_dag
from ..history import BranchState, Step
from ..names import new_id
from ..plan import Breakpoints, Plan
from .ending import Ending
from .limits import Budget
from .listeners import Listeners, done, interrupt
from .people import check_decider
from .persistence import default_checkpointer, forget, open_thread
from .result import RunResult
from .walker import Walker

if TYPE_CHECKING:
    from ..answering import Via
    from ..pauses import Pause
    from .people import Standing

__all__ = ["Run", "RunView", "execute", "launch", "live_runs", "observe_runs", "resumed_run", "stream"]

_launches = itertools.count()
_LIVE: weakref.WeakValueDictionary[int, Run] = weakref.WeakValueDictionary()
"""Runs started as tasks, by launch order: those not done are :func:`live_runs`."""

_OBSERVERS: list[Callable[[Run], Callable[[Any], Any] | None]] = []


def observe_runs(observer: Callable[[Run], Callable[[Any], Any] | None]) -> Callable[[], None]:
    """Call ``observer(run)`` for every run made from now on; the listener it returns, if any,
    hears all of that run's events. Returns a function that stops it.

    A tracer is such an observer: a process that none installed pays nothing per run.
    """
    _OBSERVERS.append(observer)

    def stop() -> None:
        if observer in _OBSERVERS:
            _OBSERVERS.remove(observer)

    return stop


def live_runs() -> list[Run]:
    """The runs under way in this process as tasks of a loop (``g.start()``, a view's resume
    or fork), oldest first: a re-run ``%%node`` cell swaps its code into those of its graph."""
    return [run for _, run in sorted(_LIVE.items()) if not run.done]


class Run:
    """One run of a graph. ``g.start()`` returns it as a live handle: await it for the result.

    Answer its pauses (inputs, approvals, breakpoints, budget raises) with :meth:`answer`,
    approvals also with :meth:`approve` and :meth:`deny`; stop it with :meth:`cancel`; talk
    to its LLM nodes with :meth:`steer`; watch it with :meth:`subscribe`.
    """

    def __init__(
        self,
        plan: Plan,
        input: Any = None,
        *,
        thread: str | None = None,
        checkpointer: Any = None,
        budget: Budget | None = None,
        live: bool = False,
        on_event: Callable[[Any], Any] | None = None,
        replace: bool = False,
        stepping: bool = False,
        pace: float = 0.0,
        resuming: bool = False,
    ) -> None:
        self.plan = plan
        self.thread = thread or new_id()
        # A thread id given to a new run must name a new thread (or one to replace).
        self._claim = thread is not None and not resuming
        self._replacing = replace
        store = checkpointer if checkpointer is not None else plan.checkpointer
        if store is None and live:
            store = default_checkpointer()
        listeners = Listeners(plan.listeners if on_event is None else (*plan.listeners, on_event), self.thread)
        self._walker = Walker(
            plan,
            self.thread,
            input=input,
            store=store,
            budget=budget if budget is not None else plan.budget,
            chosen=budget is not None,
            live=live,
            listeners=listeners,
            stepping=stepping,
            pace=pace,
            resuming=resuming,
        )
        for observe in _OBSERVERS:
            listener = observe(self)
            if listener is not None:
                listeners.subscribe(listener)
        self._task: asyncio.Task[RunResult] | None = None
        self._result: RunResult | None = None
        self._viewed: RunView | None = None
        self.replaced: tuple[str, ...] = ()
        """Nodes whose function :meth:`replace_node` swapped in this run, in order."""

    # -- what it is doing -------------------------------------------------------------

    @property
    def graph(self) -> Any:
        """The graph this run was started from."""
        return self.plan.graph

    @property
    def checkpointer(self) -> Any:
        return self._walker.persistence.store

    @property
    def input(self) -> dict[str, Any] | None:
        """The field values the run started from (None: it continued a thread from a checkpoint)."""
        return self._walker.input

    @property
    def breakpoints(self) -> Breakpoints:
        """Where this run pauses for a person to look (node paths). Set it while a live run
        goes on: it pauses there from its next step (a click in its view does this)."""
        breaks = self._walker.breaks
        return Breakpoints(breaks.before, breaks.after)

    @breakpoints.setter
    def breakpoints(self, value: Breakpoints) -> None:
        self._set_breaks(frozenset(value.before), frozenset(value.after), self.stepping)

    @property
    def stepping(self) -> bool:
        """Whether the run pauses before every node (step mode); settable like :attr:`breakpoints`."""
        return self._walker.breaks.stepping

    @stepping.setter
    def stepping(self, value: bool) -> None:
        current = self.breakpoints
        self._set_breaks(current.before, current.after, bool(value))

    def _set_breaks(self, before: frozenset[str], after: frozenset[str], stepping: bool) -> None:
        if not self._live:
            why = "it has ended" if self.done else "it cannot wait for a person (it was not started with start())"
            raise ValueError(f"run {self.thread!r} cannot pause at breakpoints now: {why}")
        self._walker.breaks.set(before, after, stepping)

    @property
    def _live(self) -> bool:
        return self._walker.asking.live and self._result is None

    @property
    def done(self) -> bool:
        return self._result is not None

    @property
    def step(self) -> int:
        return self._walker.step

    @property
    def node(self) -> str | None:
        """The node running now, or None between nodes and after the run."""
        return self._walker.node

    @property
    def branches(self) -> list[BranchState]:
        """The branches of the supersteps under way (a fan-out, a map, ``Send`` items), each
        with its status; nested sub-graphs' supersteps after their parents'."""
        walker = self._walker
        pending = walker.asking.pauses.pending

        def asking(frame: Any) -> bool:
            # A live branch waiting for a person is still inside its call (or its sub-graph's).
            path, branch = frame.path, frame.branch
            return any(
                (p.path == path or p.path.startswith(path + "/"))
                and p.branch is not None
                and (p.branch == branch or p.branch.startswith(branch + "/"))
                for p in pending
            )

        return [
            BranchState(
                slot.frame.node,
                slot.frame.path,
                slot.frame.branch or "",  # (a slot of several always has its branch label)
                "paused" if status == "running" and pending and asking(slot.frame) else status,
            )
            for slots, statuses in walker.activity.supersteps.values()
            for slot, status in zip(slots, statuses, strict=True)
        ]

    @property
    def state(self) -> Any:
        """The state after the latest completed step (with the update of a node whose step
        waits for a person after it ran)."""
        return self.plan.schema.output(self._walker.state_shown())

    @property
    def history(self) -> tuple[Step, ...]:
        """Every step the thread took, earlier runs' included."""
        return tuple(self._walker.full_history())

    @property
    def pauses(self) -> tuple[Pause, ...]:
        """Every pause open now, oldest first (several when parallel branches wait)."""
        return self._walker.asking.pauses.pending

    @property
    def decisions(self) -> list[Any]:
        """Every answer given to the thread's pauses so far (:class:`~nbgraph.decision.Decision`)."""
        from ..decision import decided_in

        return decided_in(self._walker.full_history())

    @property
    def standing(self) -> tuple[Standing, ...]:
        """The standing approvals in force: tools whose later calls run without asking."""
        return self._walker.asking.standing

    def allow(
        self,
        tool: str,
        *,
        when: Mapping[str, Any] | Callable[[Mapping[str, Any]], bool] | None = None,
        scope: Literal["run", "thread"] = "run",
        reason: str | None = None,
        by: str | None = None,
    ) -> Standing:
        """Approve every later call of ``tool`` without asking, for the rest of this run (or,
        ``scope="thread"``, of its thread, resumes included); ``when`` narrows it to calls
        whose arguments match (a mapping of argument values, or a function of the arguments
        for this run only). Each call it lets through is recorded as decided by it; revoke it
        with :meth:`revoke`."""
        return self._walker.asking.allow(tool, when=when, scope=scope, by=by, reason=reason)

    def revoke(self, standing: str | Standing) -> None:
        """End a standing approval (or its id): later calls of its tool wait for a person again."""
        self._walker.asking.revoke(standing if isinstance(standing, str) else standing.id)

    def state_at(self, step: int) -> Any:
        """The state after ``step`` (0 is the input)."""
        return self.plan.schema.output(self._walker.state_at(step))

    def to_dag(self) -> dict[str, Any]:
        return to_dag(self.plan, self._walker.full_history())

    @property
    def trace_context(self) -> dict[str, str]:
        """The W3C trace context (``traceparent``, ``tracestate``) kept with the run's checkpoints.

        A tracer sets it to its span of the run as the run starts. A run that continues a
        thread (a resume or a fork, in this process or another) starts with the context of
        the run that wrote the checkpoint it continues from, until its own tracer sets its
        own: that is how a tracer links the two.
        """
        return dict(self._walker.trace)

    @trace_context.setter
    def trace_context(self, carrier: Mapping[str, str]) -> None:
        self._walker.keep_trace(carrier)

    def subscribe(self, listener: Callable[[Any], Any], *, steps: bool = True) -> Callable[[], None]:
        """Call ``listener(event)`` for each event from now on; returns an unsubscribe function.

        With ``steps=False`` the listener skips the per-step ``node-enter``,
        ``node-exit`` and ``route`` events: an observer that reads progress from
        ``run.history`` at its own pace then costs the run nothing per step.
        """
        return self._walker.listeners.subscribe(listener, steps=steps)

    @property
    def viewed(self) -> RunView:
        """The run as its live view reads it and clicks in it (:class:`~nbgraph.viewed.ViewedRun`)."""
        if self._viewed is None:
            self._viewed = RunView(self, self._walker)
        return self._viewed

    # -- talking to it ----------------------------------------------------------------

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
        """Answer the run's open pause, whatever its kind; or the pause ``pause`` names; or,
        given a mapping of pause ids to answers, the pauses it names. Which pause an answer
        is for follows :func:`nbgraph.pauses.bind`; the run goes on as soon as it has them.

        An input takes any value it asked for (one of its options, when it has some); an
        approval ``True``, ``False`` or ``{"approved": ..., "update": {...}}`` (or use
        :meth:`approve` and :meth:`deny`); a breakpoint ``"continue"`` (what no answer
        means), ``"step"`` or ``"stop"``; a budget pause raised limits (``{"tokens": 5000}``)
        or ``"stop"``.

        Each answer is recorded (:class:`~nbgraph.decision.Decision`): ``by`` whom (default
        :func:`~nbgraph.decision.identity`), ``via`` which door (the view says ``"view"``),
        and why (``reason``). ``shown``, the digest of what the person saw
        (``pause.shown``), refuses the answer if the pause shows something else.

        Raises:
            NoPendingRequest: the run waits for no answer now.
            ResumeError: the answer names a pause that is not open (nothing is answered),
                cannot say which of several it is for, or does not fit its pause.
        """
        from ..pauses import answered_in, answers_by_id, bind, read_answer

        walker = self._walker
        pauses = walker.asking.pauses
        open_ = pauses.pending
        if not open_ and pause is None and not answers_by_id(value):
            raise NoPendingRequest(
                f"run {self.thread!r} waits for no answer"
                + (" (it has finished)" if self.done else "; use `await run.next_pause()` to wait for a pause")
            )
        given = bind(
            open_,
            value,
            pause,
            thread=self.thread,
            story=lambda pid: pauses.given.get(pid) or answered_in(reversed(walker.full_history()), pid),
            shown=shown,
        )
        kinds = {p.id: p for p in open_}
        given = {
            pid: "continue" if answer is None and kinds[pid].kind == "breakpoint" else answer
            for pid, answer in given.items()
        }
        for pid, answer in given.items():  # every answer checked before any is given
            check_decider(kinds[pid], by)
            read_answer(kinds[pid], answer)

        def check_update(update: Mapping[str, Any], node: str) -> object:
            return walker.plan.schema.apply(walker.values, update, node)

        for pid, answer in given.items():
            pauses.respond(pid, answer, check_update, via=via, by=by, reason=reason)

    def approve(self, update: Mapping[str, Any] | None = None, *, reason: str | None = None) -> None:
        """Approve the open approval, optionally correcting the state with ``update``."""
        pause = self._walker.asking.pauses.only("approval", self.thread, self.done)
        self.answer({"approved": True, "update": dict(update) if update else None}, pause=pause.id, reason=reason)

    def deny(self, *, reason: str | None = None) -> None:
        """Deny the open approval."""
        pause = self._walker.asking.pauses.only("approval", self.thread, self.done)
        self.answer(False, pause=pause.id, reason=reason)

    def replace_node(self, name: str, fn: Callable[..., Any]) -> None:
        """Call ``fn`` as node ``name`` for the rest of this run (hot swap), from the node's next call.

        A call under way (a node paused inside, waiting for an answer) finishes with the
        code it started with. The graph itself is not changed: redefine the node there too
        (``g.add_node(name, fn, replace=True)``, what a re-run ``%%node`` cell does) so a
        resume from a checkpoint runs the new code as well.

        Raises:
            ValueError: the run has ended, it has no such node, or the node runs a sub-graph.
        """
        if self.done:
            raise ValueError(f"run {self.thread!r} has ended: there is nothing to swap {name!r} into")
        self.plan = self._walker.swap(name, fn)
        self.replaced = (*dict.fromkeys((*self.replaced, name)),)

    def steer(self, text: str) -> None:
        """Queue a user message for the next LLM step to see."""
        if not isinstance(text, str) or not text.strip():  # pyright: ignore[reportUnnecessaryIsInstance]  (users pass anything)
            raise ValueError("steer() needs a non-empty message")
        self._walker.steer(text)

    def cancel(self) -> None:
        """Stop the run: it ends ``aborted`` and its last checkpoint stays consistent."""
        if self._task is not None and not self._task.done():
            self._task.cancel()

    async def next_pause(self, timeout: float | None = None) -> Pause | None:
        """Wait until the run opens a request (returned) or finishes (None)."""
        return await self._walker.asking.pauses.next_pause(self._result is not None, timeout)

    def result(self) -> RunResult:
        """The finished run's result.

        Raises:
            RunStillRunning: the run has not finished; ``await run`` instead.
        """
        if self._result is None:
            if self._task is not None and self._task.done():
                return self._task.result()
            raise RunStillRunning(
                f"run {self.thread!r} of graph {self.plan.name!r} is still running "
                f"(step {self.step}) — use `await run` to wait for its result"
            )
        return self._result

    def __await__(self) -> Generator[Any, None, RunResult]:
        if self._task is None:
            raise RunStillRunning("this run was not started; use g.start(...)")
        # In a kernel, the notebook layer's wait: it fails at once where no click could answer a pause.
        return hooks.awaited(self.viewed, self._wait()).__await__()

    def _display_(self) -> Any:
        # marimo shows a cell's last value in place of what the cell showed: the run's view, not its repr.
        return hooks.displayed(self, lambda: {"text/plain": repr(self)})

    def __repr__(self) -> str:
        status = self._result.outcome if self._result else f"running, step {self.step}"
        return f"<Run {self.plan.name!r} thread={self.thread!r} ({status})>"

    # -- running it (through the functions below) ----------------------------------------

    def _hold_thread(self, *, force: bool = False) -> None:
        persistence = self._walker.persistence
        persistence.take_lease(force=force)
        if self._claim:
            self._claim = False
            try:
                persistence.claim(replace=self._replacing)
            except BaseException:
                persistence.release_lease()
                raise

    async def _execute(self) -> RunResult:
        try:
            try:
                ending = await self._walker.execute()
            except MaxStepsExceeded as exc:
                assert isinstance(exc.result, Ending)  # (the walker's; the caller gets the RunResult)
                exc.result = self._finish(exc.result)
                raise
            return self._finish(ending)
        finally:
            self._walker.persistence.release_lease()

    def _finish(self, ending: Ending) -> RunResult:
        if self._result is not None:
            return self._result
        walker = self._walker
        walker.finish(ending)
        listeners = walker.listeners
        for pause in ending.pauses:
            listeners.emit_if(lambda pause=pause: interrupt(self.thread, walker.step, pause))
        listeners.emit_if(lambda: done(self.thread, walker.step, ending.outcome, ending.reason, ending.hit_max_steps))
        self._result = RunResult(self, ending, walker)
        persistence = walker.persistence
        if ending.outcome in ("done", "denied") and persistence.store is default_checkpointer():
            # Nothing is left to resume: the thread lives as long as someone holds this run.
            weakref.finalize(self, forget, default_checkpointer(), self.thread, persistence.last)
        walker.asking.pauses.wake(None)
        return self._result

    def _remember(self) -> None:
        """A finished run without a store: its checkpoints rebuilt in the default store, so it
        can be forked; the thread lives as long as someone holds this run."""
        walker = self._walker
        if walker.persistence.store is not None or self._result is None:
            return
        result = self._result
        walker.keep_in_memory(Ending(result.outcome, result.reason, pauses=result.pauses))
        weakref.finalize(self, forget, default_checkpointer(), self.thread, walker.persistence.last)

    async def _wait(self) -> RunResult:
        assert self._task is not None
        try:
            return await asyncio.shield(self._task)
        except asyncio.CancelledError:
            if self._task.cancelled():
                # Cancelled before its first step: nothing ran, nothing to undo.
                self._walker.persistence.release_lease()
                return self._result or self._finish(Ending("aborted", "cancelled before it started"))
            raise


def resumed_run(
    plan: Plan,
    thread: str,
    store: Any,
    answer: Any = None,
    *,
    pause: str | None = None,
    force: bool = False,
    given: Given = IN_CODE,
    **options: Any,
) -> Run:
    """A run that continues ``thread`` from its latest checkpoint in ``store``, with ``answer``
    for its open pause (``pause`` names it); it holds the thread's lease from now on.

    Raises:
        ResumeError: nothing to resume, or an answer that does not fit.
        ThreadBusy: another live run holds the thread.
    """
    run = Run(plan, thread=thread, checkpointer=store, resuming=True, **options)
    walker = run._walker
    walker.persistence.take_lease(force=force)  # before reading, so what is read is what the run continues
    try:
        walker.restore(*open_thread(plan, store, thread, answer, pause, given))
    except BaseException:
        walker.persistence.release_lease()
        raise
    return run


def launch(run: Run) -> Run:
    """Schedule ``run`` as a task in the running loop (what ``g.start()`` does); until it ends
    it is one of :func:`live_runs`."""
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        raise RuntimeError(
            "start() needs a running event loop (a notebook cell or async code); "
            "in a plain script use invoke(), or asyncio.run(g.ainvoke(...))"
        ) from None
    run._hold_thread()
    run._task = loop.create_task(run._execute())
    _LIVE[next(_launches)] = run
    return run


async def execute(run: Run) -> RunResult:
    """Run ``run`` to its end in the current task."""
    run._hold_thread()
    return await run._execute()


async def stream(run: Run) -> AsyncIterator[Any]:
    """``run``'s events as they happen, while it runs in a task of its own."""
    queue: asyncio.Queue[Any] = asyncio.Queue()
    run.subscribe(queue.put_nowait)
    task = asyncio.get_running_loop().create_task(execute(run))
    try:
        while True:
            getter = asyncio.ensure_future(queue.get())
            await asyncio.wait({getter, task}, return_when=asyncio.FIRST_COMPLETED)
            if getter.done():
                event = getter.result()
                yield event
                if event.type == "done":
                    break
            else:
                getter.cancel()
                while not queue.empty():
                    yield queue.get_nowait()
                break
        await task
    finally:
        if not task.done():
            task.cancel()


def remember(run: Run) -> None:
    """Keep a finished run that had no store in memory, so it can be forked."""
    run._remember()


class RunView:
    """The engine's run as its live view reads it and clicks in it: a
    :class:`~nbgraph.viewed.ViewedRun`, read at the view's pace, never once per step."""

    __slots__ = ("_run", "_walker")

    def __init__(self, run: Run, walker: Walker) -> None:
        self._run = run
        self._walker = walker

    @property
    def run(self) -> Run:
        return self._run

    @property
    def thread(self) -> str:
        return self._run.thread

    @property
    def plan(self) -> Plan:
        return self._run.plan

    @property
    def step(self) -> int:
        return self._run.step

    @property
    def done(self) -> bool:
        return self._run.done

    @property
    def live(self) -> bool:
        """Under way, and waits for answers where it pauses."""
        return not self._run.done and self._walker.asking.live

    @property
    def recorded(self) -> int:
        """How many step records the thread has, without reading the earlier ones."""
        return self._walker.recorded

    @property
    def history(self) -> list[Step]:
        return list(self._walker.full_history())

    def history_since(self, count: int) -> list[Step]:
        """The step records after the first ``count`` (what a view polls for progress)."""
        walker = self._walker
        earlier = walker.persistence.earlier
        if count >= earlier:
            return walker.history[count - earlier :]
        return walker.full_history()[count:]

    @property
    def running(self) -> tuple[str, ...]:
        """The paths of the nodes being called now (several while branches run together)."""
        return tuple(frame.path for frame in self._walker.under_way)

    @property
    def branches(self) -> list[BranchState]:
        return self._run.branches

    @property
    def upcoming(self) -> str | None:
        """The node running now or next to run; None once the run has ended."""
        if self._run.done:
            return None
        walker = self._walker
        return walker.node or (walker.frames[0].node if walker.frames else None)

    @property
    def pauses(self) -> tuple[Pause, ...]:
        return self._run.pauses

    @property
    def replaced(self) -> tuple[str, ...]:
        return self._run.replaced

    @property
    def checkpointer(self) -> Any:
        return self._run.checkpointer

    @property
    def breakpoints(self) -> Breakpoints:
        return self._run.breakpoints

    @breakpoints.setter
    def breakpoints(self, value: Breakpoints) -> None:
        self._run.breakpoints = value

    def subscribe(self, listener: Callable[[Any], Any], *, steps: bool = True) -> Callable[[], None]:
        return self._run.subscribe(listener, steps=steps)

    def answer(
        self,
        value: Any = None,
        *,
        pause: str | None = None,
        shown: str | None = None,
        reason: str | None = None,
        by: str | None = None,
        via: Via = "view",
    ) -> None:
        """Answer as :meth:`Run.answer` does; recorded as given in the view unless ``via`` says otherwise."""
        self._run.answer(value, pause=pause, shown=shown, reason=reason, by=by, via=via)

    def cancel(self) -> None:
        self._run.cancel()

    def steer(self, text: str) -> None:
        self._run.steer(text)

    def stop_waiting(self, why: str) -> None:
        """Nobody will answer this run: it ends ``interrupted`` at its open pauses (and at any
        it opens later), with ``why`` in its reason, and can be resumed from its checkpoint
        like a durable run. The view calls it when no browser shows the run."""
        self._walker.asking.stop_waiting(why)

    def result(self) -> RunResult:
        return self._run.result()

    def __await__(self) -> Generator[Any, None, RunResult]:
        return self._run.__await__()
