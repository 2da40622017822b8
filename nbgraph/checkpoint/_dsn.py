"""A store's address and its password: what a message may say of a DSN or URL, never the password.

A password written unescaped in a URL ("pa%ss", "pa/ss") makes the parser fail, quoting it, or
read part of it as the host, port or database, which every message names. What may be the
password is found here by reading the text, without the parser, so that no message quotes it.
Both the PostgreSQL and the Redis store read their address with these.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any, Final
from urllib.parse import parse_qsl, unquote

from ..secrets import REDACTED

__all__ = ["PASSWORD_OPTIONS", "spilled", "unreadable"]

_PIECE: Final = 4
"""Any run of this many characters of a password is a piece of it, which no message shows."""

PASSWORD_OPTIONS: Final = ("password", "sslpassword")
"""The options of a connection string that hold a password."""

_CONNINFO_PASSWORD: Final = re.compile(
    # Unquoted, the value runs on over spaces up to the next "name=": "password=pa ss dbname=db"
    # (which libpq rejects, quoting "ss") holds "pa ss".
    r"(?:^|\s)(?:ssl)?password\s*=\s*(?:'((?:[^'\\]|\\.)*)'?|(\S+(?:\s+(?!\w+\s*=)\S+)*))"
)
_CONNINFO_OPTION: Final = re.compile(r"(\w+)\s*=\s*(?:'((?:[^'\\]|\\.)*)'?|(\S*))")
_URL_PASSWORD: Final = re.compile(r"[?&](?:ssl)?password=([^&#]*)")
_URL_SERVER: Final = re.compile(r"(\[[^\]/?]*\]?|[^:/?]*)(?::([^/?]*))?(?:/([^?]*))?(?:\?(.*))?", re.DOTALL)
_QUOTED: Final = re.compile(r"\"[^\"]*\"|'[^']*'")


def _pieces(secrets: Iterable[str]) -> frozenset[str]:
    """Every run of ``_PIECE`` characters of ``secrets`` (a shorter secret has none: it would hide
    whatever text it happens to be part of)."""
    return frozenset(secret[i : i + _PIECE] for secret in secrets for i in range(len(secret) - _PIECE + 1))


def _shows(text: str, pieces: frozenset[str]) -> bool:
    """Whether ``text`` holds one of ``pieces``."""
    return any(text[i : i + _PIECE] in pieces for i in range(len(text) - _PIECE + 1))


def _user_ends(rest: str, *, likely: bool) -> set[int]:
    """Where the user and password of a URL (``rest``: what follows ``scheme://``) may end: at the
    first ``@`` (as libpq reads it), at the last one before the query (a password holding ``@`` or
    ``/``), and unless only the ``likely`` ends are asked for, at the very last one."""
    first = rest.find("@")
    if first < 0:
        return set()
    query = rest.find("?", first)
    ends = {first, rest.rfind("@", 0, query if query >= 0 else len(rest))}
    return ends if likely else ends | {rest.rfind("@")}


def _url_passwords(url: str, *, likely: bool) -> list[tuple[str, str]]:
    """What ``url`` may hold as a password (as written, and percent-decoded)."""
    rest = url.partition("://")[2]
    found = [rest[:end].partition(":")[2] for end in _user_ends(rest, likely=likely)]
    found += _URL_PASSWORD.findall(rest)
    return [(text, unquote(text)) for text in found if text]


def _dsn_passwords(dsn: str, *, likely: bool) -> list[tuple[str, str]]:
    """What ``dsn`` (a URL or a connection string) may hold as a password (as written, and as read)."""
    if "://" in dsn:
        return _url_passwords(dsn, likely=likely)
    found = [match[1] if match[1] is not None else match[2] for match in _CONNINFO_PASSWORD.finditer(dsn)]
    return [(text, re.sub(r"\\(.)", r"\1", text)) for text in found if text]


def spilled(url: str, params: dict[str, Any], passwords: Iterable[str]) -> bool:
    """Whether the parser read part of what ``url`` holds as a password as another of ``params``."""
    read = {params.get(name) for name in passwords}
    found = _dsn_passwords(url, likely=True)
    pieces = _pieces(text for written, as_read in found if as_read not in read for text in (written, as_read))
    return any(
        _shows(str(value), pieces)
        for name, value in params.items()
        if name not in passwords and isinstance(value, (str, int))
    )


def _server(url: str) -> dict[str, str]:
    """The host, port and database ``url`` names, read as its author meant them where it is malformed."""
    if "://" not in url:
        return {name: quoted if quoted else bare for name, quoted, bare in _CONNINFO_OPTION.findall(url)}
    rest = url.partition("://")[2]
    ends = _user_ends(rest, likely=True)
    tail = rest[max(ends) + 1 :] if ends else rest
    match = _URL_SERVER.match(tail)
    assert match is not None  # (every part of the pattern is optional)
    host, port, database, query = match.groups(default="")
    found = {"host": unquote(host), "port": port, "dbname": unquote(database)}
    for name, value in parse_qsl(query, keep_blank_values=True):
        name = "dbname" if name == "db" else name  # (Redis names its database "db")
        if name in found:
            found[name] = value
    return found


def unreadable(opening: str, url: str, why: str, *, spilled: bool = False) -> str:
    """``opening``, the server ``url`` names and ``why`` it cannot be used, never its password."""
    pieces = _pieces(text for pair in _dsn_passwords(url, likely=False) for text in pair)
    names = {"host": "host", "hostaddr": "host", "port": "port", "dbname": "database"}
    parts = [(names[name], value) for name, value in _server(url).items() if name in names and value]
    hidden = spilled
    shown: list[str] = []
    for name, value in parts:
        hidden |= _shows(value, pieces)
        shown.append(f"{name} {REDACTED if _shows(value, pieces) else repr(value)}")

    def unquoted(quoted: re.Match[str]) -> str:
        nonlocal hidden
        if not _shows(quoted[0], pieces):
            return quoted[0]
        hidden = True
        return quoted[0][0] + REDACTED + quoted[0][0]

    why = _QUOTED.sub(unquoted, why)
    if _shows(why, pieces):
        why, hidden = "the reason given quotes the password", True
    where = f" ({', '.join(shown)})" if shown else ""
    hint = (
        "; in a URL, a password writes '%', '/', '@', '?' and '#' as %25, %2F, %40, %3F and %23"
        if hidden and "://" in url
        else ""
    )
    return f"{opening}{where}: {why}{hint}"
