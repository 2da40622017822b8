"""Arize Phoenix, a real OTLP collector, for the tracing tests: installed in a virtual
environment of its own and started as a process on loopback.

Phoenix is a server the tests talk to, not a library they import. Installed beside pytest,
its packages register a pytest plugin that imports the whole server (and its dependencies'
import-time warnings) into the test process. Here it lives in a cached environment, built
once (``python tests/phoenix_server.py`` builds it ahead, as ``.ci/run`` does while other
work runs; a test that needs it meanwhile waits for the build).
"""

from __future__ import annotations

import fcntl
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

SPEC = "arize-phoenix>=20"
"""What the environment installs: the collector the tracing tests read spans back from."""


def home() -> Path:
    """Where the environment lives: ``$NBGRAPH_PHOENIX_HOME``, else under the user's cache."""
    chosen = os.environ.get("NBGRAPH_PHOENIX_HOME")
    if chosen:
        return Path(chosen)
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return cache / "nbgraph-tests" / "phoenix"


def python() -> Path:
    """The environment's Python, with Phoenix installed: built now unless it is already there.

    Another process building it at the same moment (the test command's other worker, or
    ``.ci/run`` ahead of the tests) holds a lock on it; this one waits for that build.
    """
    where = home()
    where.mkdir(parents=True, exist_ok=True)
    interpreter = where / "env" / "bin" / "python"
    built = where / "built"
    with open(where / "lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (built.exists() and built.read_text() == SPEC and interpreter.exists()):
            built.unlink(missing_ok=True)
            log = where / "build.log"
            with open(log, "w") as out:
                steps = [
                    [sys.executable, "-m", "venv", "--clear", str(where / "env")],
                    [str(interpreter), "-m", "pip", "install", "-q", "--disable-pip-version-check", SPEC],
                ]
                for step in steps:
                    if subprocess.run(step, stdout=out, stderr=subprocess.STDOUT).returncode:
                        raise RuntimeError(f"could not install {SPEC} in {where / 'env'}: {log.read_text()[-3000:]}")
            built.write_text(SPEC)
    return interpreter


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextmanager
def phoenix_server(data: Path) -> Iterator[str]:
    """A Phoenix server on loopback keeping its data in ``data``: its base URL once it answers."""
    port = free_port()
    env = {
        **os.environ,
        "PHOENIX_HOST": "127.0.0.1",
        "PHOENIX_PORT": str(port),
        "PHOENIX_GRPC_PORT": str(free_port()),
        "PHOENIX_WORKING_DIR": str(data),
        "PHOENIX_TELEMETRY_ENABLED": "false",
    }
    data.mkdir(parents=True, exist_ok=True)
    log_path = data / "phoenix.log"
    with open(log_path, "wb") as log:
        server = subprocess.Popen(
            [str(python()), "-m", "phoenix.server.main", "serve"], env=env, stdout=log, stderr=subprocess.STDOUT
        )
        base = f"http://127.0.0.1:{port}"
        try:
            deadline = time.monotonic() + 180
            while True:
                if server.poll() is not None:
                    raise RuntimeError(f"Phoenix exited: {log_path.read_text()[-3000:]}")
                try:
                    with urllib.request.urlopen(f"{base}/healthz", timeout=2) as response:
                        if response.status == 200:
                            break
                except (urllib.error.URLError, ConnectionError, TimeoutError):
                    pass
                if time.monotonic() > deadline:
                    raise RuntimeError("Phoenix did not answer within 180 s")
                time.sleep(0.25)  # polling its health endpoint: nothing to wait on but the port
            yield base
        finally:
            server.terminate()
            try:
                server.wait(timeout=30)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()


if __name__ == "__main__":
    print(f"phoenix: {SPEC} in {python().parent.parent}")
