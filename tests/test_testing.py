"""The pytest plugin for users' own tests, in a suite of their own that pytest runs (pytester)."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

ROOT = Path(__file__).resolve().parent.parent

AGENT_TEST = """
from nbgraph import END, START, Graph, MessagesState, ScriptedModel, llm_node


def build(model):
    g = Graph("trip", state=MessagesState, model=model)
    g.add_node("planner", llm_node("{prompt}"))
    g.add_edge(START, "planner")
    g.add_edge("planner", END)
    return g


def test_planner(recording, request):
    model = recording(ScriptedModel(["Pack a coat."]))
    result = build(model).invoke({{"messages": ["Oslo in March?"]}})
    assert result.outcome == "done", result.reason
    assert result.state.messages[-1].content == "Pack a coat."
    called = len(model.model.calls)
    assert called == (0 if request.config.getoption("--nbgraph-record") == "replay" else 1)
"""

PLUGIN = ("-p", "no:nbgraph", "-p", "nbgraph.testing")
"""The plugin by module, whether or not this install has registered its entry point."""


@pytest.fixture(autouse=True)
def suite(pytester):
    """A user's suite, with the settings of its own (pytest-asyncio wants one)."""
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n")


def test_the_plugin_is_registered_for_pytest():
    entry_points = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["entry-points"]
    assert entry_points["pytest11"] == {"nbgraph": "nbgraph.testing"}


def test_a_users_test_records_once_then_replays_and_a_changed_prompt_fails_naming_the_node(pytester):
    pytester.makepyfile(test_agent=AGENT_TEST.format(prompt="You plan trips."))
    recording = pytester.path / "recordings" / "test_agent" / "test_planner.ndjson"

    missing = pytester.runpytest_inprocess(*PLUGIN)
    missing.assert_outcomes(failed=1)
    missing.stdout.fnmatch_lines(
        [f"*test_planner has no recording at {recording}: run pytest --nbgraph-record=missing with the model's key*"]
    )
    assert not recording.exists()

    pytester.runpytest_inprocess(*PLUGIN, "--nbgraph-record=missing").assert_outcomes(passed=1)
    assert recording.exists() and '"node": "planner"' in recording.read_text()
    pytester.runpytest_inprocess(*PLUGIN).assert_outcomes(passed=1)  # replayed: the model is not called

    pytester.makepyfile(test_agent=AGENT_TEST.format(prompt="You plan trips in winter."))
    changed = pytester.runpytest_inprocess(*PLUGIN)
    changed.assert_outcomes(failed=1)
    changed.stdout.fnmatch_lines(
        [
            "*NotRecorded: node 'planner' asked 'scripted' for a reply that*The nearest recorded request "
            "(node 'planner', *) differs: message 0 (system): recorded 'You plan trips.', "
            "asked 'You plan trips in winter.'*"
        ]
    )


@pytest.mark.parametrize("name", ["a/b [c]", "x"])
def test_a_parametrized_tests_recording_is_a_file_name(pytester, name):
    from nbgraph.testing import recording_path

    item = pytester.getitem("def test_func(): pass")
    path = recording_path(item, name)
    assert path.parent == item.path.parent / "recordings" / item.path.stem
    assert "/" not in path.name and " " not in path.name and path.name.endswith(".ndjson")
