"""Feeding a live :class:`~nbgraph.widget.GraphView` the progress of a run.

The engine runs as a task in the kernel's event loop. The observer wakes on a timer
(``max_rate`` times a second), reads the steps recorded since it last looked, and
sends one update, so the browser gets the same few messages a second however fast
the graph runs, and a step costs the run nothing extra. Pauses and the end of the
run are sent at once. What a flush sends is cumulative (visit counts, fired edges,
the pending requests, the final state), so coalescing never loses a node's entry or
exit, an interrupt, or the outcome.

Parallel branches and sub-graphs: a flush sends every node being called now (several
while branches run), each branch target's progress (a map's 3 of 4 done, 1 failed) and
the counts inside sub-graphs keyed by path (``research/search``), so an opened frame
shows its own. A resumed run re-runs the nodes its pauses stopped in from their start;
the view hears of it through ``node-enter`` events, which it takes only during the
resumed run's first step, the only step in which a node can run again that way.

Nobody to click: a notebook executed headless (nbconvert, papermill, nbval) shows its
views to no browser, so a run waiting there for a person would wait for ever. Each
view's module says hello from the browser when it loads; a run whose pause has waited
``NBGRAPH_HEADLESS_WAIT`` seconds (default 30, 0: for ever) in a kernel no browser has
said hello to ends ``interrupted``, with a reason that says how to answer from code. A
kernel that reads a view's message only between cells (:func:`nbgraph.waiting.unheard`:
ipykernel before 7.4 in a Run All, Voilà) has heard no hello while cells run: the wait
starts again until it has passed with no cell run.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections import deque
from typing import TYPE_CHECKING, Any

from ._decided import DecisionLog, standing_rows
from ._shown import edge_key, exit_line, place
from .answering import identity
from .decision import decided_in
from .errors import NbgraphError
from .history import tally, tally_within
from .waiting import Browser, Cells, unheard

if TYPE_CHECKING:
    from .viewed import ViewedApprovals, ViewedRun
    from .widget import GraphView

__all__ = ["Browser", "RunObserver", "edge_key", "exit_line", "place"]

_NO_BROWSER = (
    "nobody answered within {wait:g} s and no browser shows this notebook (a headless run: nbconvert, "
    "papermill, nbval?); answer from code before `await run` with run.answer(value), run.approve() or "
    "run.answer(value, pause=pause.id), or run the notebook with NBGRAPH_AUTO_ANSWER=1 if it answers its own "
    "pauses; NBGRAPH_HEADLESS_WAIT sets the wait (0: for ever); g.invoke(Resume(result, answer)) goes on from here"
)


_HEADLESS_WAIT = 30.0


def _headless_wait() -> float:
    """Seconds a pause waits for a browser before a run gives up on being answered."""
    text = os.environ.get("NBGRAPH_HEADLESS_WAIT")
    if text is None:
        return _HEADLESS_WAIT
    try:
        wait = float(text)
    except ValueError:
        wait = -1.0
    if not wait >= 0:
        raise ValueError(f"NBGRAPH_HEADLESS_WAIT must be a number of seconds (0: wait for ever), not {text!r}")
    return wait


_LOG_LINES = 200
_TEXT_CHARS = 4000


_FINAL = ("done", "failed")
_COUNTS = ("done", "failed", "running", "paused", "waiting")


def _counts(statuses: dict[str, str]) -> dict[str, int]:
    counts: dict[str, int] = dict.fromkeys(_COUNTS, 0)
    for status in statuses.values():
        counts[status] = counts.get(status, 0) + 1
    return {"total": len(statuses), **counts}


class RunObserver:
    """Feeds a :class:`GraphView` the progress of a run, at most ``max_rate`` times a second.

    It reads the steps from ``run.history`` and the nodes under way from
    ``run.running`` / ``run.branches`` when it flushes, so a step costs the run
    nothing; it listens only for the rare events (streamed text, tool calls, pauses,
    answers and their decisions, errors, the end), and flushes at once on pauses, answers
    and at the end. ``approvals``: where the run's standing approvals are read (None: it has none).
    """

    def __init__(
        self,
        view: GraphView,
        run: ViewedRun,
        *,
        max_rate: float = 20.0,
        carry: RunObserver | None = None,
        seen: int | None = None,
        approvals: ViewedApprovals | None = None,
    ) -> None:
        self.view = view
        self.run = run
        self.approvals = approvals
        self.interval = 1.0 / max_rate
        self.flushes = 0
        self._loop = asyncio.get_running_loop()
        self._t0 = time.perf_counter()
        self._status: dict[str, Any] = {
            "state": "running",
            "outcome": None,
            "reason": None,
            "step": run.step,
            "max_steps": run.plan.max_steps,
            "tokens": 0,
            "cost": 0.0,
            "elapsed": 0.0,
            "current": None,
        }
        # Steps before this view (a resumed run's) are not replayed, unless asked (a fork's shared ones).
        self._seen = run.recorded if seen is None else seen
        self._visits: dict[str, int] = {}
        self._fired: dict[tuple[str, str], int] = {}
        self._progress: dict[str, dict[str, str]] = {}  # path -> branch -> status, the latest superstep there
        self._live: frozenset[str] = frozenset()  # paths with a superstep under way at the last flush
        self._reruns: dict[str, int] = {}
        self._costs: dict[str, list[Any]] = {}  # path -> [tokens, cost] of its steps
        self._sent: tuple[Any, ...] = ()  # what run.running / run.branches / run.pauses were when last sent
        self._log: deque[str | tuple[int, str, str | None, float]] = deque(maxlen=_LOG_LINES)
        self._text: list[str] = []
        self._text_len = 0
        self._text_step = -1
        self._dirty = False
        self._done = False
        self._detached = False
        self._ended: Any = None
        self._last_flush = 0.0
        self._handle: asyncio.TimerHandle | None = None
        self._headless_wait = _headless_wait()
        self._no_browser: asyncio.TimerHandle | None = None
        self._cells_seen = 0  # the cells started when the wait for a browser began
        self._ended_pauses: tuple[Any, ...] = ()
        self._asked: dict[str, float] = {}
        """Pause id -> when the view heard it asked (kernel clock): its deadline's whole wait."""
        # The thread's decisions so far (a resumed thread's, a fork's shared steps'), then each as it is made.
        # (A resume's log goes on from the one of the run it continues, whose observer is done with it.)
        self.decisions = carry.decisions if carry is not None else DecisionLog()
        self.decisions.add(decided_in(run.history) if run.recorded else ())
        self._decisions_sent = -1
        if carry is not None:  # a resume of the run ``carry`` showed: its counts and log go on
            self._visits, self._fired, self._costs = dict(carry._visits), dict(carry._fired), dict(carry._costs)
            self._reruns, self._log = dict(carry._reruns), carry._log
            self._status.update(tokens=carry._status["tokens"], cost=carry._status["cost"])
        self._unsubscribe = run.subscribe(self.on_event, steps=False)
        self._unwatch: Any = None
        self._flush()

    def on_event(self, event: Any) -> None:
        kind = event.type
        if kind == "text-delta":
            if event.step != self._text_step:
                self._text, self._text_len, self._text_step = [], 0, event.step
            if self._text_len < _TEXT_CHARS:
                self._text.append(event.text)
                self._text_len += len(event.text)
                self._dirty = True
            return
        if kind == "run-start":
            if event.resumed:
                # Only the first step of a resumed run can run a node again from its start:
                # hear node-enter events until that step has routed on.
                self._unwatch = self.run.subscribe(self._watch_reruns)
            return
        self._catch_up()  # keep the log in order: the steps so far come first
        self._dirty = True
        if kind == "tool-call":
            self._log.append(f"      tool {event.name}({json.dumps(event.args, default=str)[:80]})")
        elif kind == "tool-result" and event.is_error:
            self._log.append(f"      tool {event.name} failed: {str(event.result)[:80]}")
        elif kind == "interrupt":
            pause = event.pause
            self.decisions.asked(pause)
            if pause.deadline is not None:
                self._asked[pause.id] = time.time()
            where = ", ".join(part for part in (pause.path if "/" in pause.path else None, pause.branch) if part)
            self._log.append(f"      waiting{f' ({where})' if where else ''}: {pause.prompt}")
            if not Browser.seen and self._no_browser is None and self._headless_wait > 0:
                self._wait_for_browser()
            self._flush()
        elif kind == "answer":
            where = ", ".join(part for part in (event.path if "/" in event.path else None, event.branch) if part)
            decision = event.decision
            said = ""
            if decision is not None:  # (no clock time: a picture of the view is the same every time)
                what = f": {decision.verdict}" if decision.verdict != "answered" else ""
                why = f" \u2014 {decision.reason[:80]}" if decision.reason else ""
                said = f" by {decision.by} ({decision.via}){what}{why}"
            self._log.append(f"      answered{f' ({where})' if where else ''}{said}")
            if decision is not None:
                self.decisions.add((decision,))
            self._flush()
        elif kind == "error":
            self._log.append(f"      error: {event.error}")
        elif kind == "custom":
            where = event.path or event.node or "run"
            self._log.append(f"      {where}: {json.dumps(event.data, default=str, ensure_ascii=False)[:80]}")
        elif kind == "done":
            self._status.update(state="done", outcome=event.outcome, reason=event.reason)
            self._done = True
            self._unsubscribe()
            self._stop_watching()
            if self._no_browser is not None:
                self._no_browser.cancel()
            # A run announces its end before it holds its result: the last flush waits for that.
            self._loop.call_soon(self._show_ending)

    def _show_ending(self) -> None:
        """The run has its result: the last flush, with how it ended, the problems it met, the
        slider's frames (built once, no node runs) and the pauses an ``interrupted`` run ended
        waiting for (answering one resumes it in the view), all in one message."""
        if self._detached:
            return
        result = self.run.result()
        if result.outcome == "interrupted" and result.pauses:
            self._ended_pauses = tuple(result.pauses)
        try:
            self._ended = result.replay()
        except (NbgraphError, ValueError, TypeError) as exc:  # the view still shows the run without a slider
            self._log.append(f"      no replay: {exc}")
        else:
            self.decisions.place(self._ended.records)  # each decision at the frame of the record that keeps it
        with self.view.hold_sync():
            self.view.problems = [problem.model_dump(mode="json") for problem in result.problems()]
            self._flush()
            # Its output's picture shows how the run ended: the output is updated (and drawn
            # again) before the browser hears of the end, so the view shows the end once back.
            self.view.settle()

    def detach(self) -> None:
        """Stop feeding the view: it shows another run from now on."""
        self._detached = self._done = True
        self._unsubscribe()
        self._stop_watching()
        for handle in (self._handle, self._no_browser):
            if handle is not None:
                handle.cancel()

    def _wait_for_browser(self) -> None:
        self._cells_seen = Cells.started
        self._no_browser = self._loop.call_later(self._headless_wait, self._give_up, True)

    def _give_up(self, first_look: bool) -> None:
        """A pause has waited its time and no browser has said hello: nobody can answer."""
        self._no_browser = None
        if Browser.seen or self._done or not self.run.pauses:
            return
        if (Cells.task is not None or Cells.started != self._cells_seen) and unheard() is not None:
            # Cells ran meanwhile, and this kernel reads a view's hello only between them.
            self._wait_for_browser()
            return
        if first_look:
            # A cell that kept the loop busy may have held the hello back: let the kernel read it.
            self._no_browser = self._loop.call_later(0.5, self._give_up, False)
            return
        self.run.stop_waiting(_NO_BROWSER.format(wait=self._headless_wait))

    def _watch_reruns(self, event: Any) -> None:
        kind = event.type
        if kind == "node-enter":
            if event.rerun:
                path = event.path or event.node
                self._reruns[path] = self._reruns.get(path, 0) + 1
                self._catch_up()
                self._log.append(
                    f"      rerun: {place(path, event.branch)} runs again from its start, up to its answered pause"
                )
                self._dirty = True
        elif kind == "route" and event.path and "/" not in event.path:
            self._stop_watching()  # the first step has routed on: no node can re-run any more

    def _stop_watching(self) -> None:
        if self._unwatch is not None:
            self._unwatch()
            self._unwatch = None

    def note(self, line: str) -> None:
        """Add a line to the view's log."""
        self._catch_up()
        self._log.append(f"      {line}")
        self._flush()

    def _catch_up(self) -> None:
        """Count the steps recorded since the last look."""
        run = self.run
        fresh = run.history_since(self._seen)
        last = fresh[-1] if fresh else None
        if last is not None and last.edge is None and last.error is None and not run.pauses and not run.done:
            fresh = fresh[:-1]  # a fork's last shared step: its routing is done afresh, count it once done
        if not fresh:
            return
        visits, fired = self._visits, self._fired
        tally(fresh, visits, fired)
        status, log = self._status, self._log
        levels: set[str] = set()
        batches: dict[str, dict[str, str]] = {}
        for record in fresh:
            status["tokens"] += record.tokens
            status["cost"] += record.cost
            if record.tokens or record.cost:
                spent = self._costs.setdefault(record.path, [0, 0.0])
                spent[0] += record.tokens
                spent[1] += record.cost
            log.append((record.step, record.path, record.branch, record.duration))  # formatted when sent
            if "/" in record.path:
                levels.add(record.path.rpartition("/")[0])
            if record.branch is not None:
                # A superstep's records arrive together when it settles: its branches' final states.
                batch = batches.setdefault(record.path, {})
                if record.branch in batch:
                    batch.clear()  # the same branch again: a later superstep at the same node
                batch[record.branch] = "failed" if record.error else "done"
        for level in levels:  # counts inside sub-graphs, keyed by path
            inner_visits: dict[str, int] = {}
            inner_fired: dict[tuple[str, str], int] = {}
            tally_within(fresh, level, inner_visits, inner_fired)
            for node, count in inner_visits.items():
                key = f"{level}/{node}"
                visits[key] = visits.get(key, 0) + count
            for (source, target), count in inner_fired.items():
                edge = (f"{level}/{source}", f"{level}/{target}")
                fired[edge] = fired.get(edge, 0) + count
        for path, batch in batches.items():
            if path in self._live and path in self._progress:
                self._progress[path].update(batch)  # the superstep seen under way at the last flush
            else:
                self._progress[path] = batch
        self._seen += len(fresh)

    def _snapshot(self) -> tuple[tuple[str, ...], tuple[Any, ...], tuple[Any, ...], tuple[Any, ...]]:
        run = self.run
        # (Standing approvals change from code too, run.allow / run.revoke, while a pause waits.)
        standing = self.approvals.standing if self.approvals is not None else ()
        return tuple(dict.fromkeys(run.running)), tuple(run.branches), run.pauses, standing

    def _shown(self, pause: Any) -> dict[str, Any]:
        """A pause as its box shows it; one with a deadline heard asked says when (``asked``),
        so the box knows the whole wait its warning is a part of."""
        shown = pause.model_dump(mode="json")
        asked = self._asked.get(pause.id)
        if asked is not None:
            shown["asked"] = round(asked, 3)
        return shown

    def _tick(self) -> None:
        self._handle = None
        if self._done:
            return
        run = self.run
        idle = not self._dirty and run.step == self._status["step"] and self._snapshot() == self._sent
        if idle and (run.pauses or time.perf_counter() - self._last_flush < 1.0):
            # Nothing new (a long node, a slow model, a person thinking): the clock, once a second.
            self._handle = self._loop.call_later(self.interval, self._tick)
        else:
            self._flush()

    def _flush(self) -> None:
        if self._detached:
            return
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None
        self._catch_up()
        run, status, view = self.run, self._status, self.view
        self._last_flush = now = time.perf_counter()
        self._dirty = False
        status["elapsed"] = round(now - self._t0, 2)
        status["clock"] = round(time.time(), 3)  # (the browser counts a deadline down from the kernel's clock)
        status["step"] = run.step
        self._sent = running, branches, pending, standing = self._snapshot()
        if not self._done:
            status["state"] = "paused" if pending else "running"
            # An approval waits on a node that has already run: keep it highlighted.
            status["current"] = (pending[0].path or pending[0].node) if pending else run.upcoming
        else:
            status["current"] = None
        live: dict[str, dict[str, str]] = {}
        for state in branches:
            live.setdefault(state.path, {})[state.branch] = state.status
        self._progress.update(live)
        self._live = frozenset(live)
        if self._done:  # branches cut short by the end (a failure, a stop) did not finish
            waiting = {(pause.path or pause.node, pause.branch) for pause in pending}
            for path, statuses in self._progress.items():
                for branch, state in statuses.items():
                    if state not in _FINAL and (path, branch) not in waiting:
                        statuses[branch] = "failed"
        with view.hold_sync():  # one comm message for all the traits that changed
            view.status = dict(status)
            view.visits = dict(self._visits)
            view.fired = {edge_key(*edge): count for edge, count in self._fired.items()}
            view.pending = [self._shown(pause) for pause in pending or self._ended_pauses]
            view.running = list(running)
            view.branches = {path: _counts(statuses) for path, statuses in self._progress.items()}
            view.reruns = dict(self._reruns)
            view.swapped = list(run.replaced)
            view.costs = {
                path: {"tokens": tokens, "cost": round(cost, 6)} for path, (tokens, cost) in self._costs.items()
            }
            view.text = "".join(self._text)
            view.log = [line if isinstance(line, str) else exit_line(*line) for line in self._log]
            view.standing = rows = standing_rows(standing) if not self._done else []
            view.identity = identity()
            decisions = self.decisions
            decisions.standing(rows)
            if decisions.version != self._decisions_sent:
                view.decisions = decisions.rows()
                self._decisions_sent = decisions.version
            if self._ended is not None:
                view.show_frames(self._ended)
                self._ended = None
        self.flushes += 1
        if not self._done:
            self._handle = self._loop.call_later(self.interval, self._tick)
