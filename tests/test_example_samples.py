"""The committed recorded samples (examples/recorded_samples.py): graded offline, and recorded again.

A lesson on Binder evaluates the committed file with no key and no network; whoever records it
again runs the same script against the local OpenAI-compatible server.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def example():
    spec = importlib.util.spec_from_file_location("recorded_samples", ROOT / "examples" / "recorded_samples.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(autouse=True)
def no_key(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)


def check(judged, labelled, cases) -> None:
    """Fifty messages, three samples each, graded alike by the judge and by the labels; the
    plain messages always read right, the ambiguous ones not."""
    for evaluation in (judged, labelled):
        assert [score.input_id for score in evaluation.scores] == list(cases)
        assert {score.samples for score in evaluation.scores} == {3} and evaluation.overall.samples == 150
    assert [score.passed for score in judged.scores] == [score.passed for score in labelled.scores]
    rates = {score.input_id: score.rate for score in labelled.scores}
    assert all(rates[f"plain-{order}"] == 1.0 for order in ("1042", "2001", "3004"))
    assert any(0 < rate < 1 for rate in rates.values())  # a message the model reads differently each time
    overall = labelled.overall
    assert 0 < overall.low < overall.rate < overall.high < 1


def test_the_committed_recording_is_graded_offline(example):
    judged, labelled = example.main([])
    check(judged, labelled, example.CASES)
    assert str(labelled).splitlines()[0] == "evaluation of 'triage': 150 samples of 50 inputs, 3 each"


def test_the_script_records_against_the_local_server_then_grades_with_it_stopped(example, tmp_path, capsys):
    out = tmp_path / "triage.ndjson"
    judged, labelled = example.main(["--record", "--out", str(out)])  # the server is stopped when it returns
    check(judged, labelled, example.CASES)
    assert f"recorded 150 samples and their grading in {out}" in capsys.readouterr().out
    lines = out.read_text().splitlines()
    assert len(lines) == 1 + 150 + 150  # the header, the samples, their grading
