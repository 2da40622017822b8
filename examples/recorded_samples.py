"""Recorded samples: an LLM node run three times on each of fifty messages, graded offline.

A returns desk's first node reads what a customer wants: ``refund``, ``where`` (where is my
parcel) or ``other``. A model does not answer the same way every time, so each message is
run three times; a judge (a model too) grades every answer, and its calls are recorded with
the samples. Then the samples are graded again, by code against the labels, and both
evaluations give each message's pass rate with a 95% interval: all offline, from the file.

    python examples/recorded_samples.py              # evaluate the committed recording, offline
    python examples/recorded_samples.py --record     # record it again, against the local test server
    python examples/recorded_samples.py --record --model gpt-4o-mini   # ... or a real endpoint
                                                     # (OPENAI_API_KEY, and OPENAI_BASE_URL if not OpenAI)

The committed recording (``examples/recordings/triage.ndjson``) was made against the local
OpenAI-compatible test server (``tests/openai_server.py``), which plays a model that is sure
of plain messages and unsure of ambiguous ones (chance, not a fixed script: every recording
differs), and a judge that compares the answer with the label. The course's tutorial 12 replays
a copy of it, ``notebooks/recordings/triage.ndjson`` (``--out`` records that one afresh; the
lesson's prose quotes its numbers).
"""

from __future__ import annotations

import argparse
import random
import re
import sys
from pathlib import Path
from typing import Any

from nbgraph import END, START, Graph, MessagesState, OpenAIModel, llm_node, recorded
from nbgraph.batch import Evaluation, Sample, evaluate, model_grader

HERE = Path(__file__).resolve().parent
RECORDING = HERE / "recordings" / "triage.ndjson"
SAMPLES = 3

ORDERS = ("1042", "1043", "1044", "1045", "2001", "2002", "2003", "2004", "3003", "3004")
WAYS = {  # how customers write, and what they want; {} is the order number
    "plain": ("Please refund #{}, it arrived broken.", "refund"),
    "where": ("Where is my parcel? Order #{} has not arrived.", "where"),
    "late": ("Order {} is two weeks late, I would rather have my money back.", "refund"),  # late, but a refund
    "gift": ("Do you sell gift cards? I liked order {} a lot.", "other"),
    "vague": ("Something is wrong with order {}, can you help?", "other"),  # neither: a person must ask
}
CASES = {f"{way}-{order}": (text.format(order), label) for way, (text, label) in WAYS.items() for order in ORDERS}
INPUTS = {case: {"messages": [{"role": "user", "content": text}]} for case, (text, _) in CASES.items()}

PROMPT = "Read the customer's message. Answer with one word: refund, where, or other."
CRITERIA = (
    "You check how a returns desk read a customer's message: refund (they want their money back), "
    "where (they ask where their parcel is) or other. PASS the answer if it is the right reading."
)


class Triage(MessagesState):
    intent: str = ""


def triage(model: Any) -> Graph:
    """One LLM node that reads what the customer wants into ``intent``."""
    g = Graph("triage", state=Triage, model=model)
    g.add_node("read", llm_node(PROMPT, extract=lambda text: {"intent": text.strip().strip(".").lower()}))
    g.add_edge(START, "read")
    g.add_edge("read", END)
    return g


def by_label(sample: Sample) -> bool:
    """The code grader: the answer is the message's label."""
    return sample.state.intent == CASES[sample.input_id][1]


def evaluate_offline(path: Path = RECORDING) -> tuple[Evaluation, Evaluation]:
    """The recorded samples graded by the recorded judge, then by code: no model is called."""
    kept = recorded(None, path, mode="replay")
    judged = evaluate(triage(kept), INPUTS, model_grader(kept, CRITERIA), samples=SAMPLES, progress=False)
    labelled = evaluate(triage(kept), INPUTS, by_label, samples=SAMPLES, progress=False)
    return judged, labelled


def record(path: Path, model: OpenAIModel) -> Evaluation:
    """Draw the samples from ``model`` and have it judge them, every exchange kept in ``path``."""
    live = recorded(model, path, mode="record")
    try:
        return evaluate(triage(live), INPUTS, model_grader(live, CRITERIA), samples=SAMPLES, progress=False)
    finally:
        model.close()


class LocalModel:
    """What the test server answers: the reader, sure of some ways of writing and not of others,
    and the judge, which knows the labels."""

    SURE = {"plain": 1.0, "where": 0.95, "late": 0.5, "gift": 0.9, "vague": 0.4}
    """How often the reader gets each way of writing right."""

    def __init__(self) -> None:
        self.chance = random.Random()

    def __call__(self, request: dict[str, Any]) -> Any:
        from openai_server import Reply

        system, asked = request["messages"][0]["content"], request["messages"][-1]["content"]
        if system.startswith("You check"):
            message, answer = re.fullmatch(r"Input:\n(.*)\n\nAnswer:\n(.*)", asked, re.DOTALL).groups()  # type: ignore[union-attr]
            right = _label_of(message) == answer.strip().strip(".").lower()
            return Reply(
                text=f"The desk read {answer!r}: {'right' if right else 'wrong'}.\n{'PASS' if right else 'FAIL'}"
            )
        way = next(
            way for way, (text, _) in WAYS.items() if re.fullmatch(re.escape(text).replace(r"\{\}", r"\d+"), asked)
        )
        label = WAYS[way][1]
        if self.chance.random() < self.SURE[way]:
            return Reply(text=label)
        return Reply(text=self.chance.choice([other for other in ("refund", "where", "other") if other != label]))


def _label_of(message: str) -> str:
    return next(label for text, label in CASES.values() if text == message)


def main(argv: list[str] | None = None) -> tuple[Evaluation, Evaluation]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--record", action="store_true", help="record the samples again (default: evaluate offline)")
    parser.add_argument("--model", help="record from this model of a real endpoint (default: the local test server)")
    parser.add_argument(
        "--out", type=Path, default=RECORDING, help=f"the recording (default: {RECORDING.relative_to(HERE.parent)})"
    )
    args = parser.parse_args(argv)
    if args.record:
        if args.model:
            recorded_with = record(args.out, OpenAIModel(args.model))
        else:
            sys.path.insert(0, str(HERE.parent / "tests"))
            from openai_server import OpenAIServer

            with OpenAIServer(LocalModel()) as server:
                recorded_with = record(args.out, OpenAIModel("triage-sim", base_url=server.base_url, max_retries=2))
        print(f"recorded {recorded_with.overall.samples} samples and their grading in {args.out}")
    judged, labelled = evaluate_offline(args.out)
    print("graded by the recorded judge:", judged, sep="\n")
    print("graded by code, against the labels:", labelled, sep="\n")
    return judged, labelled


if __name__ == "__main__":
    main()
