"""Run the batch "nightly" of tests/test_batch_resume.py's graph on a SQLite file, then print its rows.

    python nightly_batch.py DB LOG BLOCKED

BLOCKED lists the inputs (e.g. "3,4,5", or "") whose node waits for ever, saying "blocked N" on
stdout first; the rows come last, as one line "rows [...]" (JSON).
"""

import json
import sys
from pathlib import Path


def main(db, log, blocked):
    tests = Path(__file__).resolve().parents[1]
    sys.path[:0] = [str(tests.parent), str(tests)]
    from test_batch_resume import CONCURRENCY, INPUTS, build

    from nbgraph import SQLiteCheckpointer

    rows = build(log, {int(n) for n in blocked.split(",") if n}).batch(
        {str(n): {"n": n} for n in range(INPUTS)},
        concurrency=CONCURRENCY,
        checkpointer=SQLiteCheckpointer(db),
        batch="nightly",
        progress=False,
        table="rows",
    )
    print("rows " + json.dumps([[r.input_id, r.outcome, list(r.path), r.error, r.thread] for r in rows]), flush=True)


if __name__ == "__main__":
    main(*sys.argv[1:4])
