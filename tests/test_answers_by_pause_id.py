"""An answer lands on the pause it names, or nowhere.

Two branches of a map each ask for input; the run ends ``interrupted`` with both
pauses open. Answers given by pause id, as plain values, by thread id or by the paused
result, live or from a checkpoint (memory, SQLite, a real redis-server), and from ten
processes at once: a mapping that names a pause no longer open is refused with that
pause's story and never becomes another pause's answer.
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Annotated

import pydantic
import pytest
from forked import Forker

from nbgraph import (
    END,
    START,
    Graph,
    MemoryCheckpointer,
    RedisCheckpointer,
    Resume,
    ResumeError,
    Send,
    SQLiteCheckpointer,
    merge,
)
from nbgraph.pauses import answers_by_id


class Asked(pydantic.BaseModel):
    items: list[str] = ["A", "B"]
    answers: Annotated[dict[str, object], merge] = {}


def asking_graph() -> Graph:
    """A map of ``items``, each branch asking for its own answer."""

    async def ask(item, ctx):
        return {"answers": {item: await ctx.request_input(f"answer for {item}")}}

    g = Graph("asking", state=Asked)
    g.add_node("fan", lambda s: [Send("ask", item) for item in s.items], destinations=["ask"])
    g.add_node("ask", ask)
    g.add_edge(START, "fan")
    g.add_edge("ask", END)
    return g


@pytest.fixture(params=["memory", "sqlite", "redis"])
def store(request, tmp_path):
    if request.param == "memory":
        return MemoryCheckpointer()
    if request.param == "sqlite":
        return SQLiteCheckpointer(tmp_path / "runs.db")
    return RedisCheckpointer(request.getfixturevalue("redis_url"), prefix=f"answers-{uuid.uuid4().hex[:8]}")


def by_prompt(result) -> dict:
    return {pause.prompt[-1]: pause for pause in result.pauses}


@pytest.mark.parametrize("by", ["thread", "result"])
def test_a_stale_mapping_is_refused_with_its_story_and_never_answers_another_pause(store, by):
    g = asking_graph()
    first = g.invoke({}, checkpointer=store)
    assert first.outcome == "interrupted", first.reason
    a, b = by_prompt(first)["A"], by_prompt(first)["B"]

    second = g.invoke(Resume(first.thread if by == "thread" else first, {a.id: "a1"}), checkpointer=store)
    assert second.outcome == "interrupted" and [p.id for p in second.pauses] == [b.id]

    # The same mapping again, while only B is open: refused, and B still waits.
    with pytest.raises(ResumeError) as refused:
        g.invoke(Resume(first.thread if by == "thread" else second, {a.id: "a2"}), checkpointer=store)
    message = str(refused.value)
    assert f"pause {a.id!r} is not open: it was answered already, with 'a1'" in message
    assert "branch 'ask[0]'" in message and "Nothing was answered" in message and b.id in message
    assert [p.id for p in store.get(first.thread).pauses] == [b.id]

    done = g.invoke(Resume(first.thread, {b.id: "b1"}), checkpointer=store)
    assert done.outcome == "done", done.reason
    assert done.state.answers == {"A": "a1", "B": "b1"}


def test_a_mapping_naming_an_answered_pause_beside_an_open_one_answers_neither(store):
    g = asking_graph()
    first = g.invoke({"items": ["A", "B", "C"]}, checkpointer=store)
    pauses = by_prompt(first)
    g.invoke(Resume(first, {pauses["A"].id: "a1"}), checkpointer=store)

    with pytest.raises(ResumeError, match="it was answered already, with 'a1'"):
        g.invoke(Resume(first.thread, {pauses["A"].id: "a2", pauses["B"].id: "b1"}), checkpointer=store)
    left = store.get(first.thread)
    assert {p.id for p in left.pauses} == {pauses["B"].id, pauses["C"].id}
    assert left.answers == {slot: value for slot, value in left.answers.items() if value == "a1"}


def test_a_pause_id_of_another_thread_is_not_one_of_this_thread():
    g = asking_graph()
    store = MemoryCheckpointer()
    mine, other = g.invoke({}, checkpointer=store), g.invoke({}, checkpointer=store)
    stranger = other.pauses[0].id
    with pytest.raises(ResumeError, match=f"pause {stranger!r} is not a pause of thread {mine.thread!r}"):
        g.invoke(Resume(mine.thread, {stranger: "x"}), checkpointer=store)
    with pytest.raises(ResumeError, match="'typo' is not a pause id"):
        g.invoke(Resume(mine.thread, {mine.pauses[0].id: "a", "typo": "b"}), checkpointer=store)
    assert len(store.get(mine.thread).pauses) == 2


def test_a_plain_answer_with_several_pauses_open_says_to_answer_by_id():
    g = asking_graph()
    first = g.invoke({})
    with pytest.raises(ResumeError, match="waits for 2 answers; give them by pause id"):
        g.invoke(Resume(first.thread, "whichever"))


def test_a_mapping_that_is_itself_the_answer_goes_to_the_pause_named_with_pause():
    """An input may be answered with a mapping keyed by id-shaped strings: naming the pause says so."""
    g = asking_graph()
    store = MemoryCheckpointer()
    first = g.invoke({"items": ["A"]}, checkpointer=store)
    (pause,) = first.pauses
    keyed = {uuid.uuid4().hex: "picked"}
    assert answers_by_id(keyed)
    with pytest.raises(ResumeError, match="is not a pause of thread"):
        g.invoke(Resume(first.thread, keyed), checkpointer=store)
    done = g.invoke(Resume(first.thread, keyed, pause=pause.id), checkpointer=store)
    assert done.outcome == "done" and done.state.answers == {"A": keyed}


def test_a_plain_answer_to_the_one_open_pause_still_needs_no_id():
    g = asking_graph()
    first = g.invoke({"items": ["A"]})
    assert g.invoke(Resume(first, "a1")).state.answers == {"A": "a1"}
    approval = {"approved": True}  # an approval's own mapping is an answer, not answers by id
    assert not answers_by_id(approval)


async def test_a_live_run_takes_answers_by_id_and_refuses_a_stale_one():
    g = asking_graph()
    run = g.start({"items": ["A", "B", "C"]}, display=False)
    while len(run.pauses) < 3:
        await run.next_pause(timeout=5)
    pauses = {pause.prompt[-1]: pause for pause in run.pauses}
    run.answer({pauses["A"].id: "a1", pauses["B"].id: "b1"})
    while any(p.id in (pauses["A"].id, pauses["B"].id) for p in run.pauses):
        await run.next_pause(timeout=5)
    with pytest.raises(ResumeError, match=f"pause {pauses['A'].id!r} is not open"):
        run.answer({pauses["A"].id: "a2"})
    assert [p.id for p in run.pauses] == [pauses["C"].id]
    run.answer({pauses["C"].id: "c1"})
    result = await run
    assert result.outcome == "done" and result.state.answers == {"A": "a1", "B": "b1", "C": "c1"}


# -- ten processes answering five pauses, two per pause, at once -------------------------

RACE = Path(__file__).with_name("programs") / "answer_race.py"


@pytest.mark.parametrize("kind", ["sqlite", "redis"])
def test_ten_processes_answering_five_pauses_each_answer_lands_on_its_own_pause(tmp_path, kind, request):
    where = str(tmp_path / "runs.db") if kind == "sqlite" else request.getfixturevalue("redis_url")
    items = ["A", "B", "C", "D", "E"]
    with Forker(tmp_path, RACE) as forker:
        for round_ in range(3):
            job = {"kind": kind, "where": where, "prefix": f"race-{uuid.uuid4().hex[:8]}", "thread": f"race-{round_}"}
            (started,) = forker.run({**job, "command": "start", "items": items})
            pauses = dict(started["pauses"])
            assert sorted(pauses.values()) == items
            answers = [
                {
                    **job,
                    "command": "answer",
                    "turns": str(tmp_path / f"turns-{round_}"),
                    "pause": pid,
                    "answer": f"{item}{k}",
                }
                for pid, item in pauses.items()
                for k in (1, 2)
            ]
            results = forker.run(*answers)

            refused = [r["refused"] for r in results if "refused" in r]
            assert len(refused) == 5, results  # one of each pair came second
            assert all("answered already, with '" in why for why in refused), refused
            finished = [r for r in results if r.get("outcome") == "done"]
            assert len(finished) == 1, results
            final = finished[0]["answers"]
            # Each branch holds one of the two answers given for its own pause, never a mapping.
            assert sorted(final) == items
            assert all(final[item] in (f"{item}1", f"{item}2") for item in items), final
