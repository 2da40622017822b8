"""Figures of the engine's shape, read from its source: which functions are handed a whole
run, which files write run state, how many fields a run keeps, how often a step asks
whether it is alone. ``tests/test_shape.py`` holds the engine to them; ``bench/shape.py``
prints them.

What counts:

- a function *takes the walker* when it is a module-level function of ``nbgraph/engine/``
  whose parameter is named ``walker`` or annotated ``Walker`` (a method of the walker is
  the walker's own);
- a file *writes run state* when it assigns, deletes or mutates in place (``append``,
  ``pop``, ``update``, ...) an attribute of a run (``walker``, ``Walker``'s ``self``) or
  of a level (``level``, ``parent``, ``child``, ``root``, ``Level``'s ``self``);
- the walker's *fields* are the attributes ``Walker.__init__`` sets.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

ENGINE = Path(__file__).resolve().parent.parent / "nbgraph" / "engine"

_RUN_NAMES = {"walker"}
_LEVEL_NAMES = {"level", "parent", "child", "root"}
_MUTATORS = {
    "append",
    "extend",
    "insert",
    "pop",
    "popitem",
    "remove",
    "clear",
    "update",
    "setdefault",
    "add",
    "discard",
}


def engine_files() -> list[Path]:
    return sorted(ENGINE.glob("*.py"))


def _tree(path: Path) -> ast.Module:
    return ast.parse(path.read_text(), str(path))


def walker_functions() -> list[str]:
    """``module.function`` for each module-level engine function handed the whole walker."""
    found = []
    for path in engine_files():
        for node in _tree(path).body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and takes_walker(node):
                found.append(f"{path.stem}.{node.name}")
    return found


def takes_walker(function: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """Whether a parameter of ``function`` is named ``walker`` or annotated ``Walker``."""
    params = [*function.args.posonlyargs, *function.args.args, *function.args.kwonlyargs]
    return any(p.arg in _RUN_NAMES or _annotation(p) == "Walker" for p in params)


def _annotation(param: ast.arg) -> str | None:
    note = param.annotation
    if isinstance(note, ast.Name):
        return note.id
    if isinstance(note, ast.Constant) and isinstance(note.value, str):
        return note.value
    return None


def _owner(target: ast.expr, self_is: str | None) -> str | None:
    """``run`` or ``level`` when ``target`` is (an attribute chain off) a run or a level."""
    node = target
    while isinstance(node, (ast.Attribute, ast.Subscript)):
        node = node.value
    if not isinstance(node, ast.Name) or node is target:
        return None
    if node.id in _RUN_NAMES or (node.id == "self" and self_is == "Walker"):
        return "run"
    if node.id in _LEVEL_NAMES or (node.id == "self" and self_is == "Level"):
        return "level"
    return None


def state_writes(path: Path) -> list[int]:
    """The lines of ``path`` that write a run's or a level's fields."""
    lines: list[int] = []

    def visit(node: ast.AST, self_is: str | None) -> None:
        for child in ast.iter_child_nodes(node):
            inner = child.name if isinstance(child, ast.ClassDef) else self_is
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)) and child.name == "__init__":
                continue  # (a constructor makes its object; it does not change a run's state)
            for target in _targets(child):
                if _owner(target, inner) is not None:
                    lines.append(child.lineno)
            visit(child, inner)

    visit(_tree(path), None)
    return lines


def _targets(node: ast.AST) -> Iterator[ast.expr]:
    if isinstance(node, ast.Assign):
        yield from node.targets
    elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
        yield node.target
    elif isinstance(node, ast.Delete):
        yield from node.targets
    elif (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in _MUTATORS
        and isinstance(node.func.value, (ast.Attribute, ast.Subscript))
    ):
        yield node.func.value


def state_writers() -> dict[str, int]:
    """Engine files that write run state, with how many places each does."""
    counts = {path.stem: len(state_writes(path)) for path in engine_files()}
    return {name: count for name, count in counts.items() if count}


def walker_fields() -> list[str]:
    """The attributes ``Walker.__init__`` sets."""
    for node in ast.walk(_tree(ENGINE / "walker.py")):
        if isinstance(node, ast.ClassDef) and node.name == "Walker":
            for item in node.body:
                if isinstance(item, ast.FunctionDef) and item.name == "__init__":
                    return sorted(
                        {
                            target.attr
                            for sub in ast.walk(item)
                            for target in _targets(sub)
                            if isinstance(target, ast.Attribute)
                            and isinstance(target.value, ast.Name)
                            and target.value.id == "self"
                        }
                    )
    return []


def lone_uses() -> tuple[int, int]:
    """How many names ask whether a step is alone (``lone``, ``_fold_lone``, ...; a name in each
    function counted once), and how many times they are used."""
    names: set[str] = set()
    uses = 0
    for path in engine_files():
        tree = _tree(path)
        for scope in [tree, *(n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)))]:
            body = scope.body if isinstance(scope, ast.Module) else [scope]
            for node in (sub for item in body for sub in ast.walk(item)):
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node is not scope:
                    name = node.name
                elif isinstance(node, ast.Name):
                    name = node.id
                elif isinstance(node, ast.arg):
                    name = node.arg
                elif isinstance(node, ast.keyword):
                    name = node.arg or ""
                else:
                    continue
                if "lone" in name.lower().split("_"):
                    where = path.stem if isinstance(scope, ast.Module) else f"{path.stem}.{scope.name}"
                    names.add(f"{where}.{name}")
                    if scope is tree:
                        uses += 1
    return len(names), uses
