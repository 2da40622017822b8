"""The heartbeat: an agent graph run again and again, a fresh run per cycle, until it
says it is done or blocked, or the cycles run out.

Each cycle is a sub-graph call with input and output mappings, so the agent starts
from a clean state every time (its own messages, its own ``max_steps``), its steps
nest under ``cycle/`` in the heartbeat's history, and a durable heartbeat paused
inside a cycle resumes inside that cycle. What carries from one cycle to the next
is what the heartbeat's state keeps: the task, and each cycle's outcome with a
summary the next cycle's prompt repeats.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable
from typing import Annotated, Any, Literal

import pydantic

from ..graph import Graph
from ..llm.messages import UserMessage, as_messages, state_field
from ..names import END, START
from ..reducers import append

__all__ = ["CycleOutcome", "HeartbeatState", "heartbeat", "read_outcome"]

Status = Literal["running", "done", "blocked"]

_SUMMARY_CHARS = 400
_VERDICT = re.compile(r"\b(DONE|BLOCKED)\b(?:\s*:\s*(.*))?", re.DOTALL)


class CycleOutcome(pydantic.BaseModel):
    """How one cycle ended: the agent's verdict, and what it said last (for the next cycle)."""

    model_config = pydantic.ConfigDict(frozen=True, extra="forbid")

    status: Status
    summary: str = ""
    blocker: str | None = None
    """Why the agent could not go on, when it said ``BLOCKED: reason``."""


class HeartbeatState(pydantic.BaseModel):
    """The heartbeat's own state: the standing task and every cycle's outcome, in order."""

    task: str = ""
    outcomes: Annotated[list[CycleOutcome], append] = []

    @property
    def cycles(self) -> int:
        return len(self.outcomes)

    @property
    def status(self) -> Status:
        return self.outcomes[-1].status if self.outcomes else "running"


def read_outcome(agent_state: Any) -> CycleOutcome:
    """The verdict of an agent's run: its ``status`` field if it has one, else the last
    assistant message (``DONE``, ``BLOCKED: reason``, anything else: still running)."""
    last = ""
    for message in reversed(as_messages(state_field(agent_state, "messages") or ())):
        if message.role == "assistant" and message.content:
            last = message.content
            break
    summary = last[-_SUMMARY_CHARS:]
    declared = state_field(agent_state, "status")
    if declared in ("running", "done", "blocked"):
        return CycleOutcome(status=declared, summary=summary, blocker=state_field(agent_state, "blocker"))
    verdict = _VERDICT.search(last)
    if verdict is None:
        return CycleOutcome(status="running", summary=summary)
    if verdict.group(1) == "DONE":
        return CycleOutcome(status="done", summary=summary)
    return CycleOutcome(status="blocked", summary=summary, blocker=(verdict.group(2) or "").strip() or None)


def heartbeat(
    agent: Graph,
    *,
    every: float = 0.0,
    max_cycles: int = 10,
    prompt: Callable[[HeartbeatState], Any] | None = None,
    outcome: Callable[[Any], CycleOutcome] = read_outcome,
    name: str = "heartbeat",
) -> Graph:
    """A graph that runs ``agent`` once per cycle, ``every`` seconds apart, at most ``max_cycles`` times.

    ``prompt(state) -> agent input`` builds each cycle's fresh input from the
    heartbeat's state (default: one user message with the task, the cycle number and
    the previous cycle's summary, for a ``messages`` agent); ``outcome(agent_state)``
    reads how the cycle ended (default :func:`read_outcome`). A ``done`` or ``blocked``
    cycle ends the heartbeat, and so does the last allowed cycle; every outcome is
    kept in ``state.outcomes``. Start it with ``{"task": "..."}``.
    """
    if every < 0:
        raise ValueError(f"heartbeat(every={every!r}): the period is a number of seconds, 0 or more")
    if max_cycles < 1:
        raise ValueError(f"heartbeat(max_cycles={max_cycles!r}): allow at least one cycle")
    make_input = prompt or _messages_prompt(max_cycles)

    def record(agent_state: Any) -> dict[str, Any]:
        return {"outcomes": [outcome(agent_state)]}

    async def rest(state: HeartbeatState) -> None:
        await asyncio.sleep(every)  # the period between cycles is the point of a heartbeat

    def carry_on(state: HeartbeatState) -> bool:
        return state.status == "running" and state.cycles < max_cycles

    graph = Graph(name, state=HeartbeatState, max_steps=2 * max_cycles + 2)
    graph.add_node("cycle", agent, input=make_input, output=record)
    graph.add_node("rest", rest)
    graph.add_edge(START, "cycle")
    graph.add_edge("cycle", "rest", when=carry_on, label="running")
    graph.add_edge("cycle", END)
    graph.add_edge("rest", "cycle")
    return graph


def _messages_prompt(max_cycles: int) -> Callable[[HeartbeatState], dict[str, Any]]:
    def prompt(state: HeartbeatState) -> dict[str, Any]:
        lines = [f"Heartbeat cycle {state.cycles + 1} of {max_cycles}.", f"Task: {state.task}"]
        if state.outcomes:
            lines.append(f"Previous cycle: {state.outcomes[-1].summary}")
        lines.append(
            "Work on the task. End your reply with DONE when it is finished, or BLOCKED: <why> if you cannot go on."
        )
        return {"messages": [UserMessage(content="\n".join(lines))]}

    return prompt
