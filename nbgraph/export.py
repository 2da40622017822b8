"""Exports: mermaid text, DAG JSON (with fired edges after a run), history tables.

They read a graph's declared shape (name, nodes, edges, routers), which a
:class:`~nbgraph.Graph` and its compiled :class:`~nbgraph.plan.Plan` both have, so
a graph still being built can be drawn.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from .history import Step, tally
from .names import END, START
from .plan import NodeSpec

__all__ = ["DAG_SCHEMA_VERSION", "history_table", "to_dag", "to_mermaid"]

DAG_SCHEMA_VERSION = "1.1"


def _specs(graph: Any) -> Mapping[str, NodeSpec]:
    return {name: getattr(node, "spec", node) for name, node in graph.nodes.items()}


def _edges(graph: Any, specs: Mapping[str, NodeSpec]) -> list[dict[str, Any]]:
    edges: list[dict[str, Any]] = []
    for edge in graph.edges:
        edges.append(
            {"from": edge.source, "to": edge.target, "label": edge.label, "unconditional": edge.when is None}
        )
    for source, router in graph.routers.items():
        for target in router.targets or ():
            edges.append({"from": source, "to": target, "label": router.label, "unconditional": False, "router": True})
    for name, spec in specs.items():
        for target in spec.destinations or ():
            edges.append({"from": name, "to": target, "label": "goto", "unconditional": False, "goto": True})
    return edges


def to_dag(graph: Any, history: Sequence[Step] | None = None) -> dict[str, Any]:
    """The graph as a JSON-ready dict; with ``history``, edges carry ``fired`` counts.

    Nodes: ``{"id", "kind", "approval", "tools"?, "visits"?}`` with ``START``/``END``
    as kind ``"start"``/``"end"``. Edges: ``{"from", "to", "label", "unconditional",
    "router"?, "goto"?, "fired"?}``; ``goto`` edges are the destinations a node
    declared for its ``Goto`` commands.
    """
    specs = _specs(graph)
    nodes: list[dict[str, Any]] = [{"id": START, "kind": "start"}]
    for name, spec in specs.items():
        node: dict[str, Any] = {"id": name, "kind": spec.kind, "approval": spec.approval}
        if spec.tools:
            node["tools"] = list(spec.tools)
        nodes.append(node)
    nodes.append({"id": END, "kind": "end"})
    edges = _edges(graph, specs)
    dag: dict[str, Any] = {"version": DAG_SCHEMA_VERSION, "mode": "graph", "name": graph.name, "nodes": nodes, "edges": edges}
    if history is not None:
        visits: dict[str, int] = {}
        fired: dict[tuple[str, str], int] = {}
        tally(history, visits, fired)
        for edge in edges:
            edge["fired"] = fired.pop((edge["from"], edge["to"]), 0)
        # Goto/End commands and routers without declared targets take edges not drawn.
        for (source, target), count in fired.items():
            edges.append({"from": source, "to": target, "label": "goto", "unconditional": False, "fired": count, "dynamic": True})
        for node in nodes:
            if node["kind"] not in ("start", "end"):
                node["visits"] = visits.get(node["id"], 0)
    return dag


_SAFE_ID = re.compile(r"[^A-Za-z0-9_]")


def _mermaid_id(name: str) -> str:
    if name == START:
        return "__start__"
    if name == END:
        return "__end__"
    return "n_" + _SAFE_ID.sub(lambda m: f"_{ord(m.group()):x}_", name)


def _mermaid_text(text: str) -> str:
    return text.replace('"', "#quot;").replace("|", "#124;").replace("<", "#lt;").replace(">", "#gt;")


def to_mermaid(graph: Any) -> str:
    """Mermaid ``flowchart TD``: condition labels on edges, dashed unconditional edges,
    dotted ``goto`` edges for the destinations a node declared."""
    specs = _specs(graph)
    lines = ["flowchart TD"]
    lines.append(f'    {_mermaid_id(START)}(["START"])')
    for name, spec in specs.items():
        badge = " ✓" if spec.approval else ""
        lines.append(f'    {_mermaid_id(name)}["{_mermaid_text(name)}{badge}"]')
    lines.append(f'    {_mermaid_id(END)}(["END"])')
    for edge in _edges(graph, specs):
        a, b = _mermaid_id(edge["from"]), _mermaid_id(edge["to"])
        if edge.get("goto"):
            lines.append(f"    {a} -. goto .-> {b}")
        elif edge["unconditional"]:
            lines.append(f"    {a} -.-> {b}")
        else:
            lines.append(f'    {a} -->|"{_mermaid_text(edge["label"] or "")}"| {b}')
    for name, router in graph.routers.items():
        if router.targets is None:
            lines.append(f'    %% {name} routes with {router.label} to any node')
    return "\n".join(lines) + "\n"


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
