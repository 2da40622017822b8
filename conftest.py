"""How the test command spreads its tests over processes (``pytest -n 2``, pytest-xdist).

A file's tests stay in one process, in order: a notebook's cells share one kernel, and a
module's fixtures (a Ray runtime, a server) are started once. The browser tests share one
process, so one JupyterLab and one Chromium run at a time.
"""

from __future__ import annotations

import pytest


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist reads the groups
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        path = item.path.as_posix()
        item.add_marker(pytest.mark.xdist_group("browser" if "/tests/e2e/" in path else path))
