"""What a step changed in the state, field by field, at the cost of what changed."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..reducers import AppendLog
from ..state import to_jsonable
from ._models import Change, Replaced, StateDiff

__all__ = ["diff_states"]


def diff_states(before: Mapping[str, Any], after: Mapping[str, Any]) -> StateDiff:
    """What changed from ``before`` to ``after`` (two states' field dicts), in JSON form.

    A field holding the same object is unchanged (the engine never mutates a value);
    an ``append`` field's versions share one backing list, so finding what a step
    appended costs the appended items, not the conversation.
    """
    added: dict[str, Any] = {}
    changed: dict[str, Change] = {}
    appended: dict[str, list[Any]] = {}
    replaced: dict[str, list[Replaced]] = {}
    for key, value in after.items():
        if key not in before:
            added[key] = _json(value)
            continue
        old = before[key]
        if old is value:
            continue
        grown = _grown(old, value)
        if grown is not None:
            new_items, swapped = grown
            if new_items:
                appended[key] = [_json(item) for item in new_items]
            if swapped:
                replaced[key] = [Replaced(index=i, before=_json(a), after=_json(b)) for i, a, b in swapped]
            continue
        if _equal(old, value):
            continue
        changed[key] = Change(before=_json(old), after=_json(value))
    removed = [key for key in before if key not in after]
    return StateDiff(added=added, changed=changed, removed=removed, appended=appended, replaced=replaced)


def _grown(old: Any, new: Any) -> tuple[Sequence[Any], list[tuple[int, Any, Any]]] | None:
    """For a list that kept its items and grew: the new items and those replaced in place."""
    if type(old) is AppendLog and type(new) is AppendLog and old._items is new._items and new._len >= old._len:
        return new._items[old._len : new._len], []  # one backing list: nothing before was replaced
    if not isinstance(old, (list, tuple, AppendLog)) or not isinstance(new, (list, tuple, AppendLog)):
        return None
    if len(new) < len(old):
        return None
    swapped = [(i, a, b) for i, (a, b) in enumerate(zip(old, new, strict=False)) if a is not b and not _equal(a, b)]
    if len(swapped) > len(old) // 2 and swapped:
        return None  # a new list, not the old one grown
    return list(new[len(old) :]), swapped


def _equal(a: Any, b: Any) -> bool:
    try:
        return bool(a == b)
    except Exception:
        return False


def _json(value: Any) -> Any:
    return to_jsonable(value, strict=False)
