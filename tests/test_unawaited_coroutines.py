"""A coroutine a node did not await fails its step, naming the node and the field, and
is closed: nothing un-awaited is kept in the state, and Python never warns of it."""

from __future__ import annotations

import inspect
from typing import Any

import pydantic
import pytest

from nbgraph import (
    END,
    START,
    End,
    Goto,
    Graph,
    InvalidUpdate,
    Resume,
    Send,
    SQLiteCheckpointer,
)

AWAIT = "that was never awaited; write await before the call, in a node defined with async def"


class State(pydantic.BaseModel):
    items: list[int] = []
    name: Any = None
    other: Any = None


async def lookup(key: str) -> str:
    return key.upper()


class Made:
    """Keeps every coroutine a node made, to see that each was closed."""

    def __init__(self) -> None:
        self.coroutines: list[Any] = []

    def __call__(self, coroutine: Any) -> Any:
        self.coroutines.append(coroutine)
        return coroutine

    def all_closed(self) -> bool:
        return bool(self.coroutines) and all(inspect.getcoroutinestate(c) == "CORO_CLOSED" for c in self.coroutines)


def one_node(fn: Any, state: Any = State) -> Graph:
    g = Graph("one", state=state)
    g.add_node("ask", fn)
    g.add_edge(START, "ask")
    g.add_edge("ask", END)
    return g


class TestInAnUpdate:
    @pytest.mark.parametrize("state", [State, None], ids=["model", "dict"])
    def test_a_sync_node_that_forgot_await_fails_naming_node_and_field(self, state):
        made = Made()

        def ask(s, ctx):
            answer = made(ctx.request_input("Name?"))
            return {"name": answer}

        result = one_node(ask, state).invoke({})
        assert result.outcome == "failed"
        assert isinstance(result.error, InvalidUpdate)
        assert (result.error.node, result.error.field) == ("ask", "name")
        assert result.reason == f"node 'ask' set field 'name' to a coroutine (Context.request_input) {AWAIT}"
        assert made.all_closed()
        assert (result.state.name if state else result.state.get("name")) is None

    def test_every_coroutine_of_the_update_is_closed(self):
        made = Made()
        result = one_node(lambda s: {"name": made(lookup("a")), "other": made(lookup("b"))}).invoke({})
        assert result.reason == f"node 'ask' set field 'name' to a coroutine (lookup) {AWAIT}"
        assert len(made.coroutines) == 2 and made.all_closed()

    def test_a_coroutine_behind_an_invalid_field_is_closed_too(self):
        made = Made()
        result = one_node(lambda s: {"nmae": 1, "name": made(lookup("a"))}).invoke({})
        assert "node 'ask' updated unknown state field 'nmae'" in result.reason
        assert made.all_closed()

    def test_an_async_node_that_forgot_await_fails_alike(self):
        made = Made()

        async def ask(s):
            return {"name": made(lookup("a"))}

        result = one_node(ask).invoke({})
        assert result.reason == f"node 'ask' set field 'name' to a coroutine (lookup) {AWAIT}"
        assert made.all_closed()

    def test_a_goto_update_holding_one_fails_alike(self):
        made = Made()
        g = one_node(lambda s: Goto(END, update={"name": made(lookup("a"))}))
        result = g.invoke({})
        assert result.outcome == "failed" and result.error.field == "name"
        assert result.reason == f"node 'ask' set field 'name' to a coroutine (lookup) {AWAIT}"
        assert made.all_closed()


class TestReturned:
    def test_a_sync_node_returning_one_fails_naming_the_node(self):
        made = Made()
        result = one_node(lambda s, ctx: made(ctx.request_input("Name?"))).invoke({})
        assert result.outcome == "failed" and result.error.node == "ask"
        assert result.reason == f"node 'ask' returned a coroutine (Context.request_input) {AWAIT}"
        assert made.all_closed()

    def test_an_async_node_returning_one_fails_alike(self):
        made = Made()

        async def ask(s):
            return made(lookup("a"))

        result = one_node(ask).invoke({})
        assert result.reason == f"node 'ask' returned a coroutine (lookup) {AWAIT}"
        assert made.all_closed()

    @pytest.mark.parametrize("command", ["Goto", "End"])
    def test_as_a_commands_update(self, command):
        made = Made()

        def ask(s):
            coroutine = made(lookup("a"))
            return Goto(END, update=coroutine) if command == "Goto" else End(update=coroutine)

        result = one_node(ask).invoke({})
        assert result.reason == f"node 'ask' gave {command}(update=...) a coroutine (lookup) {AWAIT}"
        assert made.all_closed()

    def test_as_a_send_payload(self):
        made = Made()
        g = Graph("send", state=State)
        g.add_node(
            "split", lambda s: [Send("work", 1), Send("work", made(lookup("a"))), Send("work", made(lookup("b")))]
        )
        g.add_node("work", lambda item: None)
        g.add_edge(START, "split")
        g.add_edge("split", END)
        g.add_edge("work", END)
        result = g.invoke({})
        assert result.reason == f"node 'split' sent 'work' a coroutine (lookup) {AWAIT}"
        assert len(made.coroutines) == 2 and made.all_closed()


class TestInABranch:
    def test_one_branch_of_a_map_holding_one_fails_the_step_naming_node_and_field(self):
        made = Made()

        def work(item, ctx):
            return {"name": made(ctx.request_input("Name?")) if item == 2 else f"n{item}"}

        g = Graph("mapped", state=State)
        g.add_node("plan", lambda s: {"items": [1, 2, 3]})
        g.add_node("work", work)
        g.add_edge(START, "plan")
        g.add_edge("plan", "work", each=lambda s: s.items)
        g.add_edge("work", END)
        result = g.invoke({})
        assert result.outcome == "failed"
        assert (result.error.node, result.error.field) == ("work", "name")
        assert f"node 'work' set field 'name' to a coroutine (Context.request_input) {AWAIT}" in result.reason
        assert made.all_closed()
        assert result.state.name is None  # none of the step's branches folded in

    def test_every_branch_holding_one_has_it_closed_when_the_first_fails_the_step(self):
        made = Made()
        g = Graph("mapped", state=State)
        g.add_node("plan", lambda s: {"items": [1, 2, 3]})
        g.add_node("work", lambda item, ctx: {"name": made(ctx.request_input(f"Name {item}?"))})
        g.add_edge(START, "plan")
        g.add_edge("plan", "work", each=lambda s: s.items)
        g.add_edge("work", END)
        result = g.invoke({})
        assert result.outcome == "failed" and AWAIT in result.reason
        assert len(made.coroutines) == 3 and made.all_closed()


class TestResume:
    @staticmethod
    def graph(ask: Any, path: Any) -> Graph:
        g = Graph("greet", state=State, checkpointer=SQLiteCheckpointer(path))
        g.add_node("start", lambda s: {"other": "started"})
        g.add_node("ask", ask)
        g.add_edge(START, "start")
        g.add_edge("start", "ask")
        g.add_edge("ask", END)
        return g

    def test_the_failed_run_keeps_its_checkpoint_and_the_fixed_node_finishes_it(self, tmp_path):
        path = tmp_path / "runs.db"

        def forgot(s, ctx):
            return {"name": ctx.request_input("Name?")}

        async def fixed(s, ctx):
            return {"name": await ctx.request_input("Name?")}

        failed = self.graph(forgot, path).invoke({})
        assert failed.outcome == "failed"
        assert failed.reason == f"node 'ask' set field 'name' to a coroutine (Context.request_input) {AWAIT}"
        kept = SQLiteCheckpointer(path).get(failed.thread)
        assert (kept.step, kept.status, kept.next) == (1, "failed", "ask")
        assert kept.state == {"items": [], "name": None, "other": "started"}
        fixed_graph = self.graph(fixed, path)
        asked = fixed_graph.invoke(Resume(failed.thread))
        assert asked.outcome == "interrupted"
        done = fixed_graph.invoke(Resume(failed.thread, "Ada"))
        assert done.outcome == "done"
        assert (done.state.name, done.state.other) == ("Ada", "started")
        assert done.path == ["start", "ask"]
