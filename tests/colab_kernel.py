"""A kernel as Google Colab runs it: ipykernel 6.17.1 and IPython 7.34.0, pinned as Colab pins
them, on Python 3.12, with nbgraph (this checkout) installed as a user there installs it.

Installing nbgraph must leave the two pins as they are: the environment is built the way a
Colab user's is (the pins first, then ``pip install``), and the build fails if pip replaced
either. It holds the test tools too, so ``.ci/colab`` runs the notebook layer's tests in it,
and its Python is a kernel for the browser tests (``tests/e2e/test_colab_browser.py``).

It lives in a cached environment, built once (``python tests/colab_kernel.py`` builds it
ahead, as ``.ci/run`` does while other work runs; a test that needs it meanwhile waits for
the build): under ``$NBGRAPH_COLAB_HOME``, else the user's cache, one per checkout.
"""

from __future__ import annotations

import fcntl
import glob
import hashlib
import json
import os
import shutil
import subprocess
import time
import tomllib
from pathlib import Path

PINS = {"ipykernel": "6.17.1", "ipython": "7.34.0"}
"""What Colab pins: its kernel is a subclass of this ipykernel."""
PYTHON = "3.12"
"""Colab's Python."""
TOOLS = (
    "pytest",
    "pytest-asyncio",
    "pytest-xdist",
    "pytest-markdown-docs",
    "hypothesis",
    "nbval",
    "nbclient",
    "nbformat",
    "voila",
    "psycopg",
    "psycopg-pool",
    "redis",
)
"""The test extra's tools the notebook layer's tests need (their versions as pyproject.toml says)."""

ROOT = Path(__file__).resolve().parent.parent


def home() -> Path:
    """Where the environment lives: ``$NBGRAPH_COLAB_HOME``, else under the user's cache."""
    chosen = os.environ.get("NBGRAPH_COLAB_HOME")
    if chosen:
        return Path(chosen)
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    checkout = hashlib.sha256(str(ROOT).encode()).hexdigest()[:12]
    return cache / "nbgraph-tests" / f"colab-{checkout}"


def interpreter() -> Path:
    """The environment's Python (built or not)."""
    return home() / "env" / "bin" / "python"


def _tools() -> list[str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    wanted = []
    for requirement in project["optional-dependencies"]["test"]:
        name = requirement.split(">")[0].split("=")[0].split("<")[0].split("[")[0].strip()
        if name in TOOLS:
            wanted.append(requirement)
    return wanted


def _recipe() -> str:
    """What the environment is built from: a change to any of it builds it again."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    needs = {"needs": project["dependencies"], "entry points": project.get("entry-points"), "tools": _tools()}
    return json.dumps({"pins": PINS, "python": PYTHON, **needs})


def _base_python() -> str:
    """Python 3.12 on this machine (on PATH, or installed by pyenv), as .ci/lib.sh finds it."""
    root = os.environ.get("PYENV_ROOT") or str(Path.home() / ".pyenv")
    candidates = [shutil.which(f"python{PYTHON}"), *sorted(glob.glob(f"{root}/versions/{PYTHON}.*/bin/python{PYTHON}"))]
    for candidate in filter(None, candidates):
        if subprocess.run([candidate, "-c", ""], capture_output=True).returncode == 0:  # (not a pyenv shim of nothing)
            return candidate
    raise RuntimeError(f"Python {PYTHON} (Colab's) is not on this machine (nor installed by pyenv)")


def installed(python: Path) -> dict[str, str]:
    """The versions of the pinned packages that ``python`` has."""
    code = "import importlib.metadata as m, json, sys; print(json.dumps({n: m.version(n) for n in sys.argv[1:]}))"
    out = subprocess.run([str(python), "-c", code, *PINS], capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def python() -> Path:
    """The environment's Python: built now unless it is already there.

    Another process building it at the same moment (the other test worker, or ``.ci/run``
    ahead of the tests) holds a lock on it; this one waits for that build.
    """
    where = home()
    where.mkdir(parents=True, exist_ok=True)
    env, built, recipe = where / "env", where / "built", _recipe()
    with open(where / "lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if built.exists() and built.read_text() == recipe and interpreter().exists():
            return interpreter()
        built.unlink(missing_ok=True)
        log = where / "build.log"
        pip = [str(interpreter()), "-m", "pip", "install", "-q", "--disable-pip-version-check"]
        steps = [
            [_base_python(), "-m", "venv", "--clear", str(env)],
            [*pip, *(f"{name}=={version}" for name, version in PINS.items())],  # what Colab has
            [*pip, "-e", str(ROOT), *_tools()],  # what a user does there (with the tests' tools)
        ]
        with open(log, "w") as out:
            for step in steps:
                if subprocess.run(step, stdout=out, stderr=subprocess.STDOUT).returncode:
                    raise RuntimeError(f"could not build the Colab environment in {env}: {log.read_text()[-3000:]}")
        have = installed(interpreter())
        if have != PINS:
            raise RuntimeError(
                f"installing nbgraph replaced Colab's pins {PINS} with {have}: its floors in pyproject.toml "
                "ask for more than Colab has"
            )
        built.write_text(recipe)
    return interpreter()


if __name__ == "__main__":
    began = time.monotonic()
    found = python()
    pins = ", ".join(f"{name} {version}" for name, version in installed(found).items())
    print(f"colab: {pins} on Python {PYTHON} in {found} (ready in {time.monotonic() - began:.0f} s)")
