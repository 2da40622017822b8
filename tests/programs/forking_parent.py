"""The warm parent of ``forked.Forker``: import what the jobs need once, then fork a process per job.

    python forking_parent.py JOBS_MODULE

reads a batch of jobs (a JSON list) a line from stdin, runs ``main(job)`` of JOBS_MODULE in a
forked child per job, each writing its result as JSON to ``job["out"]``, and answers each batch
with one line: ``{"codes": [exit code per job], "pids": [...]}``.
"""

import json
import os
import sys
import traceback

# Loaded once, here, so that no forked job spends its time importing them.
import pydantic  # noqa: F401
import redis  # noqa: F401

import nbgraph  # noqa: F401
import nbgraph.checkpoint.redis  # noqa: F401
import nbgraph.checkpoint.sqlite  # noqa: F401


def main(jobs_module):
    space = {"__name__": "jobs"}
    with open(jobs_module) as source:
        exec(compile(source.read(), jobs_module, "exec"), space)
    if "warm" in space:
        space["warm"]()  # (it must start no thread and open no store: the jobs are forked from here)
    for line in sys.stdin:
        jobs = json.loads(line)
        sys.stdout.flush()
        sys.stderr.flush()
        pids = []
        for job in jobs:
            pid = os.fork()
            if pid == 0:
                code = 1
                try:
                    result = space["main"](job)
                    with open(job["out"], "w") as out:
                        json.dump(result, out)
                    code = 0
                except BaseException:
                    traceback.print_exc()
                    sys.stderr.flush()
                os._exit(code)
            pids.append(pid)
        codes = [os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) for pid in pids]
        print(json.dumps({"codes": codes, "pids": pids}), flush=True)


if __name__ == "__main__":
    main(sys.argv[1])
