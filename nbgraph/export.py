"""Exports: mermaid text, DAG JSON (with fired edges after a run), history tables, and
the problems a graph's shape shows.

They read a graph's declared shape (name, nodes, edges, routers), which a
:class:`~nbgraph.Graph` and its compiled :class:`~nbgraph.plan.Plan` both have, so
a graph still being built can be drawn, its problems included.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from .history import Step, tally, tally_within
from .names import END, START
from .plan import NodeSpec

__all__ = ["DAG_SCHEMA_VERSION", "find_problems", "history_table", "routing_problems", "to_dag", "to_mermaid"]

DAG_SCHEMA_VERSION = "1.3"
"""1.3 added ``problems`` to every level of the DAG (1.2: sub-graphs, fan-out, joins, maps), and
later ``denied`` edges (optional: a reader that does not know them draws a plain edge)."""


def _specs(graph: Any) -> Mapping[str, NodeSpec]:
    return {name: getattr(node, "spec", node) for name, node in graph.nodes.items()}


def _edges(graph: Any, specs: Mapping[str, NodeSpec]) -> list[dict[str, Any]]:
    edges: list[dict[str, Any]] = []
    for edge in graph.edges:
        for target in edge.targets:  # a fan-out is drawn as one arm per target
            drawn: dict[str, Any] = {
                "from": edge.source,
                "to": target,
                "label": edge.label,
                "unconditional": edge.when is None,
            }
            if edge.fanout:
                drawn["fanout"] = list(edge.fanout)
            if edge.each is not None:
                drawn["each"] = True
            if edge.join:
                drawn["join"] = list(edge.join)
            edges.append(drawn)
    for source, router in graph.routers.items():
        for target in router.targets or ():
            edges.append({"from": source, "to": target, "label": router.label, "unconditional": False, "router": True})
    for name, spec in specs.items():
        for target in spec.destinations or ():
            edges.append({"from": name, "to": target, "label": "goto", "unconditional": False, "goto": True})
        if spec.on_deny is not None:
            # Where a person's "no" sends the run: the step's record fires it as the edge of its node.
            edges.append({"from": name, "to": spec.on_deny, "label": "denied", "unconditional": False, "denied": True})
    return edges


def to_dag(
    graph: Any, history: Sequence[Step] | None = None, problems: Sequence[Mapping[str, Any]] = ()
) -> dict[str, Any]:
    """The graph as a JSON-ready dict; with ``history``, nodes carry ``visits`` and edges ``fired``.

    Nodes: ``{"id", "kind", "approval", "tools"?, "visits"?, "map"?, "graph"?, "mapping"?}``
    with ``START``/``END`` as kind ``"start"``/``"end"``; ``approval`` is ``false``, ``"after"``
    or ``"before"`` (when a person approves the node); ``map`` marks a node an
    ``each=`` edge runs once per item; a sub-graph node (kind ``"graph"``) holds its
    graph's own ``{"name", "nodes", "edges", "problems"}`` under ``graph`` (counted from
    the steps inside it), and ``mapping`` when it has input/output mappings. Edges:
    ``{"from", "to", "label", "unconditional", "router"?, "goto"?, "denied"?, "fanout"?,
    "each"?, "join"?, "fired"?, "dynamic"?}``: every arm of a fan-out lists all its targets
    in ``fanout``, every arm into a join all its sources in ``join``; ``goto`` edges are
    the destinations a node declared for its ``Goto`` commands, ``denied`` ones lead from
    a node a person approves to its ``on_deny`` target (label ``"denied"``), ``dynamic``
    ones were taken without being declared (``Goto``, ``Send``, a router without targets).

    ``problems`` (every level has the list, maybe empty) are ``{"kind", "message",
    "node"?, "edge"?: {"from", "to"}}``: what :func:`find_problems` sees in the shape,
    conditions and routers that raised in ``history``'s failed steps, and the
    ``problems`` given (each with a ``path`` naming its level, "" for the graph itself;
    an inspection's or ``result.problems()``).
    """
    return {"version": DAG_SCHEMA_VERSION, "mode": "graph", **_dag(graph, history, "", problems)}


def _dag(
    graph: Any, history: Sequence[Step] | None, path: str, extra: Sequence[Mapping[str, Any]] = ()
) -> dict[str, Any]:
    specs = _specs(graph)
    edges = _edges(graph, specs)
    mapped = {edge["to"] for edge in edges if edge.get("each")}
    nodes: list[dict[str, Any]] = [{"id": START, "kind": "start"}]
    for name, spec in specs.items():
        node: dict[str, Any] = {"id": name, "kind": spec.kind, "approval": spec.approval or False}
        if spec.tools:
            node["tools"] = list(spec.tools)
        if name in mapped:
            node["map"] = True
        if spec.graph is not None:
            node["graph"] = _dag(spec.graph, history, f"{path}/{name}" if path else name, extra)
            if spec.input is not None or spec.output is not None:
                node["mapping"] = True
        nodes.append(node)
    nodes.append({"id": END, "kind": "end"})
    problems = find_problems(graph)
    if history is not None:
        visits: dict[str, int] = {}
        fired: dict[tuple[str, str], int] = {}
        if path:
            tally_within(history, path, visits, fired)
        else:
            tally(history, visits, fired)
        for edge in edges:
            edge["fired"] = fired.pop((edge["from"], edge["to"]), 0)
        # Goto/End commands, Send items and routers without declared targets take edges not drawn.
        for (source, target), count in fired.items():
            edges.append(
                {"from": source, "to": target, "label": "goto", "unconditional": False, "fired": count, "dynamic": True}
            )
        for node in nodes:
            if node["kind"] not in ("start", "end"):
                node["visits"] = visits.get(node["id"], 0)
        prefix = path + "/" if path else ""
        for record in history:
            if record.error is not None and record.path.startswith(prefix) and "/" not in record.path[len(prefix) :]:
                _add(problems, routing_problems(graph, record.error))
    _add(problems, [{k: v for k, v in p.items() if k != "path"} for p in extra if (p.get("path") or "") == path])
    return {"name": graph.name, "nodes": nodes, "edges": edges, "problems": problems}


def _add(problems: list[dict[str, Any]], found: Sequence[dict[str, Any]]) -> None:
    for problem in found:
        if problem not in problems:
            problems.append(problem)


# -- problems ----------------------------------------------------------------------------


def find_problems(graph: Any) -> list[dict[str, Any]]:
    """What is wrong with a graph's shape, as DAG JSON problems (``{"kind", "message", "node"?, "edge"?}``).

    Kinds: ``unreachable`` (no path from START reaches the node), ``no-way-out`` (the
    node has no edge, router or declared destination, or no path from it reaches END:
    a run that gets there goes round until ``max_steps``), ``unknown-node`` (an edge,
    router target, destination or ``on_deny`` names a node the graph does not have).
    ``compile()`` refuses a graph with the last two of these; a graph still being built
    shows them here. Where a node may go cannot always be known (a ``Goto`` without
    declared destinations, a router without targets): such a node is taken to reach
    every node, so it hides the findings it could make wrong, as ``compile()`` does.
    """
    specs = _specs(graph)
    known = set(specs)
    routers = graph.routers
    problems: list[dict[str, Any]] = []

    def unknown(name: str, where: dict[str, Any], what: str) -> None:
        if name not in known and name not in (START, END):
            problems.append(
                {
                    "kind": "unknown-node",
                    **where,
                    "message": f"{what} {name!r}, which is not a node of graph {graph.name!r}",
                }
            )

    out: dict[str, set[str]] = {}
    anywhere: set[str] = set()
    leaving = {edge.source for edge in graph.edges}
    for edge in graph.edges:
        unknown(edge.source, {"edge": {"from": edge.source, "to": edge.target}}, "an edge leaves")
        for target in edge.targets:
            unknown(target, {"edge": {"from": edge.source, "to": target}}, "an edge leads to")
            out.setdefault(edge.source, set()).add(target)
    for source, router in routers.items():
        if router.targets is None:
            anywhere.add(source)
        for target in router.targets or ():
            unknown(
                target, {"edge": {"from": source, "to": target}}, f"router {router.label!r} of {source!r} may return"
            )
            out.setdefault(source, set()).add(target)
    for name, spec in specs.items():
        if spec.on_deny is not None:
            unknown(spec.on_deny, {"node": name}, f"node {name!r} goes on a denial to")
            out.setdefault(name, set()).add(spec.on_deny)
        if spec.approval and spec.on_deny is None:
            out.setdefault(name, set()).add(END)  # a denial ends the run
        if spec.destinations is not None:
            for target in spec.destinations:
                unknown(target, {"edge": {"from": name, "to": target}}, f"node {name!r} declares a destination")
                out.setdefault(name, set()).add(target)
        elif spec.graph is None:
            commands = _commands(spec.fn)
            if "Goto" in commands or "Send" in commands:
                anywhere.add(name)
            elif "End" in commands:
                out.setdefault(name, set()).add(END)
        if name not in leaving and name not in routers and not spec.destinations:
            problems.append(
                {
                    "kind": "no-way-out",
                    "node": name,
                    "message": f"node {name!r} has no way out: no edge, router or declared destination leaves it; "
                    f"add one, e.g. add_edge({name!r}, END)",
                }
            )
    if anywhere:
        return problems  # where those nodes lead cannot be known: nothing else can be told
    reached = _reach({START}, out)
    for name in specs:
        if name not in reached:
            problems.append(
                {
                    "kind": "unreachable",
                    "node": name,
                    "message": f"node {name!r} cannot be reached from START by any edge, router target or declared destination",
                }
            )
    into: dict[str, set[str]] = {}
    for source, targets in out.items():
        for target in targets:
            into.setdefault(target, set()).add(source)
    finishing = _reach({END}, into)
    for name in specs:
        if name in out and name not in finishing and out[name] <= known | {END}:
            problems.append(
                {
                    "kind": "no-way-out",
                    "node": name,
                    "message": f"no path from node {name!r} reaches END: a run that gets there goes round "
                    f"until max_steps (it can go to {', '.join(sorted(map(repr, out[name])))})",
                }
            )
    return problems


def _reach(start: set[str], links: Mapping[str, set[str]]) -> set[str]:
    seen = set(start)
    frontier = list(start)
    while frontier:
        for nxt in links.get(frontier.pop(), ()):
            if nxt not in seen:
                seen.add(nxt)
                frontier.append(nxt)
    return seen


def _commands(fn: Any) -> set[str]:
    """Which of ``Goto``, ``Send`` and ``End`` the code of ``fn`` names (all three when it cannot be read)."""
    code = getattr(fn, "__code__", None) or getattr(type(fn).__call__, "__code__", None)
    if code is None:
        return {"Goto", "Send", "End"}
    found: set[str] = set()
    stack = [code]
    while stack:
        current = stack.pop()
        found.update({"Goto", "Send", "End"} & {*current.co_names, *current.co_freevars})
        stack.extend(const for const in current.co_consts if hasattr(const, "co_names"))
    return found


def routing_problems(graph: Any, error: str) -> list[dict[str, Any]]:
    """The DAG JSON problems an error names: a condition, a map or a router of ``graph`` that
    raised, or a node no edge out of matched (none when the error is about something else)."""
    found: list[dict[str, Any]] = []
    for edge in graph.edges:
        for target in edge.targets:
            for what, kind in (("condition", "condition-raised"), ("map", "map-raised")):
                if f"the {what} of edge {edge.source} -> {target} [{edge.label}] raised" in error:
                    found.append(
                        {"kind": kind, "edge": {"from": edge.source, "to": target}, "message": _message(error)}
                    )
    for source, router in graph.routers.items():
        if f"router {router.label!r} of node {source!r} " in error:
            found.append({"kind": "router-raised", "node": source, "message": _message(error)})
    match = _NO_MATCH.search(error)
    if match is not None and not found:
        found.append({"kind": "no-edge-matched", "node": match.group(1), "message": _message(error)})
    return found


_NO_MATCH = re.compile(r"no edge out of '([^']*)' matched")


def _message(error: str) -> str:
    # A step's error text starts with the exception's qualified name.
    head, sep, rest = error.partition(": ")
    return rest if sep and "Error" in head and " " not in head else error


_SAFE_ID = re.compile(r"[^A-Za-z0-9_]")


def _mermaid_id(name: str, scope: str = "") -> str:
    if name == START:
        return f"{scope}__start__"
    if name == END:
        return f"{scope}__end__"
    return scope + "n_" + _SAFE_ID.sub(lambda m: f"_{ord(m.group()):x}_", name)


def _mermaid_text(text: str) -> str:
    return text.replace('"', "#quot;").replace("|", "#124;").replace("<", "#lt;").replace(">", "#gt;")


def to_mermaid(graph: Any) -> str:
    """Mermaid ``flowchart TD``: condition labels on edges, dashed unconditional edges,
    dotted ``goto`` edges for the destinations a node declared and ``denied`` ones to
    where a person's denial sends the run (``on_deny``), thick edges for the
    arms of a fan-out, a map (``each``) and a join, a ``subgraph`` block per sub-graph
    node (its own START, nodes and END inside; the parent's edges meet the block)."""
    lines = ["flowchart TD"]
    _mermaid_body(graph, "", "    ", lines)
    return "\n".join(lines) + "\n"


def _mermaid_body(graph: Any, scope: str, indent: str, lines: list[str]) -> None:
    specs = _specs(graph)
    edges = _edges(graph, specs)
    mapped = {edge["to"] for edge in edges if edge.get("each")}
    lines.append(f'{indent}{_mermaid_id(START, scope)}(["START"])')
    for name, spec in specs.items():
        node_id = _mermaid_id(name, scope)
        badge = " ✓" if spec.approval else ""
        if spec.graph is not None:
            lines.append(f'{indent}subgraph {node_id} ["{_mermaid_text(name)}{badge}"]')
            lines.append(f"{indent}    direction TB")
            _mermaid_body(spec.graph, node_id + "__", indent + "    ", lines)
            lines.append(f"{indent}end")
        elif name in mapped:
            lines.append(f'{indent}{node_id}[["{_mermaid_text(name)} ×N{badge}"]]')
        else:
            lines.append(f'{indent}{node_id}["{_mermaid_text(name)}{badge}"]')
    lines.append(f'{indent}{_mermaid_id(END, scope)}(["END"])')
    for edge in edges:
        a, b = _mermaid_id(edge["from"], scope), _mermaid_id(edge["to"], scope)
        label = _mermaid_text(edge["label"] or "")
        if edge.get("goto"):
            lines.append(f"{indent}{a} -. goto .-> {b}")
        elif edge.get("denied"):
            lines.append(f"{indent}{a} -. denied .-> {b}")
        elif edge.get("fanout") or edge.get("each") or edge.get("join"):
            lines.append(f'{indent}{a} ==>|"{label}"| {b}' if label else f"{indent}{a} ==> {b}")
        elif edge["unconditional"]:
            lines.append(f"{indent}{a} -.-> {b}")
        else:
            lines.append(f'{indent}{a} -->|"{label}"| {b}')
    for name, router in graph.routers.items():
        if router.targets is None:
            lines.append(f"{indent}%% {name} routes with {router.label} to any node")


def history_table(history: Sequence[Step]) -> str:
    """A run's steps as a plain-text table: step, node, visit, time, edge taken, tokens, error."""
    rows = [("step", "node", "visit", "ms", "edge", "tokens", "error")]
    for step in history:
        edge = ""
        if step.edge is not None:
            target = "END" if step.edge.target == END else step.edge.target
            edge = f"-> {target}" + (f" [{step.edge.label}]" if step.edge.label else "")
        rows.append(
            (
                str(step.step),
                step.path or step.node,
                str(step.visit),
                f"{step.duration * 1000:.1f}",
                edge,
                str(step.tokens or ""),
                step.error or "",
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return (
        "\n".join("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip() for row in rows) + "\n"
    )
