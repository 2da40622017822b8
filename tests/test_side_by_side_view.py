"""Two runs side by side in the graph view: what the view is given to draw."""

from __future__ import annotations

from test_side_by_side import writer

from nbgraph import Fork
from nbgraph.side_by_side import side_by_side
from nbgraph.widget import GraphView


def test_the_view_gets_both_paths_and_the_comparison():
    run = writer().invoke({"version": 0}, thread="run")
    fork = writer().invoke(Fork(run, step=1, update={"version": 5}), thread="fork")

    view = GraphView.side_by_side(run, fork, labels=("run", "fork"))

    assert view.dag["name"] == "writer"
    sides = view.sides
    assert (sides["labels"], sides["parted_at"], sides["differs_at"]) == (["run", "fork"], 3, 1)
    assert sides["runs"] == [
        {
            "visits": {"draft": 2, "review": 2, "publish": 1},
            "fired": {
                "__start__\u2192draft": 1,
                "draft\u2192review": 2,
                "review\u2192draft": 1,
                "review\u2192publish": 1,
                "publish\u2192__end__": 1,
            },
        },
        {
            "visits": {"draft": 1, "review": 1, "publish": 1},
            "fired": {
                "__start__\u2192draft": 1,
                "draft\u2192review": 1,
                "review\u2192publish": 1,
                "publish\u2192__end__": 1,
            },
        },
    ]
    # A comparison already made draws the same.
    made = side_by_side(run, fork, labels=("run", "fork"))
    assert GraphView.side_by_side(made, None).sides == sides
    assert GraphView(writer()).sides == {}  # a view of one run has none


def test_a_comparison_displays_as_the_view_with_its_table_for_other_front_ends(monkeypatch):
    from nbgraph import _display, hooks  # noqa: F401  (the notebook layer registers its views)

    run = writer().invoke({"version": 0}, thread="run")
    other = writer(enough=1).invoke({"version": 0}, thread="v2")
    both = side_by_side(run, other, labels=("v1", "v2"))
    outside = both._repr_mimebundle_()  # no kernel: the table alone
    assert set(outside) == {"text/plain", "text/html"}

    monkeypatch.setattr(hooks, "notebook_layer", lambda: True)
    bundle = both._repr_mimebundle_()

    assert "application/vnd.jupyter.widget-view+json" in bundle
    assert bundle["text/plain"] == str(both)
    assert bundle["text/plain"].startswith("side by side: v1 (run, done) | v2 (v2, done)")
    assert bundle["text/html"] == both._repr_html_()
