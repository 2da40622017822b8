"""A LangGraph thread as the view replays and inspects it: frames for the step slider,
one step seen whole, and the checkpoint a fork starts from; nothing is run.

The steps come from a live run's stream, or from a thread's checkpoints
(``get_state_history``): each checkpoint lists the tasks of the superstep after it with
what they wrote, and sub-graph tasks point at their own checkpoints, read the same way.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from itertools import pairwise
from typing import Any, NamedTuple

from .._replay_frame import ReplayFrame
from ..history import Step, tally_by_path
from ..inspection import EdgeTaken, Inspection, LLMExchange, PauseSeen, ToolUse, diff_states
from ..names import START
from ..pauses import Pause
from ..state import to_jsonable
from ._drawing import Shape
from ._steps import Entry, messages_of, routed, tool_calls_of

__all__ = [
    "Checkpoints",
    "ThreadSteps",
    "aread_checkpoints",
    "entries_of",
    "frames_of",
    "inspect_entry",
    "read_checkpoints",
    "step_index",
]

_NO_CANDIDATES = (
    "LangGraph does not record why routing chose its edges: the edges a condition could have taken are not shown"
)
_PUSH = "__pregel_push"


class ThreadSteps(NamedTuple):
    """The steps of a LangGraph thread so far: what a fork and the inspector read."""

    app: Any
    config: Mapping[str, Any]
    """The thread's config (``thread_id`` and the rest a run was given)."""
    plan: Shape
    entries: Sequence[Entry]
    checkpoints: Mapping[int, Mapping[str, Any]]
    """Top-level step -> the config of the checkpoint written after it (0: after the input)."""
    outcome: str | None = None
    """How the thread's latest run ended (None: it has not)."""
    reason: str | None = None
    missing: tuple[str, ...] = ()
    """What the source does not record."""
    pauses: tuple[Pause, ...] = ()
    """The pauses the thread waits at (its interrupts, or a static breakpoint), unanswered."""
    options: Mapping[str, Any] = {}
    """What the run's streams were given besides input and config (``context``, ``durability``):
    a fork or a resume of it is given them too."""

    @property
    def thread(self) -> str:
        return str(self.config["configurable"]["thread_id"])

    @property
    def records(self) -> list[Step]:
        return [entry.record for entry in self.entries]

    @property
    def frames(self) -> tuple[ReplayFrame, ...]:
        """The frames the step slider scrubs (see :func:`frames_of`)."""
        return frames_of(self.entries)

    def inspect(self, at: int | Step) -> Inspection:
        """One step seen whole: a top-level step number (its latest record) or a ``Step`` record."""
        return inspect_entry(self.entries[step_index(self.entries, at)], self, self.missing)


def step_index(entries: Sequence[Entry], at: int | Step) -> int:
    """The index of the entry a top-level step number (its last record) or a record names.

    Raises:
        ValueError: no entry is that step.
    """
    if isinstance(at, Step):
        for i, entry in enumerate(entries):
            if entry.record is at or entry.record == at:
                return i
        raise ValueError(f"step {at.step} at {at.path!r} is not a step of this thread")
    for i in range(len(entries) - 1, -1, -1):
        record = entries[i].record
        if record.step == at and "/" not in record.path:
            return i
    top = [entry.record.step for entry in entries if "/" not in entry.record.path]
    told = f"steps {min(top)} to {max(top)}" if top else "no steps"
    raise ValueError(f"the thread has {told} of its own graph, not step {at}")


def frames_of(entries: Sequence[Entry]) -> tuple[ReplayFrame, ...]:
    """The frames the step slider scrubs: frame 0 before any step, then one per record,
    with the visits and fired edges counted up to it (keyed by path, as the live view counts)."""
    visits: dict[str, int] = {}
    fired: dict[tuple[str, str], int] = {}
    frames = [ReplayFrame(0, 0, None, None, None, 0, None, None, {}, {}, {})]
    for index, entry in enumerate(entries, start=1):
        tally_by_path((entry.record,), visits, fired)
        values = entry.after if entry.after is not None else frames[-1].values
        frames.append(ReplayFrame.after(index, entry.record, visits, fired, values))
    return tuple(frames)


def inspect_entry(entry: Entry, steps: ThreadSteps, missing: Sequence[str] = ()) -> Inspection:
    """The inspector's view of one step: its update, the state it saw and what its update
    did there, where it went, its model replies and tool calls, the interrupts it asked."""
    record = entry.record
    notes = [*missing, _NO_CANDIDATES]
    seen = entry.input if isinstance(entry.input, Mapping) and not entry.sent else {}
    if entry.input is None:
        notes.append("the state this step saw is not recorded")
    update = record.update or {}
    after = entry.after if entry.after is not None else {}
    # Only what this node wrote: the state after its superstep holds its siblings' writes too.
    change = diff_states(
        {key: seen[key] for key in update if key in seen},
        {key: after.get(key, value) for key, value in update.items()},
    )
    calls, results = tool_calls_of(update)
    replies = {getattr(message, "tool_call_id", None): message for message in results}
    messages = [to_jsonable(message, strict=False) for message in messages_of(update)]
    llm = None
    if messages or calls:
        llm = LLMExchange(
            messages=messages,
            tool_calls=[
                ToolUse(
                    call_id=str(call.get("id") or ""),
                    name=str(call["name"]),
                    args=to_jsonable(call.get("args"), strict=False),
                    result=_content(replies.get(call.get("id"))),
                    is_error=getattr(replies.get(call.get("id")), "status", None) == "error",
                )
                for call in calls
            ],
        )
    edge = record.edge
    return Inspection(
        thread=steps.thread,
        graph=steps.plan.name,
        step=record.step,
        node=record.node,
        path=record.path,
        branch=record.branch,
        visit=record.visit,
        started=record.started or None,
        duration=record.duration,
        tokens=record.tokens,
        turns=record.turns,
        error=record.error,
        payload=to_jsonable(entry.input, strict=False) if entry.sent else None,
        has_payload=entry.sent,
        input=to_jsonable(dict(seen), strict=False),
        update=to_jsonable(record.update, strict=False),
        change=change,
        edge=None
        if edge is None
        else EdgeTaken(
            source=edge.source,
            target=edge.target,
            targets=list(edge.targets),
            label=edge.label,
            unconditional=edge.unconditional,
        ),
        llm=llm,
        pauses=[
            PauseSeen(
                id=pause.id,
                kind=pause.kind,
                prompt=pause.prompt,
                answered=True,
                answer=to_jsonable(answer, strict=False),
            )
            for pause, answer in entry.answers
        ],
        missing=notes,
    )


def _content(message: Any) -> Any:
    return None if message is None else to_jsonable(message.content, strict=False)


# -- a thread's steps from its checkpoints ---------------------------------------------------


class Checkpoints(NamedTuple):
    """A thread's checkpoints, oldest first, and those of the sub-graphs its tasks ran, by namespace."""

    chain: list[Any]
    inner: dict[str, Checkpoints]


def read_checkpoints(app: Any, config: Mapping[str, Any]) -> Checkpoints:
    """The checkpoints from the thread's first to the one ``config`` names (else its latest):
    after a fork, the path the thread took to it, not the one it left.

    A checkpointer that cannot read synchronously here (``AsyncSqliteSaver`` on its own
    loop's thread, a saver with asynchronous methods only) is read with its asynchronous
    interface, on a loop of its own in a thread of its own: this thread's loop may be the
    one waiting for the answer.
    """
    try:
        return _read_checkpoints(app, config)
    except (NotImplementedError, asyncio.InvalidStateError):
        with ThreadPoolExecutor(1, thread_name_prefix="nbgraph-history") as reader:
            return reader.submit(asyncio.run, aread_checkpoints(app, config)).result()


def _read_checkpoints(app: Any, config: Mapping[str, Any]) -> Checkpoints:
    chain = _chain(list(app.get_state_history(config)), config)
    return Checkpoints(chain, {_namespace(task): _read_checkpoints(app, task.state) for task in _calls(chain)})


async def aread_checkpoints(app: Any, config: Mapping[str, Any]) -> Checkpoints:
    """:func:`read_checkpoints` with the checkpointer's asynchronous interface."""
    chain = _chain([snapshot async for snapshot in app.aget_state_history(config)], config)
    return Checkpoints(chain, {_namespace(task): await aread_checkpoints(app, task.state) for task in _calls(chain)})


def _calls(chain: Sequence[Any]) -> list[Any]:
    """The tasks that ran a sub-graph, which keeps its own checkpoints."""
    return [task for snapshot in chain for task in snapshot.tasks if task.state is not None]


def _namespace(task: Any) -> str:
    return str(task.state["configurable"]["checkpoint_ns"])


def entries_of(read: Checkpoints, plan: Shape) -> tuple[list[Entry], dict[int, Mapping[str, Any]]]:
    """The steps of a thread's checkpoints, and its top-level checkpoints by step."""
    checkpoints = {int(s.metadata["step"]): s.config for s in read.chain if s.metadata["step"] >= 0}
    return _steps(read, "", plan.routes), checkpoints


def _chain(snapshots: list[Any], config: Mapping[str, Any]) -> list[Any]:
    if not snapshots:
        return []
    by_id = {snapshot.config["configurable"]["checkpoint_id"]: snapshot for snapshot in snapshots}
    wanted = config.get("configurable", {}).get("checkpoint_id")
    head = by_id.get(wanted) if wanted else snapshots[0]
    chain = []
    while head is not None:
        chain.append(head)
        parent = head.parent_config
        head = by_id.get(parent["configurable"]["checkpoint_id"]) if parent else None
    return chain[::-1]


def _steps(read: Checkpoints, level: str, routes: Mapping[str, Mapping[str, Mapping[str, str | None]]]) -> list[Entry]:
    entries: list[Entry] = []
    visits: dict[str, int] = {}
    prefix = f"{level}/" if level else ""
    chain = read.chain
    for before, after in pairwise(chain):
        if after.metadata.get("source") != "loop":
            continue  # an edit (update_state) or a fork's copy: no node ran
        step = int(after.metadata["step"])
        took = _seconds(before.created_at, after.created_at)
        ran = [
            task for task in before.tasks if task.name != START and (task.result is not None or task.error is not None)
        ]
        following = tuple(after.next)
        for index, task in enumerate(ran):
            path = prefix + task.name
            if task.state is not None:  # a sub-graph's own steps first, as a live run records them
                entries.extend(_steps(read.inner[_namespace(task)], path, routes))
            error = None if task.error is None else str(task.error)
            if error is None:
                visits[path] = visits.get(path, 0) + 1
            sent = bool(task.path) and task.path[0] == _PUSH
            record = Step(
                step=step,
                node=task.name,
                visit=visits.get(path, 0) + (error is not None),
                started=0.0,
                duration=took,
                update=task.result if isinstance(task.result, Mapping) else None,
                edge=None
                if error is not None
                else routed(task.name, routes.get(level, {}).get(task.name, {}), following, len(ran)),
                path=path,
                branch=_branch(ran, index) if len(ran) > 1 else None,
                error=error,
            )
            entries.append(Entry(record, None if sent else before.values, sent, after.values, ()))
    return entries


def _branch(tasks: Sequence[Any], index: int) -> str:
    """The branch name the live run gives (the node's, or ``node[i]`` for Send items and repeats)."""
    task = tasks[index]
    same = [i for i, other in enumerate(tasks) if other.name == task.name]
    sent = bool(task.path) and task.path[0] == _PUSH
    return f"{task.name}[{same.index(index)}]" if sent or len(same) > 1 else task.name


def _seconds(start: str | None, end: str | None) -> float:
    from datetime import datetime

    if not start or not end:
        return 0.0
    return max(0.0, (datetime.fromisoformat(end) - datetime.fromisoformat(start)).total_seconds())
