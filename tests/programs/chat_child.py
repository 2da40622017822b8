"""Start the conversation on a thread, or resume it, or say it is finished.

    python chat_child.py KIND WHERE PREFIX LEASE_TTL THREAD PACED HANDSHAKE

KIND is sqlite (WHERE a file), redis (WHERE a URL, PREFIX its key prefix) or postgres
(WHERE a DSN, PREFIX unused: its schema is in the DSN). It says where it
stands with a line on stdout ("begin", "step STEP COUNT" from inside its node, "result ...",
"busy ..."). PACED=1: each node waits for a line on stdin before it returns (until stdin
closes). HANDSHAKE=1: it says "ready" and waits for a line before it takes the thread.
"""

import json
import sys

from nbgraph import PostgresCheckpointer, RedisCheckpointer, Resume, SQLiteCheckpointer, ThreadBusy


def say(*words):
    print(*words, flush=True)


def main(kind, where, prefix, lease_ttl, thread, paced, handshake):
    import chat_graph  # beside this file: run as a script, its folder comes first on sys.path

    if kind == "sqlite":
        store = SQLiteCheckpointer(where, lease_ttl=float(lease_ttl))
    elif kind == "postgres":
        store = PostgresCheckpointer(where, lease_ttl=float(lease_ttl))
    else:
        store = RedisCheckpointer(where, prefix=prefix, lease_ttl=float(lease_ttl))

    def hook(step, count):
        say("step", step, count)
        if paced == "1":
            sys.stdin.readline()  # the test says go; once stdin is closed the child runs freely

    g = chat_graph.build(hook)
    g.compile()
    last = store.get(thread)
    if last is not None and last.status == "done":
        say("finished")
        return
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
        return
    say("result", json.dumps({"outcome": result.outcome, "reason": result.reason}))


if __name__ == "__main__":
    main(*sys.argv[1:8])
