"""Tutorial 8, a third source: the check runs `research` on two questions and reads its steps:
three searches as arms of one fan-out, folded in the declared order, then one merge."""

from checkbank import Answer, Exercise

_NEWS = """async def search_news(state):
    await asyncio.sleep(0.1)
    return {"found": [f"news: 2 stories on {state.question}"]}"""

_THREE = """%%graph research --state Research
START -> plan
plan -> search_web & search_docs & search_news
search_web & search_docs & search_news -> merge
merge -> END"""


def _graph(*lines: str) -> str:
    return "\n".join(["%%graph research --state Research", "START -> plan", *lines, "merge -> END"])


EXERCISES = [
    Exercise(
        lesson="08-branches-and-subgraphs.ipynb",
        heading="## Exercise: a third source",
        check='course.verdict(exercise_problems(), "three sources, one merge.")',
        wrong=(
            Answer(
                "search_news added after merge: merge runs before the news is in",
                (
                    _NEWS,
                    "%%graph research --state Research\nSTART -> plan\nplan -> search_web & search_docs\n"
                    "search_web & search_docs -> merge\nmerge -> search_news\nsearch_news -> END",
                ),
                says="merge should run once, after all three",
            ),
            Answer(
                "search_news first in the fan-out: the findings fold in the declared order",
                (
                    _NEWS,
                    _graph(
                        "plan -> search_news & search_web & search_docs",
                        "search_news & search_web & search_docs -> merge",
                    ),
                ),
                says="expected web, docs, news, in that order",
            ),
            Answer(
                "no new node: search_docs returns the news finding too",
                (
                    'async def search_docs(state):\n    return {"found": [f"docs: 1 page on {state.question}", '
                    'f"news: 2 stories on {state.question}"]}',
                    "%%graph research --state Research\nSTART -> plan\nplan -> search_web & search_docs\n"
                    "search_web & search_docs -> merge\nmerge -> END",
                ),
                says="search_news never ran",
            ),
            Answer(
                "search_news chained after the join, so it runs alone, not beside the others",
                (
                    _NEWS,
                    _graph(
                        "plan -> search_web & search_docs",
                        "search_web & search_docs -> search_news",
                        "search_news -> merge",
                    ),
                ),
                says="search_news should be a third arm of the fan-out",
            ),
            Answer(
                "the finding hard-coded for the question the lesson asks",
                ('def search_news(state):\n    return {"found": ["news: 2 stories on graphs"]}', _THREE),
                says="it should name the question",
            ),
            Answer(
                "the finding returned as a string, not a one-item list: operator.add cannot add it",
                ('def search_news(state):\n    return {"found": f"news: 2 stories on {state.question}"}', _THREE),
                says="the run ended 'failed'",
            ),
        ),
        right=(
            Answer(
                "the graph written with the Python API",
                (
                    _NEWS,
                    """research = Graph("research", state=Research)
for name, node in [("plan", plan), ("search_web", search_web), ("search_docs", search_docs),
                   ("search_news", search_news), ("merge", merge)]:
    research.add_node(name, node)
research.add_edge(START, "plan")
research.add_edge("plan", ["search_web", "search_docs", "search_news"])
research.add_edge(["search_web", "search_docs", "search_news"], "merge")
research.add_edge("merge", END)""",
                ),
            ),
            Answer(
                "search_news in the fan-out with an edge of its own to merge: the arms of one fan-out "
                "route together, so merge still runs once, after all three",
                (
                    _NEWS,
                    _graph(
                        "plan -> search_web & search_docs & search_news",
                        "search_web & search_docs -> merge",
                        "search_news -> merge",
                    ),
                ),
            ),
            Answer(
                "a synchronous search_news, done before the two that await: the order still holds",
                (
                    'def search_news(state):\n    return {"found": [f"news: 2 stories on {state.question}"]}',
                    _THREE,
                ),
            ),
        ),
    ),
]
