"""Secrets stay secret: the one door that text nbgraph keeps passes through.

A run keeps text it did not write: a node's exception message, a tool's result or error, a
model endpoint's error, a store's. Any of it may quote a credential. Whatever such text
becomes (a run's reason, a step's error, an event, a checkpoint row, an NDJSON trace, the
view, the inspector, a batch row, a span) is first passed through :func:`redact`, which
replaces with ``[redacted]``:

- the secrets nbgraph knows, whole or any 8 characters of them: every configured model
  key, a store's password, the values of environment variables named ``*_API_KEY``,
  ``*_TOKEN``, ``*_SECRET`` or ``*_PASSWORD``, and values registered with
  :func:`register_secret`;
- credentials that look like one wherever they come from: the credentials after
  ``Bearer`` or ``Basic``; a provider's key (``sk-...``, ``AIza...``, ``hf_...``, ...);
  a long value with letters and digits labelled ``api_key``, ``token``, ``secret``,
  ``password`` or ``credentials``; the user and password of a URL (``https://user:pass@``)
  and the values of its ``token``, ``key``, ``api-key``, ``sig`` and like query parameters.

Secrets shorter than 8 characters ("EMPTY", "ollama") are a local server's placeholders,
not looked for: hiding them would mangle every text that names the server.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import Any
from urllib.parse import parse_qsl, urlsplit

__all__ = [
    "KEY_SHAPES",
    "REDACTED",
    "REDACTED_IN_URL",
    "forget_secret",
    "known_secrets",
    "redact",
    "redact_value",
    "register_secret",
    "shown_url",
    "url_credentials",
]

REDACTED = "[redacted]"

REDACTED_IN_URL = "redacted"
"""A URL's credentials are replaced by this: brackets in its user would make it no URL."""

MIN_SECRET_CHARS = 8
"""A shorter value is a placeholder, not a secret (see the module's docstring)."""

FRAGMENT_CHARS = 8
"""Any run of this many characters of a known secret is a piece of it."""

_SECRET_VARIABLES = re.compile(r"(?:^|_)(?:API_?KEY|TOKEN|SECRET|PASSWORD|PASSWD)$", re.IGNORECASE)

_CREDENTIAL_NAMES = r"api[_\-]?key|key|token|access[_\-]?token|auth|secret|password|sig|signature|code"
"""The query parameters of a URL whose value is a credential."""

# Each pattern's first group is kept: "Bearer " or "api_key=" still says what was there.
KEY_SHAPES = tuple(
    re.compile(pattern, re.VERBOSE)
    for pattern in (
        # The credentials of an Authorization header.
        r"(\b(?i:Bearer|Basic)\s+) [\w\-.~+/]+=*",
        # OpenAI (sk-, sk-proj-), Anthropic (sk-ant-), OpenRouter (sk-or-), DeepSeek: whole or masked
        # ("sk-proj-****abcd", "sk-abc...wxyz"). Six characters at least, so "sk-learn" stays.
        r"()(?<![\w\-]) sk- (?:[\w\-*] | \.{2,} | …){6,}",
        # Google (AIza), Hugging Face (hf_), Groq (gsk_), GitHub (ghp_, github_pat_), Replicate (r8_),
        # xAI (xai-), Perplexity (pplx-), AWS access keys (AKIA).
        r"()(?<![\w\-]) (?:AIza | hf_ | gsk_ | gh[pousr]_ | github_pat_ | r8_ | xai- | pplx- | AKIA) [\w\-*]{12,}",
        # A long secret-looking value labelled as one: api_key=..., "token": "...", secret ...
        # (letters and digits both, 20 characters at least, so "the key 'mode'" stays).
        r"""(\b(?i:api[_\-\ ]?key|key|token|secret|password|credentials?)s?(?:["']?\s*[:=]\s*["']?|\s+))
            (?=[\w\-.~+/]*\d)(?=[\w\-.~+/]*[A-Za-z]) [\w\-.~+/]{20,}=*""",
        # The user and password of a URL: https://user:pass@host, redis://:pass@host.
        r"(\b[a-zA-Z][\w+.\-]*://) [^\s/@:]*(?::[^\s/@]*)? @",
        # The value of a credential in a URL's query: ?token=..., &api-key=..., &sig=...
        r"([?&;](?i:" + _CREDENTIAL_NAMES + r")=) [^&#\s\"'<>]+",
    )
)
_URL_USER, _URL_QUERY = 4, 5
"""The indexes of the URL shapes (the user's replaces what ends with the ``@`` it keeps)."""
_CREDENTIAL_PARAMETER = re.compile(r"(?i:" + _CREDENTIAL_NAMES + ")")

_registered: set[str] = set()


def register_secret(value: str) -> None:
    """Treat ``value`` as a secret from now on: no text nbgraph keeps will hold it, or any 8
    characters of it (a value shorter than 8 characters is ignored)."""
    if len(value) >= MIN_SECRET_CHARS:
        _registered.add(value)


def forget_secret(value: str) -> None:
    """Stop treating ``value`` as a secret (it was registered by mistake, or rotated out)."""
    _registered.discard(value)


def known_secrets() -> frozenset[str]:
    """The secrets :func:`redact` looks for now: those registered and those in the environment."""
    found = {
        value for name, value in os.environ.items() if len(value) >= MIN_SECRET_CHARS and _SECRET_VARIABLES.search(name)
    }
    return frozenset(found | _registered)


def redact(text: str) -> str:
    """``text`` without a known secret (whole or in pieces) or anything shaped like a credential."""
    secrets = known_secrets()
    for secret in secrets:
        if secret in text:
            text = text.replace(secret, REDACTED)
    for i, shape in enumerate(KEY_SHAPES):
        text = shape.sub(_keep_label_and_at if i == _URL_USER else _keep_label, text)
    return without_fragments(text, secrets)


def redact_value(value: Any) -> Any:
    """``value`` (a tool's result, an event's payload) with :func:`redact` applied to every text
    inside it, through dicts, lists and tuples; other values are kept as they are."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, Mapping):
        return {key: redact_value(item) for key, item in value.items()}  # pyright: ignore[reportUnknownVariableType]
    if isinstance(value, (list, tuple)):
        return type(value)(redact_value(item) for item in value)  # pyright: ignore[reportUnknownArgumentType, reportUnknownVariableType]
    return value


def without_fragments(text: str, secrets: frozenset[str] | set[str]) -> str:
    """``text`` with every run of 8 characters of one of ``secrets`` replaced (overlapping runs
    make one span, hidden by one mark)."""
    if not secrets or len(text) < FRAGMENT_CHARS:
        return text
    fragments = {secret[i : i + FRAGMENT_CHARS] for secret in secrets for i in range(len(secret) - FRAGMENT_CHARS + 1)}
    spans: list[list[int]] = []
    for start in range(len(text) - FRAGMENT_CHARS + 1):
        if text[start : start + FRAGMENT_CHARS] in fragments:
            if spans and start <= spans[-1][1]:
                spans[-1][1] = start + FRAGMENT_CHARS
            else:
                spans.append([start, start + FRAGMENT_CHARS])
    if not spans:
        return text
    kept: list[str] = []
    shown = 0
    for start, end in spans:
        kept += [text[shown:start], REDACTED]
        shown = end
    return "".join([*kept, text[shown:]])


def shown_url(url: str) -> str:
    """``url`` as it may be shown (and parsed): its user, password and credential query values replaced."""
    return KEY_SHAPES[_URL_QUERY].sub(_keep_label_in_url, KEY_SHAPES[_URL_USER].sub(_keep_label_and_at, url))


def url_credentials(url: str) -> list[str]:
    """The secrets a URL carries: its user and password, its credential query values."""
    try:
        parts = urlsplit(url)
        found = [parts.username or "", parts.password or ""]
    except ValueError:  # (a malformed URL: its shapes are still redacted wherever it is quoted)
        return []
    found += [value for name, value in parse_qsl(parts.query) if _CREDENTIAL_PARAMETER.fullmatch(name)]
    return [value for value in found if value]


def _keep_label(match: re.Match[str]) -> str:
    return match[1] + REDACTED


def _keep_label_in_url(match: re.Match[str]) -> str:
    return match[1] + REDACTED_IN_URL


def _keep_label_and_at(match: re.Match[str]) -> str:
    return match[1] + REDACTED_IN_URL + "@"
