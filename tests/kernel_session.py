"""A real Jupyter kernel driven message by message, as a front-end drives it: cells sent without
waiting for them, what the kernel publishes read as it comes, and clicks in a view sent as the
browser sends them (a ``comm_msg`` on the shell channel), while a cell runs or between cells."""

from __future__ import annotations

import os
import queue
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import ipykernel

WIDGET = "application/vnd.jupyter.widget-view+json"

KERNEL_HEARS_WHILE_AWAITING = ipykernel.version_info >= (7, 4)
"""Whether this environment's kernel reads a click while a cell awaits (ipykernel 7.4 and
later); the kernel the tests start is this environment's (the ``python3`` kernel spec)."""


class Kernel:
    def __init__(self, client: Any) -> None:
        self.client = client
        self.published: list[dict[str, Any]] = []  # every iopub message so far

    def send(self, code: str) -> str:
        """Send a cell; its message id (the kernel runs it when it gets to it)."""
        return self.client.execute(code)

    def reply(self, msg_id: str, timeout: float = 60) -> dict[str, Any]:
        """The execute reply to ``msg_id`` (its content), once the cell has ended."""
        end = time.monotonic() + timeout
        while True:
            left = end - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"no reply to the cell within {timeout} s")
            message = self.client.get_shell_msg(timeout=left)
            if message["parent_header"].get("msg_id") == msg_id:
                self._drain()
                return message["content"]

    def run(self, code: str, timeout: float = 60) -> str:
        """Run a cell to its end; what it printed. Fails on an error."""
        msg_id = self.send(code)
        content = self.reply(msg_id, timeout)
        assert content["status"] == "ok", content
        return self.printed(msg_id)

    def printed(self, msg_id: str) -> str:
        self._drain()
        return "".join(
            m["content"]["text"]
            for m in self.published
            if m["msg_type"] == "stream" and m["parent_header"].get("msg_id") == msg_id
        )

    def _drain(self) -> None:
        while True:
            try:
                self.published.append(self.client.get_iopub_msg(timeout=0.2))
            except queue.Empty:
                return

    def wait_for(self, found: Callable[[dict[str, Any]], Any], timeout: float = 30) -> Any:
        """The first published message for which ``found`` gives a value (not None), read as it comes."""
        for message in self.published:
            if (value := found(message)) is not None:
                return value
        end = time.monotonic() + timeout
        while True:
            left = end - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"the kernel published nothing awaited within {timeout} s")
            try:
                message = self.client.get_iopub_msg(timeout=left)
            except queue.Empty:
                continue
            self.published.append(message)
            if (value := found(message)) is not None:
                return value

    def view_of(self, msg_id: str, timeout: float = 30) -> str:
        """The model id of the view a cell displayed."""

        def model(message: dict[str, Any]) -> str | None:
            if message["msg_type"] == "display_data" and message["parent_header"].get("msg_id") == msg_id:
                return message["content"]["data"].get(WIDGET, {}).get("model_id")
            return None

        return self.wait_for(model, timeout)

    def view_update(self, model_id: str, key: str, holds: Callable[[Any], bool], timeout: float = 30) -> Any:
        """The first value of the view's trait ``key`` sent to the browser for which ``holds`` is true."""

        def update(message: dict[str, Any]) -> Any:
            content = message["content"]
            if message["msg_type"] != "comm_msg" or content.get("comm_id") != model_id:
                return None
            state = content["data"].get("state", {})
            if key in state and holds(state[key]):
                return state[key]
            return None

        return self.wait_for(update, timeout)

    def pause_shown(self, model_id: str, timeout: float = 30) -> dict[str, Any]:
        """The first pause the view was sent to show."""
        return self.view_update(model_id, "pending", bool, timeout)[0]

    def click(self, model_id: str, content: dict[str, Any]) -> None:
        """What a button in the view sends: a custom message to the view's model."""
        message = self.client.session.msg(
            "comm_msg", {"comm_id": model_id, "data": {"method": "custom", "content": content}}
        )
        self.client.shell_channel.send(message)


@contextmanager
def kernel(**env: str) -> Iterator[Kernel]:
    """A fresh ``python3`` kernel whose environment is this one's with ``env`` (and no auto-answer)."""
    from jupyter_client.manager import start_new_kernel

    environ = {k: v for k, v in os.environ.items() if k != "NBGRAPH_AUTO_ANSWER"}
    environ.update(env)
    manager, client = start_new_kernel(kernel_name="python3", env=environ)
    try:
        yield Kernel(client)
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)
