"""Mutants of the course's worked solutions, and what each exercise's check says of them.

A mutant is an exercise's worked answer changed in one small way a learner could change it: a
comparison flipped, a number off by one, an edge left out or two edges of one node swapped, a
node that returns a bare value instead of a dict or writes to the state in place, a ``%%graph``
cell not run again after the functions it uses changed. Mutants are made from the answer's
cells by rule (Python through its syntax tree, ``%%graph`` cells line by line), never by hand.

A lesson's mutants run in one kernel, the way its solution notebook runs: the solution's first
cells (``course.rebuild`` of the lesson), the answers of the exercises before, the mutant, then
the exercise's check. Between two mutants every name the kernel gained is deleted and those
first cells run again. A listener on every run the answer and the check make records what the
graphs did (each step's node, update and route, each pause, each ending), so a mutant the check
passes can be told apart: it changed nothing the check could see (an equivalent mutant, left out
of the score) or it changed what the graphs did and the check missed it (a survivor).

A mutant the check refuses is counted only if the refusal names the real cause: the node's raw
failure when a run failed, the stale ``%%graph`` cell when that cell was not run again, and
otherwise a name from the changed line (the function it is in, the edge's nodes, the setting,
the name it assigns or a function of the answer that reads that name). A mutant whose own cell
fails (a ``%%graph`` cell the change left invalid, say) is counted apart: the error in that cell,
under the learner's eyes, names the line.
"""

from __future__ import annotations

import ast
import copy
import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import nbformat
from nbclient import NotebookClient

NOTEBOOKS = Path(__file__).parents[1] / "notebooks"
SOLUTIONS = NOTEBOOKS / "solutions"
LESSONS = sorted([*NOTEBOOKS.glob("0*.ipynb"), *NOTEBOOKS.glob("1*.ipynb"), *NOTEBOOKS.glob("c*.ipynb")])

# -- a solution's exercises ---------------------------------------------------------------------


@dataclass(frozen=True)
class Exercise:
    """One exercise of a solution notebook: the worked answer's cells and the check that judges them."""

    solution: str
    heading: str
    answer: tuple[str, ...]
    """The cells of the worked answer (the part of the check's cell before the check, too)."""
    check: str
    """The statements that print the check's verdict."""


@dataclass(frozen=True)
class Solution:
    name: str
    setup: tuple[str, ...]
    """The cells before the first heading: the lesson rebuilt, and what the exercises start from."""
    exercises: tuple[Exercise, ...]


def _statements(source: str) -> list[ast.stmt] | None:
    try:
        tree = compile(source, "<cell>", "exec", flags=ast.PyCF_ONLY_AST | ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
    except SyntaxError:
        return None  # a magic cell
    assert isinstance(tree, ast.Module)
    return tree.body


def _calls_a_check(statement: ast.stmt) -> bool:
    for node in ast.walk(statement):
        if isinstance(node, ast.Call):
            name = node.func.id if isinstance(node.func, ast.Name) else getattr(node.func, "attr", "")
            if name.endswith("_problems"):
                return True
    return False


def _is_verdict(statement: ast.stmt) -> bool:
    return "course.verdict(" in ast.unparse(statement)


def read_solution(path: Path) -> Solution:
    """The solution's setup cells and exercises: under each ``## `` heading, the code cells up to
    the one that calls ``course.verdict``, split where the check begins (the ``*_problems`` call)."""
    notebook = nbformat.read(path, as_version=4)
    setup: list[str] = []
    exercises: list[Exercise] = []
    heading, answer, checked = "", [], False
    for cell in notebook.cells:
        if cell.cell_type == "markdown" and cell.source.startswith("## "):
            heading, answer, checked = cell.source.splitlines()[0], [], False
            continue
        if cell.cell_type != "code" or checked:
            continue
        if not heading:
            setup.append(cell.source)
            continue
        statements = _statements(cell.source)
        if statements is None or not any(map(_is_verdict, statements)):
            answer.append(cell.source)
            continue
        lines = cell.source.splitlines()
        first = next(i for i, statement in enumerate(statements) if _calls_a_check(statement))
        last = next(i for i, statement in enumerate(statements) if _is_verdict(statement))
        before = "\n".join(lines[: statements[first].lineno - 1]).strip()
        check = "\n".join(lines[statements[first].lineno - 1 : statements[last].end_lineno])
        if before:
            answer.append(before)
        exercises.append(Exercise(path.name, heading, tuple(answer), check))
        checked = True
    return Solution(path.name, tuple(setup), tuple(exercises))


def solutions() -> list[Solution]:
    return [read_solution(path) for path in sorted(SOLUTIONS.glob("*.ipynb"))]


def lesson_of(exercise: Exercise) -> Path:
    """The lesson whose exercise this is: of the lessons the solution answers (a tutorial, or a
    case study's parts), the one that defines the function the check calls."""
    called = re.search(r"(\w+_problems)\(", exercise.check)
    assert called, exercise.check
    stem = exercise.solution.removesuffix(".ipynb")
    for path in LESSONS:
        if path.stem == stem or path.stem.startswith(f"{stem}-"):
            cells = nbformat.read(path, as_version=4).cells
            if any(f"def {called.group(1)}(" in cell.source for cell in cells if cell.cell_type == "code"):
                return path
    raise AssertionError(f"no lesson of {exercise.solution} defines {called.group(1)}")


# -- mutants ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Mutant:
    exercise: Exercise
    kind: str
    """One of KINDS."""
    where: str
    """The change, as a person would say it."""
    cells: tuple[str, ...]
    """The answer's cells with the change made (a cell left out, for a graph cell not run again)."""
    names: frozenset[str] = field(default=frozenset())
    """Words of which a refusal that names the cause contains one."""
    stale: str = ""
    """For a ``%%graph`` cell not run again: the graph, which the refusal must name."""

    @property
    def id(self) -> str:
        return f"{self.exercise.heading.removeprefix('## ')} | {self.kind}: {self.where}"


KINDS = (
    "comparison flipped",
    "number off by one",
    "edge left out",
    "edges swapped",
    "bare value returned",
    "state changed in place",
    "graph cell not run again",
)

Change = tuple[str, str, str, frozenset[str]]
"""A change to one cell: its kind (one of KINDS), where it is, the cell's new source, and the names
of which a refusal that names its cause contains one."""

_FLIPPED: dict[type[ast.cmpop], tuple[type[ast.cmpop], str, str]] = {  # an operator: its negation, both written
    ast.Lt: (ast.GtE, "<", ">="),
    ast.GtE: (ast.Lt, ">=", "<"),
    ast.Gt: (ast.LtE, ">", "<="),
    ast.LtE: (ast.Gt, "<=", ">"),
    ast.Eq: (ast.NotEq, "==", "!="),
    ast.NotEq: (ast.Eq, "!=", "=="),
    ast.In: (ast.NotIn, "in", "not in"),
    ast.NotIn: (ast.In, "not in", "in"),
    ast.Is: (ast.IsNot, "is", "is not"),
    ast.IsNot: (ast.Is, "is not", "is"),
}
_DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
_LOCUS_NOISE = {"state", "ctx", "self", "s", "print", "True", "False", "None", "course", "len", "str", "int"}
"""Names too common to point anywhere."""


def _off_by_one(value: int | float) -> list[int | float]:
    """``value`` one less and one more, in its last written digit for a float (0.03: 0.02, 0.04)."""
    if isinstance(value, int):
        return [value - 1, value + 1]
    decimals = len(repr(value).partition(".")[2]) if "e" not in repr(value) else 0
    unit = 10.0**-decimals if decimals else 1.0
    return [round(value - unit, decimals + 1), round(value + unit, decimals + 1)]


def _words(node: ast.AST) -> set[str]:
    """The names and attributes an expression reads, its keywords, and its identifier-like strings."""
    found: set[str] = set()
    for inner in ast.walk(node):
        if isinstance(inner, ast.Name):
            found.add(inner.id)
        elif isinstance(inner, ast.Attribute):
            found.add(inner.attr)
        elif isinstance(inner, ast.Constant) and isinstance(inner.value, str) and inner.value.isidentifier():
            found.add(inner.value)
        elif isinstance(inner, ast.keyword) and inner.arg:
            found.add(inner.arg)
    return found


def _targets(statement: ast.stmt) -> set[str]:
    """The names a top-level statement binds."""
    if isinstance(statement, _DEFINITIONS):
        return {statement.name}
    targets = getattr(statement, "targets", None) or [getattr(statement, "target", None)]
    return {n.id for target in targets if target is not None for n in ast.walk(target) if isinstance(n, ast.Name)}


class _Cell:
    """A Python cell of an answer, made into changed copies of itself."""

    def __init__(self, source: str, readers: dict[str, set[str]]) -> None:
        tree = compile(source, "<cell>", "exec", flags=ast.PyCF_ONLY_AST | ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
        assert isinstance(tree, ast.Module)
        self.tree = tree
        self.nodes = list(ast.walk(tree))
        self.top = {id(node): statement for statement in tree.body for node in ast.walk(statement)}
        self.readers = readers
        """For a name, the functions of the answer that read it."""

    def names(self, node: ast.AST, *more: ast.AST) -> frozenset[str]:
        """What a refusal of a change to ``node`` may name: the function or class it is in; or, at the
        top level, the names its statement binds and calls and those the change touches (``more``
        too); and the functions of the answer that read a name so bound."""
        statement = self.top[id(node)]
        found = _targets(statement)
        if not isinstance(statement, _DEFINITIONS):
            calls = [n.func for n in ast.walk(statement) if isinstance(n, ast.Call)]
            found |= {
                f.id if isinstance(f, ast.Name) else f.attr for f in calls if isinstance(f, (ast.Name, ast.Attribute))
            }
            for touched in (node, *more):
                found |= _words(touched)
        for name in list(found):
            found |= self.readers.get(name, set())
        return frozenset(found - _LOCUS_NOISE)

    def edited(self, node: ast.AST, edit: Callable[[ast.AST], ast.AST | list[ast.stmt]]) -> str:
        """The cell's source with (a copy of) ``node`` replaced by what ``edit`` makes of it: a node,
        or, for a statement, several."""
        tree = copy.deepcopy(self.tree)
        nodes = list(ast.walk(tree))
        old = nodes[self.nodes.index(node)]
        for parent in nodes:
            for name, value in ast.iter_fields(parent):
                if value is old:
                    setattr(parent, name, edit(old))
                elif isinstance(value, list) and any(item is old for item in value):
                    at = next(i for i, item in enumerate(value) if item is old)
                    new = edit(old)
                    value[at : at + 1] = new if isinstance(new, list) else [new]
                else:
                    continue
                return ast.unparse(ast.fix_missing_locations(tree))
        raise AssertionError(f"{ast.unparse(node)} is not in the cell")

    def without(self, drop: int = -1, swap: tuple[int, int] | None = None) -> str:
        """The cell with its ``drop``-th top-level statement left out, or two of them swapped."""
        body = [statement for at, statement in enumerate(self.tree.body) if at != drop]
        if swap is not None:
            body[swap[0]], body[swap[1]] = body[swap[1]], body[swap[0]]
        return ast.unparse(ast.Module(body=body, type_ignores=[]))


def _flips(cell: _Cell, node: ast.AST) -> Iterator[Change]:
    """A comparison made its opposite; a ``not`` dropped."""
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        yield (
            "comparison flipped",
            f"`{ast.unparse(node)}` without its `not`",
            cell.edited(node, lambda old: getattr(old, "operand")),  # noqa: B009 (an AST node of a known kind)
            cell.names(node),
        )
        return
    assert isinstance(node, ast.Compare)
    for at, op in enumerate(node.ops):
        flipped, was, now = _FLIPPED[type(op)]

        def flip(old: ast.AST, at: int = at, flipped: type[ast.cmpop] = flipped) -> ast.AST:
            assert isinstance(old, ast.Compare)
            return ast.Compare(old.left, [flipped() if i == at else o for i, o in enumerate(old.ops)], old.comparators)

        yield (
            "comparison flipped",
            f"`{ast.unparse(node)}` with `{was}` made `{now}`",
            cell.edited(node, flip),
            cell.names(node),
        )


def _numbers(cell: _Cell, node: ast.Constant) -> Iterator[Change]:
    """A number off by one; a number written in a string (a regex's ``{4}``, the 30 of "30 days") too."""
    keyword = next((k for k in cell.nodes if isinstance(k, ast.keyword) and k.value is node), None)
    parent = next((p for p in cell.nodes if any(child is node for child in ast.iter_child_nodes(p))), node)
    context = keyword or parent
    if isinstance(node.value, str):
        values = [
            (text, node.value[: found.start()] + text + node.value[found.end() :])
            for found in re.finditer(r"\d+", node.value)
            for text in map(str, _off_by_one(int(found.group())))
            if not text.startswith("-")
        ]
        shown = [(f"{node.value!r}, a number in it made {text}", new) for text, new in values]
    else:
        assert isinstance(node.value, (int, float))
        shown = [(f"{node.value!r} made {new!r} in `{ast.unparse(context)}`", new) for new in _off_by_one(node.value)]
    for where, new in shown:
        yield (
            "number off by one",
            where,
            cell.edited(node, lambda old, new=new: ast.Constant(new)),
            cell.names(node, context),
        )


def _graph_text(cell: _Cell, node: ast.Constant) -> Iterator[Change]:
    """A graph's text in a string (tutorial 2's TO_FIX), changed as a ``%%graph`` cell is."""
    assert isinstance(node.value, str)
    for kind, where, lines, names in _edge_mutants(node.value.split("\n")):
        source = cell.edited(node, lambda old, lines=lines: ast.Constant("\n".join(lines)))
        yield kind, where, source, names | cell.names(node)


def _returns(cell: _Cell) -> Iterator[Change]:
    """A node (a function whose first argument is ``state``) that returns a bare value instead of
    its dict, and one that writes its update into the state in place."""
    for statement in cell.tree.body:
        if not isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)) or statement.args.args[:1] == []:
            continue
        if statement.args.args[0].arg != "state":
            continue
        for node in ast.walk(statement):
            if not (isinstance(node, ast.Return) and isinstance(node.value, ast.Dict) and node.value.keys):
                continue
            update = node.value
            if not all(isinstance(key, ast.Constant) and isinstance(key.value, str) for key in update.keys):
                continue
            writes: list[ast.stmt] = [
                ast.Assign([ast.Attribute(ast.Name("state", ast.Load()), str(key.value), ast.Store())], value, lineno=0)
                for key, value in zip(update.keys, update.values, strict=True)
                if isinstance(key, ast.Constant)
            ]
            names = frozenset({statement.name})
            bare = update.values[0]
            where = f"{statement.name} returns `{ast.unparse(bare)}` instead of `{ast.unparse(update)}`"
            yield "bare value returned", where, cell.edited(node, lambda old, bare=bare: ast.Return(bare)), names
            where = f"{statement.name} writes its update into the state instead of returning it"
            yield (
                "state changed in place",
                where,
                cell.edited(node, lambda old, w=writes: [*w, ast.Return(None)]),
                names,
            )


def _edge_call(statement: ast.stmt) -> tuple[str, str] | None:
    """(source, target) of a top-level ``g.add_edge(source, target, ...)`` statement."""
    call = statement.value if isinstance(statement, ast.Expr) else None
    if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and call.func.attr == "add_edge"):
        return None
    if len(call.args) < 2:
        return None
    source, target = (ast.unparse(arg).strip("'\"") for arg in call.args[:2])
    return source, target


def _builder_edges(cell: _Cell) -> Iterator[Change]:
    """Each ``add_edge`` of the builder API left out, and two edges out of one node swapped."""
    edges = [(at, edge) for at, statement in enumerate(cell.tree.body) if (edge := _edge_call(statement))]
    for n, (at, (source, target)) in enumerate(edges):
        where = f"`{ast.unparse(cell.tree.body[at])}` left out"
        yield "edge left out", where, cell.without(drop=at), frozenset({source, target})
        later = next(((other_at, edge) for other_at, edge in edges[n + 1 :] if edge[0] == source), None)
        if later is not None:
            other_at, (_, other) = later
            where = f"the edges {source} -> {target} and {source} -> {other} swapped"
            yield "edges swapped", where, cell.without(swap=(at, other_at)), frozenset({source, target, other})


def _python_mutants(source: str, readers: dict[str, set[str]]) -> Iterator[Change]:
    cell = _Cell(source, readers)
    docstrings = {
        id(definition.body[0].value)
        for definition in ast.walk(cell.tree)
        if isinstance(definition, _DEFINITIONS) and isinstance(definition.body[0], ast.Expr)
    }
    for node in cell.nodes:
        if isinstance(node, ast.Compare) or (isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not)):
            yield from _flips(cell, node)
        elif isinstance(node, ast.Constant) and id(node) not in docstrings:
            if isinstance(node.value, str) and "->" in node.value:
                yield from _graph_text(cell, node)
            elif type(node.value) in (int, float, str):
                yield from _numbers(cell, node)
    yield from _returns(cell)
    yield from _builder_edges(cell)


# -- %%graph cells --------------------------------------------------------------------------------

_IDENTIFIER = re.compile(r"[A-Za-z_]\w*")
_KEYWORDS = {"if", "via", "for", "in", "and", "or", "not"}


def _code_of(line: str) -> str:
    """The line without its comment (a ``#`` outside quotes)."""
    quote = ""
    for at, char in enumerate(line):
        if quote:
            quote = "" if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char == "#":
            return line[:at].rstrip()
    return line.rstrip()


def _condition_at(code: str) -> int:
    """Where the line's `` if `` condition begins (after the keyword), or -1."""
    depth = 0
    for at in range(len(code)):
        depth += {"[": 1, "]": -1}.get(code[at], 0)
        if depth == 0 and code.startswith(" if ", at):
            return at + 4
    return -1


def _endpoints(code: str) -> set[str]:
    condition = _condition_at(code)
    head = code[: condition - 4] if condition >= 0 else code
    head = re.sub(r"\[[^\]]*\]", " ", head).split(" via ")[0].split(" for ")[0]
    return {word for word in _IDENTIFIER.findall(head) if word not in _KEYWORDS}


def _source_of(code: str) -> str:
    found = _IDENTIFIER.findall(re.sub(r"\[[^\]]*\]", " ", code.split("->")[0]))
    return " & ".join(found)


def _edge_mutants(lines: list[str]) -> Iterator[tuple[str, str, list[str], frozenset[str]]]:
    """The lines of a graph's text, changed: an edge left out (a line, or one arm of a fan-out or
    a join), two edges out of one node swapped, a condition flipped or a number in it off by one."""
    codes = [_code_of(line) for line in lines]
    for i, code in enumerate(codes):
        if not code.strip():
            continue
        ends = frozenset(_endpoints(code))
        yield "edge left out", f"`{code.strip()}` left out", lines[:i] + lines[i + 1 :], ends
        for side, text in enumerate(code.split("->")):
            arms = text.split("&")
            if len(arms) < 2 or "[" in text:
                continue
            for k in range(len(arms)):
                pieces = code.split("->")
                pieces[side] = "&".join(arms[:k] + arms[k + 1 :])
                yield (
                    "edge left out",
                    f"`{arms[k].strip()}` left out of `{code.strip()}`",
                    lines[:i] + ["->".join(pieces)] + lines[i + 1 :],
                    ends,
                )
        later = next(
            (j for j in range(i + 1, len(codes)) if codes[j].strip() and _source_of(codes[j]) == _source_of(code)), None
        )
        if later is not None:
            swapped = list(lines)
            swapped[i], swapped[later] = swapped[later], swapped[i]
            yield (
                "edges swapped",
                f"`{code.strip()}` and `{codes[later].strip()}` swapped",
                swapped,
                ends | frozenset(_endpoints(codes[later])),
            )
        start = _condition_at(code)
        if start < 0:
            continue
        condition = code[start:].strip()
        try:
            expression = ast.parse(condition, mode="eval")
        except SyntaxError:
            continue
        for kind, where, changed, _ in _python_mutants(f"({condition})", {}):
            yield (
                kind,
                where.replace("`(", "`").replace(")`", "`") + f" in `{code.strip()}`",
                lines[:i] + [code[:start] + changed.strip()] + lines[i + 1 :],
                ends | frozenset(_words(expression) - _LOCUS_NOISE),
            )


def _graph_mutants(source: str) -> Iterator[Change]:
    header, *lines = source.split("\n")
    words = header.split()
    for at, word in enumerate(words):
        if word.startswith("--") and at + 1 < len(words) and re.fullmatch(r"\d+", words[at + 1]):
            for value in _off_by_one(int(words[at + 1])):
                changed = [*words[: at + 1], str(value), *words[at + 2 :]]
                option = word.removeprefix("--")
                yield (
                    "number off by one",
                    f"`{word} {words[at + 1]}` made {value}",
                    "\n".join([" ".join(changed), *lines]),
                    frozenset({option, option.replace("-", "_"), option.split("-")[-1]}),
                )
    for kind, where, new, names in _edge_mutants(lines):
        yield kind, where, "\n".join([header, *new]), names


# -- all mutants of an exercise -----------------------------------------------------------------


def _graph_name(source: str) -> str:
    return source.split("\n", 1)[0].split()[1]


def _readers(cells: tuple[str, ...]) -> dict[str, set[str]]:
    """For each name a cell reads, the functions of the answer that read it (whose refusal names
    the name's cause too)."""
    readers: dict[str, set[str]] = {}
    for source in cells:
        statements = _statements(source) or []
        for statement in statements:
            if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)):
                for name in _words(statement):
                    readers.setdefault(name, set()).add(statement.name)
    return readers


def mutants(exercise: Exercise) -> list[Mutant]:
    """Every mutant of the exercise's answer, in a fixed order."""
    found: list[Mutant] = []
    readers = _readers(exercise.answer)
    for at, source in enumerate(exercise.answer):

        def replaced(new: str | None, at: int = at) -> tuple[str, ...]:
            cells = list(exercise.answer)
            if new is None:
                del cells[at]
            else:
                cells[at] = new
            return tuple(cells)

        if source.startswith("%%graph"):
            name = _graph_name(source)
            found.append(
                Mutant(exercise, "graph cell not run again", f"the `%%graph {name}` cell", replaced(None), stale=name)
            )
            changes = _graph_mutants(source)
        elif _statements(source) is None:
            continue
        else:
            changes = _python_mutants(source, readers)
        for kind, where, new, names in changes:
            found.append(Mutant(exercise, kind, where, replaced(new), names))
    return found


# -- running them -------------------------------------------------------------------------------

_PRELUDE = r'''
import json as _mutants_json
import os as _mutants_os
import re as _mutants_re

from IPython import get_ipython as _mutants_get_ipython

# Pauses answered at once; what cells display (graphs, views) goes nowhere: only prints are read.
_mutants_os.environ["NBGRAPH_AUTO_ANSWER"] = "1"
_mutants_get_ipython().display_pub.publish = lambda *args, **kwargs: None

from nbgraph.engine.run import observe_runs as _mutants_observe_runs

_MUTANTS_RUNS = []
_MUTANTS_SPACE = _mutants_re.compile(r"\s")
_MUTANTS_ID = _mutants_re.compile(r"[0-9a-f]{12,}")

def _mutants_value(value):
    """A value a node wrote, as far as it is behaviour: prose (text with a space: a reply, a
    prompt) is presentation and counts only as being there; numbers, flags, names, ids and the
    structure count."""
    if isinstance(value, dict):
        return {str(k): _mutants_value(v) for k, v in value.items() if k not in ("id", "thread")}
    if isinstance(value, (list, tuple)):
        return [_mutants_value(v) for v in value]
    if hasattr(value, "model_dump"):
        return _mutants_value(value.model_dump())
    if isinstance(value, str):
        return "<text>" if _MUTANTS_SPACE.search(value) else _MUTANTS_ID.sub("<id>", value)
    if isinstance(value, float):  # a clock's reading is no behaviour
        return "<time>" if abs(value) > 1e6 else round(value, 6)
    if isinstance(value, (int, bool)) or value is None:
        return value
    return type(value).__name__

def _mutants_event(event):
    """What an event says a run did: the node entered, the update it wrote, the edge it took, the
    pause and its answer, a tool's call, the ending; not how long it took, its ids or its labels."""
    kind, at = event.type, [event.step, event.path, event.branch]
    if kind == "node-enter":
        return [kind, *at, event.visit]
    if kind == "node-exit":
        return [kind, *at, _mutants_value(event.update)]
    if kind == "route":
        return [kind, *at, event.source, event.target]
    if kind == "interrupt":
        return [kind, *at, event.pause.kind, event.pause.node, event.pause.at]
    if kind == "answer":
        return [kind, *at, _mutants_value(event.answer)]
    if kind == "tool-call":
        return [kind, *at, event.name, _mutants_value(event.args)]
    if kind == "tool-result":
        return [kind, *at, event.name, event.is_error, _mutants_value(event.result)]
    if kind == "error":
        return [kind, *at, event.error_type]
    if kind == "done":  # the reason of a failure is what a refusal should quote
        return [kind, *at, event.outcome, event.hit_max_steps, event.reason if event.outcome == "failed" else None]
    return [kind, *at]

def _mutants_observe(run):
    events = []
    _MUTANTS_RUNS.append((run.plan.name, events))
    return lambda event: events.append(_mutants_json.dumps(_mutants_event(event)))

_mutants_observe_runs(_mutants_observe)

def _mutants_trace():
    """What the runs since the last call did: one entry a run, in no particular order (a batch's
    runs go at once), each a list of its events (sorted: parallel branches finish in any order)."""
    runs = sorted(_mutants_json.dumps([name, sorted(events)]) for name, events in _MUTANTS_RUNS)
    _MUTANTS_RUNS.clear()
    print(_mutants_json.dumps(runs))

_MUTANTS_KEEP = set(globals()) | {"_MUTANTS_KEEP"}

def _mutants_forget():
    """Delete every name the cells run since the prelude defined."""
    for name in [name for name in globals() if name not in _MUTANTS_KEEP and not name.startswith("_")]:
        del globals()[name]
'''


@dataclass(frozen=True)
class Outcome:
    """What one answer did: what its own cells said when they failed, the verdict, and the runs."""

    failed_cell: str
    verdict: str
    runs: tuple[str, ...]

    def failures(self) -> list[str]:
        """The reasons of the runs that ended ``failed``."""
        found = []
        for run in self.runs:
            _, events = json.loads(run)
            for event in map(json.loads, events):
                if event[0] == "done" and event[4] == "failed" and event[6]:
                    found.append(event[6])
        return found


class Kernel:
    """One kernel for a lesson's mutants, in the solutions' folder."""

    def __init__(self) -> None:
        self.client = NotebookClient(
            nbformat.v4.new_notebook(),
            timeout=120,
            interrupt_on_timeout=True,
            kernel_name="python3",
            allow_errors=True,
            resources={"metadata": {"path": str(SOLUTIONS)}},
        )
        self._context = None

    def __enter__(self) -> Kernel:
        self._context = self.client.setup_kernel()
        self._context.__enter__()
        self.run(_PRELUDE)
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._context is not None
        self._context.__exit__(*exc)

    def run(self, source: str) -> tuple[str, str]:
        """Run a cell: (what it printed, its error or "")."""
        cell = nbformat.v4.new_code_cell(source)
        self.client.nb.cells = [cell]
        self.client.execute_cell(cell, 0)
        text, error = [], ""
        for output in cell.outputs:
            if output.output_type == "stream" and output.name == "stdout":
                text.append(output.text)
            elif output.output_type == "error":
                error = f"{output.ename}: {output.evalue}"
        return "".join(text), error

    def answer(self, setup: tuple[str, ...], earlier: tuple[str, ...], cells: tuple[str, ...], check: str) -> Outcome:
        """Forget what the last answer defined, run the setup and the earlier answers again, then
        ``cells`` and the check, recording the runs of those two."""
        self.run("_mutants_forget()")
        for source in (*setup, *earlier):
            _, error = self.run(source)
            assert not error, f"{source[:200]}\n{error}"
        self.run("_mutants_trace()")  # what the setup ran is not the answer's
        failed = ""
        for source in cells:
            _, error = self.run(source)
            failed = failed or error
        printed, error = self.run(check)
        said = re.search(r"^(Not yet:|Solved:)", printed, re.M)
        verdict = f"(the check raised) {error}" if error else printed[said.start() :] if said else printed
        trace, _ = self.run("_mutants_trace()")
        return Outcome(failed, verdict.strip(), tuple(json.loads(trace)))


# -- judging them -------------------------------------------------------------------------------

VERDICTS = (
    "refused, naming the cause",
    "refused, not naming the cause",
    "passed, though the runs changed",
    "the check raised",
    "equivalent",
    "stopped at its own cell",
)
"""How a check answered a mutant: the first four are the mutants that change what the check can
see, of which the first counts for the score."""


def _names_any(text: str, names: frozenset[str]) -> bool:
    return any(re.search(rf"(?<![\w-]){re.escape(name)}(?![\w-])", text, re.IGNORECASE) for name in names)


def judge(mutant: Mutant, outcome: Outcome, solved: Outcome) -> str:
    """Which of VERDICTS the check's answer to ``mutant`` is, beside the worked answer's ``solved``."""
    if outcome.failed_cell:
        return "stopped at its own cell"
    if outcome.verdict.startswith("(the check raised)") or not outcome.verdict.startswith(("Not yet:", "Solved:")):
        return "the check raised"
    if outcome.verdict.startswith("Solved:"):
        return "equivalent" if outcome.runs == solved.runs else "passed, though the runs changed"
    new = [reason for reason in outcome.failures() if reason not in solved.failures()]
    if new:
        named = any(reason.splitlines()[0] in outcome.verdict for reason in new)
    elif mutant.stale:
        named = f"%%graph {mutant.stale}" in outcome.verdict
    else:
        named = _names_any(outcome.verdict, mutant.names)
    return "refused, naming the cause" if named else "refused, not naming the cause"


@dataclass
class Report:
    """A lesson's mutants and how its checks answered each."""

    solution: str
    judged: list[tuple[Mutant, str, Outcome]] = field(default_factory=list)

    def count(self, verdict: str) -> int:
        return sum(1 for _, said, _ in self.judged if said == verdict)

    @property
    def changing(self) -> int:
        """The mutants that change what the check can see."""
        return sum(self.count(verdict) for verdict in VERDICTS[:4])

    @property
    def score(self) -> float:
        return self.count(VERDICTS[0]) / self.changing if self.changing else 1.0

    def misses(self) -> list[str]:
        return [
            f"{said}: {mutant.id}\n    {outcome.verdict[:600]}"
            for mutant, said, outcome in self.judged
            if said in VERDICTS[1:4]
        ]


def try_mutants(solution: Solution) -> Report:
    """Run every mutant of every exercise of ``solution`` in one kernel, and judge each. The worked
    answer runs before them (twice: its runs must be the same each time) and after them (judged
    as before: no mutant left anything behind)."""
    report = Report(solution.name)
    with Kernel() as kernel:
        earlier: tuple[str, ...] = ()
        for exercise in solution.exercises:
            solved = kernel.answer(solution.setup, earlier, exercise.answer, exercise.check)
            assert solved.verdict.startswith("Solved:") and not solved.failed_cell, (exercise.heading, solved)
            again = kernel.answer(solution.setup, earlier, exercise.answer, exercise.check)
            assert again.runs == solved.runs, (
                f"{exercise.heading}: the worked answer's runs differ from one time to the next"
            )
            for mutant in mutants(exercise):
                outcome = kernel.answer(solution.setup, earlier, mutant.cells, exercise.check)
                report.judged.append((mutant, judge(mutant, outcome, solved), outcome))
            after = kernel.answer(solution.setup, earlier, exercise.answer, exercise.check)
            assert (after.verdict, after.runs) == (solved.verdict, solved.runs), (
                f"{exercise.heading}: the worked answer judged otherwise after its mutants: one of them left something behind"
            )
            earlier += exercise.answer
    return report
