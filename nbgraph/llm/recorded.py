"""Recorded model calls: what a model said, kept in a file and given back with no call made.

``recorded(model, path, mode=...)`` wraps any model (``name`` and ``async complete(request,
on_text)``). Each exchange is one line of an NDJSON file a person can read and diff: the
request as the endpoint gets it (model, parameters, messages, tools) and the reply (its
streamed pieces, text, tool calls, usage, cost), under a digest of the request. Everything is
passed through :func:`nbgraph.secrets.redact` before it is written, so a key never reaches
the file. The modes:

- ``"record"``: every call goes to the model and is kept; the file is started afresh.
- ``"replay"``: no call goes anywhere (no network, no key needed); a request the file does
  not hold fails, naming the node that asked and how the nearest recorded request differs.
- ``"missing"``: what the file holds is replayed; a request it does not hold goes to the
  model (given a key) and is added.

The n-th time a request is asked, it gets the n-th reply recorded for it, round and round:
the k samples of one input that a batch recorded come back as k samples.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import os
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from ..events import quoted
from ..secrets import redact_value
from .messages import ToolCallRequest, to_openai
from .model import ChatModel, ChatRequest, Completion, ModelError

__all__ = ["MODES", "Mode", "NotRecorded", "RecordedModel", "recorded"]

Mode = Literal["record", "replay", "missing"]
MODES: tuple[Mode, ...] = ("record", "replay", "missing")

HEADER = {"nbgraph": "recording", "version": 1}
"""The first line of every recording: what the file is, in which version of the format."""

_HELD = 10_000
"""The most messages whose canonical JSON a model holds on to (then it starts again)."""

_CONTEXT = 30
"""Characters shown on either side of where two texts part, in a miss's explanation."""


class NotRecorded(ModelError):
    """A replayed model was asked a request its recording does not hold."""


@dataclass(frozen=True, slots=True)
class _Reply:
    """A recorded reply, ready to be given back."""

    deltas: tuple[str, ...]
    completion: Completion


@dataclass(frozen=True, slots=True)
class _Asked:
    """A recorded request, as the file holds it: for finding the nearest one to a miss."""

    digest: str
    node: str | None
    body: Mapping[str, Any]


def recorded(model: Any, path: str | os.PathLike[str], *, mode: Mode = "missing") -> RecordedModel:
    """``model``, its exchanges kept in (or given back from) the NDJSON file at ``path``.

    Args:
        model: any model (an :class:`~nbgraph.OpenAIModel`, a :class:`~nbgraph.ScriptedModel`,
            ...). In ``"replay"`` mode it is never called, so an ``OpenAIModel`` needs no key;
            None there takes the model's name and parameters from the recording.
        path: the recording; its folder is made if need be.
        mode: ``"record"`` (call the model, keep every exchange, the file started afresh),
            ``"replay"`` (never call it) or ``"missing"`` (replay what is kept, call the
            model for what is not and keep it: the first run records, the next ones replay).

    Returns:
        A model to give a graph or a node (``Graph(model=...)``, ``llm_node(model=...)``).

    Raises:
        ValueError: an unknown mode; a file that is no recording (says which line); in
            replay mode, a file that does not exist.

    Example::

        model = recorded(OpenAIModel("gpt-4o-mini"), "runs/agent.ndjson", mode="record")
        g.invoke(question)  # calls the model; every exchange is a line of runs/agent.ndjson
        offline = recorded(OpenAIModel("gpt-4o-mini"), "runs/agent.ndjson", mode="replay")
    """
    return RecordedModel(model, path, mode=mode)


class RecordedModel:
    """A model whose exchanges are kept in a recording, or given back from it; see :func:`recorded`."""

    def __init__(self, model: Any, path: str | os.PathLike[str], *, mode: Mode = "missing") -> None:
        if mode not in MODES:
            raise ValueError(f"mode must be one of {', '.join(map(repr, MODES))}, got {mode!r}")
        if model is None and mode != "replay":
            raise TypeError(f"recorded(None, ...) can only replay: give the model to call in mode {mode!r}")
        if model is not None and not isinstance(model, ChatModel):
            raise TypeError(f"model must have `name` and `async complete()`, got {model!r}")
        self.model: Any = model
        """The model called for what the recording does not hold (None: replay only)."""
        self.path = Path(path)
        self.mode: Mode = mode
        self.replayed = 0
        """Calls answered from the recording by this object."""
        self.recorded = 0
        """Calls this object made to the model, and kept."""
        self._lock = threading.Lock()
        self._asked: dict[str, int] = {}
        self._canonical: dict[int, tuple[Any, str]] = {}
        if mode == "record":
            self._replies: dict[str, list[_Reply]] = {}
            self._requests: list[_Asked] = []
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.path.write_text(json.dumps(HEADER) + "\n", encoding="utf-8")
        else:
            self._replies, self._requests = _read(self.path, required=mode == "replay")
        name, params = (
            _one_model(self.path, self._requests)
            if model is None
            else (model.name, dict(getattr(model, "params", None) or {}))
        )
        self.name: str = name
        self.params: dict[str, Any] = params
        """The parameters sent with every request (an ``OpenAIModel``'s ``temperature=``, ...)."""

    @property
    def exchanges(self) -> int:
        """How many replies the recording holds now."""
        return sum(map(len, self._replies.values()))

    def __repr__(self) -> str:
        model = repr(self.model) if self.model is not None else f"None (replaying {self.name!r})"
        return f"recorded({model}, {str(self.path)!r}, mode={self.mode!r})"

    # Ray ships a graph's models to its workers: the recording travels with the model, so a
    # worker on another machine replays without the file; a worker that records appends to the
    # same path (a local cluster, a shared disk).
    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        del state["_lock"], state["_canonical"]
        if self.mode == "replay":
            state["model"] = None  # (never called; an OpenAIModel need not travel)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()
        self._canonical = {}

    async def aclose(self) -> None:
        """Close the wrapped model's connections on this loop, if it has any."""
        close = getattr(self.model, "aclose", None)
        if close is not None:
            await close()

    def close(self) -> None:
        """Close the wrapped model's connections, if it has any (from synchronous code)."""
        close = getattr(self.model, "close", None)
        if close is not None:
            close()

    async def complete(self, request: ChatRequest, on_text: Callable[[str], None]) -> Completion:
        if self.mode == "record":
            return await self._ask(request, on_text, _wire(self.name, self.params, request))
        reply = self._take(self._digest_of(request))
        body = None
        if reply is None:
            body = _wire(self.name, self.params, request)
            reply = self._take_redacted(body)
        if reply is not None:
            for piece in reply.deltas:
                on_text(piece)
            return reply.completion
        assert body is not None  # (made for the look-up that missed)
        if self.mode == "replay":
            raise NotRecorded(self._miss(request.node, body))
        try:
            return await self._ask(request, on_text, body)
        except ModelError as exc:
            raise NotRecorded(f"{self._miss(request.node, body)}; asking the model failed: {exc}") from None

    async def _ask(self, request: ChatRequest, on_text: Callable[[str], None], body: dict[str, Any]) -> Completion:
        """The model's reply, streamed on as it comes and kept."""
        pieces: list[str] = []

        def seen(piece: str) -> None:
            pieces.append(piece)
            on_text(piece)

        completion = await self.model.complete(request, seen)
        self._keep(request.node, body, pieces, completion)
        return completion

    def _digest_of(self, request: ChatRequest) -> str:
        """``_digest(_wire(self.name, self.params, request))``, each message's canonical JSON made
        once: a conversation grows by a message or two a call, and a replay runs at engine speed."""
        held = self._canonical
        if len(held) > _HELD:
            held.clear()

        def canonical(part: Any, wire: Callable[[Any], Any]) -> str:
            kept = held.get(id(part))
            if kept is None or kept[0] is not part:  # (an id is unique only while its object lives)
                kept = held[id(part)] = (part, _canonical(wire(part)))
            return kept[1]

        # The keys in sorted order, as json.dumps(sort_keys=True) writes them.
        text = '{"messages":[' + ",".join(canonical(m, to_openai) for m in request.messages) + "]"
        text += ',"model":' + _canonical(self.name)
        if self.params:
            text += ',"params":' + _canonical(self.params)
        if request.tools:
            text += ',"tool_choice":' + _canonical(request.tool_choice) + ',"tools":' + canonical(request.tools, list)
        return _hash(text + "}")

    def _take(self, digest: str) -> _Reply | None:
        replies = self._replies.get(digest)
        if not replies:
            return None
        with self._lock:
            n = self._asked.get(digest, 0)
            self._asked[digest] = n + 1
            self.replayed += 1
        return replies[n % len(replies)]

    def _take_redacted(self, body: dict[str, Any]) -> _Reply | None:
        """The reply to a request that held a secret: the file keeps it redacted, and its digest with it."""
        shown = redact_value(body)
        return self._take(_digest(shown)) if shown != body else None

    def _keep(self, node: str | None, body: dict[str, Any], pieces: list[str], completion: Completion) -> None:
        shown = redact_value(body)
        response: dict[str, Any] = {"deltas": pieces, "text": completion.text}
        if completion.tool_calls:
            response["tool_calls"] = [call.model_dump(exclude_defaults=True) for call in completion.tool_calls]
        response |= {
            "prompt_tokens": completion.prompt_tokens,
            "completion_tokens": completion.completion_tokens,
            "cost": completion.cost,
            "finish_reason": completion.finish_reason,
        }
        response = redact_value(response)
        digest = _digest(shown)
        line = json.dumps({"digest": digest, "node": node, "request": shown, "response": response}, ensure_ascii=False)
        # One write of one line to a file opened for appending: processes recording at once
        # (Ray's workers) never interleave their lines.
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, (line + "\n").encode("utf-8"))
        finally:
            os.close(fd)
        with self._lock:
            self._replies.setdefault(digest, []).append(_reply(response, f"{self.path} (just recorded)"))
            self._requests.append(_Asked(digest, node, shown))
            # This call is the first of its request: a replay of it later gives the next reply.
            self._asked[digest] = self._asked.get(digest, 0) + 1
            self.recorded += 1

    def _miss(self, node: str | None, body: dict[str, Any]) -> str:
        shown = redact_value(body)
        who = f"node {node!r}" if node else "a call outside any LLM node"
        head = f"{who} asked {self.name!r} for a reply that {self.path} does not hold (request {_digest(shown)})"
        fix = "with a key, mode='missing' records what is missing, mode='record' records afresh"
        if not self._requests:
            return f"{head}: the recording holds no exchange; {fix}"
        nearest = max(self._requests, key=lambda asked: _closeness(shown, node, asked))
        where = f"node {nearest.node!r}" if nearest.node else "no node"
        differences = "; ".join(_differences(nearest.body, shown)) or (
            "in nothing but the digest the file gives it: an exchange edited by hand keeps its old digest "
            "(delete its digest field, and it is computed)"
        )
        return (
            f"{head}. The nearest recorded request ({where}, request {nearest.digest}) differs: {differences}. "
            f"{fix.capitalize()}"
        )


# -- the request's canonical form ---------------------------------------------------------


def _wire(name: str, params: Mapping[str, Any], request: ChatRequest) -> dict[str, Any]:
    """The request as the endpoint would get it (what the digest covers): not the messages' ids,
    not the node that asks."""
    body: dict[str, Any] = {"model": name}
    if params:
        body["params"] = dict(params)
    body["messages"] = [to_openai(message) for message in request.messages]
    if request.tools:
        body["tools"] = list(request.tools)
        body["tool_choice"] = request.tool_choice
    return body


def _digest(body: Mapping[str, Any]) -> str:
    return _hash(_canonical(body))


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=_jsonable)


def _hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def _jsonable(value: Any) -> Any:
    from pydantic_core import to_jsonable_python

    return to_jsonable_python(value, fallback=str)


# -- reading a recording --------------------------------------------------------------------


def _read(path: Path, *, required: bool) -> tuple[dict[str, list[_Reply]], list[_Asked]]:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        if required:
            raise ValueError(
                f"there is no recording at {path}: make one with recorded(model, {str(path)!r}, mode='record') "
                "(or mode='missing', which records what is not there yet)"
            ) from None
        text = ""
    if not text.strip():
        if required:
            raise ValueError(f"{path} is empty: it holds no nbgraph recording")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(HEADER) + "\n", encoding="utf-8")
        return {}, []
    replies: dict[str, list[_Reply]] = {}
    requests: list[_Asked] = []
    headed = False
    for number, line in enumerate(text.split("\n"), 1):  # (not splitlines: a text may hold U+2028)
        if not line.strip():
            continue
        where = f"{path}, line {number}"
        try:
            data = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ValueError(f"{where} is not JSON ({exc.msg}, column {exc.colno}): {quoted(line)}") from None
        if data == HEADER:
            headed = True  # (two processes that began one file at once may both have written it)
            continue
        if not headed:
            raise ValueError(
                f"{path} is not an nbgraph recording: its first line is {quoted(line)}, not {json.dumps(HEADER)}"
            )
        if not isinstance(data, dict) or not isinstance(data.get("request"), dict):
            raise ValueError(f"{where}: an exchange is an object with a 'request' and a 'response', got {quoted(line)}")
        body = data["request"]
        # (A line written by hand may leave the digest out: it is the request's.)
        digest = data["digest"] if isinstance(data.get("digest"), str) else _digest(body)
        replies.setdefault(digest, []).append(_reply(data.get("response"), where))
        node = data.get("node")
        requests.append(_Asked(digest, node if isinstance(node, str) else None, body))
    return replies, requests


def _reply(response: Any, where: str) -> _Reply:
    if not isinstance(response, dict):
        raise ValueError(f"{where}: the exchange's 'response' must be an object, got {type(response).__name__}")
    try:
        calls = tuple(ToolCallRequest.model_validate(call) for call in response.get("tool_calls") or ())
        text = str(response.get("text") or "")
        deltas = response.get("deltas")
        completion = Completion(
            text=text,
            tool_calls=calls,
            prompt_tokens=int(response.get("prompt_tokens") or 0),
            completion_tokens=int(response.get("completion_tokens") or 0),
            cost=float(response.get("cost") or 0.0),
            finish_reason=response.get("finish_reason"),
        )
    except (ValueError, TypeError) as exc:  # (pydantic's ValidationError is a ValueError)
        raise ValueError(f"{where}: the exchange's response does not fit: {exc}") from None
    return _Reply(tuple(map(str, deltas)) if isinstance(deltas, list) else ((text,) if text else ()), completion)


def _one_model(path: Path, requests: Sequence[_Asked]) -> tuple[str, dict[str, Any]]:
    """The model name and parameters every request of a recording was sent with."""
    seen = {json.dumps([asked.body.get("model"), asked.body.get("params") or {}], sort_keys=True) for asked in requests}
    if len(seen) != 1:
        found = ", ".join(sorted(seen)) or "none"
        raise ValueError(
            f"recorded(None, {str(path)!r}) replays the one model a recording was made with, and it holds "
            f"{len(seen)} ({found}): give the model to replay, e.g. recorded(OpenAIModel(name), path, mode='replay'), "
            "which needs no key"
        )
    name, params = json.loads(seen.pop())
    return str(name), dict(params)


# -- explaining a miss ----------------------------------------------------------------------


def _closeness(body: Mapping[str, Any], node: str | None, asked: _Asked) -> tuple[bool, int, bool, float]:
    """How near a recorded request is to ``body``: the same node; more messages in common from
    the start; the same model, parameters and tools; then the first differing message's text."""
    mine, theirs = body.get("messages") or [], asked.body.get("messages") or []
    common = _common_start(mine, theirs)
    alike = all(body.get(key) == asked.body.get(key) for key in ("model", "params", "tools", "tool_choice"))
    ratio = 0.0
    if common < min(len(mine), len(theirs)):
        a, b = _content(theirs[common]), _content(mine[common])
        ratio = difflib.SequenceMatcher(None, a[:2000], b[:2000], autojunk=False).ratio()
    return asked.node == node, common, alike, ratio


def _common_start(a: Sequence[Any], b: Sequence[Any]) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


def _differences(recorded: Mapping[str, Any], asked: Mapping[str, Any]) -> list[str]:
    """What tells ``asked`` from ``recorded``, each part in a few words."""
    found: list[str] = []
    if recorded.get("model") != asked.get("model"):
        found.append(f"model: recorded {recorded.get('model')!r}, asked {asked.get('model')!r}")
    was, now = recorded.get("params") or {}, asked.get("params") or {}
    for name in sorted(set(was) | set(now)):
        if was.get(name) != now.get(name):
            found.append(
                f"parameter {name}: recorded {_shown(was.get(name, 'unset'))}, asked {_shown(now.get(name, 'unset'))}"
            )
    tools_was, tools_now = _tool_names(recorded), _tool_names(asked)
    if tools_was != tools_now:
        found.append(f"tools: recorded [{', '.join(tools_was)}], asked [{', '.join(tools_now)}]")
    elif recorded.get("tools") != asked.get("tools"):
        changed = [
            name
            for name, a, b in zip(tools_was, recorded.get("tools") or (), asked.get("tools") or (), strict=False)
            if a != b
        ]
        found.append(f"the definition of tool {', '.join(map(repr, changed))}")
    elif recorded.get("tool_choice") != asked.get("tool_choice"):
        found.append(f"tool_choice: recorded {recorded.get('tool_choice')!r}, asked {asked.get('tool_choice')!r}")
    found.extend(_message_difference(recorded.get("messages") or [], asked.get("messages") or []))
    return found


def _message_difference(recorded: Sequence[Any], asked: Sequence[Any]) -> list[str]:
    common = _common_start(recorded, asked)
    if common == len(recorded) == len(asked):
        return []
    if common == len(recorded):
        extra = asked[common]
        return [
            f"{len(asked)} messages asked, {len(recorded)} recorded: message {common} ({_role(extra)}) is new, "
            f"{quoted(_content(extra))}"
        ]
    if common == len(asked):
        gone = recorded[common]
        return [
            f"{len(asked)} messages asked, {len(recorded)} recorded: the recording goes on with message {common} "
            f"({_role(gone)}), {quoted(_content(gone))}"
        ]
    was, now = recorded[common], asked[common]
    where = f"message {common} ({_role(now)})"
    if _role(was) != _role(now):
        return [f"{where}: the recording has a {_role(was)} message there"]
    a, b = _content(was), _content(now)
    if a != b:
        shown_a, shown_b = _parted(a, b)
        return [f"{where}: recorded {shown_a}, asked {shown_b}"]
    return [f"{where}: recorded {_shown(was)}, asked {_shown(now)}"]  # its tool calls, or its tool call id


def _parted(a: str, b: str) -> tuple[str, str]:
    """The two texts around where they part, a few words on either side."""
    start = len(os.path.commonprefix([a, b]))
    end = 0
    while end < min(len(a), len(b)) - start and a[-1 - end] == b[-1 - end]:
        end += 1
    lo = max(0, start - _CONTEXT)
    if lo:
        space = a.find(" ", lo, start)  # (begin at a word)
        lo = space + 1 if space != -1 else lo

    def around(text: str) -> str:
        hi = min(len(text), len(text) - end + _CONTEXT)
        return ("\u2026" if lo else "") + quoted(text[lo:hi], 120) + ("\u2026" if hi < len(text) else "")

    return around(a), around(b)


def _tool_names(body: Mapping[str, Any]) -> list[str]:
    return [str((tool.get("function") or {}).get("name", "?")) for tool in body.get("tools") or ()]


def _role(message: Any) -> str:
    return str(message.get("role", "?")) if isinstance(message, dict) else "?"


def _content(message: Any) -> str:
    content = message.get("content") if isinstance(message, dict) else None
    return content if isinstance(content, str) else json.dumps(content)


def _shown(value: Any) -> str:
    return quoted(json.dumps(value, ensure_ascii=False, default=str), 100)
