"""Run jobs in child processes forked from one warm parent, for cross-process tests.

A fresh interpreter spends most of a second importing nbgraph, pydantic and redis;
a durable test that resumes a thread from a dozen processes would spend its time
there. So one child interpreter (the parent of the jobs) imports them once and forks
a process per job: each job is a separate process with its own memory and its own
store connections, opened after the fork, and it hands its result back only through
a file. Jobs of one batch run at the same time. The parent runs the jobs' module
(and its ``warm()``, which builds what it can in advance) but never opens a store or
starts a thread, so forking it is safe.
"""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
TIMEOUT = 60.0

_PARENT = """
import json
import os
import sys
import traceback

import pydantic
import redis
import nbgraph
import nbgraph.checkpoint.redis
import nbgraph.checkpoint.sqlite

space = {"__name__": "jobs"}
exec(compile(open(sys.argv[1]).read(), sys.argv[1], "exec"), space)
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
"""


class Forker:
    """A warm parent process that runs ``main(job)`` of ``source`` in a forked child per job.

    ``source`` is a module defining ``main(job: dict) -> dict`` (JSON both ways), and
    optionally ``warm()``.
    """

    def __init__(self, tmp_path: Path, source: str) -> None:
        self.tmp_path = tmp_path
        self._count = 0
        (tmp_path / "jobs.py").write_text(source)
        (tmp_path / "parent.py").write_text(_PARENT)
        self._stderr = tmp_path / "forker.stderr"
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
        with open(self._stderr, "wb") as err:
            self.proc = subprocess.Popen(
                [sys.executable, str(tmp_path / "parent.py"), str(tmp_path / "jobs.py")],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=err,
                text=True,
                cwd=REPO,
                env=env,
            )
        self.pids: set[int] = set()
        """Every process a job ran in."""

    def run(self, *jobs: dict[str, Any]) -> list[dict[str, Any]]:
        """Run ``jobs`` at once, each in a process of its own; their results, in order."""
        outs = []
        for _ in jobs:
            self._count += 1
            outs.append(str(self.tmp_path / f"job-{self._count}.json"))
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(json.dumps([{**job, "out": out} for job, out in zip(jobs, outs, strict=True)]) + "\n")
        self.proc.stdin.flush()
        ready, _, _ = select.select([self.proc.stdout], [], [], TIMEOUT)  # one line per batch: nothing is buffered
        assert ready, f"jobs still running after {TIMEOUT} s; stderr: {self._stderr.read_text()[-3000:]}"
        line = self.proc.stdout.readline()
        assert line, f"the forking parent died; stderr: {self._stderr.read_text()[-3000:]}"
        report = json.loads(line)
        assert report["codes"] == [0] * len(jobs), f"a job failed; stderr: {self._stderr.read_text()[-3000:]}"
        self.pids.update(report["pids"])
        return [json.loads(Path(out).read_text()) for out in outs]

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        self.proc.wait(timeout=TIMEOUT)
        if self.proc.stdout is not None:
            self.proc.stdout.close()

    def __enter__(self) -> Forker:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
