"""People in the loop: asking, waiting for the answer, and what a verdict or a raised budget
decides (a breakpoint's pauses are ``breaks``').

A live run waits for answers in memory; a durable one (or any synchronous call) cannot
wait, so a pause ends it ``interrupted`` with a checkpoint that a ``Resume`` continues
from. Every pause has an id; an answer names it, so a stale or duplicate answer never
lands on the wrong question. What an answer decides is returned, never applied here:
the step that asked applies it.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Literal, NamedTuple, cast

from ..deadlines import due
from ..errors import NoPendingRequest, ResumeError
from ..history import FiredEdge, Frame, Step
from ..names import END, new_id
from ..plan import Hop, NodePlan, Plan
from ..state import to_jsonable
from .ending import Ending
from .limits import Budget, Meter, branch_waits, node_deadline
from .listeners import Listeners, answered, interrupt
from .stops import interrupted

if TYPE_CHECKING:
    from ..answering import Via
    from ..decision import Decision
    from ..pauses import Approval, Change, Pause
    from .context import Context

__all__ = [
    "Asking",
    "PauseRequested",
    "Pauses",
    "Standing",
    "Verdict",
    "approval_pause",
    "budget_pause",
    "by_deadline",
    "gate_pause",
    "check_decider",
    "judge",
    "raised",
    "stored_answer",
]


class PauseRequested(BaseException):
    """Unwinds a node when its run cannot wait for a person (durable mode).

    A BaseException so that a node's own ``except Exception`` cannot swallow it.
    """

    def __init__(self, pause: Pause, *more: Pause) -> None:
        self.pause = pause
        self.pauses = (pause, *more)
        """Every pause the node waits on (tool calls of one model turn ask together)."""
        super().__init__(pause.id)


class Pauses:
    """A run's open requests, the answers it was given (by slot), and who waits for a pause."""

    __slots__ = ("answers", "given", "open", "waiters")

    def __init__(self, answers: Mapping[str, Any] | None = None) -> None:
        self.open: dict[str, tuple[Pause, asyncio.Future[Any]]] = {}
        self.answers: dict[str, Any] = dict(answers or {})
        self.given: dict[str, str] = {}
        """How each pause this run answered live was answered, by pause id, for a person who
        answers it again (a node still running has not recorded it yet)."""
        self.waiters: list[asyncio.Future[Pause | None]] = []

    @property
    def pending(self) -> tuple[Pause, ...]:
        """The pauses open now, oldest first."""
        return tuple(pause for pause, _ in self.open.values())

    def answers_copy(self) -> Mapping[str, Any]:
        return dict(self.answers) if self.answers else _EMPTY

    def record(self, slot: str, answer: Any) -> None:
        """Keep ``answer`` for ``slot`` (what a checkpoint stores; None forgets it)."""
        if answer is None:
            self.answers.pop(slot, None)
        else:
            self.answers[slot] = answer

    def restore(self, answers: Mapping[str, Any]) -> None:
        """Take up the answers a thread's checkpoint kept."""
        self.answers.update(answers)

    def opened(self, pause: Pause, future: asyncio.Future[Any]) -> None:
        """``pause`` is open, its answer to come through ``future``."""
        self.open[pause.id] = (pause, future)

    def closed(self, pause: Pause) -> None:
        self.open.pop(pause.id, None)

    def forget(self, scope: str) -> None:
        """Drop the answers given inside a sub-graph call that has ended: none can be asked
        for again, and a heartbeat's thousandth cycle should not carry the first one's."""
        if self.answers:
            self.answers = {slot: value for slot, value in self.answers.items() if not slot.startswith(scope)}

    def respond(
        self,
        pause_id: str,
        value: Any,
        check_update: Callable[[Mapping[str, Any], str], object],
        *,
        via: Via = "code",
        by: str | None = None,
        reason: str | None = None,
    ) -> bool:
        """Settle the open pause ``pause_id`` with ``value``, recorded as given ``via`` a door
        ``by`` someone; False if it is not open.

        ``check_update(update, node)`` vets an approval's correction while the person
        can still fix it.
        """
        entry = self.open.get(pause_id)
        if entry is None:
            return False
        pause, future = entry
        if future.done():
            return False
        from ..decision import decision_of
        from ..pauses import answered_here, read_answer

        check_decider(pause, by)
        value = read_answer(pause, value)
        if pause.kind == "approval" and value.update:
            check_update(value.update, pause.node)
        decision = decision_of(pause, value, via=via, by=by, reason=reason)
        del self.open[pause_id]
        self.given[pause_id] = answered_here(pause, value)
        future.get_loop().call_soon_threadsafe(_settle, future, (value, decision))
        return True

    def time_out(self, pause_id: str) -> None:
        """The deadline of the open pause ``pause_id`` has passed: it takes the answer its deadline
        gives, recorded as decided by the deadline (nothing happens if it was answered)."""
        entry = self.open.get(pause_id)
        if entry is None or entry[1].done():
            return
        pause, future = entry
        from ..deadlines import BY_DEADLINE, passed_reason
        from ..decision import decision_of
        from ..pauses import answered_here, read_timeout

        value = read_timeout(pause)
        reason = passed_reason(pause.deadline or 0.0)
        decision = decision_of(pause, value, via="deadline", by=BY_DEADLINE, reason=reason)
        del self.open[pause_id]
        self.given[pause_id] = answered_here(pause, value, timed_out=True)
        future.set_result((value, decision))

    def only(self, kind: str, thread: str, finished: bool) -> Pause:
        """The one open request of ``kind``, for ``answer()`` / ``approve()`` / ``deny()``."""
        open_ = self.every(kind, thread, finished)
        if len(open_) > 1:
            raise NoPendingRequest(
                f"run {thread!r} has {len(open_)} open {kind} requests; answer each with "
                "run.answer(value, pause=pause.id)"
            )
        return open_[0]

    def every(self, kind: str, thread: str, finished: bool) -> list[Pause]:
        """The open requests of ``kind`` (at least one)."""
        open_ = [p for p in self.pending if p.kind == kind]
        if not open_:
            raise NoPendingRequest(
                f"run {thread!r} has no open {kind} request"
                + (" (it has finished)" if finished else "; use `await run.next_pause()` to wait for one")
            )
        return open_

    async def next_pause(self, finished: bool, timeout: float | None) -> Pause | None:
        if self.open:
            # A turn of the loop first: a caller waiting in a loop for more pauses to open
            # (``while len(run.pauses) < 2``) then lets the run get on instead of spinning.
            await asyncio.sleep(0)
        if self.open:
            return next(iter(self.open.values()))[0]
        if finished:
            return None
        future: asyncio.Future[Pause | None] = asyncio.get_running_loop().create_future()
        self.waiters.append(future)
        return await asyncio.wait_for(future, timeout)

    def unwind(self) -> None:
        """Nobody will answer: every open wait unwinds its node as a durable run's would."""
        for pause, future in list(self.open.values()):
            future.get_loop().call_soon_threadsafe(_unwind, future, pause)

    def wake(self, pause: Pause | None) -> None:
        """Tell those waiting in :meth:`next_pause` that ``pause`` opened (None: the run ended)."""
        waiters, self.waiters = self.waiters, []
        for waiter in waiters:
            if not waiter.done():
                waiter.set_result(pause)


_EMPTY: Mapping[str, Any] = {}


def _settle(future: asyncio.Future[Any], value: Any) -> None:
    if not future.done():
        future.set_result(value)


def _loop_time(loop: asyncio.AbstractEventLoop, at: float) -> float:
    """The moment ``at`` (seconds since the epoch) on ``loop``'s clock."""
    return loop.time() + (at - time.time())


def _unwind(future: asyncio.Future[Any], pause: Pause) -> None:
    if not future.done():
        future.set_exception(PauseRequested(pause))


def stored_answer(pause: Pause, answer: Any, decision: Decision | None = None) -> Any:
    """``answer`` as the run keeps it at ``pause``'s slot, for a node that asks again (JSON).

    A tool pause's decisions are kept bound to the pause and to what it showed, with their
    record: a node that runs again uses them once, for that pause only, and its step's record
    shows who decided, even when the run that was given them stopped again before the step
    was kept.
    """
    if pause.kind != "tool":
        return answer
    kept: dict[str, Any] = {
        "pause": pause.id,
        "shown": pause.shown,
        "decisions": [decision.model_dump(exclude_none=True) for decision in answer],
    }
    if decision is not None:
        kept["record"] = decision.model_dump(mode="json")
    if pause.deadline is not None:
        kept["deadline"] = pause.deadline  # (part of what it showed: asked again, it shows the same)
    return kept


def check_decider(pause: Pause, by: str | None) -> None:
    """Refuse an answer from someone the pause does not name among who may decide."""
    if not pause.deciders:
        return
    from ..decision import identity

    who = by or identity()
    if who not in pause.deciders:
        raise ResumeError(
            f"{who!r} may not answer the pause at node {pause.path!r}: it waits for "
            f"{' or '.join(map(repr, pause.deciders))}. Nothing was answered"
        )


class Standing(NamedTuple):
    """A standing approval: every later call of ``tool`` (whose arguments ``when`` matches)
    runs without asking, for the rest of the run or the thread, until revoked."""

    id: str
    tool: str
    scope: Literal["run", "thread"]
    by: str
    at: str
    when: Mapping[str, Any] | Callable[[Mapping[str, Any]], bool] | None = None
    """The arguments it covers: None, all; a mapping, calls with those argument values; a
    function of the arguments (for this run only: a checkpoint cannot keep it)."""
    reason: str | None = None

    def covers(self, tool: str, arguments: Mapping[str, Any]) -> bool:
        if tool != self.tool:
            return False
        when = self.when
        if when is None:
            return True
        if isinstance(when, Mapping):
            wanted = cast("Mapping[str, Any]", when)
            return all(arguments.get(key) == value for key, value in wanted.items())
        try:
            return bool(when(arguments))
        except Exception:
            return False  # (a predicate that cannot judge these arguments lets a person decide)

    def kept(self) -> dict[str, Any]:
        """As a checkpoint keeps it (a thread's standing approval)."""
        return {key: value for key, value in self._asdict().items()}


class Asking:
    """How one run asks people: its pauses, whether anyone is there to answer, who hears of it.

    ``live`` runs wait for answers; a run that cannot (durable, or told that nobody will
    answer) unwinds the node that asked, and ends ``interrupted``.
    """

    __slots__ = ("listeners", "live", "meter", "pauses", "standing", "unanswered")

    def __init__(self, listeners: Listeners, meter: Meter, *, live: bool) -> None:
        self.listeners = listeners
        self.meter = meter
        self.pauses = Pauses()
        self.live = live
        self.unanswered: str | None = None
        """Why nobody will answer this run's pauses, once a live run was told so."""
        self.standing: tuple[Standing, ...] = ()
        """The standing approvals in force, oldest first."""

    def allow(
        self,
        tool: str,
        *,
        when: Mapping[str, Any] | Callable[[Mapping[str, Any]], bool] | None = None,
        scope: Literal["run", "thread"] = "run",
        by: str | None = None,
        reason: str | None = None,
        standing_id: str | None = None,
    ) -> Standing:
        """Approve every later call of ``tool`` (matching ``when``) without asking; the approval
        (``standing_id``: the id the decision that set it up recorded)."""
        from ..answering import identity
        from ..decision import now

        if scope not in ("run", "thread"):
            raise ValueError(f"a standing approval holds for the 'run' or the 'thread', not {scope!r}")
        if scope == "thread" and callable(when):
            raise ValueError(
                f"a standing approval of {tool!r} for the thread is kept in its checkpoint, which cannot keep a "
                "function: give when= as the argument values it covers ({'to': 'me@example.com'}), or scope='run'"
            )
        standing = Standing(standing_id or new_id(), tool, scope, by or identity(), now(), when, reason)
        self.standing = (*self.standing, standing)
        return standing

    def revoke(self, standing_id: str) -> Standing:
        """End a standing approval: later calls of its tool ask again."""
        for standing in self.standing:
            if standing.id == standing_id:
                self.standing = tuple(s for s in self.standing if s.id != standing_id)
                return standing
        known = ", ".join(f"{s.id!r} ({s.tool})" for s in self.standing) or "none"
        raise ValueError(f"no standing approval {standing_id!r} in this run; in force: {known}")

    def standing_for(self, tool: str, arguments: Mapping[str, Any]) -> Standing | None:
        """The standing approval that covers a call of ``tool`` with ``arguments``, if any."""
        for standing in self.standing:
            if standing.covers(tool, arguments):
                return standing
        return None

    def kept_standing(self) -> list[dict[str, Any]] | None:
        """The thread's standing approvals, as its checkpoint keeps them."""
        kept = [standing.kept() for standing in self.standing if standing.scope == "thread"]
        return kept or None

    def restore_standing(self, kept: Any) -> None:
        """Take up the standing approvals a thread's checkpoint kept."""
        if isinstance(kept, list):
            items = cast("list[Any]", kept)
            self.standing = tuple(Standing(**item) for item in items if isinstance(item, Mapping))

    async def wait(self, pause: Pause, ctx: Context | None = None, events: list[Any] | None = None) -> Any:
        """The answer to ``pause`` once a person gives it (live); or unwind the node (durable).

        The pause's events go to the node's ``ctx`` (its step's record keeps them), or into
        ``events``, and to the run's listeners.

        Raises:
            PauseRequested: nobody can wait.
        """
        answer, _ = await self.wait_recorded(pause, ctx, events)
        return answer

    async def wait_recorded(
        self, pause: Pause, ctx: Context | None = None, events: list[Any] | None = None
    ) -> tuple[Any, Decision]:
        """As :meth:`wait`, with the record of the answer."""
        if not self.live:
            raise PauseRequested(pause)
        pauses = self.pauses
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Any] = loop.create_future()
        pauses.opened(pause, future)
        # A deadline answers the pause when it passes, unless a person does first.
        timer = (
            None
            if pause.deadline is None
            else loop.call_at(_loop_time(loop, pause.deadline), pauses.time_out, pause.id)
        )
        thread = self.listeners.thread
        self._note(interrupt(thread, pause.step, pause), ctx, events)
        pauses.wake(pause)
        meter = self.meter
        meter.ask()
        t0 = time.perf_counter()
        deadline = node_deadline.get()
        if deadline is not None:
            deadline.hold()  # a person's time never counts against a node's
        try:
            answer, decision = await future
        finally:
            if timer is not None:
                timer.cancel()
            meter.answered()
            waits = branch_waits.get()
            if waits is not None:
                waits.add(time.perf_counter() - t0)
            pauses.closed(pause)
            if deadline is not None:
                deadline.go_on()
        self._note(answered(thread, pause.step, pause, answer, decision), ctx, events)
        return answer, decision

    def _note(self, event: Any, ctx: Context | None, events: list[Any] | None) -> None:
        if ctx is not None:
            ctx.emit(event)
            return
        if events is not None:
            events.append(event)
        self.listeners.emit(event)

    def interrupted(self, *pauses: Pause) -> Ending:
        """The run cannot wait for ``pauses``: it ends ``interrupted`` at them."""
        return interrupted(pauses, thread=self.listeners.thread, live=self.live, unanswered=self.unanswered)

    def stop_waiting(self, why: str) -> None:
        """Nobody will answer: open pauses unwind, and later ones end the run at once."""
        self.live = False
        self.unanswered = why
        self.pauses.unwind()


# -- approvals -------------------------------------------------------------------------


def approval_pause(
    node: NodePlan, record: Step, changes: tuple[Change, ...] = (), next: tuple[str, ...] | None = None
) -> Pause:
    """The pause that asks a person to approve the step ``record`` of ``node``: what its update
    ``changes`` in the state, and where the run goes ``next`` if it is approved (by its
    deadline's time, if it has one)."""
    from ..pauses import Pause

    deadline = node.deadline
    return Pause(
        id=new_id(),
        kind="approval",
        node=node.name,
        step=record.step,
        path=record.path,
        branch=record.branch,
        prompt=f"Approve the result of {node.name!r}?",
        at="after",
        update=None if record.update is None else to_jsonable(record.update, strict=False),
        changes=changes,
        next=next,
        deciders=node.spec.deciders,
        deadline=None if deadline is None else due(deadline),
        on_timeout=None if deadline is None else deadline.then,
    )


def gate_pause(frame: Frame, step: int, values: Mapping[str, Any], node: NodePlan, asked: Pause | None = None) -> Pause:
    """The pause that asks a person to approve ``frame``'s node before it runs as ``step``,
    on the state ``values`` (by its deadline's time, if it has one); ``asked`` is the pause
    that asked it before a resume, whose id and deadline it keeps."""
    from ..pauses import Pause

    where = f" in branch {frame.branch!r}" if frame.branch else ""
    deadline = node.deadline
    at = None
    if deadline is not None:  # (asked again, it keeps the moment it was first given)
        at = asked.deadline if asked is not None and asked.deadline is not None else due(deadline)
    return Pause(
        id=asked.id if asked is not None else new_id(),
        kind="approval",
        node=frame.node,
        step=step,
        path=frame.path,
        branch=frame.branch,
        prompt=f"Let {frame.node!r} run{where}?",
        at="before",
        input=to_jsonable(dict(values), strict=False),
        deciders=node.spec.deciders,
        deadline=at,
        on_timeout=None if deadline is None else deadline.then,
    )


def by_deadline(events: tuple[Any, ...] | list[Any]) -> str:
    """`` by its deadline (no answer by ...)`` when the answer among a pause's ``events`` was its
    deadline's, for the reason a denial ends a run with; else nothing."""
    for event in reversed(events):
        decision = getattr(event, "decision", None)
        if decision is not None and decision.via == "deadline":
            return f" by its deadline ({decision.reason})"
    return ""


class Verdict(NamedTuple):
    """What a person's verdict does to a step: its record (with the person's edit, or the edge
    a denial takes) and where it goes (None: by the edges, or a command the node returned)."""

    record: Step
    hop: Hop | None
    refused: bool = False
    """Denied with nowhere to go (no ``on_deny``): the step's update is dropped and it goes to END;
    a step of one slot ends the run ``denied`` there."""


def judge(node: NodePlan, plan: Plan, record: Step, approval: Approval) -> Verdict:
    """What ``approval`` decides for ``record``, the step of ``node`` in ``plan``.

    A denial drops the step's update, whether the node ran (approval after it) or not (before):
    what a person refused never reaches the state; the run goes to ``on_deny``, or ends.
    """
    spec = node.spec
    if not approval.approved:
        if spec.on_deny is None:
            edge = FiredEdge(spec.name, END, "denied", False)
            return Verdict(record._replace(update=None, edge=edge), Hop(edge, ()), refused=True)
        edge = FiredEdge(spec.name, spec.on_deny, "denied", False)
        return Verdict(record._replace(update=None, edge=edge), plan.hop_of(edge))
    if approval.update:
        return Verdict(record._replace(edit=approval.update), None)
    return Verdict(record, None)


# -- budgets that ask ------------------------------------------------------------------


def budget_pause(
    meter: Meter, frames: tuple[Frame, ...], step: int, over: tuple[str, ...], reruns: Any = None
) -> Pause:
    """The pause that asks a person to raise ``meter``'s budget before ``frames`` run (or, with
    ``reruns``, in the middle of a node whose LLM call found a limit reached)."""
    from ..pauses import BudgetFigures, Pause

    figures = BudgetFigures.model_validate(meter.figures(over, len(frames)))
    used, limits, ahead = figures.used, figures.limits, figures.next
    said = "; ".join(
        f"{key} {_figure(key, used[key])} of {_figure(key, limits[key])} used"
        + (f", the next step may take {_figure(key, ahead[key])}" if ahead.get(key) else "")
        for key in over
    )
    frame = frames[0]
    return Pause(
        id=new_id(),
        kind="budget",
        node=frame.node,
        step=step,
        path=frame.path,
        branch=frame.branch,
        prompt=f"budget about to be exceeded: {said}",
        input_kind="budget",
        budget=figures,
        reruns=reruns,
    )


def _figure(key: str, value: float) -> str:
    return f"{value:.4f}" if key == "cost" else f"{value:g}"


def raised(meter: Meter, pause: Pause, answer: Any) -> Ending | Budget:
    """What a person's answer to budget ``pause`` decides: the limits ``meter`` now holds to
    (raised), or the ending ``stop`` brings."""
    if answer == "stop":
        return Ending("aborted", f"budget exceeded: stopped at the budget pause before {pause.path!r} ({pause.prompt})")
    return meter.raise_to(answer)
