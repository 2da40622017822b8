"""The Python a cell carries, compiled once: conditions, map expressions and ``%%node`` bodies."""

from __future__ import annotations

import ast
import warnings
from collections.abc import Callable, Mapping
from typing import Any

from ..errors import GraphSyntaxError

__all__ = ["compile_condition", "compile_node_body"]

_FILENAME = "<%%graph cell>"


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

