"""Pauses and approvals: asking a person, waiting for the answer, settling a verdict (a
breakpoint's pauses are ``breaks``'; a budget that asks is here).

A live run waits for answers in memory; a durable one (or any synchronous call)
cannot wait, so a pause ends it ``interrupted`` with a checkpoint that ``resume``
continues from. Every pause has an id; an answer names it, so a stale or
duplicate answer never lands on the wrong question.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..errors import InvalidUpdate, NoPendingRequest, ResumeError
from ..history import FiredEdge, Frame, Step
from ..names import END, new_id
from ..plan import Hop, NodePlan
from ..state import to_jsonable
from .ending import Ending
from .limits import BUDGET_SLOT, branch_waits, node_deadline
from .listeners import answered, interrupt, node_exit
from .stops import failure, interrupted

if TYPE_CHECKING:
    from ..pauses import Approval, Pause
    from .context import Context
    from .levels import Level
    from .walker import Walker

__all__ = [
    "ASK_BUDGET",
    "PauseRequested",
    "Pauses",
    "apply_verdict",
    "approve_step",
    "ask_budget",
    "budget_pause",
    "check_storable",
    "raise_budget",
    "wait_for_person",
]


class PauseRequested(BaseException):
    """Unwinds a node when its run cannot wait for a person (durable mode).

    A BaseException so that a node's own ``except Exception`` cannot swallow it.
    """

    def __init__(self, pause: Pause) -> None:
        self.pause = pause
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

    def forget(self, scope: str) -> None:
        """Drop the answers given inside a sub-graph call that has ended: none can be asked
        for again, and a heartbeat's thousandth cycle should not carry the first one's."""
        if self.answers:
            self.answers = {slot: value for slot, value in self.answers.items() if not slot.startswith(scope)}

    def respond(self, pause_id: str, value: Any, check_update: Any) -> bool:
        """Settle the open pause ``pause_id`` with ``value``; False if it is not open.

        ``check_update(update, node)`` vets an approval's correction while the person
        can still fix it.
        """
        entry = self.open.get(pause_id)
        if entry is None:
            return False
        pause, future = entry
        if future.done():
            return False
        from ..pauses import read_answer

        check_storable(value, pause)
        value = read_answer(pause, value)
        if pause.kind == "approval" and value.update:
            check_update(value.update, pause.node)
        del self.open[pause_id]
        from ..pauses import answered_here

        self.given[pause_id] = answered_here(pause, value)
        future.get_loop().call_soon_threadsafe(_settle, future, value)
        return True

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


def check_storable(answer: Any, pause: Pause) -> None:
    """An answer must survive a checkpoint: refuse it now, while the person can give another."""
    try:
        to_jsonable(answer)
    except Exception as exc:
        raise ResumeError(
            f"the answer to {pause.prompt!r} at node {pause.node!r} cannot be stored: {exc}; "
            "answer with plain data (text, numbers, lists, dicts)"
        ) from None


def _settle(future: asyncio.Future[Any], value: Any) -> None:
    if not future.done():
        future.set_result(value)


def _unwind(future: asyncio.Future[Any], pause: Pause) -> None:
    if not future.done():
        future.set_exception(PauseRequested(pause))


async def wait_for_person(walker: Walker, pause: Pause, ctx: Context | None, events: list[Any] | None = None) -> Any:
    """Wait for the answer to ``pause`` (live), or unwind the node (durable)."""
    if not walker.live:
        raise PauseRequested(pause)
    pauses = walker.pauses
    future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
    pauses.open[pause.id] = (pause, future)
    thread = walker.thread
    _note(walker, interrupt(thread, pause.step, pause), ctx, events)
    pauses.wake(pause)
    meter = walker.meter
    meter.ask()
    t0 = time.perf_counter()
    deadline = node_deadline.get()
    if deadline is not None:
        deadline.hold()  # a person's time never counts against a node's
    try:
        answer = await future
    finally:
        meter.answered()
        waits = branch_waits.get()
        if waits is not None:
            waited = time.perf_counter() - t0
            while waits is not None:  # this branch's, and those of the branches it runs inside
                waits[0] += waited
                waits = waits[1]
        pauses.open.pop(pause.id, None)
        if deadline is not None:
            deadline.go_on()
    _note(walker, answered(thread, pause.step, pause, answer), ctx, events)
    return answer


def _note(walker: Walker, event: Any, ctx: Context | None, events: list[Any] | None) -> None:
    if ctx is not None:
        ctx.emit(event)
        return
    if events is not None:
        events.append(event)
    walker.listeners.emit(event)


async def approve_step(
    walker: Walker, node: NodePlan, record: Step, level: Level | None = None, *, in_branch: bool = False
) -> Ending | tuple[Step, Hop | None]:
    """Pause after ``node`` ran until a person approves or denies its step.

    ``record.edge`` holds a ``Goto``/``End`` target the node returned (None: route
    by the edges). Returns the step with its verdict recorded and the hop a denial
    takes, or the ending a denial with nowhere to go brings. A branch's update is
    folded only when all branches have settled, so its edit is left in the record.

    Raises:
        PauseRequested: a durable run cannot wait; the pause carries the step.
    """
    from ..pauses import Pause

    pause = Pause(
        id=new_id(),
        kind="approval",
        node=node.name,
        step=record.step,
        path=record.path,
        branch=record.branch,
        prompt=f"Approve the result of {node.name!r}?",
    )
    if not walker.live:
        raise PauseRequested(pause)
    # The node has finished: say so before the interrupt, so live listeners see
    # node-exit, interrupt, resume, route in that order (the trace has the same).
    walker.listeners.emit_step_if(lambda: node_exit(walker.thread, record))
    events: list[Any] = []
    verdict = await wait_for_person(walker, pause, None, events)
    return apply_verdict(
        walker, node, record._replace(approval_events=tuple(events)), verdict, level, in_branch=in_branch
    )


def apply_verdict(
    walker: Walker,
    node: NodePlan,
    record: Step,
    verdict: Approval,
    level: Level | None = None,
    *,
    in_branch: bool = False,
) -> Ending | tuple[Step, Hop | None]:
    """A person's verdict on a step: its edit, or where a denial goes.

    A branch's step is folded with the other branches' later, so its edit only goes
    into its record, and a denial with nowhere to go drops the branch, not the run.
    """
    spec = node.spec
    level = level or walker.root
    if not verdict.approved:
        if spec.on_deny is None:
            if in_branch:
                # A denied branch leaves nothing: its update is dropped and it goes no further.
                edge = FiredEdge(spec.name, END, "denied", False)
                return record._replace(update=None, edge=edge), Hop(edge, ())
            walker.history.append(record)
            walker.save((record,), (), status="denied", reason=f"approval of {spec.name!r} was denied")
            return Ending("denied", f"approval of {spec.name!r} was denied")
        edge = FiredEdge(spec.name, spec.on_deny, "denied", False)
        return record._replace(edge=edge), level.plan.hop_of(edge)
    if verdict.update:
        if not in_branch:
            try:
                level.values = level.plan.schema.apply(level.values, verdict.update, spec.name)
            except InvalidUpdate as exc:
                return failure(
                    walker.listeners, level, Frame(record.node, record.path, record.branch), exc, record.step
                )
        record = record._replace(edit=verdict.update)
    return record, None


# -- budgets that ask ------------------------------------------------------------------

ASK_BUDGET = Ending("aborted", "the budget is about to be exceeded")
"""What the walker's limit check gives when a budget with ``ask=True`` wants a person."""


def budget_pause(
    walker: Walker, frames: tuple[Frame, ...], step: int, over: tuple[str, ...], reruns: Any = None
) -> Pause:
    """The pause that asks a person to raise the budget before ``frames`` run (or, with
    ``reruns``, in the middle of a node whose LLM call found a limit reached)."""
    from ..pauses import BudgetFigures, Pause

    meter = walker.meter
    _keep_budget(walker, meter.budget)  # a resume elsewhere raises these limits, not its graph's
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


async def ask_budget(walker: Walker, level: Level, frames: tuple[Frame, ...]) -> Ending | None:
    """Ask a person to raise the budget before ``frames`` run: None once raised (the caller
    checks again), or how the run ends (``stop``; or ``interrupted`` when it cannot wait)."""
    over = walker.meter.ahead(len(frames))
    pause = budget_pause(walker, frames, level.steps + 1, over)
    if walker.live:
        try:
            return raise_budget(walker, pause, await wait_for_person(walker, pause, None))
        except PauseRequested:  # nobody will answer (run.stop_waiting): it ends as a durable run's would
            pass
    level.frames = frames  # nothing ran: they run on resume, with the raised budget
    return interrupted(walker, pause)


def raise_budget(walker: Walker, pause: Pause, answer: Any) -> Ending | None:
    """Apply a person's answer to budget ``pause``: raised limits (kept with the thread, so a
    resume elsewhere has them), or ``stop``."""
    if answer == "stop":
        return Ending("aborted", f"budget exceeded: stopped at the budget pause before {pause.path!r} ({pause.prompt})")
    _keep_budget(walker, walker.meter.raise_to(answer))
    return None


def _keep_budget(walker: Walker, budget: Any) -> None:
    walker.pauses.answers[BUDGET_SLOT] = {key: value for key, value in budget._asdict().items() if value is not None}
