"""Notebooks served as users serve them elsewhere than JupyterLab, on loopback and a free port:
Voilà (a notebook as a page, in its default or progressive mode) and marimo (a notebook of
its own format, edited or run as an app). Each yields the page's URL once it is served, and
stops the server after."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _environ(**env: str) -> dict[str, str]:
    # (the views' buttons answer in these pages: no run answers itself from code)
    environ = {k: v for k, v in os.environ.items() if k != "NBGRAPH_AUTO_ANSWER"}
    environ.update(env)
    return environ


def _listens(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
    except OSError:
        return False
    return True


@contextmanager
def _served(
    command: list[str], env: dict[str, str], port: int, ready: str | None, cwd: Path | None = None
) -> Iterator[None]:
    """Run ``command`` until the block ends; it is ready once a line of its output holds
    ``ready``, or (None) once it accepts a connection on ``port``."""
    process = subprocess.Popen(command, env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    log: list[str] = []
    said = threading.Event()

    def read_log() -> None:  # (all of it: a full pipe would stop the server)
        assert process.stdout is not None
        for line in process.stdout:
            log.append(line)
            if ready is not None and ready in line:
                said.set()
        said.set()

    reader = threading.Thread(target=read_log, daemon=True)
    reader.start()
    try:
        if ready is not None:
            assert said.wait(timeout=90) and process.poll() is None, "the server did not start:\n" + "".join(log)
        else:
            # No line says it listens: ask until it does (a pause between asks), or until it has gone.
            while not _listens(port):
                assert process.poll() is None, "the server did not start:\n" + "".join(log)
                time.sleep(0.05)
        yield
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        reader.join(timeout=10)
        assert process.stdout is not None
        process.stdout.close()


@contextmanager
def voila(notebook: Path, *options: str, **env: str) -> Iterator[str]:
    """Voilà serving ``notebook`` (in its default mode, unless ``options`` say otherwise, e.g.
    ``--progressive_rendering=True``): the page's URL once it listens."""
    port = _free_port()
    command = [sys.executable, "-m", "voila", str(notebook), "--no-browser", f"--port={port}", "--Voila.ip=127.0.0.1"]
    command += ["--show_tracebacks=True", *options]
    environ = _environ(**env, JUPYTER_RUNTIME_DIR=str(notebook.parent / "runtime"))
    with _served(command, environ, port, ready=f":{port}/"):  # (it says where it listens once it does)
        yield f"http://127.0.0.1:{port}/"


@contextmanager
def marimo(notebook: Path, command: str = "edit", **env: str) -> Iterator[str]:
    """marimo serving ``notebook`` (``edit``: in its editor, every cell run as the page opens;
    ``run``: as an app), headless, with a home of its own (its configuration and state): the
    page's URL once it listens."""
    port = _free_port()
    home = notebook.parent / "marimo-home"
    config = home / ".config" / "marimo" / "marimo.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text("[runtime]\nauto_instantiate = true\n")
    environ = _environ(**env, HOME=str(home), XDG_CONFIG_HOME=str(home / ".config"))
    environ.update(XDG_STATE_HOME=str(home / ".local" / "state"), XDG_CACHE_HOME=str(home / ".cache"))
    line = [sys.executable, "-m", "marimo", command, str(notebook), "--headless", "--no-token", "--no-sandbox"]
    line += [f"--port={port}", "--host=127.0.0.1", *(["--skip-update-check"] if command == "edit" else [])]
    # (from its home: marimo reads a .marimo.toml in any folder above where it starts)
    with _served(line, environ, port, ready=None, cwd=home):  # (its banner comes before it listens)
        yield f"http://127.0.0.1:{port}/"
