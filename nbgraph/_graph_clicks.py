"""What a click in the graph view does in the kernel: one handler for each kind of message
``static/protocol.json`` lets the graph view send (``hello``, ``inspect``, ``toggle-breakpoint``,
``fork``, ``answer``, ``approve``, ``deny``, ``revoke``, ``stop``, ``steer``).

:meth:`GraphView.handle <nbgraph.widget.GraphView.handle>` checks a message against the protocol
and calls the handler of its kind with the view; each asks the view, its observer or its run
through their public doors, so a view of another engine's runs is answered the same way.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from ._observer import Browser, RunObserver
from ._protocol import MessageError, handlers_of
from .answering import Given

if TYPE_CHECKING:
    from .widget import GraphView

__all__ = ["GRAPH_HANDLERS"]


def _hello(view: GraphView, content: dict[str, Any]) -> bool:
    Browser.seen = True  # a browser shows this kernel's views: its people can answer
    return True


def _inspect(view: GraphView, content: dict[str, Any]) -> bool:
    view.reply(view.inspection(content))
    return True


def _toggle_breakpoint(view: GraphView, content: dict[str, Any]) -> bool:
    return view.toggle_breakpoint(content["path"])


def _fork(view: GraphView, content: dict[str, Any]) -> bool:
    step = content.get("step")
    if content.get("onto") == "new":
        if not view.redefined:
            return False  # (a second click: the fork has been made)
        step = view.redefined["step"]
    if step is None:
        raise MessageError(f"a 'fork' message forks from a step or onto 'new', not onto {content.get('onto')!r}")
    view.fork(step)
    return True


def _answer(view: GraphView, content: dict[str, Any]) -> bool:
    return _answer_pause(view, content, content["value"])


def _approve(view: GraphView, content: dict[str, Any]) -> bool:
    return _answer_pause(view, content, {"approved": True, "update": content.get("update")})


def _deny(view: GraphView, content: dict[str, Any]) -> bool:
    return _answer_pause(view, content, False)


def _revoke(view: GraphView, content: dict[str, Any]) -> bool:
    observer = _observed(view)
    if view.engine_run is None:
        raise ValueError("this view's run has no standing approvals to revoke")
    revoked = next((s for s in view.engine_run.standing if s.id == content["standing"]), None)
    view.engine_run.revoke(content["standing"])  # (one not in force is refused, naming those that are)
    if revoked is not None:
        observer.note(f"standing approval of {revoked.tool} revoked: its next call waits for a person")
    return True


def _stop(view: GraphView, content: dict[str, Any]) -> bool:
    _observed(view).run.cancel()
    return True


def _steer(view: GraphView, content: dict[str, Any]) -> bool:
    observer = _observed(view)
    observer.run.steer(content["text"])
    observer.note(f"steer: {content['text']}")
    return True


def _observed(view: GraphView) -> RunObserver:
    if view.observer is None:
        raise ValueError("this view shows a graph, not a run: there is nothing to answer")
    return view.observer


def _answer_pause(view: GraphView, content: dict[str, Any], value: Any) -> bool:
    """Give ``value`` to the pause ``content`` names, as decided on what it showed
    (``shown``, its digest) and why (``reason``), recorded as given in the view.

    False for a pause that is not open (a stale or duplicate click, ignored). A pause that
    shows something else now than what was decided on is refused, and says so."""
    pause_id: str = content["pause_id"]
    given = Given("view", None, _reason(content.get("reason")), content.get("shown"))
    run = _observed(view).run
    if run.done:
        return view.resume(pause_id, value, given)
    if all(pause.id != pause_id for pause in run.pauses):
        return False  # a stale click: that pause was answered already
    run.answer(value, pause=pause_id, shown=given.shown, reason=given.reason, via=given.via)
    return True


_REASON_CHARS = 2000


def _reason(text: Any) -> str | None:
    """The reason typed in a pause's box (None when left empty)."""
    if not isinstance(text, str) or not text.strip():
        return None
    if len(text) > _REASON_CHARS:
        raise ValueError(
            f"a reason is at most {_REASON_CHARS:,} characters, this one has {len(text):,}: say why in fewer words"
        )
    return text.strip()


GRAPH_HANDLERS: Mapping[str, Callable[[GraphView, dict[str, Any]], bool]] = handlers_of(
    "graph",
    {
        "hello": _hello,
        "inspect": _inspect,
        "toggle-breakpoint": _toggle_breakpoint,
        "fork": _fork,
        "answer": _answer,
        "approve": _approve,
        "deny": _deny,
        "revoke": _revoke,
        "stop": _stop,
        "steer": _steer,
    },
)
