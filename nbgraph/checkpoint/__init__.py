"""Checkpointers: where runs keep their progress so they can be resumed and forked.

``SQLiteCheckpointer``, ``RedisCheckpointer`` and ``PostgresCheckpointer`` load on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .base import Checkpoint, Checkpointer, Status
from .memory import MemoryCheckpointer

if TYPE_CHECKING:
    from .postgres import PostgresCheckpointer
    from .redis import RedisCheckpointer
    from .sqlite import SQLiteCheckpointer

__all__ = [
    "Checkpoint",
    "Checkpointer",
    "MemoryCheckpointer",
    "PostgresCheckpointer",
    "RedisCheckpointer",
    "SQLiteCheckpointer",
    "Status",
]

_LAZY = {"PostgresCheckpointer": "postgres", "RedisCheckpointer": "redis", "SQLiteCheckpointer": "sqlite"}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'nbgraph.checkpoint' has no attribute {name!r}")
    from importlib import import_module

    value = getattr(import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value
