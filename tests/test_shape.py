"""The engine's shape held to its figures (``tests/code_shape.py`` says what each counts):
helpers take what they read, not the run; few files write run state; the walker stays small."""

from __future__ import annotations

import ast

import code_shape


def test_at_most_five_functions_are_handed_the_whole_walker():
    walkers = code_shape.walker_functions()
    assert len(walkers) <= 5, walkers


def test_each_piece_of_run_state_is_written_by_its_own_methods_only():
    """Meter, Pauses, Persistence, Level, ...: every write to one's fields (constructors and
    ``self._x.y`` chains included) is in its own class; everything else asks it through a verb."""
    writers = code_shape.run_state_writers()
    assert {owner: set(places) - {owner} for owner, places in writers.items() if set(places) - {owner}} == {}
    assert set(writers) >= {"Level", "Meter", "Pauses", "Persistence", "Walker"}  # (the counter sees them)


def test_the_step_never_reaches_back_into_the_walker():
    imports = code_shape.engine_imports()
    assert "walker" in imports["run"] and "step" in imports["walker"]
    assert "walker" not in imports["step"]
    assert [name for name in imports if "walker" in imports[name] and name not in ("run", "result")] == []


def test_persistence_builds_the_checkpoints():
    """Only ``persistence`` makes a ``Checkpoint`` of a running thread (a resume's and a fork's
    reading of one aside, the stores' own and the replay's are outside the engine)."""
    assert code_shape.checkpoint_makers() == ["persistence"]


def test_stops_are_pure():
    """``stops`` builds endings and says why: it writes no run state and keeps none."""
    assert [(owner, writer) for owner, writer, _ in code_shape.run_state_writes(code_shape.ENGINE / "stops.py")] == []
    assert code_shape.module_state(code_shape.ENGINE / "stops.py") == []


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
    probe = tmp_path / "writers.py"
    probe.write_text(
        "class Meter:\n"
        "    def took(self, d):\n"
        "        self.step_seconds += d\n"
        "class Walker:\n"
        "    def __init__(self):\n"
        "        self.meter.kept = True\n"
        "def helper(door, level, x):\n"
        "    door.meter.add(1, 0.0, 0)\n"
        "    closers = door.closers\n"
        "    closers.pop()\n"
        "    level.last_node, level.same = x, 1\n"
        "    level.records[0] = x\n"
    )
    assert sorted(code_shape.run_state_writes(probe), key=lambda write: write[2]) == [
        ("Meter", "Meter", 3),
        ("Meter", "Walker", 6),
        ("RunDoor", "writers.helper", 10),
        ("Level", "writers.helper", 11),
        ("Level", "writers.helper", 11),
        ("Level", "writers.helper", 12),
    ]
    tree = ast.parse(source.read_text())
    assert [f.name for f in tree.body if isinstance(f, ast.FunctionDef) and code_shape.takes_walker(f)] == ["helper"]


def test_the_maps_name_every_room_of_the_engine():
    """ARCHITECTURE.md and the engine's docstring list its modules: a new one is named in both."""
    import nbgraph.engine

    architecture = (code_shape.ENGINE.parent.parent / "ARCHITECTURE.md").read_text()
    rooms = [path.stem for path in code_shape.engine_files() if path.stem != "__init__"]
    assert [room for room in rooms if f"``{room}``" not in (nbgraph.engine.__doc__ or "")] == []
    assert [room for room in rooms if f"`{room}`" not in architecture] == []
