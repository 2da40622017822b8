"""Tools: typed Python functions the model may call.

The JSON schema the model sees comes from the function's signature through
pydantic, and the model's arguments are validated against the same model before
the function runs; a validation error or an exception goes back to the model as a
tool message instead of failing the run.
"""

from __future__ import annotations

import inspect
import json
import typing
from collections.abc import Callable, Sequence
from typing import Any, TypeAlias

import pydantic

from ..answering import deciders_of
from ..deadlines import Deadline, tool_deadline

__all__ = ["Approval", "Tool", "tool"]

Approval: TypeAlias = "bool | Callable[[Any], bool]"
"""A tool's approval policy: every call waits for a person (True), none does (False), or those
for which ``policy(arguments)`` is true, given the validated arguments (``args.amount > 100``)."""


class Tool:
    """A callable offered to the model. Build one with :func:`tool` or pass a function."""

    deadline: Deadline | None = None
    deciders: tuple[str, ...] = ()

    def __init__(
        self,
        fn: Callable[..., Any],
        *,
        name: str | None = None,
        description: str | None = None,
        completes: bool = False,
        approval: Approval = False,
        deadline: Deadline | float | None = None,
        deciders: str | Sequence[str] | None = None,
    ) -> None:
        if not callable(fn):
            raise TypeError(f"a tool must be a function, got {fn!r}")
        self.fn = fn
        self.name = name or fn.__name__
        self.description = description if description is not None else _first_paragraph(inspect.getdoc(fn))
        self.completes = completes
        """A completion tool ends the agent's turn: it runs last in its batch, then the node returns."""
        if not (isinstance(approval, bool) or callable(approval)):
            raise TypeError(
                f"tool {self.name!r}: approval must be True, False or a function of the arguments, not {approval!r}"
            )
        self.approval: Approval = approval
        """Which calls wait for a person's decision before they run (see :data:`Approval`)."""
        if deadline is not None and approval is False:
            raise ValueError(
                f"tool {self.name!r}: deadline= bounds how long a call waits for a decision; give approval= with it"
            )
        self.deadline: Deadline | None = tool_deadline(deadline, f"tool {self.name!r}")
        if deciders is not None and approval is False:
            raise ValueError(f"tool {self.name!r}: deciders= names who may decide on a call; give approval= with it")
        self.deciders: tuple[str, ...] = deciders_of(deciders, f"tool {self.name!r}")
        """Who may decide on a call (empty: anyone)."""
        """How long a call waits for a person's decision, and what is decided when that time has
        passed (a :class:`~nbgraph.Deadline`: rejected, unless its ``then`` says otherwise)."""
        self.is_async = inspect.iscoroutinefunction(fn)
        self.arguments = _arguments_model(fn, self.name)
        schema = self.arguments.model_json_schema()
        schema.pop("title", None)
        self.schema: dict[str, Any] = {
            "type": "function",
            "function": {"name": self.name, "description": self.description, "parameters": schema},
        }

    def __repr__(self) -> str:
        return f"Tool({self.name!r})"

    def checked(self, arguments: dict[str, Any]) -> Any:
        """The arguments as an approval policy reads them: validated, with attributes
        (``args.amount``).

        Raises:
            pydantic.ValidationError: they do not fit the function's signature.
        """
        return self.arguments.model_validate(arguments)

    async def call(self, arguments: dict[str, Any], ctx: Any = None) -> str:
        """Validate ``arguments``, run the function, and return its result as text.

        ``ctx`` is the calling node's context, for a tool that keeps something for its
        run (an MCP tool's session); a function tool has no use for it. Raises
        ``pydantic.ValidationError`` for bad arguments and whatever the function
        raises; the agent loop turns both into error tool messages.
        """
        values = self.arguments.model_validate(arguments)
        kwargs = {name: getattr(values, name) for name in type(values).model_fields}
        result = self.fn(**kwargs)
        if self.is_async or inspect.isawaitable(result):
            result = await result
        if isinstance(result, str):
            return result
        if isinstance(result, pydantic.BaseModel):
            return result.model_dump_json()
        return json.dumps(result, default=str)


def tool(
    fn: Callable[..., Any] | None = None,
    *,
    name: str | None = None,
    description: str | None = None,
    completes: bool = False,
    approval: Approval = False,
    deadline: Deadline | float | None = None,
    deciders: str | Sequence[str] | None = None,
) -> Any:
    """Make a :class:`Tool`: ``@tool``, ``@tool(approval=True)`` or ``tool(fn, name=...)``.

    ``deadline`` bounds how long a call that waits for approval waits (``Deadline(600)``:
    rejected after ten minutes; ``Deadline(600, then="approve")``: run then); ``deciders``
    who may decide on a call (default: anyone).
    """
    options: dict[str, Any] = {
        "name": name,
        "description": description,
        "completes": completes,
        "approval": approval,
        "deadline": deadline,
        "deciders": deciders,
    }
    if fn is None:
        return lambda f: Tool(f, **options)
    return Tool(fn, **options)


def as_tool(item: Any) -> Tool:
    return item if isinstance(item, Tool) else Tool(item)


def _first_paragraph(doc: str | None) -> str:
    return doc.split("\n\n", 1)[0].replace("\n", " ").strip() if doc else ""


def _arguments_model(fn: Callable[..., Any], name: str) -> type[pydantic.BaseModel]:
    fields: dict[str, Any] = {}
    hints = _hints(fn)
    for param in inspect.signature(fn).parameters.values():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            raise TypeError(f"tool {name!r}: *args and **kwargs cannot be described to a model")
        annotation = hints.get(param.name, Any)
        default = ... if param.default is param.empty else param.default
        fields[param.name] = (annotation, default)
    config = pydantic.ConfigDict(extra="forbid")
    return pydantic.create_model(f"{name}_arguments", __config__=config, **fields)


def _hints(fn: Callable[..., Any]) -> dict[str, Any]:
    try:
        return typing.get_type_hints(fn)
    except Exception:  # an unresolvable annotation: describe that parameter as "any"
        return {}
