"""Text a model may emit survives a trace: NDJSON lines end at "\\n" alone, so a state, a tool
call or streamed text holding U+2028, U+0085, NUL, a form feed or a lone "\\r" reads back as
it was written, through parse_ndjson, replay and the view."""

from __future__ import annotations

import pytest

from nbgraph import END, START, Graph, parse_ndjson
from nbgraph.events import to_ndjson
from nbgraph.replay import Replay, replay
from nbgraph.widget import GraphView

# Text a model may emit. None ends an NDJSON line; str.splitlines() ends one at most of them.
AWKWARD = {
    "line separator": "\u2028",
    "paragraph separator": "\u2029",
    "next line": "\x85",
    "null": "\x00",
    "form feed": "\x0c",
    "vertical tab": "\x0b",
    "file separator": "\x1c",
    "group separator": "\x1d",
    "record separator": "\x1e",
    "lone carriage return": "\r",
    "carriage return and newline": "\r\n",
}


def said(char: str) -> str:
    return f"before{char}after {char}{char} and the end{char}"


def speaker(text: str) -> Graph:
    """One node that streams ``text``, calls a tool with it and sets it in the state."""

    def speak(state, ctx):
        ctx.emit("text-delta", text=text)
        ctx.emit("tool-call", call_id="c1", name="echo", args={"q": text})
        return {"text": text}

    g = Graph("speaker")
    g.add_node("speak", speak)
    g.add_node("after", lambda s: {"seen": s["text"]})
    g.add_edge(START, "speak")
    g.add_edge("speak", "after")
    g.add_edge("after", END)
    return g


@pytest.mark.parametrize("char", AWKWARD.values(), ids=AWKWARD.keys())
class TestTraces:
    def test_every_event_reads_back_as_it_was_written(self, char):
        text = said(char)
        events: list = []
        speaker(text).invoke({}, on_event=events.append)
        trace = to_ndjson(events)
        assert [e.model_dump() for e in parse_ndjson(trace)] == [e.model_dump() for e in events]
        assert [e.text for e in parse_ndjson(trace) if e.type == "text-delta"] == [text]

    def test_replay_rebuilds_the_state_from_the_trace_text_and_file(self, char, tmp_path):
        text = said(char)
        g = speaker(text)
        result = g.invoke({})
        trace = result.to_ndjson()
        (tmp_path / "run.ndjson").write_text(trace, encoding="utf-8", newline="")
        for frames in (replay(trace, graph=g), replay(trace), Replay.from_ndjson(tmp_path / "run.ndjson", graph=g)):
            assert [f.node for f in frames] == [None, "speak", "after"]
            assert frames[-1].state == {"text": text, "seen": text}
            assert frames.records[0].events[-1].args == {"q": text}
            assert frames.inspect(1).update == {"text": text}

    def test_the_view_replays_the_trace(self, char):
        text = said(char)
        g = speaker(text)
        view = GraphView.replay(g.invoke({}).to_ndjson(), g)
        assert view.visits == {"speak": 1, "after": 1}
        sent: list[dict] = []
        view.send = sent.append
        view.handle({"type": "inspect", "frame": 2})
        assert sent[-1]["node"] == "after" and sent[-1]["update"] == {"seen": text}


def test_a_carriage_return_in_a_trace_is_json_whitespace_and_crlf_ends_a_line(tmp_path):
    """Windows line ends, and a "\\r" between a line's JSON tokens: whitespace to JSON, no line end."""
    g = speaker("hi")
    trace = g.invoke({}).to_ndjson().replace('","', '",\r"').replace("\n", "\r\n")
    path = tmp_path / "run.ndjson"
    path.write_text(trace, encoding="utf-8", newline="")
    for source in (trace, path):
        assert replay(source, graph=g)[-1].state == {"text": "hi", "seen": "hi"}


def test_a_line_that_only_looks_blank_is_not_skipped():
    trace = '{"type": "run-start", "thread": "t", "step": 0, "graph": "g"}\n\u2028\n'
    with pytest.raises(ValueError, match="line 2 is not an nbgraph event"):
        list(parse_ndjson(trace))
