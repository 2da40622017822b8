"""A real OpenAI-compatible chat-completions server on 127.0.0.1, for tests and benchmarks.

Tests script the replies (text, tool calls, errors, delays) and point the real `openai.AsyncOpenAI`
client at `server.base_url`, so the whole HTTP path (SSE parsing, retries, timeouts, connection
reuse) is exercised instead of a mocked transport. Stdlib only, so a benchmark can also run it as a
separate process:

    python tests/openai_server.py --port 0 --tokens 200   # prints "READY http://127.0.0.1:PORT/v1"
"""

from __future__ import annotations

import argparse
import itertools
import json
import re
import socket
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

Request = dict[str, Any]
"""A chat-completions request body, as the client sent it."""


@dataclass
class Reply:
    """One scripted answer to one chat-completions request."""

    text: str = ""
    """The assistant's content."""
    tool_calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    """(function name, arguments) pairs; the server gives each call an id "call_<n>", unique per server."""
    call_ids: list[str | None] | None = None
    """The ids to send with the tool calls instead, one per call, None for a call sent with no id at all (as
    some providers do); None: the server's own."""
    status: int = 200
    """Anything but 200 answers with an OpenAI-style error body instead, `text` being its message.

    Providers quote the caller's key in some errors, so in an error's message "{key}" stands for the bearer key
    the request came with and "{masked_key}" for that key masked the way OpenAI prints it: its first 8
    characters, asterisks, its last 4 ("sk-proj-********abcd").
    """
    stream_error: str = ""
    """A streamed answer sends its text, then this error as an `{"error": ...}` chunk instead of finishing (as
    OpenRouter reports a failure mid-answer); "{key}" and "{masked_key}" as in an error's message."""
    delay: float = 0.0
    """Seconds to wait before answering, to make a client time out."""
    chunk_chars: int = 4
    """Streamed content goes out in pieces of this many characters, so a stream has several deltas."""
    prompt_tokens: int | None = None
    """Reported usage; None estimates it from the request's messages (chars // 4 + 1)."""
    completion_tokens: int | None = None
    """Reported usage; None counts one per streamed piece and tool call (len(text) // 4 + 1 unstreamed)."""

    def __post_init__(self) -> None:
        if self.chunk_chars < 1:
            raise ValueError("chunk_chars must be at least 1")
        if self.call_ids is not None and len(self.call_ids) != len(self.tool_calls):
            raise ValueError(f"call_ids gives {len(self.call_ids)} ids for {len(self.tool_calls)} tool calls")

    def pieces(self) -> list[str]:
        """The content deltas of a streamed answer."""
        return [self.text[i : i + self.chunk_chars] for i in range(0, len(self.text), self.chunk_chars)]


class OpenAIServer:
    """Serves POST /v1/chat/completions (plain or streamed) and GET /v1/models on a free loopback port.

    Each request takes the next scripted Reply, or the default one when the script is empty.
    Every request body and its headers are recorded, so tests can assert what the client sent.
    """

    base_url: str
    """"http://127.0.0.1:PORT/v1", set by start()."""

    def __init__(self, default: Reply | Callable[[Request], Reply] | None = None, *, port: int = 0) -> None:
        """`default` answers when the script is empty; a callable gets the request body (e.g. to echo it)."""
        self.requests: list[Request] = []
        self.headers: list[dict[str, str]] = []
        self._default = Reply(text="ok") if default is None else default
        self._port = port
        self._script: deque[Reply] = deque()
        self._lock = threading.Lock()
        self._closing = threading.Event()
        self._completion_ids = itertools.count(1)
        self._call_ids = itertools.count(1)
        self._httpd: _HTTPServer | None = None
        self._thread: threading.Thread | None = None

    def script(self, *replies: Reply) -> None:
        """Queue replies; each request consumes the oldest one."""
        with self._lock:
            self._script.extend(replies)

    def start(self) -> OpenAIServer:
        """Bind the port and serve from a daemon thread (binding here leaks no socket if never started)."""
        self._httpd = _HTTPServer(self, self._port)
        self.base_url = f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"
        # A short poll interval keeps close() quick: shutdown() waits for serve_forever's next poll.
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, name="openai-server", daemon=True
        )
        self._thread.start()
        return self

    def close(self) -> None:
        """Stop serving and wait for every thread, so no socket or thread outlives the test."""
        httpd, self._httpd = self._httpd, None
        if httpd is None:
            return
        self._closing.set()  # cuts short any Reply.delay being waited out
        httpd.shutdown()  # returns once serve_forever has stopped accepting
        httpd.end_connections()  # idle keep-alive connections would otherwise block server_close forever
        httpd.server_close()  # closes the listening socket and joins the handler threads
        assert self._thread is not None
        self._thread.join()

    def __enter__(self) -> OpenAIServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _record(self, request: Request, headers: dict[str, str]) -> None:
        with self._lock:
            self.requests.append(request)
            self.headers.append(headers)

    def _next_reply(self, request: Request) -> Reply:
        with self._lock:
            if self._script:
                return self._script.popleft()
        # Outside the lock: a callable default may itself look at the server.
        return self._default(request) if callable(self._default) else self._default

    def _models(self) -> list[str]:
        """The model names requested so far, or one placeholder, so clients that list models see something."""
        with self._lock:
            seen = [r["model"] for r in self.requests if isinstance(r.get("model"), str)]
        return list(dict.fromkeys(seen)) or ["scripted"]


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True  # a handler stuck on a slow client never keeps the interpreter alive
    # Connections a batch opens at once wait to be accepted, as at a real endpoint (socketserver's 5
    # refuses the rest when the machine is busy).
    request_queue_size = 128

    def __init__(self, owner: OpenAIServer, port: int) -> None:
        self.owner = owner
        self._connections: set[socket.socket] = set()
        self._connections_lock = threading.Lock()
        super().__init__(("127.0.0.1", port), _Handler)

    def process_request(self, request: Any, client_address: Any) -> None:
        # Registered on the accepting thread, so once shutdown() returns, end_connections() sees them all.
        with self._connections_lock:
            self._connections.add(request)
        super().process_request(request, client_address)

    def shutdown_request(self, request: Any) -> None:
        with self._connections_lock:  # never end_connections() on a socket being closed here
            self._connections.discard(request)
            super().shutdown_request(request)

    def end_connections(self) -> None:
        """Shut every open connection down, which ends its handler's wait for another keep-alive request."""
        with self._connections_lock:
            for connection in self._connections:
                try:
                    connection.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that hung up (it timed out, or close() ended the connection) is expected, not a bug.
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive like api.openai.com, so every response is length-delimited
    disable_nagle_algorithm = True  # each SSE chunk leaves at once, not after the client's delayed ACK
    server: _HTTPServer

    def log_message(self, format: str, *args: Any) -> None:
        """Silent: stderr belongs to the test run, stdout to the benchmark's READY line."""

    def do_GET(self) -> None:
        if urlsplit(self.path).path.rstrip("/") != "/v1/models":
            return self._send_error(404, f"no route GET {self.path}")
        names = self.server.owner._models()
        models = [{"id": name, "object": "model", "created": 0, "owned_by": "tests"} for name in names]
        self._send_json(200, {"object": "list", "data": models})

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if urlsplit(self.path).path != "/v1/chat/completions":
            return self._send_error(404, f"no route POST {self.path}")
        try:
            request = json.loads(body)
        except ValueError:
            return self._send_error(400, "the body is not valid JSON")
        if not isinstance(request, dict):
            return self._send_error(400, "the body must be a JSON object")
        owner = self.server.owner
        owner._record(request, {name.lower(): value for name, value in self.headers.items()})
        for required in ("model", "messages"):
            if required not in request:
                return self._send_error(400, f"'{required}' is a required property")
        for i, offered in enumerate(request.get("tools") or ()):
            name = (offered.get("function") or {}).get("name", "")
            if not _TOOL_NAME.fullmatch(name):
                # As OpenAI does: one tool's bad name refuses the whole request.
                return self._send_error(
                    400,
                    f"Invalid 'tools[{i}].function.name': string does not match pattern. Expected a string "
                    f"that matches the pattern '^[a-zA-Z0-9_-]{{1,64}}$'.",
                )
        reply = owner._next_reply(request)
        if owner._closing.wait(reply.delay):  # the server is closing: answer nothing
            self.close_connection = True
            return
        key = _bearer_key(self.headers.get("Authorization") or "")
        if reply.status != 200:
            # The SDK ignores a retry-after of 0 (it only honours delays > 0) and backs off ~0.5 s instead;
            # retry-after-ms, which it reads first, makes its retry near-instant.
            retry = [("retry-after", "0"), ("retry-after-ms", "1")] if reply.status == 429 else []
            message = _quoting_key(reply.text, key) or f"scripted error {reply.status}"
            return self._send_error(reply.status, message, retry)
        ids = (
            reply.call_ids
            if reply.call_ids is not None
            else [f"call_{next(owner._call_ids)}" for _ in reply.tool_calls]
        )
        calls = [(call_id, name, json.dumps(args)) for call_id, (name, args) in zip(ids, reply.tool_calls, strict=True)]
        completion_id = f"chatcmpl-{next(owner._completion_ids)}"
        if request.get("stream") is True:
            self._send_events(_chunks(completion_id, request, reply, calls, _quoting_key(reply.stream_error, key)))
        else:
            self._send_json(200, _completion(completion_id, request, reply, calls))

    def _send_json(self, status: int, body: dict[str, Any], headers: list[tuple[str, str]] | None = None) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for name, value in headers or []:
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def _send_error(self, status: int, message: str, headers: list[tuple[str, str]] | None = None) -> None:
        """OpenAI's error shape, which the SDK turns into the exception's `message`, `type` and `code`."""
        kind = "server_error" if status >= 500 else "requests" if status == 429 else "invalid_request_error"
        code = {401: "invalid_api_key", 429: "rate_limit_exceeded"}.get(status)
        self._send_json(status, {"error": {"message": message, "type": kind, "param": None, "code": code}}, headers)

    def _send_events(self, events: Iterator[dict[str, Any]]) -> None:
        """Server-sent events in chunked encoding: length-delimited, so the connection stays reusable."""
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream; charset=utf-8")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        for event in events:
            self._write_chunk(f"data: {json.dumps(event)}\n\n".encode())
        self._write_chunk(b"data: [DONE]\n\n")
        self.wfile.write(b"0\r\n\r\n")

    def _write_chunk(self, data: bytes) -> None:
        # wfile is unbuffered (StreamRequestHandler.wbufsize == 0): each event reaches the client as it is written.
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))


Call = tuple[str | None, str, str]
"""(id, function name, arguments JSON) of one tool call in an answer; a None id is not sent."""

_TOOL_NAME = re.compile(r"[a-zA-Z0-9_-]{1,64}")
"""The tool names OpenAI's API accepts."""


def _completion(completion_id: str, request: Request, reply: Reply, calls: list[Call]) -> dict[str, Any]:
    """A `chat.completion` object, as a non-streamed request gets it."""
    message: dict[str, Any] = {"role": "assistant", "content": reply.text or (None if calls else "")}
    if calls:
        message["tool_calls"] = [
            _with_id({"type": "function", "function": {"name": name, "arguments": arguments}}, call_id)
            for call_id, name, arguments in calls
        ]
    return {
        "id": completion_id,
        "object": "chat.completion",
        "created": int(time.time()),
        "model": request["model"],
        "choices": [
            {"index": 0, "message": message, "logprobs": None, "finish_reason": "tool_calls" if calls else "stop"}
        ],
        "usage": _usage(request, reply, len(reply.text) // 4 + 1),
    }


def _chunks(
    completion_id: str, request: Request, reply: Reply, calls: list[Call], error: str = ""
) -> Iterator[dict[str, Any]]:
    """The `chat.completion.chunk` objects of a streamed answer, split the way OpenAI splits them; an `error`
    replaces everything after the text."""
    created = int(time.time())
    base = {"id": completion_id, "object": "chat.completion.chunk", "created": created, "model": request["model"]}

    def chunk(delta: dict[str, Any], finish_reason: str | None = None) -> dict[str, Any]:
        return {**base, "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}]}

    yield chunk({"role": "assistant", "content": ""})
    pieces = reply.pieces()
    for piece in pieces:
        yield chunk({"content": piece})
    if error:
        yield {"error": {"message": error, "type": "server_error", "param": None, "code": None}}
        return
    for index, (call_id, name, arguments) in enumerate(calls):
        # The first delta of a call names it; its arguments follow in parts carrying only the index.
        function = {"name": name, "arguments": ""}
        yield chunk({"tool_calls": [_with_id({"index": index, "type": "function", "function": function}, call_id)]})
        half = len(arguments) // 2  # json.dumps gives at least "{}", so both halves are non-empty
        for part in (arguments[:half], arguments[half:]):
            yield chunk({"tool_calls": [{"index": index, "function": {"arguments": part}}]})
    yield chunk({}, "tool_calls" if calls else "stop")
    if (request.get("stream_options") or {}).get("include_usage"):
        yield {**base, "choices": [], "usage": _usage(request, reply, len(pieces) + len(calls))}


def _with_id(call: dict[str, Any], call_id: str | None) -> dict[str, Any]:
    """A tool call's delta or message, with its id unless the reply sends none."""
    return call if call_id is None else {"id": call_id, **call}


def _bearer_key(authorization: str) -> str:
    scheme, _, key = authorization.partition(" ")
    return key if scheme.lower() == "bearer" else ""


def _quoting_key(message: str, key: str) -> str:
    """`message` with "{key}" and "{masked_key}" filled in (plain replacement: other braces stay as they are)."""
    masked = key[:8] + "*" * max(len(key) - 12, 4) + key[-4:]
    return message.replace("{key}", key).replace("{masked_key}", masked)


def _usage(request: Request, reply: Reply, completion_estimate: int) -> dict[str, int]:
    prompt = reply.prompt_tokens if reply.prompt_tokens is not None else _prompt_chars(request) // 4 + 1
    completion = reply.completion_tokens if reply.completion_tokens is not None else completion_estimate
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}


def _prompt_chars(request: Request) -> int:
    """Characters of all message contents, whether a string or a list of text parts."""
    total = 0
    for message in request.get("messages") or []:
        content = message.get("content") if isinstance(message, dict) else None
        if isinstance(content, str):
            total += len(content)
        elif isinstance(content, list):
            total += sum(len(part.get("text") or "") for part in content if isinstance(part, dict))
    return total


def main(argv: list[str] | None = None) -> None:
    """Serve a fixed streamed answer of exactly --tokens pieces until killed, for a benchmark in another process."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port")
    parser.add_argument("--tokens", type=int, default=200, help="content pieces per answer")
    args = parser.parse_args(argv)
    with OpenAIServer(Reply(text="tok " * args.tokens, chunk_chars=4), port=args.port) as server:
        print(f"READY {server.base_url}", flush=True)
        try:
            threading.Event().wait()
        except KeyboardInterrupt:
            pass


if __name__ == "__main__":
    main()
