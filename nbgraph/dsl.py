"""The ``%%graph`` language: cell text in, a :class:`~nbgraph.Graph` out (pure; no IPython).

Grammar (one statement per line; ``#`` starts a comment; blank lines are ignored)::

    cell      := { line }
    line      := edges | router | node
    edges     := group "->" group { "->" group } [ "for" NAME "in" ITEMS ] [ "if" CONDITION ]
    router    := endpoint "->" target "|" target { "|" target } "via" NAME
    node      := endpoint                         (declares a node, e.g. to give options)
    group     := endpoint { "&" endpoint }
    endpoint  := NAME [ "[" option { "," option } "]" ] | "START" | "END"
    target    := NAME | "END"
    option    := "approval" | "no_feedback" | "on_deny=" NAME | "destinations=" target { "|" target }
               | "input=" NAME | "output=" NAME

- ``a -> b -> c`` is a chain of unconditional edges.
- ``a -> b if EXPR`` is a conditional edge. EXPR is a Python expression over
  ``state`` (and ``ctx``), compiled once when the cell runs; its text becomes the
  edge label. A condition belongs to one edge, so a chain cannot carry one.
- Edges out of a node are tried in the order they appear; the first whose condition
  holds wins, and an unconditional edge always matches (use it as the fallback).
- ``&`` reads "and": ``plan -> a & b`` is one fan-out edge (``a`` and ``b`` run together
  as parallel branches, updates folding in the order written); ``a & b -> merge`` is a
  join (``merge`` runs once both finished). In a chain each arrow is one edge, so
  ``x -> a & b -> merge`` fans out, then joins; a group of several on both sides of
  one arrow (``a & b -> c & d``) is an error: join into one node first.
- ``plan -> worker for item in ITEMS`` is a map: ``worker`` runs once per item of the
  Python expression ITEMS (compiled like a condition); ``item`` only names the items
  in the label. ``for t in ITEMS if EXPR`` adds the edge's condition, tested first on
  the state (it cannot use ``t``); ITEMS ends at its first ``if`` outside brackets
  and strings, so a conditional expression in ITEMS needs parentheses.
- ``a -> b | c | END via fn`` routes out of ``a`` with ``fn(state) -> name``.
- Node names resolve, in order, to nodes defined with ``%%node`` (the ``nodes``
  argument) and to callables of the same name in the namespace. A name bound to a
  :class:`~nbgraph.Graph` makes a sub-graph node; ``[input=fn, output=fn]`` name the
  functions mapping the state into it and its final state back (both or neither).
- ``review [approval, on_deny=rewrite]`` sets node options wherever the node appears;
  ``triage [destinations=urgent|later]`` declares where the node's ``Goto`` may lead.
- ``if``, and ``for`` after a node, are keywords; ``via`` is one before the last name.

Every mistake raises :class:`GraphSyntaxError` naming the cell line and column, with
the line shown and a caret under the fault. Parsing takes time linear in the cell's
length.
"""

from __future__ import annotations

import ast
import inspect
import io
import itertools
import keyword
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
_NAME_AT = re.compile(_NAME)  # matched at a position only: linear, never backtracks
_FILENAME = "<%%graph cell>"
_SHOWN = 60
"""The most characters of the offending text an error message quotes."""


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


@dataclass(frozen=True)
class _Ref:
    """A function named in a node option (``input=to_query``), resolved once nodes are."""

    name: str
    line: int
    column: int
    text: str


@dataclass
class _Line:
    number: int
    text: str

    def error(self, message: str, column: int) -> GraphSyntaxError:
        return GraphSyntaxError(message, line=self.number, column=column, text=self.text)


@dataclass(frozen=True)
class _EdgeUse:
    """One ``add_edge`` call the cell asks for, with where it was written."""

    source: str | list[str]
    target: str | list[str]
    when: Callable[..., Any] | None
    label: str | None
    each: Callable[..., Any] | None
    line: int
    column: int
    text: str


@dataclass(frozen=True)
class _Map:
    var: str
    items: str
    items_column: int
    column: int


def _shown(text: str) -> str:
    """``repr(text)``, cut short so a huge line does not flood the message."""
    return repr(text if len(text) <= _SHOWN else text[: _SHOWN - 3] + "...")


def _strip_comment(text: str) -> str:
    """Cut a trailing ``#`` comment, leaving ``#`` inside string literals alone."""
    if "#" not in text:
        return text
    try:
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            if token.type == tokenize.COMMENT:
                return text[: token.start[1]]
        return text  # every '#' is inside a string
    except (tokenize.TokenError, SyntaxError, ValueError, MemoryError, RecursionError):
        pass
    # Unbalanced brackets or quotes: fall back to the first '#', the error comes later.
    return text[: text.index("#")]


def _did_you_mean(name: str, namespace: Mapping[str, Any]) -> str:
    return did_you_mean(name, [k for k, v in namespace.items() if callable(v) and not k.startswith("_")])


def _did_you_mean_node(name: str, namespace: Mapping[str, Any]) -> str:
    return did_you_mean(
        name, [k for k, v in namespace.items() if (callable(v) or isinstance(v, Graph)) and not k.startswith("_")]
    )


def compile_condition(expr: str, namespace: Mapping[str, Any], *, where: tuple[int, int, str] = (1, 1, "")) -> Callable[..., Any]:
    """Compile a condition expression once into ``fn(state)`` or ``fn(state, ctx)``.

    The function's globals are ``namespace`` (the notebook's), so conditions can use
    the user's helpers. ``where`` is (line, column of the expression, line text) for
    error messages.

    Raises:
        GraphSyntaxError: the expression is empty, invalid, or too deeply nested to compile.
    """
    return _compile_expression(
        expr, namespace, where, what="condition", empty="'if' needs a condition after it", name="condition"
    )


def _compile_expression(
    expr: str, namespace: Mapping[str, Any], where: tuple[int, int, str], *, what: str, empty: str, name: str
) -> Callable[..., Any]:
    """Compile ``expr`` into ``lambda state[, ctx]: (expr)``; every failure is a GraphSyntaxError."""
    line, column, text = where
    stripped = expr.strip()
    if not stripped:
        raise GraphSyntaxError(empty, line=line, column=column, text=text)
    column += len(expr) - len(expr.lstrip())
    prefix = ""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            # The bare expression first: its errors point into the text as written.
            params = "state, ctx" if "ctx" in _names(compile(stripped, _FILENAME, "eval")) else "state"
            prefix = f"lambda {params}: ("
            # The function itself, in the same try: the wrapper adds a level of nesting.
            code = compile(f"{prefix}{stripped}\n)", _FILENAME, "eval")
    except SyntaxError as exc:
        offset = (exc.offset or 1) - len(prefix) if (exc.lineno or 1) == 1 else 1
        offset = min(max(offset, 1), len(stripped) + 1)
        raise GraphSyntaxError(f"invalid {what}: {exc.msg}", line=line, column=column + offset - 1, text=text) from None
    except (RecursionError, MemoryError):
        raise GraphSyntaxError(
            f"invalid {what}: nested too deeply to compile; simplify it or move it into a function",
            line=line, column=column, text=text,
        ) from None
    except Exception as exc:  # noqa: BLE001 - ValueError, OverflowError...: compile() is pure, so the text is at fault
        detail = str(exc) or type(exc).__name__
        raise GraphSyntaxError(f"invalid {what}: {detail}", line=line, column=column, text=text) from None
    fn = eval(code, dict(namespace) if not isinstance(namespace, dict) else namespace)
    fn.__name__ = fn.__qualname__ = name
    return fn


def _names(code: Any) -> set[str]:
    names: set[str] = set()
    stack = [code]
    while stack:
        one = stack.pop()
        names.update(one.co_names)
        stack.extend(const for const in one.co_consts if hasattr(const, "co_names"))
    return names


def _uses_name(expr: str, name: str) -> bool:
    """Whether the (already compiled) expression reads the variable ``name``."""
    try:
        tree = ast.parse(expr.strip(), _FILENAME, mode="eval")
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return False
    return any(isinstance(node, ast.Name) and node.id == name for node in ast.walk(tree))


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


_SEPARATORS = re.compile(r"[\[\]|&]")
_WORD = re.compile(r"\w*")
_TAIL = re.compile(r"(\s*)(\w*)(\s*)(\w*)")
"""Matched on the reversed text: the last word and the one before it (anchored; never backtracks)."""
_WORDS = re.compile(r"(\w+)|\s+|(.)", re.DOTALL)
_PYTHON = re.compile(
    r"""(\w+)"""
    r"""|'''(?:[^'\\]|\\.|'(?!''))*(?:''')?|\"\"\"(?:[^"\\]|\\.|"(?!""))*(?:\"\"\")?"""
    r"""|'(?:[^'\\]|\\.)*'?|"(?:[^"\\]|\\.)*"?"""
    r"""|([(\[{])|([)\]}])|\s+|.""",
    re.DOTALL,
)
"""Python text as words, whole string literals, brackets and the rest: enough to find a top-level ``if``."""


def _top_separators(text: str) -> list[tuple[int, str]]:
    """The ``|`` and ``&`` of ``text`` not inside ``[...]`` options, with their indices."""
    found = []
    depth = 0
    for match in _SEPARATORS.finditer(text):
        char = match.group()
        if char == "[":
            depth += 1
        elif char == "]":
            depth = max(0, depth - 1)
        elif depth == 0:
            found.append((match.start(), char))
    return found


def _keyword(code: str) -> tuple[str, int, int] | None:
    """The first ``if``, or ``for`` right after a node, outside ``[...]``: (word, start, end)."""
    depth = 0
    after_node = False
    for match in _WORDS.finditer(code):
        word, other = match.groups()
        if word is not None:
            if depth == 0 and (word == "if" or (word == "for" and after_node)):
                return word, match.start(), match.end()
            after_node = True
        elif other is not None:
            if other == "[":
                depth += 1
            elif other == "]":
                depth = max(0, depth - 1)
            after_node = other == "]"
    return None


def _python_if(code: str, start: int) -> tuple[int, int] | None:
    """The first ``if`` of the Python text from ``start`` outside brackets and strings."""
    depth = 0
    for match in _PYTHON.finditer(code, start):
        word, opening, closing = match.groups()
        if word is not None:
            if word == "if" and depth == 0:
                return match.start(), match.end()
        elif opening is not None:
            depth += 1
        elif closing is not None:
            depth = max(0, depth - 1)
    return None


def _via_tail(arrow: str) -> tuple[str | None, int, int] | None:
    """``(name, start of 'via', column of name)`` when ``arrow`` ends with ``via NAME`` or ``via``."""
    spaces, last, gap, before = _TAIL.match(arrow[::-1]).groups()  # type: ignore[union-attr]
    end = len(arrow) - len(spaces)
    if last[::-1] == "via":
        return None, end - 3, end + 1
    if last and gap and before[::-1] == "via":
        start = end - len(last)
        return arrow[start:end], start - len(gap) - 3, start + 1
    return None


def _parse_options(line: _Line, name: str, raw: str, column: int) -> dict[str, Any]:
    options: dict[str, Any] = {}
    offset = 0
    for part in raw.split(","):
        item = part.strip()
        at = column + offset + len(part) - len(part.lstrip())
        offset += len(part) + 1
        if not item:
            continue
        key, _, rest = item.partition("=")
        value = rest.strip()
        if item == "approval":
            options["approval"] = True
        elif item in ("no_feedback", "no-feedback"):
            options["feedback"] = False
        elif item.startswith("on_deny="):
            if not re.fullmatch(_NAME, value):
                raise line.error(f"on_deny needs a node name, got {_shown(value)}", at)
            options["on_deny"] = END if value == "END" else value
        elif item.startswith("destinations="):
            targets = [t.strip() for t in value.split("|")]
            for target in targets:
                if not re.fullmatch(_NAME, target):
                    raise line.error(f"destinations needs node names separated by '|', got {_shown(target)}", at)
            options["destinations"] = [END if t == "END" else t for t in targets]
        elif item.startswith(("input=", "output=")):
            if not re.fullmatch(_NAME, value):
                raise line.error(f"{key} needs the name of a function, got {_shown(value)}", at)
            options[key] = _Ref(value, line.number, at + len(key) + 1 + len(rest) - len(rest.lstrip()), line.text)
        else:
            raise line.error(
                f"unknown option {_shown(item)} for node {name!r}; options are approval, no_feedback, on_deny=NAME, "
                "destinations=A|B, input=FN, output=FN",
                at,
            )
    return options


def _cannot_take_state(fn: Callable[..., Any]) -> bool:
    """Whether ``fn`` can be called neither as ``fn(state)`` nor as ``fn(state, ctx)``."""
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):
        return False  # a builtin or an odd callable: nothing to check
    for args in ((None,), (None, None)):
        try:
            signature.bind(*args)
            return False
        except TypeError:
            pass
    return True


_WRITTEN = {START: "START", END: "END"}


def _written(group: list[tuple[str, str, int]]) -> str:
    return " & ".join(written for _, written, _ in group)


class _Parser:
    def __init__(
        self, text: str, namespace: Mapping[str, Any], nodes: Mapping[str, Any], first_line: int, name: str = ""
    ) -> None:
        self.lines = text.splitlines()
        self.first_line = first_line
        self.namespace = namespace
        self.nodes = nodes
        self.name = name
        self.uses: dict[str, _NodeUse] = {}
        self.edges: list[_EdgeUse] = []
        self.routers: list[tuple[str, Callable[..., Any], list[str], _Line, int]] = []
        self.routed: dict[str, _NodeUse] = {}
        self.joins: dict[str, tuple[tuple[str, ...], int]] = {}

    def parse(self) -> None:
        for number, raw in enumerate(self.lines, start=self.first_line):
            if "\x00" in raw:
                raise GraphSyntaxError("null byte in cell", line=number, column=raw.index("\x00") + 1, text=raw.replace("\x00", "?"))
            line = _Line(number, raw)
            code = _strip_comment(raw)
            if not code.strip():
                continue
            self._statement(line, code)

    def _endpoint(self, line: _Line, chunk: str, column: int, *, allow_start: bool, allow_end: bool) -> tuple[str, int]:
        """The node (or START/END) ``chunk`` names and the column it starts at."""
        stripped = chunk.strip()
        col = column + len(chunk) - len(chunk.lstrip())
        match = _NAME_AT.match(stripped)
        raw_options = None
        valid = match is not None
        if match is not None:
            rest = stripped[match.end() :].lstrip()
            if rest:
                raw_options = rest[1:-1]
                valid = len(rest) >= 2 and rest[0] == "[" and rest[-1] == "]" and "]" not in raw_options
        if not valid:
            found = f"got {_shown(stripped)}" if stripped else "found nothing"
            raise line.error(f"expected a node name, START or END, {found}", col)
        name = match.group()  # type: ignore[union-attr]
        if name == "START":
            if not allow_start:
                raise line.error("START can only begin an edge", col)
            if raw_options is not None:
                raise line.error("START takes no options", col)
            return START, col
        if name == "END":
            if not allow_end:
                raise line.error("END is terminal; no edge may leave it", col)
            if raw_options is not None:
                raise line.error("END takes no options", col)
            return END, col
        options = _parse_options(line, name, raw_options, col + stripped.index("[") + 1) if raw_options is not None else {}
        use = self.uses.get(name)
        if use is None:
            use = self.uses[name] = _NodeUse(line.number, col, line.text)
        use.options.update(options)
        return name, col

    def _clauses(self, line: _Line, code: str) -> tuple[str, _Map | None, str | None, int, int]:
        """Split a line into its arrows, its map (``for x in ITEMS``) and its condition (``if EXPR``)."""
        found = _keyword(code)
        if found is None:
            return code, None, None, 0, 0
        word, start, end = found
        if word == "if":
            return code[:start], None, code[end:], end + 1, start + 1
        var_start = end + len(code[end:]) - len(code[end:].lstrip())
        var_match = _WORD.match(code, var_start)
        var = var_match.group()  # type: ignore[union-attr]
        if not var or var == "in":
            raise line.error("'for' needs a loop variable: for item in ITEMS", var_start + 1)
        if not var.isidentifier() or keyword.iskeyword(var):
            raise line.error(f"{_shown(var)} cannot name the items; write for item in ITEMS", var_start + 1)
        in_start = var_match.end() + len(code[var_match.end() :]) - len(code[var_match.end() :].lstrip())
        in_end = _WORD.match(code, in_start).end()  # type: ignore[union-attr]
        if code[in_start:in_end] != "in":
            raise line.error(f"expected 'in' after 'for {var}': for {var} in ITEMS", in_start + 1)
        condition = _python_if(code, in_end)
        items_end = condition[0] if condition else len(code)
        mapping = _Map(var, code[in_end:items_end], in_end + 1, start + 1)
        if condition is None:
            return code[:start], mapping, None, 0, 0
        return code[:start], mapping, code[condition[1] :], condition[1] + 1, condition[0] + 1

    def _statement(self, line: _Line, code: str) -> None:
        arrow_part, mapping, condition, cond_col, if_col = self._clauses(line, code)
        via_name: str | None = None
        via_col = 0
        tail = _via_tail(arrow_part)
        # A trailing bare 'via' is an error, unless an 'if' or 'for' follows: then it is a node named via.
        if tail is not None and (tail[0] is not None or (condition is None and mapping is None)):
            via_name, via_start, via_col = tail
            if via_name is None:
                raise line.error("'via' needs the name of a routing function", via_col)
            if not re.fullmatch(_NAME, via_name):
                raise line.error(f"'via' needs the name of a routing function, got {_shown(via_name)}", via_col)
            if mapping is not None:
                raise line.error("a router's function picks one target; a router line takes no 'for' map", mapping.column)
            if condition is not None:
                raise line.error("a router's function picks the target; a router line takes no 'if' condition", if_col)
            arrow_part = arrow_part[:via_start]
        pieces = arrow_part.split("->")
        columns = []
        offset = 0
        for piece in pieces:
            columns.append(offset + 1)
            offset += len(piece) + 2
        if len(pieces) == 1:
            if condition is not None:
                raise line.error("a condition needs an edge before it: a -> b if CONDITION", if_col)
            if mapping is not None:
                raise line.error("a map needs an edge before it: a -> worker for item in ITEMS", mapping.column)
            if via_name is not None:
                raise line.error("a router needs targets: a -> b | c via fn", 1)
            amp = next((i for i, c in _top_separators(pieces[0]) if c == "&"), -1)
            if amp >= 0:
                raise line.error(
                    "'&' belongs in an edge: a -> b & c fans out, a & b -> c joins; a line without '->' names one node",
                    amp + 1,
                )
            self._endpoint(line, pieces[0], 1, allow_start=False, allow_end=False)
            return
        if via_name is not None:
            self._router(line, pieces, columns, via_name, via_col)
            return
        if condition is not None and len(pieces) > 2:
            raise line.error("a condition belongs to one edge; split the chain into separate lines", if_col)
        if mapping is not None and len(pieces) > 2:
            raise line.error("a map belongs to one edge; split the chain into separate lines", mapping.column)
        groups = [
            self._group(line, piece, column, first=index == 0, last=index == len(pieces) - 1)
            for index, (piece, column) in enumerate(zip(pieces, columns))
        ]
        for index, (sources, targets) in enumerate(itertools.pairwise(groups)):
            if len(sources) > 1 and len(targets) > 1:
                raise line.error(
                    f"'{_written(sources)} -> {_written(targets)}' is ambiguous: a join leads into one node and a "
                    f"fan-out leaves one; join into a node first ({_written(sources)} -> merge -> {_written(targets)}) "
                    "or write each edge on its own line",
                    columns[index + 1] - 2,
                )
            if len(sources) > 1 and targets[0][0] == END:
                raise line.error(
                    "a join leads into a node, and END is not one; end each branch on its own line (a -> END)",
                    targets[0][2],
                )
            if len(sources) > 1:
                self._join(line, sources, targets[0])
        each = when = label = None
        if mapping is not None:
            target = groups[1]
            if len(target) > 1:
                raise line.error(f"a map runs one node per item; give it one target, not '{_written(target)}'", target[0][2])
            if target[0][0] == END:
                raise line.error("a map runs a node per item, and END is not a node", target[0][2])
            each = _compile_expression(
                mapping.items, self.namespace, (line.number, mapping.items_column, line.text),
                what="map expression", empty=f"'for {mapping.var} in' needs the items to map over", name="items",
            )
            label = f"for {mapping.var} in {mapping.items.strip()}"
        if condition is not None:
            try:
                when = compile_condition(condition, self.namespace, where=(line.number, cond_col, line.text))
            except GraphSyntaxError as exc:
                if mapping is None or not re.search(r"\belse\b", condition):
                    raise
                raise GraphSyntaxError(
                    f"{exc.message}; the items end at their first 'if': put a conditional expression in parentheses",
                    line=exc.line, column=exc.column, text=exc.source_line,
                ) from None
            if mapping is not None and _uses_name(condition, mapping.var):
                raise line.error(
                    f"the 'if' after a map is the edge's condition, tested on the state before mapping; it cannot use "
                    f"{mapping.var!r} (filter the items instead: for {mapping.var} in "
                    f"[{mapping.var} for {mapping.var} in ITEMS if ...])",
                    cond_col + len(condition) - len(condition.lstrip()),
                )
            label = f"{label} if {condition.strip()}" if label else condition.strip()
        for sources, targets in itertools.pairwise(groups):
            source_names = [name for name, _, _ in sources]
            target_names = [name for name, _, _ in targets]
            self.edges.append(_EdgeUse(
                source_names[0] if len(source_names) == 1 else source_names,
                target_names[0] if len(target_names) == 1 else target_names,
                when, label, each, line.number, sources[0][2], line.text,
            ))

    def _group(self, line: _Line, piece: str, column: int, *, first: bool, last: bool) -> list[tuple[str, str, int]]:
        """``a & b & c``: each node with how it was written and its column."""
        separators = _top_separators(piece) if "&" in piece or "|" in piece else []
        bar = next((i for i, c in separators if c == "|"), -1)
        if bar >= 0:
            raise line.error("'|' lists router targets; end the line with 'via ROUTER_FUNCTION'", column + bar)
        group: list[tuple[str, str, int]] = []
        seen: set[str] = set()
        start = 0
        for end in [*(i for i, _ in separators), len(piece)]:
            name, col = self._endpoint(line, piece[start:end], column + start, allow_start=first, allow_end=last)
            written = _WRITTEN.get(name, name)
            if separators and name == START:
                raise line.error("START cannot be part of a join; START -> a & b fans out from it", col)
            if separators and name == END:
                raise line.error("END cannot be part of a fan-out; end each branch on its own line (a -> END)", col)
            if name in seen:
                raise line.error(f"node {name!r} appears twice in '{piece.strip()[:_SHOWN]}'", col)
            seen.add(name)
            group.append((name, written, col))
            start = end + 1
        return group

    def _join(self, line: _Line, sources: list[tuple[str, str, int]], target: tuple[str, str, int]) -> None:
        names = tuple(name for name, _, _ in sources)
        known = self.joins.setdefault(target[0], (names, line.number))
        if known[0] != names:
            raise line.error(
                f"node {target[0]!r} already joins {' & '.join(known[0])} (line {known[1]}); "
                "a node waits for one set of nodes",
                target[2],
            )

    def _router(self, line: _Line, pieces: list[str], columns: list[int], via_name: str, via_col: int) -> None:
        if len(pieces) != 2:
            raise line.error("a router line is: a -> b | c | END via fn", columns[2] if len(columns) > 2 else 1)
        for piece, column in zip(pieces, columns):
            amp = next((i for i, c in _top_separators(piece) if c == "&"), -1)
            if amp >= 0:
                raise line.error("a router picks one target; '&' has no place in a router line", column + amp)
        source, _ = self._endpoint(line, pieces[0], columns[0], allow_start=True, allow_end=False)
        targets = []
        start = 0
        piece = pieces[1]
        for end in [*(i for i, _ in _top_separators(piece)), len(piece)]:
            targets.append(self._endpoint(line, piece[start:end], columns[1] + start, allow_start=False, allow_end=True)[0])
            start = end + 1
        fn = self.namespace.get(via_name)
        if fn is None or not callable(fn):
            problem = "is not defined" if fn is None else f"is a {type(fn).__name__}, not a function"
            raise line.error(f"router {via_name!r} {problem}{_did_you_mean(via_name, self.namespace)}", via_col)
        if _cannot_take_state(fn):
            raise line.error(
                f"router {via_name!r} cannot take the state: it is called as {via_name}(state) "
                f"or {via_name}(state, ctx) and returns the next node's name",
                via_col,
            )
        if source in self.routed:
            raise line.error(f"node {source!r} already has a router (line {self.routed[source].line})", columns[0])
        self.routed[source] = _NodeUse(line.number, columns[0], line.text)
        self.routers.append((source, fn, targets, line, via_col))

    def resolve(self, name: str) -> tuple[Callable[..., Any] | Graph, dict[str, Any]]:
        """The node's function (or sub-graph) and options: cell options override a %%node definition's."""
        use = self.uses[name]
        defined = self.nodes.get(name)
        if isinstance(defined, NodeDefinition):
            fn, options = defined.fn, {**defined.options, **use.options}
        else:
            fn = defined if defined is not None else self.namespace.get(name)
            options = dict(use.options)
        if fn is None:
            raise GraphSyntaxError(
                f"node {name!r} is not defined: define a function {name}(state) or a %%node {name} cell"
                f"{_did_you_mean_node(name, self.namespace)}",
                line=use.line, column=use.column, text=use.text,
            )
        if isinstance(fn, Graph):
            if fn.name == self.name:
                raise GraphSyntaxError(
                    f"node {name!r} is a graph named {fn.name!r}, the graph this cell defines, and a graph cannot run "
                    f"inside itself (the name may still hold this cell's previous result): rename the node or the graph",
                    line=use.line, column=use.column, text=use.text,
                )
        elif not callable(fn):
            raise GraphSyntaxError(
                f"node {name!r} must be a function or a Graph, but {name} is a {type(fn).__name__}",
                line=use.line, column=use.column, text=use.text,
            )
        refs = {key: ref for key in ("input", "output") if isinstance(ref := options.get(key), _Ref)}
        for key, ref in refs.items():
            if not isinstance(fn, Graph):
                raise GraphSyntaxError(
                    f"node {name!r}: {key}= maps the state into and out of a sub-graph, but {name} is a "
                    f"{type(fn).__name__}, not a Graph",
                    line=ref.line, column=ref.column, text=ref.text,
                )
            if len(refs) == 1:
                raise GraphSyntaxError(
                    f"node {name!r}: give a sub-graph both input= and output=, or neither (it then shares the state)",
                    line=ref.line, column=ref.column, text=ref.text,
                )
            value = self.namespace.get(ref.name)
            if value is None or not callable(value):
                problem = "is not defined" if value is None else f"is a {type(value).__name__}, not a function"
                raise GraphSyntaxError(
                    f"{key} function {ref.name!r} {problem}{_did_you_mean(ref.name, self.namespace)}",
                    line=ref.line, column=ref.column, text=ref.text,
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
        first = next((i for i, l in enumerate(parser.lines) if _strip_comment(l).strip()), 0)
        text = parser.lines[first] if parser.lines else ""
        use = _NodeUse(first + parser.first_line, 1, text)
    more = f" (and {len(exc.problems) - 1} more: {'; '.join(exc.problems[1:])})" if len(exc.problems) > 1 else ""
    return GraphSyntaxError(problem + more, line=use.line, column=use.column, text=use.text)
