"""A run as one HTML file (nbgraph.share): what the page holds, read back as a browser's parser
would; that it shows what the replay view shows in a notebook, and answers the inspector as
the kernel would; escaping, size and secrets. The page opened in Chromium is in
tests/e2e/test_share_browser.py; the `nbgraph html` command in tests/test_cli.py."""

from __future__ import annotations

import json
import math
import re
from html.parser import HTMLParser
from pathlib import Path
from typing import Annotated, Any

import pydantic
import pytest

from nbgraph import END, START, Graph, Resume, append, register_secret
from nbgraph import share as share_module
from nbgraph.replay import replay
from nbgraph.secrets import forget_secret
from nbgraph.share import _inlined, page
from nbgraph.widget import GraphView

STATIC = Path(share_module.__file__).parent / "static"
HOSTILE = "</script><script>alert('pwned')</script><!-- </SCRIPT > & \u2028 > <"


class Doc(pydantic.BaseModel):
    version: int = 0
    text: str = ""
    ok: bool = False
    notes: Annotated[list[str], append] = []


def writer(approval: bool = False) -> Graph:
    """draft -> review, back to draft until the second version, then publish (approved by a person)."""
    g = Graph("writer", state=Doc, max_steps=20)
    g.add_node(
        "draft", lambda s: {"version": s.version + 1, "text": f"v{s.version + 1}", "notes": [f"d{s.version + 1}"]}
    )
    g.add_node("review", lambda s: {"ok": s.version >= 2})
    g.add_node("publish", lambda s: {"notes": ["published"]}, approval=approval)
    g.add_edge(START, "draft")
    g.add_edge("draft", "review")
    g.add_edge("review", "publish", when=lambda s: s.ok, label="state.ok")
    g.add_edge("review", "draft")
    g.add_edge("publish", END)
    return g


def with_inner() -> Graph:
    inner = Graph("inner", state=Doc)
    inner.add_node("a", lambda s: {"notes": ["a"]})
    inner.add_node("b", lambda s: {"notes": ["b"]})
    inner.add_edge(START, "a")
    inner.add_edge("a", "b")
    inner.add_edge("b", END)
    g = Graph("outer", state=Doc)
    g.add_node("plan", lambda s: {"text": "xy"})
    g.add_node("research", inner)
    g.add_node("work", lambda letter: {"notes": [f"work {letter}"]})
    g.add_edge(START, "plan")
    g.add_edge("plan", "research")
    g.add_edge("research", "work", each=lambda s: list(s.text), label="each letter")
    g.add_edge("work", END)
    return g


class Read(HTMLParser):
    """The page as a browser's tokenizer reads it: its script elements, their text, every tag."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.scripts: list[tuple[dict[str, str | None], str]] = []
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self._open: dict[str, str | None] | None = None
        self.feed(text)
        self.close()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        if tag == "script":
            self._open = dict(attrs)
            self.scripts.append((self._open, ""))

    def handle_data(self, data: str) -> None:
        if self._open is not None:
            attrs, text = self.scripts[-1]
            self.scripts[-1] = (attrs, text + data)

    def handle_endtag(self, tag: str) -> None:
        if tag == "script":
            self._open = None


def data_of(text: str) -> dict[str, Any]:
    read = Read(text)
    [(kind, data), (module, _)] = read.scripts
    assert (kind.get("type"), module.get("type")) == ("application/json", "module")
    return json.loads(data)


def published() -> Any:
    """A run a person approved (a decision in its log), ended done."""
    g = writer(approval=True)
    paused = g.invoke({})
    return g.invoke(Resume(paused, {"approved": True, "update": {"text": "edited"}}, reason="looks right"))


def plain(value: Any) -> Any:
    return json.loads(json.dumps(value))


_LEFT_OUT = ("type", "update", "edit", "payload")


def shown(message: dict[str, Any]) -> dict[str, Any]:
    """An inspection message of the kernel's view, without what the page leaves out."""
    return {key: value for key, value in plain(message).items() if key not in _LEFT_OUT}


class TestOneFile:
    def test_it_holds_the_views_module_its_stylesheet_and_the_run_and_names_nothing_to_fetch(self, tmp_path):
        written = published().to_html(tmp_path / "run.html")
        text = written.read_text(encoding="utf-8")
        read = Read(text)
        module = read.scripts[1][1]
        bundle = (STATIC / "widget.js").read_text(encoding="utf-8")
        assert bundle[:2000] in module  # the view's own ES module, whole, its export clause a return
        assert (STATIC / "share.js").read_text(encoding="utf-8")[:500] in module
        assert "export{" not in module.replace(" ", "")
        data = data_of(text)
        assert data["css"] == (STATIC / "widget.css").read_text(encoding="utf-8")
        assert not [attrs for _, attrs in read.tags if {"src", "href"} & set(attrs)]
        assert not re.search(r"@import|url\(\s*['\"]?(?:https?:)?//", text)
        assert not [attrs for _, attrs in read.tags if "id" in attrs]  # (no id to clash with a page that includes it)
        [host] = [attrs for tag, attrs in read.tags if "data-nbgraph-shared" in attrs]
        assert re.fullmatch(r"[0-9a-f]{16}", host["data-nbgraph-shared"] or "")
        assert f'"{host["data-nbgraph-shared"]}"' in module

    def test_it_shows_what_the_replay_view_shows_in_a_notebook_less_what_needs_a_kernel(self, tmp_path):
        result = published()
        data = data_of(page(result.replay()))
        view = GraphView.replay(result)
        traits = data["traits"]
        for name in ("dag", "frames", "decisions", "status", "visits", "fired", "log", "kind"):
            assert traits[name] == plain(getattr(view, name)), name
        assert traits["decisions"]["rows"][0]["reason"] == "looks right"
        assert view.can_fork and not traits["can_fork"]  # no fork, answer or resume without a kernel
        assert (traits["pending"], traits["standing"], traits["can_stand"], traits["redefined"]) == ([], [], False, {})
        assert "answering, forking and resuming need the notebook" in data["note"]

    def test_the_inspector_is_answered_as_the_kernel_would_for_every_frame_node_step_and_log_line(self):
        result = published()
        frames = result.replay()
        data = data_of(page(frames))
        view = GraphView.replay(result)
        inspections, keys = data["inspections"], data["keys"]
        assert inspections[0] is None and len(inspections) == len(frames)
        for frame in range(1, len(frames)):
            assert inspections[frame] == shown(view.inspection({"frame": frame})), frame
        for record in frames.records:
            assert inspections[keys["node"][record.path]] == shown(view.inspection({"node": record.path}))
            where = f"{record.step} {record.path}"
            assert inspections[keys["where"][where]] == shown(
                view.inspection({"step": record.step, "where": record.path})
            )
            assert inspections[keys["step"][str(record.step)]] == shown(view.inspection({"step": record.step}))
        assert inspections[5]["pauses"][0]["kind"] == "approval"

    def test_a_sub_graph_and_a_maps_branches_are_inspected_by_their_log_lines(self):
        frames = with_inner().invoke({}).replay()
        data = data_of(page(frames))
        view = GraphView.replay(frames)
        keys = data["keys"]
        assert {"research/a", "research/b", "research", "work"} <= set(keys["node"])
        assert set(keys["where"]) == {"1 plan", "1 research/a", "2 research/b", "2 research", "3 work[0]", "4 work[1]"}
        for where, frame in keys["where"].items():
            step, _, place = where.partition(" ")
            assert data["inspections"][frame] == shown(view.inspection({"step": int(step), "where": place}))

    def test_a_failed_step_is_inspected_with_its_error(self):
        def boom(state):
            raise RuntimeError("the draft caught fire")

        g = writer()
        g.add_node("review", boom, replace=True)
        result = g.invoke({})
        assert result.outcome == "failed"
        data = data_of(page(result.replay()))
        failed = data["inspections"][-1]
        assert (failed["path"], "unavailable" in failed) == ("review", False)
        assert "the draft caught fire" in failed["error"]
        assert data["traits"]["status"]["outcome"] == "failed"


class TestEscaping:
    def test_a_script_end_tag_in_the_state_is_text_in_the_page(self, tmp_path):
        g = writer()
        g.add_node("draft", lambda s: {"version": s.version + 1, "text": HOSTILE, "notes": [HOSTILE]}, replace=True)
        path = g.invoke({}).to_html(tmp_path / "run.html")
        text = path.read_text(encoding="utf-8")
        read = Read(text)
        assert len(read.scripts) == 2  # the state's "<script>" made no element
        assert text.count("</script>") == 2
        data = data_of(text)
        seen = data["inspections"][2]  # review, which saw the draft's text
        assert seen["input"]["text"] == HOSTILE
        assert seen["input"]["notes"] == [HOSTILE]

    def test_numbers_json_has_no_word_for_are_none_or_text(self):
        g = Graph("odd")
        g.add_node("x", lambda s: {"nan": math.nan, "inf": -math.inf})
        g.add_edge(START, "x")
        g.add_edge("x", END)
        text = Read(page(g.invoke({}).replay())).scripts[0][1]
        data = json.loads(text, parse_constant=lambda word: pytest.fail(f"{word} is no JSON"))
        assert data["inspections"][1]["change"]["added"] == {"nan": None, "inf": None}  # (as pydantic writes them)
        assert share_module._kept({"cost": math.nan, "x": [math.inf]}, 10, []) == {"cost": "nan", "x": ["inf"]}


class TestSize:
    def test_ten_megabytes_of_text_in_the_state_make_a_page_of_a_few_hundred_kilobytes(self, tmp_path):
        big = "x" * 10_000_000
        path = writer().invoke({"text": big}).to_html(tmp_path / "run.html")
        size = path.stat().st_size
        assert size < 300_000, size
        data = data_of(path.read_text(encoding="utf-8"))
        seen = data["inspections"][1]
        assert (
            seen["input"].startswith('{"version": 0, "text": "xxx')
            and len(seen["input"]) == share_module.TEXT_CHARS + 1
        )
        assert any("keeps the first 2,000 characters" in note and "10,000,0" in note for note in seen["missing"])

    def test_past_the_budget_texts_are_clipped_shorter_then_later_frames_left_out(self, monkeypatch):
        g = Graph("long", max_steps=100, max_same_node=100)
        g.add_node("grow", lambda s: {"n": s.get("n", 0) + 1, "text": f"{s.get('n', 0)}" * 3000})
        g.add_edge(START, "grow")
        g.add_edge("grow", "grow", when=lambda s: s["n"] < 40)
        g.add_edge("grow", END)
        frames = g.invoke({}).replay()
        whole = data_of(page(frames))["inspections"]
        assert len(json.dumps(whole[5])) > 2000
        monkeypatch.setattr(share_module, "_BUDGET", 40 * 2500)
        shorter = data_of(page(frames))["inspections"]
        assert all(len(json.dumps(seen)) < 2500 for seen in shorter[1:])
        assert any("first 200 characters" in note for note in shorter[5]["missing"])
        monkeypatch.setattr(share_module, "_BUDGET", 10 * 2000)
        cut = data_of(page(frames))["inspections"]
        kept = [seen for seen in cut[1:] if "unavailable" not in seen]
        assert 5 <= len(kept) < 20
        assert cut[1 : len(kept) + 1] == shorter[1 : len(kept) + 1]
        assert set(cut[-1]) == {"unavailable"} and "holds the inspections of frames 1 to" in cut[-1]["unavailable"]


class TestSecrets:
    def test_a_secret_a_node_wrote_into_the_state_is_redacted_in_the_page(self, tmp_path):
        secret = "s3cr3t-Wq8vZp2Lk7"
        register_secret(secret)
        try:
            g = writer()
            g.add_node(
                "draft",
                lambda s: {"version": s.version + 1, "text": f"the key is {secret}", "notes": ["sk-" + "A" * 40]},
                replace=True,
            )
            text = g.invoke({}).to_html(tmp_path / "run.html").read_text(encoding="utf-8")
        finally:
            forget_secret(secret)
        assert secret not in text and secret[:8] not in text and "A" * 40 not in text
        assert "[redacted]" in text

    def test_a_secret_cut_through_by_the_clip_is_redacted_whole(self):
        secret = "s3cr3t-Wq8vZp2Lk7"
        register_secret(secret)
        try:
            g = writer()
            text = "x" * (share_module.TEXT_CHARS - 5) + secret + "y" * 100
            g.add_node("draft", lambda s: {"version": s.version + 1, "text": text}, replace=True)
            shared = page(g.invoke({}).replay())
        finally:
            forget_secret(secret)
        assert secret[:5] not in shared.replace("x" * 10, "")


class TestATraceWithoutItsGraph:
    def test_it_is_drawn_as_it_went_a_sub_graph_inside_its_frame(self, tmp_path):
        result = with_inner().invoke({})
        (tmp_path / "run.ndjson").write_text(result.to_ndjson())
        data = data_of(replay(tmp_path / "run.ndjson").to_html(tmp_path / "run.html").read_text(encoding="utf-8"))
        dag = data["traits"]["dag"]
        nodes = {node["id"]: node for node in dag["nodes"]}
        assert set(nodes) == {START, "plan", "research", "work", END}
        assert [n["id"] for n in nodes["research"]["graph"]["nodes"]] == [START, "a", "b", END]
        edges = {(e["from"], e["to"]): e["label"] for e in dag["edges"]}
        assert edges == {
            (START, "plan"): None,
            ("plan", "research"): None,
            ("research", "work"): "each letter",
            ("work", END): None,
        }
        inner = {(e["from"], e["to"]) for e in nodes["research"]["graph"]["edges"]}
        assert inner == {(START, "a"), ("a", "b"), ("b", END)}
        assert data["traits"]["status"]["max_steps"] is None  # (the trace does not say the graph's limit)
        assert "Drawn from the trace without its graph" in data["note"]

    def test_with_its_graph_it_is_drawn_whole(self, tmp_path):
        g = writer()
        data = data_of(page(replay(g.invoke({}).to_ndjson(), graph=g)))
        assert data["traits"]["dag"] == plain(GraphView(g.compile()).dag)
        assert data["traits"]["status"]["max_steps"] == 20


class TestTheBundles:
    def test_the_committed_bundles_inline(self):
        for name in ("widget.js", "share.js"):
            inlined = _inlined((STATIC / name).read_text(encoding="utf-8"), name)
            assert inlined.startswith("(() => {") and inlined.endswith("})()")
        assert '"default": ' in _inlined((STATIC / "widget.js").read_text(encoding="utf-8"), "widget.js")

    @pytest.mark.parametrize(
        ("bundle", "told"),
        [
            ("var a=1;", "does not end with an export clause"),
            ("var a=1;export{a as default};var b=2;", "does not end with an export clause"),
            ('import x from "./x.js";var a=1;export{a as default};', "imports another module"),
            ('var a="</script>";export{a as default};', "'</script', which would break the page"),
            ('var a="<!--";export{a as default};', "'<!--'"),
        ],
    )
    def test_a_bundle_the_page_cannot_hold_is_refused_saying_why(self, bundle, told):
        with pytest.raises(RuntimeError, match=told):
            _inlined(bundle, "widget.js")

    def test_an_export_clause_becomes_the_value_the_page_reads(self):
        assert _inlined("var a=1,b=2;export{a as default,b};\n/*! licence */\n", "x.js").endswith(
            'return {"default": a, "b": b};\n})()'
        )
