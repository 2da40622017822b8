"""A support agent whose risky tool calls wait for a person, runnable against a SQLite file.

    python refund_desk.py DB LEDGER start THREAD
    python refund_desk.py DB LEDGER answer THREAD PAUSE_ID DECISION_JSON

The model looks an order up, then asks in one reply for another lookup, a refund of 200 and
an email: the refund (over 100) and the email wait for decisions. Every tool that runs
appends a line to LEDGER. Prints the outcome, then one line per open pause: its id and tool.
"""

import json
import sys

from nbgraph import END, START, Graph, MessagesState, Resume, SQLiteCheckpointer
from nbgraph.llm import Reply, ScriptedModel, llm_node, tool


def build(ledger: str) -> Graph:
    def note(*call: object) -> None:
        with open(ledger, "a") as out:
            out.write(json.dumps(call) + "\n")

    def lookup(order: str) -> str:
        """Look an order up."""
        note("lookup", order)
        return f"order {order}: paid 200 EUR"

    @tool(approval=lambda args: args.amount > 100)
    def refund(order: str, amount: float) -> str:
        """Refund part or all of an order."""
        note("refund", order, amount)
        return f"refunded {amount:g} EUR on {order}"

    @tool(approval=True)
    def send_email(to: str, body: str) -> str:
        """Email a customer."""
        note("send_email", to, body)
        return "sent"

    def model_reply(messages):
        # Like a real model, it answers the conversation it is given, in any process.
        results = [m.content for m in messages if m.role == "tool"]
        if not results:
            return Reply(tool_calls=[("lookup", {"order": "A1"})])
        if len(results) == 1:
            return Reply(
                tool_calls=[
                    ("lookup", {"order": "B2"}),
                    ("refund", {"order": "A1", "amount": 200}),
                    ("send_email", {"to": "ada@example.com", "body": "Your refund is on its way."}),
                ]
            )
        return "Done: " + " | ".join(results[1:])

    g = Graph("refund_desk", state=MessagesState)
    g.add_node(
        "agent", llm_node("You help customers.", model=ScriptedModel(model_reply), tools=[lookup, refund, send_email])
    )
    g.add_edge(START, "agent")
    g.add_edge("agent", END)
    return g


if __name__ == "__main__":
    db, ledger, verb, thread = sys.argv[1:5]
    store = SQLiteCheckpointer(db)
    if verb == "start":
        result = build(ledger).invoke(
            {"messages": [{"role": "user", "content": "Refund A1"}]}, thread=thread, checkpointer=store
        )
    else:
        pause_id, decision = sys.argv[5], json.loads(sys.argv[6])
        result = build(ledger).invoke(Resume(thread, decision, pause=pause_id), checkpointer=store)
    print(result.outcome)
    for pause in result.pauses:
        print(pause.id, pause.tool_calls[0].name)
    if result.outcome == "done":
        print(result.state.messages[-1].content)
