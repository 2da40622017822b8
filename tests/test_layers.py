"""The package's layers: every import (at module level or inside a function) points down or
sideways, never up, and no two modules import each other in a circle."""

from __future__ import annotations

import ast
from pathlib import Path

import nbgraph

PACKAGE = Path(nbgraph.__file__).parent

LAYERS: list[tuple[str, set[str]]] = [
    (
        "plain data",
        {
            "nbgraph.errors",
            "nbgraph.names",
            "nbgraph.secrets",
            "nbgraph.reducers",
            "nbgraph.state",
            "nbgraph.pauses",
            "nbgraph.answering",
            "nbgraph.decision",
            "nbgraph.storable",
            "nbgraph.schema_check",
            "nbgraph.events",
            "nbgraph.history",
            "nbgraph.checkpoint.base",
            "nbgraph.checkpoint.leases",
            "nbgraph.deadlines",
            "nbgraph.hooks",
        },
    ),
    ("the compiled plan", {"nbgraph.plan"}),
    (
        "exports and stores",
        {
            "nbgraph.export",
            "nbgraph.picture",
            "nbgraph.checkpoint",
            "nbgraph.checkpoint._dsn",
            "nbgraph.checkpoint.log",
            "nbgraph.checkpoint.memory",
            "nbgraph.checkpoint.sqlite",
            "nbgraph.checkpoint.redis",
            "nbgraph.checkpoint.postgres",
        },
    ),
    (
        "the engine",
        {
            "nbgraph.engine",
            "nbgraph.engine.*",
            "nbgraph._timeline",
            "nbgraph.inspection",
            "nbgraph.inspection.*",
            "nbgraph.replay",
            "nbgraph._replay_frame",
            "nbgraph._trace_records",
            "nbgraph._loose_plan",
            "nbgraph.side_by_side",
            "nbgraph._decided",
            "nbgraph._shown",
            "nbgraph.share",
        },
    ),
    ("models and tools", {"nbgraph.llm", "nbgraph.llm.*"}),
    ("batches", {"nbgraph.batch", "nbgraph.batch.*"}),
    (
        "the builder and the language",
        {
            "nbgraph.compiler",
            "nbgraph.graph",
            "nbgraph._running",
            "nbgraph.dsl",
            "nbgraph.dsl.*",
            "nbgraph.prebuilt",
            "nbgraph.prebuilt.heartbeat",
            "nbgraph",
        },
    ),
    # Above all that runs: the engine reaches it only through the hooks it installs.
    ("traces for other tools", {"nbgraph.otel"}),
    # The `nbgraph` command: reads traces and writes pages with what is below.
    ("the command line", {"nbgraph.cli", "nbgraph.__main__"}),
    # Loaded by pytest (its pytest11 entry point), in a user's tests.
    ("the test plugin", {"nbgraph.testing"}),
    (
        "the notebook layer",
        {
            "nbgraph._display",
            "nbgraph._module",
            "nbgraph._pictured",
            "nbgraph._observer",
            "nbgraph._redefined",
            "nbgraph._protocol",
            "nbgraph._graph_clicks",
            "nbgraph._view_breakpoints",
            "nbgraph._inspector",
            "nbgraph.widget",
            "nbgraph.batch_view",
            "nbgraph.magics",
            "nbgraph.viewed",
            "nbgraph.waiting",
        },
    ),
    # Another engine's runs in the same view: LangGraph's graphs drawn, watched and forked.
    ("other engines", {"nbgraph.langgraph", "nbgraph.langgraph.*"}),
]

LAZY_UPWARD = {
    # `%load_ext nbgraph` loads the magics. (Showing a graph or a started run inside a
    # kernel loads the notebook layer by its entry point, without naming it.)
    ("nbgraph", "nbgraph.magics"),
}


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module_name(path): path for path in PACKAGE.rglob("*.py")}


def _layer(module: str) -> int:
    for index, (_, members) in enumerate(LAYERS):
        for member in members:
            if module == member or (member.endswith(".*") and module.startswith(member[:-1])):
                return index
    raise AssertionError(f"{module} is in no layer: add it to LAYERS in {__file__}")


def _type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(module: str) -> list[tuple[str, int, bool]]:
    """(imported nbgraph module, line, only for type checking) for every import in ``module``."""
    path = MODULES[module]
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: list[tuple[str, int, bool]] = []

    def visit(node: ast.AST, typing_only: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _type_checking(child):
                for item in child.body:
                    visit_one(item, True)
                for item in child.orelse:
                    visit_one(item, typing_only)
            else:
                visit_one(child, typing_only)

    def visit_one(node: ast.AST, typing_only: bool) -> None:
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "nbgraph":
                    found.append((alias.name, node.lineno, typing_only))
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target.split(".")[0] != "nbgraph":
                return
            for alias in node.names:
                # `from . import engine` names a module; `from .state import Schema` a name in one.
                candidate = f"{target}.{alias.name}"
                found.append((candidate if candidate in MODULES else target, node.lineno, typing_only))
        visit(node, typing_only)

    visit(ast.parse(path.read_text(), str(path)), False)
    return [(name, line, typing_only) for name, line, typing_only in found if name != module]


def test_every_module_is_in_a_layer():
    for module in MODULES:
        _layer(module)


def test_no_import_points_up_the_layers():
    upward = []
    for module in MODULES:
        for imported, line, _ in _imports(module):
            if imported not in MODULES:
                continue
            if _layer(imported) > _layer(module) and (module, imported) not in LAZY_UPWARD:
                upward.append(
                    f"{MODULES[module].relative_to(PACKAGE.parent)}:{line}: {module} ({LAYERS[_layer(module)][0]}) "
                    f"imports {imported} ({LAYERS[_layer(imported)][0]})"
                )
    assert not upward, "imports that point up the layers:\n" + "\n".join(upward)


def test_the_allowed_upward_imports_are_lazy():
    # The exceptions must stay inside functions: importing a module never loads the notebook layer.
    for module, imported in LAZY_UPWARD:
        tree = ast.parse(MODULES[module].read_text())
        top_level = [
            node
            for node in tree.body
            if isinstance(node, (ast.Import, ast.ImportFrom)) and imported.rpartition(".")[2] in ast.unparse(node)
        ]
        assert not top_level, f"{module} imports {imported} at module level"


def test_no_import_cycles():
    # The listed lazy imports load a layer that then registers itself below: that loop is the design.
    graph = {
        module: {
            imported
            for imported, _, typing_only in _imports(module)
            if not typing_only and imported in MODULES and (module, imported) not in LAZY_UPWARD
        }
        for module in MODULES
    }
    cycles = []
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def walk(module: str) -> None:
        state[module] = 1
        path.append(module)
        for imported in sorted(graph[module]):
            # A package's __init__ importing its own submodules is how a package is assembled.
            if imported.startswith(module + "."):
                continue
            if state.get(imported) == 1:
                cycles.append(" -> ".join(path[path.index(imported) :] + [imported]))
            elif imported not in state:
                walk(imported)
        path.pop()
        state[module] = 2

    for module in sorted(graph):
        if module not in state:
            walk(module)
    assert not cycles, "import cycles:\n" + "\n".join(cycles)


def test_the_checker_sees_imports_inside_functions():
    # The package loads its magics from inside a function (`%load_ext nbgraph`): the checker must see it.
    assert ("nbgraph.magics", True) in {(name, line > 0) for name, line, _ in _imports("nbgraph")}


def test_the_engine_never_names_the_notebook_layer():
    # It is found by its entry point: nothing below it imports it, even lazily.
    notebook = LAYERS[[name for name, _ in LAYERS].index("the notebook layer")][1]
    below = [m for m in MODULES if _layer(m) < _layer("nbgraph._display")]
    named = [(m, imported) for m in below for imported, _, _ in _imports(m) if imported in notebook]
    assert named == [("nbgraph", "nbgraph.magics")]


def test_only_the_notebook_layer_imports_marimo_and_only_where_it_runs():
    # marimo is a runtime nbgraph shows its views in, never a dependency: imported inside the
    # function that shows a view there, so that importing any module never loads it.
    notebook = _layer("nbgraph._display")
    found = []
    for module, path in MODULES.items():
        tree = ast.parse(path.read_text())
        top_level = set(tree.body)
        for node in ast.walk(tree):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            if isinstance(node, ast.ImportFrom) and not node.level:
                names = [node.module or ""]
            if any(name.split(".")[0] == "marimo" for name in names):
                found.append((module, _layer(module) == notebook and node not in top_level))
    assert found and all(lazy_in_the_layer for _, lazy_in_the_layer in found), found


def _engine_private_attributes() -> set[str]:
    """The underscored attributes the engine's objects keep (``self._walker``, slots)."""
    names: set[str] = set()
    for module, path in MODULES.items():
        if not module.startswith("nbgraph.engine"):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self":
                if isinstance(node.ctx, ast.Store):
                    names.add(node.attr)
            elif isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == "__slots__" for t in node.targets
            ):
                names.update(ast.literal_eval(node.value))
    return {name for name in names if name.startswith("_") and not name.startswith("__")}


def _private_reads(module: str, private: set[str]) -> list[str]:
    """Where ``module`` reads one of ``private`` off an object that is not its own ``self``."""
    found = []
    for node in ast.walk(ast.parse(MODULES[module].read_text())):
        if isinstance(node, ast.Attribute) and node.attr in private:
            if not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls")):
                found.append(f"{module}:{node.lineno}: .{node.attr}")
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("getattr", "hasattr"):
            name = node.args[1] if len(node.args) > 1 else None
            if isinstance(name, ast.Constant) and name.value in private:
                found.append(f"{module}:{node.lineno}: {node.func.id}(..., {name.value!r})")
    return found


def test_no_module_outside_the_engine_reads_the_engines_private_attributes():
    private = _engine_private_attributes()
    assert {"_walker", "_run", "_result"} <= private  # (the checker sees what the engine keeps)
    reads = [
        read
        for module in MODULES
        if not module.startswith("nbgraph.engine")
        for read in _private_reads(module, private)
    ]
    assert not reads, "reads of the engine's private attributes (give Run or RunResult a public door):\n" + "\n".join(
        reads
    )


def test_the_private_attribute_checker_sees_a_read():
    private = _engine_private_attributes()
    assert _private_reads("nbgraph.engine.run", private)  # the run's view reads the run's walker: inside, allowed
