"""How a run ends: the outcome and what comes with it."""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal, NamedTuple

if TYPE_CHECKING:
    from ..pauses import Pause

__all__ = ["Ending", "Outcome"]

Outcome = Literal["done", "failed", "aborted", "interrupted", "denied"]
"""How a run ended.

- ``done``: reached END (or max_steps with return_last / flag).
- ``failed``: a node, condition or router raised, or an update was invalid.
- ``aborted``: cancelled, a budget or the same-node limit was exceeded.
- ``interrupted``: waiting for a person; go on with ``g.invoke(Resume(result, answer))``.
- ``denied``: a person denied an approval and the node has no ``on_deny`` target.
"""


class Ending(NamedTuple):
    """What the walker hands back when a run stops."""

    outcome: Outcome
    reason: str | None = None
    error: BaseException | None = None
    pauses: tuple[Pause, ...] = ()
    hit_max_steps: bool = False
