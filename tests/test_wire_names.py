"""Wire names: every tool name OpenAI accepts, mapped back to the tool's own name."""

from __future__ import annotations

import re

import pytest

from nbgraph.llm.wire_names import MAX_WIRE_NAME, WireNames, is_wire_name, wire_name

OPENAI_TOOL_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")  # the pattern OpenAI's API checks, as it documents it


def test_valid_names_are_kept_as_they_are():
    names = WireNames(["add", "get-weather", "Search_2", "x" * 64])
    assert [names.wire(name) for name in names] == ["add", "get-weather", "Search_2", "x" * 64]
    assert names.tool("get-weather") == "get-weather"
    assert names.renamed == {}


def test_each_character_openai_refuses_becomes_an_underscore_and_maps_back():
    names = WireNames(["git.status", "fs/read file", "météo", "add"])
    assert names.wire("git.status") == "git_status"
    assert names.wire("fs/read file") == "fs_read_file"
    assert names.wire("météo") == "m_t_o"
    assert names.tool("git_status") == "git.status"
    assert names.tool("m_t_o") == "météo"
    assert names.renamed == {"git.status": "git_status", "fs/read file": "fs_read_file", "météo": "m_t_o"}


def test_long_names_are_shortened_apart_and_stably():
    shared = "github.search_repositories_by_topic_and_language_and_stars_" * 2
    first, second = shared + "ascending", shared + "descending"
    names = WireNames([first, second])
    wires = [names.wire(first), names.wire(second)]
    assert all(len(wire) == MAX_WIRE_NAME and OPENAI_TOOL_NAME.match(wire) for wire in wires)
    assert wires[0] != wires[1] and wires[0][:50] == wires[1][:50]  # same beginning, told apart by the end
    assert [names.tool(wire) for wire in wires] == [first, second]
    # The same name gets the same wire name each time, whatever else is offered beside it.
    assert WireNames([second]).wire(second) == wires[1]


def test_long_names_that_differ_only_in_a_replaced_character_stay_apart():
    # Short, "fs.read" and "fs/read" clash; long, the hash of the whole name tells them apart.
    tail = "_" + "x" * 70
    names = WireNames(["fs.read" + tail, "fs/read" + tail])
    assert names.wire("fs.read" + tail) != names.wire("fs/read" + tail)


def test_a_name_openai_refuses_only_for_its_length_is_shortened_too():
    long_valid = "a" * 65
    wire = WireNames([long_valid]).wire(long_valid)
    assert len(wire) == MAX_WIRE_NAME and wire.startswith("a" * 55)


@pytest.mark.parametrize(
    ("first", "second", "shared"),
    [
        ("git.status", "git_status", "git_status"),  # replaced, and valid as it is
        ("git.status", "git/status", "git_status"),  # both replaced
    ],
)
def test_two_tools_with_one_wire_name_are_refused_naming_both(first, second, shared):
    with pytest.raises(ValueError, match=rf"tools '{first}' and '{second}' would both be called '{shared}'"):
        WireNames([first, second])


def test_a_name_given_twice_or_empty_is_refused():
    with pytest.raises(ValueError, match="two tools are named 'add'"):
        WireNames(["add", "add"])
    with pytest.raises(ValueError, match="a tool's name is empty"):
        WireNames([""])


def test_a_name_the_model_invents_maps_to_none():
    names = WireNames(["git.status"])
    assert names.tool("git.status") is None  # the model was never shown the tool's own name
    assert names.tool("git_push") is None
    assert names.tool("") is None


def test_asking_for_the_wire_name_of_a_tool_not_given_says_which_tools_there_are():
    with pytest.raises(KeyError, match="no tool is named 'push'; the tools are: git.status, add"):
        WireNames(["git.status", "add"]).wire("push")


def test_is_wire_name_follows_openais_pattern():
    for name in ["add", "a-b_C9", "x" * 64]:
        assert is_wire_name(name)
    for name in ["", "git.status", "x" * 65, "add\n", "naïve"]:
        assert not is_wire_name(name)


def test_one_name_alone_follows_the_same_rule_unchecked():
    # For names only shown to the model: a call in the history to a tool the node does not offer.
    long_name = "fs." + "x" * 70
    assert wire_name("git.status") == "git_status" == WireNames(["git.status"]).wire("git.status")
    assert wire_name(long_name) == WireNames([long_name]).wire(long_name)
    assert wire_name("add") == "add"
    names = WireNames(["git.status"])
    assert "git.status" in names and "git_status" not in names and len(names) == 1
