"""Taking API keys out of what a model endpoint sends back, before nbgraph keeps any of it.

Whatever enters through a model call ends up in a run's reason and error, its events,
its checkpoints and the inspector, so the LLM layer redacts it where it enters: the
configured key wherever it appears (replies, streamed text and tool calls included),
and in the endpoint's error messages also fragments of it and key-shaped tokens.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from ..secrets import MIN_SECRET_CHARS, REDACTED, redact, without_fragments

__all__ = ["REDACTED", "Redactor"]

MIN_KEY_CHARS = MIN_SECRET_CHARS

TAIL_CHARS = 4
"""The fewest last characters of the key a provider prints to say which key it means."""

_MASKED = re.compile(
    # Any key masked with asterisks or an ellipsis: "****abcd", "abcd****", "AbC1...wxyz" (in an
    # endpoint's errors only: elsewhere "loading...done" is no key).
    r"()(?: [\w\-]* \*{3,} [\w\-]+ | [\w\-]+ \*{3,} | [\w\-]{3,} (?:\.{3}|…) [\w\-]{3,} )",
    re.VERBOSE,
)
_WORD = re.compile(r"[A-Za-z0-9]+")


class Redactor:
    """Takes one API key, and in errors also key-shaped text, out of what an endpoint sends back.

    ``reply(text)`` is for what the model says (its text, its tool calls): only the key
    itself goes, so a reply about keys ("they look like sk-proj-...") stays whole.

    ``error(text)`` is for the endpoint's errors and metadata, where a provider may quote
    the key whole or masked. It replaces, with ``[redacted]``:

    - the key itself;
    - any run of 8 characters of the key (a prefix such as ``sk-proj-SECR``, a middle);
    - a word that is the key's last 4 characters or more (OpenAI's ``sk-proj-****abcd``);
    - the credentials after ``Bearer`` or ``Basic``;
    - tokens shaped like a provider's key, whole or masked: ``sk-`` (OpenAI, Anthropic's
      ``sk-ant-``, OpenRouter's ``sk-or-``) with 6 characters or more after it; ``AIza``
      (Google), ``hf_``, ``gsk_``, ``ghp_``/``github_pat_``, ``r8_``, ``xai-``, ``pplx-``
      and ``AKIA`` with 12 or more;
    - a value of 20 characters or more, with letters and digits, after ``key``,
      ``api_key``, ``token``, ``secret``, ``password`` or ``credentials`` (``api_key=...``,
      ``"token": "..."``);
    - a word masked with three asterisks or more (``****abcd``, ``abcd****``) or an
      ellipsis between two words of three characters (``AbC1...wxyz``).

    Request ids, model names, numbers and ordinary words stay. A key shorter than 8
    characters is a local server's placeholder and is not looked for.
    """

    def __init__(self, key: str | None) -> None:
        self.__key = key if key is not None and len(key) >= MIN_KEY_CHARS else None
        self.__keys = frozenset() if self.__key is None else frozenset((self.__key,))

    def __repr__(self) -> str:
        return "Redactor()"

    def reply(self, text: str) -> str:
        """``text`` without the key."""
        return text if self.__key is None else text.replace(self.__key, REDACTED)

    def error(self, text: str) -> str:
        """``text`` without the key, anything shaped like a key, or fragments of the key."""
        # The door every kept text goes through first (every secret nbgraph knows, key shapes),
        # then what only an endpoint's error holds: this key's pieces, masked keys.
        text = redact(self.reply(text))
        text = _MASKED.sub(lambda match: match[1] + REDACTED, text)
        return self._without_tail(without_fragments(text, self.__keys))

    def stream(self, on_text: Callable[[str], None]) -> RedactedStream:
        """Pass streamed pieces of a reply on to ``on_text`` without the key."""
        return RedactedStream(self.__key, on_text)

    def _without_tail(self, text: str) -> str:
        key = self.__key
        if key is None:
            return text
        return _WORD.sub(lambda m: REDACTED if len(m[0]) >= TAIL_CHARS and key.endswith(m[0]) else m[0], text)


class RedactedStream:
    """Streamed text passed on without the key, even when the key arrives split across pieces.

    The end of what came so far that could begin the key is held back until the next
    piece shows whether it does; :meth:`end` passes on what is still held.
    """

    def __init__(self, key: str | None, on_text: Callable[[str], None]) -> None:
        self.__key = key
        self._on_text = on_text
        self._held = ""

    def __call__(self, piece: str) -> None:
        key = self.__key
        if key is None:
            self._on_text(piece)
            return
        text = (self._held + piece).replace(key, REDACTED)
        cut = len(text) - _key_start_at_end(text, key)
        self._held = text[cut:]
        if cut:
            self._on_text(text[:cut])

    def end(self) -> None:
        """The reply is complete: what was held back is not the key after all."""
        if self._held:
            self._on_text(self._held)
            self._held = ""


def _key_start_at_end(text: str, key: str) -> int:
    """How many of ``text``'s last characters are the start of ``key``."""
    start = text.find(key[0], max(0, len(text) - len(key) + 1))
    while start != -1:
        if key.startswith(text[start:]):
            return len(text) - start
        start = text.find(key[0], start + 1)
    return 0
