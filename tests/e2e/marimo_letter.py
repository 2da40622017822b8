# A marimo notebook (tests/e2e/test_marimo_browser.py serves it): a graph, a run and a batch
# show their views as the cells' outputs with no wrapper; the graph's mermaid is drawn by marimo;
# a cell awaiting a paused run fails at once, saying what to do. (A batch's table left as a cell's
# last value would take the place of its view: it is kept in a name.)
import marimo

__generated_with = "0.25.2"
app = marimo.App()


@app.cell
def _():
    import marimo as mo

    from nbgraph import END, START, Graph

    letter = Graph("letter")
    letter.add_node("draft", lambda s: {"text": "Dear customer"}, approval=True)
    letter.add_node("send", lambda s: {"sent": True})
    letter.add_edge(START, "draft")
    letter.add_edge("draft", "send")
    letter.add_edge("send", END)
    letter  # noqa: B018 (marimo shows a cell's last expression)
    return END, Graph, START, letter, mo


@app.cell
def _(letter):
    run = letter.start({"text": ""})
    return (run,)


@app.cell
def _(letter, mo):
    mo.mermaid(letter.to_mermaid())
    return


@app.cell
async def _(END, Graph, START):
    count = Graph("count")
    count.add_node("add", lambda s: {"n": s["n"] + 1})
    count.add_edge(START, "add")
    count.add_edge("add", END)
    _rows = await count.abatch([{"n": 1}, {"n": 2}, {"n": 3}])
    return


@app.cell
async def _(letter):
    second = letter.start({"text": "by code"}, display=False)
    await second
    return


if __name__ == "__main__":
    app.run()
