"""Waiting in a cell for a run that a person answers in its view, on every kernel.

A click in a view reaches the kernel as a widget message. ipykernel 7.4 and later read
such a message while a cell awaits; older kernels (Colab's ipykernel 6.17, say) and marimo
read it only once the running cell has ended, and Voilà shows its page, the views with it,
only once every cell has run (unless it renders progressively). There, a cell doing
``await run`` at a pause would wait for a click that cannot come before the cell ends.

:func:`unheard` says whether this is such a kernel, and why. ``await run`` inside a cell
of one (:func:`wait_in_cell`, reached from the engine through :func:`nbgraph.hooks.awaited`)
waits as usual until the run opens a pause that nothing answers at once, then fails with
:class:`~nbgraph.errors.CannotWaitHere` saying what to do instead; the run goes on,
waiting, and the view's buttons answer it once the cell has ended. A run that never
pauses, or whose pauses code answers, is awaited as anywhere else.

Which task runs the cell: IPython's ``pre_run_cell`` / ``post_run_cell`` events, watched
once the notebook layer is loaded (:func:`watch_cells`). A task a cell left running is no
cell: awaiting a run there blocks nobody's clicks.
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Coroutine
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from .errors import CannotWaitHere
from .hooks import in_kernel, in_marimo

if TYPE_CHECKING:
    from .pauses import Pause
    from .viewed import ViewedRun

__all__ = ["Browser", "Cells", "in_cell", "unheard", "wait_in_cell", "watch_cells"]

T = TypeVar("T")

HEARS_WHILE_AWAITING = (7, 4)
"""The first ipykernel that reads a widget's message while a cell awaits."""

VOILA_HELLO = 2.0
"""Seconds a cell in Voilà gives a view already shown to say hello before it concludes that no
page shows it (Voilà's progressive mode shows a cell's views once the cell has run)."""


@dataclass(frozen=True)
class _Deaf:
    why: str  # what keeps a click from this cell, as a clause
    click: str  # how a person answers instead


_CLICK_LATER = "end this cell without awaiting the run, answer in its view, and read run.result() in the next cell"
_MARIMO = _Deaf("marimo hands a view's click to the kernel only after the running cell ends", _CLICK_LATER)
_VOILA = _Deaf(
    "Voilà shows the page, and the run's view with it, only once every cell has run (unless it renders "
    "progressively, and then a view only once its cell has run)",
    "leave `await run` out of the notebook: once the page shows, the view's buttons answer the run",
)


class Browser:
    """Whether a browser has loaded an nbgraph view in this kernel (it then says hello)."""

    seen = False


class Cells:
    """The cell being run, as IPython's events tell it (once :func:`watch_cells` has run)."""

    task: asyncio.Task[Any] | None = None
    """The task running the current cell; None between cells."""
    started = 0
    """How many cells have started since the notebook layer was loaded."""
    watched = False


def _current_task() -> asyncio.Task[Any] | None:
    try:
        return asyncio.current_task()
    except RuntimeError:  # (no loop running: a plain IPython shell)
        return None


def _cell_starts(*_info: object) -> None:
    Cells.task = _current_task()
    Cells.started += 1


def _cell_ends(*_result: object) -> None:
    Cells.task = None


def watch_cells(shell: Any) -> None:
    """Follow ``shell``'s cells from now on; the code running now is taken for a cell's (the
    notebook layer loads while a cell shows its first graph or run)."""
    if Cells.watched:
        return
    shell.events.register("pre_run_cell", _cell_starts)
    shell.events.register("post_run_cell", _cell_ends)
    Cells.watched = True
    Cells.task = _current_task()


def in_cell() -> bool:
    """Whether the code running now is a cell's own (rather than a task a cell left running)."""
    if in_marimo():
        return True  # (marimo runs a cell's awaits in the cell)
    task = _current_task()
    return task is not None and task is Cells.task


def _in_voila() -> bool:
    # Voilà starts its kernels with the CGI variables of the page's request.
    return os.environ.get("SERVER_SOFTWARE", "").startswith("voila/")


def _ipykernel_version() -> tuple[int, ...]:
    version = getattr(sys.modules.get("ipykernel"), "version_info", None)
    if isinstance(version, tuple):
        return tuple(part for part in version if isinstance(part, int))
    return HEARS_WHILE_AWAITING  # (not ipykernel's kernel: nothing known against it)


def _deafness() -> _Deaf | None:
    if in_marimo():
        return _MARIMO
    if not in_kernel():
        return None
    if _in_voila() and not Browser.seen:
        return _VOILA
    version = _ipykernel_version()
    if version < HEARS_WHILE_AWAITING:
        shown = ".".join(map(str, version))
        return _Deaf(
            f"this kernel (ipykernel {shown}) reads a click in a view only after the running cell ends "
            f"(ipykernel {'.'.join(map(str, HEARS_WHILE_AWAITING))} and later read it while a cell awaits)",
            _CLICK_LATER,
        )
    return None


def unheard() -> str | None:
    """Why a click in a view cannot reach the running cell while it awaits, or None where it can.

    None outside a kernel, and in Voilà once a page has shown a view (it renders
    progressively) on a kernel that reads clicks meanwhile.
    """
    deaf = _deafness()
    return None if deaf is None else deaf.why


def _answer_from_code(pause: Pause) -> str:
    if pause.kind == "approval":
        return "run.approve() or run.deny()"
    return f"run.answer(value, pause={pause.id!r})"


def cannot_wait(run: ViewedRun, deaf: _Deaf) -> CannotWaitHere:
    """The error a cell awaiting ``run`` at its open pause fails with, saying what to do."""
    pause = run.pauses[0]
    where = pause.path or pause.node
    return CannotWaitHere(
        f"run {run.thread!r} of graph {run.plan.name!r} waits at {where!r} ({pause.kind}) for an answer that "
        f"cannot reach it while this cell awaits the run: {deaf.why}. The run goes on, waiting: {deaf.click}; "
        f"or answer from code before `await run`: {_answer_from_code(pause)}"
    )


async def _hello(seconds: float) -> bool:
    """Whether a browser says hello within ``seconds`` (its view's message comes when it will)."""
    loop = asyncio.get_running_loop()
    end = loop.time() + seconds
    while not Browser.seen and loop.time() < end:
        await asyncio.sleep(0.05)
    return Browser.seen


async def wait_in_cell(run: ViewedRun, waiting: Coroutine[Any, Any, T]) -> T:
    """Await ``waiting`` (the run's result), failing at once with :class:`CannotWaitHere` if
    the run opens a pause nothing answers while a cell of a deaf kernel awaits it.

    Where the kernel hears clicks, or outside a cell, it is ``await waiting``.
    """
    if _deafness() is None or not in_cell():
        return await waiting
    result = asyncio.ensure_future(waiting)
    loop = asyncio.get_running_loop()
    news: asyncio.Future[None] = loop.create_future()

    def listen(event: Any) -> None:
        if event.type in ("interrupt", "done") and not news.done():
            news.set_result(None)

    stop = run.subscribe(listen, steps=False)
    try:
        while not result.done():
            if run.pauses:
                deaf = _deafness()
                if deaf is _VOILA and await _hello(VOILA_HELLO):
                    deaf = _deafness()
                if deaf is not None and run.pauses:
                    raise cannot_wait(run, deaf)
            await asyncio.wait((result, news), return_when=asyncio.FIRST_COMPLETED)
            if news.done():
                news = loop.create_future()
        return result.result()
    finally:
        stop()
        if not result.done():
            result.cancel()  # (the wait, not the run: the run goes on)
