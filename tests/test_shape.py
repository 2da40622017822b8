"""The engine's shape held to its figures (``tests/code_shape.py`` says what each counts):
helpers take what they read, not the run; few files write run state; the walker stays small."""

from __future__ import annotations

import ast

import code_shape


def test_at_most_five_functions_are_handed_the_whole_walker():
    walkers = code_shape.walker_functions()
    assert len(walkers) <= 5, walkers


def test_at_most_three_engine_files_write_run_state():
    writers = code_shape.state_writers()
    assert set(writers) <= {"levels", "step", "walker"}, writers


def test_the_walker_keeps_few_fields():
    fields = code_shape.walker_fields()
    assert len(fields) <= 18, fields


def test_a_step_has_no_lone_switches():
    assert code_shape.lone_uses() == (0, 0)


def test_the_counters_see_what_they_count(tmp_path):
    """Each figure moves when the code it reads does (a checker that sees nothing passes anything)."""
    source = tmp_path / "probe.py"
    source.write_text(
        "def helper(walker, x):\n"
        "    walker.root.values = x\n"
        "    walker.history.append(x)\n"
        "def pure(level_plan, x):\n"
        "    return x\n"
        "class Level:\n"
        "    def undo(self):\n"
        "        self.steps = 0\n"
    )
    assert code_shape.state_writes(source) == [2, 3, 8]
    tree = ast.parse(source.read_text())
    assert [f.name for f in tree.body if isinstance(f, ast.FunctionDef) and code_shape.takes_walker(f)] == ["helper"]


def test_the_maps_name_every_room_of_the_engine():
    """ARCHITECTURE.md and the engine's docstring list its modules: a new one is named in both."""
    import nbgraph.engine

    architecture = (code_shape.ENGINE.parent.parent / "ARCHITECTURE.md").read_text()
    rooms = [path.stem for path in code_shape.engine_files() if path.stem != "__init__"]
    assert [room for room in rooms if f"``{room}``" not in (nbgraph.engine.__doc__ or "")] == []
    assert [room for room in rooms if f"`{room}`" not in architecture] == []
