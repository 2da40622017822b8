"""A real SIGINT while ``invoke()`` waits for nbgraph's loop thread on an async node that never returns.

    python ctrl_c.py

prints ``outcome | reason | the checkpoint's next node`` and the state; the run must end
aborted, its checkpoint kept.
"""

import asyncio
import os
import signal
import threading

from nbgraph import END, START, Graph, MemoryCheckpointer


def main():
    # As in a terminal or a kernel: a process started in the background inherits SIGINT ignored.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    started = threading.Event()

    async def hang(state):
        started.set()
        await asyncio.Event().wait()

    g = Graph("hang")
    g.add_node("a", lambda s: {"x": 1})
    g.add_node("hang", hang)
    g.add_edge(START, "a")
    g.add_edge("a", "hang")
    g.add_edge("hang", END)
    threading.Thread(target=lambda: started.wait() and os.kill(os.getpid(), signal.SIGINT), daemon=True).start()
    store = MemoryCheckpointer()
    result = g.invoke({}, checkpointer=store)
    print(result.outcome, "|", result.reason, "|", store.get(result.thread).next, result.state)


if __name__ == "__main__":
    main()
