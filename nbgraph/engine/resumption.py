"""What a resume brings to the run it continues: the answers to the pauses the thread
stopped at, and where inside its steps the run was.

:func:`~nbgraph.engine.persistence.restore` builds one from the checkpoint and the
answers; the step machinery consumes it, each part once, through the methods below.
A run that did not resume a thread has none.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..pauses import Pause

__all__ = ["Resumption"]

Where = tuple[str, "str | None"]
"""A node's place in the run: its path and its branch."""


class Resumption:
    """The answers and places a resumed run takes up where its thread stopped."""

    __slots__ = ("_asked", "_before", "_inputs", "_levels", "_verdicts", "at_step", "rerunning")

    def __init__(self, last_pauses: tuple[Pause, ...], levels: Mapping[str, Any]) -> None:
        self.at_step: tuple[Pause, Any] | None = None
        """The pause the run's own last step waits on (an approval or a breakpoint after its
        node, a budget raise) and its answer: settled before the run walks on."""
        self._verdicts: dict[str, Any] = {}
        self._inputs: dict[str, tuple[Pause, Any]] = {}
        self._levels: dict[str, Any] = dict(levels)
        # Questions left open keep their id when asked again: an answer given for one in
        # the meantime (with the id the person saw) still lands.
        self._asked = {pause.slot: pause.id for pause in last_pauses if pause.kind == "input" and pause.slot}
        # A breakpoint before a node that is not answered pauses again, with the same id.
        self._before: dict[Where, tuple[Pause, Any]] = {
            (pause.path, pause.branch): (pause, None)
            for pause in last_pauses
            if pause.kind == "breakpoint" and pause.at == "before"
        }
        self.rerunning: set[Where] = {(pause.path, pause.branch) for pause in last_pauses if pause.kind == "input"}
        """Where nodes stopped at an input: they run again from their start (their
        ``node-enter`` says ``rerun``)."""

    def answer(self, pause: Pause, value: Any) -> None:
        """Take the answer to ``pause``, which the checkpoint holds open (a budget pause's only
        when it is ``stop``: raised limits apply as the run starts)."""
        if pause.kind == "input":
            self._inputs[pause.slot or ""] = (pause, value)
        elif pause.kind == "breakpoint" and pause.at == "before":
            self._before[(pause.path, pause.branch)] = (pause, value)  # the node runs; its record shows the pause
        elif pause.kind == "budget" or (pause.branch is None and "/" not in pause.path):
            self.at_step = (pause, value)
        else:
            self._verdicts[pause.id] = value  # a branch's, or a sub-graph's: where its step is kept

    # -- taken up as the run meets each place -------------------------------------------

    def verdict(self, pause_id: str) -> Any | None:
        """The answer to a pause after a node whose step a checkpoint kept (None: not answered)."""
        return self._verdicts.pop(pause_id, None)

    def input(self, slot: str) -> tuple[Pause, Any] | None:
        """The input pause answered for ``slot`` and its answer, once: the node shows them where
        a live run would."""
        return self._inputs.pop(slot, None)

    def asked_id(self, slot: str) -> str | None:
        """The id of the open question at ``slot``, for the pause that asks it again."""
        return self._asked.pop(slot, None)

    def rerun(self, where: Where) -> bool:
        """Whether the node at ``where`` runs again after stopping at an input (said once)."""
        if where in self.rerunning:
            self.rerunning.discard(where)
            return True
        return False

    @property
    def breaks_waiting(self) -> bool:
        """Whether some breakpoint before a node waits to be passed (or asked again)."""
        return bool(self._before)

    def break_before(self, where: Where) -> tuple[Pause, Any] | None:
        """The breakpoint pause the run stopped at before the node at ``where``, and the answer
        a resume brought (None: it asks again)."""
        return self._before.pop(where, None) if self._before else None

    def level(self, key: str) -> Any | None:
        """The sub-graph level a checkpoint kept at ``key``, to enter again where it stopped."""
        return self._levels.pop(key, None) if self._levels else None
