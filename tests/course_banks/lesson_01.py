"""Tutorial 1, a stricter review and a node of your own."""

from checkbank import Answer, Exercise

_LESSON = "01-first-graph.ipynb"

_WRITER = """%%graph writer --max-steps 20
START -> ask_topic -> draft -> review
review -> publish {gate}  if {condition}
review -> draft
publish -> END"""


def _writer(gate: str = "[approval=before]", condition: str = "state.good_enough") -> str:
    return _WRITER.format(gate=gate, condition=condition)


def _review(test: str) -> str:
    return f'def review(state):\n    return {{"good_enough": {test}}}'


_THIRD = _review("state.version >= 3")

_WITH_HEADLINE = """%%graph writer --max-steps 20
START -> ask_topic -> headline -> draft -> review
review -> publish {gate}  if state.good_enough
review -> draft
publish -> END"""

_HEADLINE = 'def headline(state):\n    return {{"headline": {value}}}'


def _headline(value: str) -> str:
    return _HEADLINE.format(value=value)


_SHOUTS = _headline("state.topic.upper()")

EXERCISES = [
    Exercise(
        lesson=_LESSON,
        heading="## Exercise 1: a stricter review",
        check='course.verdict(exercise_1_problems(), "the writer publishes its third draft.")',
        wrong=(
            Answer(
                "review edited, but the %%graph cell not run again: the graph keeps the old review",
                (_THIRD,),
                says="run the `%%graph writer` cell again",
            ),
            Answer(
                "review returns the bare comparison instead of a dict: the run fails, and says why",
                ("def review(state):\n    return state.version >= 3", _writer()),
                says="the run failed: node 'review' returned bool",
            ),
            Answer(
                "review writes to the state instead of returning the change: the state is read-only",
                ("def review(state):\n    state.good_enough = state.version >= 3", _writer()),
                says="the run failed: node 'review' failed at step 3: TypeError: state is read-only",
            ),
            Answer(
                "off by one: review passes from the fourth draft on",
                (_review("state.version > 3"), _writer()),
                says="after 4 drafts",
            ),
            Answer(
                "the gate after publish: a Deny comes when the post is already out",
                (_THIRD, _writer(gate="[approval]")),
                says="ended 'denied' with 1 post(s) on the blog; gate publish before it runs",
            ),
            Answer(
                "the gate dropped while rewriting the graph cell",
                (_THIRD, _writer(gate="")),
                says="ended 'done' with 1 post(s) on the blog; gate publish before it runs",
            ),
            Answer(
                "the gate on review instead of publish: a person approves reviews, not the post",
                (
                    _THIRD,
                    """%%graph writer --max-steps 20
START -> ask_topic -> draft -> review
review [approval=before] -> publish  if state.good_enough
review -> draft
publish -> END""",
                ),
                says="gate publish before it runs",
            ),
        ),
        right=(
            Answer("a strict comparison: more than two", (_review("state.version > 2"), _writer())),
            Answer(
                "review untouched: the edge's condition reads the version itself",
                (_writer(condition="state.good_enough and state.version >= 3"),),
            ),
            Answer(
                "review as a %%node cell",
                ('%%node review\nreturn {"good_enough": state.version >= 3}', _writer()),
            ),
        ),
    ),
    Exercise(
        lesson=_LESSON,
        heading="## Exercise 2: a node of your own",
        check='course.verdict(exercise_2_problems(), "headline runs after ask_topic and shouts the topic.")',
        wrong=(
            Answer(
                "headline defined, but not put in the graph's chain",
                (_SHOUTS,),
                says="headline should run between ask_topic and draft",
            ),
            Answer(
                "headline after draft instead of after ask_topic",
                (
                    _SHOUTS,
                    _WITH_HEADLINE.format(gate="[approval=before]").replace(
                        "ask_topic -> headline -> draft -> review", "ask_topic -> draft -> headline -> review"
                    ),
                ),
                says="the run went ask_topic -> draft -> headline",
            ),
            Answer(
                "the expected output hard-coded",
                (_headline('"GRAPHS IN NOTEBOOKS"'), _WITH_HEADLINE.format(gate="[approval=before]")),
                says="expected 'STATE MACHINES'",
            ),
            Answer(
                "title case instead of capitals",
                (_headline("state.topic.title()"), _WITH_HEADLINE.format(gate="[approval=before]")),
                says="state.headline is 'State Machines'",
            ),
            Answer(
                "the topic overwritten instead of a headline field set",
                (
                    'def headline(state):\n    return {"topic": state.topic.upper()}',
                    _WITH_HEADLINE.format(gate="[approval=before]"),
                ),
                says="state.headline is None",
            ),
            Answer(
                "headline before ask_topic: there is no topic yet",
                (
                    _SHOUTS,
                    _WITH_HEADLINE.format(gate="[approval=before]").replace(
                        "START -> ask_topic -> headline -> draft", "START -> headline -> ask_topic -> draft"
                    ),
                ),
                says="the run failed: node 'headline' failed",
            ),
            Answer(
                "the gate made a plain [approval] while adding the node: it comes after the post",
                (_SHOUTS, _WITH_HEADLINE.format(gate="[approval]")),
                says="ended 'denied' with 1 post(s) on the blog; gate publish before it runs",
            ),
            Answer(
                "the gate dropped while adding the node",
                (_SHOUTS, _WITH_HEADLINE.format(gate="")),
                says="ended 'done' with 1 post(s) on the blog; gate publish before it runs",
            ),
        ),
        right=(
            Answer(
                "after exercise 1 (three drafts), the topic read by key",
                (_THIRD, _headline('state["topic"].upper()'), _WITH_HEADLINE.format(gate="[approval=before]")),
            ),
            Answer(
                "headline as a %%node cell, the chain split over two lines",
                (
                    '%%node headline\nreturn {"headline": state.topic.upper()}',
                    """%%graph writer --max-steps 20
START -> ask_topic
ask_topic -> headline -> draft -> review
review -> publish [approval=before]  if state.good_enough
review -> draft
publish -> END""",
                ),
            ),
            Answer(
                "an async node that takes ctx, upper-casing with str.upper",
                (
                    'async def headline(state, ctx):\n    return {"headline": str.upper(state.topic)}',
                    _WITH_HEADLINE.format(gate="[approval=before]"),
                ),
            ),
        ),
    ),
]
