"""Start a real redis-server on 127.0.0.1 for the tests, and stop it afterwards."""

from __future__ import annotations

import shutil
import socket
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextmanager
def redis_server(tmp_dir: str) -> Iterator[str]:
    """Yield the URL of a fresh, empty, non-persistent Redis listening on loopback only."""
    binary = shutil.which("redis-server")
    if binary is None:
        raise RuntimeError("redis-server is not installed: apt-get install redis-server (.ci/run does)")
    port = free_port()
    process = subprocess.Popen(
        [binary, "--bind", "127.0.0.1", "--port", str(port), "--save", "", "--appendonly", "no", "--dir", tmp_dir],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        for line in process.stdout:  # wait for the server's own "ready" line
            if "Ready to accept connections" in line:
                break
        else:
            raise RuntimeError(f"redis-server exited with {process.wait()}")
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        process.terminate()
        process.wait(timeout=10)
        if process.stdout is not None:
            process.stdout.close()
