"""State schemas: how a graph's state is validated, viewed, updated and stored.

A graph's state is a pydantic model or a plain dict. Internally the engine keeps the
state as a ``dict`` of field values that is never mutated once built: every step
makes a new dict, so a node can hold on to what it was given without seeing it
change, and any step's state can be kept by reference instead of copied. Fields
fold updates through their reducers (:mod:`nbgraph.reducers`): a model field's
reducer is the ``Reducer``, or the plain callable ``fn(current, update)`` such as
``operator.add``, in its ``Annotated[...]`` metadata.
"""

from __future__ import annotations

import inspect
import typing
from collections.abc import Callable, Iterable, Iterator, Mapping
from functools import cache
from types import CoroutineType, ModuleType, UnionType
from typing import TYPE_CHECKING, Any

import typing_extensions

if TYPE_CHECKING:
    import pydantic
    from pydantic.fields import FieldInfo

from .errors import GraphValidationError, InvalidUpdate, did_you_mean
from .reducers import AppendLog, Reducer, append, overwrite

__all__ = ["Schema", "StateView", "close_coroutines", "to_json", "to_jsonable", "unawaited"]


def _strict(value: Any) -> Any:
    if type(value) is AppendLog:
        return list(value)
    raise TypeError(f"{type(value).__name__} is not JSON-serializable")


def _loose(value: Any) -> Any:
    return list(value) if type(value) is AppendLog else repr(value)


def to_json(value: Any) -> str:
    """JSON text of a state value, an update or a stored record (pydantic's serializer, in Rust).

    Raises:
        TypeError: a value cannot be serialized.
    """
    return _pydantic_core().to_json(value, fallback=_strict).decode()


def to_jsonable(value: Any, *, strict: bool = True) -> Any:
    """The JSON-compatible form of a state value or update (pydantic's serializer; never pickle).

    A value it cannot serialize raises ``TypeError``; with ``strict=False`` (event
    payloads, which only describe) it is shown by its ``repr`` instead.
    """
    return _pydantic_core().to_jsonable_python(value, fallback=_strict if strict else _loose)


# pydantic is loaded when a first state is compiled or stored, not by `import nbgraph`: it
# is most of that import's time.


@cache
def _base_model() -> type[pydantic.BaseModel]:
    from pydantic import BaseModel

    return BaseModel


@cache
def _validation_error() -> type[pydantic.ValidationError]:
    from pydantic import ValidationError

    return ValidationError


def _type_adapter(annotation: Any) -> pydantic.TypeAdapter[Any]:
    from pydantic import TypeAdapter

    return TypeAdapter(annotation)


@cache
def _pydantic_core() -> ModuleType:
    import pydantic_core

    return pydantic_core


class _FieldFirst:
    """A mapping method of :class:`StateView` that gives way to a field of the same name,
    so ``state.items`` in a map or a condition reads a field called ``items``."""

    __slots__ = ("method", "name")

    def __init__(self, method: Callable[..., Any]) -> None:
        self.method = method
        self.name = method.__name__

    def __get__(self, view: Any, owner: type | None = None) -> Any:
        if view is None:
            return self.method
        values = view._values
        if self.name in values:
            return values[self.name]
        return self.method.__get__(view, owner)


class StateView(Mapping[str, Any]):
    """Read-only view of a dict state; fields read as ``state["x"]`` or ``state.x``
    (also a field named like a mapping method: ``items``, ``keys``, ``values``, ``get``)."""

    __slots__ = ("_values",)

    def __init__(self, values: Mapping[str, Any]) -> None:
        object.__setattr__(self, "_values", values)

    def __getitem__(self, key: str) -> Any:
        return self._values[key]

    def __getattr__(self, key: str) -> Any:
        try:
            return self._values[key]
        except KeyError:
            raise AttributeError(f"state has no field {key!r}{did_you_mean(key, self._values)}") from None

    def __setattr__(self, key: str, value: Any) -> None:
        raise TypeError(f"state is read-only: return {{{key!r}: ...}} from the node instead of assigning")

    def __setitem__(self, key: str, value: Any) -> None:
        self.__setattr__(key, value)

    def __iter__(self) -> Iterator[str]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def __repr__(self) -> str:
        return f"StateView({dict(self._values)!r})"

    items = _FieldFirst(Mapping.items)  # type: ignore[assignment]
    keys = _FieldFirst(Mapping.keys)  # type: ignore[assignment]
    values = _FieldFirst(Mapping.values)  # type: ignore[assignment]
    get = _FieldFirst(Mapping.get)  # type: ignore[assignment]


def _is_reducer(item: Any) -> bool:
    """Whether an ``Annotated`` metadata item is a reducer: a ``Reducer``, or any other
    callable pydantic does not read itself (its validators and serializers are objects
    that hold a function; a class it reads, like ``SkipValidation``, has a schema hook)."""
    return callable(item) and not hasattr(item, "__get_pydantic_core_schema__")


def _reducer_name(item: Any) -> str:
    if isinstance(item, Reducer):
        return item.name
    return getattr(item, "__name__", None) or repr(item)


def _field_reducer(name: str, info: FieldInfo, problems: list[str]) -> Reducer | None:
    """Field ``name``'s reducer (None: the latest value wins); what is wrong with the
    reducers it declares goes to ``problems``."""
    found = [item for item in info.metadata if _is_reducer(item)]
    union = typing.get_origin(info.annotation) in (typing.Union, UnionType)
    for member in typing.get_args(info.annotation) if union else ():
        hidden = [item for item in getattr(member, "__metadata__", ()) if _is_reducer(item)]
        if hidden:
            # pydantic keeps only a field's outermost metadata: this reducer would never run.
            problems.append(
                f"field {name!r}: the reducer {_reducer_name(hidden[0])} is inside one member of the field's "
                f"union type, where it is never applied; annotate the whole field, as in "
                f"Annotated[list[str] | None, {_reducer_name(hidden[0])}]"
            )
    if len(found) > 1:
        problems.append(
            f"field {name!r} has {len(found)} reducers ({', '.join(map(_reducer_name, found))}); a field takes one"
        )
        return None
    if not found:
        return None
    item = found[0]
    if isinstance(item, Reducer):
        return item
    try:
        signature = inspect.signature(item)
    except (TypeError, ValueError):  # a builtin that does not say (max, min): trusted
        return Reducer(_reducer_name(item), item)
    try:
        signature.bind(None, None)
    except TypeError:
        problems.append(
            f"field {name!r}: its reducer {_reducer_name(item)}{signature} cannot take two positional "
            "arguments; a reducer is called as fn(current, update) and returns the new value"
        )
        return None
    return Reducer(_reducer_name(item), item)


class Schema:
    """What the engine knows about one state type, resolved once per graph."""

    __slots__ = ("model", "name", "fields", "reducers", "_adapters", "_identify", "_infos", "_view_cls", "view")

    def __init__(
        self,
        state: type[pydantic.BaseModel] | type[dict] | None,
        identify: Callable[[Any], Any] | None = None,
        *,
        graph: str | None = None,
    ) -> None:
        """``identify(item)`` turns an item of a dict state's ``messages`` that has no id
        (a plain string, an id-less dict) into the message with an id the state keeps,
        as ``MessagesState``'s validation does; the builder passes it in, and the name of
        the ``graph`` it is checking.

        Raises:
            GraphValidationError: ``state`` is no state type, or a field's reducer is
                not one (every such field listed).
        """
        self._identify = None
        if state is None or state is dict:
            self.model: type[pydantic.BaseModel] | None = None
            self.name = "dict"
            self._infos: dict[str, FieldInfo] = {}
            self.fields: frozenset[str] | None = None
            # A dict state treats `messages` as a conversation, like MessagesState.
            self.reducers: dict[str, Reducer] = {"messages": append}
            self._adapters: dict[str, pydantic.TypeAdapter[Any]] = {}
            self._identify = identify
            self.view: Callable[[Mapping[str, Any]], Any] = StateView
            return
        where = graph if graph is not None else getattr(state, "__name__", repr(state))
        if typing_extensions.is_typeddict(state):  # (it knows typing's TypedDict too)
            self._typed_dict(state, where)
            return
        if not (isinstance(state, type) and issubclass(state, _base_model())):
            raise GraphValidationError(
                where, [f"state must be a pydantic BaseModel subclass, a TypedDict or dict, got {state!r}"]
            )
        self.model = state
        self.name = state.__name__
        self.fields = frozenset(state.model_fields)
        self._infos = dict(state.model_fields)
        self.reducers = {}
        self._adapters = {}
        self._reducers_of(where)
        frozen_config = {**state.model_config, "frozen": True}
        self._view_cls = type(state.__name__, (state,), {"model_config": frozen_config, "__module__": state.__module__})
        self.view = self._frozen_view

    def _typed_dict(self, state: Any, where: str) -> None:
        """A TypedDict state, as a LangGraph user writes one: nodes see a read-only mapping (that
        also allows ``state.field``), a run gives back a dict, each field is validated against
        its type and folds through the reducer its ``Annotated[...]`` names. A key is there once
        the input or a node set it."""
        self.model = None
        self.name = state.__name__
        from pydantic.fields import FieldInfo  # (at compile: `import nbgraph` need not load pydantic's fields)

        hints = typing_extensions.get_type_hints(state, include_extras=True)
        self._infos = {name: FieldInfo.from_annotation(_required(hint)) for name, hint in hints.items()}
        self.fields = frozenset(self._infos)
        self.reducers = {}
        self._adapters = {}
        self._reducers_of(where)
        self.view = StateView

    def _reducers_of(self, where: str) -> None:
        problems: list[str] = []
        for name, info in self._infos.items():
            reducer = _field_reducer(name, info, problems)
            if reducer is not None and reducer is not overwrite:
                self.reducers[name] = reducer
        if problems:
            raise GraphValidationError(where, [f"state {self.name}, {problem}" for problem in problems])

    def _frozen_view(self, values: Mapping[str, Any]) -> pydantic.BaseModel:
        # Skips validation: the values were validated when they entered the state.
        view = object.__new__(self._view_cls)
        object.__setattr__(view, "__dict__", values)
        object.__setattr__(view, "__pydantic_fields_set__", set())
        object.__setattr__(view, "__pydantic_extra__", None)
        object.__setattr__(view, "__pydantic_private__", None)
        return view

    def _adapter(self, name: str) -> pydantic.TypeAdapter[Any]:
        adapter = self._adapters.get(name)
        if adapter is None:
            info = self._infos[name]
            annotation: Any = info.annotation
            if name in self.reducers and self.reducers[name] is append:
                annotation = _item_type(annotation)
            metadata = [m for m in info.metadata if not _is_reducer(m)]
            if metadata:
                annotation = typing.Annotated[(annotation, *metadata)]  # type: ignore[valid-type]
            adapter = self._adapters[name] = _type_adapter(annotation)
        return adapter

    def initial(self, data: Mapping[str, Any] | pydantic.BaseModel | None) -> dict[str, Any]:
        """Validate a run's input into the internal field dict."""
        if self.model is None:
            if data is None:
                return {}
            if not isinstance(data, Mapping):
                raise InvalidUpdate(f"input must be a dict, got {type(data).__name__}")
            values = dict(data)
            if self._identify is not None and "messages" in values:
                values["messages"] = self._identified(values["messages"])
            if self.fields is not None:  # (a TypedDict: each key it gives fits its field)
                values = self._typed_input(values)
        else:
            if isinstance(data, self.model):
                instance = data
            else:
                try:
                    instance = self.model.model_validate(data if data is not None else {})
                except _validation_error() as exc:
                    raise InvalidUpdate(
                        f"input does not fit state {self.model.__name__}: {_brief(exc)}",
                        field=_first_field(exc),
                    ) from None
            values = dict(instance.__dict__)
        for name, reducer in self.reducers.items():
            if reducer is append and name in values:
                values[name] = AppendLog(values[name] or ())
        return values

    def _typed_input(self, values: dict[str, Any]) -> dict[str, Any]:
        fields = self.fields
        assert fields is not None
        unknown = sorted(set(values) - fields)
        if unknown:
            raise InvalidUpdate(
                f"input does not fit state {self.name}: {', '.join(map(repr, unknown))} is not one of its fields "
                f"({', '.join(sorted(fields))})",
                field=unknown[0],
            )
        out = {}
        for key, value in values.items():
            try:
                out[key] = self._validate(key, value, "the input")
            except InvalidUpdate as exc:
                raise InvalidUpdate(f"input does not fit state {self.name}: {exc}", field=key) from None
        return out

    def apply(
        self, values: Mapping[str, Any], update: Mapping[str, Any], node: str, *, by: str | None = None
    ) -> dict[str, Any]:
        """Fold ``update`` (from ``node``; ``by`` says who gave it when not the node:
        ``"Fork(update=...)"``) into a new field dict.

        Raises:
            InvalidUpdate: a field is unknown, a value invalid or a coroutine, or a reducer
                raised; the update's coroutines are closed, as it is dropped.
        """
        new = dict(values)
        reducers = self.reducers
        fields = self.fields
        try:
            for key, value in update.items():
                if type(value) is CoroutineType:
                    raise unawaited(value, f"{_who(by, node)} set field {key!r} to", node=node, field=key)
                if fields is not None:
                    if key not in fields:
                        raise InvalidUpdate(
                            f"{_who(by, node)} updated unknown state field {key!r}"
                            f"{did_you_mean(key, fields)}; {self.name} has fields: "
                            f"{', '.join(sorted(fields))}",
                            node=node,
                            field=key,
                        )
                    value = self._validate(key, value, by or f"node {node!r}", node)
                elif key == "messages" and self._identify is not None:
                    value = self._identified(value)
                reducer = reducers.get(key)
                if reducer is None:
                    new[key] = value
                else:
                    current = new[key] if key in new else self._empty(key)
                    try:
                        new[key] = reducer(current, value)
                    except Exception as exc:
                        raise InvalidUpdate(
                            _rejected(reducer, _who(by, node), key, current, value, exc), node=node, field=key
                        ) from exc
        except InvalidUpdate:
            close_coroutines(update.values())
            raise
        return new

    def _empty(self, key: str) -> Any:
        """Where a reducer starts on a field no one has set: its type's empty value (``[]`` for a
        list, ``0`` for an int), as LangGraph starts its channels; None when there is none."""
        info = self._infos.get(key)
        if info is None or self.model is not None:
            return None  # (a model's field has its default already)
        kind = typing.get_origin(info.annotation) or info.annotation
        try:
            return kind() if isinstance(kind, type) else None
        except Exception:
            return None

    def _identified(self, value: Any) -> Any:
        """A dict state's ``messages`` value with an id on every message: a message gets
        its id once, when it enters the state, so every later read sees the same one."""
        identify = self._identify
        assert identify is not None
        if isinstance(value, (list, tuple, AppendLog)):
            if not any(map(_lacks_id, value)):
                return value
            return [identify(item) if _lacks_id(item) else item for item in value]
        return identify(value) if _lacks_id(value) else value

    def _validate(self, key: str, value: Any, who: str, node: str | None = None) -> Any:
        adapter = self._adapter(key)
        if self.reducers.get(key) is append:
            many = isinstance(value, (list, tuple, AppendLog))  # (another state's log, e.g. a sub-graph's)
            try:
                items = [adapter.validate_python(v) for v in (value if many else (value,))]
            except _validation_error() as exc:
                raise InvalidUpdate(
                    f"{who} set field {key!r} to an invalid item: {_brief(exc)}",
                    node=node,
                    field=key,
                ) from None
            return items
        try:
            return adapter.validate_python(value)
        except _validation_error() as exc:
            raise InvalidUpdate(
                f"{who} set field {key!r} to {_short_repr(value)}, which is invalid: {_brief(exc)}",
                node=node,
                field=key,
            ) from None

    def output(self, values: Mapping[str, Any]) -> Any:
        """The state as users get it back: a validated model instance, or a plain dict."""
        plain = {k: list(v) if type(v) is AppendLog else v for k, v in values.items()}
        if self.model is None:
            return plain
        return self.model.model_validate(plain)

    def encode(self, values: Mapping[str, Any]) -> Any:
        """JSON-compatible form of the state (pydantic's serializer; never pickle)."""
        return to_jsonable(dict(values))

    def decode(self, data: Mapping[str, Any]) -> dict[str, Any]:
        """Inverse of :meth:`encode`: restore field types from JSON (or take a stored field dict)."""
        return self.initial({k: list(v) if type(v) is AppendLog else v for k, v in data.items()})


def unawaited(coroutine: Any, what: str, *, node: str, field: str | None = None) -> InvalidUpdate:
    """The error for a coroutine ``node`` gave instead of awaiting it; ``what`` says where
    it was (``"node 'ask' set field 'name' to"``)."""
    return InvalidUpdate(
        f"{what} a coroutine ({coroutine.__qualname__}) that was never awaited; write await before "
        "the call, in a node defined with async def",
        node=node,
        field=field,
    )


def close_coroutines(values: Iterable[Any]) -> None:
    """Close the coroutines among ``values`` (a dropped update's): Python would warn,
    when each is collected, that it was never awaited."""
    for value in values:
        if type(value) is CoroutineType:
            value.close()


def _who(by: str | None, node: str) -> str:
    """Who gave an update, as an error names them (the node, unless someone else gave it)."""
    return by or f"node {node!r}"


def _rejected(reducer: Reducer, who: str, key: str, current: Any, value: Any, exc: Exception) -> str:
    """Why the reducer of field ``key`` refused ``value`` from ``who``."""
    text = (
        f"{who}: the {reducer.name} reducer of field {key!r} rejected {_short_repr(value)}: {type(exc).__name__}: {exc}"
    )
    if current is None:
        # (operator.add(None, [x]) is the usual case: a field declared `= None`.)
        text += (
            "; the field was None, so give it a default the reducer can take (such as [] or 0), "
            "or have the reducer handle None"
        )
    return text


def _required(hint: Any) -> Any:
    """A TypedDict field's type without ``Required[...]`` / ``NotRequired[...]``."""
    while typing.get_origin(hint) in (typing_extensions.Required, typing_extensions.NotRequired):
        hint = typing.get_args(hint)[0]
    return hint


def _lacks_id(item: Any) -> bool:
    return type(item) is str or (isinstance(item, Mapping) and item.get("id") is None)


def _item_type(annotation: Any) -> Any:
    args = typing.get_args(annotation)
    origin = typing.get_origin(annotation)
    if origin in (list, tuple, typing.Sequence) and args:
        return args[0]
    import collections.abc

    if origin in (collections.abc.Sequence,) and args:
        return args[0]
    return Any


def _brief(exc: pydantic.ValidationError) -> str:
    parts = []
    for error in exc.errors(include_url=False):
        location = ".".join(str(p) for p in error["loc"])
        parts.append(f"{location + ': ' if location else ''}{error['msg']}")
    return "; ".join(parts)


def _first_field(exc: pydantic.ValidationError) -> str | None:
    for error in exc.errors(include_url=False):
        if error["loc"]:
            return str(error["loc"][0])
    return None


def _short_repr(value: Any, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."
