"""LangGraph's stream read as nbgraph's step records.

A run is streamed with ``stream_mode=["debug", "messages"]`` and ``subgraphs=True``:
``debug`` says when each task (a node's call) starts and ends, with what it got and what
it wrote, and when each superstep's checkpoint is written, with the nodes that run next;
``messages`` carries the models' streamed tokens. A task that ends becomes a
:class:`~nbgraph.history.Step` when its superstep's checkpoint arrives (or the run ends
first), since only then is known where routing went. Steps are numbered by superstep,
as LangGraph counts them (tasks that run together share their step), and sub-graphs
count their own, their paths written ``outer/inner`` as the drawing names them.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, NamedTuple

from .. import events
from ..engine.listeners import Listeners
from ..history import FiredEdge, Step
from ..names import END
from ..pauses import Pause
from ..state import to_jsonable

__all__ = ["Entry", "StepBook", "level_of", "messages_of", "routed", "tokens_of", "tool_calls_of"]

_PUSH = "__pregel_push"
"""The trigger of a task a ``Send`` started (its input is the Send's payload)."""


class Entry(NamedTuple):
    """A step record and what the inspector and a fork read beside it."""

    record: Step
    input: Any
    """What the node got: the state, or a ``Send``'s payload (``sent``); None when not recorded."""
    sent: bool
    after: Mapping[str, Any] | None
    """The state of the node's graph once its superstep was done (None: it never was)."""
    answers: tuple[tuple[Pause, Any], ...] = ()
    """The pauses the node asked and the answers it got back (the last call ran with them)."""


def level_of(namespace: Iterable[str]) -> str:
    """The path of the graph a namespace (``("outer:<task id>", "inner:<task id>")``) runs."""
    return "/".join(part.partition(":")[0] for part in namespace)


def tokens_of(update: Any) -> tuple[int, int]:
    """The tokens (``usage_metadata``) of the model replies in an update, and how many replies had them."""
    tokens = replies = 0
    for message in messages_of(update):
        usage = getattr(message, "usage_metadata", None)
        if usage:
            tokens += int(usage.get("total_tokens") or 0)
            replies += 1
    return tokens, replies


def tool_calls_of(update: Any) -> tuple[list[dict[str, Any]], list[Any]]:
    """The tool calls the model replies in an update asked for, and the tool messages in it."""
    calls: list[dict[str, Any]] = []
    results: list[Any] = []
    for message in messages_of(update):
        calls.extend(getattr(message, "tool_calls", None) or ())
        if getattr(message, "type", None) == "tool":
            results.append(message)
    return calls, results


def routed(source: str, leads: Mapping[str, str | None], following: Sequence[str], together: int) -> FiredEdge | None:
    """Where routing from ``source`` went: the nodes run next that an edge drawn from it
    leads to (END when nothing runs next), labelled as drawn (``leads``: target -> label,
    None for an unconditional edge). ``together``: how many tasks its superstep ran."""
    if not following:
        targets = [END]
    else:
        targets = [node for node in following if node in leads]
        if not targets and together == 1:
            # A Command(goto=...) or a Send that no drawn edge declares.
            return FiredEdge(source, following[0], "goto", fanout=tuple(following) if len(following) > 1 else ())
    if not targets:
        return None
    label = leads.get(targets[0])
    fanout = tuple(targets) if len(targets) > 1 else ()
    return FiredEdge(source, targets[0], label, unconditional=label is None and targets[0] in leads, fanout=fanout)


def messages_of(update: Any) -> Iterable[Any]:
    """The messages (LangChain's) an update writes."""
    if not isinstance(update, Mapping):
        return
    for value in update.values():
        for item in value if isinstance(value, (list, tuple)) else (value,):
            if hasattr(item, "content") and hasattr(item, "type"):
                yield item


class _Task:
    """A task under way, or ended and waiting for its superstep's checkpoint."""

    __slots__ = ("id", "node", "path", "step", "started", "clock", "input", "sent", "branch", "status", "ended")

    def __init__(self, id: str, node: str, path: str, step: int, input: Any, sent: bool) -> None:
        self.id = id
        self.node = node
        self.path = path
        self.step = step
        self.started = time.time()
        self.clock = time.perf_counter()
        self.input = input
        self.sent = sent
        self.branch: str | None = None
        self.status = "running"
        self.ended: tuple[float, Any, str | None] | None = None  # duration, update, error


class _Level:
    """One namespace's supersteps: the tasks of the one under way."""

    __slots__ = ("path", "step", "settled", "tasks", "named")

    def __init__(self, path: str, settled: int) -> None:
        self.path = path
        self.step = settled + 1
        self.settled = settled
        """The step of the latest checkpoint read: a resumed stream announces it again first."""
        self.tasks: dict[str, _Task] = {}
        self.named = False


class StepBook:
    """Reads the chunks of ``astream(..., stream_mode=["debug", "messages"], subgraphs=True)``
    into step records, telling ``listeners`` the events they make (built only when someone listens)."""

    def __init__(
        self,
        routes: Mapping[str, Mapping[str, Mapping[str, str | None]]],
        entries: list[Entry],
        records: list[Step],
        listeners: Listeners,
    ) -> None:
        self._routes = routes
        self.entries = entries
        self.records = records
        self._listeners = listeners
        self._thread = listeners.thread
        self._levels: dict[tuple[str, ...], _Level] = {}
        self._tasks: dict[str, _Task] = {}  # by task id: those under way and those that asked
        self._visits: Counter[str] = Counter(record.path for record in records if record.error is None)
        self.step = max((r.step for r in records if "/" not in r.path), default=0)
        self.asked: dict[str, _Task] = {}
        """Interrupt id -> the task that asked (the deepest one: a sub-graph's node, not its frame)."""
        self.answers: dict[tuple[str, int, str | None], list[tuple[Pause, Any]]] = {}
        """(path, step, branch) -> the pauses a node asked there and their answers."""
        self._last: dict[str, list[Step]] = {}
        """Graph path ("" for the graph itself) -> the records of its latest superstep."""
        self.checkpoints: dict[int, Mapping[str, Any]] = {}
        """Top-level step -> the config of the checkpoint written after it: a fork starts there."""
        self.values: Mapping[str, Any] = {}
        """The state at the top level's latest checkpoint."""

    # -- reading the stream --------------------------------------------------------------

    def read(self, namespace: tuple[str, ...], mode: str, chunk: Any) -> None:
        if mode == "messages":
            self._text(chunk)
            return
        if mode == "custom":
            self._custom(namespace, chunk)
            return
        kind = chunk["type"]
        payload = chunk["payload"]
        level = self._levels.get(namespace)
        if level is None:
            level = self._levels[namespace] = _Level(level_of(namespace), self.step if not namespace else -2)
        if kind == "task":
            self._start(level, chunk["step"], payload)
        elif kind == "task_result":
            self._end(level, payload)
        elif kind == "checkpoint":
            self._settle(level, namespace, chunk["step"], payload)

    def _start(self, level: _Level, step: int, payload: Mapping[str, Any]) -> None:
        if level.step != step:
            level.step, level.tasks, level.named = step, {}, False
        known = level.tasks.get(payload["id"])
        if known is not None and known.ended is not None:
            return  # it ended in an earlier stream of this superstep: LangGraph serves its writes again
        name = payload["name"]
        task = _Task(
            payload["id"],
            name,
            f"{level.path}/{name}" if level.path else name,
            step,
            payload.get("input"),
            _PUSH in (payload.get("triggers") or ()),
        )
        level.tasks[task.id] = self._tasks[task.id] = task
        level.named = False  # (a task asked again after an answer is named anew with its superstep)
        if not level.path:
            self.step = max(self.step, step)
        self._listeners.emit_step_if(
            lambda: events.NodeEnter(**self._where(task), node=name, visit=self._visits[task.path] + 1)
        )

    def _end(self, level: _Level, payload: Mapping[str, Any]) -> None:
        task = level.tasks.get(payload["id"])
        if task is None:
            return  # (a task of a superstep already settled)
        self._name_branches(level)
        interrupts = payload.get("interrupts") or ()
        if interrupts:
            task.status = "paused"
            for asked in interrupts:
                self.asked.setdefault(asked["id"], task)
            return
        self._tasks.pop(task.id, None)
        error = payload.get("error")
        update = payload.get("result")
        task.status = "failed" if error else "done"
        task.ended = (time.perf_counter() - task.clock, update, str(error) if error else None)
        if error:
            self._listeners.emit_if(lambda: events.ErrorEvent(**self._where(task), node=task.node, error=str(error)))
            return
        calls, results = tool_calls_of(update)
        for call in calls:
            self._listeners.emit_if(
                lambda call=call: events.ToolCall(
                    **self._where(task),
                    node=task.node,
                    call_id=call.get("id") or "",
                    name=call["name"],
                    args=call.get("args"),
                ),
            )
        for message in results:
            self._listeners.emit_if(
                lambda message=message: events.ToolResult(
                    **self._where(task),
                    node=task.node,
                    call_id=getattr(message, "tool_call_id", "") or "",
                    name=getattr(message, "name", None) or "",
                    result=message.content,
                    is_error=getattr(message, "status", None) == "error",
                ),
            )

    def _settle(self, level: _Level, namespace: tuple[str, ...], step: int, payload: Mapping[str, Any]) -> None:
        """A superstep's checkpoint: its ended tasks become records, routed to the nodes next."""
        if not namespace and step >= 0:  # (step -1 holds the input before START took it)
            self.checkpoints[step] = payload["config"]
            self.values = payload.get("values") or {}
        if step <= level.settled:
            return  # the checkpoint a resumed (or forked) stream starts from
        following = tuple(payload.get("next") or ())
        ended = [task for task in level.tasks.values() if task.ended is not None]
        for task in level.tasks.values():
            self._tasks.pop(task.id, None)  # (a task started again and served from its cached writes)
        routes = self._routes.get(level.path, {})
        settled = [
            self._record(
                task, routed(task.node, routes.get(task.node, {}), following, len(ended)), payload.get("values")
            )
            for task in ended
        ]
        if settled:
            self._last[level.path] = settled
        level.step, level.settled, level.tasks, level.named = step + 1, step, {}, False
        if not following and namespace:
            del self._levels[namespace]  # a sub-graph's call has ended

    def _record(self, task: _Task, edge: FiredEdge | None, after: Any) -> Step:
        assert task.ended is not None
        duration, update, error = task.ended
        tokens, replies = tokens_of(update)
        if error is None:
            self._visits[task.path] += 1
        else:
            edge = None  # a failed node routes nowhere
        record = Step(
            step=task.step,
            node=task.node,
            visit=self._visits[task.path] + (error is not None),
            started=task.started,
            duration=duration,
            update=update if isinstance(update, Mapping) else None,
            edge=edge,
            path=task.path,
            branch=task.branch,
            tokens=tokens,
            turns=replies,
            error=error,
        )
        answers = tuple(self.answers.pop((task.path, task.step, task.branch), ()))
        self.records.append(record)
        self.entries.append(Entry(record, task.input, task.sent, after, answers))
        self._listeners.emit_step_if(
            lambda: events.NodeExit(**self._where(task), node=task.node, duration=duration, update=None, tokens=tokens),
        )
        if edge is not None:
            self._listeners.emit_step_if(
                lambda: events.Route(
                    **self._where(task),
                    source=task.node,
                    target=edge.target,
                    label=edge.label,
                    unconditional=edge.unconditional,
                ),
            )
        return record

    def settle_unfinished(self) -> None:
        """The run has ended: tasks that ended in a superstep never completed (a failure, a
        stop) become records that went nowhere; those still running are forgotten."""
        for level in list(self._levels.values()):
            for task in level.tasks.values():
                if task.ended is not None:
                    self._record(task, None, None)
        self._levels.clear()
        self._tasks.clear()

    def _text(self, chunk: Any) -> None:
        message, metadata = chunk
        text = getattr(message, "text", None)
        if getattr(message, "type", "") not in ("ai", "AIMessageChunk") or not isinstance(text, str) or not text:
            return
        namespace = str(metadata.get("langgraph_checkpoint_ns") or "")
        parts = namespace.split("|") if namespace else []
        task = self._tasks.get(parts[-1].partition(":")[2]) if parts else None
        node = str(metadata.get("langgraph_node") or "")
        self._listeners.emit_if(
            lambda: events.TextDelta(
                thread=self._thread,
                step=int(metadata.get("langgraph_step") or 0),
                path=level_of(parts) or node,
                branch=task.branch if task is not None else None,
                node=node,
                text=text,
            ),
        )

    def _custom(self, namespace: tuple[str, ...], data: Any) -> None:
        """What a node wrote with ``get_stream_writer()``: a custom chunk says nothing of who wrote
        it, so it is the running task's of its graph level when only one runs there."""
        level = self._levels.get(namespace)
        running = [task for task in (level.tasks.values() if level else ()) if task.status == "running"]
        task = running[0] if len(running) == 1 else None
        self._listeners.emit_if(
            lambda: events.Custom(
                thread=self._thread,
                step=task.step if task is not None else self.step,
                path=task.path if task is not None else level_of(namespace),
                branch=task.branch if task is not None else None,
                node=task.node if task is not None else None,
                data=to_jsonable(data, strict=False),
            )
        )

    # -- what is under way ---------------------------------------------------------------

    @property
    def running(self) -> tuple[str, ...]:
        """The paths of the tasks started and not ended (nor waiting for an answer)."""
        return tuple(task.path for task in self._tasks.values() if task.status == "running")

    def groups(self) -> Iterable[list[_Task]]:
        """The tasks of each superstep under way that runs several at once."""
        for level in self._levels.values():
            if len(level.tasks) > 1:
                self._name_branches(level)
                yield list(level.tasks.values())

    def _name_branches(self, level: _Level) -> None:
        """Name the branches of a superstep of several tasks as the engine names them: the
        node's name, or ``node[i]`` for the items of a ``Send`` and a node started twice."""
        if level.named:
            return
        level.named = True
        tasks = list(level.tasks.values())
        if len(tasks) < 2:
            return
        many = Counter(task.node for task in tasks)
        index: Counter[str] = Counter()
        for task in tasks:
            if task.sent or many[task.node] > 1:
                task.branch = f"{task.node}[{index[task.node]}]"
                index[task.node] += 1
            else:
                task.branch = task.node

    @property
    def last(self) -> list[Step]:
        """The records of each graph's latest superstep (a sub-graph's too: its breakpoints stop the run)."""
        return [record for records in self._last.values() for record in records]

    def where(self, interrupt_id: str) -> tuple[str, str, int, str | None] | None:
        """The node, path, step and branch of the task that asked an interrupt."""
        task = self.asked.get(interrupt_id)
        return None if task is None else (task.node, task.path, task.step, task.branch)

    def _where(self, task: _Task) -> dict[str, Any]:
        return {"thread": self._thread, "step": task.step, "path": task.path, "branch": task.branch}
