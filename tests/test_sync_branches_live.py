"""Plain ``def`` nodes as branches of a live run: each may wait for a person (an approval, a
breakpoint, ``ctx.ask``), so they wait together, answered in any order, and cancelling the
run while they wait ends it ``aborted``."""

from __future__ import annotations

import asyncio
from typing import Annotated

import pydantic
from turns import wait_until, within

from nbgraph import END, START, Graph, append


class Words(pydantic.BaseModel):
    items: list[str] = []
    got: Annotated[list[str], append] = []


def words(node, **options) -> Graph:
    g = Graph("words", state=Words)
    g.add_node("plan", lambda s: {"items": ["a", "b", "c"]})
    g.add_node("word", node, **options)
    g.add_edge(START, "plan")
    g.add_edge("plan", "word", each=lambda s: s.items)
    g.add_edge("word", END)
    return g


def upper(item):
    return {"got": [item.upper()]}


def ask(item, ctx):
    return {"got": [f"{item}:{ctx.ask(f'{item}?')}"]}


async def answer_in_reverse(g: Graph, answer, **start) -> list[str]:
    run = g.start({}, display=False, **start)
    await wait_until(lambda: len(run.pauses) == 3)  # every branch waits at once
    for pause in reversed(run.pauses):
        run.answer(answer(pause), pause=pause.id)
    result = await within(run)
    assert result.outcome == "done", result.reason
    return result.state.got


async def test_synchronous_branches_wait_for_their_approvals_together():
    assert await answer_in_reverse(words(upper, approval=True), lambda pause: True) == ["A", "B", "C"]


async def test_synchronous_branches_stop_at_a_breakpoint_together():
    g = words(upper).breakpoints(before=["word"])
    assert await answer_in_reverse(g, lambda pause: "continue") == ["A", "B", "C"]


async def test_synchronous_branches_asking_wait_for_their_answers_together():
    got = await answer_in_reverse(words(ask), lambda pause: pause.prompt.rstrip("?").upper())
    assert got == ["a:A", "b:B", "c:C"]  # folded in the map's order, not the answers'


async def test_a_run_cancelled_while_synchronous_branches_wait_ends_aborted():
    run = words(ask).start({}, display=False)
    await wait_until(lambda: len(run.pauses) == 3)
    run.cancel()
    result = await within(run)
    assert result.outcome == "aborted"
    assert result.state.got == []


async def test_waiting_for_more_pauses_with_next_pause_lets_the_run_go_on():
    async def late(item, ctx):
        for _ in range(int(item == "c") * 20):  # the last branch asks a few loop turns later
            await asyncio.sleep(0)
        return {"got": [f"{item}:{await ctx.request_input(f'{item}?')}"]}

    run = words(late).start({}, display=False)
    for _ in range(100):  # bounded: a next_pause that returns an open pause without a turn spins here
        if len(run.pauses) == 3:
            break
        await run.next_pause(timeout=5)
    assert [pause.prompt for pause in run.pauses] == ["a?", "b?", "c?"]
    run.answer({pause.id: "ok" for pause in run.pauses})
    assert (await within(run)).state.got == ["a:ok", "b:ok", "c:ok"]
