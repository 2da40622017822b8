"""Case study 4, a goal-driven agent: a test of your own (part 1), a finish that says so and a
budget (part 3)."""

from checkbank import Answer, Exercise

_ROUTING_CHECK = 'course.verdict(routing_test_problems(), "your asserts hold, and each bug makes one fail.")'
_AFTER_ARTIFACT = 'assert route_after_reason(S(messages=[said("All done.")], artifacts={"resume.md": "#"})) == "finish"'
_TWO_QUESTIONS = (
    'assert route_after_reason(S(messages=[said("", "request_user_input", "request_user_input")])) == "request_input"'
)


def _tests(*asserts: str) -> str:
    return "def my_routing_tests():\n" + "".join(f"    {line}\n" for line in asserts)


_FINISH_CHECK = 'course.verdict(quiet_finish_problems(), "a finish with nothing stored says so.")'
_BUDGET_CHECK = 'course.verdict(budget_problems(), "aborted after 3 model calls.")'

EXERCISES = [
    Exercise(
        lesson="c4-goal-agent-1.ipynb",
        heading="## Exercise: a test of your own",
        check=_ROUTING_CHECK,
        wrong=(
            Answer(
                "the cell left as it is: no assert, so no bug is caught",
                (),
                says="still pass when needs_nudge ignores the artifacts",
            ),
            Answer(
                "the lesson's assert copied with nudge_count=3: the nudges are spent, so it finishes either way",
                (
                    _tests(
                        'assert route_after_reason(S(messages=[said("All done.")], artifacts={"resume.md": "#"}, '
                        'nudge_count=3)) == "finish"',
                        _TWO_QUESTIONS,
                    ),
                ),
                says="test a text reply after an artifact was stored, with no nudge spent",
            ),
            Answer(
                "a batch of one question, as the lesson has it, instead of two",
                (
                    _tests(
                        _AFTER_ARTIFACT,
                        'assert route_after_reason(S(messages=[said("", "request_user_input")])) == "request_input"',
                    ),
                ),
                says="test a batch of two questions",
            ),
            Answer(
                "the batch of two questions expected at call_tool, as a mixed batch is",
                (_tests(_AFTER_ARTIFACT, _TWO_QUESTIONS.replace('"request_input"', '"call_tool"')),),
                says="your asserts fail on part 1's routing: AssertionError",
            ),
            Answer(
                "only the first assert",
                (_tests(_AFTER_ARTIFACT),),
                says="requests_user_input sends only a lone question",
            ),
        ),
        right=(
            Answer(
                "the two helpers asserted directly, not the router",
                (
                    _tests(
                        'assert not needs_nudge(S(messages=[said("Stored, all done.")], artifacts={"cv.md": "Ada"}))',
                        'assert requests_user_input(said("", "request_user_input", "request_user_input"))',
                    ),
                ),
            ),
            Answer(
                "full messages built by hand, the nudge count spelled out, and more asserts besides",
                (
                    """def my_routing_tests():
    stored = GoalAgentState(messages=[AssistantMessage(content="Here is your resume.")],
                            artifacts={"resume.md": "# Ada"}, nudge_count=0)
    assert route_after_reason(stored) == "finish"
    questions = AssistantMessage(content="", tool_calls=[
        ToolCallRequest(id="q1", name="request_user_input", arguments={"slot_id": "category", "prompt": "?"}),
        ToolCallRequest(id="q2", name="request_user_input", arguments={"slot_id": "role", "prompt": "?"}),
    ])
    assert route_after_reason(GoalAgentState(messages=[questions])) == "request_input"
    assert route_after_reason(GoalAgentState(messages=[said("Done?")])) == "nudge"
""",
                ),
            ),
        ),
    ),
    Exercise(
        lesson="c4-goal-agent-3.ipynb",
        heading="## Exercise 1: do not finish quietly",
        check=_FINISH_CHECK,
        wrong=(
            Answer(
                "NO_ARTIFACT written over an earlier error",
                (
                    """def finish_checked(state):
    update = finish(state)
    if not state.artifacts:
        update["error"] = "NO_ARTIFACT"
    return update""",
                ),
                says="a run stopped by max_iterations ends with error='NO_ARTIFACT'; expected 'MAX_ITERATIONS'",
            ),
            Answer(
                "keyed on the nudges being spent, not on what was stored",
                (
                    """def finish_checked(state):
    update = finish(state)
    if state.nudge_count >= MAX_NUDGES and state.error is None:
        update["error"] = "NO_ARTIFACT"
    return update""",
                ),
                says="a run that calls complete_workflow without storing anything ends with error=None",
            ),
            Answer(
                "the error set on the state, not returned in the update",
                (
                    """def finish_checked(state):
    if not state.artifacts and state.error is None:
        state.error = "NO_ARTIFACT"
    return finish(state)""",
                ),
                says="the stubborn run ends with error=None; expected 'NO_ARTIFACT'",
            ),
            Answer(
                "finish's own update dropped: only the error is returned",
                (
                    """def finish_checked(state):
    if not state.artifacts and state.error is None:
        return {"error": "NO_ARTIFACT"}
    return finish(state)""",
                ),
                says="the stubborn run ends with is_complete=False",
            ),
            Answer(
                "an error on every run that has none, stored artifact or not",
                (
                    """def finish_checked(state):
    return {**finish(state), "error": state.error or "NO_ARTIFACT"}""",
                ),
                says="the full run, which stores resume.md, ends with error='NO_ARTIFACT'; expected None",
            ),
        ),
        right=(
            Answer(
                "one expression",
                (
                    """def finish_checked(state):
    return {**finish(state), "error": state.error or (None if state.artifacts else "NO_ARTIFACT")}""",
                ),
            ),
            Answer(
                "an early return, and the update written out",
                (
                    """def finish_checked(state):
    if state.artifacts or state.error:
        return finish(state)
    return {"is_complete": True, "error": "NO_ARTIFACT"}""",
                ),
            ),
        ),
    ),
    Exercise(
        lesson="c4-goal-agent-3.ipynb",
        heading="## Exercise 2: a budget",
        check=_BUDGET_CHECK,
        wrong=(
            Answer("no budget given", (), says="the stubborn run ended 'done' after 6 model calls"),
            Answer(
                "off by one: turns=4, thinking the check stops the fourth call after it",
                ("exercise_budget = Budget(turns=4)",),
                says="ended 'aborted' after 4 model calls",
            ),
            Answer(
                "tokens tuned until this run stopped after 3 calls",
                ("exercise_budget = Budget(tokens=250)",),
                says="the stubborn run on the longer request ended 'aborted' after 1 model calls",
            ),
            Answer(
                "ask=True: the run pauses for a person instead of ending",
                ("exercise_budget = Budget(turns=3, ask=True)",),
                says="ended 'interrupted' after 3 model calls",
            ),
        ),
        right=(
            Answer(
                "turns with a token limit that never binds", ("exercise_budget = Budget(turns=3, tokens=1_000_000)",)
            ),
            Answer("turns with a time limit", ("exercise_budget = Budget(turns=3, seconds=120)",)),
        ),
    ),
]
