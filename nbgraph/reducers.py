"""Reducers: how a state field folds a node's update into its current value.

The ``append`` reducer keeps its items in an :class:`AppendLog`, a read-only sequence
whose versions share one backing list, so a conversation that grows by a message
per step costs the same per step at 10,000 messages as at 10.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from itertools import islice
from typing import Any, NamedTuple, overload

__all__ = ["AppendLog", "Reducer", "accumulate", "append", "merge", "overwrite"]


class Reducer(NamedTuple):
    """How a field combines its current value with an update.

    Use one of the shipped reducers in ``Annotated[type, reducer]``, or your own
    ``fn(current, update) -> new`` there (``operator.add``, a function, a lambda; this
    wraps it, named). A reducer must not mutate either argument: a list it extends in
    place would change the states already recorded, and a checkpoint would miss it.
    """

    name: str
    fn: Callable[[Any, Any], Any]

    def __call__(self, current: Any, update: Any) -> Any:
        return self.fn(current, update)


def _item_id(item: Any) -> Any:
    if isinstance(item, Mapping):
        return item.get("id")
    return getattr(item, "id", None)


class AppendLog(Sequence[Any]):
    """A read-only sequence kept by the ``append`` reducer; items with an ``id`` are unique.

    Every version of a field's log shares one backing list and one id index: a
    version sees the first ``len(version)`` items. Appending to the newest version
    extends the backing list in place (amortised O(1) per item) and returns a longer
    view; the older views it leaves behind see exactly what they saw before.
    Appending to an older version (a fork, a replay) or replacing an item by id
    copies first, so no version ever changes.
    """

    __slots__ = ("_items", "_index", "_len")

    def __init__(self, items: Sequence[Any] = ()) -> None:
        self._items: list[Any] = []
        self._index: dict[Any, int] = {}
        self._len = 0
        if items:
            _extend(self, items)

    @classmethod
    def _view(cls, items: list[Any], index: dict[Any, int], length: int) -> AppendLog:
        log = object.__new__(cls)
        log._items, log._index, log._len = items, index, length
        return log

    def extended(self, items: Sequence[Any]) -> AppendLog:
        """A new version with ``items`` appended (an item whose id is present replaces it)."""
        items_, index, n = self._items, self._index, self._len
        if len(items_) != n:
            # An older version: later items are not ours to build on.
            items_ = items_[:n]
            index = {key: pos for key, pos in index.items() if pos < n}
        log = AppendLog._view(items_, index, n)
        _extend(log, items)
        return log

    def __len__(self) -> int:
        return self._len

    @overload
    def __getitem__(self, i: int) -> Any: ...

    @overload
    def __getitem__(self, i: slice) -> tuple[Any, ...]: ...

    def __getitem__(self, i: int | slice) -> Any:
        if isinstance(i, slice):
            return tuple(self._items[j] for j in range(*i.indices(self._len)))
        n = self._len
        if i < 0:
            i += n
        if not 0 <= i < n:
            raise IndexError("AppendLog index out of range")
        return self._items[i]

    def __iter__(self) -> Iterator[Any]:
        return islice(self._items, self._len)

    def __contains__(self, item: object) -> bool:
        key = _item_id(item)
        if key is not None:
            pos = self._index.get(key)
            return pos is not None and pos < self._len and self._items[pos] == item
        return any(x == item for x in self)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (AppendLog, list, tuple)):
            return len(other) == self._len and all(a == b for a, b in zip(self, other, strict=True))
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __add__(self, other: Sequence[Any]) -> list[Any]:
        return [*self, *other]

    def __repr__(self) -> str:
        return repr(list(self))


def _extend(log: AppendLog, items: Sequence[Any]) -> None:
    """Append to ``log``'s backing list in place; the caller owns the newest version."""
    backing, index = log._items, log._index
    shared = True  # the backing list may be seen by other versions until we copy it
    for item in items:
        key = _item_id(item)
        if key is None:
            backing.append(item)
            continue
        pos = index.get(key)
        if pos is None:
            index[key] = len(backing)
            backing.append(item)
            continue
        # Same id again (a replayed step, an edited message): replace, never duplicate.
        if shared:
            backing, index = list(backing), dict(index)
            log._items, log._index = backing, index
            shared = False
        backing[pos] = item
    log._len = len(backing)


def _append(current: Any, update: Any) -> AppendLog:
    log = current if isinstance(current, AppendLog) else AppendLog(current or ())
    if update is None:
        return log
    return log.extended(update if isinstance(update, (list, tuple, AppendLog)) else (update,))


def _merge(current: Any, update: Any) -> dict[Any, Any]:
    if update is None:
        return dict(current or {})
    if not isinstance(update, Mapping):
        raise TypeError(f"merge expects a mapping, got {type(update).__name__}")
    return {**(current or {}), **update}


def _accumulate(current: Any, update: Any) -> Any:
    if update is None:
        return current
    if isinstance(update, Mapping):
        totals = dict(current or {})
        for key, amount in update.items():
            totals[key] = totals.get(key, 0) + amount
        return totals
    return (current or 0) + update


overwrite = Reducer("overwrite", lambda current, update: update)
"""The default: the latest value wins."""

append = Reducer("append", _append)
"""List append; items with an ``id`` already present replace it instead of duplicating."""

merge = Reducer("merge", _merge)
"""Shallow dict merge: keys in the update win."""

accumulate = Reducer("accumulate", _accumulate)
"""Running total: numbers add up; dicts of numbers add up key by key."""
