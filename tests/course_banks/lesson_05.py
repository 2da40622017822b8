"""Tutorial 5, a reducer of your own: the check runs `judges` on several orders of scores and reads
`best` after every judge, so only a reducer that keeps the highest so far passes."""

from checkbank import Answer, Exercise

_SCORES = """
class Scores(pydantic.BaseModel):
    scores: list[int] = [3, 9, 4]
    best: {field}
"""
_GRAPH = """%%graph judges --state Scores --max-steps 5
START -> judge
judge -> judge  if ctx.visit < 3
judge -> END"""


def _answer(why: str, field: str, *extra: str, says: str = "") -> Answer:
    return Answer(why, (*extra, _SCORES.format(field=field), _GRAPH), says=says)


EXERCISES = [
    Exercise(
        lesson="05-state-and-reducers.ipynb",
        heading="## Exercise: a reducer of your own",
        check='course.verdict(exercise_problems(), "best keeps the highest score.")',
        wrong=(
            _answer(
                "keep_max written but not named in the field: the last score wins",
                "int = 0",
                "def keep_max(current, update):\n    return max(current, update)",
                says="each score replaced the last: give best a reducer",
            ),
            Answer(
                "the reducer right, but the `%%graph judges` cell not run again: the graph keeps the old Scores",
                (
                    "def keep_max(current, update):\n    return max(current, update)",
                    _SCORES.format(field="Annotated[int, keep_max] = 0"),
                ),
                says="Scores was defined again after the `%%graph judges` cell ran",
            ),
            _answer(
                "operator.add: the scores are summed",
                "Annotated[int, operator.add] = 0",
                says="best went [3, 12, 16]",
            ),
            _answer(
                "min instead of max: best never leaves its default 0",
                "Annotated[int, min] = 0",
                says="best went [0, 0, 0]",
            ),
            _answer(
                "keeps the first score it is given (right only when the highest comes first)",
                "Annotated[int, lambda current, update: current or update] = 0",
                says="it should keep the highest so far, [3, 9, 9]",
            ),
            _answer(
                "the node keeps the highest itself, and best has no reducer",
                "int = 0",
                "def judge(state, ctx):\n    return {'best': max(state.best, state.scores[ctx.visit - 1])}",
                says="leave judge as it is",
            ),
            _answer(
                "the expected answer hard-coded: the judge returns 9",
                "Annotated[int, max] = 0",
                "def judge(state, ctx):\n    return {'best': 9}",
                says="judge returned [9, 9, 9]",
            ),
            Answer(
                "Scores rewritten without its field scores: the judge cannot read them",
                (
                    "def keep_max(current, update):\n    return max(current, update)\n\n"
                    "class Scores(pydantic.BaseModel):\n    best: Annotated[int, keep_max] = 0",
                    _GRAPH,
                ),
                says="Scores needs its field scores",
            ),
        ),
        right=(
            _answer(
                "a lambda instead of a named function",
                "Annotated[int, lambda current, update: update if update > current else current] = 0",
            ),
            _answer("Python's max itself as the reducer", "Annotated[int, max] = 0"),
            _answer(
                "a named function with the comparison the other way round",
                "Annotated[int, keep_max] = 0",
                "def keep_max(current, update):\n    if current >= update:\n        return current\n    return update",
            ),
        ),
    ),
]
