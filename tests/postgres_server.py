"""Start a real PostgreSQL server on 127.0.0.1 for the tests, and stop it afterwards.

The server is Debian's ``postgresql`` package (``.ci/run`` installs it), run as a private
cluster in a directory of its own. PostgreSQL refuses to run as root, and the tests run
as root: the cluster then belongs to the ``postgres`` user, in a directory under the
system's temporary directory (pytest's own one is closed to other users).
"""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from redis_server import free_port


def _bin_dir() -> Path:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(Path(p).parts[-3]))
    if not found:
        raise RuntimeError("PostgreSQL is not installed: apt-get install postgresql (.ci/run does)")
    return Path(found[-1]).parent


class PostgresServer:
    """A PostgreSQL cluster of its own on a loopback port, that can be stopped (also as a
    crash: ``immediate``) and started again on the same port with the same data."""

    def __init__(self, *, fsync: bool = False) -> None:
        self.bin = _bin_dir()
        self.fsync = fsync
        self.directory = Path(tempfile.mkdtemp(prefix="nbgraph-postgres-"))
        self.data = self.directory / "data"
        self.port = free_port()
        self.dsn = f"postgresql://postgres@127.0.0.1:{self.port}/postgres"
        self._as_owner = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
        if self._as_owner:
            shutil.chown(self.directory, "postgres", "postgres")
        self._run("initdb", "-D", str(self.data), "-U", "postgres", "-A", "trust", "--no-sync", "-E", "UTF8")

    def _run(self, program: str, *args: str) -> None:
        done = subprocess.run(
            [*self._as_owner, str(self.bin / program), *args], capture_output=True, text=True, check=False
        )
        if done.returncode != 0:
            log = self.directory / "log"
            raise RuntimeError(
                f"{program} {' '.join(args)} exited with {done.returncode}: {done.stderr[-2000:]}"
                + (f"\nthe server's log ends: {log.read_text(errors='replace')[-2000:]}" if log.exists() else "")
            )

    def start(self) -> None:
        # fsync off for the tests: they crash clients and stop the server, never the machine, so
        # what a server wrote to its files before it died is read back when it starts again.
        options = (
            f"-p {self.port} -k {self.directory} -c listen_addresses=127.0.0.1 -c fsync={'on' if self.fsync else 'off'}"
        )
        # pg_ctl -w polls the server until it accepts connections (or gives up after -t seconds).
        self._run(
            "pg_ctl", "start", "-w", "-t", "60", "-D", str(self.data), "-l", str(self.directory / "log"), "-o", options
        )
        self._run("pg_isready", "-h", "127.0.0.1", "-p", str(self.port), "-t", "10")

    def stop(self, mode: str = "fast") -> None:
        """Stop the server; ``immediate`` kills it without a clean shutdown, as a crash would."""
        self._run("pg_ctl", "stop", "-w", "-D", str(self.data), "-m", mode)

    def running(self) -> bool:
        status = subprocess.run(
            [*self._as_owner, str(self.bin / "pg_ctl"), "status", "-D", str(self.data)],
            capture_output=True,
            check=False,
        )
        return status.returncode == 0

    def remove(self) -> None:
        shutil.rmtree(self.directory, ignore_errors=True)


@contextmanager
def postgres_server(*, fsync: bool = False) -> Iterator[PostgresServer]:
    """A started server, stopped and removed afterwards."""
    server = PostgresServer(fsync=fsync)
    try:
        server.start()
        try:
            yield server
        finally:
            if server.running():  # (a test may have left it stopped)
                server.stop("immediate")
    finally:
        server.remove()


@pytest.fixture(scope="session")
def postgres() -> Iterator[PostgresServer]:
    """One real PostgreSQL server on loopback for the whole session."""
    with postgres_server() as server:
        yield server


def schema_dsn(server_dsn: str, schema: str) -> str:
    """The DSN of ``server_dsn`` whose tables live in ``schema`` (its search path)."""
    return f"{server_dsn}?options=-csearch_path%3D{schema}"


@pytest.fixture
def postgres_dsn(postgres: PostgresServer) -> Iterator[str]:
    """A DSN whose tables are the test's own: a new schema on the session's server, dropped afterwards."""
    import psycopg

    schema = f"test_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(postgres.dsn, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
    yield schema_dsn(postgres.dsn, schema)
    with psycopg.connect(postgres.dsn, autocommit=True) as conn:
        conn.execute(f"DROP SCHEMA {schema} CASCADE")
