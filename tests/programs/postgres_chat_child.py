"""Start the conversation on a thread kept in PostgreSQL, or resume it, or say it is finished.

    python postgres_chat_child.py postgres DSN - LEASE_TTL THREAD PACED HANDSHAKE

The arguments and what it says are those of ``chat_child.py`` (which runs the same
conversation on SQLite or Redis): "begin", "step STEP COUNT" from inside its node,
"result ...", "busy ...". PACED=1: each node waits for a line on stdin before it returns
(until stdin closes). HANDSHAKE=1: it says "ready" and waits for a line before it takes
the thread.
"""

import json
import sys

import chat_graph  # beside this file, which Python puts first on sys.path

from nbgraph import PostgresCheckpointer, Resume, ThreadBusy

kind, dsn, _, lease_ttl, thread, paced, handshake = sys.argv[1:8]
assert kind == "postgres", kind
store = PostgresCheckpointer(dsn, lease_ttl=float(lease_ttl))


def say(*words):
    print(*words, flush=True)


def hook(step, count):
    say("step", step, count)
    if paced == "1":
        sys.stdin.readline()  # the test says go; once stdin is closed the child runs freely


g = chat_graph.build(hook)
g.compile()
last = store.get(thread)
if last is not None and last.status == "done":
    say("finished")
    sys.exit(0)
say("begin", "invoke" if last is None else "resume")
if handshake == "1":  # everything is ready: the next thing this child does is take the thread
    say("ready")
    sys.stdin.readline()
try:
    if last is None:
        result = g.invoke({}, thread=thread, checkpointer=store)
    else:
        result = g.invoke(Resume(thread), checkpointer=store)
except ThreadBusy as exc:
    say("busy", json.dumps(str(exc)))
    sys.exit(0)
say("result", json.dumps({"outcome": result.outcome, "reason": result.reason}))
