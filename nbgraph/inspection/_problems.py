"""The problems a whole run met, each placed where the graph draws it."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from ..export import routing_problems
from ..plan import Plan
from ._models import Problem

__all__ = ["run_problems"]


def run_problems(source: Any) -> list[Problem]:
    """The problems a run met: conditions, maps and routers that raised, nodes no edge out of
    matched (from its failed steps and from how it ended), each where the graph drew it.

    ``to_dag(plan, history, problems=[p.model_dump() for p in run_problems(result)])``
    puts them on the drawing; ``result.to_dag()`` shows those its failed steps recorded.
    """
    run = getattr(source, "run", source)  # a RunResult's run, or a Run
    plan = run.plan
    found: list[Problem] = []

    levels = dict(_levels(plan, ""))

    def add(text: str, paths: Sequence[str]) -> None:
        for path in paths:
            level = levels.get(path)
            for problem in routing_problems(level, text) if level is not None else ():
                seen = Problem(**problem, path=path)
                if seen not in found:
                    found.append(seen)

    for record in run.history:
        if record.error is not None:
            add(record.error, [record.path.rpartition("/")[0]])
    error = run.result().error if run.done else None
    if error is not None:
        add(str(error), list(levels))  # (the error does not say which level it came from)
    return found


def _levels(plan: Plan, path: str) -> Iterator[tuple[str, Plan]]:
    """The plan and every sub-graph's plan inside it, by path."""
    yield path, plan
    for name, node in plan.nodes.items():
        if node.subplan is not None:
            yield from _levels(node.subplan, f"{path}/{name}" if path else name)
