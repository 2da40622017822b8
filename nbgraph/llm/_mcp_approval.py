"""Which calls of an MCP tool wait for a person's approval: ``approval=`` checked, a policy per tool, or the server's annotations.

``approval=`` is checked before the server is asked anything, matched against the tools
the server lists (by their names on the server), and what it does not decide goes by what
the server says of each tool (``destructiveHint`` and not ``readOnlyHint``: every call waits).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeAlias

from .tools import Approval

if TYPE_CHECKING:
    from ._mcp_server import Server

__all__ = ["MCPApproval", "annotated_approval", "checked_approval", "tool_policies"]

MCPApproval: TypeAlias = "bool | Mapping[str, Approval] | None"
"""``approval=`` of :func:`mcp_tools`: None (each tool as the server annotates it), True or
False (every tool), or a policy per tool, by the tool's name on the server."""


def annotated_approval(annotations: Mapping[str, Any]) -> bool:
    """The approval a tool gets from its server's annotations: True for a tool annotated
    ``destructiveHint`` and not ``readOnlyHint``; False otherwise, unannotated tools too.

    (MCP's own default for an unannotated tool is "may be destructive"; taken at its word,
    every call of most servers' tools would wait for a person. Annotations are hints from a
    server that may not be trusted: by them a server can make its calls wait for a person,
    never skip an approval that ``approval=`` asks for.)
    """
    return annotations.get("destructiveHint") is True and annotations.get("readOnlyHint") is not True


def checked_approval(approval: MCPApproval) -> bool | dict[str, Approval] | None:
    """``approval=`` as given, checked before the server is asked anything."""
    if approval is None or isinstance(approval, bool):
        return approval
    if not isinstance(approval, Mapping):
        raise TypeError(
            "approval must be True, False, None (as the server annotates each tool) or a mapping from "
            f"a tool's name to True, False or a function of the call's arguments; got {approval!r}"
        )
    policies: dict[str, Approval] = {}
    for name, policy in approval.items():
        if not isinstance(name, str):
            raise TypeError(f"approval names tools by their names on the server, as strings; got {name!r}")
        if not (isinstance(policy, bool) or callable(policy)):
            raise TypeError(
                f"approval of {name!r} must be True, False or a function of the call's arguments, not {policy!r}"
            )
        policies[name] = policy
    return policies


def tool_policies(
    approval: bool | dict[str, Approval] | None, names: list[str], server: Server, prefix: str
) -> dict[str, Approval]:
    """Each tool's policy by its name on the server (a tool not in it goes by its annotations)."""
    if approval is None:
        return {}
    if isinstance(approval, bool):
        return dict.fromkeys(names, approval)
    unknown = [name for name in approval if name not in names]
    if unknown:
        prefixed = [name for name in unknown if prefix and name.startswith(prefix) and name[len(prefix) :] in names]
        hint = f" (name them as the server does, without the prefix {prefix!r})" if prefixed else ""
        raise ValueError(
            f"approval names tools {server} does not have: {', '.join(map(repr, unknown))}{hint}; "
            f"its tools are: {', '.join(names) or 'none'}"
        )
    return approval
