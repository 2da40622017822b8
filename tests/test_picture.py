"""The picture of a graph and a run for saved notebooks: a layered layout with no two things
on top of each other, the path a run took drawn, how it ended said, legible light and dark."""

from __future__ import annotations

import random
import re
import xml.etree.ElementTree as ET

from nbgraph import END, START, Graph
from nbgraph.export import to_dag
from nbgraph.picture import PALETTES, Frame, layout, to_svg

SVG = "{http://www.w3.org/2000/svg}"


def writer() -> Graph:
    g = Graph("writer")
    for name in ("ask_topic", "draft", "review"):
        g.add_node(name, lambda s: {})
    g.add_node("publish", lambda s: {}, approval="before")
    g.add_edge(START, "ask_topic")
    g.add_edge("ask_topic", "draft")
    g.add_edge("draft", "review")
    g.add_edge("review", "publish", when=lambda s: True, label="state.good_enough")
    g.add_edge("review", "draft")
    g.add_edge("publish", END)
    return g


DONE = Frame(
    headline="done after 6 steps",
    tone="ok",
    visits={"ask_topic": 1, "draft": 2, "review": 2, "publish": 1},
    fired={
        f"{START}\u2192ask_topic": 1,
        "ask_topic\u2192draft": 1,
        "draft\u2192review": 2,
        "review\u2192draft": 1,
        "review\u2192publish": 1,
        f"publish\u2192{END}": 1,
    },
)


def thirty(seed: int) -> dict:
    """A 30-node graph: a tree of random conditional edges, some going back, ends into END."""
    rng = random.Random(seed)
    ids = [f"node_{i:02d}" for i in range(30)]
    nodes = [{"id": START, "kind": "start"}, *({"id": i, "kind": "function"} for i in ids), {"id": END, "kind": "end"}]
    edges = [{"from": START, "to": ids[0], "label": "", "unconditional": True}]
    for k in range(1, 30):
        label = rng.choice(["", "state.score > 3", "ok"])
        edges.append(
            {"from": ids[rng.randrange(max(0, k - 5), k)], "to": ids[k], "label": label, "unconditional": False}
        )
    for _ in range(8):
        a, b = rng.sample(range(30), 2)
        edges.append({"from": ids[a], "to": ids[b], "label": "retry", "unconditional": False})
    edges += [{"from": ids[k], "to": END, "label": "", "unconditional": True} for k in range(26, 30)]
    return {"name": "thirty", "nodes": nodes, "edges": edges}


def test_a_30_node_graph_is_laid_out_with_no_node_or_label_on_another():
    for seed in range(6):
        placed = layout(thirty(seed))
        boxes = list(placed.boxes.values())
        labels = [route.label_box for route in placed.routes if route.label_box is not None]
        assert len(boxes) == 32 and len(labels) > 10
        clashes = [
            (a, b) for i, a in enumerate(boxes + labels) for b in (boxes + labels)[i + 1 :] if a.overlaps(b, gap=4)
        ]
        assert clashes == [], (seed, clashes[:3])
        # Everything inside the drawing.
        for box in boxes + labels:
            assert box.x - box.w / 2 >= 0 and box.x + box.w / 2 <= placed.width
            assert box.y - box.h / 2 >= 0 and box.y + box.h / 2 <= placed.height


def test_start_is_at_the_top_end_at_the_bottom_and_a_loop_back_goes_up():
    placed = layout(to_dag(writer()))
    y = {name: box.y for name, box in placed.boxes.items()}
    assert y[START] < y["ask_topic"] < y["draft"] < y["review"] < y["publish"] < y[END]
    routes = {(route.source, route.target): route for route in placed.routes}
    down, back = routes[("draft", "review")], routes[("review", "draft")]
    assert down.points[0][1] < down.points[-1][1]  # from draft's bottom to review's top
    assert back.points[0][1] > back.points[-1][1]  # from review's top up to draft's bottom
    assert {p for p in down.points[1:-1]} != {p for p in back.points[1:-1]}  # side by side, not one line
    # Each edge leaves its source and reaches its target on their boxes' sides.
    for route in placed.routes:
        for end, name in ((route.points[0], route.source), (route.points[-1], route.target)):
            box = placed.boxes[name]
            assert abs(end[0] - box.x) <= box.w / 2 and abs(abs(end[1] - box.y) - box.h / 2) < 0.01
    assert routes[("review", "publish")].label == "state.good_enough"


def test_the_run_s_path_is_drawn_and_how_it_ended_is_said():
    svg = to_svg(to_dag(writer()), DONE)
    root = ET.fromstring(svg)  # well-formed
    taken = {p.get("data-edge"): p for p in root.iter(f"{SVG}path") if p.get("data-taken")}
    assert set(taken) == set(DONE.fired)
    assert all(p.get("stroke") == PALETTES["light"]["path"] for p in taken.values())
    assert taken["draft\u2192review"].get("data-taken") == "2"
    plain = [p for p in root.iter(f"{SVG}path") if p.get("data-edge") and not p.get("data-taken")]
    assert plain == []  # every edge of this graph was taken
    texts = [t.text for t in root.iter(f"{SVG}text")]
    assert "writer \u00b7 done after 6 steps" in texts
    assert texts.count("\u00d72") >= 3  # draft and review ran twice, and the edge between them
    assert root.find(f"{SVG}title").text == "writer \u00b7 done after 6 steps"
    assert root.get("aria-label") == "writer \u00b7 done after 6 steps"
    visited = {r.get("data-node"): r.get("data-visits") for r in root.iter(f"{SVG}rect") if r.get("data-node")}
    assert visited == {START: None, "ask_topic": "1", "draft": "2", "review": "2", "publish": "1", END: None}
    end = next(r for r in root.iter(f"{SVG}rect") if r.get("data-node") == END)
    assert end.get("stroke") == PALETTES["light"]["ok"]  # ended there, done


def test_a_run_that_waits_or_failed_marks_its_node_and_says_why():
    waiting = Frame(
        headline="waiting at publish \u00b7 step 5",
        note="approve publish?",
        tone="warn",
        visits={"ask_topic": 1},
        current=frozenset({"publish"}),
    )
    root = ET.fromstring(to_svg(to_dag(writer()), waiting))
    box = next(r for r in root.iter(f"{SVG}rect") if r.get("data-node") == "publish")
    assert box.get("stroke") == PALETTES["light"]["warn"] and box.get("stroke-dasharray")
    assert "approve publish?" in [t.text for t in root.iter(f"{SVG}text")]
    failed = Frame(headline="failed at step 2", note="ValueError: no topic", tone="bad", failed=frozenset({"draft"}))
    root = ET.fromstring(to_svg(to_dag(writer()), failed))
    box = next(r for r in root.iter(f"{SVG}rect") if r.get("data-node") == "draft")
    assert box.get("stroke") == PALETTES["light"]["bad"]
    assert root.get("aria-label") == "writer \u00b7 failed at step 2. ValueError: no topic"


def test_a_graph_alone_shows_no_path_and_unconditional_edges_dashed():
    root = ET.fromstring(to_svg(to_dag(writer())))
    edges = [p for p in root.iter(f"{SVG}path") if p.get("data-edge")]
    assert edges and not any(p.get("data-taken") for p in edges)
    dashed = {p.get("data-edge") for p in edges if p.get("stroke-dasharray")}
    assert "review\u2192publish" not in dashed and "ask_topic\u2192draft" in dashed
    assert [t.text for t in root.iter(f"{SVG}text")][0] == "writer"


def test_edges_taken_that_the_graph_does_not_declare_self_loops_and_counts_are_drawn():
    g = Graph("loops")
    g.add_node("a", lambda s: {})
    g.add_node("b", lambda s: {})
    g.add_edge(START, "a")
    g.add_edge("a", "a", when=lambda s: False, label="again")
    g.add_edge("a", END)
    g.add_edge("b", END)
    frame = Frame(fired={"a\u2192a": 3, "a\u2192b": 2, f"{START}\u2192a": 5}, counted=True)
    root = ET.fromstring(to_svg(to_dag(g), frame))
    drawn = {p.get("data-edge"): p for p in root.iter(f"{SVG}path") if p.get("data-edge")}
    assert "a\u2192b" in drawn  # taken, not declared (a Goto): drawn all the same
    texts = [t.text for t in root.iter(f"{SVG}text")]
    assert "again 3 runs" in texts and "2 runs" in texts and "5 runs" in texts
    widths = {key: float(drawn[key].get("stroke-width")) for key in ("a\u2192b", f"{START}\u2192a")}
    assert widths[f"{START}\u2192a"] > widths["a\u2192b"]  # a batch's busier edge is wider


def test_a_second_path_is_drawn_under_the_first_in_its_colour_with_a_key():
    frame = Frame(
        fired={"ask_topic\u2192draft": 1},
        other={"review\u2192publish": 1},
        legend=(("other", "run a"), ("path", "run b")),
    )
    root = ET.fromstring(to_svg(to_dag(writer()), frame))
    other = [p for p in root.iter(f"{SVG}path") if p.get("stroke") == PALETTES["light"]["other"]]
    assert len(other) == 1
    texts = [t.text for t in root.iter(f"{SVG}text")]
    assert "run a" in texts and "run b" in texts


def test_names_are_escaped_and_the_picture_stays_well_formed():
    g = Graph("<script>&")
    g.add_node('say "<hi>" & bye', lambda s: {})
    g.add_edge(START, 'say "<hi>" & bye')
    g.add_edge('say "<hi>" & bye', END)
    svg = to_svg(to_dag(g), Frame(headline="done", note="a <b> & 'c'"))
    root = ET.fromstring(svg)
    assert "<script>" not in svg
    assert 'say "<hi>" & bye' in [t.text for t in root.iter(f"{SVG}text")]


def _luminance(colour: str) -> float:
    channels = [int(colour[i : i + 2], 16) / 255 for i in (1, 3, 5)]
    linear = [c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
    return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]


def _contrast(a: str, b: str) -> float:
    high, low = sorted((_luminance(a), _luminance(b)), reverse=True)
    return (high + 0.05) / (low + 0.05)


def test_the_picture_has_its_own_background_and_every_text_colour_reads_on_it_light_and_dark():
    svg = to_svg(to_dag(writer()), DONE)
    root = ET.fromstring(svg)
    background = next(root.iter(f"{SVG}rect"))
    assert background.get("fill") == PALETTES["light"]["bg"] and background.get("width")
    for scheme, colours in PALETTES.items():
        for role in ("fg", "muted", "path", "other", "ok", "warn", "bad"):
            assert _contrast(colours[role], colours["bg"]) >= 4.5, (scheme, role)
        assert _contrast(colours["fg"], colours["visited"]) >= 4.5, scheme  # a visited node's name
        assert _contrast(colours["fg"], colours["node"]) >= 4.5, scheme
        assert _contrast(colours["edge"], colours["bg"]) >= 3, scheme  # an edge, a node's border
    # The dark colours, where the reader prefers them, for everything coloured, the background first.
    style = root.find(f"{SVG}style").text
    assert style.startswith("@media (prefers-color-scheme: dark){")
    assert f".f-bg{{fill:{PALETTES['dark']['bg']}}}" in style
    used = {cls for element in root.iter() for cls in (element.get("class") or "").split()}
    for cls in used - {"edge"}:
        role = cls.split("-", 1)[1]
        assert re.search(rf"\.{cls}\{{(fill|stroke):{PALETTES['dark'][role]}\}}", style), cls
