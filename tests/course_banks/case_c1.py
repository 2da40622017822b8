"""Case study 1, a graph as a state machine: change a route (part 1), repair the broken graph (part 2)."""

from checkbank import Answer, Exercise

# A learner in part 2 has run its first cell, which rebuilds part 1 (that cell is no `build` cell).
_PART_1 = 'course.rebuild("c1-state-machine-1.ipynb")'

_ROUTER = """%%graph router_ex --model router_model --max-steps 20
START -> analyze
{edges}
lookup -> analyze
calculator -> analyze"""

_LOOKUP = 'analyze -> lookup      if "USE_LOOKUP" in reply(state)'
_CALC = 'analyze -> calculator  if "USE_CALC" in reply(state)'


def _router(*edges: str) -> str:
    return _ROUTER.format(edges="\n".join(edges))


_PYTHON = """router_ex = Graph("router_ex", model=router_model, max_steps=20)
router_ex.add_node("analyze", analyze, feedback=False)
router_ex.add_node("lookup", lookup)
router_ex.add_node("calculator", calculator)
router_ex.add_edge(START, "analyze")
{fallback}router_ex.add_edge("analyze", "calculator", when=lambda s: "USE_CALC" in reply(s), label="calc")
router_ex.add_edge("analyze", "lookup", when=lambda s: "USE_LOOKUP" in reply(s), label="lookup")
{last}router_ex.add_edge("lookup", "analyze")
router_ex.add_edge("calculator", "analyze")"""


def _python(*, fallback_first: bool = False) -> str:
    fallback = 'router_ex.add_edge("analyze", END, label="answered")\n'
    return _PYTHON.format(fallback=fallback if fallback_first else "", last="" if fallback_first else fallback)


_REPAIRED = """repaired = Graph("repaired", max_steps={steps})
repaired.add_node("research", research)
repaired.add_node("write", draft)
repaired.add_node("critique", critique)
{start}repaired.add_edge("research", "write")
repaired.add_edge("write", "critique")
{edges}"""

_BACK = 'repaired.add_edge("critique", "write", when=lambda s: not s.approved)\n'
_OUT = 'repaired.add_edge("critique", END)\n'
_START = 'repaired.add_edge(START, "research")\n'


def _repaired(edges: str = _BACK + _OUT, *, steps: int = 10, start: str = _START) -> str:
    return _REPAIRED.format(steps=steps, start=start, edges=edges)


EXERCISES = [
    Exercise(
        lesson="c1-state-machine-1.ipynb",
        heading="## Exercise: change a route",
        check='course.verdict(route_problems(), "both tools named -> calculator, no tool named -> END.")',
        wrong=(
            Answer(
                "nothing changed: the lookup's edge is still tried first",
                (),
                says="a reply naming both tools goes to lookup; which edge is tried first?",
            ),
            Answer(
                "the original router edited instead of its copy router_ex",
                (_router(_CALC, _LOOKUP, "analyze -> END").replace("router_ex", "router"),),
                says="in router_ex a reply naming both tools goes to lookup",
            ),
            Answer(
                "a condition changed instead of the order: the lookup's edge now excludes USE_CALC",
                (_router(_LOOKUP + ' and "USE_CALC" not in reply(state)', _CALC, "analyze -> END"),),
                says="tried in the order ['lookup', 'calculator']: leave the conditions as they were",
            ),
            Answer(
                "the lookup's edge deleted: now every reply naming a tool goes to the calculator or nowhere",
                (_router(_CALC, "analyze -> END"),),
                says="a reply naming only USE_LOOKUP goes to END; keep the edge to lookup",
            ),
            Answer(
                "built in Python with the fallback to END added first: the conditions after it are dead",
                (_python(fallback_first=True),),
                says="move it last as the fallback",
            ),
            Answer(
                "the fallback to END dropped: a reply naming no tool has nowhere to go",
                (_router(_CALC, _LOOKUP),),
                says="a reply naming no tool goes to nowhere (the run ended 'failed': ",
            ),
        ),
        right=(
            Answer(
                "the back-edges written first, then the calculator, the lookup and the fallback",
                (
                    """%%graph router_ex --model router_model --max-steps 20
lookup -> analyze
calculator -> analyze
START -> analyze
analyze -> calculator  if "USE_CALC" in reply(state)
analyze -> lookup      if "USE_LOOKUP" in reply(state)
analyze -> END""",
                ),
            ),
            Answer(
                "built in Python, with labels on the edges",
                (_python(),),
            ),
        ),
    ),
    Exercise(
        lesson="c1-state-machine-2.ipynb",
        heading="## Exercise: repair the broken graph",
        check='course.verdict(repair_problems(), "repaired compiles and runs.")',
        wrong=(
            Answer(
                "nothing built yet",
                (_PART_1,),
                says="repaired is still None: build it in the cell above",
            ),
            Answer(
                "the edge from START forgotten",
                (_PART_1, _repaired(start="")),
                says="the graph has no start",
            ),
            Answer(
                "no loop back: critique always ends the run, so a rejected draft is never revised",
                (_PART_1, _repaired(_OUT)),
                says="with path ['research', 'write', 'critique'] and approved=False",
            ),
            Answer(
                "the loop goes back to research, which should run once",
                (
                    _PART_1,
                    _repaired('repaired.add_edge("critique", "research", when=lambda s: not s.approved)\n' + _OUT),
                ),
                says="research ran 2 times",
            ),
            Answer(
                "the way out before the loop back: the loop can never be taken",
                (_PART_1, _repaired(_OUT + _BACK)),
                says="can never be taken",
            ),
            Answer(
                "the loop's condition reversed: approved drafts go back to write",
                (_PART_1, _repaired('repaired.add_edge("critique", "write", when=lambda s: s.approved)\n' + _OUT)),
                says="critique rejects the first draft, write revises it",
            ),
            Answer(
                "max_steps=1, taken from 'at least 1'",
                (_PART_1, _repaired(steps=1)),
                says="the run stopped at its step cap",
            ),
        ),
        right=(
            Answer(
                "the %%graph language, with part 1's LLM writer on a fresh script of its two drafts",
                (
                    _PART_1,
                    "drafts_model = ScriptedModel(DRAFTS)",
                    """%%graph repaired --model drafts_model --max-steps 12
START -> research -> write -> critique
critique -> write  if not state.approved
critique -> END""",
                ),
            ),
            Answer(
                "a label on the loop, and a state read by key",
                (
                    _PART_1,
                    _repaired(
                        'repaired.add_edge("critique", "write", when=lambda s: s["approved"] is False, label="rejected")\n'
                        + _OUT,
                        steps=5,
                    ),
                ),
            ),
        ),
    ),
]
