"""The Python a cell carries, compiled once: conditions, map expressions and ``%%node`` bodies."""

from __future__ import annotations

import ast
import io
import re
import tokenize
import warnings
from collections.abc import Callable, Mapping
from typing import Any

from ..errors import GraphSyntaxError
from ._scan import _source_lines

__all__ = ["compile_condition", "compile_node_body"]

_FILENAME = "<%%graph cell>"


def compile_condition(
    expr: str, namespace: Mapping[str, Any], *, where: tuple[int, int, str] = (1, 1, "")
) -> Callable[..., Any]:
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
            line=line,
            column=column,
            text=text,
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


_MAX_DEPTH = 500
"""How deep a ``%%node`` body may nest. Python's compiler gives up near 1,000 levels, fewer
when called from a deep stack: a body within this compiles from any plausible caller."""

_TOO_DEEP = (
    f"nested too deeply to compile: a %%node body nests at most {_MAX_DEPTH} levels (each bracket, operator, "
    "call and block is one); split it into smaller expressions or functions"
)

_NOT_SOURCE = re.compile(r"[\x00\ud800-\udfff]")
"""Characters Python source cannot hold anywhere, not even in a string literal or a comment."""

_BETWEEN_STATEMENTS = frozenset({tokenize.NL, tokenize.COMMENT, tokenize.INDENT, tokenize.DEDENT, tokenize.ENDMARKER})


def compile_node_body(name: str, body: str, namespace: dict[str, Any], *, first_line: int = 2) -> Callable[..., Any]:
    """Turn a ``%%node`` cell body into a node function ``name(state, ctx)``.

    The body is a function body: ``state`` and ``ctx`` are in scope and ``return``
    gives the update. It becomes an ``async def`` when it uses ``await``, so a node
    without it stays synchronous (and cheaper). ``first_line`` is the cell line the
    body starts on, for error messages and tracebacks. The body compiles as written,
    its lines split as Python splits them, so its string literals keep every character.

    Raises:
        GraphSyntaxError: the body does not compile (Python's message, at the cell line
            and column), or it nests more than 500 levels deep.
    """
    filename = f"<%%node {name}>"
    lines = _source_lines(body)

    def error(message: str, line: int, column: int = 1, *, in_bytes: bool = False) -> GraphSyntaxError:
        """At cell ``line``, 1-based ``column``: in characters, or in UTF-8 bytes as the AST counts."""
        number = min(max(line, first_line), first_line + max(len(lines), 1) - 1)
        text = lines[number - first_line] if lines else ""
        if in_bytes:
            column = len(text.encode()[: column - 1].decode(errors="ignore")) + 1
        column = min(max(column, 1), len(text) + 1)
        return GraphSyntaxError(message, line=number, column=column, text=_NOT_SOURCE.sub("?", text), cell="%%node")

    unreadable = _NOT_SOURCE.search(body)
    if unreadable is not None:
        before = _source_lines(body[: unreadable.start() + 1])
        message = f"Python code cannot hold the character {unreadable.group()!a}"
        raise error(message, len(before) + first_line - 1, len(before[-1]))
    # Blank lines first: Python's line numbers, in its messages too, are then the cell's.
    padding = "\n" * (first_line - 1)
    try:
        statements = ast.parse(padding + body, filename).body
    except SyntaxError as exc:
        raise error(exc.msg, exc.lineno or first_line, exc.offset or 1) from None
    except (RecursionError, MemoryError):
        line, column = _too_deep_at(body, lines)
        raise error(_TOO_DEEP, line + first_line - 1, column) from None
    deep = _past(statements, _MAX_DEPTH)
    if deep is not None:
        raise error(_TOO_DEEP, deep.lineno, deep.col_offset + 1, in_bytes=True)
    is_async = any(isinstance(n, (ast.Await, ast.AsyncFor, ast.AsyncWith)) for s in statements for n in ast.walk(s))
    module = ast.parse(f"{padding[1:]}{'async ' if is_async else ''}def _(state, ctx): pass", filename)
    function = module.body[0]
    assert isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef))
    function.name = name
    function.body = statements or function.body
    try:
        code = compile(module, filename, "exec")
    except SyntaxError as exc:  # found compiling, not parsing: 'continue' outside a loop, a nonlocal with no binding...
        raise error(exc.msg, exc.lineno or first_line, exc.offset or 1, in_bytes=True) from None
    except (RecursionError, MemoryError):  # within the limit, but compiled from a very deep stack
        raise error(_TOO_DEEP, first_line) from None
    local: dict[str, Any] = {}
    exec(code, namespace, local)
    fn = local[name]
    fn.__doc__ = f"Node {name!r} defined with %%node."
    return fn


def _past(statements: list[ast.stmt], limit: int) -> ast.stmt | None:
    """The innermost statement holding the first node, in source order, nested deeper than
    ``limit`` levels (walked without recursion: the tree may be as deep as Python can build)."""
    stack: list[tuple[ast.AST, int, ast.stmt]] = [(statement, 1, statement) for statement in reversed(statements)]
    while stack:
        node, level, holder = stack.pop()
        if isinstance(node, ast.stmt):
            holder = node
        if level > limit and isinstance(node, (ast.expr, ast.stmt)):
            return holder
        stack.extend((child, level + 1, holder) for child in reversed(list(ast.iter_child_nodes(node))))
    return None


def _too_deep_at(body: str, lines: list[str]) -> tuple[int, int]:
    """Line and column of the first statement of ``body`` (split in ``lines``) too deep for Python
    to parse; (1, 1) when no statement is, alone."""
    start: tuple[int, int] | None = None
    last = ""
    try:
        for token in tokenize.generate_tokens(io.StringIO(body, newline=None).readline):
            if token.type in _BETWEEN_STATEMENTS:
                continue
            if start is None:
                start = token.start
            if token.type == tokenize.NEWLINE:
                (row, column), end = start, token.end[0]
                statement = "\n".join(lines[row - 1 : end])[column:]
                try:
                    # A block's header without its block is an error before its depth shows.
                    ast.parse(statement + "\n pass" if last == ":" else statement)
                except (RecursionError, MemoryError):
                    return row, column + 1
                except SyntaxError:
                    pass
                start = None
            last = token.string
    except (tokenize.TokenError, SyntaxError):
        pass
    return 1, 1
