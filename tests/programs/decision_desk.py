"""An agent whose emails and refunds wait for a person, runnable step by step against a SQLite
file, one process per step:

    python decision_desk.py DB LEDGER start THREAD
    python decision_desk.py DB LEDGER answer THREAD PAUSE_ID DECISION_JSON [BY]
    python decision_desk.py DB LEDGER decisions THREAD

The model emails Ada, refunds order A1, then emails her again, one call a round; each tool
that runs appends a line to LEDGER. ``start`` and ``answer`` print the outcome, then one
line per open pause: its id, tool and arguments. ``decisions`` prints the thread's decisions
as ``nbgraph.decisions`` reads them, one JSON line each.
"""

import json
import sys

import nbgraph
from nbgraph import END, START, Graph, MessagesState, Resume, SQLiteCheckpointer
from nbgraph.llm import Reply, ScriptedModel, llm_node, tool

ROUNDS = [
    ("send_email", {"to": "ada@example.com", "body": "We are looking into it."}),
    ("refund", {"order": "A1", "amount": 200}),
    ("send_email", {"to": "ada@example.com", "body": "Refunded."}),
]


def build(ledger: str) -> Graph:
    def note(*call: object) -> None:
        with open(ledger, "a") as out:
            out.write(json.dumps(call) + "\n")

    @tool(approval=True)
    def send_email(to: str, body: str) -> str:
        """Email a customer."""
        note("send_email", to, body)
        return "sent"

    @tool(approval=True)
    def refund(order: str, amount: float) -> str:
        """Refund an order."""
        note("refund", order, amount)
        return f"refunded {amount:g}"

    def model_reply(messages):
        # Like a real model, it answers the conversation it is given, in any process.
        done = sum(1 for m in messages if m.role == "tool")
        return Reply(tool_calls=[ROUNDS[done]]) if done < len(ROUNDS) else "Done."

    g = Graph("decision_desk", state=MessagesState)
    g.add_node("agent", llm_node("You help.", model=ScriptedModel(model_reply), tools=[send_email, refund]))
    g.add_edge(START, "agent")
    g.add_edge("agent", END)
    return g


if __name__ == "__main__":
    db, ledger, verb, thread = sys.argv[1:5]
    store = SQLiteCheckpointer(db)
    if verb == "decisions":
        for row in nbgraph.decisions(store, thread).rows():
            print(json.dumps(row))
        sys.exit(0)
    if verb == "start":
        result = build(ledger).invoke(
            {"messages": [{"role": "user", "content": "Help Ada"}]}, thread=thread, checkpointer=store
        )
    else:
        pause_id, decision = sys.argv[5], json.loads(sys.argv[6])
        by = sys.argv[7] if len(sys.argv) > 7 else None
        result = build(ledger).invoke(Resume(thread, decision, pause=pause_id, by=by), checkpointer=store)
    print(result.outcome)
    for pause in result.pauses:
        print(pause.id, pause.tool_calls[0].name, json.dumps(pause.tool_calls[0].arguments))
