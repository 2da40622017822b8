"""Samples graded: k runs of each input, each judged pass or fail, pass rates with an interval.

:func:`evaluate` runs a batch of ``samples`` runs per input and hands each run to a grader:
code (``fn(sample) -> bool``) or a model (:func:`model_grader`, whose calls a
:func:`~nbgraph.recorded` model keeps like any other). The pass rate of each input and of
all of them comes with a Wilson score interval (:func:`wilson`), which stays inside [0, 1]
and means something for three samples as for three thousand. With the graph's model (and
the grader's) recorded, the samples are drawn from a real model once and evaluated again
offline for free.
"""

from __future__ import annotations

import asyncio
import html
import inspect
import json
import math
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from statistics import NormalDist
from typing import Any, NamedTuple

from ..engine.runner import run_blocking
from ..events import quoted
from ..llm.messages import SystemMessage, UserMessage, state_field
from ..llm.model import ChatRequest
from ._batch import Batch
from ._table import BatchRow

__all__ = [
    "Evaluation",
    "Graded",
    "Sample",
    "Score",
    "Verdict",
    "aevaluate",
    "evaluate",
    "model_grader",
    "wilson",
]


class Sample(NamedTuple):
    """One run of one input, as a grader gets it."""

    input_id: Any
    sample: int
    """Which of the input's samples (0, 1, ...)."""
    input: Any
    state: Any
    """The run's last state (as ``RunResult.state``: a model or a dict)."""
    row: BatchRow
    """The run's row: outcome, path, tokens, cost, error, thread."""

    @property
    def answer(self) -> str:
        """The last assistant message's text in the state's ``messages`` ("" when there is none)."""
        for message in reversed(state_field(self.state, "messages") or ()):
            if getattr(message, "role", None) == "assistant" or (
                isinstance(message, Mapping) and message.get("role") == "assistant"
            ):
                content = getattr(message, "content", None) if not isinstance(message, Mapping) else message["content"]
                return content or ""
        return ""


class Verdict(NamedTuple):
    """What a grader says of a sample: passed or not, and why (a model grader's reply)."""

    passed: bool
    why: str | None = None


class Graded(NamedTuple):
    """A sample and its verdict."""

    input_id: Any
    sample: int
    passed: bool
    why: str | None
    outcome: str
    thread: str | None


class Score(NamedTuple):
    """The samples of one input (or of all, ``input_id`` None) that passed, and the pass rate's interval."""

    input_id: Any
    samples: int
    passed: int
    rate: float
    low: float
    high: float


Grader = Callable[[Sample], "bool | Verdict | Awaitable[bool | Verdict]"]


def wilson(passed: int, total: int, z: float = 1.96) -> tuple[float, float]:
    """The Wilson score interval of a pass rate: ``passed`` of ``total`` at ``z`` (1.96: 95%).

    ``wilson(0, 10)`` is about ``(0.0, 0.278)``: none of ten passed, and the rate may still be
    28%; ``wilson(0, 0)`` is ``(0.0, 1.0)``, nothing known.
    """
    if total == 0:
        return 0.0, 1.0
    rate = passed / total
    spread = z * z / total
    centre = (rate + spread / 2) / (1 + spread)
    half = z * math.sqrt(rate * (1 - rate) / total + spread / (4 * total)) / (1 + spread)
    return max(0.0, centre - half), min(1.0, centre + half)


class Evaluation:
    """What :func:`evaluate` found: a :class:`Score` per input and overall, and every :class:`Graded` sample.

    Shown as a table (text, and HTML in a notebook).
    """

    def __init__(self, graph: str, graded: Sequence[Graded], order: Sequence[Any], rows: Sequence[BatchRow], z: float):
        self.graph = graph
        self.graded = tuple(graded)
        """Every sample's verdict, input by input."""
        self.rows = tuple(rows)
        """Every sample's batch row."""
        self.z = z
        self.confidence = 2 * NormalDist().cdf(z) - 1
        """What the intervals hold to (0.95 for ``z=1.96``)."""
        by_input: dict[Any, list[Graded]] = {input_id: [] for input_id in order}
        for each in self.graded:
            by_input[each.input_id].append(each)
        self.scores = tuple(self._score(input_id, samples) for input_id, samples in by_input.items())
        """A score per input, in the order of the inputs."""
        self.overall = self._score(None, self.graded)
        """All the samples together."""

    def _score(self, input_id: Any, samples: Sequence[Graded]) -> Score:
        passed = sum(each.passed for each in samples)
        low, high = wilson(passed, len(samples), self.z)
        return Score(input_id, len(samples), passed, passed / len(samples) if samples else 0.0, low, high)

    def score(self, input_id: Any) -> Score:
        """The score of one input."""
        for score in self.scores:
            if score.input_id == input_id:
                return score
        raise KeyError(f"no input {input_id!r} in this evaluation")

    def __repr__(self) -> str:
        overall = self.overall
        return (
            f"<Evaluation of {self.graph!r}: {overall.passed}/{overall.samples} passed "
            f"({overall.rate:.0%}, {self.confidence:.0%} interval {overall.low:.2f}-{overall.high:.2f}), "
            f"{len(self.scores)} inputs>"
        )

    def __str__(self) -> str:
        head = f"{'input':<20}{'passed':>9}{'rate':>7}  {self.confidence:.0%} interval"
        lines = [self._title(), head]
        for score in (*self.scores, self.overall):
            name = "overall" if score.input_id is None else str(score.input_id)
            lines.append(
                f"{name[:20]:<20}{f'{score.passed}/{score.samples}':>9}{score.rate:>7.2f}  "
                f"[{score.low:.2f}, {score.high:.2f}]"
            )
        return "\n".join(lines)

    def _title(self) -> str:
        counts = sorted({score.samples for score in self.scores})
        each = f", {counts[0]} each" if len(counts) == 1 else ""
        return f"evaluation of {self.graph!r}: {self.overall.samples} samples of {len(self.scores)} inputs{each}"

    def _repr_html_(self) -> str:
        cells = []
        for score in (*self.scores, self.overall):
            name = "overall" if score.input_id is None else str(score.input_id)
            weight = ' style="font-weight:bold"' if score.input_id is None else ""
            bar = (
                f'<div style="position:relative;height:0.7em;width:8em;background:var(--jp-layout-color2,#eee)">'
                f'<div style="position:absolute;left:{score.low * 100:.1f}%;width:{(score.high - score.low) * 100:.1f}%;'
                f'height:100%;background:var(--jp-brand-color2,#9cf)"></div>'
                f'<div style="position:absolute;left:{score.rate * 100:.1f}%;width:2px;height:100%;'
                f'background:var(--jp-brand-color0,#036)"></div></div>'
            )
            cells.append(
                f"<tr{weight}><td>{html.escape(name)}</td><td>{score.passed}/{score.samples}</td>"
                f"<td>{score.rate:.2f}</td><td>{score.low:.2f}&ndash;{score.high:.2f}</td><td>{bar}</td></tr>"
            )
        return (
            f"<table><caption>{html.escape(self._title())}</caption>"
            f"<tr><th>input</th><th>passed</th><th>rate</th><th>{self.confidence:.0%} interval</th><th></th></tr>"
            + "".join(cells)
            + "</table>"
        )


def evaluate(
    graph: Any,
    inputs: Iterable[Any] | Mapping[Any, Any],
    grader: Grader,
    *,
    samples: int = 1,
    z: float = 1.96,
    **options: Any,
) -> Evaluation:
    """Run ``graph`` ``samples`` times on each input, grade every run, and score each input.

    Args:
        graph: the graph to run (its model a :func:`~nbgraph.recorded` one, to draw the
            samples from a real model once and evaluate them again offline).
        inputs: a list of inputs or a dict ``{input id: input}``, as for a batch.
        grader: ``fn(sample) -> bool`` (or a :class:`Verdict`, or an awaitable of one), given
            each :class:`Sample` whose run ended ``done``; a run that ended otherwise fails
            without it. :func:`model_grader` makes one that asks a model.
        samples: runs per input (``k``).
        z: the intervals' width in standard deviations (1.96: 95%).
        **options: the options of a :class:`~nbgraph.batch.Batch` (``concurrency``,
            ``checkpointer``, ``executor``, ``progress``, ...); each sample's input id is
            ``"{input id}#{sample}"``.

    Returns:
        An :class:`Evaluation`: ``scores`` per input, ``overall``, every ``graded`` sample.

    Raises:
        RuntimeError: the grader failed on a sample (names the input and the sample).
    """
    return run_blocking(aevaluate(graph, inputs, grader, samples=samples, z=z, **options), all_sync=False)


async def aevaluate(
    graph: Any,
    inputs: Iterable[Any] | Mapping[Any, Any],
    grader: Grader,
    *,
    samples: int = 1,
    z: float = 1.96,
    **options: Any,
) -> Evaluation:
    """Async :func:`evaluate`."""
    if not isinstance(samples, int) or isinstance(samples, bool) or samples < 1:
        raise ValueError(f"samples must be a whole number of runs per input, at least 1, got {samples!r}")
    if not callable(grader):
        raise TypeError(f"grader must be a function of a Sample, got {type(grader).__name__}")
    for taken in ("table", "results"):
        if taken in options:
            raise TypeError(f"evaluate() keeps each run's result itself: it takes no {taken}=")
    given = dict(inputs) if isinstance(inputs, Mapping) else dict(enumerate(inputs))
    drawn = {f"{input_id}#{k}": (input_id, k) for input_id in given for k in range(samples)}
    batch = Batch(
        graph, {key: given[input_id] for key, (input_id, _) in drawn.items()}, table="rows", results=True, **options
    )
    rows: list[BatchRow] = await batch.run()
    plan = graph.compile()
    limit = asyncio.Semaphore(batch.concurrency)

    async def judged(row: BatchRow) -> Graded:
        input_id, k = drawn[row.input_id]
        if row.outcome != "done":
            return Graded(input_id, k, False, f"the run ended {row.outcome}: {row.error}", row.outcome, row.thread)
        sample = Sample(input_id, k, given[input_id], _state(batch, plan, row), row)
        async with limit:
            try:
                verdict = grader(sample)
                if inspect.isawaitable(verdict):
                    verdict = await verdict
            except Exception as exc:
                raise RuntimeError(
                    f"the grader failed on input {input_id!r}, sample {k}: {type(exc).__name__}: {exc}"
                ) from exc
        if not isinstance(verdict, Verdict):
            verdict = Verdict(bool(verdict))
        return Graded(input_id, k, verdict.passed, verdict.why, row.outcome, row.thread)

    graded = await asyncio.gather(*map(judged, rows))
    return Evaluation(getattr(graph, "name", "graph"), graded, list(given), rows, z)


def _state(batch: Batch, plan: Any, row: BatchRow) -> Any:
    """A sample's last state: its result's, or read back from the batch's store (a remote executor's run)."""
    result = batch.results.get(row.input_id)
    if result is not None:
        return result.state
    store = batch.checkpointer
    kept = store.get(row.thread) if store is not None and row.thread is not None else None
    return None if kept is None else plan.schema.output(plan.schema.decode(kept.state))


VERDICT_INSTRUCTIONS = "End your reply with PASS or FAIL, alone on its last line."


def model_grader(
    model: Any, instructions: str, *, show: Callable[[Sample], str] | None = None, node: str = "grader"
) -> Callable[[Sample], Awaitable[Verdict]]:
    """A grader that asks ``model`` whether a sample passes.

    The model gets ``instructions`` (the criteria) as its system prompt, told to end its reply
    with PASS or FAIL, and the sample as ``show(sample)`` shows it (by default the input's
    messages, or its JSON, and the run's answer). Its reply is the verdict's ``why``; a reply
    with neither word fails the sample. Give it a :func:`~nbgraph.recorded` model and its calls
    are kept too (under the node name ``node``), so the grading replays offline.
    """
    system = SystemMessage(id="system", content=f"{instructions.strip()}\n\n{VERDICT_INSTRUCTIONS}")
    shown = show or _shown

    async def grade(sample: Sample) -> Verdict:
        request = ChatRequest(messages=[system, UserMessage(id="sample", content=shown(sample))], node=node)
        reply = await model.complete(request, _unseen)
        words = [word.strip(".*:!") for word in reply.text.split()]
        verdicts = [word for word in words if word in ("PASS", "FAIL")]
        if not verdicts:
            return Verdict(False, f"the grader's reply says neither PASS nor FAIL: {quoted(reply.text, 200)}")
        return Verdict(verdicts[-1] == "PASS", reply.text)

    grade.__name__ = grade.__qualname__ = f"model_grader({getattr(model, 'name', '?')})"
    return grade


def _unseen(piece: str) -> None:
    """(A grader's reply is read whole: nobody watches it stream.)"""


def _shown(sample: Sample) -> str:
    return f"Input:\n{_input_text(sample.input)}\n\nAnswer:\n{sample.answer or _json(sample.state)}"


def _input_text(value: Any) -> str:
    messages = state_field(value, "messages")
    if isinstance(messages, (list, tuple)) and messages:
        return "\n".join(
            str(getattr(m, "content", None) or (m.get("content") if isinstance(m, Mapping) else m)) for m in messages
        )
    return value if isinstance(value, str) else _json(value)


def _json(value: Any) -> str:
    from pydantic_core import to_jsonable_python

    return json.dumps(to_jsonable_python(value, fallback=str), ensure_ascii=False, sort_keys=True)
