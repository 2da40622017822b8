"""A plain callable in a field's ``Annotated`` metadata is its reducer (``operator.add``,
a lambda, a function); what is not a reducer is left to pydantic, and what cannot be
one is refused when the graph compiles."""

from __future__ import annotations

import json
import operator
import re
import sqlite3
from contextlib import closing
from typing import Annotated, Any, Optional

import annotated_types
import pydantic
import pytest
from graphs import one_node

from nbgraph import (
    END,
    START,
    Graph,
    GraphValidationError,
    InvalidUpdate,
    Resume,
    Send,
    SQLiteCheckpointer,
    accumulate,
    append,
)
from nbgraph.replay import replay
from nbgraph.state import Schema


def merge_lists(current: list[str], update: list[str]) -> list[str]:
    return [*current, *update]


class Added(pydantic.BaseModel):
    items: list[int] = []
    results: Annotated[list[str], operator.add] = []


class Lambda(pydantic.BaseModel):
    items: list[int] = []
    results: Annotated[list[str], lambda current, update: [*current, *update]] = []


class Merged(pydantic.BaseModel):
    items: list[int] = []
    results: Annotated[list[str], merge_lists] = []


def mapped(state: type[pydantic.BaseModel], work: Any = None, after: Any = None) -> Graph:
    """plan -> work, once per item -> (after ->) END."""
    g = Graph("mapped", state=state)
    g.add_node("plan", lambda s: {"items": [1, 2, 3]})
    g.add_node("work", work or (lambda item: {"results": [f"r{item}"]}))
    g.add_edge(START, "plan")
    g.add_edge("plan", "work", each=lambda s: s.items)
    if after is None:
        g.add_edge("work", END)
    else:
        g.add_node("after", after)
        g.add_edge("work", "after")
        g.add_edge("after", END)
    return g


class TestCallablesAreReducers:
    @pytest.mark.parametrize("state", [Added, Lambda, Merged], ids=["operator.add", "lambda", "def"])
    def test_every_branch_of_a_map_is_kept(self, state):
        result = mapped(state).invoke({})
        assert result.outcome == "done"
        assert result.state.results == ["r1", "r2", "r3"]

    def test_send_branches_fold_through_the_reducer_in_the_order_sent(self):
        g = Graph("send", state=Added)
        g.add_node("split", lambda s: [Send("work", i) for i in (3, 1, 2)])
        g.add_node("work", lambda item: {"results": [f"r{item}"]})
        g.add_edge(START, "split")
        g.add_edge("split", END)
        g.add_edge("work", END)
        assert g.invoke({}).state.results == ["r3", "r1", "r2"]

    def test_the_first_update_meets_the_default_and_later_ones_the_value_so_far(self):
        calls = []

        def keep(current, update):
            calls.append((current, update))
            return current + update

        class State(pydantic.BaseModel):
            total: Annotated[int, keep] = 10

        g = Graph("sum", state=State)
        g.add_node("a", lambda s: {"total": 1})
        g.add_node("b", lambda s: {"total": 2})
        g.add_edge(START, "a")
        g.add_edge("a", "b")
        g.add_edge("b", END)
        assert g.invoke({}).state.total == 13
        assert calls == [(10, 1), (11, 2)]

    def test_the_update_is_validated_as_the_field_before_the_reducer_sees_it(self):
        seen = []

        def add(current, update):
            seen.append(update)
            return current + update

        state = _state(total=(Annotated[int, add], 0))
        assert one_node(lambda s: {"total": "5"}, state).invoke({}).state.total == 5
        assert seen == [5]
        failed = one_node(lambda s: {"total": "many"}, state).invoke({})
        assert (
            failed.outcome == "failed" and "node 'node' set field 'total' to 'many', which is invalid" in failed.reason
        )
        assert seen == [5]

    def test_a_builtin_without_a_signature_is_trusted(self):
        class State(pydantic.BaseModel):
            best: Annotated[int, max] = 0

        g = Graph("best", state=State)
        g.add_node("a", lambda s: {"best": 7})
        g.add_node("b", lambda s: {"best": 3})
        g.add_edge(START, "a")
        g.add_edge("a", "b")
        g.add_edge("b", END)
        assert g.invoke({}).state.best == 7

    def test_nbgraph_reducers_keep_working_beside_plain_ones(self):
        class State(pydantic.BaseModel):
            log: Annotated[list[str], append] = []
            tokens: Annotated[int, accumulate] = 0
            results: Annotated[list[str], operator.add] = []

        schema = Schema(State)
        assert schema.reducers["log"] is append and schema.reducers["tokens"] is accumulate
        assert schema.reducers["results"].name == "add"
        g = one_node(lambda s: {"log": "x", "tokens": 3, "results": ["y"]}, State)
        assert g.invoke({"log": ["w"], "tokens": 1, "results": ["z"]}).state.model_dump() == {
            "log": ["w", "x"],
            "tokens": 4,
            "results": ["z", "y"],
        }


def _state(**fields: Any) -> type[pydantic.BaseModel]:
    return pydantic.create_model("Made", **fields)


class TestPydanticMetadataIsNoReducer:
    class Checked(pydantic.BaseModel):
        shout: Annotated[str, pydantic.AfterValidator(str.upper)] = ""
        trimmed: Annotated[str, pydantic.BeforeValidator(lambda v: v.strip())] = ""
        capped: Annotated[int, pydantic.WrapValidator(lambda v, handler: min(handler(v), 100))] = 0
        shown: Annotated[int, pydantic.PlainSerializer(lambda v: f"#{v}")] = 0
        even: Annotated[int, annotated_types.Predicate(lambda v: v % 2 == 0)] = 0
        positive: Annotated[int, annotated_types.Gt(0)] = 1
        bounded: Annotated[int, pydantic.Field(le=10)] = 0
        noted: Annotated[int, "a note", 3, 0.5] = 0
        unchecked: Annotated[int, pydantic.SkipValidation] = 0

    def test_none_of_them_becomes_a_reducer(self):
        assert Schema(self.Checked).reducers == {}

    def test_the_latest_value_wins_and_each_still_validates(self):
        g = Graph("checked", state=self.Checked)
        g.add_node(
            "a",
            lambda s: {"shout": "a", "trimmed": " a ", "capped": 1, "shown": 1, "even": 2, "positive": 1, "noted": 1},
        )
        g.add_node(
            "b",
            lambda s: {"shout": "b", "trimmed": " b ", "capped": 200, "shown": 2, "even": 4, "positive": 2, "noted": 2},
        )
        g.add_edge(START, "a")
        g.add_edge("a", "b")
        g.add_edge("b", END)
        state = g.invoke({}).state
        assert (state.shout, state.trimmed, state.capped, state.shown, state.even, state.positive, state.noted) == (
            "B",
            "b",
            100,
            2,
            4,
            2,
            2,
        )
        assert state.model_dump()["shown"] == "#2"

    @pytest.mark.parametrize(
        ("update", "field"), [({"even": 3}, "even"), ({"positive": 0}, "positive"), ({"bounded": 11}, "bounded")]
    )
    def test_a_constraint_still_refuses_a_bad_update(self, update, field):
        result = one_node(lambda s: update, self.Checked).invoke({})
        assert result.outcome == "failed"
        assert result.error.field == field and f"node 'node' set field {field!r}" in result.reason


class TestRefused:
    def test_a_callable_that_cannot_take_two_arguments_is_refused_naming_the_field(self):
        class State(pydantic.BaseModel):
            size: Annotated[list[str], len] = []
            one: Annotated[str, lambda value: value] = ""
            keyword: Annotated[int, lambda current, *, update: update] = 0
            fine: Annotated[int, lambda current, update, scale=1: update * scale] = 0

        with pytest.raises(GraphValidationError) as caught:
            one_node(lambda s: None, State).compile()
        two = (
            "cannot take two positional arguments; a reducer is called as fn(current, update) and returns the new value"
        )
        assert caught.value.problems == [
            f"state State, field 'size': its reducer len(obj, /) {two}",
            f"state State, field 'one': its reducer <lambda>(value) {two}",
            f"state State, field 'keyword': its reducer <lambda>(current, *, update) {two}",
        ]
        assert caught.value.graph == "one"  # listed with the graph's other problems, under its name

    @pytest.mark.parametrize(
        ("annotation", "found"),
        [
            (Annotated[list[str], append, operator.add], "2 reducers (append, add)"),
            (Annotated[Annotated[list[str], merge_lists], operator.add], "2 reducers (merge_lists, add)"),
            (Annotated[list[str], operator.add, operator.add], "2 reducers (add, add)"),
        ],
    )
    def test_several_reducers_on_one_field_are_refused(self, annotation, found):
        state = _state(results=(annotation, []))
        with pytest.raises(
            GraphValidationError, match=re.escape(f"state Made, field 'results' has {found}; a field takes one")
        ):
            one_node(lambda s: None, state).compile()

    @pytest.mark.parametrize(
        ("annotation", "name"),
        [(Optional[Annotated[list[str], operator.add]], "add"), (Annotated[list[str], append] | None, "append")],  # noqa: UP045
        ids=["Optional", "or None"],
    )
    def test_a_reducer_inside_a_union_member_is_refused(self, annotation, name):
        state = _state(results=(annotation, None))
        with pytest.raises(GraphValidationError, match=f"field 'results': the reducer {name} is inside one member"):
            one_node(lambda s: None, state).compile()


class TestReducerFailures:
    def test_a_none_default_fails_the_run_naming_the_field(self):
        class State(pydantic.BaseModel):
            results: Annotated[list[str] | None, operator.add] = None

        result = one_node(lambda s: {"results": ["x"]}, State).invoke({})
        assert result.outcome == "failed"
        assert isinstance(result.error, InvalidUpdate)
        assert (result.error.node, result.error.field) == ("node", "results")
        assert result.reason == (
            "node 'node': the add reducer of field 'results' rejected ['x']: TypeError: unsupported operand type(s) "
            "for +: 'NoneType' and 'list'; the field was None, so give it a default the reducer can take "
            "(such as [] or 0), or have the reducer handle None"
        )
        assert result.state.results is None

    def test_a_reducer_that_handles_none_starts_from_it(self):
        class State(pydantic.BaseModel):
            results: Annotated[list[str] | None, lambda current, update: [*(current or []), *update]] = None

        assert one_node(lambda s: {"results": ["x"]}, State).invoke({}).state.results == ["x"]

    def test_a_reducer_raising_in_a_branch_fails_the_run_naming_node_and_field(self):
        def picky(current, update):
            if update == ["r2"]:
                raise ValueError("no r2 here")
            return current + update

        result = mapped(_state(items=(list[int], []), results=(Annotated[list[str], picky], []))).invoke({})
        assert result.outcome == "failed"
        assert (result.error.node, result.error.field) == ("work", "results")
        assert (
            "node 'work': the picky reducer of field 'results' rejected ['r2']: ValueError: no r2 here" in result.reason
        )
        assert result.state.results == []  # the step is dropped whole: no branch of it folded in


class TestDurable:
    @staticmethod
    def paused_map(path) -> Graph:
        """A map whose second branch asks a person; the others finish first."""

        async def work(item, ctx):
            if item == 2:
                return {"results": [f"r2:{await ctx.request_input('r2?')}"]}
            return {"results": [f"r{item}"]}

        g = mapped(Added, work, after=lambda s: {"results": ["after"]})
        g.checkpointer = SQLiteCheckpointer(path)
        return g

    def test_a_resume_folds_each_branch_once_and_stores_the_field_whole(self, tmp_path):
        path = tmp_path / "runs.db"
        paused = self.paused_map(path).invoke({})
        assert paused.outcome == "interrupted"
        # A new graph and a new store: everything comes back from the file.
        done = self.paused_map(path).invoke(Resume(paused.thread, "yes"))
        assert done.outcome == "done"
        assert done.state.results == ["r1", "r2:yes", "r3", "after"]
        assert SQLiteCheckpointer(path).get(done.thread).state["results"] == ["r1", "r2:yes", "r3", "after"]

    def test_state_at_and_replay_give_the_values_of_the_live_run(self, tmp_path):
        seen: list[list[str]] = []

        def after(state):
            seen.append(list(state.results))
            return {"results": ["after"]}

        path = tmp_path / "runs.db"
        live = mapped(Added, after=after).invoke({})
        durable = mapped(Added, after=after).invoke({}, checkpointer=SQLiteCheckpointer(path))
        assert seen == [["r1", "r2", "r3"]] * 2
        final = ["r1", "r2", "r3", "after"]
        for result in (live, durable):
            assert result.state.results == final
            # Within the map's step, a state is rebuilt as if its branches folded one at a time, in order.
            states = [result.state_at(step).results for step in range(6)]
            assert states == [[], [], ["r1"], ["r1", "r2"], ["r1", "r2", "r3"], final]
            assert [list(frame.values["results"]) for frame in replay(result).frames] == states
        # The store keeps the field's new value whole after each step that changed it, never as an extension.
        with closing(sqlite3.connect(path)) as db:
            rows = db.execute(
                "SELECT patches FROM nbgraph_steps WHERE thread = ? ORDER BY step", (durable.thread,)
            ).fetchall()
        patches = [patch for (text,) in rows for patch in json.loads(text)]
        assert all("results" not in patch.get("extend", {}) for patch in patches)
        assert [patch["set"]["results"] for patch in patches if "results" in patch.get("set", {})] == [
            ["r1", "r2", "r3"],
            final,
        ]
        assert SQLiteCheckpointer(path).get(durable.thread).state["results"] == final
