"""Events and listeners: who hears a run, and the events it reports.

A run builds events only when someone listens. The engine builds its own events
from data it already checked, so it skips pydantic's validation
(``model_construct``); a listener that subscribed with ``steps=False`` is spared
the three events of every step. The event models are loaded when the first event
is built, so ``import nbgraph`` does not pay for pydantic's model machinery.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterator, Sequence
from functools import cache
from types import ModuleType
from typing import TYPE_CHECKING, Any

from ..history import FiredEdge, Step
from ..state import to_jsonable

if TYPE_CHECKING:
    from ..decision import Decision
    from ..pauses import Pause

__all__ = [
    "Listeners",
    "answered",
    "done",
    "error_event",
    "interrupt",
    "node_enter",
    "node_exit",
    "route_event",
    "run_start",
    "step_end_events",
    "text_delta",
    "trace",
]

Listener = Callable[[Any], Any]


class Listeners:
    """The listeners of one run (its ``thread``): ``all`` hear every event, ``steps`` also the
    per-step ones."""

    __slots__ = ("all", "steps", "thread")

    def __init__(self, listeners: Sequence[Listener] = (), thread: str = "") -> None:
        self.thread = thread
        self.all: list[Listener] = list(listeners)
        self.steps: list[Listener] = list(listeners)

    def subscribe(self, listener: Listener, *, steps: bool = True) -> Callable[[], None]:
        self.all.append(listener)
        if steps:
            self.steps.append(listener)

        def unsubscribe() -> None:
            for group in (self.all, self.steps):
                if listener in group:
                    group.remove(listener)

        return unsubscribe

    def emit(self, event: Any) -> None:
        _call(self.all, event)

    def emit_step(self, event: Any) -> None:
        _call(self.steps, event)

    def emit_if(self, build: Callable[[], Any]) -> None:
        if self.all:
            _call(self.all, build())

    def emit_step_if(self, build: Callable[[], Any]) -> None:
        if self.steps:
            _call(self.steps, build())


def _call(listeners: list[Listener], event: Any) -> None:
    for listener in tuple(listeners):
        try:
            listener(event)
        except Exception as exc:  # a broken observer must not break the run
            warnings.warn(
                f"event listener {listener!r} raised {type(exc).__name__}: {exc}", RuntimeWarning, stacklevel=3
            )


# -- the engine's own events -----------------------------------------------------------


@cache
def _events() -> ModuleType:
    from .. import events

    return events


def run_start(thread: str, step: int, graph: str, resumed: bool) -> Any:
    return _events().RunStart.model_construct(thread=thread, step=step, graph=graph, resumed=resumed)


def node_enter(
    thread: str, step: int, node: str, visit: int, path: str, branch: str | None, rerun: bool = False
) -> Any:
    events = _events()
    return events.checked(
        events.NodeEnter,
        {
            "thread": thread,
            "step": step,
            "path": path,
            "branch": branch,
            "type": "node-enter",
            "node": node,
            "visit": visit,
            "rerun": rerun,
        },
    )


def text_delta(thread: str, step: int, node: str, path: str, branch: str | None, **fields: Any) -> Any:
    return _events().TextDelta.model_construct(thread=thread, step=step, node=node, path=path, branch=branch, **fields)


def interrupt(thread: str, step: int, pause: Pause) -> Any:
    return _events().Interrupt.model_construct(
        thread=thread, step=step, path=pause.path, branch=pause.branch, pause=pause
    )


def answered(thread: str, step: int, pause: Pause, answer: Any, decision: Decision | None) -> Any:
    """The event of ``pause``'s answer, with its record (one made here, as given from code,
    when the door that took the answer kept none)."""
    if decision is None:
        from ..decision import decision_of

        decision = decision_of(pause, answer, via="code")
    return _events().Answer.model_construct(
        thread=thread,
        step=step,
        path=pause.path,
        branch=pause.branch,
        pause_id=pause.id,
        answer=to_jsonable(answer, strict=False),
        decision=decision,
    )


def error_event(
    thread: str, step: int, node: str | None, path: str, branch: str | None, error: str, error_type: str
) -> Any:
    return _events().ErrorEvent.model_construct(
        thread=thread,
        step=step,
        node=node,
        path=path,
        branch=branch,
        error=error,
        error_type=error_type,
    )


def done(thread: str, step: int, outcome: str, reason: str | None, hit_max_steps: bool) -> Any:
    return _events().Done.model_construct(
        thread=thread, step=step, outcome=outcome, reason=reason, hit_max_steps=hit_max_steps
    )


def node_exit(thread: str, record: Step) -> Any:
    events = _events()
    return events.checked(
        events.NodeExit,
        {
            "thread": thread,
            "step": record.step,
            "path": record.path,
            "branch": record.branch,
            "type": "node-exit",
            "node": record.node,
            "duration": record.duration,
            "update": to_jsonable(record.update, strict=False),
            "tokens": record.tokens,
            "cost": record.cost,
        },
    )


def route_event(thread: str, step: int, edge: FiredEdge, path: str = "", branch: str | None = None) -> Any:
    events = _events()
    return events.checked(
        events.Route,
        {
            "thread": thread,
            "step": step,
            "path": path,
            "branch": branch,
            "type": "route",
            "source": edge.source,
            "target": edge.target,
            "label": edge.label,
            "unconditional": edge.unconditional,
        },
    )


def step_end_events(thread: str, record: Step) -> Iterator[Any]:
    """node-exit, the approval's events if any, then the route taken."""
    yield node_exit(thread, record)
    yield from record.approval_events
    if record.edge is not None:
        yield route_event(thread, record.step, record.edge, record.path, record.branch)


def trace(
    thread: str,
    graph: str,
    start_edge: FiredEdge | None,
    history: Sequence[Step],
    *,
    outcome: str,
    reason: str | None,
    error_type: str,
    pauses: Sequence[Pause],
    step: int,
    hit_max_steps: bool,
    resumed: bool = False,
) -> Iterator[Any]:
    """A run's events rebuilt from its history, in the order they were reported.

    A sub-graph node's record comes after its own steps' (it ends after them), but it
    was entered before them: its node-enter is put back there.
    """
    yield run_start(thread, 0, graph, resumed)
    if start_edge is not None:
        yield route_event(thread, 0, start_edge)
    entered: set[str] = set()
    for i, record in enumerate(history):
        if "/" in record.path:
            for container in _containers(history, i, entered):
                yield from _before(container.events)[0]
                yield node_enter(
                    thread, container.step, container.node, container.visit, container.path, container.branch
                )
        first, events = _before(record.events)
        if record.path in entered:
            entered.discard(record.path)
        else:
            yield from first
            yield node_enter(thread, record.step, record.node, record.visit, record.path, record.branch)
        yield from events
        if record.error is not None:
            continue
        yield from step_end_events(thread, record)
    if outcome == "failed":
        last = history[-1] if history and history[-1].error else None
        yield error_event(
            thread,
            last.step if last else step,
            last.node if last else None,
            last.path if last else "",
            last.branch if last else None,
            reason or "",
            error_type,
        )
    for pause in pauses:
        yield interrupt(thread, step, pause)
    yield done(thread, step, outcome, reason, hit_max_steps)


def _before(events: tuple[Any, ...]) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
    """A step's events split at its node-enter: a breakpoint's pause before the node (its
    interrupt and resume) came first."""
    if (
        events
        and events[0].type == "interrupt"
        and events[0].pause.kind == "breakpoint"
        and events[0].pause.at == "before"
    ):
        return events[:2], events[2:]
    return (), events


def _containers(history: Sequence[Step], i: int, entered: set[str]) -> Iterator[Step]:
    """The sub-graph nodes record ``i`` runs inside that the trace has not entered yet, outermost first."""
    parts = history[i].path.split("/")[:-1]
    for depth in range(1, len(parts) + 1):
        path = "/".join(parts[:depth])
        if path in entered:
            continue
        container = next((r for r in history[i + 1 :] if r.path == path), None)
        if container is not None:
            entered.add(path)
            yield container
