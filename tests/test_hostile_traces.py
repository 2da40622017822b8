"""A trace is text anyone can hand over: reading a malformed one, however large or strange,
fails with a ValueError that names the line (and the column, where one is at fault) and
quotes at most a few dozen characters of it, through parse_ndjson, replay and the view;
never with a Python error from deep inside, nor with a message the size of the input."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, TypedDict

import pytest

from nbgraph import END, START, Graph, parse_ndjson
from nbgraph.replay import replay
from nbgraph.widget import GraphView

MESSAGE_LIMIT = 1024
MEGABYTE = 1_000_000


class Count(TypedDict):
    n: int


def counter() -> Graph:
    g = Graph("counter", state=Count)
    g.add_node("add", lambda s: {"n": s["n"] + 1})
    g.add_edge(START, "add")
    g.add_edge("add", END)
    return g


def trace_lines() -> list[str]:
    """A real run's trace, one event a line."""
    return counter().invoke({"n": 0}).to_ndjson().splitlines()


def with_line(index: int, text: str) -> str:
    """The real trace with its line ``index`` (0-based) replaced by ``text``."""
    lines = trace_lines()
    lines[index] = text
    return "\n".join(lines) + "\n"


def exit_line_index(lines: list[str]) -> int:
    return next(i for i, line in enumerate(lines) if json.loads(line)["type"] == "node-exit")


def read_events(source: Any) -> None:
    list(parse_ndjson(source))


READERS: dict[str, Callable[[Any], Any]] = {
    "parse_ndjson": read_events,
    "replay": replay,
    "view": GraphView.replay,
}


def bounded(excinfo: pytest.ExceptionInfo[BaseException]) -> str:
    message = str(excinfo.value)
    assert len(message) < MESSAGE_LIMIT, f"{len(message):,} characters"
    return message


@pytest.mark.parametrize("read", READERS.values(), ids=READERS.keys())
def test_an_update_that_is_a_list_names_its_line(read):
    """A node's update is a mapping or None; a list used to crash the fold with an AttributeError."""
    lines = trace_lines()
    index = exit_line_index(lines)
    event = json.loads(lines[index])
    event["update"] = [1, 2]
    with pytest.raises(ValueError, match=rf"line {index + 1} is not an nbgraph event: field 'update' .* not an array"):
        read(with_line(index, json.dumps(event)))


@pytest.mark.parametrize("read", READERS.values(), ids=READERS.keys())
def test_a_line_that_is_not_json_names_its_line_and_column(read):
    """Pydantic counts columns in bytes and quotes the line whole; a person reads characters."""
    with pytest.raises(ValueError, match=r"line 2 is not an nbgraph event: at column 19, not valid JSON") as excinfo:
        read(with_line(1, '{"type": "route", nope}'))
    assert 'the line starts: \'{"type"' in bounded(excinfo)


@pytest.mark.parametrize("read", READERS.values(), ids=READERS.keys())
def test_a_json_line_that_is_not_an_object_names_its_line(read):
    """An event is an object; a bare array or number is valid JSON all the same."""
    with pytest.raises(ValueError, match="line 3 is not an nbgraph event: an event is a JSON object, not an array"):
        read(with_line(2, "[1, 2]"))


@pytest.mark.parametrize("read", READERS.values(), ids=READERS.keys())
def test_an_unknown_event_type_names_its_line_and_the_known_types(read):
    """A trace from a newer or another tool: say which types this reader knows."""
    with pytest.raises(
        ValueError, match="line 2 is not an nbgraph event: unknown event type 'boom' \\(one of run-start"
    ):
        read(with_line(1, '{"type": "boom", "thread": "t", "step": 1}'))


@pytest.mark.parametrize("read", [replay, GraphView.replay], ids=["replay", "view"])
def test_bytes_that_are_not_utf8_in_a_file_name_their_line_and_column(read, tmp_path):
    """Decoding the whole file used to fail with a UnicodeDecodeError that said only its offset."""
    lines = trace_lines()
    data = "\n".join(lines[:2]).encode() + b'\n{"type": "ro\xff\xfeute"}\n'
    path = tmp_path / "run.ndjson"
    path.write_bytes(data)
    offset = data.index(b"\xff")
    with pytest.raises(
        ValueError, match=rf"line 3, column 13 of the NDJSON trace at .* is not UTF-8: byte 0xff at offset {offset}"
    ) as excinfo:
        read(path)
    bounded(excinfo)
    with pytest.raises(ValueError, match=r"line 3, column 13 of the NDJSON text is not UTF-8"):
        read_events(data)


@pytest.mark.parametrize("read", [replay, GraphView.replay], ids=["replay", "view"])
def test_fifty_megabytes_given_as_the_source_are_refused_briefly(read):
    """One line that is no JSON is taken for a path; this one used to come back as a
    FileNotFoundError quoting all 50 million characters."""
    text = "x" * (50 * MEGABYTE)
    with pytest.raises(ValueError, match="line 1 is not an nbgraph event, and at 50,000,000 characters") as excinfo:
        read(text)
    bounded(excinfo)


@pytest.mark.parametrize("read", [replay, GraphView.replay], ids=["replay", "view"])
def test_a_path_that_does_not_exist_is_named_briefly(read, tmp_path):
    """A missing file stays a FileNotFoundError (replay's documented contract), quoting only the path's start."""
    missing = tmp_path / ("deep" * 2_500) / "run.ndjson"
    with pytest.raises(FileNotFoundError, match="no NDJSON trace at") as excinfo:
        read(str(missing))
    bounded(excinfo)


@pytest.mark.parametrize("read", READERS.values(), ids=READERS.keys())
def test_a_huge_line_of_garbage_is_quoted_briefly(read):
    """A line that starts like an object is read as text: its error quotes only its start."""
    garbage = "{" + "garbage " * (2 * MEGABYTE)
    with pytest.raises(ValueError, match="line 2 is not an nbgraph event: at column 2, not valid JSON") as excinfo:
        read(with_line(1, garbage))
    bounded(excinfo)


@pytest.mark.parametrize("read", READERS.values(), ids=READERS.keys())
def test_huge_names_in_an_event_are_quoted_briefly(read):
    """Pydantic's own message quotes an unknown type and an unknown field whole."""
    with pytest.raises(ValueError, match="line 2 is not an nbgraph event: unknown event type 'tttt") as excinfo:
        read(with_line(1, json.dumps({"type": "t" * MEGABYTE, "thread": "t", "step": 1})))
    bounded(excinfo)
    lines = trace_lines()
    index = exit_line_index(lines)
    event = json.loads(lines[index])
    event["k" * MEGABYTE] = 1
    with pytest.raises(
        ValueError, match=rf"line {index + 1} is not an nbgraph event: a node-exit event has no field 'kkk"
    ) as excinfo:
        read(with_line(index, json.dumps(event)))
    bounded(excinfo)


@pytest.mark.parametrize("read", [replay, GraphView.replay], ids=["replay", "view"])
def test_an_update_that_does_not_fit_the_graph_names_its_line(read):
    """Folding an update into the given graph's state used to raise an InvalidUpdate (a TypeError)
    quoting an unknown field's name whole."""
    lines = trace_lines()
    index = exit_line_index(lines)
    event = json.loads(lines[index])
    event["update"] = {"k" * MEGABYTE: 1}
    with pytest.raises(
        ValueError, match=rf"line {index + 1} does not fit graph 'counter': node 'add' updated unknown state field"
    ) as excinfo:
        read(with_line(index, json.dumps(event)), graph=counter())
    bounded(excinfo)


def test_an_approval_answer_with_a_list_for_its_update_is_no_edit():
    """An approval's edit is a mapping; an answer holding a list there (an input pause's answer may
    be any JSON) is not folded as one."""
    lines = trace_lines()
    index = exit_line_index(lines)
    answer = {"type": "answer", "thread": "t", "step": 1, "path": "add", "pause_id": "p"}
    answer["answer"] = {"approved": True, "update": [1, 2]}
    lines.insert(index + 1, json.dumps(answer))
    frames = replay("\n".join(lines) + "\n", graph=counter())
    assert frames[-1].state == {"n": 1}


def test_a_folder_given_as_the_trace_is_an_os_error_quoted_briefly(tmp_path):
    """The OS's own message quotes the whole path."""
    folder = tmp_path / ("folder" * 30)
    folder.mkdir()
    with pytest.raises(OSError, match="cannot read the NDJSON trace at") as excinfo:
        replay(str(folder))
    bounded(excinfo)
