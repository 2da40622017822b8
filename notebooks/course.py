"""What the course's notebooks share: your turn at a live run, exercise verdicts, an
earlier notebook's definitions, tutorials 11 and 12's labelled cases, the recordings tutorial 12
replays, and an optional real model.

Every notebook runs offline and from top to bottom (Run All). Where a lesson asks you to
act in a run's view (answer, approve, Steer, Stop), the cell waits for you with a time
limit it prints, then acts for you and says so, so Run All never hangs and never fails
because nobody clicked. ``COURSE_WAIT`` sets that limit in seconds (default 60); with
``NBGRAPH_AUTO_ANSWER=1`` (CI, nbconvert) the cells act at once, and so they do, saying
why, on a kernel that reads no click while a cell waits (Colab's: nbgraph.waiting.unheard).
"""

from __future__ import annotations

import asyncio
import getpass
import json
import os
import time
import types
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from IPython.core.getipython import get_ipython
from IPython.utils.capture import capture_output

from nbgraph import END, START, Graph, NbgraphError, Resume, Run, RunResult
from nbgraph.llm import MessagesState, OpenAIModel, llm_node
from nbgraph.pauses import Pause
from nbgraph.waiting import unheard

__all__ = [
    "RECORDINGS",
    "CourseError",
    "act_or_wait",
    "answer_or_wait",
    "real_model",
    "rebuild",
    "returns_cases",
    "run_to_end",
    "smoke_test",
    "stale",
    "triage_cases",
    "verdict",
]

Answers = Sequence[Any] | Callable[[Pause], Any]
"""What to answer when nobody does: one answer per pause, in the order the run pauses,
or a function of the pause."""

OFFLINE = (
    "Offline: no real model is set, so the real-model cells print a note and skip; every other "
    "cell runs on scripted models. To use one, fill in BASE_URL and MODEL (a local server) or set "
    "ASK_FOR_KEY = True (OpenAI) in the setup cell and run it again (reference/real-model.md)."
)


_CLICK_LATER = (
    "To click yourself, start the run in a cell of its own (run = ...start(...)), answer in its view, "
    "and read run.result() in the next cell."
)


class CourseError(NbgraphError):
    """A course notebook cannot go on: what is wrong, and how to fix it."""


def _wait() -> float:
    """Seconds a cell waits for you before it acts for you."""
    text = os.environ.get("COURSE_WAIT", "60")
    try:
        wait = float(text)
    except ValueError:
        wait = 0.0
    if not wait > 0:
        raise CourseError(f"COURSE_WAIT must be a number of seconds above 0, not {text!r}")
    return wait


def _auto() -> bool:
    return bool(os.environ.get("NBGRAPH_AUTO_ANSWER"))


async def _until(holds: Callable[[], bool], seconds: float | None) -> bool:
    """Whether ``holds()`` came true within ``seconds`` (None: wait as long as it takes).

    It polls: what it waits for is a click in the view or a run's progress, which
    announce themselves to nobody in particular. Awaiting keeps the kernel reading the
    view's messages meanwhile.
    """
    loop = asyncio.get_running_loop()
    deadline = None if seconds is None else loop.time() + seconds
    while not holds():
        if deadline is not None and loop.time() >= deadline:
            return False
        await asyncio.sleep(0.05)
    return True


def _picker(answers: Answers) -> Callable[[Pause], Any]:
    if callable(answers):
        return answers
    remaining: Iterator[Any] = iter(answers)

    def next_answer(pause: Pause) -> Any:
        try:
            return next(remaining)
        except StopIteration:
            raise CourseError(
                f"the run paused at {pause.node!r} ({pause.kind}) more often than this cell has answers for: "
                f"it gave {len(answers)}"
            ) from None

    return next_answer


def _asks(pause: Pause) -> str:
    """What the view asks of you at ``pause``."""
    if pause.kind == "approval" and pause.at == "before":
        return f"{pause.node!r} has not run yet: press Approve to let it run, or Deny so it never does"
    if pause.kind == "approval":
        return f"{pause.node!r} ran: press Approve to keep what it changed, or Deny to drop it"
    if pause.kind == "tool":
        calls = ", ".join(call.name for call in pause.tool_calls)
        return f"decide on the call to {calls} before it runs: Approve (edited, if you like), Reject or Respond"
    if pause.kind == "breakpoint":
        return f"the run stopped {pause.at} {pause.path!r}: press Continue, Step or Stop"
    if pause.kind == "budget":
        return "a budget is nearly spent: press Raise and go on, or Stop"
    if pause.options:
        return f"answer {pause.prompt!r} with one of its buttons ({', '.join(pause.options)})"
    return f"type an answer to {pause.prompt!r} and press Send"


def _said(pause: Pause, answer: Any) -> str:
    if pause.kind == "approval" and isinstance(answer, bool):
        return "Approve" if answer else "Deny"
    return repr(answer)


async def answer_or_wait(run: Run, answers: Answers) -> RunResult:
    """Wait for you to answer ``run``'s pauses in its view, then return its result.

    A pause nobody answers within ``COURSE_WAIT`` seconds is answered from code with
    ``answers``, and so is every later one (with ``NBGRAPH_AUTO_ANSWER`` set, all are; on a
    kernel that reads no click while a cell waits, such as Colab's, too, and the cell says why).
    A run that gave up waiting because no browser shows the notebook (nbconvert, CI)
    ended ``interrupted``: it is resumed from its checkpoint with them.
    """
    pick = _picker(answers)
    wait = _wait()
    for_you = _auto()
    answered: set[str] = set()
    while (pause := await run.next_pause()) is not None:
        if pause.id in answered:
            break  # the run did not take the answer: awaiting it below says why
        if not for_you and (why := unheard()) is not None:
            # Nobody's click could reach this cell before it ends: say so, rather than wait for one.
            print(
                f"Your turn would be in the view above ({_asks(pause)}), but {why}: so this cell answers for you, "
                f"and any later pause. {_CLICK_LATER}"
            )
            for_you = True
        if not for_you:
            print(
                f"Your turn, in the view above: {_asks(pause)}. This cell waits up to {wait:g} s, then answers for you."
            )
            if await _until(lambda: pause not in run.pauses or run.done, wait):
                continue  # answered in the view (or the run gave up waiting: see below)
            for_you = True
            print(f"Nobody answered within {wait:g} s, so this cell answered for you (and answers any later pause).")
        answer = pick(pause)
        print(f"Answered from code: {_said(pause, answer)} at {pause.node!r}.")
        run.answer(answer, pause=pause.id)
        answered.add(pause.id)
    result = await run
    if result.outcome == "interrupted" and result.pauses:
        print(
            "No browser shows this notebook, so nobody could answer in the view (the run gave up waiting); "
            "this cell answered for you and resumed the run from its checkpoint."
        )
    while result.outcome == "interrupted" and result.pauses:
        pause = result.pauses[0]
        answer = pick(pause)
        print(f"Answered from code: {_said(pause, answer)} at {pause.node!r}.")
        result = await run.graph.ainvoke(Resume(result, answer, pause=pause.id))
    return result


async def act_or_wait(
    run: Run,
    what: str,
    act: Callable[[], Any],
    *,
    acted: Callable[[], bool],
    ready: Callable[[], bool] = lambda: True,
) -> RunResult:
    """Wait for you to do ``what`` in ``run``'s view (``acted()`` tells), then return its result.

    Nobody acting within ``COURSE_WAIT`` seconds (or ``NBGRAPH_AUTO_ANSWER`` set), this
    cell calls ``act()`` itself, once ``ready()`` holds (at the moment the lesson is about).
    On a kernel that reads no click while a cell waits, it says so and acts at once.
    """
    if not _auto() and (why := unheard()) is not None:
        print(f"Your turn would be in the view above ({what}), but {why}: so this cell does it for you. {_CLICK_LATER}")
    elif not _auto():
        wait = _wait()
        print(f"Your turn, in the view above: {what}. This cell waits up to {wait:g} s, then does it for you.")
        if await _until(lambda: acted() or run.done, wait):
            if acted():
                print("Done in the view.")
            else:
                print(f"The run ended ({run.result().outcome}) before anyone could {what}.")
            return await run
        print(f"Nobody did within {wait:g} s, so this cell does it for you.")
    await _until(lambda: ready() or run.done, None)
    if not run.done:
        act()
    return await run


def run_to_end(graph: Graph, input: Any, answers: Answers = ()) -> RunResult:
    """``graph.invoke(input)``, resumed at every pause with the next of ``answers``."""
    pick = _picker(answers)
    result = graph.invoke(input)
    while result.outcome == "interrupted" and result.pauses:
        pause = result.pauses[0]
        result = graph.invoke(Resume(result, pick(pause), pause=pause.id))
    return result


def verdict(problems: Sequence[str], solved: str) -> None:
    """Print what is still wrong with an exercise, or ``solved``; never raises, so Run All goes on."""
    if problems:
        print("Not yet:\n" + "\n".join(f"- {problem}" for problem in problems))
    else:
        print(f"Solved: {solved}")


def _defined_here(value: Any) -> bool:
    """A function or class a cell of this notebook defined (not one imported or made by nbgraph)."""
    return isinstance(value, (types.FunctionType, type)) and value.__module__ == "__main__"


def stale(graph: Graph, cell: str, nodes: Sequence[str] = ()) -> list[str]:
    """What the notebook changed since ``graph`` was built that ``graph`` does not see: a node's
    function or the state class defined again since (a graph keeps the objects it was built with),
    and the functions in ``nodes`` that are defined but are no node of it. ``cell`` names the cell
    that builds ``graph`` (``"%%graph writer"``), which the learner runs again."""
    shell = get_ipython()
    namespace = shell.user_ns if shell is not None else {}
    problems = []
    for name, spec in graph.nodes.items():
        built = spec.fn
        now = namespace.get(getattr(built, "__name__", ""))
        if spec.graph is None and _defined_here(built) and _defined_here(now) and now is not built:
            node = "" if built.__name__ == name else f" (node {name})"
            problems.append(
                f"{built.__name__} was defined again after the `{cell}` cell ran, and {graph.name}{node} still runs "
                f"the {built.__name__} it was built with: run the `{cell}` cell again (a graph keeps the functions "
                "it was built with)"
            )
    state = graph.state
    if _defined_here(state) and _defined_here(now := namespace.get(state.__name__)) and now is not state:
        problems.append(
            f"{state.__name__} was defined again after the `{cell}` cell ran, and {graph.name} still uses the "
            f"{state.__name__} it was built with: run the `{cell}` cell again"
        )
    for name in nodes:
        if name not in graph.nodes and callable(namespace.get(name)):
            problems.append(
                f"{name} is defined, but {graph.name} has no node {name}: put it in the `{cell}` cell, and run that "
                "cell again"
            )
    return problems


def rebuild(notebook: str) -> None:
    """Run the cells tagged ``build`` of another notebook of the course in this kernel.

    Those cells hold that notebook's definitions (imports, state, nodes, graphs) and none
    of its runs, so a later part or a solution can start where that notebook left off.
    Their output stays hidden: it belongs to that notebook.
    """
    path = Path(notebook)
    shell = get_ipython()
    if shell is None:
        raise CourseError("rebuild() runs notebook cells: call it from a notebook")
    try:
        cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    except FileNotFoundError:
        raise CourseError(f"no notebook {notebook!r} (paths are relative to this notebook's folder)") from None
    built = 0
    for number, cell in enumerate(cells, 1):
        if "build" not in cell.get("metadata", {}).get("tags", ()):
            continue
        source = cell["source"] if isinstance(cell["source"], str) else "".join(cell["source"])
        with capture_output():
            outcome = shell.run_cell(source, store_history=False, silent=True)
        if not outcome.success:
            error = outcome.error_in_exec or outcome.error_before_exec
            raise CourseError(f"{path.name}, cell {number} (tagged build) failed: {type(error).__name__}: {error}")
        built += 1
    print(f"Rebuilt {path.name}: its {built} cells tagged build ran here.")


# -- tutorial 11's labelled cases ----------------------------------------------------------------
# Kept here, outside the notebook, so that the check reads labels no cell can change: a label that
# moves to fit the agent measures nothing.

_WAYS = {  # how customers write; {} is the order number
    "hash": "Please refund #{}, it arrived broken.",
    "short": "Refund #{} please, wrong size.",
    "word": "I want to return order {}, it does not fit.",
    "Word": "Order {} came damaged. Can I have my money back?",
    "none": "My parcel came broken. I called 0800 and nobody answered. Refund please.",
}
_ORDERS = ("1042", "1043", "1044", "1045", "2001", "2002", "2003", "2004", "3003", "3004")
_ENDING = {order: ("refund",) for order in ("1042", "1043", "1044", "1045")}  # 100 € or less
_ENDING |= {"2001": ("big_refund",), "2002": ("big_refund",), "3003": ("refuse",), "3004": ("refuse",)}
_ENDING |= {"2003": ("big_refund", "hand_over"), "2004": ("big_refund", "hand_over")}  # over 300 €: denied
_ASKED, _READ = ("read_order", "ask_order", "look_up"), ("read_order", "look_up")
_HELD_OUT = [  # written apart from the fifty, each labelled by a person
    ("ORDER 2002 arrived in pieces.", "2002", (*_READ, "big_refund")),
    ("Hi! My order 1043 is the wrong colour.", "1043", (*_READ, "refund")),
    ("Refund for order 3004, please.", "3004", (*_READ, "refuse")),
    ("Wrong item in my order 2003.", "2003", (*_READ, "big_refund", "hand_over")),
    ("I paid 1250 SEK for a kettle that leaks. Refund please.", "1044", (*_ASKED, "refund")),
    ("Call me on 0800 1234 about #2001.", "2001", (*_READ, "big_refund")),
    ("The order arrived broken: #1042.", "1042", (*_READ, "refund")),
]


def returns_cases(which: str) -> dict[str, dict[str, Any]]:
    """Tutorial 11's labelled messages, a fresh copy at each call: ``"fifty"``, five ways of writing
    times ten orders, labelled by the lesson's rules; ``"held out"``, seven more the check keeps
    apart. A case is ``{"message", "order", "route"}``; its route is its label."""
    if which == "fifty":
        return {
            f"{way}-{order}": {
                "message": text.format(order),
                "order": order,
                "route": (*(_READ if "{}" in text else _ASKED), *_ENDING[order]),
            }
            for way, text in _WAYS.items()
            for order in _ORDERS
        }
    if which == "held out":
        return {
            f"held-out-{n}": {"message": message, "order": order, "route": route}
            for n, (message, order, route) in enumerate(_HELD_OUT, 1)
        }
    raise CourseError(f"returns_cases({which!r}): there are 'fifty' and 'held out'")


# -- tutorial 12's labelled messages and its recording ------------------------------------------

RECORDINGS = Path(__file__).resolve().parent / "recordings"
"""The course's recorded model calls (``recordings/``, beside the lessons): a path that holds
from the solutions' folder too, where a solution rebuilds a lesson."""

_TRIAGE = {  # how customers write, and what they want; {} is the order number
    "plain": ("Please refund #{}, it arrived broken.", "refund"),
    "where": ("Where is my parcel? Order #{} has not arrived.", "where"),
    "late": ("Order {} is two weeks late, I would rather have my money back.", "refund"),
    "gift": ("Do you sell gift cards? I liked order {} a lot.", "other"),
    "vague": ("Something is wrong with order {}, can you help?", "other"),
}


def triage_cases() -> dict[str, dict[str, str]]:
    """Tutorial 12's fifty messages, a fresh copy at each call: five ways of writing times tutorial
    11's ten orders, keyed ``"late-1042"``. A case is ``{"message", "label"}``; its label, what the
    customer wants, is ``refund``, ``where`` (where is my parcel) or ``other``."""
    return {
        f"{way}-{order}": {"message": text.format(order), "label": label}
        for way, (text, label) in _TRIAGE.items()
        for order in _ORDERS
    }


def real_model(*, model: str = "", base_url: str = "", ask_for_key: bool = False) -> OpenAIModel | None:
    """The model for the real-model cells, or None (offline, with a note saying how to set one).

    ``base_url`` (else ``OPENAI_BASE_URL``) is a server's address and then needs ``model``
    (else ``NBGRAPH_MODEL``), the name it serves: no name is guessed for a server.
    ``ask_for_key`` asks for a key in a hidden field (else ``OPENAI_API_KEY``); a key
    without a server is OpenAI's, where ``model`` defaults to gpt-4o-mini.
    """
    base = base_url or os.environ.get("OPENAI_BASE_URL", "")
    name = model or os.environ.get("NBGRAPH_MODEL", "")
    key = getpass.getpass("API key (hidden; kept in this kernel only): ") if ask_for_key else ""
    key = key or os.environ.get("OPENAI_API_KEY", "")
    if base and not name:
        raise CourseError(
            f"BASE_URL is {base!r} but MODEL is empty: set MODEL to the name that server serves "
            f"(Ollama: `ollama list`; vLLM: the model it was started with; {base.rstrip('/')}/models lists them)"
        )
    if not base and not key:
        if name:
            raise CourseError(
                f"MODEL is {name!r} but there is nowhere to send it: set BASE_URL for a local server, "
                "or ASK_FOR_KEY = True for OpenAI"
            )
        print(OFFLINE)
        return None
    chosen = OpenAIModel(name or "gpt-4o-mini", base_url=base or None, api_key=key or None)
    print(f"Real model: {chosen.name} at {base or 'OpenAI'}. The smoke test below checks that it answers.")
    return chosen


def smoke_test(model: Any) -> None:
    """One short call to ``model``: what it replied, in how long; a note instead when offline."""
    if model is None:
        print("Smoke test skipped: offline (no real model set above).")
        return
    probe = Graph("smoke_test", state=MessagesState, model=model, max_steps=1)
    probe.add_node("ask", llm_node("Reply with the single word: ready"))
    probe.add_edge(START, "ask")
    probe.add_edge("ask", END)
    started = time.perf_counter()
    result = probe.invoke({"messages": ["Are you there?"]})
    if result.outcome != "done":
        raise CourseError(f"the smoke test got no reply from {model.name}: {result.reason}")
    reply = result.state.messages[-1].content
    print(
        f"Smoke test passed: {model.name} replied {reply[:80]!r} in {time.perf_counter() - started:.1f} s "
        f"({result.history[-1].tokens} tokens)."
    )
