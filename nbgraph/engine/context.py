"""The node context: what a node (or a routing condition) gets besides the state."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple, cast

from ..answering import deciders_of
from ..names import new_id
from .ending import Ending
from .limits import Aborted, Meter
from .listeners import Listeners, answered, interrupt, text_delta

if TYPE_CHECKING:
    from ..deadlines import Deadline
    from ..decision import Decision
    from ..pauses import Pause, ToolCallAsk, ToolDecision
    from ..plan import Plan
    from .people import Asking
    from .resumption import Resumption

__all__ = ["Context", "RunDoor"]


class RunDoor:
    """What a node can reach of the run it runs in: its listeners, its meter, the people it
    asks, what a resume brought, the messages steered to it and what closes as it ends.
    One per run; every node's :class:`Context` goes through it."""

    __slots__ = ("asking", "closers", "listeners", "meter", "resumption", "steering")

    def __init__(self, listeners: Listeners, meter: Meter, asking: Asking, resumption: Resumption) -> None:
        self.listeners = listeners
        self.meter = meter
        self.asking = asking
        self.resumption = resumption
        self.steering: list[str] = []
        """Messages queued with ``run.steer(text)`` for the next LLM step."""
        self.closers: list[Callable[[], Awaitable[object]]] = []
        """What nodes opened for the whole run (``ctx.at_run_end``), closed as the run ends."""

    def steer(self, text: str) -> None:
        self.steering.append(text)

    def take_steering(self) -> list[str]:
        """The messages steered since the last take, oldest first."""
        queued, self.steering = self.steering, []
        return queued

    def on_close(self, close: Callable[[], Awaitable[object]]) -> None:
        self.closers.append(close)

    async def close(self) -> None:
        """Close what nodes opened for the whole run, the last opened first."""
        closers = self.closers
        while closers:
            await closers.pop()()


class Context:
    """Where a node is, and ways to talk to its run.

    Routing conditions get one too: ``g.route(...)`` and routing out of START or
    after a resumed approval build a context whose ``visit`` is the node's latest.
    A context made outside a run (``g.route``) can be read but not asked to wait
    for a person.
    """

    __slots__ = (
        "_asked",
        "_used",
        "_door",
        "_events",
        "_plan",
        "_scope",
        "branch",
        "cost",
        "node",
        "path",
        "step",
        "tokens",
        "turns",
        "visit",
    )

    def __init__(
        self,
        door: RunDoor | None,
        plan: Plan,
        node: str,
        step: int,
        visit: int,
        path: str | None = None,
        branch: str | None = None,
        scope: str = "",
        held: tuple[Any, ...] = (),
    ) -> None:
        self._door = door
        self._plan = plan
        self.node = node
        """The running node's name."""
        self.step = step
        """This step's number (1 for the first node executed)."""
        self.visit = visit
        """How many times this node has run in this run, this time included."""
        self.path = path if path is not None else node
        """Where the node is: its name, or ``outer/inner/node`` inside sub-graphs."""
        self.branch = branch
        """The parallel branch the node runs in (None on the main line)."""
        self._scope = scope
        self.tokens = 0
        self.cost = 0.0
        self.turns = 0
        self._events: list[Any] | None = list(held) if held else None
        """What the node emitted, after the events of a breakpoint's pause before it (``held``)."""
        self._asked = 0
        self._used: set[str] = set()
        """The pauses whose kept decisions this call of the node has applied: each is used once."""

    @property
    def emitted(self) -> tuple[Any, ...]:
        """The events this step reported so far, in order (its record keeps them)."""
        return tuple(self._events) if self._events else ()

    @property
    def thread(self) -> str | None:
        """The run's thread id (None outside a run)."""
        return self._door.listeners.thread if self._door is not None else None

    @property
    def graph(self) -> str:
        return self._plan.name

    @property
    def model(self) -> Any:
        """The graph's default model (``Graph(model=...)``), or None."""
        return self._plan.model

    @property
    def feedback(self) -> bool:
        """Whether LLM nodes get revision feedback on revisits (``feedback=False`` turns it off)."""
        node = self._plan.nodes.get(self.node)
        return node.spec.feedback if node is not None else True

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

        ``ctx.emit("text-delta", text="Hel")``; thread, step, node, path and branch
        are filled in.
        """
        door = self._door
        if door is None:
            return
        listeners = door.listeners
        if event == "text-delta":
            # Streamed text is live only: the step's update carries the whole reply,
            # so a history or checkpoint never holds a model's output twice.
            if listeners.all:
                listeners.emit(text_delta(listeners.thread, self.step, self.node, self.path, self.branch, **fields))
            return
        if isinstance(event, str):
            from ..events import EVENT_TYPES

            cls = EVENT_TYPES.get(event)
            if cls is None:
                raise ValueError(f"unknown event type {event!r}; one of: {', '.join(EVENT_TYPES)}")
            # Validated: the fields come from the node, not from the engine.
            event = cls(
                thread=listeners.thread, step=self.step, node=self.node, path=self.path, branch=self.branch, **fields
            )
        elif event is None:
            raise TypeError("emit() needs an event model or a type name such as 'text-delta'")
        if self._events is None:
            self._events = []
        self._events.append(event)
        listeners.emit(event)

    def add_usage(self, *, tokens: int = 0, cost: float = 0.0, turns: int = 0) -> None:
        """Count model usage against the run's budget and this step's record."""
        self.tokens += tokens
        self.cost += cost
        self.turns += turns
        if self._door is not None:
            self._door.meter.add(tokens, cost, turns)

    def check_budget(self) -> None:
        """Abort the run now if a budget is exhausted (LLM nodes call this before each call)."""
        if self._door is not None:
            reason = self._door.meter.over()
            if reason is not None:
                raise Aborted(reason)

    def rerun(self) -> Any:
        """What a resume would run again to come back to where this node is now (a :class:`~nbgraph.pauses.Rerun`)."""
        from ..pauses import Rerun

        tools = tuple(event.name for event in self._events or () if event.type == "tool-call")
        return Rerun(path=self.path, model_calls=self.turns, tool_calls=tools, answered=max(self._asked - 1, 0))

    async def within_budget(self) -> None:
        """Before an LLM call: abort the run if a budget is used up, or, when the budget asks
        (``Budget(ask=True)``), wait for a person to raise it (a durable run ends
        ``interrupted`` and this node runs again from its start on resume)."""
        door = self._door
        if door is None or door.meter.budget is None:
            return
        meter = door.meter
        if meter.budget is not None and meter.budget.ask:
            from ..history import Frame
            from .people import budget_pause, raised

            while over := meter.ahead(0):
                frame = Frame(self.node, self.path, self.branch)
                pause = budget_pause(meter, (frame,), self.step, over, reruns=self.rerun())
                meter.keep()
                decided = raised(meter, pause, await door.asking.wait(pause, self))
                if isinstance(decided, Ending):
                    raise Aborted(decided.reason or "stopped at a budget pause")
        self.check_budget()

    def at_run_end(self, close: Callable[[], Awaitable[object]]) -> None:
        """Have the run ``await close()`` as it ends, however it ends (done, failed, aborted,
        interrupted): for what a node opens once and keeps for the rest of its run, such as a
        connection. The last one registered is closed first; ``close`` must not raise."""
        door = self._door
        if door is None:
            raise RuntimeError(f"at_run_end() needs a running node; {self.node!r} is being routed outside a run")
        door.on_close(close)

    def take_steering(self) -> list[str]:
        """Messages queued with ``run.steer(text)`` since the last call, oldest first."""
        door = self._door
        if door is None:
            return []
        return door.take_steering()

    async def request_input(
        self,
        prompt: Any,
        options: list[str] | tuple[str, ...] | None = None,
        kind: str = "text",
        slot: str | None = None,
        *,
        deadline: Deadline | None = None,
        deciders: str | Sequence[str] | None = None,
    ) -> Any:
        """Ask a person; returns their answer.

        ``prompt`` is the question: text, or any JSON value (a dict with the choices, say),
        which the pause keeps as ``question`` and shows as JSON. In a live run this waits
        (the time does not count against budgets); otherwise the run ends ``interrupted``
        and, on resume, this node runs again from its start and this call returns the
        stored answer. Answers are stored by ``slot`` (default: node, visit and the call's
        position in the node), within the call of the sub-graph the node is in: each call
        of a sub-graph asks afresh.

        ``deciders`` names who may answer (default: anyone).
        ``deadline=Deadline(seconds, then=answer)`` bounds the wait: once it has passed, the
        question takes ``answer`` (recorded as decided by the deadline), live or on the
        next resume.
        """
        asked = self._asking("request_input", prompt, options, kind, slot, deadline, deciders)
        if not isinstance(asked, _Asked):
            return asked.answer
        asking = asked.door.asking
        answer = await asking.wait(asked.pause, self)
        asking.pauses.record(asked.pause.slot or "", answer)
        return answer

    def ask(
        self,
        prompt: Any,
        options: list[str] | tuple[str, ...] | None = None,
        kind: str = "text",
        slot: str | None = None,
        *,
        deadline: Deadline | None = None,
        deciders: str | Sequence[str] | None = None,
    ) -> Any:
        """Ask a person from a synchronous node (LangGraph's ``interrupt(value)``); returns
        their answer once there is one.

        Until then the node stops here, and it runs again from its start with the answer:
        in a live run as soon as the answer is given, in a durable one on resume. Whatever
        the node did before asking is done again, so ask first. Otherwise as
        :meth:`request_input`.
        """
        asked = self._asking("ask", prompt, options, kind, slot, deadline, deciders)
        if not isinstance(asked, _Asked):
            return asked.answer
        from .people import PauseRequested

        raise PauseRequested(asked.pause)

    async def review_tool_calls(
        self, calls: Sequence[ToolCallAsk], *, deadlines: Mapping[str, Deadline] | None = None
    ) -> list[tuple[ToolDecision, ...]]:
        """Ask a person to decide on each of ``calls`` before any runs; their decisions, in order.

        Every call gets its own pause (kind ``tool``), all open together and answered in any
        order. A live run waits for all of them; a run that cannot wait ends ``interrupted``
        at those not answered yet, and on resume this node runs again from its start and
        this call returns the decisions given (what the node did before asking must be kept
        with :meth:`keep` to be taken up again rather than done twice). ``deadlines`` bound
        the wait for calls of the tools they name (:class:`~nbgraph.Deadline`: rejected when
        it passes, unless its ``then`` says otherwise).
        """
        door = self._door
        if door is None:
            raise RuntimeError(f"review_tool_calls() needs a running node; {self.node!r} is being routed outside a run")
        from ..deadlines import tool_deadline
        from ..decision import Decision, decision_of
        from ..pauses import Pause, ToolDecision, read_tool_decisions
        from .people import stored_answer

        pauses = door.asking.pauses
        answers = pauses.answers
        resumption = door.resumption
        thread = door.listeners.thread
        base = self._slot_base()
        decided: list[tuple[ToolDecision, ...] | None] = []
        asked: list[Pause] = []
        waiting: list[int] = []  # the places in ``decided`` the asked pauses fill
        slots: set[str] = set()
        for call in calls:
            shown: dict[str, Any] = {
                "kind": "tool",
                "node": self.node,
                "step": self.step,
                "path": self.path,
                "branch": self.branch,
                "prompt": f"Run {call.name}({_arguments_shown(call.arguments)})?",
                "tool_calls": (call,),
                "deciders": call.deciders,
            }
            pause = Pause(id=new_id(), **shown)
            # The slot names the call and what it shows, never the call id alone: a provider
            # may send the same id again in a later round, or in the same reply.
            slot = f"{base}.tool.{call.call_id}.{pause.shown[:12]}"
            while slot in slots:
                slot += "+"
            slots.add(slot)
            before = resumption.asked(slot)
            open_id = before.id if before is not None else None
            given = deadlines.get(call.name) if deadlines else None
            deadline = None if given is None else tool_deadline(given, f"tool {call.name!r} in node {self.path!r}")
            if deadline is not None:
                # It keeps the moment it was first given: asked again, it shows the same.
                at = before.deadline if before is not None else None
                stored = answers.get(slot)
                if at is None and isinstance(stored, Mapping):
                    at = cast("Mapping[str, Any]", stored).get("deadline")
                pause = Pause(id=pause.id, deadline=_due(deadline, at), on_timeout=deadline.then, **shown)
            pause = pause.model_copy(update={"id": open_id or pause.id, "slot": slot})
            kept = self._kept_decision(answers.get(slot), pause, open_id)
            if kept is not None:
                decisions = read_tool_decisions(pause, kept["decisions"])
                brought = resumption.input(slot)
                if brought is not None:  # given by the resume that brought it: recorded here, and in force from here
                    self.emit(interrupt(thread, self.step, brought[0]))
                    record_brought = resumption.decision(brought[0].id)
                    self.emit(answered(thread, self.step, *brought, record_brought))
                    self._stand(door.asking, pause, decisions, record_brought)
                elif kept.get("record") is not None:
                    # Given to an earlier run of this node whose step was not kept (it stopped
                    # again): this step's record shows who decided, as that run's would have.
                    record = Decision.model_validate(kept["record"])
                    asked_then = pause.model_copy(update={"id": record.pause_id})
                    self.emit(interrupt(thread, self.step, asked_then))
                    self.emit(answered(thread, self.step, asked_then, decisions, record))
                decided.append(decisions)
                continue
            standing = door.asking.standing_for(call.name, call.arguments)
            if standing is not None:
                approved = (ToolDecision(type="approve"),)
                record = decision_of(
                    pause, approved, via="standing", by=standing.by, reason=standing.reason, standing=standing.id
                )
                self.emit(interrupt(thread, self.step, pause))
                self.emit(answered(thread, self.step, pause, approved, record))
                self._used.add(pause.id)
                pauses.record(slot, stored_answer(pause, approved, record))
                decided.append(approved)
                continue
            waiting.append(len(decided))
            decided.append(None)
            asked.append(pause)
        if asked:
            from .people import PauseRequested

            asking = door.asking
            if not asking.live:
                raise PauseRequested(*asked)
            if len(asked) == 1:  # (most replies ask about one call: no task to gather)
                try:
                    got: list[Any] = [await asking.wait_recorded(asked[0], self)]
                except PauseRequested as unwound:
                    got = [unwound]
            else:
                got = await asyncio.gather(
                    *(asking.wait_recorded(pause, self) for pause in asked), return_exceptions=True
                )
            unanswered: list[Pause] = []
            for place, pause, answer in zip(waiting, asked, got, strict=True):
                if isinstance(answer, PauseRequested):
                    unanswered.extend(answer.pauses)  # nobody will answer after all
                elif isinstance(answer, BaseException):
                    raise answer
                else:
                    answer, record = answer
                    pauses.record(pause.slot or "", stored_answer(pause, answer, record))
                    self._used.add(pause.id)
                    decided[place] = answer
                    self._stand(asking, pause, answer, record)
            if unanswered:
                raise PauseRequested(*unanswered)
        return [decision for decision in decided if decision is not None]

    @staticmethod
    def _stand(asking: Asking, pause: Pause, decisions: Sequence[ToolDecision], record: Decision | None) -> None:
        """Set up the standing approval a decision asked for, for later calls of its tool: by
        whoever decided, for their reason, under the id their decision's record names."""
        for call, decision in zip(pause.tool_calls, decisions, strict=False):
            if decision.standing is not None:
                asking.allow(
                    call.name,
                    scope=decision.standing,
                    by=record.by if record is not None else None,
                    reason=record.reason if record is not None and record.reason else decision.reason,
                    standing_id=record.standing if record is not None else None,
                )

    def _kept_decision(self, stored: Any, pause: Pause, open_id: str | None) -> Mapping[str, Any] | None:
        """The decisions kept at ``pause``'s slot that answer it (the kept mapping: its
        ``decisions`` and their ``record``), or None: it asks.

        A decision is used once, by the pause it was given to, and only while that pause shows
        what was decided on: a question left open at the checkpoint takes only the answer
        given to it; one asked before and answered takes its answer back when it shows the
        same; none takes a decision this call of the node has used already.
        """
        if stored is None:
            return None
        if not isinstance(stored, Mapping) or "decisions" not in stored:
            # Kept by a version before decisions were bound to their pause: good only for the
            # question left open at the checkpoint, which this resume answered.
            if open_id is None or open_id in self._used:
                return None
            self._used.add(open_id)
            return {"decisions": stored}
        record = cast("Mapping[str, Any]", stored)
        if record["pause"] in self._used or record["shown"] != pause.shown:
            return None
        if open_id is not None and record["pause"] != open_id:
            return None  # an older answer at this slot, not the one this resume brought
        self._used.add(record["pause"])
        return record

    def kept(self, key: str) -> Any:
        """What this call of the node kept with :meth:`keep` before a run that could not wait
        stopped at a question inside it (None: nothing; the node starts afresh)."""
        door = self._door
        if door is None:
            return None
        return door.asking.pauses.answers.get(f"{self._slot_base()}!{key}")

    def keep(self, key: str, value: Any) -> None:
        """Keep ``value`` (what a checkpoint can write as JSON: plain data, pydantic models; not
        to be changed afterwards) with this call's answers, so that when the node runs again
        from its start after a question, it takes up what it had done (model replies, tool
        results) instead of doing it twice; ``None`` forgets it, which a node does once it
        has what it kept for."""
        door = self._door
        if door is None:
            return
        door.asking.pauses.record(f"{self._slot_base()}!{key}", value)

    def _slot_base(self) -> str:
        where = self.node if self.branch is None else f"{self.node}@{self.branch}"
        return f"{self._scope}{where}#{self.visit}"

    def _asking(
        self,
        how: str,
        prompt: Any,
        options: Any,
        kind: str,
        slot: str | None,
        deadline: Deadline | None,
        deciders: str | Sequence[str] | None,
    ) -> _Asked | _Answered:
        """The question at this call's slot: answered already (a resume brought it, or the
        node asked before it ran again), or a pause to open."""
        door = self._door
        if door is None:
            raise RuntimeError(f"{how}() needs a running node; {self.node!r} is being routed outside a run")
        if deadline is not None:
            from ..deadlines import input_deadline

            deadline = input_deadline(deadline, f"{how}() in node {self.path!r}", options)
        self._asked += 1
        if slot is None:
            slot = f"{self._slot_base()}.{self._asked}"
        else:
            if slot.startswith("__"):  # (the run keeps its breakpoints, budget and trace there)
                raise ValueError(f"{how}(slot={slot!r}): slots starting with '__' are the run's own; name another")
            slot = self._scope + slot
        pauses = door.asking.pauses
        resumption = door.resumption
        if slot in pauses.answers:
            brought = resumption.input(slot)
            if brought is not None:
                # The answer a resume brought: the step's record shows the pause and
                # the answer here, where a live run shows them.
                thread = door.listeners.thread
                self.emit(interrupt(thread, self.step, brought[0]))
                self.emit(answered(thread, self.step, *brought, resumption.decision(brought[0].id)))
            return _Answered(pauses.answers[slot])
        from ..pauses import Pause
        from ..state import to_jsonable

        question = prompt
        if not isinstance(prompt, str):
            try:
                question = to_jsonable(prompt)
            except TypeError as exc:
                raise TypeError(
                    f"{how}(): the question must be text or plain data (JSON), got {prompt!r:.80}: {exc}"
                ) from None
            prompt = json.dumps(question, ensure_ascii=False)
        # The same question asked again after a resume keeps its id, so an answer given for
        # it in the meantime (with the id the person saw) still lands; and its deadline.
        before = resumption.asked(slot)
        pause = Pause(
            id=before.id if before is not None else new_id(),
            kind="input",
            node=self.node,
            step=self.step,
            path=self.path,
            branch=self.branch,
            prompt=prompt,
            question=question,
            options=tuple(options) if options is not None else None,
            input_kind="choice" if options is not None and kind == "text" else kind,
            slot=slot,
            reruns=self.rerun(),
            deciders=deciders_of(deciders, f"{how}() in node {self.path!r}"),
            deadline=None if deadline is None else _due(deadline, before.deadline if before is not None else None),
            on_timeout=None if deadline is None else deadline.then,
        )
        return _Asked(door, pause)


def _arguments_shown(arguments: Mapping[str, Any]) -> str:
    text = ", ".join(f"{key}={_shortened(repr(value))}" for key, value in arguments.items())
    return _shortened(text)


def _shortened(text: str) -> str:
    return text if len(text) <= 120 else text[:117] + "..."


class _Asked(NamedTuple):
    """A question to put to a person, through the run's ``door``."""

    door: RunDoor
    pause: Pause


class _Answered(NamedTuple):
    """A question answered already."""

    answer: Any


def _due(deadline: Deadline, at: float | None) -> float:
    """When a question asked under ``deadline`` stops waiting: ``at``, when it was asked before
    (a question a resume asks again keeps its deadline), else ``deadline.seconds`` from now."""
    if at is not None:
        return at
    from ..deadlines import due

    return due(deadline)
