"""A support desk whose decisions wait with deadlines, runnable against a SQLite file.

    python deadline_desk.py DB LEDGER start THREAD SECONDS
    python deadline_desk.py DB LEDGER resume THREAD SECONDS
    python deadline_desk.py DB LEDGER sweep - SECONDS

The model asks in one reply for a refund (its decision waits SECONDS, then it is rejected)
and a note to the customer (it waits SECONDS, then it runs); then a person approves the
reply (it waits SECONDS, then it is denied). Every tool that runs appends a line to LEDGER.
Prints one JSON line per run: its thread, outcome, open pauses (id, kind, deadline) and
the decisions it recorded (by, via, verdict, path).
"""

import json
import sys

from nbgraph import END, START, Deadline, Graph, MessagesState, Resume, SQLiteCheckpointer, sweep_deadlines
from nbgraph.llm import Reply, ScriptedModel, llm_node, tool


def build(ledger: str, seconds: float) -> Graph:
    def note(*call: object) -> None:
        with open(ledger, "a") as out:
            out.write(json.dumps(call) + "\n")

    @tool(approval=True, deadline=Deadline(seconds))
    def refund(order: str, amount: float) -> str:
        """Refund part or all of an order."""
        note("refund", order, amount)
        return f"refunded {amount:g} EUR on {order}"

    @tool(approval=True, deadline=Deadline(seconds, then="approve"))
    def notify(to: str) -> str:
        """Tell a customer their case is being handled."""
        note("notify", to)
        return "notified"

    def model_reply(messages):
        results = [m.content for m in messages if m.role == "tool"]
        if not results:
            return Reply(tool_calls=[("refund", {"order": "A1", "amount": 200}), ("notify", {"to": "ada@example.com"})])
        return "Done: " + " | ".join(results)

    g = Graph("deadline_desk", state=MessagesState)
    g.add_node("agent", llm_node("You help customers.", model=ScriptedModel(model_reply), tools=[refund, notify]))
    g.add_node("send", lambda state: {}, approval=True, deadline=Deadline(seconds))
    g.add_edge(START, "agent")
    g.add_edge("agent", "send")
    g.add_edge("send", END)
    return g


def shown(result) -> str:
    return json.dumps(
        {
            "thread": result.thread,
            "outcome": result.outcome,
            "pauses": [[p.id, p.kind, p.deadline] for p in result.pauses],
            "decisions": [[d.by, d.via, d.verdict, d.path] for d in result.decisions],
            "last": result.state.messages[-1].content if result.state.messages else None,
        }
    )


if __name__ == "__main__":
    db, ledger, verb, thread, seconds = sys.argv[1:6]
    store = SQLiteCheckpointer(db)
    graph = build(ledger, float(seconds))
    if verb == "start":
        results = [
            graph.invoke({"messages": [{"role": "user", "content": "Refund A1"}]}, thread=thread, checkpointer=store)
        ]
    elif verb == "resume":
        results = [graph.invoke(Resume(thread), checkpointer=store)]
    else:
        results = sweep_deadlines(graph, store)
    for result in results:
        print(shown(result), flush=True)
