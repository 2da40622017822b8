"""Real faults for durability tests: a small tmpfs that fills up, a redis-server that is
killed and started again, and a network path to Redis that loses one reply.

Nothing here is a mock: the tmpfs is mounted (the tests run as root), the server is a
real redis-server process, and the proxy forwards real bytes between the client and it.
"""

from __future__ import annotations

import errno
import shutil
import socket
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from redis_server import free_port


@contextmanager
def tmpfs(directory: Path, size: str) -> Iterator[Path]:
    """A tmpfs of ``size`` mounted at ``directory`` for the block's duration."""
    directory.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(directory)], check=True)
    try:
        yield directory
    finally:
        if subprocess.run(["umount", str(directory)], capture_output=True, check=False).returncode != 0:
            # A SQLite connection kept by another thread (the lease renewer's) still holds a file.
            subprocess.run(["umount", "-l", str(directory)], check=True)


def fill_up(path: Path) -> None:
    """Write to ``path`` until the disk has not one byte left (someone else's log, say)."""
    with open(path, "ab", buffering=0) as out:
        for chunk in (65536, 4096, 256, 1):
            try:
                while True:
                    out.write(b"\0" * chunk)
            except OSError as exc:
                assert exc.errno == errno.ENOSPC, exc


class RedisProcess:
    """A redis-server on a loopback port of its own that can be killed and started again
    on the same port: empty again, or (``appendonly``) with every write it acknowledged,
    from its append-only file synced at each write."""

    def __init__(self, directory: Path, *, appendonly: bool = False) -> None:
        binary = shutil.which("redis-server")
        if binary is None:
            raise RuntimeError("redis-server is not installed: apt-get install redis-server")
        self.binary = binary
        self.directory = directory
        self.appendonly = appendonly
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.process: subprocess.Popen[str] | None = None

    def start(self) -> None:
        persistence = ["--appendonly", "yes", "--appendfsync", "always"] if self.appendonly else ["--appendonly", "no"]
        process = self.process = subprocess.Popen(
            [
                self.binary,
                "--bind",
                "127.0.0.1",
                "--port",
                str(self.port),
                "--save",
                "",
                *persistence,
                "--dir",
                str(self.directory),
            ],
            stdout=subprocess.PIPE,
            text=True,
        )
        assert process.stdout is not None
        for line in process.stdout:  # the server's own "ready" line
            if "Ready to accept connections" in line:
                return
        raise RuntimeError(f"redis-server exited with {process.wait()}")

    def kill(self) -> None:
        """SIGKILL: the server gets no chance to write anything more."""
        process, self.process = self.process, None
        if process is None:
            return
        process.kill()
        process.wait(timeout=10)
        if process.stdout is not None:
            process.stdout.close()


class ReplyLosingProxy:
    """A TCP proxy in front of a Redis server that, once armed, lets the next command
    holding ``marker`` reach the server and then cuts the connection before the reply
    gets back: the write lands, and the client cannot know it."""

    def __init__(self, upstream_port: int, marker: bytes) -> None:
        self.upstream_port = upstream_port
        self.marker = marker
        self.armed = threading.Event()
        self.lost = 0
        """Replies lost so far."""
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self._lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return  # closed
            try:
                server = socket.create_connection(("127.0.0.1", self.upstream_port))
            except OSError:  # the server was stopped (the test is ending): the client sees its connection closed
                client.close()
                continue
            cut = threading.Event()
            threading.Thread(target=self._requests, args=(client, server, cut), daemon=True).start()
            threading.Thread(target=self._replies, args=(server, client, cut), daemon=True).start()

    def _requests(self, client: socket.socket, server: socket.socket, cut: threading.Event) -> None:
        while chunk := _receive(client):
            with self._lock:
                if self.armed.is_set() and self.marker in chunk:
                    self.armed.clear()
                    cut.set()  # its reply is the one to lose
            server.sendall(chunk)
        _close(client, server)

    def _replies(self, server: socket.socket, client: socket.socket, cut: threading.Event) -> None:
        while chunk := _receive(server):
            if cut.is_set():
                self.lost += 1
                break
            client.sendall(chunk)
        _close(client, server)

    def close(self) -> None:
        self._listener.close()


def _receive(sock: socket.socket) -> bytes:
    try:
        return sock.recv(65536)
    except OSError:
        return b""


def _close(*socks: socket.socket) -> None:
    for sock in socks:
        try:
            sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        sock.close()
