"""Who answers a pause, and how: the identity a decision is recorded under, and the door it
came through. Light enough for ``import nbgraph``; the record itself is
:class:`nbgraph.decision.Decision`."""

from __future__ import annotations

import getpass
import os
from typing import Literal, NamedTuple

__all__ = ["IN_CODE", "Given", "Via", "deciders_of", "identity", "set_identity"]

Via = Literal["view", "code", "resume", "magic", "langgraph", "deadline", "standing"]
"""How an answer was given: the view's buttons, ``run.answer`` (and ``approve``/``deny``), a
``Resume``, a magic, the LangGraph door, a deadline that passed, a standing approval."""


class Given(NamedTuple):
    """How an answer is given, for its record: through which door, by whom, why, and on what
    (``shown``: the digest of what the person saw; the answer is refused if the pause shows
    something else)."""

    via: Via = "code"
    by: str | None = None
    reason: str | None = None
    shown: str | None = None


IN_CODE = Given()
"""An answer given from code, by whoever runs it, for no stated reason."""

_identity: str | None = None
_os_user: str | None = None
"""The operating system's user, read once (it reads the user database when no variable names it)."""


def identity() -> str:
    """Who answers from this process: the name :func:`set_identity` gave, else the JupyterHub
    user (``JUPYTERHUB_USER``), else the operating system's user."""
    global _os_user
    if _identity is not None:
        return _identity
    hub = os.environ.get("JUPYTERHUB_USER")
    if hub:
        return hub
    if _os_user is None:
        try:
            _os_user = getpass.getuser()
        except Exception:  # (no user name in a container without one)
            _os_user = "unknown"
    return _os_user


def set_identity(name: str | None) -> None:
    """Record answers from this process as given by ``name`` (None: back to the default)."""
    global _identity
    if name is not None and (not isinstance(name, str) or not name.strip()):  # pyright: ignore[reportUnnecessaryIsInstance]
        raise ValueError(f"an identity is a non-empty name; got {name!r}")
    _identity = name


def deciders_of(value: object, where: str) -> tuple[str, ...]:
    """Who may answer a pause, as declared (``deciders=("alice", "bob")``, or one name): the
    identities, checked; empty (anyone) for None.

    Raises:
        ValueError: not names.
    """
    if value is None:
        return ()
    names = (value,) if isinstance(value, str) else tuple(value) if isinstance(value, (list, tuple, set)) else None  # pyright: ignore[reportUnknownArgumentType]
    if names is None or not names or not all(isinstance(n, str) and n.strip() for n in names):  # pyright: ignore[reportUnknownVariableType]
        raise ValueError(f"{where}: deciders= names who may answer, as a name or a list of names; got {value!r}")
    return tuple(names)  # pyright: ignore[reportUnknownArgumentType]
