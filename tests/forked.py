"""Run jobs in child processes forked from one warm parent, for cross-process tests.

A fresh interpreter spends most of a second importing nbgraph, pydantic and redis;
a durable test that resumes a thread from a dozen processes would spend its time
there. So one child interpreter (the jobs' parent, ``programs/forking_parent.py``)
imports them once and forks a process per job: each job is a separate process with
its own memory and its own store connections, opened after the fork, and it hands its
result back only through a file. Jobs of one batch run at the same time. The parent
runs the jobs' module (and its ``warm()``, which builds what it can in advance) but
never opens a store or starts a thread, so forking it is safe.
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

_PARENT = Path(__file__).with_name("programs") / "forking_parent.py"


class Forker:
    """A warm parent process that runs ``main(job)`` of the program at ``program`` in a forked child per job.

    The program defines ``main(job: dict) -> dict`` (JSON both ways), and optionally ``warm()``.
    Results and the processes' stderr go to files in ``tmp_path``.
    """

    def __init__(self, tmp_path: Path, program: Path) -> None:
        self.tmp_path = tmp_path
        self._count = 0
        self._stderr = tmp_path / "forker.stderr"
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
        with open(self._stderr, "wb") as err:
            self.proc = subprocess.Popen(
                [sys.executable, str(_PARENT), str(program)],
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
