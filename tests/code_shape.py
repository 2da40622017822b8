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
        and isinstance(node.func.value, (ast.Attribute, ast.Subscript, ast.Name))
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


# -- who writes each piece of run state ---------------------------------------------------

RUN_STATE = {
    "Activity": {"activity"},
    "Asking": {"asking"},
    "Breaks": {"breaks"},
    "Caller": {"caller"},
    "Level": {"level", "parent", "child", "root"},
    "Listeners": {"listeners"},
    "Meter": {"meter"},
    "Pauses": {"pauses"},
    "Persistence": {"persistence"},
    "Resumption": {"resumption"},
    "RunDoor": {"door"},
    "Slots": {"slots"},
    "Walker": {"walker"},
}
"""The objects that hold a run's state, each with the names the engine gives it (a variable,
a parameter or an attribute, with or without a leading underscore)."""

_CLASS_OF_NAME = {name: cls for cls, names in RUN_STATE.items() for name in names}


def _class_of(node: ast.expr, self_is: str | None, aliases: dict[str, str]) -> str | None:
    """The run-state class of the object ``node`` names (``self`` in a run-state class, a name
    or attribute the engine gives such an object, a local alias of one), or None."""
    if isinstance(node, ast.Name):
        if node.id == "self":
            return self_is if self_is in RUN_STATE else None
        return aliases.get(node.id) or _CLASS_OF_NAME.get(node.id)
    if isinstance(node, ast.Attribute):
        return _CLASS_OF_NAME.get(node.attr.lstrip("_"))
    return None


def _written(target: ast.expr, self_is: str | None, aliases: dict[str, str]) -> str | None:
    """The run-state class whose field ``target`` (an assignment's, a deletion's or a mutated
    container) writes, or None: ``x.field = ...``, ``x.field[k] = ...``, ``x.field.append(...)``,
    and the same through a local alias of ``x.field``."""
    node = target
    while isinstance(node, ast.Subscript):
        node = node.value
    if isinstance(node, ast.Attribute):
        if node is target and _class_of(node, self_is, aliases) is not None and not isinstance(node.ctx, ast.Store):
            return None  # (a verb of a run-state object: meter.add(...) is the meter's own)
        return _class_of(node.value, self_is, aliases)
    if isinstance(node, ast.Name) and node is not target:  # (an alias's item: alias[k] = ...)
        return aliases.get(f"{node.id}.")
    return None


def run_state_writes(path: Path) -> list[tuple[str, str, int]]:
    """``(class written, writer, line)`` for every write to a run-state object's fields in
    ``path``: the writer is ``Class`` for a method (its constructor included) and ``module.function``
    for a module-level function."""
    found: list[tuple[str, str, int]] = []
    stem = path.stem

    def visit_function(function: ast.FunctionDef | ast.AsyncFunctionDef, self_is: str | None) -> None:
        writer = self_is or f"{stem}.{function.name}"
        aliases: dict[str, str] = {}
        for node in ast.walk(function):
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                name, value = node.targets[0].id, node.value
                held = _class_of(value, self_is, aliases) if isinstance(value, (ast.Name, ast.Attribute)) else None
                if held is not None:
                    aliases[name] = held  # (the object itself: meter = self.meter)
                elif isinstance(value, ast.Attribute) and (owner := _class_of(value.value, self_is, aliases)):
                    aliases[f"{name}."] = owner  # (one of its containers: closers = self.door.closers)
        for node in ast.walk(function):
            for target in _flat(_targets(node)):
                owner = _written(target, self_is, aliases)
                if (
                    owner is None
                    and isinstance(target, ast.Name)
                    and f"{target.id}." in aliases
                    and isinstance(node, ast.Call)
                ):
                    owner = aliases[f"{target.id}."]  # (an alias's container mutated: closers.pop())
                if owner is not None:
                    found.append((owner, writer, node.lineno))

    def visit(node: ast.AST, self_is: str | None) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.ClassDef):
                visit(child, child.name)
            elif isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                visit_function(child, self_is)
            else:
                visit(child, self_is)

    visit(_tree(path), None)
    return found


def _flat(targets: Iterator[ast.expr]) -> Iterator[ast.expr]:
    for target in targets:
        if isinstance(target, (ast.Tuple, ast.List)):
            yield from _flat(iter(target.elts))
        else:
            yield target


def run_state_writers() -> dict[str, dict[str, int]]:
    """Each run-state class, with who writes its fields and in how many places."""
    writers: dict[str, dict[str, int]] = {}
    for path in engine_files():
        for owner, writer, _ in run_state_writes(path):
            places = writers.setdefault(owner, {})
            places[writer] = places.get(writer, 0) + 1
    return writers


def engine_imports() -> dict[str, set[str]]:
    """Each engine module, with the engine modules it imports (``TYPE_CHECKING`` and inside
    functions too)."""
    imports: dict[str, set[str]] = {}
    for path in engine_files():
        found: set[str] = set()
        for node in ast.walk(_tree(path)):
            if isinstance(node, ast.ImportFrom) and node.level == 1 and node.module:
                found.add(node.module.split(".")[0])
        imports[path.stem] = found
    return imports


def checkpoint_makers() -> list[str]:
    """The engine modules that call ``Checkpoint(...)`` or a checkpoint's ``_replace``."""
    makers = []
    for path in engine_files():
        for node in ast.walk(_tree(path)):
            if isinstance(node, ast.Call) and (
                (isinstance(node.func, ast.Name) and node.func.id == "Checkpoint")
                or (
                    isinstance(node.func, ast.Attribute)
                    and node.func.attr == "_replace"
                    and _names_checkpoint(node.func.value)
                )
            ):
                makers.append(path.stem)
                break
    return makers


def _names_checkpoint(node: ast.expr) -> bool:
    while isinstance(node, (ast.Attribute, ast.Call)):
        if isinstance(node, ast.Attribute) and node.attr in ("last", "checkpoint"):
            return True
        node = node.func if isinstance(node, ast.Call) else node.value
    return isinstance(node, ast.Name) and node.id in ("last", "checkpoint")


def module_state(path: Path) -> list[str]:
    """Names a module assigns at its top level to a mutable container (a list, dict or set)."""
    found = []
    for node in _tree(path).body:
        targets = (
            node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else []
        )
        value = getattr(node, "value", None)
        if isinstance(value, (ast.List, ast.Dict, ast.Set, ast.ListComp, ast.DictComp, ast.SetComp)):
            found += [t.id for t in targets if isinstance(t, ast.Name) and not t.id.startswith("__")]
    return found
