"""The test command's warnings policy (``filterwarnings`` in pyproject.toml), tried on a
pytest of its own: a third party's deprecation, even at import while plugins load, does
not stop the suite; a deprecation attributed to nbgraph's code fails its test."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def test_a_third_partys_deprecation_is_shown_and_ours_fails(tmp_path):
    policy = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]["filterwarnings"]
    (tmp_path / "pytest.ini").write_text("[pytest]\nfilterwarnings =\n" + "".join(f"    {f}\n" for f in policy))
    # As pyasn1 and ldap3 do: a module warns, from its __getattr__, at whoever imports an old name.
    (tmp_path / "newlib.py").write_text(
        "import warnings\n"
        "TAG_MAP = {}\n"
        "def __getattr__(name):\n"
        "    if name == 'tagMap':\n"
        "        warnings.warn('tagMap is deprecated. Please use TAG_MAP instead.', DeprecationWarning, stacklevel=2)\n"
        "        return TAG_MAP\n"
        "    raise AttributeError(name)\n"
    )
    (tmp_path / "oldlib.py").write_text(
        "import newlib\nfrom newlib import tagMap\ndef encode():\n    return newlib.tagMap\n"
    )
    (tmp_path / "plugin.py").write_text("import oldlib\n")  # loaded as a plugin, before collection
    (tmp_path / "test_probe.py").write_text(
        "import warnings\n"
        "def test_theirs():\n"
        "    import oldlib\n"
        "    oldlib.encode()\n"
        "def test_ours():\n"
        "    warnings.warn_explicit('old', DeprecationWarning, 'nbgraph/engine/step.py', 1, module='nbgraph.engine.step')\n"
        "def test_our_resource_leak():\n"
        "    warnings.warn('unclosed', ResourceWarning)\n"
    )
    child = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "plugin",
            "-p",
            "no:cacheprovider",
            "-p",
            "no:xdist",
            "-p",
            "no:asyncio",
            "-q",
            "-rA",
        ],
        cwd=tmp_path,
        env={"PYTHONPATH": str(tmp_path), "PATH": ""},
        capture_output=True,
        text=True,
        timeout=120,
    )
    out = child.stdout + child.stderr
    assert "PASSED test_probe.py::test_theirs" in out, out
    assert "FAILED test_probe.py::test_ours - DeprecationWarning: old" in out, out
    assert "FAILED test_probe.py::test_our_resource_leak - ResourceWarning: unclosed" in out, out
    assert "tagMap is deprecated" in out  # shown in the warnings summary
