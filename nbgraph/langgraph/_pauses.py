"""The pauses a LangGraph thread stops at, how their answers are read, and what LangGraph is given.

A stopped thread waits at its interrupts (``interrupt(value)`` in a node: a question, or a
review of tool calls in one of the shapes :mod:`._review` reads), or else at a static
breakpoint (``interrupt_before`` / ``interrupt_after``). The same pauses come from a live
run and from the thread's checkpoints read back, with the same ids (an interrupt's own id;
for a breakpoint, one made from its checkpoint), so an answer given after a restart finds
its pause. An answer is read and checked where it is given, before anything runs: against its
pause, for what a checkpoint keeps (:func:`nbgraph.pauses.read_answer`), and for what the graph's
own checkpointer can write; what LangGraph then gets is ``Command(resume={interrupt id:
value})``, or, at a breakpoint, an ``update_state`` with the person's correction before the
graph goes on.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple, cast

from ..answering import Given
from ..decision import Decision, FieldEdit, decision_of
from ..errors import ResumeError
from ..history import Step
from ..pauses import Pause, Rerun, answers_by_id, bind, describe, read_answer, read_break
from ..plan import Breakpoints
from ..state import to_jsonable
from ..storable import storable_problem
from ._review import decisions_in, reply_of, review_of

__all__ = [
    "Break",
    "Read",
    "Where",
    "bind_answer",
    "break_pauses",
    "decision_for",
    "interrupt_pause",
    "open_pauses",
    "read_given",
    "where_asked",
]


class Where(NamedTuple):
    """The node that asked, where it is (``outer/inner`` inside sub-graphs), its step and branch."""

    node: str
    path: str
    step: int
    branch: str | None


class Break(NamedTuple):
    """A breakpoint's answer as read: ``continue``, ``step`` or ``stop``, and a correction to the state."""

    word: str
    update: dict[str, Any] | None = None


class Read(NamedTuple):
    """An answer read at the door: what it decided, as nbgraph checks and records it, and what
    the graph is given for it."""

    decided: Any
    """The tool decisions (a tuple of ``ToolDecision``), the input, or the :class:`Break`."""
    given: Any
    """The interrupt's resume value, in the shape its node reads; a breakpoint's :class:`Break`."""


def where_asked(interrupt: Any, state: Any) -> Where:
    """Where an interrupt was asked, read from the thread's state (an interrupt a run did not see asked)."""
    node = next((task.name for task in state.tasks if any(i.id == interrupt.id for i in task.interrupts)), "")
    return Where(node, node, int(state.metadata.get("step", 0)) + 1, None)


def interrupt_pause(interrupt: Any, where: Where) -> Pause:
    """An interrupt as a pause: a review of tool calls (kind ``"tool"``), else a question.

    Its prompt is the question alone; that an answer runs the node again from its start (as
    LangGraph resumes an interrupted node, from the top) is its ``reruns``, which the box
    shows on a line of its own.
    """
    value = interrupt.value
    review = review_of(value, getattr(interrupt, "response_schema", None))
    if review is not None:
        text, options, kind = review.prompt, None, "tool"
    else:
        (text, options), kind = _question(value), "input"
    return Pause(
        id=interrupt.id,
        kind=kind,
        node=where.node,
        step=where.step,
        path=where.path,
        branch=where.branch,
        prompt=text,
        question=to_jsonable(value, strict=False),
        options=options,
        input_kind="choice" if options else "text",
        tool_calls=review.calls if review is not None else (),
        reruns=Rerun(path=where.path, live=True),
        deciders=_deciders(value),
    )


def _deciders(value: Any) -> tuple[str, ...]:
    """Who may answer an interrupt: the names its value lists under ``"deciders"`` (anyone when none)."""
    named = value.get("deciders") if isinstance(value, Mapping) else None
    if isinstance(named, (list, tuple)) and all(isinstance(name, str) for name in named):
        return tuple(cast("Sequence[str]", named))
    return ()


def break_pauses(
    state: Any, breakpoints: Breakpoints, last: Sequence[Step], inner: Callable[[Any], Any] = lambda config: None
) -> list[Pause]:
    """Where a static breakpoint stopped the graph, one pause per node it stopped at: after the
    nodes of its latest step (``last``: the records of that step, or of the whole thread) that
    have one, else before the nodes it runs next. A node that runs as several tasks (the items
    of a ``Send``) is one pause, as LangGraph stops once for it.

    A sub-graph stopped at its own breakpoint stops its graph too: the pause is then the
    sub-graph's, at its path (``inner/inner_2``). ``state`` read with ``subgraphs=True`` holds
    the sub-graphs' states; else ``inner(config)`` reads the state of a sub-graph's task.

    An answer may carry a correction to the state (``takes_update``), written with
    ``update_state``; not before a node that follows a step of several nodes, where LangGraph
    cannot tell which of them the correction would come from, nor inside a sub-graph.
    """
    return [
        pause
        for level, stopped in _stops(state, "", inner)
        for pause in _level_pauses(level, stopped, breakpoints, last)
    ]


def _stops(state: Any, level: str, inner: Callable[[Any], Any]) -> list[tuple[str, Any]]:
    """The graphs that stopped, deepest first: the sub-graphs whose tasks wait inside them, else ``state``'s own."""
    stopped: list[tuple[str, Any]] = []
    for task in state.tasks:
        sub = task.state if hasattr(task.state, "next") else inner(task.state) if task.state is not None else None
        if sub is not None and sub.next:
            stopped += _stops(sub, f"{level}/{task.name}" if level else task.name, inner)
    return stopped or [(level, state)]


def _level_pauses(level: str, state: Any, breakpoints: Breakpoints, last: Sequence[Step]) -> list[Pause]:
    """The breakpoint pauses of one graph (``level``: its path, "" for the graph itself) stopped at ``state``."""
    step = int(state.metadata.get("step", 0))
    checkpoint = str(state.config["configurable"].get("checkpoint_id", ""))
    ran = [record for record in last if record.step == step and record.path.rpartition("/")[0] == level]
    after: dict[str, list[Step]] = {}
    for record in ran:
        if record.path in breakpoints.after:
            after.setdefault(record.path, []).append(record)
    if after:
        return [
            Pause(
                id=_break_id(checkpoint, "after", path),
                kind="breakpoint",
                node=records[0].node,
                step=step,
                path=path,
                at="after",
                update=to_jsonable(
                    records[0].update if len(records) == 1 else [record.update for record in records], strict=False
                ),
                prompt=f"breakpoint after {path}{_tasks(len(records), 'ran')}",
                takes_update=not level,
            )
            for path, records in after.items()
        ]

    def path_of(node: str) -> str:
        return f"{level}/{node}" if level else node

    waiting = Counter(state.next)
    nodes = [node for node in waiting if path_of(node) in breakpoints.before] or list(waiting)
    known = not level and len({record.node for record in ran}) <= 1
    return [
        Pause(
            id=_break_id(checkpoint, "before", path_of(node)),
            kind="breakpoint",
            node=node,
            step=step + 1,
            path=path_of(node),
            at="before",
            prompt=f"breakpoint before {path_of(node)}{_tasks(waiting[node], 'wait')}",
            takes_update=known,
        )
        for node in nodes
    ]


def _tasks(count: int, verb: str) -> str:
    """How many tasks of one node (a ``Send``'s items) a breakpoint stopped, when several."""
    return f" ({count} tasks {verb})" if count > 1 else ""


def _break_id(checkpoint: str, at: str, path: str) -> str:
    """A breakpoint's pause id: the same for the same checkpoint, in this process or another."""
    return hashlib.blake2b(f"{checkpoint}|{at}|{path}".encode(), digest_size=16).hexdigest()


def bind_answer(
    pauses: Sequence[Pause], answer: Any, pause_id: str | None, *, thread: str, story: Any, shown: str | None = None
) -> dict[str, Any]:
    """:func:`nbgraph.pauses.bind`, and one thing more: a correction to the state given
    without naming its breakpoint while several are open is refused, since each would
    write it once.

    Raises:
        ResumeError: as ``bind`` does, or for such an update.
    """
    given = bind(pauses, answer, pause_id, thread=thread, story=story, shown=shown)
    shared = pause_id is None and not answers_by_id(answer) and len(given) > 1
    if shared and isinstance(answer, Mapping) and cast("Mapping[str, Any]", answer).get("update"):
        raise ResumeError(
            f"thread {thread!r} waits at {len(given)} breakpoints, and an update given to all of them would be "
            f"written once for each: give it to one, run.answer(value, pause=id). Open now: {describe(pauses)}"
        )
    return given


def read_given(pause: Pause, answer: Any, app: Any) -> Read:
    """An answer checked against its pause, before the graph is given anything: what it decided,
    and the form a stream goes on with (an interrupt's resume value, decisions on tool calls
    written in the shape its node reads; or a :class:`Break`).

    A tool review takes nbgraph's decisions or its idiom's own answer (:func:`._review.decisions_in`).
    Every answer must be something a checkpoint keeps (:func:`nbgraph.pauses.read_answer`), and
    what the graph is given something ``app``'s checkpointer can write: else the graph would run
    on it and fail writing its checkpoint, with the interrupt still open.

    Raises:
        ResumeError: the answer does not fit the pause, or could not be kept.
    """
    if pause.kind == "tool":
        review = review_of(pause.question)
        assert review is not None  # (the pause was made from it)
        decisions = read_answer(pause, decisions_in(pause.tool_calls, answer))
        standing = next((decision for decision in decisions if decision.standing), None)
        if standing is not None:
            raise ResumeError(
                f"a LangGraph run keeps no standing approval ({{'standing': {standing.standing!r}}}): approve each "
                "call as it is asked. Nothing was answered; the pause still waits"
            )
        read = Read(decisions, reply_of(review._replace(calls=pause.tool_calls), decisions))
    elif pause.kind == "breakpoint":
        _storable(pause, answer)
        if answer is None:
            held = Break("continue")
        elif isinstance(answer, Mapping):
            held = _read_update(pause, cast("Mapping[str, Any]", answer), app.stream_channels)
        else:
            held = Break(read_break(answer))
        read = Read(held, held)
    else:
        value = read_answer(pause, answer)
        read = Read(value, value)
    written = read.given.update if isinstance(read.given, Break) else read.given
    if written is not None:
        _writable(pause, written, app.checkpointer)
    return read


def decision_for(pause: Pause, read: Read, how: Given) -> Decision:
    """The record of an answer read at the door (:func:`read_given`), given as ``how`` says. A
    breakpoint's correction is its edits, each from what the pause showed (a node's update)."""
    decided = read.decided
    if not isinstance(decided, Break):
        return decision_of(pause, decided, via=how.via, by=how.by, reason=how.reason)
    decision = decision_of(pause, decided.word, via=how.via, by=how.by, reason=how.reason)
    if not decided.update:
        return decision
    update = to_jsonable(decided.update, strict=False)
    seen = cast("Mapping[str, Any]", pause.update) if isinstance(pause.update, Mapping) else {}
    edits = tuple(FieldEdit(field=key, before=seen.get(key), after=value) for key, value in update.items())
    return decision.model_copy(update={"answer": {"answer": decided.word, "update": update}, "edits": edits})


def _storable(pause: Pause, answer: Any) -> None:
    """:func:`nbgraph.pauses.read_answer`'s test, for a breakpoint's answer (which it reads apart)."""
    problem = storable_problem(answer)
    if problem is not None:
        raise ResumeError(f"the answer to {pause.prompt!r} at node {pause.path!r} cannot be stored: {problem}")


def _writable(pause: Pause, value: Any, saver: Any) -> None:
    """Refuse what the graph's checkpointer cannot write (msgpack holds no integer beyond 64 bits)."""
    serde = getattr(saver, "serde", None)
    if serde is None:
        return
    try:
        serde.dumps_typed(value)
    except Exception as exc:
        raise ResumeError(
            f"the answer to {pause.prompt!r} at node {pause.path!r} cannot be written by the graph's checkpointer "
            f"({type(saver).__name__}: {exc}). Nothing was answered; the pause still waits"
        ) from None


def _read_update(pause: Pause, answer: Mapping[str, Any], channels: Any) -> Break:
    shape = "{'answer': 'continue', 'update': {field: value, ...}}"
    unknown = [key for key in answer if key not in ("answer", "update")]
    if unknown:
        raise ResumeError(
            f"a breakpoint's answer looks like {shape}; {', '.join(map(repr, unknown))} is not part of it"
        )
    word = read_break(answer.get("answer", "continue"))
    update = answer.get("update")
    if update is None or (isinstance(update, Mapping) and not update):
        return Break(word)
    if not isinstance(update, Mapping):
        raise ResumeError(f"a breakpoint's update is a mapping of state fields to values, {shape}; got {update!r:.200}")
    if word == "stop":
        raise ResumeError("an update goes with 'continue' or 'step': a run stopped at a breakpoint takes none")
    if not pause.takes_update and "/" in pause.path:
        raise ResumeError(
            f"the breakpoint {pause.at} {pause.path!r} takes no update: it is inside a sub-graph, and LangGraph's "
            "update_state writes the graph's own state (answer 'continue', and correct the state at a breakpoint "
            "of the graph itself)"
        )
    if not pause.takes_update:
        raise ResumeError(
            f"the breakpoint before {pause.path!r} takes no update: several nodes ran in the step before it, and "
            "LangGraph's update_state cannot tell which one the update would come from (fork with an update instead)"
        )
    update = cast("Mapping[str, Any]", update)
    if isinstance(channels, (list, tuple)):
        fields = cast("Sequence[str]", channels)
        stray = [key for key in update if key not in fields]
        if stray:
            raise ResumeError(
                f"the update names {', '.join(map(repr, stray))}, not a field of the graph's state "
                f"(its fields: {', '.join(fields)}); LangGraph would drop it without a word"
            )
    return Break(word, dict(update))


def _question(value: Any) -> tuple[str, tuple[str, ...] | None]:
    """An interrupt's value as a question's text, and the options it offers (a mapping's
    ``"options"``, when they are strings)."""
    if isinstance(value, str):
        return value, None
    options = value.get("options") if isinstance(value, Mapping) else None
    offered = (
        tuple(options) if isinstance(options, (list, tuple)) and all(isinstance(o, str) for o in options) else None
    )
    if isinstance(value, Mapping):
        for key in ("question", "prompt", "message", "text"):
            if isinstance(value.get(key), str):
                return value[key], offered
    return json.dumps(to_jsonable(value, strict=False)), offered


def open_pauses(
    state: Any,
    breakpoints: Breakpoints,
    last: Sequence[Step],
    where: Any = lambda interrupt: None,
    inner: Callable[[Any], Any] = lambda config: None,
) -> list[Pause]:
    """The pauses a thread's state waits at: its interrupts (``where(interrupt)`` says where each
    was asked, when known), else its static breakpoints (see :func:`break_pauses` for ``inner``);
    none when it waits for nothing."""
    if not state.next:
        return []
    asked = [interrupt_pause(i, where(i) or where_asked(i, state)) for i in state.interrupts]
    return asked or break_pauses(state, breakpoints, last, inner)
