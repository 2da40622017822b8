"""The views' messages, declared once in ``static/protocol.json``: each kind a view (graph,
batch) and the kernel send each other, with its fields and their types.

The bundled ES module carries the same file: :func:`checked` refuses a message the protocol
does not allow, naming what is wrong (:class:`MessageError`), and :func:`handlers_of` holds a
view to handling exactly the kinds declared for it.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from .errors import NbgraphError

__all__ = ["PROTOCOL", "MessageError", "checked", "handlers_of"]

_STATIC = Path(__file__).parent / "static"

PROTOCOL: dict[str, Any] = json.loads((_STATIC / "protocol.json").read_text(encoding="utf-8"))
"""The views' messages: ``PROTOCOL[view]["to_kernel" | "to_view"][kind]`` is that kind's
``required`` and ``optional`` fields (name -> type) and ``one_of`` (fields it needs one of)."""

_TYPES: dict[str, tuple[str, Callable[[Any], bool]]] = {
    "string": ("a string", lambda v: isinstance(v, str)),
    "integer": ("a whole number", lambda v: isinstance(v, int) and not isinstance(v, bool)),
    "number": ("a number", lambda v: isinstance(v, (int, float)) and not isinstance(v, bool)),
    "boolean": ("true or false", lambda v: isinstance(v, bool)),
    "object": ("an object", lambda v: isinstance(v, dict)),
    "array": ("a list", lambda v: isinstance(v, list)),
    "any": ("a value", lambda v: True),
}


class MessageError(NbgraphError, ValueError):
    """A message between a view and the kernel that ``static/protocol.json`` does not allow."""


def _shown(value: Any) -> str:
    text = json.dumps(value, default=str)
    return f"{text[:80]}\u2026" if len(text) > 80 else text


def checked(view: str, direction: str, content: Any) -> dict[str, Any]:
    """``content`` if the protocol allows it as a message of ``view`` ("graph", "batch") going
    ``direction`` ("to_kernel", "to_view"); else :class:`MessageError` says what is wrong."""
    kinds = PROTOCOL[view][direction]
    who = f"the {view} view" if direction == "to_kernel" else "the kernel"
    if not isinstance(content, dict) or not isinstance(content.get("type"), str):
        raise MessageError(f"{who} sent a message without a type: {_shown(content)}")
    kind = content["type"]
    spec = kinds.get(kind)
    if spec is None:
        raise MessageError(f"{who} sent an unknown message type {kind!r}; expected one of: {', '.join(kinds)}")
    present = {field for field, value in content.items() if value is not None}
    fields = {**spec.get("required", {}), **spec.get("optional", {})}
    for field, type_ in spec.get("required", {}).items():
        if field not in present:
            raise MessageError(f"{who} sent {kind!r} without {field!r} ({_TYPES[type_][0]})")
    for field, type_ in fields.items():
        if field in present and not _TYPES[type_][1](content[field]):
            raise MessageError(
                f"{who} sent {kind!r} whose {field!r} is not {_TYPES[type_][0]}: {_shown(content[field])}"
            )
    one_of = spec.get("one_of")
    if one_of and not present & set(one_of):
        raise MessageError(f"{who} sent {kind!r} without any of {', '.join(map(repr, one_of))}")
    return content


def handlers_of(view: str, handlers: Mapping[str, Any]) -> Mapping[str, Any]:
    """``handlers``, once they are one for each kind the protocol lets ``view`` send the kernel."""
    declared = set(PROTOCOL[view]["to_kernel"])
    if set(handlers) != declared:
        raise RuntimeError(f"the {view} view handles {sorted(handlers)}, but its protocol declares {sorted(declared)}")
    return handlers
