"""The ``nbgraph`` command (also ``python -m nbgraph``).

``nbgraph html TRACE.ndjson -o run.html`` writes the run an NDJSON trace recorded
(``result.to_ndjson()``, or events written as they came) as one HTML file that replays it:
the same as ``replay(trace, graph=g).to_html(path)`` in Python (:mod:`nbgraph.share`).
``--graph module:name`` (or ``path/to/file.py:name``) names the graph that ran, so the whole
graph is drawn and the state folds through its reducers; without it the drawing shows the
nodes that ran and the edges taken.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .errors import NbgraphError

__all__ = ["load_graph", "main"]


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command with ``argv`` (default: the process's arguments); returns its exit status."""
    parser = _parser()
    args = parser.parse_args(argv)
    try:
        return args.command(args)
    except (NbgraphError, ValueError, TypeError, OSError, ImportError, AttributeError) as exc:
        print(f"nbgraph {args.name}: {exc}", file=sys.stderr)
        return 1


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="nbgraph", description="nbgraph's command line.")
    commands = parser.add_subparsers(title="commands", required=True, metavar="COMMAND")
    share = commands.add_parser(
        "html",
        help="write a run's NDJSON trace as one HTML file that replays it offline",
        description=(
            "Write the run an NDJSON trace recorded as one self-contained HTML file that replays it with "
            "the step slider and the inspector: no kernel, no network; open it from disk, put it on a "
            "static site, or include it in another page."
        ),
    )
    share.add_argument("trace", type=Path, help="the NDJSON trace (result.to_ndjson(), or events as they came)")
    share.add_argument("-o", "--output", type=Path, help="the HTML file to write (default: the trace's name, .html)")
    share.add_argument(
        "-g",
        "--graph",
        metavar="MODULE:NAME",
        help="the graph that ran, as module:name or path/to/file.py:name (default: drawn from the trace)",
    )
    share.set_defaults(command=_html, name="html")
    return parser


def _html(args: argparse.Namespace) -> int:
    from .replay import replay

    graph = load_graph(args.graph) if args.graph else None
    frames = replay(args.trace, graph=graph)
    output: Path = args.output or args.trace.with_suffix(".html")
    if output.resolve() == args.trace.resolve():
        raise ValueError(f"the page would overwrite the trace {str(args.trace)!r}: give another -o")
    written = frames.to_html(output)
    size = written.stat().st_size
    print(
        f"{written}: {_steps(len(frames) - 1)} of graph {frames.plan.name!r}, {frames.outcome or 'ended'}, {size / 1024:,.0f} KB"
    )
    return 0


def load_graph(spec: str) -> Any:
    """The graph ``spec`` names: ``module:name`` (a module importable from here) or
    ``path/to/file.py:name``; ``name`` may be dotted (``module:graphs.writer``).

    Raises:
        ValueError: ``spec`` is not of that shape, or names no graph.
        ImportError: the module cannot be imported (its own error, said where).
    """
    where, colon, name = spec.rpartition(":")
    if not colon or not where or not name:
        raise ValueError(f"--graph {spec!r}: give module:name or path/to/file.py:name")
    if where.endswith(".py"):
        path = Path(where)
        if not path.is_file():
            raise ValueError(f"--graph {spec!r}: no file {where!r}")
        module_spec = importlib.util.spec_from_file_location(path.stem, path)
        if module_spec is None or module_spec.loader is None:
            raise ImportError(f"--graph {spec!r}: cannot load {where!r} as Python")
        module = importlib.util.module_from_spec(module_spec)
        sys.modules[module_spec.name] = module
        module_spec.loader.exec_module(module)
    else:
        if "" not in sys.path and str(Path.cwd()) not in sys.path:
            sys.path.insert(0, str(Path.cwd()))  # (as `python -m` finds the working directory's modules)
        module = importlib.import_module(where)
    found: Any = module
    for part in name.split("."):
        if not hasattr(found, part):
            raise ValueError(f"--graph {spec!r}: {where} has no {name!r}")
        found = getattr(found, part)
    if not (hasattr(found, "compile") or hasattr(found, "nodes")):
        raise ValueError(f"--graph {spec!r}: {name} is a {type(found).__name__}, not a Graph")
    return found


def _steps(count: int) -> str:
    return f"{count} step" if count == 1 else f"{count} steps"
