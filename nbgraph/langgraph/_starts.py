"""Runs that go on from a thread's steps: :func:`forked` from the checkpoint after a step,
:func:`resumed` from the pauses the thread ended waiting at. Neither is launched yet.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..answering import Given
from ..errors import NoPendingRequest
from ._run import IN_LANGGRAPH, LangGraphRun
from ._thread import ThreadSteps

__all__ = ["forked", "resumed"]


def forked(
    steps: ThreadSteps,
    step: int,
    update: Any = None,
    input: Any = None,
    options: Mapping[str, Any] | None = None,
) -> LangGraphRun:
    """A run (not yet launched) going on from the checkpoint after ``step`` of ``steps``,
    holding the steps up to it: with ``input``, as ``invoke(input, config of that
    checkpoint)`` goes on (a new question to a chat as it was then); else from the
    checkpoint as it is."""
    if isinstance(step, bool) or not isinstance(step, int) or step not in steps.checkpoints:
        known = sorted(steps.checkpoints)
        told = f"steps {known[0]} to {known[-1]}" if known else "no checkpoints"
        raise ValueError(f"thread {steps.thread!r} has {told} to fork from, not {step!r}")
    kept = []
    waiting = []  # a sub-graph's steps, kept with the step of the node that ran it
    for entry in steps.entries:
        if "/" in entry.record.path:
            waiting.append(entry)
        elif entry.record.step <= step:
            kept += [*waiting, entry]
            waiting = []
        else:
            break
    shared = steps._replace(entries=tuple(kept), checkpoints={k: v for k, v in steps.checkpoints.items() if k <= step})
    return LangGraphRun(
        steps.app,
        input,
        steps.config,
        steps.plan,
        shared=shared,
        fork=(steps.checkpoints[step], update),
        options=_kept(steps, options),
    )


def _kept(steps: ThreadSteps, options: Mapping[str, Any] | None) -> dict[str, Any]:
    """The options of the run ``steps`` came from, with those given now (not None) instead."""
    return {**steps.options, **{key: value for key, value in (options or {}).items() if value is not None}}


def resumed(
    steps: ThreadSteps,
    answer: Any = None,
    pause: str | None = None,
    options: Mapping[str, Any] | None = None,
    how: Given = IN_LANGGRAPH,
) -> LangGraphRun:
    """A run (not yet launched) that goes on from the pauses ``steps`` ended waiting at, with
    ``answer`` bound to them by the rule :meth:`LangGraphRun.answer` follows and recorded as
    ``how`` says; the pauses it does not answer stay open in the new run.

    Raises:
        NoPendingRequest: the thread waits at no pause.
        ResumeError: the answer names a pause that is not open, cannot say which of several
            it is for, or does not fit its pause.
    """
    if not steps.pauses:
        raise NoPendingRequest(
            f"thread {steps.thread!r} waits at no pause"
            + (f" (it ended {steps.outcome})" if steps.outcome and steps.outcome != "interrupted" else "")
        )
    config = {**steps.config, "configurable": dict(steps.config["configurable"])}
    config["configurable"].pop("checkpoint_id", None)  # (it goes on from the thread's latest checkpoint)
    run = LangGraphRun(
        steps.app, None, config, steps.plan, shared=steps, waiting=steps.pauses, options=_kept(steps, options)
    )
    run.answer_on_launch(steps.pauses, answer, pause, how)
    return run
