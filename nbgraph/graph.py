"""The Graph builder: named nodes, edges tried in order, routers, build-time validation.

A ``Graph`` is a mutable description. ``compile()`` checks every rule at once and
builds the frozen :class:`~nbgraph.plan.Plan` the engine walks; a running ``Run``
keeps its own plan, so redefining the graph meanwhile never disturbs it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from . import engine, hooks
from .compiler import GraphWarning, compile_graph
from .errors import did_you_mean
from .export import to_dag, to_mermaid
from .names import END, START, End, Goto
from .plan import (
    Edge,
    NodeSpec,
    OnMaxSteps,
    Plan,
    RouteDecision,
    Router,
    is_async,
    takes_ctx,
)

if TYPE_CHECKING:
    from .checkpoint.base import Checkpointer
    from .engine import Budget, Run, RunResult
    from .events import Event

__all__ = ["END", "START", "Edge", "End", "Goto", "Graph", "GraphWarning", "RouteDecision"]

_PLANNED = frozenset({"name", "state", "max_steps", "on_max_steps", "max_same_node", "budget", "checkpointer", "model"})
"""Graph attributes the plan is built from: setting one means compiling again."""


def _label_of(fn: Callable[..., Any], anonymous: str) -> str:
    name = getattr(fn, "__name__", None) or type(fn).__name__
    return anonymous if name == "<lambda>" else name


class Graph:
    """A graph of named nodes joined by edges, run by the nbgraph engine.

    Args:
        name: shown in errors, the widget and exports.
        state: a pydantic model class (fields may carry reducers via ``Annotated``),
            or ``dict`` / None for a schemaless dict state.
        max_steps: the most node executions a run may take (default 50).
        on_max_steps: ``"return_last"`` ends the run ``done`` with the last state;
            ``"flag"`` does the same and sets ``hit_max_steps``; ``"raise"`` raises
            :class:`MaxStepsExceeded`.
        max_same_node: the most consecutive executions of one node (default 40).
        budget: default :class:`Budget` for runs of this graph.
        checkpointer: default checkpointer for runs of this graph.
        model: default model for LLM nodes that name none.

    Example::

        g = Graph("count")
        g.add_node("inc", lambda s: {"n": s.n + 1})
        g.add_edge(START, "inc")
        g.add_edge("inc", "inc", when=lambda s: s.n < 3, label="n < 3")
        g.add_edge("inc", END)
        assert g.invoke({"n": 0}).state["n"] == 3
    """

    def __init__(
        self,
        name: str,
        state: Any = None,
        *,
        max_steps: int = 50,
        on_max_steps: OnMaxSteps = "return_last",
        max_same_node: int = 40,
        budget: Budget | None = None,
        checkpointer: Checkpointer | None = None,
        model: Any = None,
    ) -> None:
        self.name = name
        self.state = state
        self.max_steps = max_steps
        self.on_max_steps = on_max_steps
        self.max_same_node = max_same_node
        self.budget = budget
        self.checkpointer = checkpointer
        self.model = model
        self._nodes: dict[str, NodeSpec] = {}
        self._edges: list[Edge] = []
        self._routers: dict[str, Router] = {}
        self._listeners: list[Callable[[Event], Any]] = []
        self._plan: Plan | None = None

    def __setattr__(self, key: str, value: Any) -> None:
        object.__setattr__(self, key, value)
        if key in _PLANNED:
            object.__setattr__(self, "_plan", None)

    # -- building -----------------------------------------------------------------

    def add_node(
        self,
        name: str,
        fn: Callable[..., Any],
        *,
        approval: bool = False,
        on_deny: str | None = None,
        feedback: bool = True,
        destinations: Iterable[str] | None = None,
        timeout: float | None = None,
        replace: bool = False,
    ) -> Graph:
        """Add a node: ``fn(state)`` or ``fn(state, ctx)``, sync or async.

        ``approval=True`` pauses after the node until a person approves or denies;
        ``on_deny`` names the node to go to on a denial (default: end ``denied``).
        ``feedback=False`` turns off revision feedback for LLM nodes on revisits.
        ``destinations`` lists where the node's ``Goto`` commands may lead: they are
        drawn as dotted edges, count for reachability, and a ``Goto`` elsewhere is an
        error. ``timeout`` cancels an async node that runs longer (time waiting for a
        person does not count); the run ends ``failed`` saying so, resumable.
        ``replace=True`` redefines an existing node (for example to fix it before
        :meth:`resume`).
        """
        if not isinstance(name, str) or not name.strip():
            raise ValueError(f"node name must be a non-empty string, got {name!r}")
        if name in (START, END):
            raise ValueError(f"{name!r} is reserved and cannot be a node name")
        if not callable(fn):
            raise TypeError(
                f"node {name!r} must be a callable fn(state) or fn(state, ctx), "
                f"got {type(fn).__name__} {fn!r}"
            )
        if name in self._nodes and not replace:
            raise ValueError(
                f"node {name!r} is already defined in graph {self.name!r}; "
                "pass replace=True to redefine it"
            )
        if isinstance(destinations, str):
            raise TypeError(f"node {name!r}: destinations must be a list of node names, got {destinations!r}")
        if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout <= 0):
            raise ValueError(f"node {name!r}: timeout must be a number of seconds > 0, got {timeout!r}")
        self._nodes[name] = NodeSpec(
            name=name,
            fn=fn,
            takes_ctx=takes_ctx(fn, f"node {name!r}"),
            is_async=is_async(fn),
            approval=approval,
            on_deny=on_deny,
            feedback=feedback,
            destinations=tuple(destinations) if destinations is not None else None,
            timeout=timeout,
        )
        self._plan = None
        return self

    def add_edge(
        self,
        source: str,
        target: str,
        *,
        when: Callable[..., Any] | None = None,
        label: str | None = None,
    ) -> Graph:
        """Add an edge; ``when(state)`` (or ``when(state, ctx)``) makes it conditional.

        Edges out of a node are tried in the order they were added; the first whose
        condition holds wins, and an unconditional edge always matches.
        """
        if when is not None and not callable(when):
            raise TypeError(f"edge {source} -> {target}: when= must be callable, got {when!r}")
        if when is not None and label is None:
            label = _label_of(when, "condition")
        self._edges.append(Edge(source, target, when, label))
        self._plan = None
        return self

    def add_router(
        self,
        source: str,
        fn: Callable[..., Any],
        *,
        targets: Iterable[str] | None = None,
    ) -> Graph:
        """Route out of ``source`` with ``fn(state) -> target name`` (a pure function)."""
        if not callable(fn):
            raise TypeError(f"router of {source!r} must be callable, got {fn!r}")
        if source in self._routers:
            raise ValueError(f"node {source!r} already has a router")
        takes_ctx(fn, f"router of {source!r}")  # a router that cannot take the state fails here, not mid-run
        self._routers[source] = Router(
            source, fn, tuple(targets) if targets is not None else None, _label_of(fn, "router")
        )
        self._plan = None
        return self

    def add_listener(self, listener: Callable[[Event], Any]) -> Graph:
        """Call ``listener(event)`` for every event of every run of this graph."""
        self._listeners.append(listener)
        self._plan = None
        return self

    @property
    def nodes(self) -> Mapping[str, NodeSpec]:
        return dict(self._nodes)

    @property
    def edges(self) -> list[Edge]:
        return list(self._edges)

    @property
    def routers(self) -> Mapping[str, Router]:
        return dict(self._routers)

    @property
    def listeners(self) -> list[Callable[[Event], Any]]:
        return list(self._listeners)

    # -- validation ---------------------------------------------------------------

    def compile(self) -> Plan:
        """Validate the graph (every problem listed at once) and freeze it for running.

        Raises:
            GraphValidationError: the graph breaks one or more build rules.
        """
        if self._plan is None:
            self._plan = compile_graph(self)
        return self._plan

    # -- routing ------------------------------------------------------------------

    def route(self, state: Any, source: str = START, *, visit: int = 1) -> RouteDecision:
        """Evaluate routing out of ``source`` for ``state`` without running any node.

        Conditions that read ``ctx`` see ``ctx.visit == visit`` (as if ``source`` had
        just run that many times) and the graph's ``ctx.model``.

        Returns the :class:`RouteDecision` with each candidate's condition value.

        Raises:
            NoEdgeMatched: no edge out of ``source`` held.
            RoutingError: a condition or router raised, or returned an unknown name.
        """
        plan = self.compile()
        if source != START and source not in plan.nodes:
            raise ValueError(
                f"graph {self.name!r} has no node {source!r}{did_you_mean(source, plan.nodes)}"
            )
        schema = plan.schema
        ctx = engine.Context(None, plan, source, 0, visit)
        return plan.route(source, schema.view(schema.initial(state)), ctx)

    # -- running ------------------------------------------------------------------

    def invoke(self, input: Any = None, **options: Any) -> RunResult:
        """Run to the end, synchronously, and return the :class:`RunResult`.

        Options: ``thread``, ``checkpointer``, ``budget``, ``on_event``, and
        ``overwrite=True`` to replace a run the given thread already holds (otherwise
        that is a :class:`ThreadExists` error). Works in scripts and inside a running
        notebook loop. Never waits for a person: a pause ends the run
        ``interrupted``, resumable with :meth:`resume`.
        """
        return engine.invoke(self.compile(), input, **options)

    async def ainvoke(self, input: Any = None, **options: Any) -> RunResult:
        """Async :meth:`invoke`."""
        return await engine.Run(self.compile(), input, **options).execute()

    def start(self, input: Any = None, *, display: bool | None = None, **options: Any) -> Run:
        """Start a run as a task in the running event loop and return its :class:`Run` handle.

        In a Jupyter kernel a live view of the run is displayed (``display=False``
        turns that off). Pauses wait for answers from the view or from
        ``run.answer`` / ``run.approve`` / ``run.deny``; ``await run`` gives the result.
        """
        run = engine.Run(self.compile(), input, live=True, **options).launch()
        if display is not False:
            hooks.run_started(run)
        return run

    def astream(self, input: Any = None, **options: Any) -> Any:
        """Async-iterate the run's events as they happen."""
        return engine.Run(self.compile(), input, **options).stream()

    def resume(
        self,
        run_or_thread: Any,
        answer: Any = None,
        *,
        pause: str | None = None,
        force: bool = False,
        checkpointer: Checkpointer | None = None,
        **options: Any,
    ) -> RunResult:
        """Continue an interrupted, failed or aborted run from its last checkpoint.

        ``run_or_thread`` is the paused run's result (or ``Run``) or its thread id.
        ``answer`` answers its open pause; passing the result binds the answer to that
        pause, so sending it twice cannot answer a later pause (name a pause by its id
        with ``pause=`` when passing a thread id). ``force=True`` takes the thread over
        from a run whose process is gone.

        Raises:
            ResumeError: nothing to resume, or the answer is missing, stale or does not fit.
            ThreadBusy: another live run holds the thread.
        """
        return engine.resume(
            self.compile(), run_or_thread, answer, pause=pause, force=force, checkpointer=checkpointer, **options
        )

    async def aresume(
        self,
        run_or_thread: Any,
        answer: Any = None,
        *,
        pause: str | None = None,
        force: bool = False,
        checkpointer: Checkpointer | None = None,
        **options: Any,
    ) -> RunResult:
        """Async :meth:`resume`."""
        run = engine.reopen(self.compile(), run_or_thread, answer, pause=pause, force=force, checkpointer=checkpointer, **options)
        return await run.execute()

    def fork(self, run_or_thread: Any, *, step: int, update: Mapping[str, Any] | None = None, checkpointer: Checkpointer | None = None, **options: Any) -> RunResult:
        """Start a new run from the checkpoint after ``step`` with the graph as defined now."""
        return engine.fork(self.compile(), run_or_thread, step=step, update=update, checkpointer=checkpointer, **options)

    # -- export -------------------------------------------------------------------

    def to_mermaid(self) -> str:
        """The graph as mermaid ``flowchart TD`` text."""
        return to_mermaid(self)

    def to_dag(self) -> dict[str, Any]:
        """The graph as DAG JSON (nodes; edges with from, to, label, unconditional)."""
        return to_dag(self)

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, Any]:
        return hooks.graph_mimebundle(self, to_mermaid(self))

    def __repr__(self) -> str:
        return f"<Graph {self.name!r}: {len(self._nodes)} nodes, {len(self._edges) + len(self._routers)} edges/routers>"
