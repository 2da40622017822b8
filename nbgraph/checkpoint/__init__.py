"""Checkpointers: where runs keep their progress so they can be resumed and forked."""

from .base import Checkpoint, Checkpointer, Status
from .memory import MemoryCheckpointer
from .redis import RedisCheckpointer
from .sqlite import SQLiteCheckpointer

__all__ = ["Checkpoint", "Checkpointer", "MemoryCheckpointer", "RedisCheckpointer", "SQLiteCheckpointer", "Status"]
