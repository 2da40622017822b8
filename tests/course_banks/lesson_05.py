"""Tutorial 5, a reducer of your own."""

from checkbank import Answer, Exercise

_SCORES = """
class Scores(pydantic.BaseModel):
    best: Annotated[int, {reducer}] = 0
"""
_GRAPH = """%%graph judges --state Scores --max-steps 5
START -> judge
judge -> judge  if ctx.visit < 3
judge -> END"""

EXERCISES = [
    Exercise(
        lesson="05-state-and-reducers.ipynb",
        heading="## Exercise: a reducer of your own",
        check='course.verdict(exercise_problems(), "best keeps the highest score.")',
        wrong=(
            Answer(
                "no reducer: the last score wins",
                (_SCORES.replace("Annotated[int, {reducer}]", "int"), _GRAPH),
                says="best ends at 4",
            ),
            Answer(
                "operator.add: the scores are summed",
                (_SCORES.format(reducer="operator.add"), _GRAPH),
                says="best ends at 16",
            ),
        ),
        right=(
            Answer(
                "a lambda instead of a named function",
                (_SCORES.format(reducer="lambda current, update: update if update > current else current"), _GRAPH),
            ),
        ),
    ),
]
