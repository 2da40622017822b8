"""The ``%%graph`` language: cell text in, a :class:`~nbgraph.Graph` out (pure; no IPython).

Grammar (one statement per line; ``#`` starts a comment; blank lines are ignored)::

    cell      := { line }
    line      := edges | router | node
    edges     := endpoint "->" endpoint { "->" endpoint } [ "if" CONDITION ]
    router    := endpoint "->" target "|" target { "|" target } "via" NAME
    node      := endpoint                         (declares a node, e.g. to give options)
    endpoint  := NAME [ "[" option { "," option } "]" ] | "START" | "END"
    target    := NAME | "END"
    option    := "approval" | "no_feedback" | "on_deny=" NAME | "destinations=" target { "|" target }

- ``a -> b -> c`` is a chain of unconditional edges.
- ``a -> b if EXPR`` is a conditional edge. EXPR is a Python expression over
  ``state`` (and ``ctx``), compiled once when the cell runs; its text becomes the
  edge label. A condition belongs to one edge, so a chain cannot carry one.
- Edges out of a node are tried in the order they appear; the first whose condition
  holds wins, and an unconditional edge always matches (use it as the fallback).
- ``a -> b | c | END via fn`` routes out of ``a`` with ``fn(state) -> name``.
- Node names resolve, in order, to nodes defined with ``%%node`` (the ``nodes``
  argument) and to callables of the same name in the namespace.
- ``review [approval, on_deny=rewrite]`` sets node options wherever the node appears;
  ``triage [destinations=urgent|later]`` declares where the node's ``Goto`` may lead.

Every mistake raises :class:`GraphSyntaxError` naming the cell line and column, with
the line shown and a caret under the fault.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from .errors import GraphSyntaxError, GraphValidationError, did_you_mean
from .graph import Graph
from .names import END, START

__all__ = ["GraphSyntaxError", "NodeDefinition", "compile_condition", "compile_node_body", "parse"]

_NAME = r"[A-Za-z_][A-Za-z0-9_]*"
_ENDPOINT = re.compile(rf"\s*({_NAME})\s*(\[([^\]]*)\])?\s*$")
_FILENAME = "<%%graph cell>"


@dataclass(frozen=True)
class NodeDefinition:
    """A node defined outside the cell (by ``%%node``): its function and its options."""

    fn: Callable[..., Any]
    options: Mapping[str, Any] = field(default_factory=dict)


@dataclass
class _NodeUse:
    line: int
    column: int
    text: str
    options: dict[str, Any] = field(default_factory=dict)


@dataclass
class _Line:
    number: int
    text: str

    def error(self, message: str, column: int) -> GraphSyntaxError:
        return GraphSyntaxError(message, line=self.number, column=column, text=self.text)


def _strip_comment(text: str) -> str:
    """Cut a trailing ``#`` comment, leaving ``#`` inside string literals alone."""
    if "#" not in text:
        return text
    try:
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            if token.type == tokenize.COMMENT:
                return text[: token.start[1]]
    except (tokenize.TokenError, IndentationError, SyntaxError):
        pass
    # Unbalanced brackets or quotes: fall back to the first '#', the error comes later.
    return text[: text.index("#")]


def _did_you_mean(name: str, namespace: Mapping[str, Any]) -> str:
    return did_you_mean(name, [k for k, v in namespace.items() if callable(v) and not k.startswith("_")])


def compile_condition(expr: str, namespace: Mapping[str, Any], *, where: tuple[int, int, str] = (1, 1, "")) -> Callable[..., Any]:
    """Compile a condition expression once into ``fn(state)`` or ``fn(state, ctx)``.

    The function's globals are ``namespace`` (the notebook's), so conditions can use
    the user's helpers. ``where`` is (line, column of the expression, line text) for
    error messages.
    """
    line, column, text = where
    stripped = expr.strip()
    if not stripped:
        raise GraphSyntaxError("'if' needs a condition after it", line=line, column=column, text=text)
    lead = len(expr) - len(expr.lstrip())
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            code = compile(stripped, _FILENAME, "eval")
    except SyntaxError as exc:
        offset = (exc.offset or 1) if (exc.lineno or 1) == 1 else 1
        raise GraphSyntaxError(
            f"invalid condition: {exc.msg}", line=line, column=column + lead + offset - 1, text=text
        ) from None
    except (ValueError, MemoryError, RecursionError) as exc:
        raise GraphSyntaxError(f"invalid condition: {exc}", line=line, column=column + lead, text=text) from None
    params = "state, ctx" if "ctx" in _names(code) else "state"
    source = f"lambda {params}: ({stripped}\n)"
    fn = eval(compile(source, _FILENAME, "eval"), dict(namespace) if not isinstance(namespace, dict) else namespace)
    fn.__name__ = "condition"
    fn.__qualname__ = "condition"
    return fn


def _names(code: Any) -> set[str]:
    names = set(code.co_names)
    for const in code.co_consts:
        if hasattr(const, "co_names"):
            names |= _names(const)
    return names


def compile_node_body(name: str, body: str, namespace: dict[str, Any], *, first_line: int = 2) -> Callable[..., Any]:
    """Turn a ``%%node`` cell body into a node function ``name(state, ctx)``.

    The body is a function body: ``state`` and ``ctx`` are in scope and ``return``
    gives the update. It becomes an ``async def`` when it uses ``await``, so a node
    without it stays synchronous (and cheaper). ``first_line`` is the cell line the
    body starts on, for error messages.
    """
    lines = body.splitlines() or ["pass"]
    if not any(l.strip() and not l.strip().startswith("#") for l in lines):
        lines.append("pass")
    indented = "\n".join("    " + l for l in lines)
    try:
        tree = ast.parse(f"async def {name}(state, ctx):\n{indented}\n", filename=f"<%%node {name}>")
    except SyntaxError as exc:
        number = max(1, (exc.lineno or 2) - 1)
        text = lines[number - 1] if number <= len(lines) else ""
        raise GraphSyntaxError(
            exc.msg, line=number + first_line - 1, column=max(1, (exc.offset or 5) - 4), text=text, cell="%%node"
        ) from None
    func = tree.body[0]
    is_async = any(isinstance(n, (ast.Await, ast.AsyncFor, ast.AsyncWith)) for n in ast.walk(func))
    if not is_async:
        tree.body[0] = ast.FunctionDef(  # type: ignore[call-overload]
            name=func.name, args=func.args, body=func.body, decorator_list=[], returns=None,
            type_comment=None, **({"type_params": []} if hasattr(ast.FunctionDef, "type_params") else {}),
        )
        ast.copy_location(tree.body[0], func)
    ast.increment_lineno(tree, first_line - 2)
    local: dict[str, Any] = {}
    exec(compile(tree, f"<%%node {name}>", "exec"), namespace, local)
    fn = local[name]
    fn.__doc__ = f"Node {name!r} defined with %%node."
    return fn


def _outside_brackets(text: str, char: str) -> int:
    """The index of the first ``char`` not inside ``[...]`` options, or -1."""
    depth = 0
    for index, c in enumerate(text):
        if c == "[":
            depth += 1
        elif c == "]":
            depth = max(0, depth - 1)
        elif c == char and depth == 0:
            return index
    return -1


def _split_outside_brackets(text: str, char: str) -> list[str]:
    chunks = []
    while (index := _outside_brackets(text, char)) >= 0:
        chunks.append(text[:index])
        text = text[index + 1 :]
    return [*chunks, text]


def _parse_options(line: _Line, name: str, raw: str, column: int) -> dict[str, Any]:
    options: dict[str, Any] = {}
    for part in raw.split(","):
        item = part.strip()
        if not item:
            continue
        if item == "approval":
            options["approval"] = True
        elif item in ("no_feedback", "no-feedback"):
            options["feedback"] = False
        elif item.startswith("on_deny="):
            target = item.split("=", 1)[1].strip()
            if not re.fullmatch(_NAME, target):
                raise line.error(f"on_deny needs a node name, got {target!r}", column + raw.find(item))
            options["on_deny"] = END if target == "END" else target
        elif item.startswith("destinations="):
            targets = [t.strip() for t in item.split("=", 1)[1].split("|")]
            for target in targets:
                if not re.fullmatch(_NAME, target):
                    raise line.error(
                        f"destinations needs node names separated by '|', got {target!r}", column + raw.find(item)
                    )
            options["destinations"] = [END if t == "END" else t for t in targets]
        else:
            raise line.error(
                f"unknown option {item!r} for node {name!r}; options are approval, no_feedback, on_deny=NAME, "
                "destinations=A|B",
                column + raw.find(item),
            )
    return options


class _Parser:
    def __init__(self, text: str, namespace: Mapping[str, Any], nodes: Mapping[str, Any], first_line: int) -> None:
        self.lines = text.splitlines()
        self.first_line = first_line
        self.namespace = namespace
        self.nodes = nodes
        self.uses: dict[str, _NodeUse] = {}
        self.edges: list[tuple[str, str, Callable[..., Any] | None, str | None]] = []
        self.routers: list[tuple[str, Callable[..., Any], list[str]]] = []
        self.routed: dict[str, _NodeUse] = {}

    def parse(self) -> None:
        for number, raw in enumerate(self.lines, start=self.first_line):
            if "\x00" in raw:
                raise GraphSyntaxError("null byte in cell", line=number, column=raw.index("\x00") + 1, text=raw.replace("\x00", "?"))
            line = _Line(number, raw)
            code = _strip_comment(raw)
            if not code.strip():
                continue
            self._statement(line, code)

    def _endpoint(self, line: _Line, chunk: str, column: int, *, allow_start: bool, allow_end: bool) -> str:
        match = _ENDPOINT.match(chunk)
        col = column + len(chunk) - len(chunk.lstrip())
        if match is None:
            found = f"got {chunk.strip()!r}" if chunk.strip() else "found nothing"
            raise line.error(f"expected a node name, START or END, {found}", col)
        name, _, raw_options = match.groups()
        if name == "START":
            if not allow_start:
                raise line.error("START can only begin an edge", col)
            if raw_options is not None:
                raise line.error("START takes no options", col)
            return START
        if name == "END":
            if not allow_end:
                raise line.error("END is terminal; no edge may leave it", col)
            if raw_options is not None:
                raise line.error("END takes no options", col)
            return END
        options = _parse_options(line, name, raw_options, col + chunk.strip().index("[") + 1) if raw_options is not None else {}
        use = self.uses.get(name)
        if use is None:
            use = self.uses[name] = _NodeUse(line.number, col, line.text)
        use.options.update(options)
        return name

    def _statement(self, line: _Line, code: str) -> None:
        condition: str | None = None
        cond_col = 0
        arrow_part = code
        if_match = re.search(r"\bif\b", code)
        if if_match:
            arrow_part = code[: if_match.start()]
            condition = code[if_match.end() :]
            cond_col = if_match.end() + 1
        via_name: str | None = None
        via_match = re.search(rf"\bvia\b\s*({_NAME})?\s*$", arrow_part) if condition is None else None
        if via_match:
            via_name = via_match.group(1)
            if via_name is None:
                raise line.error("'via' needs the name of a routing function", len(arrow_part.rstrip()) + 1)
            arrow_part = arrow_part[: via_match.start()]
        pieces = arrow_part.split("->")
        columns = []
        offset = 0
        for piece in pieces:
            columns.append(offset + 1)
            offset += len(piece) + 2
        if len(pieces) == 1:
            if condition is not None:
                raise line.error("a condition needs an edge before it: a -> b if CONDITION", if_match.start() + 1)  # type: ignore[union-attr]
            if via_name is not None:
                raise line.error("a router needs targets: a -> b | c via fn", 1)
            self._endpoint(line, pieces[0], 1, allow_start=False, allow_end=False)
            return
        if via_name is not None:
            self._router(line, pieces, columns, via_name, via_match.start(1) + 1)  # type: ignore[union-attr]
            return
        if condition is not None and len(pieces) > 2:
            raise line.error("a condition belongs to one edge; split the chain into separate lines", if_match.start() + 1)  # type: ignore[union-attr]
        names = []
        for index, (piece, column) in enumerate(zip(pieces, columns)):
            bar = _outside_brackets(piece, "|")
            if bar >= 0:
                raise line.error("'|' lists router targets; end the line with 'via ROUTER_FUNCTION'", column + bar)
            names.append(
                self._endpoint(line, piece, column, allow_start=index == 0, allow_end=index == len(pieces) - 1)
            )
        when = None
        label = None
        if condition is not None:
            label = condition.strip()
            when = compile_condition(condition, self.namespace, where=(line.number, cond_col, line.text))
        for source, target in zip(names, names[1:]):
            self.edges.append((source, target, when, label))

    def _router(self, line: _Line, pieces: list[str], columns: list[int], via_name: str, via_col: int) -> None:
        if len(pieces) != 2:
            raise line.error("a router line is: a -> b | c | END via fn", columns[2] if len(columns) > 2 else 1)
        source = self._endpoint(line, pieces[0], columns[0], allow_start=True, allow_end=False)
        targets = []
        offset = columns[1]
        for chunk in _split_outside_brackets(pieces[1], "|"):
            targets.append(self._endpoint(line, chunk, offset, allow_start=False, allow_end=True))
            offset += len(chunk) + 1
        fn = self.namespace.get(via_name)
        if fn is None or not callable(fn):
            problem = "is not defined" if fn is None else f"is a {type(fn).__name__}, not a function"
            raise line.error(f"router {via_name!r} {problem}{_did_you_mean(via_name, self.namespace)}", via_col)
        if source in self.routed:
            raise line.error(f"node {source!r} already has a router (line {self.routed[source].line})", columns[0])
        self.routed[source] = _NodeUse(line.number, columns[0], line.text)
        self.routers.append((source, fn, targets))

    def resolve(self, name: str) -> tuple[Callable[..., Any], dict[str, Any]]:
        """The node's function and options: cell options override a %%node definition's."""
        use = self.uses[name]
        defined = self.nodes.get(name)
        if isinstance(defined, NodeDefinition):
            return defined.fn, {**defined.options, **use.options}
        fn = defined if defined is not None else self.namespace.get(name)
        if fn is None:
            raise GraphSyntaxError(
                f"node {name!r} is not defined: define a function {name}(state) or a %%node {name} cell"
                f"{_did_you_mean(name, self.namespace)}",
                line=use.line, column=use.column, text=use.text,
            )
        if not callable(fn):
            raise GraphSyntaxError(
                f"node {name!r} must be a function, but {name} is a {type(fn).__name__}",
                line=use.line, column=use.column, text=use.text,
            )
        return fn, use.options


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
        namespace: where node functions, routers and condition globals are looked up
            (the notebook's user namespace).
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
    parser = _Parser(text, namespace, nodes or {}, first_line)
    parser.parse()
    if not parser.uses:
        raise GraphSyntaxError(
            "the cell defines no nodes; write edges such as START -> first -> END",
            line=first_line, column=1, text=parser.lines[0] if parser.lines else "",
        )
    graph = Graph(name, **options)
    for node_name in parser.uses:
        use = parser.uses[node_name]
        fn, node_options = parser.resolve(node_name)
        try:
            graph.add_node(node_name, fn, **node_options)
        except (TypeError, ValueError) as exc:
            raise GraphSyntaxError(str(exc), line=use.line, column=use.column, text=use.text) from None
    for source, target, when, label in parser.edges:
        graph.add_edge(source, target, when=when, label=label)
    for source, fn, targets in parser.routers:
        graph.add_router(source, fn, targets=targets)
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
        first = next((i for i, l in enumerate(parser.lines) if _strip_comment(l).strip()), 0)
        text = parser.lines[first] if parser.lines else ""
        use = _NodeUse(first + parser.first_line, 1, text)
    more = f" (and {len(exc.problems) - 1} more: {'; '.join(exc.problems[1:])})" if len(exc.problems) > 1 else ""
    return GraphSyntaxError(problem + more, line=use.line, column=use.column, text=use.text)
