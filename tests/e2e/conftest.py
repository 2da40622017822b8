"""Browser tests: JupyterLab on loopback, driven by Playwright in Debian's Chromium."""

from __future__ import annotations

import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import threading
from pathlib import Path

import colab_kernel
import pytest

# The notebooks here are opened in a browser by the tests, not executed by nbval.
collect_ignore_glob = ["*.ipynb"]

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]
HERE = Path(__file__).parent
COLAB_KERNEL = "python3-colab"
"""The kernel spec of a kernel as Colab runs it (its notebooks name it)."""
ARTIFACTS = HERE.parent.parent / "test-artifacts"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Lab:
    def __init__(self, url: str, token: str, root: Path) -> None:
        self.url = url
        self.token = token
        self.root = root

    def notebook_url(self, name: str) -> str:
        return f"{self.url}/lab/tree/{name}?reset&token={self.token}"


@pytest.fixture(scope="session")
def lab(tmp_path_factory):
    """A JupyterLab server in a temp dir, on 127.0.0.1 and a free port."""
    home = tmp_path_factory.mktemp("lab")
    root = home / "work"
    root.mkdir()
    for notebook in HERE.glob("*.ipynb"):
        shutil.copy(notebook, root / notebook.name)
    env = dict(os.environ)
    env.update(
        JUPYTER_CONFIG_DIR=str(home / "config"),
        JUPYTER_RUNTIME_DIR=str(home / "runtime"),
        JUPYTER_DATA_DIR=env.get("JUPYTER_DATA_DIR", str(Path(sys.prefix) / "share" / "jupyter")),
        JUPYTERLAB_SETTINGS_DIR=str(home / "settings"),
        JUPYTERLAB_WORKSPACES_DIR=str(home / "workspaces"),
    )
    env.pop("NBGRAPH_AUTO_ANSWER", None)  # in the browser, the clicks answer
    # and the views say hello from it: a run that did not hear it would give up on its pauses fast.
    env["NBGRAPH_HEADLESS_WAIT"] = "2"
    # Who answers from the kernels, as a JupyterHub would say (nbgraph.answering.identity): the
    # boxes and the decisions name it, the same on every machine, and so do the pictures.
    env["JUPYTERHUB_USER"] = "alice"
    # A second kernel, as Colab runs one (built when a test first needs it: tests/colab_kernel.py).
    env["JUPYTER_PATH"] = str(home / "share")
    spec = home / "share" / "kernels" / COLAB_KERNEL
    spec.mkdir(parents=True)
    spec.joinpath("kernel.json").write_text(
        json.dumps(
            {
                "argv": [str(colab_kernel.interpreter()), "-m", "ipykernel_launcher", "-f", "{connection_file}"],
                "display_name": "Python 3 (Colab's ipykernel 6.17.1, IPython 7.34)",
                "language": "python",
            }
        )
    )
    # Start the notebook's kernel without asking (a fresh Lab would show a kernel dialog).
    tracker = home / "settings" / "@jupyterlab" / "notebook-extension" / "tracker.jupyterlab-settings"
    tracker.parent.mkdir(parents=True)
    tracker.write_text('{"autoStartDefaultKernel": true}')
    subprocess.run(
        [sys.executable, "-m", "jupyter", "labextension", "disable", "@jupyterlab/apputils-extension:announcements"],
        env=env,
        check=True,
        capture_output=True,
    )
    port = _free_port()
    token = secrets.token_hex(16)
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "jupyter",
            "lab",
            "--no-browser",
            "--allow-root",
            "--ip=127.0.0.1",
            f"--port={port}",
            f"--IdentityProvider.token={token}",
            f"--ServerApp.root_dir={root}",
            "--LabApp.expose_app_in_browser=True",
        ],
        env=env,
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        text=True,
    )
    log: list[str] = []
    ready = threading.Event()

    def read_log() -> None:
        assert process.stderr is not None
        for line in process.stderr:
            log.append(line)
            if f"127.0.0.1:{port}/lab" in line:
                ready.set()
        ready.set()

    threading.Thread(target=read_log, daemon=True).start()
    try:
        if not ready.wait(timeout=90) or process.poll() is not None:
            raise RuntimeError("JupyterLab did not start:\n" + "".join(log[-30:]))
        yield Lab(f"http://127.0.0.1:{port}", token, root)
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        assert process.stderr is not None
        process.stderr.close()


@pytest.fixture(scope="module")
def browser():
    # Module scope: Playwright's sync API keeps an event loop running in this thread
    # while it is open, which would break every asyncio test collected after e2e/.
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    report = yield
    if report.when == "call":
        item.failed_call = report.failed
    return report


def page_errors(page) -> list[str]:
    """The errors ``page`` logs to its console or throws from now on (a list that grows). A
    resource that fails to load from off this machine (a page's CDN, with no network here) is
    the network's, not the page's."""
    errors: list[str] = []

    def heard(message) -> None:
        where = message.location.get("url") or ""
        if message.type != "error" or (message.text.startswith("Failed to load resource") and not _here(where)):
            return
        errors.append(f"{message.text} ({where})")

    page.on("console", heard)
    page.on("pageerror", lambda error: errors.append(f"{error.name}: {error.message}\n{error.stack}"))
    return errors


def _here(url: str) -> bool:
    return url.startswith(("http://127.0.0.1", "blob:", "data:"))


@pytest.fixture
def page(browser, request):
    """A fresh browser page; on failure its screenshot is kept in test-artifacts/."""
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    yield page
    if getattr(request.node, "failed_call", False):
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / f"{request.node.name}-failed.png"))
    context.close()
