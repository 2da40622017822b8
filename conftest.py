"""How the test command spreads its tests over processes (``pytest -n 2``, pytest-xdist).

A file's tests stay in one process, in order: a notebook's cells share one kernel, and a
module's fixtures (a Ray runtime, a server) are started once. The browser tests share one
process, so one JupyterLab and one Chromium run at a time. The course's check banks and
re-runs start a kernel of their own per test and share nothing, so they spread one by one.

The grouping is a scheduler of its own rather than ``--dist loadgroup``: loadgroup tags each
test's id with its group, which pytest 9.2 no longer lets a plugin rewrite, and then it
scatters a notebook's cells over both processes without a word.
"""

from __future__ import annotations

import pytest
from xdist.scheduler import LoadScopeScheduling

_EACH_TEST_ALONE = ("tests/test_course_banks.py", "tests/test_course_rerun.py")


class _ByFileBrowserTogether(LoadScopeScheduling):
    def _split_scope(self, nodeid: str) -> str:
        path = nodeid.split("::", 1)[0]
        if path in _EACH_TEST_ALONE:
            return nodeid
        return "tests/e2e/" if path.startswith("tests/e2e/") else path


def pytest_xdist_make_scheduler(config: pytest.Config, log) -> LoadScopeScheduling:
    return _ByFileBrowserTogether(config, log)
