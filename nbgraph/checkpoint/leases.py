"""Leases: one writer per thread, held while the run lives and dropped when its process dies.

A run takes a short lease on its thread and a daemon thread of this process renews
it, whatever the run is doing (a long node, a wait for a person). Every write the
run makes carries the lease's token, so a run whose lease lapsed or was taken over
writes nothing more (fencing). A lease records who holds it, so a holder on this
host whose process is gone (a killed kernel) is known dead at once, without
waiting for the lease to lapse.
"""

from __future__ import annotations

import os
import socket
import threading
import time
from collections.abc import Callable
from typing import Any, NamedTuple

from ..names import new_id

__all__ = [
    "DEFAULT_TTL",
    "Lease",
    "Renewer",
    "busy_message",
    "holder_alive",
    "lost_message",
    "may_take_over",
    "new_lease",
    "renewer",
    "taking_message",
]

DEFAULT_TTL = 30.0
"""Seconds a lease lasts unless renewed; it is renewed every third of that."""


def _process_start(pid: int) -> float | None:
    """When process ``pid`` started (clock ticks since boot), to tell a reused pid; None where unknown."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            fields = stat.read().rsplit(b")", 1)[1].split()
        return float(fields[19])
    except (OSError, IndexError, ValueError):
        return None


_HOST = socket.gethostname()


class Lease(NamedTuple):
    """A run's hold on a thread: its token, who holds it, and until when."""

    thread: str
    token: str
    run: str | None
    host: str
    pid: int
    started: float | None
    """The holding process's start time, so a reused pid is not taken for the holder."""
    since: float
    """When the lease was taken (seconds since the epoch)."""
    expires: float | None
    """When it lapses unless renewed (None: it lasts as long as its process)."""

    def describe(self, now: float | None = None) -> str:
        now = time.time() if now is None else now
        who = f"run {self.run!r}" if self.run else "a run"
        since = time.strftime("%H:%M:%S", time.localtime(self.since))
        ends = (
            "; its lease lasts until that run lets it go"
            if self.expires is None
            else f"; its lease ends in {max(0.0, self.expires - now):.0f} s"
        )
        return f"{who} in process {self.pid} on host {self.host!r} since {since}{ends}"

    def to_json(self) -> dict[str, Any]:
        return self._asdict()


def new_lease(thread: str, run: str | None, ttl: float | None) -> Lease:
    """A lease for this process, starting now."""
    pid = os.getpid()
    now = time.time()
    return Lease(thread, new_id(), run, _HOST, pid, _process_start(pid), now, None if ttl is None else now + ttl)


def holder_alive(lease: Lease) -> bool | None:
    """Whether the run holding ``lease`` still lives: known on this host, None on another.

    In this very process, only a lease the renewer still holds is alive: a run that
    ended without releasing its lease (its store failed) does not hold the thread.
    """
    if lease.host != _HOST:
        return None
    if lease.pid == os.getpid() and lease.started == _process_start(lease.pid):
        return _RENEWER.holds(lease.token)
    try:
        os.kill(lease.pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # it exists, under another user
    started = _process_start(lease.pid)
    return lease.started is None or started is None or started == lease.started


def may_take_over(lease: Lease, now: float) -> bool:
    """A lease that lapsed, or whose holder on this host is gone, may be taken."""
    if lease.expires is not None and lease.expires <= now:
        return True
    return holder_alive(lease) is False


def _take_over(thread: str) -> str:
    return f"take the thread over with checkpointer.unlock({thread!r}) or resume with force=True"


def busy_message(thread: str, held: Lease, where: str) -> str:
    return (
        f"thread {thread!r} is being run by {held.describe()} ({where}). Wait for it, or if that run is gone, "
        + _take_over(thread)
    )


def taking_message(thread: str, where: str) -> str:
    """For a thread held by someone no read could name: it changed hands between the reads, so
    another worker is taking it right now."""
    return (
        f"thread {thread!r} is being taken by another worker right now ({where}): it changed hands each time "
        f"its holder was read. Try again in a moment, or if no other run should hold it, {_take_over(thread)}"
    )


def lost_message(thread: str, where: str) -> str:
    return (
        f"this run's lease on thread {thread!r} lapsed or was taken over by another run ({where}); "
        "nothing more was written"
    )


class Renewer:
    """One daemon thread that renews every lease this process holds before it lapses.

    ``renew(lease)`` returns the renewed lease, or None if it was lost; a failed
    renewal (the store unreachable) is retried until the lease would lapse.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._held: dict[str, tuple[Callable[[Lease], Lease | None], Lease, float]] = {}
        self._lost: set[str] = set()
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None

    def hold(self, lease: Lease, renew: Callable[[Lease], Lease | None], ttl: float) -> None:
        with self._lock:
            self._held[lease.token] = (renew, lease, ttl)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="nbgraph-leases", daemon=True)
                self._thread.start()
        self._wake.set()

    def drop(self, token: str) -> None:
        with self._lock:
            self._held.pop(token, None)
            self._lost.discard(token)

    def lost(self, token: str) -> bool:
        return token in self._lost

    def holds(self, token: str) -> bool:
        """Whether a run of this process holds the lease ``token``."""
        return token in self._held

    def _run(self) -> None:
        while True:
            with self._lock:
                held = list(self._held.items())
            wait = min((ttl / 3 for _, (_, _, ttl) in held), default=None)
            self._wake.wait(wait)
            self._wake.clear()
            for token, (renew, lease, ttl) in held:
                try:
                    renewed = renew(lease)
                except Exception:
                    # The store did not answer: try again on the next round, while the lease lasts.
                    if lease.expires is not None and lease.expires > time.time():
                        continue
                    renewed = None
                with self._lock:
                    if token not in self._held:
                        continue
                    if renewed is None:
                        self._lost.add(token)
                        del self._held[token]
                    else:
                        self._held[token] = (renew, renewed, ttl)


_RENEWER = Renewer()


def renewer() -> Renewer:
    """The process's lease renewer."""
    return _RENEWER
