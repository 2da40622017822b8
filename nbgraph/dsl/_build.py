"""From the parsed cell to a compiled :class:`~nbgraph.Graph`: names resolved, the graph built and checked.

A build-rule violation the graph finds (a node no edge reaches, ...) is pointed back
at the cell line that mentions the node at fault.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..errors import GraphSyntaxError, GraphValidationError, did_you_mean
from ..graph import Graph
from ._lines import _did_you_mean, _NodeUse, _Parser
from ._options import _Ref
from ._scan import _strip_comment

__all__ = ["NodeDefinition", "parse"]


@dataclass(frozen=True)
class NodeDefinition:
    """A node defined outside the cell (by ``%%node``): its function and its options."""

    fn: Callable[..., Any]
    options: Mapping[str, Any] = field(default_factory=dict)


def _did_you_mean_node(name: str, namespace: Mapping[str, Any]) -> str:
    return did_you_mean(
        name, [k for k, v in namespace.items() if (callable(v) or isinstance(v, Graph)) and not k.startswith("_")]
    )


def _resolve(parser: _Parser, name: str) -> tuple[Callable[..., Any] | Graph, dict[str, Any]]:
    """The node's function (or sub-graph) and options: cell options override a %%node definition's."""
    use = parser.uses[name]
    defined = parser.nodes.get(name)
    if isinstance(defined, NodeDefinition):
        fn, options = defined.fn, {**defined.options, **use.options}
    else:
        fn = defined if defined is not None else parser.namespace.get(name)
        options = dict(use.options)
    if fn is None:
        raise GraphSyntaxError(
            f"node {name!r} is not defined: define a function {name}(state) or a %%node {name} cell"
            f"{_did_you_mean_node(name, parser.namespace)}",
            line=use.line,
            column=use.column,
            text=use.text,
        )
    if isinstance(fn, Graph):
        if fn.name == parser.name:
            raise GraphSyntaxError(
                f"node {name!r} is a graph named {fn.name!r}, the graph this cell defines, and a graph cannot run "
                f"inside itself (the name may still hold this cell's previous result): rename the node or the graph",
                line=use.line,
                column=use.column,
                text=use.text,
            )
    elif not callable(fn):
        raise GraphSyntaxError(
            f"node {name!r} must be a function or a Graph, but {name} is a {type(fn).__name__}",
            line=use.line,
            column=use.column,
            text=use.text,
        )
    refs = {key: ref for key in ("input", "output") if isinstance(ref := options.get(key), _Ref)}
    for key, ref in refs.items():
        if not isinstance(fn, Graph):
            raise GraphSyntaxError(
                f"node {name!r}: {key}= maps the state into and out of a sub-graph, but {name} is a "
                f"{type(fn).__name__}, not a Graph",
                line=ref.line,
                column=ref.column,
                text=ref.text,
            )
        if len(refs) == 1:
            raise GraphSyntaxError(
                f"node {name!r}: give a sub-graph both input= and output=, or neither (it then shares the state)",
                line=ref.line,
                column=ref.column,
                text=ref.text,
            )
        value = parser.namespace.get(ref.name)
        if value is None or not callable(value):
            problem = "is not defined" if value is None else f"is a {type(value).__name__}, not a function"
            raise GraphSyntaxError(
                f"{key} function {ref.name!r} {problem}{_did_you_mean(ref.name, parser.namespace)}",
                line=ref.line,
                column=ref.column,
                text=ref.text,
            )
        options[key] = value
    return fn, options


def parse(
    text: str,
    namespace: Mapping[str, Any] | None = None,
    name: str = "graph",
    *,
    nodes: Mapping[str, Any] | None = None,
    first_line: int = 1,
    **options: Any,
) -> Graph:
    """Build a :class:`Graph` from ``%%graph`` cell text.

    Args:
        text: the cell body.
        namespace: where node functions, sub-graphs, routers and condition globals are
            looked up (the notebook's user namespace).
        name: the graph's name.
        nodes: nodes defined with ``%%node`` (functions or :class:`NodeDefinition`),
            looked up before the namespace.
        first_line: the line number of the text's first line in errors (2 in a
            ``%%graph`` cell, whose first line is the magic itself).
        **options: passed to :class:`Graph` (``state``, ``max_steps``, ...).

    Raises:
        GraphSyntaxError: any mistake, with the cell line, the column and a caret.

    Example::

        >>> g = parse("START -> a -> END", {"a": lambda s: None}, "demo")
        >>> g.invoke({}).path
        ['a']
    """
    namespace = namespace if namespace is not None else {}
    parser = _Parser(text, namespace, nodes or {}, first_line, name)
    parser.parse()
    if not parser.uses:
        raise GraphSyntaxError(
            "the cell defines no nodes; write edges such as START -> first -> END",
            line=first_line,
            column=1,
            text=parser.lines[0] if parser.lines else "",
        )
    graph = Graph(name, **options)
    for node_name in parser.uses:
        use = parser.uses[node_name]
        fn, node_options = _resolve(parser, node_name)
        try:
            graph.add_node(node_name, fn, **node_options)
        except (TypeError, ValueError) as exc:
            raise GraphSyntaxError(str(exc), line=use.line, column=use.column, text=use.text) from None
    for edge in parser.edges:
        try:
            graph.add_edge(edge.source, edge.target, when=edge.when, label=edge.label, each=edge.each)
        except (TypeError, ValueError) as exc:
            raise GraphSyntaxError(str(exc), line=edge.line, column=edge.column, text=edge.text) from None
    for source, fn, targets, line, via_col in parser.routers:
        try:
            graph.add_router(source, fn, targets=targets)
        except (TypeError, ValueError) as exc:
            raise line.error(str(exc), via_col) from None
    try:
        graph.compile()
    except GraphValidationError as exc:
        raise _located(exc, parser) from None
    return graph


def _located(exc: GraphValidationError, parser: _Parser) -> GraphSyntaxError:
    """Point a build-rule violation at the first line mentioning the node at fault."""
    problem = exc.problems[0]
    quoted = re.findall(r"'([^']+)'", problem)
    use = next((parser.uses[n] for n in quoted if n in parser.uses), None)
    if use is None:
        first = next((i for i, line in enumerate(parser.lines) if _strip_comment(line).strip()), 0)
        text = parser.lines[first] if parser.lines else ""
        use = _NodeUse(first + parser.first_line, 1, text)
    more = f" (and {len(exc.problems) - 1} more: {'; '.join(exc.problems[1:])})" if len(exc.problems) > 1 else ""
    return GraphSyntaxError(problem + more, line=use.line, column=use.column, text=use.text)
