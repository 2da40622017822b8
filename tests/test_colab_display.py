"""On Colab, anywidget adds display metadata to a view's output (where Colab's widget manager
for custom widgets lives); a displayed graph, a started run's view and a batch's view keep it.

Colab itself cannot run here: a stand-in for the one module anywidget reads there,
``google.colab.output`` (its ``enable_custom_widget_manager()`` and the URL it installs), is
put in a real kernel's ``sys.modules``. (Colab's real module also adds the same metadata to
every widget output through a display hook; the stand-in leaves that out, so what reaches the
output here is what nbgraph passed on.)"""

from __future__ import annotations

from kernel_session import WIDGET, kernel

MANAGER = "https://colab.example/widgets/manager.min.js"

COLAB = f"""
import sys, types

widgets = types.ModuleType("google.colab.output._widgets")
widgets._installed_url = None
output = types.ModuleType("google.colab.output")
output._widgets = widgets

def enable_custom_widget_manager():
    widgets._installed_url = {MANAGER!r}

output.enable_custom_widget_manager = enable_custom_widget_manager
sys.modules["google.colab.output._widgets"] = widgets
sys.modules["google.colab.output"] = output
"""

LETTER = """
from nbgraph import END, START, Graph

letter = Graph("letter")
letter.add_node("draft", lambda s: {"text": "Dear customer"}, approval=True)
letter.add_edge(START, "draft")
letter.add_edge("draft", END)

echo = Graph("echo")
echo.add_node("say", lambda s: {"said": s.text})
echo.add_edge(START, "say")
echo.add_edge("say", END)
"""


def test_the_metadata_anywidget_adds_for_colabs_widget_manager_is_kept():
    with kernel(NBGRAPH_HEADLESS_WAIT="0") as k:
        k.run(COLAB + LETTER)
        outputs = {}
        for name, code in (
            ("graph", "letter"),
            ("run", "run = letter.start({'text': ''})"),
            ("batch", "table = await echo.abatch([{'text': 'hello'}])"),
        ):
            cell = k.send(code)
            k.reply(cell)
            outputs[name] = [
                m["content"]
                for m in k.published
                if m["parent_header"].get("msg_id") == cell and m["msg_type"] in ("display_data", "execute_result")
            ]
        wanted = {WIDGET: {"colab": {"custom_widget_manager": {"url": MANAGER}}}}
        for name, shown in outputs.items():
            (output,) = [o for o in shown if WIDGET in o["data"]]
            assert output["metadata"] == wanted, (name, output["metadata"])
            assert "text/markdown" in output["data"] or name == "batch"  # (the mermaid fallback stays)
