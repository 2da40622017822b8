"""A saver with no asynchronous methods (``SqliteSaver``) made to run a stream: :func:`runnable`
gives the graph a copy of it whose asynchronous methods call its synchronous ones.
"""

from __future__ import annotations

import copy
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any

__all__ = ["runnable"]

_ASYNC_NAMES = (
    "aget",
    "aget_tuple",
    "aput",
    "aput_writes",
    "adelete_thread",
    "adelete_for_runs",
    "acopy_thread",
    "aprune",
    "aget_delta_channel_history",
)
_answers_async: dict[type, bool] = {}
"""Saver class -> whether its asynchronous methods work (``SqliteSaver``'s raise)."""
_inline_classes: dict[type, type] = {}


async def runnable(app: Any, config: Mapping[str, Any]) -> Any:
    """``app``, or, when its checkpointer has no asynchronous methods (``SqliteSaver``), a copy
    whose checkpointer answers them with its synchronous ones, so that ``astream`` runs it.

    The checkpoints land in the same store, written on the loop's thread, one at a time.
    """
    saver = app.checkpointer
    kind = type(saver)
    answers = _answers_async.get(kind)
    if answers is None:
        try:
            await saver.aget_tuple(config)
            answers = True
        except NotImplementedError:
            answers = False
        _answers_async[kind] = answers
    if answers:
        return app
    inline = copy.copy(saver)
    inline.__class__ = _inline_class(kind)
    return app.copy(update={"checkpointer": inline})


def _inline_class(kind: type) -> type:
    """``kind`` with each asynchronous method calling its synchronous twin."""
    made = _inline_classes.get(kind)
    if made is None:
        methods: dict[str, Any] = {name: _calling(name[1:]) for name in _ASYNC_NAMES if hasattr(kind, name[1:])}

        async def alist(self: Any, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
            for item in self.list(*args, **kwargs):
                yield item

        methods["alist"] = alist
        made = _inline_classes[kind] = type(kind.__name__, (kind,), methods)
    return made


def _calling(name: str) -> Callable[..., Any]:
    async def call(self: Any, *args: Any, **kwargs: Any) -> Any:
        return getattr(self, name)(*args, **kwargs)

    call.__name__ = f"a{name}"
    return call
