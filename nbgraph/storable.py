"""What a run can keep: the test every answer passes at the door, before anything runs.

A person's answer (a decision, an edit, a message, an input) is written to checkpoints as
JSON and read by the model as text. An answer that holds what JSON cannot (bytes, a set, a
datetime, an object, ``NaN``) or that is larger than the bound is refused where it is
given, naming the place inside it, so nothing runs on it and the pause still waits.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

__all__ = ["answer_limit", "set_answer_limit", "storable_problem"]

_DEFAULT_LIMIT = 1_000_000
_limit = _DEFAULT_LIMIT


def answer_limit() -> int:
    """The most bytes an answer may take as JSON (1,000,000 unless :func:`set_answer_limit` said otherwise)."""
    return _limit


def set_answer_limit(size: int | None) -> None:
    """Let answers take up to ``size`` bytes as JSON (None: back to 1,000,000)."""
    global _limit
    if size is not None and (isinstance(size, bool) or not isinstance(size, int) or size <= 0):  # pyright: ignore[reportUnnecessaryIsInstance]
        raise ValueError(f"the answer limit is a number of bytes above 0; got {size!r}")
    _limit = _DEFAULT_LIMIT if size is None else size


def storable_problem(value: Any, where: str = "the answer") -> str | None:
    """What keeps ``value`` from being stored as JSON and read back the same, naming the place
    inside it (``the answer['to'][2]: bytes ...``); None when it can be kept."""
    problem = _problem(value, where, 0)
    if problem is not None:
        return problem
    size = len(json.dumps(value, ensure_ascii=False).encode())
    if size > _limit:
        return (
            f"{where} takes {size:,} bytes as JSON, over the limit of {_limit:,}; give a shorter one, "
            "or raise the limit with nbgraph.set_answer_limit(bytes)"
        )
    return None


_PLAIN = "answer with plain data (text, numbers, lists, dicts)"


def _problem(value: Any, where: str, depth: int) -> str | None:
    if value is None or isinstance(value, (bool, int, str)):
        return None
    if isinstance(value, float):
        return None if math.isfinite(value) else f"{where} is {value!r}: JSON holds only finite numbers; {_PLAIN}"
    if depth > 100:
        return f"{where} is nested more than 100 levels deep; {_PLAIN}"
    if isinstance(value, (list, tuple)):
        for index, item in enumerate(value):  # pyright: ignore[reportUnknownVariableType, reportUnknownArgumentType]
            problem = _problem(item, f"{where}[{index}]", depth + 1)
            if problem is not None:
                return problem
        return None
    if isinstance(value, Mapping):
        for key, item in value.items():  # pyright: ignore[reportUnknownVariableType]
            if not isinstance(key, str):
                return f"{where} has the key {key!r} ({type(key).__name__}): JSON keys are text; {_PLAIN}"  # pyright: ignore[reportUnknownArgumentType]
            problem = _problem(item, f"{where}[{key!r}]", depth + 1)
            if problem is not None:
                return problem
        return None
    kind = type(value).__name__
    article = "an" if kind[:1].lower() in "aeiou" else "a"
    return f"{where} is {article} {kind} ({value!r:.60}), which JSON cannot hold; {_PLAIN}"
