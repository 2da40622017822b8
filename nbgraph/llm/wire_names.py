"""Wire names: each tool's name as a model's API accepts it, and back.

OpenAI refuses a whole request (HTTP 400) when one tool's name does not match
``^[a-zA-Z0-9_-]{1,64}$``, and an MCP tool's name often does not (``git.status`` with
``prefix="git."``). :class:`WireNames` gives every tool a name that does: a valid name is
kept as it is, each other character becomes ``_``, and a name longer than 64 characters is
cut short and ends with a hash of the whole name, so that names sharing a long beginning
stay apart. The names the model sends back map to the tools' own names::

    names = WireNames(["git.status", "add"])
    names.wire("git.status")  # 'git_status'
    names.tool("git_status")  # 'git.status'
    names.tool("made_up")  # None: the model invented it

Two tools whose wire names would be the same (``git.status`` and ``git_status``) are
refused when the names are built, never resolved by guessing which one the model meant.
:func:`wire_name` applies the same rule to one name alone, unchecked: for a name that is
only shown to the model, such as a call in the history to a tool this node does not offer.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Iterator

__all__ = ["MAX_WIRE_NAME", "WireNames", "is_wire_name", "wire_name"]

MAX_WIRE_NAME = 64
"""The longest name OpenAI accepts for a tool."""

_VALID = re.compile(r"[a-zA-Z0-9_-]{1,64}")
_INVALID_CHARACTER = re.compile(r"[^a-zA-Z0-9_-]")
_HASH_LENGTH = 8
"""Hex digits of the hash that ends a shortened name: 32 bits keep a handful of long names apart."""


def is_wire_name(name: str) -> bool:
    """Whether ``name`` is a tool name OpenAI accepts as it is."""
    # fullmatch, not ^...$: "$" also matches before a trailing newline, which OpenAI refuses.
    return _VALID.fullmatch(name) is not None


def wire_name(name: str) -> str:
    """``name`` as OpenAI accepts it, by the rule :class:`WireNames` follows, with no check
    that it stays apart from other names ("" stays "", which no API accepts)."""
    if is_wire_name(name) or not name:
        return name
    replaced = _INVALID_CHARACTER.sub("_", name)
    if len(replaced) <= MAX_WIRE_NAME:
        return replaced
    # Hashed from the name itself, not the replaced one: "a.b…" and "a_b…" get different ends.
    digest = hashlib.sha256(name.encode()).hexdigest()[:_HASH_LENGTH]
    return f"{replaced[: MAX_WIRE_NAME - _HASH_LENGTH - 1]}_{digest}"


class WireNames:
    """The wire names of a set of tools, given the tools' names; see the module's docstring.

    Raises:
        ValueError: a name is empty or given twice, or two names would share a wire name
            (the message names both tools and the wire name).
    """

    def __init__(self, names: Iterable[str]) -> None:
        self._wire: dict[str, str] = {}
        self._tool: dict[str, str] = {}
        for name in names:
            if not name:
                raise ValueError("a tool's name is empty; give every tool a name")
            if name in self._wire:
                raise ValueError(f"two tools are named {name!r}; give each tool a name of its own")
            wire = wire_name(name)
            other = self._tool.get(wire)
            if other is not None:
                raise ValueError(
                    f"tools {other!r} and {name!r} would both be called {wire!r} by the model "
                    "(a tool's name may hold only letters, digits, '_' and '-', at most 64 of them); "
                    "rename one of them, or give the tools of one server a prefix of their own"
                )
            self._wire[name] = wire
            self._tool[wire] = name

    def wire(self, name: str) -> str:
        """The name the model sees for the tool named ``name``.

        Raises:
            KeyError: no tool given has that name.
        """
        try:
            return self._wire[name]
        except KeyError:
            raise KeyError(f"no tool is named {name!r}; the tools are: {', '.join(self._wire) or 'none'}") from None

    def tool(self, wire_name: str) -> str | None:
        """The name of the tool the model called ``wire_name``; None for a name it made up."""
        return self._tool.get(wire_name)

    @property
    def renamed(self) -> dict[str, str]:
        """The tools whose wire name is not their own name: each name, and its wire name."""
        return {name: wire for name, wire in self._wire.items() if wire != name}

    def __contains__(self, name: object) -> bool:
        """Whether a tool of this name was given (its own name, not its wire name)."""
        return name in self._wire

    def __iter__(self) -> Iterator[str]:
        """The tools' own names, in the order given."""
        return iter(self._wire)

    def __len__(self) -> int:
        return len(self._wire)

    def __repr__(self) -> str:
        return f"WireNames({list(self._wire)!r})"
