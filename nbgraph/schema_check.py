"""Checking a value against a JSON schema, as far as tools' argument schemas go.

A person's edit of a tool call is checked where the answer is given, which may be a process
that does not have the tool (a ``Resume`` from a thread id): the pause carries the tool's JSON
schema, and this reads the part of JSON Schema that pydantic and MCP servers write for
arguments (types, enums, constants, ``anyOf`` / ``oneOf`` / ``allOf``, local ``$ref``,
properties, required fields, extra fields, list items, number bounds). What it does not
read it lets through; the tool's own validation still runs before the call.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

__all__ = ["schema_problems"]

_TYPES: dict[str, tuple[str, Any]] = {
    "string": ("text", lambda v: isinstance(v, str)),
    "integer": ("a whole number", lambda v: isinstance(v, int) and not isinstance(v, bool)),
    "number": ("a number", lambda v: isinstance(v, (int, float)) and not isinstance(v, bool)),
    "boolean": ("true or false", lambda v: isinstance(v, bool)),
    "object": ("an object", lambda v: isinstance(v, Mapping)),
    "array": ("a list", lambda v: isinstance(v, (list, tuple))),
    "null": ("null", lambda v: v is None),
}


def schema_problems(schema: Mapping[str, Any], value: Any) -> list[str]:
    """What is wrong with ``value`` by ``schema``, each as ``field: problem`` (empty: it fits)."""
    problems: list[str] = []
    _check(schema, value, "", schema, problems)
    return problems[:5]


def _check(schema: Mapping[str, Any], value: Any, where: str, root: Mapping[str, Any], problems: list[str]) -> None:
    ref = schema.get("$ref")
    if isinstance(ref, str):
        schema = _resolved(ref, root)
    for part in schema.get("allOf") or ():
        _check(part, value, where, root, problems)
    options = schema.get("anyOf") or schema.get("oneOf")
    if options:
        found = [_problems_of(option, value, where, root) for option in options]
        if all(found):
            # The option of the value's own type says best what is wrong inside it.
            shaped = [p for option, p in zip(options, found, strict=True) if _type_fits(option, value, root)]
            if len(shaped) == 1:
                problems.extend(shaped[0])
            else:
                problems.append(f"{where or 'arguments'}: {_shown(value)} fits none of {_kinds(options, root)}")
        return
    if "const" in schema and value != schema["const"]:
        problems.append(f"{where or 'arguments'}: must be {_shown(schema['const'])}, not {_shown(value)}")
        return
    enum = schema.get("enum")
    if enum is not None and value not in enum:
        problems.append(f"{where or 'arguments'}: must be one of {', '.join(map(_shown, enum))}, not {_shown(value)}")
        return
    kind = schema.get("type")
    kinds = [kind] if isinstance(kind, str) else list(kind or ())
    known = [k for k in kinds if k in _TYPES]
    if known and not any(_TYPES[k][1](value) for k in known):
        said = " or ".join(_TYPES[k][0] for k in known)
        problems.append(f"{where or 'arguments'}: must be {said}, not {_shown(value)}")
        return
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        _bounds(schema, value, where, problems)
    if isinstance(value, Mapping):
        _check_object(schema, cast("Mapping[str, Any]", value), where, root, problems)
    elif isinstance(value, (list, tuple)):
        items = schema.get("items")
        if isinstance(items, Mapping):
            for i, item in enumerate(cast("list[Any]", value)):
                _check(cast("Mapping[str, Any]", items), item, f"{where}[{i}]", root, problems)


def _check_object(
    schema: Mapping[str, Any], value: Mapping[str, Any], where: str, root: Mapping[str, Any], problems: list[str]
) -> None:
    properties: Mapping[str, Any] = schema.get("properties") or {}
    prefix = f"{where}." if where else ""
    for name in schema.get("required") or ():
        if name not in value:
            problems.append(f"{prefix}{name}: is required")
    for name, item in value.items():
        field = properties.get(name)
        if field is not None:
            _check(field, item, f"{prefix}{name}", root, problems)
        elif schema.get("additionalProperties") is False:
            problems.append(f"{prefix}{name}: is not a field here; the fields are {', '.join(properties) or 'none'}")


def _bounds(schema: Mapping[str, Any], value: float, where: str, problems: list[str]) -> None:
    name = where or "arguments"
    for key, holds, said in (
        ("minimum", lambda bound: value >= bound, "at least"),
        ("maximum", lambda bound: value <= bound, "at most"),
        ("exclusiveMinimum", lambda bound: value > bound, "above"),
        ("exclusiveMaximum", lambda bound: value < bound, "below"),
    ):
        bound = schema.get(key)
        if isinstance(bound, (int, float)) and not holds(bound):
            problems.append(f"{name}: must be {said} {bound:g}, not {_shown(value)}")


def _problems_of(schema: Mapping[str, Any], value: Any, where: str, root: Mapping[str, Any]) -> list[str]:
    found: list[str] = []
    _check(schema, value, where, root, found)
    return found


def _type_fits(schema: Mapping[str, Any], value: Any, root: Mapping[str, Any]) -> bool:
    ref = schema.get("$ref")
    kind = (_resolved(ref, root) if isinstance(ref, str) else schema).get("type")
    return isinstance(kind, str) and kind in _TYPES and _TYPES[kind][1](value)


def _resolved(ref: str, root: Mapping[str, Any]) -> Mapping[str, Any]:
    node: Any = root
    if ref.startswith("#/"):
        for part in ref[2:].split("/"):
            node = node.get(part) if isinstance(node, Mapping) else None
    return cast("Mapping[str, Any]", node) if isinstance(node, Mapping) else {}


def _kinds(options: list[Mapping[str, Any]], root: Mapping[str, Any]) -> str:
    said: list[str] = []
    for option in options:
        ref = option.get("$ref")
        resolved = _resolved(ref, root) if isinstance(ref, str) else option
        kind = resolved.get("type")
        said.append(_TYPES[kind][0] if isinstance(kind, str) and kind in _TYPES else "its other shape")
    return ", ".join(dict.fromkeys(said))


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
