"""The engine's shape, from its source, beside the figures to reach (``tests/code_shape.py``
says what each counts; ``tests/test_shape.py`` holds the engine to the targets).

Run: python bench/shape.py
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests"))

import code_shape  # noqa: E402


def main() -> None:
    walkers = code_shape.walker_functions()
    writers = code_shape.state_writers()
    fields = code_shape.walker_fields()
    names, uses = code_shape.lone_uses()
    modules = sorted({name.partition(".")[0] for name in walkers})
    print(f"functions handed the whole walker: {len(walkers)} in {len(modules)} modules (target <= 5)")
    for name in walkers:
        print(f"    {name}")
    print(f"engine files that write run state: {len(writers)} of {len(code_shape.engine_files())} (target <= 3)")
    for name, count in sorted(writers.items()):
        print(f"    {name}: {count} places")
    owners = code_shape.run_state_writers()
    print("who writes each piece of run state (target: its own class only):")
    for owner, places in sorted(owners.items()):
        others = {writer: count for writer, count in places.items() if writer != owner}
        print(f"    {owner}: {places.get(owner, 0)} places in its own methods" + (f"; also {others}" if others else ""))
    imports = code_shape.engine_imports()
    print(f"the step imports the walker: {'walker' in imports['step']} (target: False)")
    print(f"Walker fields: {len(fields)} ({', '.join(fields)})")
    print(f"'lone' switches: {names} names, {uses} uses")


if __name__ == "__main__":
    main()
