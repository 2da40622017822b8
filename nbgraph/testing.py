"""A pytest plugin for your own tests: they replay what a real model said, with no network and no key.

Installed with nbgraph (its ``pytest11`` entry point), it gives every test the ``recording``
fixture, which wraps a model in :func:`nbgraph.recorded` with a file of the test's own::

    from nbgraph import OpenAIModel

    def test_the_agent_books_the_cheapest_flight(recording):
        model = recording(OpenAIModel("gpt-4o-mini"))
        result = build_agent(model).invoke({"messages": ["Book me a flight to Oslo"]})
        assert result.state.booked == "SK 4417"

The recording is ``recordings/<test module>/<test name>.ndjson`` beside the test's file.
``pytest --nbgraph-record=missing`` (with a key) records what a test asks that its file does
not hold yet, ``--nbgraph-record=record`` records every test's calls afresh; by default a test
replays (``--nbgraph-record=replay``), and one whose file lacks a request fails naming the
node and how the nearest recorded request differs. Commit the ``recordings/`` folder.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from .llm.recorded import Mode, RecordedModel

__all__ = ["recording", "recording_path"]

_OPTION = "--nbgraph-record"
_MODES = ("replay", "missing", "record")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.getgroup("nbgraph").addoption(
        _OPTION,
        choices=_MODES,
        default="replay",
        help="how the `recording` fixture treats a test's recorded model calls: replay them (the default: "
        "no network, no key), record what is missing, or record afresh",
    )


def recording_path(node: Any, name: str | None = None) -> Path:
    """Where the recording of test ``node`` is: ``recordings/<module>/<test>[-<name>].ndjson``
    beside its file (a parametrized test's id made a file name)."""
    test = _file_name(node.name + (f"-{name}" if name else ""))
    return node.path.parent / "recordings" / node.path.stem / f"{test}.ndjson"


@pytest.fixture
def recording(request: pytest.FixtureRequest) -> Callable[..., RecordedModel]:
    """``recording(model, name=None)``: ``model`` recorded in this test's own file (``name``
    gives a test that records two models a file for each), in the mode ``--nbgraph-record`` says."""
    from .llm.recorded import recorded

    mode: Mode = request.config.getoption(_OPTION) or "replay"

    def wrap(model: Any, name: str | None = None) -> RecordedModel:
        path = recording_path(request.node, name)
        if mode == "replay" and not path.exists():
            pytest.fail(
                f"{request.node.name} has no recording at {path}: run pytest {_OPTION}=missing with the model's "
                "key to make it, then commit it",
                pytrace=False,
            )
        return recorded(model, path, mode=mode)

    return wrap


def _file_name(text: str) -> str:
    return re.sub(r"[^\w.\-]+", "-", text).strip("-") or "test"
