"""The append reducer's log: versions that share one backing list and never change."""

from __future__ import annotations

import pydantic
import pytest

from nbgraph import END, START, Graph, append
from nbgraph.reducers import AppendLog
from nbgraph.state import to_jsonable


class Msg(pydantic.BaseModel):
    id: str
    text: str = ""


def ids(log) -> list[str]:
    return [m.id for m in log]


class TestVersions:
    def test_appending_to_the_newest_version_shares_its_backing_list(self):
        first = append(None, [Msg(id="a")])
        second = append(first, [Msg(id="b")])
        third = append(second, Msg(id="c"))
        assert first._items is second._items is third._items  # no copy per append
        assert (ids(first), ids(second), ids(third)) == (["a"], ["a", "b"], ["a", "b", "c"])

    def test_an_older_version_is_copied_before_it_grows(self):
        base = append(None, [Msg(id="a")])
        left = append(base, [Msg(id="left")])
        right = append(base, [Msg(id="right")])  # a fork of the same state
        assert ids(left) == ["a", "left"] and ids(right) == ["a", "right"]
        assert left._items is not right._items
        assert Msg(id="right") not in left and Msg(id="left") not in right

    def test_replacing_by_id_leaves_earlier_versions_as_they_were(self):
        base = append(None, [Msg(id="a", text="draft"), Msg(id="b")])
        edited = append(base, [Msg(id="a", text="final")])
        assert [m.text for m in edited] == ["final", ""] and len(edited) == 2
        assert base[0].text == "draft"

    def test_the_same_id_twice_in_one_update_keeps_the_last(self):
        log = append(None, [Msg(id="x", text="1"), Msg(id="x", text="2"), Msg(id="y")])
        assert [(m.id, m.text) for m in log] == [("x", "2"), ("y", "")]

    def test_an_id_appended_to_a_later_version_is_new_to_an_older_one(self):
        base = append(None, [Msg(id="a")])
        append(base, [Msg(id="b", text="later")])
        other = append(base, [Msg(id="b", text="fork")])
        assert [m.text for m in other] == ["", "fork"]

    def test_items_without_ids_always_append(self):
        log = append(append(None, [1, 2]), [2])
        assert list(log) == [1, 2, 2]


class TestSequence:
    def test_reads_like_a_read_only_list(self):
        log = append(None, [Msg(id=str(i)) for i in range(5)])
        longer = append(log, [Msg(id="5")])
        assert len(log) == 5 and log[-1].id == "4" and log[0].id == "0"
        assert [m.id for m in log[1:3]] == ["1", "2"] and isinstance(log[1:3], tuple)
        assert ids(log) == ["0", "1", "2", "3", "4"]  # iteration stops at its own length
        with pytest.raises(IndexError):
            log[5]
        assert len(longer) == 6
        assert log == [Msg(id=str(i)) for i in range(5)] and log != longer
        assert repr(append(None, [1, 2])) == "[1, 2]"
        assert [*append(None, [1]) + [2]] == [1, 2]
        with pytest.raises(TypeError):
            hash(log)
        assert not hasattr(log, "append")

    def test_json_form_is_a_list(self):
        assert to_jsonable({"m": append(None, [Msg(id="a", text="hi")])}) == {"m": [{"id": "a", "text": "hi"}]}
        with pytest.raises(TypeError, match="object is not JSON-serializable"):
            to_jsonable({"m": object()})


def test_a_run_sees_a_log_and_returns_a_list():
    from typing import Annotated

    seen = []

    class State(pydantic.BaseModel):
        msgs: Annotated[list[Msg], append] = []

    g = Graph("log", state=State)
    g.add_node("a", lambda s: seen.append(type(s.msgs)) or {"msgs": [Msg(id=str(len(s.msgs)))]})
    g.add_edge(START, "a")
    g.add_edge("a", "a", when=lambda s: len(s.msgs) < 3)
    g.add_edge("a", END)
    result = g.invoke({"msgs": [{"id": "x"}]})
    assert seen == [AppendLog] * 2
    assert isinstance(result.state.msgs, list) and [m.id for m in result.state.msgs] == ["x", "1", "2"]
    assert [m.id for m in result.state_at(1).msgs] == ["x", "1"]


def test_a_subgraphs_log_handed_back_by_output_appends_its_items():
    from typing import Annotated

    class Notes(pydantic.BaseModel):
        notes: Annotated[list[str], append] = []

    inner = Graph("inner", state=Notes)
    inner.add_node("write", lambda s: {"notes": ["x", "y"]})
    inner.add_edge(START, "write")
    inner.add_edge("write", END)
    outer = Graph("outer", state=Notes)
    outer.add_node("research", inner, input=lambda s: {}, output=lambda r: {"notes": r.notes})  # the log as it is
    outer.add_edge(START, "research")
    outer.add_edge("research", END)
    result = outer.invoke({"notes": ["w"]})
    assert result.outcome == "done", result.reason
    assert result.state.notes == ["w", "x", "y"]
