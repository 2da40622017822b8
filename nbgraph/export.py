"""Exports: mermaid text, DAG JSON (with fired edges after a run), history tables.

They read a graph's declared shape (name, nodes, edges, routers), which a
:class:`~nbgraph.Graph` and its compiled :class:`~nbgraph.plan.Plan` both have, so
a graph still being built can be drawn.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from .history import Step, tally, tally_within
from .names import END, START
from .plan import NodeSpec

__all__ = ["DAG_SCHEMA_VERSION", "history_table", "to_dag", "to_mermaid"]

DAG_SCHEMA_VERSION = "1.2"


def _specs(graph: Any) -> Mapping[str, NodeSpec]:
    return {name: getattr(node, "spec", node) for name, node in graph.nodes.items()}


def _edges(graph: Any, specs: Mapping[str, NodeSpec]) -> list[dict[str, Any]]:
    edges: list[dict[str, Any]] = []
    for edge in graph.edges:
        for target in edge.targets:  # a fan-out is drawn as one arm per target
            drawn: dict[str, Any] = {"from": edge.source, "to": target, "label": edge.label, "unconditional": edge.when is None}
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
    return edges


def to_dag(graph: Any, history: Sequence[Step] | None = None) -> dict[str, Any]:
    """The graph as a JSON-ready dict; with ``history``, nodes carry ``visits`` and edges ``fired``.

    Nodes: ``{"id", "kind", "approval", "tools"?, "visits"?, "map"?, "graph"?, "mapping"?}``
    with ``START``/``END`` as kind ``"start"``/``"end"``; ``map`` marks a node an
    ``each=`` edge runs once per item; a sub-graph node (kind ``"graph"``) holds its
    graph's own ``{"name", "nodes", "edges"}`` under ``graph`` (counted from the steps
    inside it), and ``mapping`` when it has input/output mappings. Edges:
    ``{"from", "to", "label", "unconditional", "router"?, "goto"?, "fanout"?, "each"?,
    "join"?, "fired"?, "dynamic"?}``: every arm of a fan-out lists all its targets in
    ``fanout``, every arm into a join all its sources in ``join``; ``goto`` edges are
    the destinations a node declared for its ``Goto`` commands, ``dynamic`` ones were
    taken without being declared (``Goto``, ``Send``, a router without targets).
    """
    return {"version": DAG_SCHEMA_VERSION, "mode": "graph", **_dag(graph, history, "")}


def _dag(graph: Any, history: Sequence[Step] | None, path: str) -> dict[str, Any]:
    specs = _specs(graph)
    edges = _edges(graph, specs)
    mapped = {edge["to"] for edge in edges if edge.get("each")}
    nodes: list[dict[str, Any]] = [{"id": START, "kind": "start"}]
    for name, spec in specs.items():
        node: dict[str, Any] = {"id": name, "kind": spec.kind, "approval": spec.approval}
        if spec.tools:
            node["tools"] = list(spec.tools)
        if name in mapped:
            node["map"] = True
        if spec.graph is not None:
            node["graph"] = _dag(spec.graph, history, f"{path}/{name}" if path else name)
            if spec.input is not None or spec.output is not None:
                node["mapping"] = True
        nodes.append(node)
    nodes.append({"id": END, "kind": "end"})
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
            edges.append({"from": source, "to": target, "label": "goto", "unconditional": False, "fired": count, "dynamic": True})
        for node in nodes:
            if node["kind"] not in ("start", "end"):
                node["visits"] = visits.get(node["id"], 0)
    return {"name": graph.name, "nodes": nodes, "edges": edges}


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
    dotted ``goto`` edges for the destinations a node declared, thick edges for the
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
            (str(step.step), step.path or step.node, str(step.visit), f"{step.duration * 1000:.1f}", edge, str(step.tokens or ""), step.error or "")
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in rows) + "\n"
