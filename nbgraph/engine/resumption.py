"""What a resume brings to the run it continues: the answers to the pauses its thread stopped
at, and where inside its steps the run was.

Every run has one; a run that continues no thread has an empty one, which brings nothing.
The step machinery consumes it, each part once, through the methods below.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    from ..decision import Decision
    from ..pauses import Pause

__all__ = ["Resumption", "Where"]

Where = tuple[str, "str | None"]
"""A node's place in the run: its path and its branch."""


class Resumption:
    """The answers and places a resumed run takes up where its thread stopped."""

    __slots__ = (
        "_asked", "_before", "_decisions", "_earlier", "_gates", "_inputs", "_levels", "_verdicts", "budget",
        "decided", "rerunning", "settled",
    )  # fmt: skip

    def __init__(self) -> None:
        self.budget: tuple[Pause, Any] | None = None
        """The budget pause the run stopped at before a step, and its answer: settled as the run starts."""
        self._verdicts: dict[str, Any] = {}
        self._inputs: dict[str, tuple[Pause, Any]] = {}
        self._levels: dict[str, Any] = {}
        self._asked: dict[str, Pause] = {}
        self._before: dict[Where, tuple[Pause, Any]] = {}
        self._gates: dict[Where, tuple[Pause, Any]] = {}
        self.rerunning: set[Where] = set()
        """Where nodes stopped at a question asked inside them (an input, a tool call): they run
        again from their start (their ``node-enter`` says ``rerun``)."""
        self._decisions: dict[str, Decision] = {}
        self.settled: list[tuple[Pause, Any, Decision]] = []
        """Answers settled as the run starts (a budget pause's), announced once it has."""
        self.decided: dict[str, tuple[Pause, Decision]] = {}
        """The answers resumes gave to questions inside nodes that have not finished, by pause
        id: the pause and the decision's record. A node that stops at a later question runs
        again on the next resume: its record, once it finishes, must still show every answer
        it ran on, so the thread keeps them until then (:meth:`kept_decided`)."""
        self._earlier: list[tuple[Pause, Any, Decision]] = []

    def begin(self, last_pauses: tuple[Pause, ...], levels: Mapping[str, Any]) -> None:
        """The thread stopped at ``last_pauses``, inside the sub-graph ``levels``."""
        self._levels = dict(levels)
        # Questions left open keep their id (and deadline) when asked again: an answer given
        # for one in the meantime (with the id the person saw) still lands.
        self._asked = {pause.slot: pause for pause in last_pauses if pause.slot}
        # A breakpoint before a node that is not answered pauses again, with the same id.
        self._before = {
            (pause.path, pause.branch): (pause, None)
            for pause in last_pauses
            if pause.kind == "breakpoint" and pause.at == "before"
        }
        # An approval before a node that is not answered asks again, with the same id.
        self._gates = {
            (pause.path, pause.branch): (pause, None)
            for pause in last_pauses
            if pause.kind == "approval" and pause.at == "before"
        }
        self.rerunning = {(pause.path, pause.branch) for pause in last_pauses if pause.slot}

    def answer(self, pause: Pause, value: Any, decision: Decision) -> None:
        """Take the answer to ``pause``, which the checkpoint holds open, and its record (a
        budget pause's limits apply as the run starts; ``stop`` ends it there)."""
        self._decisions[pause.id] = decision
        if pause.kind == "budget":
            self.settled.append((pause, value, decision))
            if pause.reruns is not None:  # (asked in the middle of a node: it runs again from its start)
                self.rerunning.add((pause.path, pause.branch))
        if pause.slot is not None:  # asked inside a node (an input, a tool call): kept at its slot
            self._inputs[pause.slot] = (pause, value)
            self.decided[pause.id] = (pause, decision)
        elif pause.kind == "breakpoint" and pause.at == "before":
            self._before[(pause.path, pause.branch)] = (pause, value)  # the node runs; its record shows the pause
        elif pause.kind == "approval" and pause.at == "before":
            self._gates[(pause.path, pause.branch)] = (pause, value)
        elif pause.kind == "budget":
            if value == "stop":
                self.budget = (pause, value)
        else:
            self._verdicts[pause.id] = value  # after a node: where the checkpoint keeps its step

    def take_up(self, kept: Any) -> None:
        """Take up the answers earlier resumes gave to questions inside nodes that have not
        finished (``kept``: as :meth:`kept_decided` wrote them): each node shows them again
        when it runs (:meth:`earlier`)."""
        if not isinstance(kept, Mapping) or not kept:
            return
        from ..decision import Decision
        from ..pauses import Pause

        for pause_id, entry in cast("Mapping[str, Mapping[str, Any]]", kept).items():
            pause, decision = Pause.model_validate(entry["pause"]), Decision.model_validate(entry["decision"])
            self._earlier.append((pause, decision.answer, decision))
            self.decided[pause_id] = (pause, decision)

    def kept_decided(self) -> dict[str, Any] | None:
        """:attr:`decided` as the thread keeps it (JSON); None when there is none."""
        if not self.decided:
            return None
        return {
            pause_id: {"pause": pause.model_dump(mode="json"), "decision": decision.model_dump(mode="json")}
            for pause_id, (pause, decision) in self.decided.items()
        }

    def earlier(self, path: str, branch: str | None, step: int) -> list[tuple[Pause, Any, Decision]]:
        """The questions inside the call of the node at ``path`` on ``branch`` in ``step`` that
        earlier resumes answered, with their answers and records, once."""
        if not self._earlier:
            return []
        mine = [
            entry for entry in self._earlier if (entry[0].path, entry[0].branch, entry[0].step) == (path, branch, step)
        ]
        if mine:
            self._earlier = [entry for entry in self._earlier if all(entry is not taken for taken in mine)]
        return mine

    def finished(self, path: str, branch: str | None, step: int) -> None:
        """The call of the node at ``path`` on ``branch`` in ``step`` finished: its record holds
        the answers given inside it, which the thread need keep no longer."""
        done = [
            pause_id
            for pause_id, (pause, _) in self.decided.items()
            if (pause.path, pause.branch, pause.step) == (path, branch, step)
        ]
        for pause_id in done:
            del self.decided[pause_id]

    # -- taken up as the run meets each place -------------------------------------------

    def decision(self, pause_id: str) -> Decision | None:
        """The record of the answer this resume brought to ``pause_id``, once."""
        return self._decisions.pop(pause_id, None) if self._decisions else None

    def verdict(self, pause_id: str) -> Any | None:
        """The answer to a pause after a node whose step a checkpoint kept (None: not answered)."""
        return self._verdicts.pop(pause_id, None) if self._verdicts else None

    def input(self, slot: str) -> tuple[Pause, Any] | None:
        """The pause asked inside a node answered for ``slot`` and its answer, once: the node
        shows them where a live run would."""
        return self._inputs.pop(slot, None) if self._inputs else None

    def asked(self, slot: str) -> Pause | None:
        """The question left open at ``slot``, whose id and deadline the pause that asks it again keeps."""
        return self._asked.pop(slot, None) if self._asked else None

    def rerun(self, where: Where) -> bool:
        """Whether the node at ``where`` runs again after stopping at an input (said once)."""
        if self.rerunning and where in self.rerunning:
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

    def gate(self, where: Where) -> tuple[Pause, Any] | None:
        """The approval before the node at ``where`` the run stopped at, and the verdict a resume
        brought (None: it asks again)."""
        return self._gates.pop(where, None) if self._gates else None

    def level(self, key: str) -> Any | None:
        """The sub-graph level a checkpoint kept at ``key``, to enter again where it stopped."""
        return self._levels.pop(key, None) if self._levels else None
