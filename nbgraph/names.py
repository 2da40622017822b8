"""The reserved node names, the commands a node may return, and identifiers."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any, NamedTuple

__all__ = ["END", "START", "End", "Goto", "Send", "new_id"]

START = "__start__"
"""The entry point: ``add_edge(START, "first")``."""
END = "__end__"
"""The exit: an edge to END finishes the run with outcome ``done``."""


class Goto(NamedTuple):
    """Returned by a node: go to ``node`` next, ignoring its edges, after applying ``update``."""

    node: str
    update: Mapping[str, Any] | None = None


class End(NamedTuple):
    """Returned by a node: finish the run after applying ``update``."""

    update: Mapping[str, Any] | None = None


class Send(NamedTuple):
    """Returned by a node (alone, or in a list with other ``Send`` items and at most one
    update dict): run ``node`` with ``payload`` as its first argument, as a branch of its own.

    The branches of one step run together; when all have settled their updates fold
    into the state in the order the ``Send`` items were returned, and routing goes on
    from ``node``'s edges once.
    """

    node: str
    payload: Any = None


def new_id(prefix: str = "", size: int = 16) -> str:
    """A random hex id (thread, pause, message, lease token).

    As unique as ``uuid4().hex`` at a fraction of its cost.
    """
    return prefix + os.urandom(size).hex()
