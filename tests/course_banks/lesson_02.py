"""Tutorial 2, nothing found and read the errors."""

from checkbank import Answer, Exercise

_LESSON = "02-graph-language.ipynb"

_APOLOGIZE = 'def apologize(state):\n    return {"answer": "Sorry, I found nothing on that."}'

_RESEARCH = """%%graph research_graph --max-steps 20
START -> research
{edges}
analyze -> summarize -> END
apologize -> {after}"""


def _research(edges: str, after: str = "END") -> str:
    return _RESEARCH.format(edges=edges, after=after)


_SOLVED = (
    "research -> analyze    if state.findings\nresearch -> apologize  if not state.findings\nresearch -> summarize"
)


def _to_fix(*lines: str) -> str:
    return 'TO_FIX = """\nSTART -> research\n' + "\n".join(lines) + '\n"""'


EXERCISES = [
    Exercise(
        lesson=_LESSON,
        heading="## Exercise 1: nothing found",
        check='course.verdict(exercise_1_problems(), "nothing found goes to apologize, findings to analyze.")',
        wrong=(
            Answer(
                "apologize defined, but the graph cell not changed and run again",
                (_APOLOGIZE,),
                says="nothing found went research -> summarize and answered 'nothing found'; send it to apologize",
            ),
            Answer(
                "apologize goes on to summarize, which writes over its answer",
                (_APOLOGIZE, _research(_SOLVED, after="summarize")),
                says="went research -> apologize -> summarize and answered 'nothing found'; apologize sets the answer, then goes to END",
            ),
            Answer(
                "a condition that never holds: no findings is an empty list, not None",
                (_APOLOGIZE, _research(_SOLVED.replace("if not state.findings", "if state.findings is None"))),
                says="send it to apologize (an edge before the fallback)",
            ),
            Answer(
                "the condition turned round: findings go to apologize",
                (
                    _APOLOGIZE,
                    _research(
                        "research -> apologize  if state.findings\nresearch -> analyze  if state.findings\n"
                        "research -> summarize"
                    ),
                ),
                says="findings went research -> apologize; they should still go to analyze",
            ),
            Answer(
                "apologize writes another field than answer",
                ('def apologize(state):\n    return {"reply": "Sorry, I found nothing on that."}', _research(_SOLVED)),
                says="went research -> apologize and answered None; apologize sets the answer",
            ),
        ),
        right=(
            Answer(
                "apologize is the fallback, in place of summarize",
                (_APOLOGIZE, _research("research -> analyze  if state.findings\nresearch -> apologize")),
            ),
            Answer(
                "apologize as a %%node cell, its edge first",
                (
                    '%%node apologize\nreturn {"answer": "Sorry, I found nothing on that."}',
                    _research(
                        "research -> apologize  if not state.findings\nresearch -> analyze  if state.findings\n"
                        "research -> summarize"
                    ),
                ),
            ),
            Answer(
                "a router instead of conditions",
                (
                    _APOLOGIZE,
                    'def after_research(state):\n    return "analyze" if state.findings else "apologize"',
                    _research("research -> analyze | apologize via after_research"),
                ),
            ),
        ),
    ),
    Exercise(
        lesson=_LESSON,
        heading="## Exercise 2: read the errors",
        check='course.verdict(exercise_2_problems(), "TO_FIX is a graph now.")',
        wrong=(
            Answer(
                "only the router fixed: the misspelt node is left",
                (_to_fix("research -> analyse | summarize via after_research", "analyze -> summarize -> END"),),
                says="node 'analyse' is not defined",
            ),
            Answer(
                "only the node name fixed: `using` is left",
                (_to_fix("research -> analyze | summarize using after_research", "analyze -> summarize -> END"),),
                says="end the line with 'via ROUTER_FUNCTION'",
            ),
            Answer(
                "the line with the errors taken out instead of fixed: findings skip analyze",
                (_to_fix("research -> summarize", "analyze -> summarize -> END"),),
                says="findings went ['research', 'summarize']",
            ),
            Answer(
                "the error silenced by naming analyze analyse too: the router's 'analyze' is not a target",
                (
                    "analyse = analyze",
                    _to_fix(
                        "research -> analyse | summarize via after_research",
                        "analyse -> summarize",
                        "analyze -> summarize -> END",
                    ),
                ),
                says="router 'after_research' of node 'research' returned 'analyze', which is not one of its targets",
            ),
        ),
        right=(
            Answer(
                "conditions in place of the router",
                (
                    _to_fix(
                        "research -> analyze  if state.findings", "research -> summarize", "analyze -> summarize -> END"
                    ),
                ),
            ),
            Answer(
                "the router's targets in another order, one edge a line",
                (
                    _to_fix(
                        "research -> summarize | analyze via after_research", "analyze -> summarize", "summarize -> END"
                    ),
                ),
            ),
        ),
    ),
]
