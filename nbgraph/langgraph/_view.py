"""nbgraph's live view of LangGraph graphs: :class:`LangGraphView`.

It is :class:`~nbgraph.widget.GraphView` drawing a LangGraph graph; a run of it meets the
view through the same door as the engine's runs (:class:`~nbgraph.viewed.ViewedRun`).
What the view asks of the engine itself is asked of LangGraph here instead: a step's
inspection (from the run's stream or the thread's checkpoints) and a fork (LangGraph's
``update_state`` on a checkpoint, and a run from it).

An edge a run takes that the drawing does not have (a ``Send`` or a ``Command(goto=...)``
that ``get_graph()`` could not see) is added to the drawing the first time it is taken,
marked as discovered, live and in a replay alike.
"""

from __future__ import annotations

from typing import Any

import traitlets

from .._inspector import inspection_message
from .._observer import edge_key, place
from ..answering import Given
from ..widget import GraphView
from ._drawing import Shape, discovered
from ._run import LangGraphRun, UnsupportedByLangGraph
from ._starts import forked, resumed
from ._thread import ThreadSteps, inspect_entry, step_index

__all__ = ["LangGraphView", "show"]


class LangGraphView(GraphView):
    """A LangGraph graph drawn top to bottom, and a run or a thread of it when bound to one."""

    def __init__(self, plan: Shape | None = None, *, steps: ThreadSteps | None = None, **kwargs: Any) -> None:
        super().__init__(dag=plan.dag if plan is not None else {}, **kwargs)
        if plan is not None:
            self.breakpoints = {"before": sorted(plan.breakpoints.before), "after": sorted(plan.breakpoints.after)}
        self.steps = steps
        """The thread's steps the view shows when no run is bound to it (a replay)."""
        self._routers = plan.routers if plan is not None else {}
        self._drawn: tuple[Any, dict[str, tuple[str, str]], set[str]] | None = None
        """The drawing last read for what it draws: the DAG, its node paths and its edges' keys."""

    @traitlets.observe("fired")
    def _discover(self, change: Any) -> None:
        """Draw the edges a run took that the drawing does not have, marked as discovered."""
        drawn = self._drawn
        if drawn is None or drawn[0] is not self.dag:
            drawn = self._drawn = (self.dag, *_drawn_paths(self.dag))
        _, nodes, edges = drawn
        missing = [key for key in change["new"] if key not in edges]
        found = [ends for key in missing if (ends := _ends(key, nodes)) is not None]
        if not found:
            return
        dag = _copy_levels(self.dag)
        for source, target in found:
            level, name = nodes[source]
            held = _level_of(dag, level)
            router = self._routers.get(level, {}).get(name)
            held["edges"] = [*held["edges"], discovered(name, nodes[target][1], router)]
        self.dag = dag

    def _shown(self) -> ThreadSteps:
        observer = self.observer
        if observer is not None:
            run = observer.run
            assert isinstance(run, LangGraphRun)
            return run.steps()
        if self.steps is None:
            raise ValueError("this view shows a graph, not a run: there is no step to inspect or fork")
        return self.steps

    def inspection(self, content: dict[str, Any]) -> dict[str, Any]:
        """The inspector's message for ``{"type": "inspect", ...}``: a step named by ``step``
        (with ``where``, the log line's place), ``node`` (its latest step) or ``frame``.

        Raises:
            ValueError: the run has no such step.
        """
        shown = self._shown()
        entries = shown.entries
        frame, node, step, where = (content.get(key) for key in ("frame", "node", "step", "where"))
        if isinstance(frame, int) and not isinstance(frame, bool):
            if not 0 < frame <= len(entries):
                raise ValueError(f"the run has frames 1 to {len(entries)} to inspect, not {frame}")
            index = frame - 1
        elif isinstance(node, str):
            index = next((i for i in range(len(entries) - 1, -1, -1) if entries[i].record.path == node), -1)
            if index < 0:
                raise ValueError(f"node {node!r} has not run in this run: there is no step of it to inspect")
        elif isinstance(step, int) and not isinstance(step, bool) and isinstance(where, str):
            index = next(
                (
                    i
                    for i in range(len(entries) - 1, -1, -1)
                    if entries[i].record.step == step
                    and place(entries[i].record.path, entries[i].record.branch) == where
                ),
                -1,
            )
            if index < 0:
                raise ValueError(f"the run has no step {step} at {where!r} to inspect")
        elif isinstance(step, int) and not isinstance(step, bool):
            index = step_index(entries, step)
        else:
            raise ValueError("an 'inspect' message needs a step (a number), a node (a path) or a frame")
        return inspection_message(inspect_entry(entries[index], shown, shown.missing))

    def toggle_breakpoint(self, path: Any) -> bool:
        raise UnsupportedByLangGraph(
            f"no breakpoint at {path!r} from the view: a LangGraph graph's breakpoints are compiled into it "
            "(compile it with interrupt_before=[...] / interrupt_after=[...])"
        )

    def resume(self, pause_id: str, value: Any, given: Given) -> bool:
        """An answer to a pause of a run that has ended ``interrupted``: resume its thread here
        with it (each interrupted node runs again from its start, as LangGraph resumes), recorded
        as ``given`` and refused if the pause shows something else than ``given.shown``.
        False when the pause is not one the run ended waiting for (a stale click)."""
        observer = self.observer
        assert observer is not None
        run = observer.run
        assert isinstance(run, LangGraphRun)
        result = run.result()
        if result.outcome != "interrupted" or all(pause.id != pause_id for pause in result.pauses):
            return False
        going_on = resumed(result.replay(), value, pause_id, how=given)
        self._bind(going_on, carry=observer).note(f"resumed from its checkpoint with the answer to {pause_id}")
        going_on.launch()
        return True

    def fork(self, step: int, graph: Any = None, update: Any = None) -> LangGraphRun:
        """Fork the view's thread after ``step`` (what "Fork from here" does) and show the fork here.

        LangGraph's ``update_state`` writes ``update`` onto the checkpoint after ``step`` (none:
        the fork goes on from that checkpoint as it is) and a run goes on from there in the
        same thread: the steps up to ``step`` are kept, nothing before it runs again. The path
        the thread took before stays drawn beside it (``previous``); a run of it still waiting
        for an answer is stopped. Returns the new run.

        Raises:
            ValueError: the view shows no thread, or ``step`` is not one of its steps.
        """
        if graph is not None:
            raise UnsupportedByLangGraph("a LangGraph fork goes on with the graph the thread ran: give no graph=")
        old = self.observer
        shown = self._shown()
        run = forked(shown, step, update)
        self.previous = {"thread": shown.thread, "step": step, "visits": dict(self.visits), "fired": dict(self.fired)}
        if old is not None and not old.run.done:
            old.detach()
            old.run.cancel()  # it waited for an answer; its fork goes on instead
        self.steps = None
        self.frames = {}
        self.problems = []
        observer = self._bind(run, seen=0)  # the shared steps first, then the fork's own
        observer.note(
            f"fork of {shown.thread} after step {step}: steps up to {step} are kept, nothing before runs again"
        )
        run.launch()
        return run


def _drawn_paths(dag: dict[str, Any]) -> tuple[dict[str, tuple[str, str]], set[str]]:
    """The node paths of every level drawn (path -> its level's path and its name) and the
    keys of the edges drawn there, as the view keys fired edges."""
    nodes: dict[str, tuple[str, str]] = {}
    edges: set[str] = set()
    levels: list[tuple[str, dict[str, Any]]] = [("", dag)]
    while levels:
        level, held = levels.pop()
        prefix = f"{level}/" if level else ""
        for node in held.get("nodes", ()):
            nodes[prefix + node["id"]] = (level, node["id"])
            if node.get("graph"):
                levels.append((prefix + node["id"], node["graph"]))
        edges.update(edge_key(prefix + edge["from"], prefix + edge["to"]) for edge in held.get("edges", ()))
    return nodes, edges


def _ends(key: str, nodes: dict[str, tuple[str, str]]) -> tuple[str, str] | None:
    """A fired edge's key read back as the node paths at its ends, in one level (None: not two
    nodes the view draws side by side, such as the inside of a sub-graph ``xray`` hides)."""
    at = key.find("\u2192")
    while at >= 0:  # (a node's name may hold the arrow too)
        source, target = key[:at], key[at + 1 :]
        if source in nodes and target in nodes and nodes[source][0] == nodes[target][0]:
            return source, target
        at = key.find("\u2192", at + 1)
    return None


def _copy_levels(level: dict[str, Any]) -> dict[str, Any]:
    """``level`` with its own lists of nodes and edges at every level (the rest shared), so the
    view's new drawing is a new value and the one it had is unchanged."""
    copied = dict(level)
    copied["edges"] = list(level.get("edges", ()))
    copied["nodes"] = [
        {**node, "graph": _copy_levels(node["graph"])} if node.get("graph") else node for node in level.get("nodes", ())
    ]
    return copied


def _level_of(dag: dict[str, Any], path: str) -> dict[str, Any]:
    level = dag
    for name in path.split("/") if path else ():
        level = next(node for node in level["nodes"] if node["id"] == name)["graph"]
    return level


def show(view: GraphView, mermaid: str) -> None:
    """Display ``view`` below the current cell, with its picture and the graph's mermaid text
    where widgets do not render, its output updated when its run ends."""
    view.show({"text/markdown": f"```mermaid\n{mermaid}```\n"})
