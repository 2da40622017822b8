"""Tutorial 6, a budget in dollars: the check runs `spender` under the learner's budget, which must
stop it, on cost, after exactly three steps of 0.01."""

from checkbank import Answer, Exercise


def _budget(why: str, budget: str, says: str = "") -> Answer:
    return Answer(why, (f"exercise_budget = {budget}",), says=says)


EXERCISES = [
    Exercise(
        lesson="06-limits-and-budgets.ipynb",
        heading="## Exercise: a budget in dollars",
        check='course.verdict(exercise_problems(), "three steps, then the cost budget stops it.")',
        wrong=(
            _budget(
                "off by one: a limit of 0.04 lets a fourth step start",
                "Budget(cost=0.04)",
                says="after 4 steps, not 3: it is checked before each step",
            ),
            _budget(
                "off by one the other way: 0.02 is reached before the third step",
                "Budget(cost=0.02)",
                says="after 2 steps, not 3",
            ),
            _budget(
                "three steps, but stopped on tokens (3 x 300), not on cost",
                "Budget(tokens=900, cost=1.0)",
                says="expected 'aborted' on cost",
            ),
            _budget(
                "turns instead of cost: this node reports no model calls, so nothing stops it",
                "Budget(turns=3)",
                says="the budget is in dollars: Budget(cost=...)",
            ),
            _budget(
                "a budget that asks: the run pauses instead of stopping",
                "Budget(cost=0.03, ask=True)",
                says="leave out ask=True",
            ),
            _budget("a bare number instead of a Budget", "0.03", says="Budget(cost=...)"),
        ),
        right=(
            _budget("a limit between two steps' spending, not on one", "Budget(cost=0.025)"),
            _budget("a cost limit beside a token limit that is never reached", "Budget(cost=0.03, tokens=100_000)"),
        ),
    ),
]
