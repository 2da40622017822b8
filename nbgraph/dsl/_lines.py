"""The statements of a cell, line by line: edges, chains, fan-outs and joins, maps, conditions, routers.

:class:`_Parser` records what each line asks for (node uses, edges, routers) with where
it was written; building the :class:`~nbgraph.Graph` from that record is ``_build``'s.
"""

from __future__ import annotations

import inspect
import itertools
import keyword
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..errors import GraphSyntaxError, did_you_mean
from ..names import END, START
from ._compile import _compile_expression, _uses_name, compile_condition
from ._options import _parse_options
from ._scan import (
    _NAME,
    _NAME_AT,
    _SHOWN,
    _keyword,
    _Line,
    _python_if,
    _shown,
    _source_lines,
    _strip_comment,
    _top_separators,
    _via_tail,
    _word_at,
)


@dataclass
class _NodeUse:
    line: int
    column: int
    text: str
    options: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class _EdgeUse:
    """One ``add_edge`` call the cell asks for, with where it was written."""

    source: str | list[str]
    target: str | list[str]
    when: Callable[..., Any] | None
    label: str | None
    each: Callable[..., Any] | None
    line: int
    column: int
    text: str


@dataclass(frozen=True)
class _Map:
    var: str
    items: str
    items_column: int
    column: int


def _did_you_mean(name: str, namespace: Mapping[str, Any]) -> str:
    return did_you_mean(name, [k for k, v in namespace.items() if callable(v) and not k.startswith("_")])


def _cannot_take_state(fn: Callable[..., Any]) -> bool:
    """Whether ``fn`` can be called neither as ``fn(state)`` nor as ``fn(state, ctx)``."""
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):
        return False  # a builtin or an odd callable: nothing to check
    for args in ((None,), (None, None)):
        try:
            signature.bind(*args)
            return False
        except TypeError:
            pass
    return True


_WRITTEN = {START: "START", END: "END"}


def _written(group: list[tuple[str, str, int]]) -> str:
    return " & ".join(written for _, written, _ in group)


class _Parser:
    def __init__(
        self, text: str, namespace: Mapping[str, Any], nodes: Mapping[str, Any], first_line: int, name: str = ""
    ) -> None:
        self.lines = _source_lines(text)
        self.first_line = first_line
        self.namespace = namespace
        self.nodes = nodes
        self.name = name
        self.uses: dict[str, _NodeUse] = {}
        self.edges: list[_EdgeUse] = []
        self.routers: list[tuple[str, Callable[..., Any], list[str], _Line, int]] = []
        self.routed: dict[str, _NodeUse] = {}
        self.joins: dict[str, tuple[tuple[str, ...], int]] = {}

    def parse(self) -> None:
        for number, raw in enumerate(self.lines, start=self.first_line):
            if "\x00" in raw:
                raise GraphSyntaxError(
                    "null byte in cell", line=number, column=raw.index("\x00") + 1, text=raw.replace("\x00", "?")
                )
            line = _Line(number, raw)
            code = _strip_comment(raw)
            if not code.strip():
                continue
            self._statement(line, code)

    def _endpoint(self, line: _Line, chunk: str, column: int, *, allow_start: bool, allow_end: bool) -> tuple[str, int]:
        """The node (or START/END) ``chunk`` names and the column it starts at."""
        stripped = chunk.strip()
        col = column + len(chunk) - len(chunk.lstrip())
        match = _NAME_AT.match(stripped)
        raw_options = None
        valid = match is not None
        if match is not None:
            rest = stripped[match.end() :].lstrip()
            if rest:
                raw_options = rest[1:-1]
                valid = len(rest) >= 2 and rest[0] == "[" and rest[-1] == "]" and "]" not in raw_options
        if not valid:
            found = f"got {_shown(stripped)}" if stripped else "found nothing"
            raise line.error(f"expected a node name, START or END, {found}", col)
        name = match.group()  # type: ignore[union-attr]
        if name == "START":
            if not allow_start:
                raise line.error("START can only begin an edge", col)
            if raw_options is not None:
                raise line.error("START takes no options", col)
            return START, col
        if name == "END":
            if not allow_end:
                raise line.error("END is terminal; no edge may leave it", col)
            if raw_options is not None:
                raise line.error("END takes no options", col)
            return END, col
        options = (
            _parse_options(line, name, raw_options, col + stripped.index("[") + 1) if raw_options is not None else {}
        )
        use = self.uses.get(name)
        if use is None:
            use = self.uses[name] = _NodeUse(line.number, col, line.text)
        use.options.update(options)
        return name, col

    def _clauses(self, line: _Line, code: str) -> tuple[str, _Map | None, str | None, int, int]:
        """Split a line into its arrows, its map (``for x in ITEMS``) and its condition (``if EXPR``)."""
        found = _keyword(code)
        if found is None:
            return code, None, None, 0, 0
        word, start, end = found
        if word == "if":
            return code[:start], None, code[end:], end + 1, start + 1
        var_start = end + len(code[end:]) - len(code[end:].lstrip())
        var = _word_at(code, var_start)
        var_end = var_start + len(var)
        if not var or var == "in":
            raise line.error("'for' needs a loop variable: for item in ITEMS", var_start + 1)
        if not var.isidentifier() or keyword.iskeyword(var):
            raise line.error(f"{_shown(var)} cannot name the items; write for item in ITEMS", var_start + 1)
        in_start = var_end + len(code[var_end:]) - len(code[var_end:].lstrip())
        in_end = in_start + len(_word_at(code, in_start))
        if code[in_start:in_end] != "in":
            raise line.error(f"expected 'in' after 'for {var}': for {var} in ITEMS", in_start + 1)
        condition = _python_if(code, in_end)
        items_end = condition[0] if condition else len(code)
        mapping = _Map(var, code[in_end:items_end], in_end + 1, start + 1)
        if condition is None:
            return code[:start], mapping, None, 0, 0
        return code[:start], mapping, code[condition[1] :], condition[1] + 1, condition[0] + 1

    def _statement(self, line: _Line, code: str) -> None:
        arrow_part, mapping, condition, cond_col, if_col = self._clauses(line, code)
        via_name: str | None = None
        via_col = 0
        tail = _via_tail(arrow_part)
        # A trailing bare 'via' is an error, unless an 'if' or 'for' follows: then it is a node named via.
        if tail is not None and (tail[0] is not None or (condition is None and mapping is None)):
            via_name, via_start, via_col = tail
            if via_name is None:
                raise line.error("'via' needs the name of a routing function", via_col)
            if not re.fullmatch(_NAME, via_name):
                raise line.error(f"'via' needs the name of a routing function, got {_shown(via_name)}", via_col)
            if mapping is not None:
                raise line.error(
                    "a router's function picks one target; a router line takes no 'for' map", mapping.column
                )
            if condition is not None:
                raise line.error("a router's function picks the target; a router line takes no 'if' condition", if_col)
            arrow_part = arrow_part[:via_start]
        pieces = arrow_part.split("->")
        columns = []
        offset = 0
        for piece in pieces:
            columns.append(offset + 1)
            offset += len(piece) + 2
        if len(pieces) == 1:
            if condition is not None:
                raise line.error("a condition needs an edge before it: a -> b if CONDITION", if_col)
            if mapping is not None:
                raise line.error("a map needs an edge before it: a -> worker for item in ITEMS", mapping.column)
            if via_name is not None:
                raise line.error("a router needs targets: a -> b | c via fn", 1)
            amp = next((i for i, c in _top_separators(pieces[0]) if c == "&"), -1)
            if amp >= 0:
                raise line.error(
                    "'&' belongs in an edge: a -> b & c fans out, a & b -> c joins; a line without '->' names one node",
                    amp + 1,
                )
            self._endpoint(line, pieces[0], 1, allow_start=False, allow_end=False)
            return
        if via_name is not None:
            self._router(line, pieces, columns, via_name, via_col)
            return
        if condition is not None and len(pieces) > 2:
            raise line.error("a condition belongs to one edge; split the chain into separate lines", if_col)
        if mapping is not None and len(pieces) > 2:
            raise line.error("a map belongs to one edge; split the chain into separate lines", mapping.column)
        groups = [
            self._group(line, piece, column, first=index == 0, last=index == len(pieces) - 1)
            for index, (piece, column) in enumerate(zip(pieces, columns, strict=True))
        ]
        for index, (sources, targets) in enumerate(itertools.pairwise(groups)):
            if len(sources) > 1 and len(targets) > 1:
                raise line.error(
                    f"'{_written(sources)} -> {_written(targets)}' is ambiguous: a join leads into one node and a "
                    f"fan-out leaves one; join into a node first ({_written(sources)} -> merge -> {_written(targets)}) "
                    "or write each edge on its own line",
                    columns[index + 1] - 2,
                )
            if len(sources) > 1 and targets[0][0] == END:
                raise line.error(
                    "a join leads into a node, and END is not one; end each branch on its own line (a -> END)",
                    targets[0][2],
                )
            if len(sources) > 1:
                self._join(line, sources, targets[0])
        each = when = label = None
        if mapping is not None:
            target = groups[1]
            if len(target) > 1:
                raise line.error(
                    f"a map runs one node per item; give it one target, not '{_written(target)}'", target[0][2]
                )
            if target[0][0] == END:
                raise line.error("a map runs a node per item, and END is not a node", target[0][2])
            each = _compile_expression(
                mapping.items,
                self.namespace,
                (line.number, mapping.items_column, line.text),
                what="map expression",
                empty=f"'for {mapping.var} in' needs the items to map over",
                name="items",
            )
            label = f"for {mapping.var} in {mapping.items.strip()}"
        if condition is not None:
            try:
                when = compile_condition(condition, self.namespace, where=(line.number, cond_col, line.text))
            except GraphSyntaxError as exc:
                if mapping is None or not re.search(r"\belse\b", condition):
                    raise
                raise GraphSyntaxError(
                    f"{exc.message}; the items end at their first 'if': put a conditional expression in parentheses",
                    line=exc.line,
                    column=exc.column,
                    text=exc.source_line,
                ) from None
            if mapping is not None and _uses_name(condition, mapping.var):
                raise line.error(
                    f"the 'if' after a map is the edge's condition, tested on the state before mapping; it cannot use "
                    f"{mapping.var!r} (filter the items instead: for {mapping.var} in "
                    f"[{mapping.var} for {mapping.var} in ITEMS if ...])",
                    cond_col + len(condition) - len(condition.lstrip()),
                )
            label = f"{label} if {condition.strip()}" if label else condition.strip()
        for sources, targets in itertools.pairwise(groups):
            source_names = [name for name, _, _ in sources]
            target_names = [name for name, _, _ in targets]
            self.edges.append(
                _EdgeUse(
                    source_names[0] if len(source_names) == 1 else source_names,
                    target_names[0] if len(target_names) == 1 else target_names,
                    when,
                    label,
                    each,
                    line.number,
                    sources[0][2],
                    line.text,
                )
            )

    def _group(self, line: _Line, piece: str, column: int, *, first: bool, last: bool) -> list[tuple[str, str, int]]:
        """``a & b & c``: each node with how it was written and its column."""
        separators = _top_separators(piece) if "&" in piece or "|" in piece else []
        bar = next((i for i, c in separators if c == "|"), -1)
        if bar >= 0:
            raise line.error("'|' lists router targets; end the line with 'via ROUTER_FUNCTION'", column + bar)
        group: list[tuple[str, str, int]] = []
        seen: set[str] = set()
        start = 0
        for end in [*(i for i, _ in separators), len(piece)]:
            name, col = self._endpoint(line, piece[start:end], column + start, allow_start=first, allow_end=last)
            written = _WRITTEN.get(name, name)
            if separators and name == START:
                raise line.error("START cannot be part of a join; START -> a & b fans out from it", col)
            if separators and name == END:
                raise line.error("END cannot be part of a fan-out; end each branch on its own line (a -> END)", col)
            if name in seen:
                raise line.error(f"node {name!r} appears twice in '{piece.strip()[:_SHOWN]}'", col)
            seen.add(name)
            group.append((name, written, col))
            start = end + 1
        return group

    def _join(self, line: _Line, sources: list[tuple[str, str, int]], target: tuple[str, str, int]) -> None:
        names = tuple(name for name, _, _ in sources)
        known = self.joins.setdefault(target[0], (names, line.number))
        if known[0] != names:
            raise line.error(
                f"node {target[0]!r} already joins {' & '.join(known[0])} (line {known[1]}); "
                "a node waits for one set of nodes",
                target[2],
            )

    def _router(self, line: _Line, pieces: list[str], columns: list[int], via_name: str, via_col: int) -> None:
        if len(pieces) != 2:
            raise line.error("a router line is: a -> b | c | END via fn", columns[2] if len(columns) > 2 else 1)
        for piece, column in zip(pieces, columns, strict=True):
            amp = next((i for i, c in _top_separators(piece) if c == "&"), -1)
            if amp >= 0:
                raise line.error("a router picks one target; '&' has no place in a router line", column + amp)
        source, _ = self._endpoint(line, pieces[0], columns[0], allow_start=True, allow_end=False)
        targets = []
        start = 0
        piece = pieces[1]
        for end in [*(i for i, _ in _top_separators(piece)), len(piece)]:
            targets.append(
                self._endpoint(line, piece[start:end], columns[1] + start, allow_start=False, allow_end=True)[0]
            )
            start = end + 1
        fn = self.namespace.get(via_name)
        if fn is None or not callable(fn):
            problem = "is not defined" if fn is None else f"is a {type(fn).__name__}, not a function"
            raise line.error(f"router {via_name!r} {problem}{_did_you_mean(via_name, self.namespace)}", via_col)
        if _cannot_take_state(fn):
            raise line.error(
                f"router {via_name!r} cannot take the state: it is called as {via_name}(state) "
                f"or {via_name}(state, ctx) and returns the next node's name",
                via_col,
            )
        if source in self.routed:
            raise line.error(f"node {source!r} already has a router (line {self.routed[source].line})", columns[0])
        self.routed[source] = _NodeUse(line.number, columns[0], line.text)
        self.routers.append((source, fn, targets, line, via_col))
