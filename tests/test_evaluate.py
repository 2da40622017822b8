"""Samples recorded from a model over HTTP, graded by code or by a model, evaluated again offline.

The local OpenAI-compatible server plays a model that answers "Is N even?" right every time
for N < 20, two times in three for 20 <= N < 40 (whatever order the samples arrive in), never
for N >= 40; and, asked to grade, a judge that reads the answer and says PASS or FAIL.
"""

from __future__ import annotations

import re
import threading
from collections import Counter

import pytest
from openai_server import OpenAIServer
from openai_server import Reply as ServerReply

from nbgraph import END, START, Graph, MessagesState, OpenAIModel, ScriptedModel, llm_node, recorded
from nbgraph.batch import Evaluation, Sample, Verdict, evaluate, model_grader, wilson
from nbgraph.llm.recorded import NotRecorded

INPUTS = {f"n{n}": {"messages": [{"role": "user", "content": f"Is {n} even? Answer yes or no."}]} for n in range(50)}
CRITERIA = "You grade answers to questions about numbers: PASS a right answer, FAIL a wrong one."


def truth(n: int) -> str:
    return "yes" if n % 2 == 0 else "no"


class Oracle:
    """The server's answers: a model of known, sample-order-proof reliability, and its judge."""

    def __init__(self) -> None:
        self.asked: Counter[int] = Counter()
        self.lock = threading.Lock()

    def __call__(self, request: dict) -> ServerReply:
        system = request["messages"][0]["content"]
        asked = request["messages"][-1]["content"]
        if "PASS or FAIL" in system:
            n = int(re.search(r"Is (\d+) even", asked).group(1))  # type: ignore[union-attr]
            said = asked.rsplit("Answer:\n", 1)[1].strip()
            return ServerReply(
                text=f"The answer {said!r} is {'right' if said == truth(n) else 'wrong'}.\nPASS"
                if said == truth(n)
                else f"The answer {said!r} is wrong.\nFAIL"
            )
        n = int(re.search(r"Is (\d+) even", asked).group(1))  # type: ignore[union-attr]
        with self.lock:
            self.asked[n] += 1
            turn = self.asked[n]
        right = n < 20 or (n < 40 and turn % 3 != 0)
        return ServerReply(text=truth(n) if right else truth(n + 1))


def parity(model) -> Graph:
    g = Graph("parity", state=MessagesState, model=model)
    g.add_node("answer", llm_node("You answer questions about numbers with yes or no."))
    g.add_edge(START, "answer")
    g.add_edge("answer", END)
    return g


def right(sample: Sample) -> bool:
    n = int(str(sample.input_id).removeprefix("n"))
    return sample.answer == truth(n)


def expected_passes(input_id: str) -> int:
    n = int(input_id.removeprefix("n"))
    return 3 if n < 20 else 2 if n < 40 else 0


def test_a_batch_of_50_inputs_by_3_samples_recorded_over_http_evaluates_offline_with_pass_rates(tmp_path, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    path = tmp_path / "parity.ndjson"
    with OpenAIServer(Oracle()) as server:
        model = OpenAIModel(
            "judge-and-student", base_url=server.base_url, api_key="sk-proj-EVALk9Rv2LmTq7XbWnQ", max_retries=0
        )
        live = recorded(model, path, mode="record")
        try:
            first = evaluate(parity(live), INPUTS, model_grader(live, CRITERIA), samples=3, progress=False)
        finally:
            model.close()
        assert len(server.requests) == 2 * 150  # every sample, then its grading
    assert live.recorded == 300

    offline = recorded(None, path, mode="replay")
    again = evaluate(parity(offline), INPUTS, model_grader(offline, CRITERIA), samples=3, progress=False)
    by_code = evaluate(parity(offline), INPUTS, right, samples=3, progress=False)
    assert offline.recorded == 0 and offline.replayed == 150 + 150 + 150  # runs, their grading, runs again

    for evaluation in (first, again, by_code):
        assert [(s.input_id, s.samples, s.passed) for s in evaluation.scores] == [
            (input_id, 3, expected_passes(input_id)) for input_id in INPUTS
        ]
        overall = evaluation.overall
        assert (overall.samples, overall.passed) == (150, 100)
        assert (overall.low, overall.high) == pytest.approx(wilson(100, 150))
        assert overall.rate == pytest.approx(2 / 3) and overall.low < overall.rate < overall.high
    assert again.score("n25").rate == pytest.approx(2 / 3)
    assert again.score("n25")[4:] == pytest.approx(wilson(2, 3))
    assert {g.why.splitlines()[-1] for g in again.graded if g.why} == {"PASS", "FAIL"}  # the judge's own words
    # The replayed samples were the recorded ones: the same answers, input by input.
    assert sorted((r.input_id, r.outcome, r.path) for r in again.rows) == sorted(
        (r.input_id, r.outcome, r.path) for r in first.rows
    )


def test_the_table_says_each_inputs_rate_and_interval(tmp_path):
    evaluation = evaluate(
        parity(ScriptedModel(lambda messages: "yes")),
        {"n2": INPUTS["n2"], "n3": INPUTS["n3"]},
        right,
        samples=2,
        progress=False,
    )
    assert isinstance(evaluation, Evaluation)
    text = str(evaluation)
    assert text.splitlines() == [
        "evaluation of 'parity': 4 samples of 2 inputs, 2 each",
        "input                  passed   rate  95% interval",
        "n2                        2/2   1.00  [0.34, 1.00]",
        "n3                        0/2   0.00  [0.00, 0.66]",
        "overall                   2/4   0.50  [0.15, 0.85]",
    ]
    assert repr(evaluation) == "<Evaluation of 'parity': 2/4 passed (50%, 95% interval 0.15-0.85), 2 inputs>"
    shown = evaluation._repr_html_()
    assert "<td>n2</td><td>2/2</td><td>1.00</td><td>0.34&ndash;1.00</td>" in shown
    assert "<caption>evaluation of &#x27;parity&#x27;: 4 samples of 2 inputs, 2 each</caption>" in shown


def test_a_run_that_did_not_finish_fails_without_the_grader_and_a_grader_that_raises_names_the_sample():
    def fails(messages):
        raise RuntimeError("the model is down")

    graded: list[Sample] = []
    evaluation = evaluate(parity(ScriptedModel(fails)), {"n1": INPUTS["n1"]}, graded.append, samples=2, progress=False)
    assert graded == [] and evaluation.overall.passed == 0
    assert [g.why for g in evaluation.graded] == [
        "the run ended failed: node 'answer' failed at step 1: RuntimeError: the model is down"
    ] * 2

    def broken(sample: Sample) -> bool:
        raise KeyError("label")

    with pytest.raises(RuntimeError, match=r"the grader failed on input 'n1', sample 0: KeyError: 'label'"):
        evaluate(parity(ScriptedModel(lambda m: "no")), {"n1": INPUTS["n1"]}, broken, progress=False)


def test_a_model_graders_reply_without_a_verdict_fails_the_sample_and_its_calls_replay(tmp_path):
    path = tmp_path / "grades.ndjson"
    judge = recorded(ScriptedModel(["I cannot tell.", "Right.\nPASS"]), path, mode="record")
    grader = model_grader(judge, CRITERIA)
    student = parity(ScriptedModel(lambda m: "yes"))
    first = evaluate(student, {"n2": INPUTS["n2"]}, grader, samples=2, progress=False, concurrency=1)
    assert [g.passed for g in first.graded] in ([False, True], [True, False])
    assert "the grader's reply says neither PASS nor FAIL: 'I cannot tell.'" in [g.why for g in first.graded]

    offline = model_grader(recorded(None, path, mode="replay"), CRITERIA)
    again = evaluate(student, {"n2": INPUTS["n2"]}, offline, samples=2, progress=False)
    assert again.overall.passed == 1
    # Graded by other criteria, the recording has no reply: the grader's request names its node.
    other = model_grader(recorded(None, path, mode="replay"), "Be strict.")
    with pytest.raises(RuntimeError, match=r"NotRecorded: node 'grader' asked 'scripted'") as caught:
        evaluate(student, {"n2": INPUTS["n2"]}, other, progress=False)
    assert isinstance(caught.value.__cause__, NotRecorded)
    assert "message 0 (system): recorded 'You grade answers" in str(caught.value)


def test_a_grader_may_say_why_and_be_async():
    async def careful(sample: Sample) -> Verdict:
        return Verdict(sample.answer == "yes", f"said {sample.answer}")

    evaluation = evaluate(
        parity(ScriptedModel(lambda m: "yes")),
        [{"messages": ["Is 2 even?"]}, {"messages": ["Is 3 even?"]}],
        careful,
        progress=False,
    )
    assert [(g.input_id, g.passed, g.why) for g in evaluation.graded] == [(0, True, "said yes"), (1, True, "said yes")]


@pytest.mark.parametrize(
    ("options", "error", "message"),
    [
        ({"samples": 0}, ValueError, "samples must be a whole number of runs per input, at least 1, got 0"),
        ({"table": "rows"}, TypeError, "evaluate() keeps each run's result itself: it takes no table="),
        ({"grader": "yes"}, TypeError, "grader must be a function of a Sample, got str"),
    ],
)
def test_bad_options_say_what_is_wrong(options, error, message):
    grader = options.pop("grader", right)
    with pytest.raises(error) as caught:
        evaluate(parity(ScriptedModel(["yes"])), INPUTS, grader, **options)
    assert str(caught.value) == message
