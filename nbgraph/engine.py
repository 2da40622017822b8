"""The engine: a single-threaded async walker over a compiled graph.

One async implementation serves every entry point: ``invoke`` drives it without an
event loop when every node is synchronous (the coroutine then never suspends), or
on a loop otherwise; ``start`` runs it as a task in the running loop; ``astream``
feeds its events to an async iterator.

Per step the walker does only what cannot be known in advance: call the node, fold
its update through the reducers, pick the next edge, and record the step. Events
are built only when someone listens; checkpoints only when a checkpointer is set.
"""

from __future__ import annotations

import asyncio
import os
import threading
import time
import traceback
from collections.abc import AsyncIterator, Callable, Generator, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from .checkpoint import Checkpoint, Checkpointer, MemoryCheckpointer
from .errors import (
    InvalidUpdate,
    MaxStepsExceeded,
    NbgraphError,
    NoPendingRequest,
    ResumeError,
    RunFailed,
    RunStillRunning,
    did_you_mean,
)
from .events import (
    Done,
    ErrorEvent,
    Interrupt,
    NodeEnter,
    NodeExit,
    Resume,
    Route,
    RunStart,
    TextDelta,
    _EVENT_ADAPTER,
    to_ndjson,
)
from .graph import END, START, End, Goto
from .history import FiredEdge, Step
from .interrupts import Approval, Pause, PauseRequested, read_approval, read_input

if TYPE_CHECKING:
    from .graph import Compiled, Graph, NodeSpec

__all__ = ["Budget", "Context", "Outcome", "Run", "RunResult", "default_checkpointer"]

Outcome = Literal["done", "failed", "aborted", "interrupted", "denied"]
"""How a run ended.

- ``done``: reached END (or max_steps with return_last / flag).
- ``failed``: a node, condition or router raised, or an update was invalid.
- ``aborted``: cancelled, a budget or the same-node limit was exceeded.
- ``interrupted``: waiting for a person; resume with ``g.resume(thread, answer)``.
- ``denied``: a person denied an approval and the node has no ``on_deny`` target.
"""

_DEFAULT_MEMORY = MemoryCheckpointer()


def default_checkpointer() -> MemoryCheckpointer:
    """The process-wide memory store used by ``start()`` and by resumable ``invoke()`` runs."""
    return _DEFAULT_MEMORY


@dataclass(frozen=True, slots=True)
class Budget:
    """Limits checked before every step and every LLM call; exceeding one aborts the run.

    ``turns`` counts LLM calls, ``tokens`` and ``cost`` what the model reported,
    ``seconds`` the run's own time (waiting for a person never counts).
    """

    turns: int | None = None
    tokens: int | None = None
    cost: float | None = None
    seconds: float | None = None


class _Aborted(BaseException):
    """Unwinds a node when a budget is exhausted (never swallowed by ``except Exception``)."""

    def __init__(self, reason: str) -> None:
        self.reason = reason
        super().__init__(reason)


class Context:
    """What a node gets besides the state: where it is, and ways to talk to the run."""

    __slots__ = ("_run", "node", "step", "visit", "feedback", "tokens", "cost", "turns", "_events", "_asked")

    def __init__(self, run: Run, spec: NodeSpec, step: int, visit: int) -> None:
        self._run = run
        self.node = spec.name
        """The running node's name."""
        self.step = step
        """This step's number (1 for the first node executed)."""
        self.visit = visit
        """How many times this node has run in this run, this time included."""
        self.feedback = spec.feedback
        self.tokens = 0
        self.cost = 0.0
        self.turns = 0
        self._events: list[Any] | None = None
        self._asked = 0

    @property
    def thread(self) -> str:
        return self._run.thread

    @property
    def graph(self) -> str:
        return self._run._compiled.name

    @property
    def model(self) -> Any:
        """The graph's default model (``Graph(model=...)``), or None."""
        return self._run._graph.model

    @property
    def revision_note(self) -> str | None:
        """Feedback for LLM nodes on a revisit (None on a first visit or with feedback=False)."""
        if self.visit < 2 or not self.feedback:
            return None
        return (
            f"Graph node '{self.node}' visit #{self.visit}. Prior visit's output is provided "
            "above; refine your response based on it."
        )

    def emit(self, event: Any = None, /, **fields: Any) -> None:
        """Report an event: an event model, or a type name and its fields.

        ``ctx.emit("text-delta", text="Hel")``; thread, step and node are filled in.
        """
        if event == "text-delta":
            # Streamed text is live only: the step's update carries the whole reply,
            # so a history or checkpoint never holds a model's output twice.
            if self._run._listeners:
                self._run._emit(TextDelta(thread=self._run.thread, step=self.step, node=self.node, **fields))
            return
        if isinstance(event, str):
            event = _EVENT_ADAPTER.validate_python(
                {"type": event, "thread": self._run.thread, "step": self.step, "node": self.node, **fields}
            )
        elif event is None:
            raise TypeError("emit() needs an event model or a type name such as 'text-delta'")
        if self._events is None:
            self._events = []
        self._events.append(event)
        self._run._emit(event)

    def add_usage(self, *, tokens: int = 0, cost: float = 0.0, turns: int = 0) -> None:
        """Count model usage against the run's budget and this step's record."""
        self.tokens += tokens
        self.cost += cost
        self.turns += turns
        run = self._run
        run._tokens += tokens
        run._cost += cost
        run._turns += turns

    def check_budget(self) -> None:
        """Abort the run now if a budget is exhausted (LLM nodes call this before each call)."""
        reason = self._run._over_budget()
        if reason is not None:
            raise _Aborted(reason)

    def take_steering(self) -> list[str]:
        """Messages queued with ``run.steer(text)`` since the last call, oldest first."""
        queued = self._run._steering
        self._run._steering = []
        return queued

    async def request_input(
        self,
        prompt: str,
        options: list[str] | tuple[str, ...] | None = None,
        kind: str = "text",
        slot: str | None = None,
    ) -> Any:
        """Ask a person; returns their answer.

        In a live run this waits (the time does not count against budgets); otherwise
        the run ends ``interrupted`` and, on resume, this node runs again from its
        start and this call returns the stored answer. Answers are stored by
        ``slot`` (default: node, visit and the call's position in the node).
        """
        self._asked += 1
        if slot is None:
            slot = f"{self.node}#{self.visit}.{self._asked}"
        run = self._run
        if slot in run._answers:
            return run._answers[slot]
        pause = Pause(
            id=_new_id(),
            kind="input",
            node=self.node,
            step=self.step,
            prompt=prompt,
            options=tuple(options) if options is not None else None,
            input_kind="choice" if options is not None and kind == "text" else kind,
            slot=slot,
        )
        answer = await run._wait_for_person(pause, self)
        run._answers[slot] = answer
        return answer


@dataclass(frozen=True, slots=True)
class _Outcome:
    outcome: Outcome
    reason: str | None = None
    error: BaseException | None = None
    pending: Pause | None = None
    hit_max_steps: bool = False


class RunResult:
    """How a run ended: ``outcome``, ``reason``, ``state``, ``history`` and more."""

    __slots__ = ("_run", "outcome", "reason", "state", "history", "hit_max_steps", "pending", "thread", "error", "tokens", "cost", "turns")

    def __init__(self, run: Run, end: _Outcome) -> None:
        self._run = run
        self.outcome: Outcome = end.outcome
        self.reason = end.reason
        self.state = run._compiled.schema.output(run._values)
        self.history: tuple[Step, ...] = tuple(run._history)
        self.hit_max_steps = end.hit_max_steps
        self.pending = end.pending
        self.thread = run.thread
        self.error = end.error
        self.tokens = run._tokens
        self.cost = run._cost
        self.turns = run._turns

    @property
    def path(self) -> list[str]:
        """The nodes executed, in order."""
        return [step.node for step in self.history if step.error is None]

    def state_at(self, step: int) -> Any:
        """The state after ``step`` (0 is the input)."""
        return self._run._state_at(step)

    def events(self) -> list[Any]:
        """The run's events, in order, rebuilt from its history."""
        return list(self._run._trace(self))

    def to_ndjson(self) -> str:
        """The event trace as NDJSON."""
        return to_ndjson(self.events())

    def to_dag(self) -> dict[str, Any]:
        """DAG JSON with ``fired`` marked on the edges this run took."""
        from .export import to_dag

        return to_dag(self._run._graph, self.history)

    def __repr__(self) -> str:
        reason = f" ({self.reason})" if self.reason else ""
        return f"<RunResult {self.outcome}{reason}: {len(self.history)} steps, thread {self.thread!r}>"


class Run:
    """One run of a graph. ``g.start()`` returns it as a live handle: await it for the result.

    Answer its pauses with :meth:`answer`, :meth:`approve`, :meth:`deny` or
    :meth:`respond`; stop it with :meth:`cancel`; talk to its LLM nodes with
    :meth:`steer`; watch it with :meth:`subscribe`.
    """

    def __init__(
        self,
        graph: Graph,
        input: Any = None,
        *,
        thread: str | None = None,
        checkpointer: Checkpointer | None = None,
        budget: Budget | None = None,
        live: bool = False,
        durable: bool = False,
        on_event: Callable[[Any], Any] | None = None,
        _restore: Checkpoint | None = None,
    ) -> None:
        self._graph = graph
        self._compiled: Compiled = graph.compile()
        self.thread = thread or _new_id()
        store = checkpointer if checkpointer is not None else graph.checkpointer
        if store is None and live:
            store = _DEFAULT_MEMORY
        self.checkpointer: Checkpointer | None = store
        self.budget = budget if budget is not None else graph.budget
        self._live = live and not durable
        self._listeners: list[Callable[[Any], Any]] = list(graph._listeners)
        if on_event is not None:
            self._listeners.append(on_event)
        # The listeners that also want node-enter, node-exit and route for every step.
        self._step_listeners = list(self._listeners)
        self._history: list[Step] = []
        self._visits: dict[str, int] = {}
        self._answers: dict[str, Any] = {}
        self._pending: dict[str, tuple[Pause, asyncio.Future[Any]]] = {}
        self._pause_waiters: list[asyncio.Future[Pause | None]] = []
        self._steering: list[str] = []
        self._tokens = 0
        self._cost = 0.0
        self._turns = 0
        self._prior_seconds = 0.0
        self._waited = 0.0
        self._t0 = 0.0
        self._last_node: str | None = None
        self._same = 0
        self._node: str | None = None
        self._last_cp: Checkpoint | None = None
        self._start_edge: FiredEdge | None = None
        self._resume_pause: Pause | None = None
        self._resume_answer: Any = None
        self._task: asyncio.Task[RunResult] | None = None
        self._result: RunResult | None = None
        self._lock: Any = None
        if _restore is None:
            self._values: dict[str, Any] = self._compiled.schema.initial(input)
            self._input = self._values
            self._step = 0
            self._next: str | None = None
        else:
            self._restore(_restore)

    # -- construction from a checkpoint ----------------------------------------------

    @classmethod
    def from_checkpoint(
        cls,
        graph: Graph,
        thread: str,
        answer: Any = None,
        *,
        checkpointer: Checkpointer | None = None,
        **options: Any,
    ) -> Run:
        """A run that continues ``thread`` from its latest checkpoint, with ``answer`` for its pause."""
        store = _store_for(graph, checkpointer)
        last = store.get(thread)
        if last is None:
            raise ResumeError(
                f"no checkpoint for thread {thread!r} in {store!r}; pass the checkpointer the run used"
            )
        if last.status in ("done", "denied"):
            raise ResumeError(f"thread {thread!r} already finished ({last.status}); fork it to run again")
        run = cls(graph, thread=thread, checkpointer=store, _restore=last, **options)
        if last.pending is not None:
            if answer is None:
                raise ResumeError(
                    f"thread {thread!r} is waiting for {'an approval' if last.pending.kind == 'approval' else 'input'} "
                    f"at node {last.pending.node!r} ({last.pending.prompt!r}); pass answer="
                )
            run._resume_pause = last.pending
            if last.pending.kind == "input":
                run._answers[last.pending.slot or ""] = read_input(last.pending, answer)
                run._resume_answer = answer
            else:
                run._resume_answer = read_approval(answer)
        return run

    def _restore(self, last: Checkpoint) -> None:
        assert self.checkpointer is not None
        schema = self._compiled.schema
        self._values = schema.decode(last.state)
        self._input = None
        self._step = last.step
        self._next = last.next
        self._answers = dict(last.answers)
        self._last_cp = last
        for checkpoint in self.checkpointer.list(self.thread):
            if checkpoint.step == 0 and checkpoint.next is not None:
                self._start_edge = self._compiled.start_edge(checkpoint.next)
            record = checkpoint.record
            if record is None or checkpoint.step > last.step:
                continue
            self._history.append(record)
            self._visits[record.node] = record.visit
            self._tokens += record.tokens
            self._cost += record.cost
            self._turns += record.turns
            self._prior_seconds += record.duration
            if record.node == self._last_node:
                self._same += 1
            else:
                self._last_node, self._same = record.node, 1

    # -- public handle ----------------------------------------------------------------

    @property
    def done(self) -> bool:
        return self._result is not None

    @property
    def step(self) -> int:
        return self._step

    @property
    def node(self) -> str | None:
        """The node running now, or None between nodes and after the run."""
        return self._node

    @property
    def state(self) -> Any:
        """The state after the latest completed step."""
        return self._compiled.schema.output(self._values)

    @property
    def history(self) -> list[Step]:
        return list(self._history)

    def history_since(self, count: int) -> list[Step]:
        """The step records after the first ``count`` (what a view polls for progress)."""
        return self._history[count:]

    @property
    def upcoming(self) -> str | None:
        """The node running now or next to run; None once the run has ended."""
        return None if self._result is not None else self._node or self._next

    @property
    def pending(self) -> tuple[Pause, ...]:
        """Every open request, oldest first."""
        return tuple(pause for pause, _ in self._pending.values())

    @property
    def graph(self) -> Graph:
        return self._graph

    def subscribe(self, listener: Callable[[Any], Any], *, steps: bool = True) -> Callable[[], None]:
        """Call ``listener(event)`` for each event from now on; returns an unsubscribe function.

        With ``steps=False`` the listener skips the per-step ``node-enter``,
        ``node-exit`` and ``route`` events: an observer that reads progress from
        ``run.history`` at its own pace then costs the run nothing per step.
        """
        self._listeners.append(listener)
        if steps:
            self._step_listeners.append(listener)

        def unsubscribe() -> None:
            for listeners in (self._listeners, self._step_listeners):
                if listener in listeners:
                    listeners.remove(listener)

        return unsubscribe

    def respond(self, pause_id: str, value: Any) -> bool:
        """Answer the pause ``pause_id``. Returns False (and does nothing) if it is not open.

        For an approval, ``value`` is True / False or ``{"approved": ..., "update": {...}}``.

        Raises:
            ResumeError: the pause is open but the answer does not fit it.
        """
        entry = self._pending.get(pause_id)
        if entry is None:
            return False
        pause, future = entry
        if future.done():
            return False
        if pause.kind == "approval":
            value = read_approval(value)
            if value.update:
                # Reject a bad correction now, while the person can still fix it.
                self._compiled.schema.apply(self._values, value.update, pause.node)
        else:
            value = read_input(pause, value)
        del self._pending[pause_id]
        future.get_loop().call_soon_threadsafe(_settle, future, value)
        return True

    def _only(self, kind: str) -> Pause:
        open_ = [p for p in self.pending if p.kind == kind]
        if not open_:
            raise NoPendingRequest(
                f"run {self.thread!r} has no open {kind} request"
                + (" (it has finished)" if self.done else "; use `await run.next_pause()` to wait for one")
            )
        if len(open_) > 1:
            raise NoPendingRequest(
                f"run {self.thread!r} has {len(open_)} open {kind} requests; answer each with "
                "run.respond(pause.id, value)"
            )
        return open_[0]

    def answer(self, value: Any) -> None:
        """Answer the run's one open input request."""
        self.respond(self._only("input").id, value)

    def approve(self, update: Mapping[str, Any] | None = None) -> None:
        """Approve the open approval, optionally correcting the state with ``update``."""
        self.respond(self._only("approval").id, Approval(approved=True, update=dict(update) if update else None))

    def deny(self) -> None:
        """Deny the open approval."""
        self.respond(self._only("approval").id, Approval(approved=False))

    def steer(self, text: str) -> None:
        """Queue a user message for the next LLM step to see."""
        if not isinstance(text, str) or not text.strip():
            raise ValueError("steer() needs a non-empty message")
        self._steering.append(text)

    def cancel(self) -> None:
        """Stop the run: it ends ``aborted`` and its last checkpoint stays consistent."""
        if self._task is not None and not self._task.done():
            self._task.cancel()

    async def next_pause(self, timeout: float | None = None) -> Pause | None:
        """Wait until the run opens a request (returned) or finishes (None)."""
        if self._pending:
            return next(iter(self._pending.values()))[0]
        if self._result is not None:
            return None
        future: asyncio.Future[Pause | None] = asyncio.get_running_loop().create_future()
        self._pause_waiters.append(future)
        return await asyncio.wait_for(future, timeout)

    def result(self) -> RunResult:
        """The finished run's result.

        Raises:
            RunStillRunning: the run has not finished; ``await run`` instead.
        """
        if self._result is None:
            if self._task is not None and self._task.done():
                return self._task.result()
            raise RunStillRunning(
                f"run {self.thread!r} of graph {self._compiled.name!r} is still running "
                f"(step {self._step}) — use `await run` to wait for its result"
            )
        return self._result

    def __await__(self) -> Generator[Any, None, RunResult]:
        if self._task is None:
            raise RunStillRunning("this run was not started; use g.start(...)")
        return self._wait().__await__()

    async def _wait(self) -> RunResult:
        assert self._task is not None
        try:
            return await asyncio.shield(self._task)
        except asyncio.CancelledError:
            if self._task.cancelled():
                # Cancelled before its first step: nothing ran, nothing to undo.
                self._release_lock()
                return self._result or self._end(_Outcome("aborted", "cancelled before it started"))
            raise

    def state_at(self, step: int) -> Any:
        return self._state_at(step)

    def to_dag(self) -> dict[str, Any]:
        from .export import to_dag

        return to_dag(self._graph, tuple(self._history))

    def __repr__(self) -> str:
        status = self._result.outcome if self._result else f"running, step {self._step}"
        return f"<Run {self._compiled.name!r} thread={self.thread!r} ({status})>"

    # -- launching -------------------------------------------------------------------

    def launch(self) -> Run:
        """Schedule the run as a task in the running loop (what ``g.start()`` does)."""
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            raise RuntimeError(
                "start() needs a running event loop (a notebook cell or async code); "
                "in a plain script use invoke(), or asyncio.run(g.ainvoke(...))"
            ) from None
        self._take_lock()
        self._task = loop.create_task(self._execute_locked())
        return self

    async def execute(self) -> RunResult:
        """Run to the end in the current task."""
        self._take_lock()
        return await self._execute_locked()

    def _take_lock(self) -> None:
        if self.checkpointer is not None and self._lock is None:
            lock = self.checkpointer.lock(self.thread)
            lock.__enter__()
            self._lock = lock

    def _release_lock(self) -> None:
        lock, self._lock = self._lock, None
        if lock is not None:
            lock.__exit__(None, None, None)

    async def _execute_locked(self) -> RunResult:
        try:
            return await self._execute()
        finally:
            self._release_lock()

    async def stream(self) -> AsyncIterator[Any]:
        queue: asyncio.Queue[Any] = asyncio.Queue()
        self.subscribe(queue.put_nowait)
        task = asyncio.get_running_loop().create_task(self.execute())
        try:
            while True:
                getter = asyncio.ensure_future(queue.get())
                await asyncio.wait({getter, task}, return_when=asyncio.FIRST_COMPLETED)
                if getter.done():
                    event = getter.result()
                    yield event
                    if isinstance(event, Done):
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

    # -- the walk --------------------------------------------------------------------

    async def _execute(self) -> RunResult:
        compiled = self._compiled
        self._t0 = time.perf_counter()
        restored = self._last_cp is not None
        try:
            self._emit_if(lambda: RunStart(thread=self.thread, step=self._step, graph=compiled.name, resumed=restored))
            if self._resume_pause is not None:
                pause = self._resume_pause
                answer = self._resume_answer
                self._emit_if(lambda: Resume(thread=self.thread, step=self._step, pause_id=pause.id, answer=_jsonable(answer)))
                if pause.kind == "approval":
                    end = self._settle_approval(answer)
                    if end is not None:
                        return self._end(end)
            if self._next is None and not restored:
                edge = compiled.next_edge(START, compiled.schema.view(self._values), None)
                self._start_edge = edge
                self._next = edge.target
                self._emit_step_if(lambda: _route_event(self.thread, 0, edge))
                if self.checkpointer is not None:
                    self._checkpoint(Checkpoint(self.thread, compiled.name, 0, self._values, self._next))
            elif self._next is None:
                return self._end(_Outcome("done", self._last_cp.reason if self._last_cp else None))
            return self._end(await self._walk())
        except MaxStepsExceeded:
            raise
        except NbgraphError as exc:
            return self._end(self._failure(None, exc))

    async def _walk(self) -> _Outcome:
        compiled = self._compiled
        schema = compiled.schema
        nodes = compiled.nodes
        next_edge = compiled.next_edge
        wants_ctx = compiled.wants_ctx
        budget = self.budget
        store = self.checkpointer
        thread = self.thread
        live = self._live
        last_yield = time.perf_counter()
        node_name = self._next
        assert node_name is not None
        while node_name != END:
            self._next = node_name
            if self._step >= compiled.max_steps:
                return self._hit_max_steps(node_name)
            if budget is not None:
                reason = self._over_budget()
                if reason is not None:
                    return _Outcome("aborted", reason)
            if node_name == self._last_node:
                self._same += 1
                if self._same > compiled.max_same_node:
                    return _Outcome(
                        "aborted",
                        f"node {node_name!r} ran {compiled.max_same_node} times in a row "
                        f"(max_same_node={compiled.max_same_node})",
                    )
            else:
                self._last_node = node_name
                self._same = 1
            spec = nodes[node_name]
            visit = self._visits.get(node_name, 0) + 1
            step = self._step + 1
            if live and (now := time.perf_counter()) - last_yield > _LOOP_TURN_INTERVAL:
                # Nodes that never await would hold the kernel's loop for the whole run:
                # give it a turn so the view redraws and a Stop click gets in.
                try:
                    await asyncio.sleep(0)
                except asyncio.CancelledError as stop:
                    return self._stopped(node_name, step, stop)
                last_yield = now
            before = self._values
            ctx = Context(self, spec, step, visit) if node_name in wants_ctx else None
            listening = bool(self._step_listeners)
            if listening:
                self._emit_step(NodeEnter(thread=thread, step=step, node=node_name, visit=visit))
            self._node = node_name
            started = time.time()
            t0 = time.perf_counter()
            waited0 = self._waited
            try:
                out = spec.fn(schema.view(before), ctx) if spec.takes_ctx else spec.fn(schema.view(before))
                if spec.is_async:
                    out = await out
                if out is None:
                    update, target = None, None
                elif type(out) is dict:
                    update, target = out, None
                else:
                    update, target = _read_command(out, node_name, nodes)
                values = schema.apply(before, update, node_name) if update else before
            except PauseRequested as paused:
                return self._interrupt(paused.pause, node_name)
            except _Aborted as aborted:
                return _Outcome("aborted", aborted.reason)
            except (asyncio.CancelledError, KeyboardInterrupt) as stop:
                return self._stopped(node_name, step, stop)
            except Exception as exc:
                self._record_error(node_name, visit, step, started, t0, exc, ctx)
                return self._failure(node_name, exc, step)
            finally:
                self._node = None
            duration = time.perf_counter() - t0 - (self._waited - waited0)
            self._visits[node_name] = visit
            self._step = step
            self._values = values
            record = denied_to = None
            if spec.approval:
                record = _new_step(step, node_name, visit, started, duration, update, None, ctx)
                approval = await self._approval(spec, record, target)
                if isinstance(approval, _Outcome):
                    return approval
                record, denied_to = approval
                values = self._values
            if denied_to is not None:
                edge = FiredEdge(node_name, denied_to, "denied", False)
            elif target is None:
                try:
                    edge = next_edge(node_name, schema.view(values), ctx)
                except NbgraphError as exc:
                    # The step fails as a whole: its update is dropped, the node re-runs on resume.
                    self._step, self._values = step - 1, before
                    self._visits[node_name] = visit - 1
                    self._record_error(node_name, visit, step, started, t0, exc, ctx)
                    return self._failure(node_name, exc, step)
            else:
                edge = FiredEdge(node_name, target, "end" if target == END else "goto", False)
            if record is None:
                record = _new_step(step, node_name, visit, started, duration, update, edge, ctx)
            else:
                record = record._replace(edge=edge)
            self._history.append(record)
            node_name = edge.target
            if store is not None:
                try:
                    self._checkpoint(
                        Checkpoint(thread, compiled.name, step, values, node_name, answers=self._answers_copy(), record=record)
                    )
                except Exception as exc:
                    self._step, self._values = step - 1, before
                    self._visits[spec.name] = visit - 1
                    self._history.pop()
                    self._record_error(spec.name, visit, step, started, t0, exc, ctx)
                    return self._failure(spec.name, _unsaveable(values, spec.name, exc), step)
            if listening:
                if spec.approval:  # node-exit and the verdict were announced while waiting
                    self._emit_step(_route_event(thread, step, edge))
                else:
                    self._emit_step_end(record)
        self._next = END
        return _Outcome("done")

    def _answers_copy(self) -> Mapping[str, Any]:
        return dict(self._answers) if self._answers else _EMPTY

    async def _approval(self, spec: NodeSpec, record: Step, target: str | None) -> _Outcome | tuple[Step, str | None]:
        """Wait for a verdict on a finished step; returns the step and the on_deny target, if taken."""
        pause = Pause(
            id=_new_id(),
            kind="approval",
            node=spec.name,
            step=record.step,
            prompt=f"Approve the result of {spec.name!r}?",
        )
        if not self._live:
            self._history.append(record)
            # `next` keeps a Goto/End target the node returned, for when the run resumes.
            return self._interrupt(pause, target, record=record)
        # The node has finished: say so before the interrupt, so live listeners see
        # node-exit, interrupt, resume, route in that order (the trace has the same).
        self._emit_step_if(lambda: _node_exit_event(self.thread, record))
        events: list[Any] = []
        verdict = await self._wait_for_person(pause, None, events)
        answer_record = record._replace(approval_events=tuple(events))
        return self._apply_verdict(spec, answer_record, verdict)

    def _apply_verdict(self, spec: NodeSpec, record: Step, verdict: Approval) -> _Outcome | tuple[Step, str | None]:
        if not verdict.approved:
            if spec.on_deny is None:
                self._history.append(record)
                if self.checkpointer is not None:
                    self._checkpoint(Checkpoint(self.thread, self._compiled.name, record.step, self._values, None, answers=self._answers_copy(), record=record))
                return _Outcome("denied", f"approval of {spec.name!r} was denied")
            return record, spec.on_deny
        if verdict.update:
            try:
                self._values = self._compiled.schema.apply(self._values, verdict.update, spec.name)
            except InvalidUpdate as exc:
                return self._failure(spec.name, exc, record.step)
            record = record._replace(edit=verdict.update)
        return record, None

    def _settle_approval(self, verdict: Approval) -> _Outcome | None:
        """Finish the approval a resumed run was paused on, then route on."""
        last = self._last_cp
        assert last is not None and last.record is not None
        record = self._history.pop()
        spec = self._compiled.nodes[record.node]
        settled = self._apply_verdict(spec, record, verdict)
        if isinstance(settled, _Outcome):
            return settled
        record, denied_to = settled
        if denied_to is not None:
            edge = FiredEdge(record.node, denied_to, "denied", False)
        elif last.next is not None:
            edge = FiredEdge(record.node, last.next, "end" if last.next == END else "goto", False)
        else:
            ctx = Context(self, spec, record.step, record.visit)  # conditions may read ctx.visit
            edge = self._compiled.next_edge(record.node, self._compiled.schema.view(self._values), ctx)
        record = record._replace(edge=edge)
        self._history.append(record)
        self._next = edge.target
        self._checkpoint(Checkpoint(self.thread, self._compiled.name, record.step, self._values, edge.target, answers=self._answers_copy(), record=record))
        self._emit_step_if(lambda: _route_event(self.thread, record.step, edge))
        return None

    # -- people ----------------------------------------------------------------------

    async def _wait_for_person(self, pause: Pause, ctx: Context | None, events: list[Any] | None = None) -> Any:
        if not self._live:
            raise PauseRequested(pause)
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Any] = loop.create_future()
        self._pending[pause.id] = (pause, future)
        interrupt = Interrupt(thread=self.thread, step=pause.step, pause=pause)
        self._note(interrupt, ctx, events)
        waiters, self._pause_waiters = self._pause_waiters, []
        for waiter in waiters:
            if not waiter.done():
                waiter.set_result(pause)
        t0 = time.perf_counter()
        try:
            answer = await future
        finally:
            self._waited += time.perf_counter() - t0
            self._pending.pop(pause.id, None)
        self._note(Resume(thread=self.thread, step=pause.step, pause_id=pause.id, answer=_jsonable(answer)), ctx, events)
        return answer

    def _note(self, event: Any, ctx: Context | None, events: list[Any] | None) -> None:
        if ctx is not None:
            ctx.emit(event)
        else:
            if events is not None:
                events.append(event)
            self._emit(event)

    def _interrupt(self, pause: Pause, node: str | None, record: Step | None = None) -> _Outcome:
        """Durable pause: save what resume needs and end the run ``interrupted``."""
        compiled = self._compiled
        self._next = node
        if self.checkpointer is not None:
            self._checkpoint(
                Checkpoint(
                    self.thread,
                    compiled.name,
                    self._step,
                    self._values,
                    node,
                    status="interrupted",
                    pending=pause,
                    answers=self._answers_copy(),
                    record=record if record is not None else (self._history[-1] if self._history else None),
                )
            )
        what = "approval of" if pause.kind == "approval" else "input at"
        reason = f"waiting for {what} node {pause.node!r}: {pause.prompt}"
        if not self._live:
            reason += (
                f" — answer with g.resume({self.thread!r}, answer); for live answers use "
                "run = g.start(...) and `await run`"
            )
        return _Outcome("interrupted", reason, pending=pause)

    # -- limits ----------------------------------------------------------------------

    def _over_budget(self) -> str | None:
        budget = self.budget
        if budget is None:
            return None
        if budget.turns is not None and self._turns >= budget.turns:
            return f"budget exceeded: turns {self._turns} >= {budget.turns}"
        if budget.tokens is not None and self._tokens >= budget.tokens:
            return f"budget exceeded: tokens {self._tokens} >= {budget.tokens}"
        if budget.cost is not None and self._cost >= budget.cost:
            return f"budget exceeded: cost {self._cost:.4f} >= {budget.cost}"
        if budget.seconds is not None:
            elapsed = self._prior_seconds + time.perf_counter() - self._t0 - self._waited
            if elapsed >= budget.seconds:
                return f"budget exceeded: seconds {elapsed:.3f} >= {budget.seconds}"
        return None

    def _hit_max_steps(self, node: str) -> _Outcome:
        compiled = self._compiled
        reason = f"max_steps={compiled.max_steps} reached before END (next node: {node!r})"
        if compiled.on_max_steps == "raise":
            self._next = node
            outcome = _Outcome("aborted", reason)
            result = self._end(outcome)
            raise MaxStepsExceeded(compiled.name, compiled.max_steps, node, result)
        self._next = node
        return _Outcome("done", reason, hit_max_steps=compiled.on_max_steps == "flag")

    # -- failures --------------------------------------------------------------------

    def _failure(self, node: str | None, exc: BaseException, step: int | None = None) -> _Outcome:
        if node is not None:
            self._next = node
        if isinstance(exc, RunFailed):
            reason = exc.reason
        elif isinstance(exc, NbgraphError):
            reason = str(exc)
        else:
            where = f"node {node!r} failed at step {step}" if node else "the run failed"
            reason = f"{where}: {type(exc).__name__}: {exc}"
        self._emit_if(lambda: ErrorEvent(thread=self.thread, step=step or self._step, node=node, error=reason, error_type=type(exc).__name__))
        if self.checkpointer is not None and self._last_cp is not None:
            self._checkpoint(self._last_cp.with_status("failed", reason=reason, next=node or self._last_cp.next, answers=self._answers_copy()))
        return _Outcome("failed", reason, error=exc)

    def _record_error(self, node: str, visit: int, step: int, started: float, t0: float, exc: BaseException, ctx: Context | None) -> None:
        text = "".join(traceback.format_exception_only(type(exc), exc)).strip()
        record = _new_step(step, node, visit, started, time.perf_counter() - t0, None, None, ctx)
        self._history.append(record._replace(error=text))

    def _stopped(self, node: str, step: int, stop: BaseException) -> _Outcome:
        self._next = node
        why = "cancelled" if isinstance(stop, asyncio.CancelledError) else "interrupted (KeyboardInterrupt)"
        reason = f"{why} during node {node!r} at step {step}"
        if self.checkpointer is not None and self._last_cp is not None:
            self._checkpoint(self._last_cp.with_status("aborted", reason=reason, next=node, answers=self._answers_copy()))
        return _Outcome("aborted", reason)

    # -- bookkeeping -----------------------------------------------------------------

    def _checkpoint(self, checkpoint: Checkpoint) -> None:
        assert self.checkpointer is not None
        self.checkpointer.put(self.thread, checkpoint)
        self._last_cp = checkpoint

    def _end(self, end: _Outcome) -> RunResult:
        if self._result is not None:
            return self._result
        store = self.checkpointer
        if store is None and end.outcome not in ("done", "denied"):
            self._keep_for_resume(end)
        elif store is not None and self._last_cp is not None and end.outcome in ("done", "denied"):
            self._checkpoint(self._last_cp.with_status(end.outcome, reason=end.reason))
        elif store is not None and self._last_cp is not None and end.outcome == "aborted" and self._last_cp.status == "running":
            self._checkpoint(self._last_cp.with_status("aborted", reason=end.reason, next=self._next))
        if end.pending is not None:
            self._emit_if(lambda: Interrupt(thread=self.thread, step=self._step, pause=end.pending))
        self._emit_if(lambda: Done(thread=self.thread, step=self._step, outcome=end.outcome, reason=end.reason, hit_max_steps=end.hit_max_steps))
        self._result = RunResult(self, end)
        for waiter in self._pause_waiters:
            if not waiter.done():
                waiter.set_result(None)
        self._pause_waiters = []
        return self._result

    def _keep_for_resume(self, end: _Outcome) -> None:
        """A run without a checkpointer that stopped short: keep what ``g.resume`` needs.

        The fast path takes no per-step snapshots, so the states are rebuilt here by
        replaying the recorded updates; this happens once, only for such runs.
        """
        store = _DEFAULT_MEMORY
        self.checkpointer = store
        name = self._compiled.name
        values = self._input
        store.put(self.thread, Checkpoint(self.thread, name, 0, values, self._start_edge.target if self._start_edge else self._next))
        schema = self._compiled.schema
        last: Checkpoint | None = None
        for record in self._history:
            if record.error is not None:
                continue
            values = _replay_step(schema, values, record)
            last = Checkpoint(self.thread, name, record.step, values, record.edge.target if record.edge else None, record=record)
            store.put(self.thread, last)
        final = store.get(self.thread)
        assert final is not None
        status = "interrupted" if end.outcome == "interrupted" else end.outcome
        self._last_cp = final.with_status(
            status,  # type: ignore[arg-type]
            reason=end.reason,
            next=self._next,
            pending=end.pending,
            answers=self._answers_copy(),
        )
        store.put(self.thread, self._last_cp)

    def _replay(self, step: int) -> dict[str, Any]:
        if self._input is None:
            raise ValueError("this run was resumed from a checkpoint; read earlier states from its checkpointer")
        values = self._input
        schema = self._compiled.schema
        for record in self._history:
            if record.step > step:
                break
            if record.error is None:
                values = _replay_step(schema, values, record)
        return values

    def _state_at(self, step: int) -> Any:
        if step < 0 or step > self._step:
            raise ValueError(f"step must be between 0 and {self._step}, got {step}")
        schema = self._compiled.schema
        if self.checkpointer is not None:
            checkpoint = self.checkpointer.get(self.thread, step)
            if checkpoint is not None:
                return schema.output(schema.decode(checkpoint.state))
        return schema.output(self._replay(step))

    # -- events ----------------------------------------------------------------------

    def _emit(self, event: Any) -> None:
        _call_listeners(self._listeners, event)

    def _emit_if(self, build: Callable[[], Any]) -> None:
        if self._listeners:
            self._emit(build())

    def _emit_step(self, event: Any) -> None:
        _call_listeners(self._step_listeners, event)

    def _emit_step_if(self, build: Callable[[], Any]) -> None:
        if self._step_listeners:
            self._emit_step(build())

    def _emit_step_end(self, record: Step) -> None:
        for event in _step_end_events(self.thread, record):
            self._emit_step(event)

    def _trace(self, result: RunResult) -> Iterator[Any]:
        thread = self.thread
        yield RunStart(thread=thread, step=0, graph=self._compiled.name)
        if self._start_edge is not None:
            yield _route_event(thread, 0, self._start_edge)
        for record in result.history:
            yield NodeEnter(thread=thread, step=record.step, node=record.node, visit=record.visit)
            yield from record.events
            if record.error is not None:
                continue
            yield from _step_end_events(thread, record)
        if result.outcome == "failed":
            last = result.history[-1] if result.history and result.history[-1].error else None
            yield ErrorEvent(thread=thread, step=last.step if last else self._step, node=last.node if last else None, error=result.reason or "", error_type=type(result.error).__name__)
        if result.pending is not None:
            yield Interrupt(thread=thread, step=self._step, pause=result.pending)
        yield Done(thread=thread, step=self._step, outcome=result.outcome, reason=result.reason, hit_max_steps=result.hit_max_steps)


_EMPTY: Mapping[str, Any] = {}
_LOOP_TURN_INTERVAL = 0.02  # seconds a live run may hold the event loop between steps


def _new_id() -> str:
    # As unique as uuid4().hex, at a fraction of the cost (it runs once per invoke).
    return os.urandom(16).hex()


def _call_listeners(listeners: list[Callable[[Any], Any]], event: Any) -> None:
    for listener in tuple(listeners):
        try:
            listener(event)
        except Exception as exc:  # a broken observer must not break the run
            import warnings

            warnings.warn(f"event listener {listener!r} raised {type(exc).__name__}: {exc}", RuntimeWarning, stacklevel=3)


def _settle(future: asyncio.Future[Any], value: Any) -> None:
    if not future.done():
        future.set_result(value)


def _new_step(
    step: int, node: str, visit: int, started: float, duration: float,
    update: Mapping[str, Any] | None, edge: FiredEdge | None, ctx: Context | None,
) -> Step:
    if ctx is None or not (ctx.tokens or ctx.cost or ctx.turns or ctx._events):
        return Step(step, node, visit, started, duration, update, edge)
    return Step(
        step, node, visit, started, duration, update, edge,
        tokens=ctx.tokens, cost=ctx.cost, turns=ctx.turns, events=tuple(ctx._events or ()),
    )


def _replay_step(schema: Any, values: dict[str, Any], record: Step) -> dict[str, Any]:
    if record.update:
        values = schema.apply(values, record.update, record.node)
    if record.edit:
        values = schema.apply(values, record.edit, record.node)
    return values


def _node_exit_event(thread: str, record: Step) -> NodeExit:
    return NodeExit(
        thread=thread,
        step=record.step,
        node=record.node,
        duration=record.duration,
        update=_jsonable(record.update),
        tokens=record.tokens,
        cost=record.cost,
    )


def _step_end_events(thread: str, record: Step) -> Iterator[Any]:
    yield _node_exit_event(thread, record)
    yield from record.approval_events
    if record.edge is not None:
        yield _route_event(thread, record.step, record.edge)


def _route_event(thread: str, step: int, edge: FiredEdge) -> Route:
    return Route(
        thread=thread, step=step, source=edge.source, target=edge.target,
        label=edge.label, unconditional=edge.unconditional,
    )


def _unsaveable(values: Mapping[str, Any], node: str, exc: Exception) -> InvalidUpdate:
    """Name the state field that could not be written to the checkpoint."""
    import pydantic_core

    for field, value in values.items():
        try:
            pydantic_core.to_json(value)
        except Exception as field_exc:
            return InvalidUpdate(
                f"the state after node {node!r} cannot be checkpointed: field {field!r} holds "
                f"{type(value).__name__}, which is not JSON-serializable ({field_exc}); store plain "
                "data or pydantic models in the state",
                node=node,
                field=field,
            )
    return InvalidUpdate(f"the checkpoint after node {node!r} could not be saved: {exc}", node=node)


def _jsonable(value: Any) -> Any:
    import pydantic_core

    return pydantic_core.to_jsonable_python(value, serialize_unknown=True)


def _read_command(out: Any, node: str, nodes: Mapping[str, Any]) -> tuple[Mapping[str, Any] | None, str | None]:
    if isinstance(out, Mapping):
        return out, None
    if isinstance(out, Goto):
        if out.node != END and out.node not in nodes:
            raise InvalidUpdate(
                f"node {node!r} returned Goto({out.node!r}), which is not a node of the graph"
                f"{did_you_mean(out.node, nodes)}",
                node=node,
            )
        return out.update, out.node
    if isinstance(out, End):
        return out.update, END
    raise InvalidUpdate(
        f"node {node!r} returned {type(out).__name__} {out!r:.80}; a node must return a dict of "
        "state updates, None, Goto(node, update=...) or End(update=...)",
        node=node,
    )


def _store_for(graph: Graph, checkpointer: Checkpointer | None) -> Checkpointer:
    if checkpointer is not None:
        return checkpointer
    if graph.checkpointer is not None:
        return graph.checkpointer
    return _DEFAULT_MEMORY


# -- synchronous entry points ------------------------------------------------------------


def _run_sync(make_run: Callable[[], Run]) -> RunResult:
    run = make_run()
    coro = run.execute()
    if run._compiled.all_sync:
        # No node can suspend, so the coroutine finishes on its first send: no loop needed.
        try:
            coro.send(None)
        except StopIteration as stop:
            return stop.value
        coro.close()
        raise RuntimeError("internal error: a synchronous graph suspended")
    return _RUNNER.run(coro)


class _SyncRunner:
    """The event loop that synchronous calls with async nodes run on: one loop, in a
    daemon thread, for the whole process.

    A fresh loop per call (``asyncio.run``) would strand whatever a node keeps bound
    to its loop, such as a model client's pooled HTTP connections, and the next call
    would fail with "Event loop is closed". A thread of its own also serves inside a
    notebook cell, where the kernel's loop is already running: the kernel's loop is
    left untouched (patching it re-entrant with nest-asyncio2 also works, but patches
    asyncio for the whole process with no undo). Nothing run here waits for a person,
    so blocking the caller meanwhile cannot deadlock on a click.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None

    def run(self, coro: Any) -> Any:
        if threading.current_thread() is self._thread:
            # invoke() from a node that itself runs here: this loop is busy with it.
            return _run_on_own_loop(coro)
        loop = self._start()
        started: list[asyncio.Task[Any]] = []

        async def tracked() -> Any:
            started.append(asyncio.current_task())  # type: ignore[arg-type]
            return await coro

        future = asyncio.run_coroutine_threadsafe(tracked(), loop)
        try:
            return future.result()
        except KeyboardInterrupt:
            # A kernel interrupt: cancel the run so it ends `aborted` with its checkpoint intact.
            if started:
                loop.call_soon_threadsafe(started[0].cancel)
                return future.result()
            future.cancel()
            coro.close()
            raise

    def _start(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._loop is None:
                loop = asyncio.new_event_loop()
                thread = threading.Thread(target=loop.run_forever, name="nbgraph-sync-runner", daemon=True)
                thread.start()
                self._loop, self._thread = loop, thread
            return self._loop


_RUNNER = _SyncRunner()


def _run_on_own_loop(coro: Any) -> Any:
    """Run ``coro`` on a fresh loop in a worker thread, and wait for it."""
    box: dict[str, Any] = {}

    def work() -> None:
        try:
            box["result"] = asyncio.run(coro)
        except BaseException as exc:  # handed to the caller's thread below
            box["error"] = exc

    worker = threading.Thread(target=work, name="nbgraph-invoke", daemon=True)
    worker.start()
    worker.join()
    if "error" in box:
        raise box["error"]
    return box["result"]


def invoke(graph: Graph, input: Any = None, **options: Any) -> RunResult:
    """Run ``graph`` to the end, synchronously; see :meth:`Graph.invoke`.

    Works in scripts and inside a running notebook loop. Never waits for a person:
    a pause ends the run ``interrupted``, resumable with ``g.resume``.
    """
    options.pop("live", None)
    return _run_sync(lambda: Run(graph, input, **options))


def invoke_resume(graph: Graph, thread: str, answer: Any = None, **options: Any) -> RunResult:
    options.pop("live", None)
    return _run_sync(lambda: Run.from_checkpoint(graph, thread, answer, **options))


def fork(
    graph: Graph,
    run_or_thread: Any,
    *,
    step: int,
    update: Mapping[str, Any] | None = None,
    checkpointer: Checkpointer | None = None,
    **options: Any,
) -> RunResult:
    """Copy a thread's checkpoints up to ``step`` into a new thread and run on from there."""
    if isinstance(run_or_thread, str):
        thread = run_or_thread
        store = _store_for(graph, checkpointer)
    else:
        thread = run_or_thread.thread
        run_obj = run_or_thread if isinstance(run_or_thread, Run) else run_or_thread._run
        store = checkpointer or run_obj.checkpointer or _store_for(graph, None)
    checkpoints = [c for c in store.list(thread) if c.step <= step]
    if not checkpoints or checkpoints[-1].step != step:
        raise ResumeError(f"thread {thread!r} has no checkpoint for step {step} in {store!r}")
    new_thread = options.pop("thread", None) or _new_id()
    compiled = graph.compile()
    schema = compiled.schema
    for checkpoint in checkpoints[:-1]:
        store.put(new_thread, checkpoint._replace(thread=new_thread, status="running", pending=None))
    base = checkpoints[-1]
    values = schema.decode(base.state)
    record = base.record
    if update:
        values = schema.apply(values, update, record.node if record else START)
        if record is not None:
            record = record._replace(edit={**(record.edit or {}), **update})
    source = record.node if record is not None else START
    edge = compiled.next_edge(source, schema.view(values), None)
    if record is not None:
        record = record._replace(edge=edge)
    store.put(new_thread, Checkpoint(new_thread, compiled.name, step, values, edge.target, answers=base.answers, record=record))
    options.pop("live", None)
    return _run_sync(lambda: Run.from_checkpoint(graph, new_thread, checkpointer=store, **options))
