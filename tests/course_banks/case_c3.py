"""Case study 3, a coding agent's turn graph, part 2: a wider window for stuck detection, a fifth budget."""

from checkbank import Answer, Exercise

_LESSON = "c3-coding-agent-2.ipynb"

# A learner in part 2 has run its first cell, which rebuilds part 1 (that cell is no `build` cell).
_PART_1 = 'course.rebuild("c3-coding-agent-1.ipynb")'

_COUNTED = """from collections import Counter

def stuck(failed_by_turn):
    seen = Counter({counted})
    repeated = [signature for signature, turns in seen.items() if turns >= 2]
    return {found}"""


def _counted(
    counted: str = "signature for turn in failed_by_turn[-3:] for signature in set(turn)",
    found: str = "min(repeated) if repeated else None",
) -> str:
    return _COUNTED.format(counted=counted, found=found)


_OVER_BUDGET = """def over_budget(state, now):
    limits = state.limits
    if limits.max_turns is not None and state.turns_used >= limits.max_turns:
        return f"turns {state.turns_used} >= {limits.max_turns}"
    if limits.max_tokens is not None and state.tokens_used >= limits.max_tokens:
        return f"tokens {state.tokens_used} >= {limits.max_tokens}"
    if limits.cost_cap is not None and state.cost_used >= limits.cost_cap:
        return f"cost ${state.cost_used:.4f} >= ${limits.cost_cap}"
    if limits.timeout_ms is not None and state.started_at is not None:
        elapsed_ms = (now - state.started_at) * 1000
        if elapsed_ms > limits.timeout_ms:
            return f"time {elapsed_ms:.0f} ms > {limits.timeout_ms:g} ms"
FIFTH
    return None"""


def _over_budget(fifth: str) -> str:
    return _OVER_BUDGET.replace("FIFTH", fifth)


_TOOL_MESSAGES = '''    tool_calls = sum(message.role == "tool" for message in state.messages)
    if limits.max_tool_calls is not None and tool_calls >= limits.max_tool_calls:
        return f"tool calls {tool_calls} >= {limits.max_tool_calls}"'''

EXERCISES = [
    Exercise(
        lesson=_LESSON,
        heading="## Exercise 1: a wider window for stuck detection",
        check='course.verdict(stuck_problems(), "stuck after 3 turns.")',
        wrong=(
            Answer(
                "nothing changed: only the same call in two consecutive turns is stuck",
                (_PART_1,),
                says="a model that alternates two failing calls: the run ended aborted after turn 6",
            ),
            Answer(
                "no set per turn: a call failing twice in one turn counts as two turns",
                (_PART_1, _counted(counted="signature for turn in failed_by_turn[-3:] for signature in turn")),
                says="a model that runs one failing call twice in one turn, then answers: the run ended stuck after turn 1",
            ),
            Answer(
                "the window one turn too wide: the last four turns",
                (_PART_1, _counted(counted="signature for turn in failed_by_turn[-4:] for signature in set(turn)")),
                says="a model that cycles through three failing calls: the run ended stuck after turn 4",
            ),
            Answer(
                "the old guard raised to three turns: a call failing twice in a row is caught a turn late",
                (
                    _PART_1,
                    _counted().replace(
                        "    seen = Counter(",
                        "    if len(failed_by_turn) < 3:\n        return None\n    seen = Counter(",
                    ),
                ),
                says="a model that repeats one failing call: the run ended stuck after turn 3",
            ),
            Answer(
                "True instead of the call: the reason no longer names it",
                (_PART_1, _counted(found="bool(repeated)")),
                says="the reason is 'stuck: True failed in the last two turns'; stuck() returns the repeated call's signature",
            ),
            Answer(
                "Counter used but never imported: reconcile raises",
                (_PART_1, _counted().replace("from collections import Counter\n\n", "")),
                says="NameError: name 'Counter' is not defined",
            ),
        ),
        right=(
            Answer(
                "a loop over the window's signatures, counting the turns each is in",
                (
                    _PART_1,
                    """def stuck(failed_by_turn):
    window = [set(turn) for turn in failed_by_turn[-3:]]
    for signature in sorted(set().union(*window)):
        if sum(signature in turn for turn in window) >= 2:
            return signature
    return None""",
                ),
            ),
            Answer(
                "each pair of the last three turns intersected",
                (
                    _PART_1,
                    """from itertools import combinations

def stuck(failed_by_turn):
    repeated = set()
    for earlier, later in combinations(failed_by_turn[-3:], 2):
        repeated |= set(earlier) & set(later)
    return min(repeated) if repeated else None""",
                ),
            ),
        ),
    ),
    Exercise(
        lesson=_LESSON,
        heading="## Exercise 2: a fifth budget dimension",
        check='course.verdict(tool_budget_problems(), "the fifth budget stops the run before its fourth turn.")',
        wrong=(
            Answer(
                "nothing changed: max_tool_calls is ignored",
                (_PART_1,),
                says="searcher with limits {'max_tool_calls': 3, 'max_turns': 8}: the run ended 'aborted' after 8 turns",
            ),
            Answer(
                "turns counted instead of tool calls: the same while each turn makes one call",
                (
                    _PART_1,
                    _over_budget(
                        "    if limits.max_tool_calls is not None and state.turns_used >= limits.max_tool_calls:\n"
                        '        return f"tool calls {state.turns_used} >= {limits.max_tool_calls}"'
                    ),
                ),
                says="two_pages with limits {'max_tool_calls': 3, 'max_turns': 8}: the run ended 'aborted' after 3 turns",
            ),
            Answer(
                "off by one: > lets a fourth turn start",
                (_PART_1, _over_budget(_TOOL_MESSAGES.replace("tool_calls >= limits", "tool_calls > limits"))),
                says="the run ended 'aborted' after 4 turns",
            ),
            Answer(
                "no None check: every run without the limit fails in prepare",
                (_PART_1, _over_budget(_TOOL_MESSAGES.replace("limits.max_tool_calls is not None and ", ""))),
                says="searcher with limits {'max_turns': 2}: the run ended 'failed'",
            ),
            Answer(
                "only the fifth check: the four budgets of part 1 are gone",
                (
                    _PART_1,
                    "def over_budget(state, now):\n    limits = state.limits\n" + _TOOL_MESSAGES + "\n    return None",
                ),
                says="expected 'aborted' after 2 turns, the reason starting 'turns'",
            ),
            Answer(
                "this turn's calls counted, not all of them: reconcile has cleared them by the next prepare",
                (
                    _PART_1,
                    _over_budget(
                        _TOOL_MESSAGES.replace(
                            'sum(message.role == "tool" for message in state.messages)', "len(state.current_tool_calls)"
                        )
                    ),
                ),
                says="expected 'aborted' after 3 turns, the reason starting 'tool calls'",
            ),
            Answer(
                "a reason of its own words, which does not start with tool calls",
                (
                    _PART_1,
                    _over_budget(_TOOL_MESSAGES.replace('f"tool calls {tool_calls}', 'f"{tool_calls} tools used')),
                ),
                says="(budget exceeded: 3 tools used >= 3); expected 'aborted' after 3 turns, the reason starting 'tool calls'",
            ),
        ),
        right=(
            Answer(
                "the calls the model asked for counted on its messages",
                (
                    _PART_1,
                    _over_budget(
                        '    asked = sum(len(m.tool_calls) for m in state.messages if m.role == "assistant")\n'
                        "    if limits.max_tool_calls is not None and asked >= limits.max_tool_calls:\n"
                        '        return f"tool calls {asked} >= {limits.max_tool_calls}"'
                    ),
                ),
            ),
            Answer(
                "the fifth check first, counting ToolMessage instances",
                (
                    _PART_1,
                    _over_budget("").replace(
                        "    limits = state.limits\n",
                        "    limits = state.limits\n"
                        "    used = sum(isinstance(m, ToolMessage) for m in state.messages)\n"
                        "    if limits.max_tool_calls is not None and used >= limits.max_tool_calls:\n"
                        '        return f"tool calls {used} >= {limits.max_tool_calls}"\n',
                    ),
                ),
            ),
        ),
    ),
]
