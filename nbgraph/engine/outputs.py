"""What a node's return value means: an update, a command (``Goto``, ``End``), or ``Send`` items.

Checked here, once per call, so a bad return fails the step with the node's name and
what it returned, and a ``Send`` payload that could not be checkpointed never runs. A
coroutine the node did not await is closed as its step fails, so Python never warns of it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from inspect import iscoroutine
from typing import Any, cast

from ..errors import InvalidUpdate, did_you_mean
from ..history import FiredEdge, Frame
from ..names import END, End, Goto, Send
from ..plan import Hop, NodePlan, Plan
from ..state import close_coroutines, to_jsonable, unawaited

__all__ = ["read_output"]


def read_output(out: Any, node: NodePlan, plan: Plan) -> tuple[Mapping[str, Any] | None, Hop | None]:
    """A node's return value: its update, and where a command it returned leads."""
    if out is None or isinstance(out, Mapping):
        return cast("Mapping[str, Any] | None", out), None
    try:
        return _command(out, node, plan)
    except InvalidUpdate:
        _close(out)
        raise


def _command(out: Any, node: NodePlan, plan: Plan) -> tuple[Mapping[str, Any] | None, Hop | None]:
    name = node.name
    if isinstance(out, Goto):
        target = out.node
        allowed = node.spec.destinations
        if target != END and target not in plan.nodes:
            raise InvalidUpdate(
                f"node {name!r} returned Goto({target!r}), which is not a node of the graph"
                f"{did_you_mean(target, plan.nodes)}",
                node=name,
            )
        if allowed is not None and target not in allowed:
            raise InvalidUpdate(
                f"node {name!r} returned Goto({target!r}), but it declares destinations="
                f"{list(allowed)!r}; add {target!r} there",
                node=name,
            )
        return _update(out.update, name, "Goto"), plan.goto(name, target)
    if isinstance(out, End):
        return _update(out.update, name, "End"), plan.goto(name, END)
    if isinstance(out, Send):  # (a Send is a tuple itself: it is one item, not a list of them)
        return _sends((out,), node, plan)
    if isinstance(out, (list, tuple)):
        items = cast("Sequence[Any]", out)
        if any(isinstance(item, Send) for item in items):
            return _sends(items, node, plan)
    returned = cast(object, out)  # (anything else: refused below)
    if iscoroutine(returned):
        raise unawaited(returned, f"node {name!r} returned", node=name)
    raise InvalidUpdate(
        f"node {name!r} returned {type(returned).__name__} {returned!r:.80}; a node must return a dict of "
        "state updates, None, Goto(node, update=...), End(update=...), or Send(node, payload) items",
        node=name,
    )


def _update(update: Any, name: str, command: str) -> Mapping[str, Any] | None:
    """A ``Goto``'s or ``End``'s update, checked to be one."""
    if update is None or isinstance(update, Mapping):
        return cast("Mapping[str, Any] | None", update)
    if iscoroutine(update):
        raise unawaited(update, f"node {name!r} gave {command}(update=...)", node=name)
    raise InvalidUpdate(
        f"node {name!r} gave {command}(update=...) {type(update).__name__} {update!r:.60}; an update is a dict",
        node=name,
    )


def _close(out: Any) -> None:
    """Close the coroutines in a return value that failed its step (the value, a command's
    update, a ``Send``'s payload, an update dict among ``Send`` items)."""
    if iscoroutine(out):
        out.close()
    elif isinstance(out, (Goto, End)):
        _close(out.update)
    elif isinstance(out, Send):
        _close(out.payload)
    elif isinstance(out, Mapping):
        close_coroutines(cast("Mapping[str, Any]", out).values())
    elif isinstance(out, (list, tuple)):
        for item in cast("Sequence[Any]", out):
            _close(item)


def _sends(items: Sequence[Any], node: NodePlan, plan: Plan) -> tuple[Mapping[str, Any] | None, Hop]:
    """``Send`` items (and at most one update dict): a branch per item, in the order returned."""
    name = node.name
    allowed = node.spec.destinations
    update: Mapping[str, Any] | None = None
    frames: list[Frame] = []
    for item in items:
        if isinstance(item, Mapping):
            if update is not None:
                raise InvalidUpdate(
                    f"node {name!r} returned two updates with its Send items; return one dict", node=name
                )
            update = cast("Mapping[str, Any]", item)
            continue
        if not isinstance(item, Send):
            raise InvalidUpdate(
                f"node {name!r} returned {type(item).__name__} {item!r:.60} among its Send items; "
                "return Send(node, payload) items and at most one update dict",
                node=name,
            )
        if item.node not in plan.nodes:
            raise InvalidUpdate(
                f"node {name!r} sent to {item.node!r}, which is not a node of the graph{did_you_mean(item.node, plan.nodes)}",
                node=name,
            )
        if allowed is not None and item.node not in allowed:
            raise InvalidUpdate(
                f"node {name!r} sent to {item.node!r}, but it declares destinations={list(allowed)!r}; "
                f"add {item.node!r} there",
                node=name,
            )
        if iscoroutine(item.payload):
            raise unawaited(item.payload, f"node {name!r} sent {item.node!r}", node=name)
        try:
            to_jsonable(item.payload)
        except Exception as exc:
            raise InvalidUpdate(
                f"node {name!r} sent {item.node!r} a payload that cannot be stored as JSON ({exc}); send plain data",
                node=name,
            ) from None
        frames.append(plan.nodes[item.node].frame._replace(payload=item.payload))
    targets = tuple(dict.fromkeys(frame.node for frame in frames))
    edge = FiredEdge(name, frames[0].node if frames else END, "send", False, targets if len(targets) > 1 else ())
    return update, Hop(edge, tuple(frames))
