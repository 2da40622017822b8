"""Case study 2, a research pipeline: a denial that answers (part 1), one more lookup (part 2)."""

from checkbank import Answer, Exercise

# A learner in part 2 has run its first cell, which rebuilds part 1 (that cell is no `build` cell).
_PART_1 = 'course.rebuild("c2-research-pipeline-1.ipynb")'

_PIPELINE = """%%graph pipeline_ex --state PipelineState --max-steps 10
START -> research
research -> analyze    if state.context.get("has_findings")
research -> summarize
analyze -> summarize
{tail}"""

_PYTHON = """from nbgraph import END, START, Graph

pipeline_ex = Graph("pipeline_ex", state=PipelineState, max_steps=10)
pipeline_ex.add_node("research", research)
pipeline_ex.add_node("analyze", analyze)
pipeline_ex.add_node("summarize", summarize, approval=True, on_deny="apologize")
pipeline_ex.add_node("publish", publish)
pipeline_ex.add_node("apologize", apologize)
pipeline_ex.add_edge(START, "research")
pipeline_ex.add_edge("research", "analyze", when=lambda s: s.context.get("has_findings"), label="has findings")
pipeline_ex.add_edge("research", "summarize")
pipeline_ex.add_edge("analyze", "summarize")
pipeline_ex.add_edge("summarize", "publish")
pipeline_ex.add_edge("publish", END)
{apology_out}"""


def _pipeline(*tail: str) -> str:
    return _PIPELINE.format(tail="\n".join(tail))


_DEEPER = """deeper_model = make_research_model("deeper-research-model")
deeper_research = llm_node(
    "Gather specific facts about the user's question. Use tools when relevant.",
    model=deeper_model,
    tools={tools},{rounds}
)"""


def _deeper(rounds: str = "\n    max_tool_rounds=2,", tools: str = "[get_weather, get_time]") -> str:
    return _DEEPER.format(rounds=rounds, tools=tools)


EXERCISES = [
    Exercise(
        lesson="c2-research-pipeline-1.ipynb",
        heading="## Exercise: a denial that answers",
        check='course.verdict(denial_problems(), "a denial now goes to apologize.")',
        wrong=(
            Answer(
                "nothing changed: a denial still ends the run",
                (),
                says="the denied run ended 'denied' with path ['research', 'summarize']; it should end 'done' after apologize",
            ),
            Answer(
                "on_deny set, but apologize given no way out",
                (_PYTHON.format(apology_out=""),),
                says="node 'apologize' has no outgoing edge",
            ),
            Answer(
                "apologize goes on to publish, which publishes the research note over the apology",
                (_pipeline("summarize [approval, on_deny=apologize] -> publish -> END", "apologize -> publish"),),
                says="it should end 'done' after apologize",
            ),
            Answer(
                "the approval moved before publish: the summary is in the state before anyone decides",
                (_pipeline("summarize -> publish [approval=before, on_deny=apologize] -> END", "apologize -> END"),),
                says="the run asked [('approval', 'before', 'publish')]; keep [approval] on summarize",
            ),
            Answer(
                "the approval made a before-approval: the person decides before there is a summary to read",
                (_pipeline("summarize [approval=before, on_deny=apologize] -> publish -> END", "apologize -> END"),),
                says="the run asked [('approval', 'before', 'summarize')]",
            ),
            Answer(
                "apologize chained after summarize: an approved summary is apologised for, not published",
                (_pipeline("summarize [approval, on_deny=apologize] -> apologize -> END", "publish -> END"),),
                says="an approved summary should still be published",
            ),
        ),
        right=(
            Answer(
                "built in Python with approval=True, on_deny='apologize'",
                (_PYTHON.format(apology_out='pipeline_ex.add_edge("apologize", END)'),),
            ),
            Answer(
                "an apology of one's own words, and the node options in another order",
                (
                    'def apologize(state):\n    return {"published": "We could not check that answer, so we give none."}',
                    _pipeline("apologize -> END", "summarize [on_deny=apologize, approval] -> publish -> END"),
                ),
            ),
        ),
    ),
    Exercise(
        lesson="c2-research-pipeline-2.ipynb",
        heading="## Exercise: one more lookup",
        check='course.verdict(lookup_problems(), "three rounds of tools.")',
        wrong=(
            Answer(
                "the copy of the node not there (the kernel restarted, and only the check run): no deeper_research",
                ("del deeper_research",),
                says="deeper_research is not defined: run the cell above",
            ),
            Answer(
                "nothing changed: two rounds",
                (_PART_1, _deeper()),
                says="the third lookup should be get_weather for Yokohama: how many rounds",
            ),
            Answer(
                "the wrong node: part 1's research given three rounds, the copy left at two",
                (
                    _PART_1,
                    _deeper(),
                    _deeper(rounds="\n    max_tool_rounds=3,").replace("deeper_research =", "research ="),
                ),
                says="the model looked up [('get_weather', 'Tokyo'), ('get_time', 'Tokyo')]",
            ),
            Answer(
                "fewer rounds, not more",
                (_PART_1, _deeper(rounds="\n    max_tool_rounds=1,")),
                says="the model looked up [('get_weather', 'Tokyo')]",
            ),
            Answer(
                "only the weather tool offered, since Yokohama is a weather lookup",
                (_PART_1, _deeper(rounds="\n    max_tool_rounds=3,", tools="[get_weather]")),
                says="a lookup failed (error: there is no tool 'get_time'; the tools are: get_weather); keep the node's two tools",
            ),
        ),
        right=(
            Answer(
                "four rounds: more than the model needs",
                (_PART_1, _deeper(rounds="\n    max_tool_rounds=4,")),
            ),
            Answer(
                "max_tool_rounds left out: the default allows five",
                (_PART_1, _deeper(rounds="")),
            ),
        ),
    ),
]
