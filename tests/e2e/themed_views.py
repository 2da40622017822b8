"""Real views in the states the theme tests look at: what anywidget would send a browser.

Each state is a view of a real run (or batch) made here by nbgraph itself, taken as its traits,
with the kernel's replies to the messages the test's clicks send (a node's step for the
inspector, an edge's inputs): a browser page draws it with the built module and no kernel.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pydantic
from turns import wait_until, within

from nbgraph import END, START, Batch, Deadline, Graph, MessagesState
from nbgraph.batch_view import BatchView
from nbgraph.llm import Reply, ScriptedModel, llm_node, tool
from nbgraph.widget import GraphView

WARN_LEFT = 40
"""Seconds left on the paused box's deadline: inside its last minute, so it warns."""
RATE = 1e6
"""Updates a second the views may send: each change reaches the traits at once."""


def _traits(view: Any) -> dict[str, Any]:
    """The traits a browser gets (the model's synced state, less anywidget's own)."""
    shared = {"layout", "tabbable", "tooltip"}
    return {k: v for k, v in view.get_state().items() if not k.startswith("_") and k not in shared}


def _replies(view: Any, requests: Iterable[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """``[request, reply]`` for each message, as the view's kernel side answers it."""
    pairs = []
    for request in requests:
        sent: list[dict[str, Any]] = []
        original = view.send
        view.send = lambda content, buffers=None, sent=sent: sent.append(content)
        try:
            view._handle_custom_msg(request, [])
        finally:
            view.send = original
        (reply,) = sent
        pairs.append([request, json.loads(json.dumps(reply, default=str))])
    return pairs


def _letter(deadline: float | None = None) -> Graph:
    """fetch, then draft (approved after it runs), then send (approved before; a denial holds it)."""
    g = Graph("letter")
    g.add_node("fetch", lambda s: {"order": "A1"})
    g.add_node("draft", lambda s: {"draft": "Dear customer, your refund of 40 EUR is on its way."}, approval=True)
    g.add_node(
        "send",
        lambda s: {"sent": True},
        approval="before",
        on_deny="hold",
        deadline=Deadline(deadline) if deadline else None,
    )
    g.add_node("hold", lambda s: {"held": True})
    g.add_edge(START, "fetch")
    g.add_edge("fetch", "draft")
    g.add_edge("draft", "send")
    g.add_edge("send", END)
    g.add_edge("hold", END)
    return g


async def paused() -> dict[str, Any]:
    """A run waiting at an approval with a deadline nearly up; one decision made before it."""
    run = _letter(deadline=3600).start({}, display=False)
    view = GraphView.for_run(run, max_rate=RATE)
    first = await run.next_pause(timeout=5)
    run.answer(True, pause=first.id, reason="reads well")
    gate = await run.next_pause(timeout=5)
    await wait_until(lambda: view.pending and view.pending[0]["id"] == gate.id and view.decisions.get("rows"))
    traits = _traits(view)
    # The kernel's clock WARN_LEFT seconds before the deadline: the box counts its last minute.
    traits["status"] = {**traits["status"], "clock": gate.deadline - WARN_LEFT}
    replies = _replies(view, [{"type": "inspect", "node": "draft"}])
    run.cancel()
    await within(run)
    return {"kind": "graph", "traits": traits, "replies": replies}


def _desk() -> Graph:
    @tool(approval=True)
    def refund(order: str, amount: float, notify: bool = True) -> str:
        """Refund part or all of an order."""
        return f"refunded {amount:g} on {order}"

    def reply(messages):
        return Reply(tool_calls=[("refund", {"order": "A1", "amount": 40})]) if len(messages) < 3 else "Done"

    g = Graph("desk", state=MessagesState)
    g.add_node("agent", llm_node("You refund orders.", model=ScriptedModel(reply), tools=[refund]))
    g.add_edge(START, "agent")
    g.add_edge("agent", END)
    return g


async def tool_call() -> dict[str, Any]:
    """A run waiting on a tool call: its arguments as a form."""
    run = _desk().start({"messages": [{"role": "user", "content": "Refund A1"}]}, display=False)
    view = GraphView.for_run(run, max_rate=RATE)
    pause = await run.next_pause(timeout=5)
    await wait_until(lambda: view.pending and view.pending[0]["id"] == pause.id)
    traits = _traits(view)
    run.cancel()
    await within(run)
    return {"kind": "graph", "traits": traits, "replies": []}


async def finished() -> dict[str, Any]:
    """A run that ended: draft approved, send denied (the run held the letter); the slider, the decisions."""
    run = _letter().start({}, display=False)
    view = GraphView.for_run(run, max_rate=RATE)
    draft = await run.next_pause(timeout=5)
    run.answer(True, pause=draft.id, reason="reads well")
    send = await run.next_pause(timeout=5)
    run.answer(False, pause=send.id, reason="not before the refund clears")
    await within(run)
    await wait_until(lambda: view.status.get("state") == "done" and view.frames and view.decisions.get("rows"))
    replies = _replies(view, [{"type": "inspect", "node": "draft"}])
    return {"kind": "graph", "traits": _traits(view), "replies": replies}


def _parser() -> Graph:
    def parse(state):
        raise ValueError("the order number 'A-1' is not a number")

    g = Graph("orders")
    g.add_node("fetch", lambda s: {"raw": "A-1"})
    g.add_node("parse", parse)
    g.add_edge(START, "fetch")
    g.add_edge("fetch", "parse")
    g.add_edge("parse", END)
    return g


async def failed() -> dict[str, Any]:
    """A run whose node raised: the run failed there."""
    run = _parser().start({}, display=False)
    view = GraphView.for_run(run, max_rate=RATE)
    await within(run)  # (a failed run ends with a result; it does not raise)
    await wait_until(lambda: view.status.get("state") == "done" and view.status.get("outcome") == "failed")
    replies = _replies(view, [{"type": "inspect", "step": 2, "where": "parse"}])  # (its log line)
    return {"kind": "graph", "traits": _traits(view), "replies": replies}


async def running() -> dict[str, Any]:
    """A run with a node running."""
    go = asyncio.Event()

    async def think(state):
        await go.wait()
        return {"thought": "done"}

    g = Graph("thinker")
    g.add_node("read", lambda s: {"read": True})
    g.add_node("think", think)
    g.add_edge(START, "read")
    g.add_edge("read", "think")
    g.add_edge("think", END)
    run = g.start({}, display=False)
    view = GraphView.for_run(run, max_rate=RATE)
    await wait_until(lambda: view.status.get("current") == "think")
    traits = _traits(view)
    go.set()
    await within(run)
    return {"kind": "graph", "traits": traits, "replies": []}


class _Numbers(pydantic.BaseModel):
    n: int
    route: str = ""


def _routed() -> Graph:
    def work(state):
        if state.n == 3:
            raise ValueError("no 3")
        return {"route": "odd" if state.n % 2 else "even"}

    g = Graph("numbers", state=_Numbers)
    g.add_node("work", work)
    g.add_node("odd", lambda s: None)
    g.add_node("even", lambda s: None)
    g.add_edge(START, "work")
    g.add_edge("work", "odd", when=lambda s: s.route == "odd", label="odd")
    g.add_edge("work", "even")
    g.add_edge("odd", END)
    g.add_edge("even", END)
    return g


async def batch() -> dict[str, Any]:
    """A batch that ended, one run of six failed; an edge's inputs as the view asks for them."""
    run = Batch(_routed(), {f"i{n}": {"n": n} for n in range(6)}, concurrency=2, progress=False, table="rows")
    view = BatchView.for_batch(run, max_rate=RATE)
    await within(run.run())
    await wait_until(lambda: view.counts.get("finished"))
    replies = _replies(view, [{"type": "inputs", "edge": "work\u2192odd"}])
    return {"kind": "batch", "traits": _traits(view), "replies": replies}


async def _all() -> dict[str, dict[str, Any]]:
    return {
        "paused": await paused(),
        "tool": await tool_call(),
        "running": await running(),
        "finished": await finished(),
        "failed": await failed(),
        "batch": await batch(),
    }


def states() -> dict[str, dict[str, Any]]:
    """Every state, by name: ``{"kind", "traits", "replies"}``, as JSON a page reads.

    Made in a loop of their own, on a thread of their own (Playwright's synchronous API keeps
    a loop running in the test's thread)."""
    with ThreadPoolExecutor(1) as pool:
        made = pool.submit(asyncio.run, _all()).result()
    return json.loads(json.dumps(made, default=str))
