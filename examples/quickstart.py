"""A first nbgraph graph, run headless: routing, a loop, an approval, a resume.

Run: python examples/quickstart.py
"""

from __future__ import annotations

from nbgraph import END, START, Graph, Resume


def draft(state):
    return {"text": f"Draft {state.version + 1}: {state.topic}", "version": state.version + 1}


def review(state):
    return {"ok": state.version >= 2}


def publish(state):
    return {"published": state.text}


g = Graph("writer", max_steps=20)
g.add_node("draft", draft)
g.add_node("review", review)
g.add_node("publish", publish, approval="before")  # a person lets it publish, or not
g.add_edge(START, "draft")
g.add_edge("draft", "review")
g.add_edge("review", "publish", when=lambda s: s.ok, label="state.ok")
g.add_edge("review", "draft")  # fallback: first match wins
g.add_edge("publish", END)

if __name__ == "__main__":
    print(g.to_mermaid())
    paused = g.invoke({"topic": "graphs in notebooks", "version": 0})
    print(paused.outcome, "-", paused.reason)  # interrupted: publish waits for approval before it runs
    print("it would publish:", paused.pauses[0].input["text"])
    result = g.invoke(Resume(paused, True))
    print(result.outcome, result.path)
    print(result.state["published"])
