"""``OpenAIModel``: chat completions over ``openai.AsyncOpenAI``, streamed.

Works with any OpenAI-compatible server (OpenAI, Ollama, vLLM, llama.cpp) through
``base_url``. The ``openai`` package is imported when the first call is made, so
the rest of nbgraph never loads it.
"""

from __future__ import annotations

import asyncio
import json
import os
import weakref
from collections.abc import Callable
from typing import Any

from ..secrets import register_secret, shown_url, url_credentials
from ._redact import RedactedStream, Redactor
from .messages import ToolCallRequest, to_openai
from .model import ChatRequest, Completion, ModelError, cost_of

__all__ = ["OpenAIModel"]


class OpenAIModel:
    """A chat model behind an OpenAI-compatible endpoint.

    ``api_key`` defaults to ``OPENAI_API_KEY`` and ``base_url`` to ``OPENAI_BASE_URL``;
    a local server needs no key. ``timeout`` (seconds) and ``max_retries`` go to the
    client, which retries rate limits and server errors itself. Other keyword
    arguments (``temperature=0``, ``max_tokens=...``) are sent with every request.
    The key is never shown: not in ``repr``, events, checkpoints or error messages. What
    the endpoint sends back is redacted as it arrives: replies and tool calls lose the
    key; errors lose the key, fragments of it and anything shaped like a key.
    """

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout: float = 60.0,
        max_retries: int = 2,
        prices: tuple[float, float] | None = None,
        **params: Any,
    ) -> None:
        self.name = model
        url = base_url or os.environ.get("OPENAI_BASE_URL") or None
        self.__url = url
        self.base_url = None if url is None else shown_url(url)
        """Where the model is, as it may be shown: without the credentials a URL can carry."""
        self.timeout = timeout
        self.max_retries = max_retries
        self.prices = prices
        self.params = params
        self.__key = api_key or os.environ.get("OPENAI_API_KEY") or None
        self._redactor = Redactor(self.__key)
        self._register()
        # One client per event loop: its pooled connections belong to the loop that
        # opened them (a notebook's kernel loop, the loop synchronous runs use, ...).
        self._clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Any] = weakref.WeakKeyDictionary()

    def _register(self) -> None:
        for secret in (self.__key, *url_credentials(self.__url or "")):
            if secret:
                register_secret(secret)  # (what a node or a tool quotes of it is redacted too)

    # A model travels to another process (a Ray worker) without its clients, whose connections
    # belong to this process's loops; there its key is a secret again.
    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        del state["_clients"]
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._clients = weakref.WeakKeyDictionary()
        self._register()

    def __repr__(self) -> str:
        where = f", base_url={self.base_url!r}" if self.base_url else ""
        return f"OpenAIModel({self.name!r}{where})"

    async def aclose(self) -> None:
        """Close this loop's HTTP connections (a new call reopens them)."""
        client = self._clients.pop(asyncio.get_running_loop(), None)
        if client is not None:
            await client.close()

    def close(self) -> None:
        """Close the connections of every loop this model was used on (from sync code,
        e.g. after ``g.invoke()`` calls; ``await model.aclose()`` inside a loop)."""
        for loop, client in list(self._clients.items()):
            del self._clients[loop]
            if loop.is_closed():
                continue
            if loop.is_running():
                asyncio.run_coroutine_threadsafe(client.close(), loop).result()
            else:
                loop.run_until_complete(client.close())

    async def __aenter__(self) -> OpenAIModel:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    def _connect(self) -> Any:
        loop = asyncio.get_running_loop()
        client = self._clients.get(loop)
        if client is None:
            if self.__key is None and self.__url is None:
                raise ModelError(
                    f"model {self.name!r} has no API key: pass OpenAIModel(..., api_key=...) or set "
                    "OPENAI_API_KEY (or base_url=... for a local server that needs none)"
                )
            import openai

            client = self._clients[loop] = openai.AsyncOpenAI(
                api_key=self.__key or "no-key",  # local servers ignore it; the client insists on one
                base_url=self.__url,
                timeout=self.timeout,
                max_retries=self.max_retries,
            )
        return client

    async def complete(self, request: ChatRequest, on_text: Callable[[str], None]) -> Completion:
        import openai

        client = self._connect()
        reply = _Reply(self._redactor.stream(on_text))
        try:
            await self._receive(client, request, reply)
        except openai.APIError as exc:
            failure = ModelError(self._redactor.error(self._explain(exc)))
        else:
            return reply.completion(self._redactor, self.name, self.prices)
        # Raised here, not in the except block, the error has no __context__: the openai exception
        # holds the request, whose headers hold the key.
        raise failure

    async def _receive(self, client: Any, request: ChatRequest, reply: _Reply) -> None:
        body: dict[str, Any] = {
            "model": self.name,
            "messages": [to_openai(message) for message in request.messages],
            "stream": True,
            "stream_options": {"include_usage": True},
            **self.params,
        }
        if request.tools:
            body["tools"] = list(request.tools)
            body["tool_choice"] = request.tool_choice
        stream = await client.chat.completions.create(**body)
        async for chunk in stream:
            if chunk.usage is not None:
                reply.usage = chunk.usage
            for choice in chunk.choices:
                delta = choice.delta
                if delta.content:
                    reply.text.append(delta.content)
                    reply.shown(delta.content)
                for part in delta.tool_calls or ():
                    call = reply.calls.setdefault(part.index, {"id": None, "name": "", "arguments": []})
                    if part.id:
                        call["id"] = part.id
                    if part.function is not None:
                        if part.function.name:
                            call["name"] += part.function.name
                        if part.function.arguments:
                            call["arguments"].append(part.function.arguments)
                if choice.finish_reason:
                    reply.finish = choice.finish_reason
        # Only a finished reply releases the text held back: one cut off mid-key shows none of it.
        reply.shown.end()

    def _explain(self, exc: Any) -> str:
        """What went wrong, in the endpoint's words where it has some (to be redacted)."""
        import openai

        if isinstance(exc, openai.AuthenticationError):
            return f"{self._where()} rejected the API key (401): check OPENAI_API_KEY"
        if isinstance(exc, openai.APITimeoutError):
            return (
                f"{self._where()} did not answer within {self.timeout:g} s "
                f"(after {self.max_retries} retries); raise OpenAIModel(timeout=...) for slow models"
            )
        if isinstance(exc, openai.APIConnectionError):
            return f"cannot reach {self._where()}: {exc.__cause__ or exc}"
        if isinstance(exc, openai.APIStatusError):
            return f"{self._where()} answered {exc.status_code}: {_message_of(exc)}"
        return f"{self._where()} broke off its answer: {_message_of(exc)}"  # an error event mid-stream

    def _where(self) -> str:
        return f"model {self.name!r} at {self.base_url or 'api.openai.com'}"


class _Reply:
    """A reply as it streams in: its text so far (shown as it comes), tool calls, usage."""

    def __init__(self, shown: RedactedStream) -> None:
        self.shown = shown
        self.text: list[str] = []
        self.calls: dict[int, dict[str, Any]] = {}
        self.usage: Any = None
        self.finish: str | None = None

    def completion(self, redactor: Redactor, model: str, prices: tuple[float, float] | None) -> Completion:
        prompt_tokens = self.usage.prompt_tokens if self.usage is not None else 0
        completion_tokens = self.usage.completion_tokens if self.usage is not None else 0
        return Completion(
            text=redactor.reply("".join(self.text)),
            tool_calls=tuple(_tool_call(index, call, redactor) for index, call in sorted(self.calls.items())),
            prompt_tokens=prompt_tokens,
            completion_tokens=completion_tokens,
            cost=cost_of(model, prompt_tokens, completion_tokens, prices),
            finish_reason=self.finish,
        )


def _message_of(exc: Any) -> str:
    body = exc.body
    if isinstance(body, dict):
        error = body.get("error", body)
        if isinstance(error, dict) and error.get("message"):
            return str(error["message"])
    return exc.message


def _tool_call(index: int, call: dict[str, Any], redactor: Redactor) -> ToolCallRequest:
    # The key is made of characters a JSON string holds as they are: the arguments stay valid JSON.
    raw = redactor.reply("".join(call["arguments"])) or "{}"
    try:
        arguments = json.loads(raw)
    except json.JSONDecodeError:
        arguments = None
    call_id = redactor.reply(call["id"] or f"call_{index}")
    name = redactor.reply(call["name"])
    if not isinstance(arguments, dict):
        return ToolCallRequest(id=call_id, name=name, raw_arguments=raw)
    return ToolCallRequest(id=call_id, name=name, arguments=arguments)
