"""State schemas, reducers, read-only views and update validation."""

from __future__ import annotations

from typing import Annotated

import pydantic
import pytest
from graphs import one_node

from nbgraph import END, START, Graph, InvalidUpdate, MemoryCheckpointer, Reducer, Resume, accumulate, append, merge


class Msg(pydantic.BaseModel):
    id: str
    text: str


class State(pydantic.BaseModel):
    count: int = 0
    messages: Annotated[list[Msg], append] = []
    slots: Annotated[dict[str, str], merge] = {}
    tokens: Annotated[int, accumulate] = 0
    usage: Annotated[dict[str, int], accumulate] = {}
    label: str = ""


class TestReducers:
    def test_overwrite_is_the_default(self):
        assert one_node(lambda s: {"count": 5}, State).invoke({"count": 1}).state.count == 5

    def test_append_keeps_order_and_replaces_same_id(self):
        result = one_node(
            lambda s: {"messages": [Msg(id="b", text="B"), Msg(id="a", text="A2"), Msg(id="c", text="C")]}, State
        ).invoke({"messages": [{"id": "a", "text": "A"}]})
        assert [(m.id, m.text) for m in result.state.messages] == [("a", "A2"), ("b", "B"), ("c", "C")]

    def test_append_accepts_a_single_item(self):
        result = one_node(lambda s: {"messages": Msg(id="x", text="X")}, State).invoke({})
        assert [m.id for m in result.state.messages] == ["x"]

    def test_append_without_ids_appends(self):
        assert append((1, 2), [3]) == (1, 2, 3)

    def test_merge_is_shallow_and_update_wins(self):
        result = one_node(lambda s: {"slots": {"b": "2", "a": "1b"}}, State).invoke({"slots": {"a": "1"}})
        assert result.state.slots == {"a": "1b", "b": "2"}

    def test_accumulate_numbers_and_dicts(self):
        g = Graph("acc", state=State)
        g.add_node("use", lambda s: {"tokens": 10, "usage": {"prompt": 3, "completion": 1}})
        g.add_edge(START, "use")
        g.add_edge("use", "use", when=lambda s: s.tokens < 30, label="tokens < 30")
        g.add_edge("use", END)
        result = g.invoke({})
        assert result.state.tokens == 30
        assert result.state.usage == {"prompt": 9, "completion": 3}

    def test_custom_reducer(self):
        longest = Reducer("longest", lambda cur, new: new if len(new) > len(cur or "") else cur)

        class S(pydantic.BaseModel):
            word: Annotated[str, longest] = ""

        g = Graph("custom", state=S)
        g.add_node("a", lambda s: {"word": "tiger"})
        g.add_node("b", lambda s: {"word": "cat"})
        g.add_edge(START, "a")
        g.add_edge("a", "b")
        g.add_edge("b", END)
        assert g.invoke({}).state.word == "tiger"

    def test_replayed_checkpoint_never_duplicates_messages(self):
        # Resuming re-runs the interrupted node; its message carries the same id both times.
        async def talk(state, ctx):
            reply = await ctx.request_input("say something")
            return {"messages": [Msg(id=f"m{ctx.visit}", text=reply)]}

        cp = MemoryCheckpointer()
        g = Graph("talk", state=State)
        g.add_node("hello", lambda s: {"messages": [Msg(id="m0", text="hi")]})
        g.add_node("talk", talk)
        g.add_edge(START, "hello")
        g.add_edge("hello", "talk")
        g.add_edge("talk", END)
        first = g.invoke({}, checkpointer=cp)
        assert first.outcome == "interrupted"
        done = g.invoke(Resume(first.thread, "yo"), checkpointer=cp)
        assert [m.id for m in done.state.messages] == ["m0", "m1"]
        # Applying step 2's recorded update again leaves the conversation unchanged.
        replayed = g.compile().schema.apply(cp.get(done.thread, 2).state, done.history[-1].update, "talk")
        assert [m.id for m in replayed["messages"]] == ["m0", "m1"]


class TestReadOnly:
    def test_pydantic_state_cannot_be_assigned(self):
        def mutate(state):
            state.count = 99

        result = one_node(mutate, State).invoke({})
        assert result.outcome == "failed"
        assert "frozen" in result.reason.lower()
        assert result.state.count == 0

    def test_append_field_cannot_be_mutated_in_place(self):
        def mutate(state):
            state.messages.append(Msg(id="sneaky", text="x"))

        result = one_node(mutate, State).invoke({})
        assert result.outcome == "failed"
        assert result.state.messages == []

    def test_dict_state_is_read_only_with_attribute_access(self):
        seen = {}

        def look(state):
            seen["attr"] = state.n
            seen["item"] = state["n"]
            state["n"] = 5

        result = one_node(look).invoke({"n": 1})
        assert seen == {"attr": 1, "item": 1}
        assert result.outcome == "failed"
        assert "state is read-only: return {'n': ...} from the node" in result.reason

    def test_dict_state_fields_named_like_mapping_methods_read_as_fields(self):
        seen = {}

        def fields(state):
            seen["fields"] = (state.items, state.keys, state.values, state.get)

        def methods(state):
            seen["methods"] = (sorted(state.items()), list(state.keys()), state.get("n"))

        one_node(fields).invoke({"items": [1, 2], "keys": "k", "values": {"v": 1}, "get": 0})
        assert seen["fields"] == ([1, 2], "k", {"v": 1}, 0)
        # Without such fields, they are the mapping's methods as usual.
        one_node(methods).invoke({"n": 3})
        assert seen["methods"] == ([("n", 3)], ["n"], 3)

    def test_dict_state_missing_field_suggests(self):
        result = one_node(lambda s: {"x": s.cuont}).invoke({"count": 1})
        assert "state has no field 'cuont' (did you mean 'count'?)" in result.reason

    def test_update_does_not_change_earlier_states(self):
        g = Graph("hist", state=State)
        g.add_node("a", lambda s: {"count": 1, "messages": [Msg(id="1", text="a")]})
        g.add_node("b", lambda s: {"count": 2, "messages": [Msg(id="2", text="b")]})
        g.add_edge(START, "a")
        g.add_edge("a", "b")
        g.add_edge("b", END)
        result = g.invoke({})
        assert result.state_at(0).count == 0
        assert [m.id for m in result.state_at(1).messages] == ["1"]
        assert [m.id for m in result.state_at(2).messages] == ["1", "2"]


class TestBadUpdates:
    def test_unknown_field_named_with_suggestion(self):
        result = one_node(lambda s: {"cuont": 1}, State).invoke({})
        assert result.outcome == "failed"
        assert isinstance(result.error, InvalidUpdate)
        assert result.error.field == "cuont"
        assert "node 'node' updated unknown state field 'cuont' (did you mean 'count'?)" in result.reason

    def test_invalid_value_named(self):
        result = one_node(lambda s: {"count": "many"}, State).invoke({})
        assert result.outcome == "failed"
        assert result.error.node == "node" and result.error.field == "count"
        assert "node 'node' set field 'count' to 'many', which is invalid" in result.reason

    def test_invalid_append_item(self):
        result = one_node(lambda s: {"messages": [{"id": "x"}]}, State).invoke({})
        assert "node 'node' set field 'messages' to an invalid item: text: Field required" in result.reason

    def test_values_are_coerced_by_the_schema(self):
        assert one_node(lambda s: {"count": "7"}, State).invoke({}).state.count == 7

    @pytest.mark.parametrize("value", [42, "text", ["a"], (1, 2)])
    def test_node_returning_a_non_dict(self, value):
        result = one_node(lambda s: value, State).invoke({})
        assert result.outcome == "failed"
        assert f"node 'node' returned {type(value).__name__}" in result.reason
        assert "must return a dict of state updates, None, Goto" in result.reason

    def test_invalid_input_is_rejected_before_running(self):
        with pytest.raises(
            InvalidUpdate, match="input does not fit state State: count: Input should be a valid integer"
        ):
            one_node(lambda s: None, State).invoke({"count": "lots"})

    def test_failed_update_keeps_previous_state(self):
        g = Graph("keep", state=State)
        g.add_node("good", lambda s: {"count": 1})
        g.add_node("bad", lambda s: {"count": "x"})
        g.add_edge(START, "good")
        g.add_edge("good", "bad")
        g.add_edge("bad", END)
        result = g.invoke({})
        assert result.state.count == 1
        assert result.history[-1].error is not None and result.history[-1].node == "bad"
