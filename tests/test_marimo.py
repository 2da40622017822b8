"""nbgraph in a marimo notebook, run by marimo itself (``marimo export session`` runs every cell
and keeps its output as marimo shows it): a graph, a started run, that run left as a cell's
value, two runs side by side and a batch each show as a view (marimo's own element for an
anywidget, with no ``mo.ui.anywidget`` in the notebook), never as text; a cell awaiting a
paused run fails at once, saying what to do. The browser half, clicks included, is
``tests/e2e/test_marimo_browser.py``."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

CELLS = {
    "graph": """
    from nbgraph import END, START, Graph
    from nbgraph.side_by_side import side_by_side

    letter = Graph("letter")
    letter.add_node("draft", lambda s: {"text": "Dear customer"}, approval=True)
    letter.add_node("send", lambda s: {"sent": True})
    letter.add_edge(START, "draft")
    letter.add_edge("draft", "send")
    letter.add_edge("send", END)
    count = Graph("count")
    count.add_node("add", lambda s: {"n": s["n"] + 1})
    count.add_edge(START, "add")
    count.add_edge("add", END)
    letter""",
    "started": """
    run = letter.start({"text": ""})""",
    "run": """
    run""",
    "awaited": """
    second = letter.start({"text": "by code"}, display=False)
    await second""",
    "compared": """
    side_by_side(count.invoke({"n": 1}), count.invoke({"n": 5}))""",
    "batch": """
    table = await count.abatch([{"n": 1}, {"n": 2}])""",
}


def _notebook() -> str:
    """The cells as a marimo notebook; each defines the names later ones use (marimo's order)."""
    defines = {"graph": "END, Graph, START, count, letter, side_by_side", "started": "run", "awaited": "second"}
    uses = {"started": "letter", "run": "run", "awaited": "letter", "compared": "count, side_by_side", "batch": "count"}
    parts = ["import marimo\n\n__generated_with = '0.25.2'\napp = marimo.App()\n"]
    for name, body in CELLS.items():
        kind = "async def" if "await" in body else "def"
        returned = f"({defines[name]},)" if name in defines else ""
        code = "\n".join(line[4:] if line.startswith("    ") else line for line in body.strip("\n").splitlines())
        indented = "\n".join(f"    {line}" if line else "" for line in code.splitlines())
        parts.append(f"\n@app.cell\n{kind} _({uses.get(name, '')}):\n{indented}\n    return {returned}\n")
    return "\n".join(parts)


def _outputs(tmp_path: Path) -> dict[str, dict]:
    """Each cell's output, as ``marimo export session`` keeps it, by the names in CELLS."""
    notebook = tmp_path / "letter.py"
    notebook.write_text(_notebook())
    env = {k: v for k, v in os.environ.items() if k != "NBGRAPH_AUTO_ANSWER"}
    env.update(HOME=str(tmp_path), XDG_CONFIG_HOME=str(tmp_path / ".config"), XDG_STATE_HOME=str(tmp_path / ".state"))
    done = subprocess.run(
        [sys.executable, "-m", "marimo", "export", "session", str(notebook), "--no-sandbox"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    session = json.loads((tmp_path / "__marimo__" / "session" / "letter.py.json").read_text())
    cells = session["cells"]
    assert len(cells) == len(CELLS), done.stdout + done.stderr
    return {name: cell["outputs"][0] for name, cell in zip(CELLS, cells, strict=True)}


def _views(output: dict) -> list[str]:
    """The model ids of the anywidgets an HTML output shows."""
    assert output["type"] == "data", output
    html = output["data"]["text/html"]
    assert "mermaid" not in html and "&lt;" not in html, html[:500]  # (no text of the graph's)
    return re.findall(r"data-model-id='&quot;(\w+)&quot;'", html)


def test_marimo_shows_graphs_runs_and_batches_as_views_and_an_awaiting_cell_fails_at_once(tmp_path):
    outputs = _outputs(tmp_path)
    for name in ("graph", "started", "run", "compared", "batch"):
        assert len(_views(outputs[name])) == 1, name
    # The run left as a cell's value shows the view its start showed, not its repr.
    assert _views(outputs["run"]) == _views(outputs["started"])
    assert len({_views(outputs[name])[0] for name in ("graph", "started", "compared", "batch")}) == 4

    failed = outputs["awaited"]
    assert failed["type"] == "error", failed
    message = failed["evalue"]
    assert re.match(
        r"run '\w+' of graph 'letter' waits at 'draft' \(approval\) for an answer that cannot reach", message
    )
    assert "marimo hands a view's click to the kernel only after the running cell ends" in message
    assert (
        "end this cell without awaiting the run, answer in its view, and read run.result() in the next cell" in message
    )


def test_marimo_formatting_a_graph_outside_a_notebook_shows_its_text_and_loads_no_widget():
    # (a script that renders values with marimo: no notebook, so no view to show)
    code = (
        "import sys, marimo\n"
        "from nbgraph import END, START, Graph\n"
        "g = Graph('letter')\n"
        "g.add_node('draft', lambda s: {})\n"
        "g.add_edge(START, 'draft')\n"
        "g.add_edge('draft', END)\n"
        "print('flowchart TD' in marimo.as_html(g).text, 'anywidget' in sys.modules, 'nbgraph._display' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    assert out.stdout.split() == ["True", "False", "False"]
