"""Which model an LLM node calls: its own, the graph's, the environment's, or the offline demo."""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from typing import Any

from .model import ChatModel, ModelError, ScriptedModel
from .openai_model import OpenAIModel

__all__ = ["demo_model", "resolve_model"]

_log = logging.getLogger("nbgraph.llm")


def _demo_reply(messages: Sequence[Any]) -> str:
    system = next((m.content for m in messages if m.role == "system"), "")
    last_user = next((m.content for m in reversed(messages) if m.role == "user"), "")
    # Every line break ends the summary, U+2028 too: the reply is one line, and no format is parsed here.
    task = system.strip().splitlines()[0] if system.strip() else "answer"
    subject = last_user.strip().splitlines()[0][:80] if last_user.strip() else "the conversation so far"
    return f"[offline demo model] {task.rstrip('.')}: a short, made-up reply about {subject}."


_DEMO: ScriptedModel | None = None


def demo_model() -> ScriptedModel:
    """The built-in offline model: used when no model is configured, announced once."""
    global _DEMO
    if _DEMO is None:
        _DEMO = ScriptedModel(_demo_reply, name="nbgraph-demo")
        _log.warning(
            "nbgraph: no model configured (no NBGRAPH_MODEL, OPENAI_API_KEY or OPENAI_BASE_URL), "
            "so LLM nodes use the built-in offline demo model; its replies are canned."
        )
    return _DEMO


_FROM_ENV: dict[tuple[str | None, ...], Any] = {}


def resolve_model(explicit: Any = None, default: Any = None) -> Any:
    """The model an LLM node calls.

    In order: the node's own ``model``, the graph's ``model`` (a model object, or a
    model name for :class:`OpenAIModel`), then the environment (``NBGRAPH_MODEL``,
    ``OPENAI_API_KEY``, ``OPENAI_BASE_URL``), then the offline demo model.

    Raises:
        ModelError: ``OPENAI_BASE_URL`` is set without ``NBGRAPH_MODEL`` (which model that
            server serves cannot be guessed).
    """
    for candidate in (explicit, default):
        if candidate is None:
            continue
        if isinstance(candidate, str):
            return _openai_model(candidate)
        if not isinstance(candidate, ChatModel):
            raise TypeError(f"model must be a model name or have `name` and `async complete()`, got {candidate!r}")
        return candidate
    name = os.environ.get("NBGRAPH_MODEL")
    if name:
        return _openai_model(name)
    if base_url := os.environ.get("OPENAI_BASE_URL"):
        # A server answers only for the models it serves: a guessed name would fail every call.
        raise ModelError(
            f"OPENAI_BASE_URL is {base_url!r} but NBGRAPH_MODEL is not set: set it to the name of a model "
            f"that server serves ({base_url.rstrip('/')}/models lists them)"
        )
    if os.environ.get("OPENAI_API_KEY"):
        return _openai_model("gpt-4o-mini")
    return demo_model()


def _openai_model(name: str) -> Any:
    # One client per configuration, so its connection pool is reused across calls.
    key = (name, os.environ.get("OPENAI_API_KEY"), os.environ.get("OPENAI_BASE_URL"))
    model = _FROM_ENV.get(key)
    if model is None:
        model = _FROM_ENV[key] = OpenAIModel(name)
    return model
