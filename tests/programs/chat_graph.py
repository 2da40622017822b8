"""The conversation the tests run: one node appends one message a step, 50 in all.

Imported by ``chat_child.py`` and, in the test's own process, by tests/test_durable_crash.py.
"""

from typing import Annotated

import pydantic

from nbgraph import END, START, Graph, append

MESSAGES = 50


class Message(pydantic.BaseModel):
    id: str
    role: str
    text: str


class Chat(pydantic.BaseModel):
    messages: Annotated[list[Message], append] = []
    turns: int = 0


def build(hook=None):
    """The graph; ``hook(step, count)`` is called inside the node before it returns."""

    def talk(state, ctx):
        count = len(state.messages)
        if hook is not None:
            hook(ctx.step, count)
        text = f"message {count} at step {ctx.step}, visit {ctx.visit}: " + "lorem ipsum " * (10 + count % 17)
        message = Message(id=f"m{count:03d}", role="user" if count % 2 == 0 else "assistant", text=text)
        return {"messages": [message], "turns": state.turns + 1}

    g = Graph("chat", state=Chat, max_steps=10 * MESSAGES, max_same_node=10 * MESSAGES)
    g.add_node("talk", talk)
    g.add_edge(START, "talk")
    g.add_edge("talk", "talk", when=lambda s: len(s.messages) < MESSAGES, label="more")
    g.add_edge("talk", END)
    return g
