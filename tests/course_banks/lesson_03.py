"""Tutorial 3, a tool of your own and one round of tools."""

from checkbank import Answer, Exercise

_LESSON = "03-llm-agents.ipynb"

_PRICE = """
def get_price({args}){returns}:
    {doc}
    return {body}
"""


def _price(
    args: str = "city: str, nights: int",
    returns: str = " -> int",
    doc: str = '"""The price of a hotel stay in euros."""',
    body: str = '{"Lisbon": 90, "Oslo": 120}[city] * nights',
) -> str:
    return _PRICE.format(args=args, returns=returns, doc=doc, body=body)


_PROMPT = "You plan short trips. Compare the weather, then book the warmer city."


def _planner(rounds: str = "max_tool_rounds=1", tools: str = "get_weather, book_hotel", prompt: str = _PROMPT) -> str:
    return f'trip.add_node("planner", llm_node({prompt!r}, tools=[{tools}], {rounds}), replace=True)'


EXERCISES = [
    Exercise(
        lesson=_LESSON,
        heading="## Exercise 1: a tool of your own",
        check='course.verdict(exercise_1_problems(), "get_price is a tool a model can call.")',
        wrong=(
            Answer(
                "no docstring: the model gets no description",
                (_price(doc="# no docstring"),),
                says="the model saw the description ''",
            ),
            Answer(
                "no type hints: the schema says nothing of the arguments' types",
                (_price(args="city, nights", returns=""),),
                says="expected a docstring, and city: str, nights: int",
            ),
            Answer(
                "nights typed as text",
                (_price(args="city: str, nights: str", body='{"Lisbon": 90, "Oslo": 120}[city] * int(nights)'),),
                says="'nights': 'string'",
            ),
            Answer(
                "the expected output hard-coded",
                (_price(body="270"),),
                says="came back as ['270', '270']",
            ),
            Answer(
                "the price of one night, whatever the stay",
                (_price(body='{"Lisbon": 90, "Oslo": 120}[city]'),),
                says="came back as ['90', '120']",
            ),
            Answer(
                "a float price: 270.0 is not the int the signature promises",
                (_price(body='{"Lisbon": 90.0, "Oslo": 120.0}[city] * nights'),),
                says="came back as ['270.0', '240.0']",
            ),
        ),
        right=(
            Answer(
                "if/else instead of a table, with a default of one night",
                (_price(args="city: str, nights: int = 1", body="(90 if city == 'Lisbon' else 120) * nights"),),
            ),
            Answer(
                "decorated with @tool, the city a Literal",
                (
                    "from typing import Literal",
                    "@tool\n"
                    + _price(
                        args='city: Literal["Lisbon", "Oslo"], nights: int',
                        doc='"""Price a stay.\n\n    Args:\n        city: where.\n        nights: how long.\n    """',
                    ).strip(),
                ),
            ),
            Answer(
                "an async tool",
                (_price().replace("def get_price", "async def get_price"),),
            ),
        ),
    ),
    Exercise(
        lesson=_LESSON,
        heading="## Exercise 2: one round of tools",
        check='course.verdict(exercise_2_problems(), "one round of tools, then an answer.")',
        wrong=(
            Answer(
                "two rounds: the hotel is booked in the second",
                (_planner(rounds="max_tool_rounds=2"),),
                says="the tools that ran were ['get_weather', 'get_weather', 'book_hotel']",
            ),
            Answer(
                "the new node made, but never put in trip",
                (f"planner = llm_node({_PROMPT!r}, tools=[get_weather, book_hotel], max_tool_rounds=1)",),
                says="in the planner that trip runs",
            ),
            Answer(
                "no rounds at all: nothing is looked up",
                (_planner(rounds="max_tool_rounds=0"),),
                says="the tools that ran were []",
            ),
            Answer(
                "book_hotel taken out of the tools instead of limiting the rounds",
                (_planner(tools="get_weather"),),
                says="the model was offered [1, 0] tools",
            ),
            Answer(
                "a prompt of its own instead of the planner's",
                (_planner(prompt="You book hotels."),),
                says="the prompt of the `%%node planner` cell",
            ),
        ),
        right=(
            Answer(
                "the node bound to planner and the %%graph cell run again",
                (
                    f"planner = llm_node({_PROMPT!r}, tools=[get_weather, book_hotel], max_tool_rounds=1)",
                    "%%graph trip --model ScriptedModel(TRIP) --max-steps 10\nSTART -> planner -> END",
                ),
            ),
            Answer(
                "trip built again on a MessagesState, with the Python node named in its cell",
                (
                    "from nbgraph.llm import MessagesState",
                    f"planner = llm_node({_PROMPT!r}, tools=[get_weather, book_hotel], max_tool_rounds=1)",
                    "%%graph trip --state MessagesState --model ScriptedModel(TRIP) --max-steps 10\nSTART -> planner -> END",
                ),
            ),
            Answer(
                "tools as Tool objects, in another order",
                (_planner(tools="tool(book_hotel), tool(get_weather)"),),
            ),
        ),
    ),
]
