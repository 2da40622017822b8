"""Case study 5, an assistant and its heartbeat: refuse flagged input (part 1), two reminders (part 2)."""

from checkbank import Answer, Exercise

_AGENT_EDGES = """agent -> END           if state.status in ("done", "blocked")
agent -> wrapper_nudge if state.status == "in_progress" and not state.tool_calls and state.nudges < 1
agent -> agent         if state.status == "continue" or state.tool_calls > 0
agent -> END
wrapper_nudge -> agent"""

_GUARDED = (
    """%%graph guarded_agent --state AgentState --model guarded_model
START -> input_handler
{gate}
input_handler -> agent
"""
    + _AGENT_EDGES
    + "\nrefuse -> END"
)


def _guarded(gate: str) -> str:
    return _GUARDED.format(gate=gate)


_FORGIVING = """%%graph forgiving_agent --state AgentState --model forgetful_model
START -> input_handler -> agent
{edges}"""


def _forgiving(nudge_edge: str, *, fallback: bool = True) -> str:
    edges = _AGENT_EDGES.replace(
        'agent -> wrapper_nudge if state.status == "in_progress" and not state.tool_calls and state.nudges < 1',
        nudge_edge,
    )
    if not fallback:
        edges = edges.replace("agent -> END\nwrapper_nudge", "wrapper_nudge")
    return _FORGIVING.format(edges=edges)


_NUDGE_IF = 'agent -> wrapper_nudge if state.status == "in_progress" and not state.tool_calls'

EXERCISES = [
    Exercise(
        lesson="c5-assistant-1.ipynb",
        heading="## Exercise: refuse flagged input",
        check='course.verdict(refuse_problems(), "flagged input is refused, clean input reaches the agent.")',
        wrong=(
            Answer(
                "nothing added: every message reaches the agent",
                (),
                says="a plain injection went input_handler -> agent",
            ),
            Answer(
                "a text search of its own instead of the guard's flags",
                (_guarded('input_handler -> refuse  if "ignore" in state.messages[-1].content.lower()'),),
                says="a developer-mode injection went input_handler -> agent",
            ),
            Answer(
                "routes on the guard's dict, which is never empty, so clean messages are refused too",
                (_guarded("input_handler -> refuse  if state.guard"),),
                says="the clean message 'What is on my calendar?' went input_handler -> refuse",
            ),
            Answer(
                "gates after the agent: the injection has reached the model by then",
                (
                    _GUARDED.format(gate="").replace(
                        'agent -> END           if state.status in ("done", "blocked")',
                        'agent -> refuse  if state.guard.get("flagged")\n'
                        'agent -> END           if state.status in ("done", "blocked")',
                    ),
                ),
                says="went input_handler -> agent -> refuse; a flagged message goes to refuse, never to the agent",
            ),
            Answer(
                "the line added to the lesson's first agent graph, not to guarded_agent",
                (
                    """%%graph agent_graph --state AgentState --model inbox_model --max-same-node 40
START -> input_handler
input_handler -> refuse  if state.guard.get("flagged")
input_handler -> agent
"""
                    + _AGENT_EDGES
                    + "\nrefuse -> END",
                ),
                says="a plain injection went input_handler -> agent",
            ),
        ),
        right=(
            Answer("indexes the flags", (_guarded('input_handler -> refuse  if state.guard["flagged"]'),)),
            Answer(
                "the Python API, with the condition a lambda",
                (
                    """guarded_agent = Graph("guarded_agent", state=AgentState, model=guarded_model)
for name, node in [("input_handler", input_handler), ("agent", agent), ("wrapper_nudge", wrapper_nudge), ("refuse", refuse)]:
    guarded_agent.add_node(name, node)
guarded_agent.add_edge(START, "input_handler")
guarded_agent.add_edge("input_handler", "refuse", when=lambda s: len(s.guard.get("flagged", [])) > 0)
guarded_agent.add_edge("input_handler", "agent")
guarded_agent.add_edge("agent", END, when=lambda s: s.status in ("done", "blocked"))
guarded_agent.add_edge("agent", "wrapper_nudge", when=lambda s: s.status == "in_progress" and not s.tool_calls and s.nudges < 1)
guarded_agent.add_edge("agent", "agent", when=lambda s: s.status == "continue" or s.tool_calls > 0)
guarded_agent.add_edge("agent", END)
guarded_agent.add_edge("wrapper_nudge", "agent")
guarded_agent.add_edge("refuse", END)""",
                ),
            ),
        ),
    ),
    Exercise(
        lesson="c5-assistant-2.ipynb",
        heading="## Exercise: two reminders",
        check='course.verdict(reminder_problems(), "up to two nudges, then the loop ends.")',
        wrong=(
            Answer(
                "nothing changed: one nudge, so the forgetful model never gets to tag",
                (),
                says="the forgetful model did not finish: status in_progress, nudges 1",
            ),
            Answer(
                "off by one: nudges <= 2 allows a third nudge",
                (_forgiving(_NUDGE_IF + " and state.nudges <= 2"),),
                says="should be nudged exactly twice, then stop (done, nudges 3)",
            ),
            Answer(
                "the limit dropped: a model that never tags is nudged until the step cap ends the run",
                (_forgiving(_NUDGE_IF),),
                says="should be nudged exactly twice, then stop (done, nudges 24)",
            ),
            Answer(
                "the second try made by looping the agent, not by a second nudge",
                (
                    _forgiving(_NUDGE_IF + " and state.nudges < 1").replace(
                        'agent -> agent         if state.status == "continue" or state.tool_calls > 0',
                        'agent -> agent         if state.status == "continue" or state.tool_calls > 0 or state.nudges < 2',
                    ),
                ),
                says="should be nudged exactly twice",
            ),
            Answer(
                "the lesson's agent graph changed instead of forgiving_agent",
                (
                    """%%graph agent_graph --state AgentState --model inbox_model --max-same-node 40
START -> input_handler -> agent
"""
                    + _AGENT_EDGES.replace("state.nudges < 1", "state.nudges < 2"),
                ),
                says="the forgetful model did not finish",
            ),
        ),
        right=(
            Answer("nudges <= 1", (_forgiving(_NUDGE_IF + " and state.nudges <= 1"),)),
            Answer(
                "the limit a named constant",
                ("REMINDERS = 2", _forgiving(_NUDGE_IF + " and state.nudges < REMINDERS")),
            ),
        ),
    ),
]
