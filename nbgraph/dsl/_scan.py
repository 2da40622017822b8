"""Reading a ``%%graph`` line as text: comments, names, separators and keywords, found in one pass each.

Each scanner walks the line once with an anchored pattern, so a hostile line costs time
linear in its length; none understands the grammar, they only find where its parts are.
"""

from __future__ import annotations

import io
import re
import tokenize
from dataclasses import dataclass

from ..errors import GraphSyntaxError

_NAME = r"[A-Za-z_][A-Za-z0-9_]*"
_NAME_AT = re.compile(_NAME)  # matched at a position only: linear, never backtracks
_SHOWN = 60
"""The most characters of the offending text an error message quotes."""


_LINE_END = re.compile(r"\r\n?|\n")


def _source_lines(text: str) -> list[str]:
    """``text`` split into lines as Python splits source: at ``\\n``, ``\\r\\n`` and a lone ``\\r`` only.

    Not ``str.splitlines()``: it also ends a line at characters a string literal or a
    comment may hold (U+2028, U+0085, ``\\x0c``, ``\\x1c``, ...).
    """
    lines = _LINE_END.split(text)
    if not lines[-1]:
        lines.pop()  # a final line end closes the last line, it does not open another
    return lines


@dataclass
class _Line:
    number: int
    text: str

    def error(self, message: str, column: int) -> GraphSyntaxError:
        return GraphSyntaxError(message, line=self.number, column=column, text=self.text)


def _shown(text: str) -> str:
    """``repr(text)``, cut short so a huge line does not flood the message."""
    return repr(text if len(text) <= _SHOWN else text[: _SHOWN - 3] + "...")


def _strip_comment(text: str) -> str:
    """Cut a trailing ``#`` comment, leaving ``#`` inside string literals alone."""
    if "#" not in text:
        return text
    try:
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            if token.type == tokenize.COMMENT:
                return text[: token.start[1]]
        return text  # every '#' is inside a string
    except (tokenize.TokenError, SyntaxError, ValueError, MemoryError, RecursionError):
        pass
    # Unbalanced brackets or quotes: fall back to the first '#', the error comes later.
    return text[: text.index("#")]


_SEPARATORS = re.compile(r"[\[\]|&]")
_WORD = re.compile(r"\w*")


def _word_at(code: str, at: int) -> str:
    """The run of word characters of ``code`` that starts at ``at`` (empty if none does)."""
    match = _WORD.match(code, at)
    return match.group() if match is not None else ""


_TAIL = re.compile(r"(\s*)(\w*)(\s*)(\w*)")
"""Matched on the reversed text: the last word and the one before it (anchored; never backtracks)."""
_WORDS = re.compile(r"(\w+)|\s+|(.)", re.DOTALL)
_PYTHON = re.compile(
    r"""(\w+)"""
    r"""|'''(?:[^'\\]|\\.|'(?!''))*(?:''')?|\"\"\"(?:[^"\\]|\\.|"(?!""))*(?:\"\"\")?"""
    r"""|'(?:[^'\\]|\\.)*'?|"(?:[^"\\]|\\.)*"?"""
    r"""|([(\[{])|([)\]}])|\s+|.""",
    re.DOTALL,
)
"""Python text as words, whole string literals, brackets and the rest: enough to find a top-level ``if``."""


def _top_separators(text: str) -> list[tuple[int, str]]:
    """The ``|`` and ``&`` of ``text`` not inside ``[...]`` options, with their indices."""
    found = []
    depth = 0
    for match in _SEPARATORS.finditer(text):
        char = match.group()
        if char == "[":
            depth += 1
        elif char == "]":
            depth = max(0, depth - 1)
        elif depth == 0:
            found.append((match.start(), char))
    return found


def _keyword(code: str) -> tuple[str, int, int] | None:
    """The first ``if``, or ``for`` right after a node, outside ``[...]``: (word, start, end)."""
    depth = 0
    after_node = False
    for match in _WORDS.finditer(code):
        word, other = match.groups()
        if word is not None:
            if depth == 0 and (word == "if" or (word == "for" and after_node)):
                return word, match.start(), match.end()
            after_node = True
        elif other is not None:
            if other == "[":
                depth += 1
            elif other == "]":
                depth = max(0, depth - 1)
            after_node = other == "]"
    return None


def _python_if(code: str, start: int) -> tuple[int, int] | None:
    """The first ``if`` of the Python text from ``start`` outside brackets and strings."""
    depth = 0
    for match in _PYTHON.finditer(code, start):
        word, opening, closing = match.groups()
        if word is not None:
            if word == "if" and depth == 0:
                return match.start(), match.end()
        elif opening is not None:
            depth += 1
        elif closing is not None:
            depth = max(0, depth - 1)
    return None


def _via_tail(arrow: str) -> tuple[str | None, int, int] | None:
    """``(name, start of 'via', column of name)`` when ``arrow`` ends with ``via NAME`` or ``via``."""
    spaces, last, gap, before = _TAIL.match(arrow[::-1]).groups()  # type: ignore[union-attr]
    end = len(arrow) - len(spaces)
    if last[::-1] == "via":
        return None, end - 3, end + 1
    if last and gap and before[::-1] == "via":
        start = end - len(last)
        return arrow[start:end], start - len(gap) - 3, start + 1
    return None
