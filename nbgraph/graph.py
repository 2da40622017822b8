"""The Graph builder: named nodes, edges tried in order, routers, build-time validation.

A ``Graph`` is a mutable description. ``compile()`` checks every rule at once and
freezes the description into a ``Compiled`` graph whose per-step lookups are plain
tuple and dict accesses; a running ``Run`` keeps its own ``Compiled`` so redefining
the graph meanwhile never disturbs it.
"""

from __future__ import annotations

import inspect
import warnings
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from .errors import GraphValidationError, NoEdgeMatched, RoutingError, did_you_mean
from .history import FiredEdge
from .state import Schema

if TYPE_CHECKING:
    from .checkpoint import Checkpointer
    from .engine import Budget, Run, RunResult
    from .events import Event

__all__ = [
    "END",
    "START",
    "Edge",
    "End",
    "Goto",
    "Graph",
    "GraphWarning",
    "RouteDecision",
]

START = "__start__"
"""The entry point: ``add_edge(START, "first")``."""
END = "__end__"
"""The exit: an edge to END finishes the run with outcome ``done``."""

OnMaxSteps = Literal["return_last", "raise", "flag"]
_ON_MAX_STEPS = ("return_last", "raise", "flag")


class GraphWarning(UserWarning):
    """A graph that will run but is probably not what was meant (an unreachable node)."""


@dataclass(frozen=True, slots=True)
class Goto:
    """Returned by a node: go to ``node`` next, ignoring its edges, after applying ``update``."""

    node: str
    update: Mapping[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class End:
    """Returned by a node: finish the run after applying ``update``."""

    update: Mapping[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class Edge:
    """One edge. ``when`` is None for an unconditional edge, which always matches."""

    source: str
    target: str
    when: Callable[..., Any] | None = None
    label: str | None = None

    @property
    def unconditional(self) -> bool:
        return self.when is None

    def describe(self) -> str:
        condition = "always" if self.when is None else f"if {self.label}"
        return f"{self.source} -> {self.target} ({condition})"


@dataclass(frozen=True, slots=True)
class Router:
    """A routing function: ``fn(state) -> target name``, checked against ``targets``."""

    source: str
    fn: Callable[..., Any]
    targets: tuple[str, ...] | None
    label: str


@dataclass(frozen=True, slots=True)
class RouteDecision:
    """Why routing out of ``source`` chose ``target``.

    ``checks`` lists each candidate tried, in order, with what its condition gave.
    """

    source: str
    target: str
    label: str | None
    unconditional: bool
    checks: tuple[tuple[str, str, Any], ...] = ()

    def explain(self) -> str:
        lines = [f"{self.source} -> {self.target}" + (f"  [{self.label}]" if self.label else "")]
        for target, label, value in self.checks:
            lines.append(f"  {self.source} -> {target}: {label} = {value!r}")
        return "\n".join(lines)


@dataclass(frozen=True, slots=True)
class NodeSpec:
    """A node with its calling convention resolved once, at compile time."""

    name: str
    fn: Callable[..., Any]
    takes_ctx: bool
    is_async: bool
    approval: bool = False
    on_deny: str | None = None
    feedback: bool = True

    @property
    def kind(self) -> str:
        return getattr(self.fn, "nbgraph_kind", "function")


@dataclass(frozen=True, slots=True)
class _CompiledEdge:
    target: str
    when: Callable[..., Any] | None
    takes_ctx: bool
    label: str | None
    fired: FiredEdge


@dataclass(frozen=True, slots=True)
class Compiled:
    """A validated, frozen graph: what the engine walks."""

    name: str
    schema: Schema
    nodes: Mapping[str, NodeSpec]
    edges: Mapping[str, tuple[_CompiledEdge, ...]]
    routers: Mapping[str, tuple[Router, bool, tuple[str, ...], Mapping[str, FiredEdge]]]
    max_steps: int
    on_max_steps: OnMaxSteps
    max_same_node: int
    wants_ctx: frozenset[str]
    """Nodes whose function, conditions or router take a ``ctx``."""
    all_sync: bool
    """No node is async: a run can be driven without an event loop."""

    def next_edge(self, source: str, view: Any, ctx: Any = None) -> FiredEdge:
        """The edge routing takes out of ``source`` (the engine's per-step call)."""
        edges = self.edges.get(source)
        if edges is not None:
            for edge in edges:
                if edge.when is None or _holds(edge, source, view, ctx):
                    return edge.fired
            raise _no_match(source, edges)
        return self._routed(source, view, ctx)

    def route(self, source: str, view: Any, ctx: Any = None) -> RouteDecision:
        """Like :meth:`next_edge`, recording each candidate's condition value."""
        checks: list[tuple[str, str, Any]] = []
        edges = self.edges.get(source)
        if edges is None:
            fired = self._routed(source, view, ctx)
            checks.append((fired.target, fired.label or "router", fired.target))
            return RouteDecision(source, fired.target, fired.label, False, tuple(checks))
        for edge in edges:
            held = True if edge.when is None else _holds(edge, source, view, ctx)
            checks.append((edge.target, edge.label or "always", held))
            if held:
                return RouteDecision(source, edge.target, edge.label, edge.when is None, tuple(checks))
        raise _no_match(source, edges)

    def start_edge(self, target: str) -> FiredEdge:
        """The edge from START to ``target`` as declared (for traces of resumed runs)."""
        for edge in self.edges.get(START, ()):
            if edge.target == target:
                return edge.fired
        return FiredEdge(START, target)

    def _routed(self, source: str, view: Any, ctx: Any) -> FiredEdge:
        router, takes_ctx, valid, fired = self.routers[source]
        try:
            target = router.fn(view, ctx) if takes_ctx else router.fn(view)
        except Exception as exc:
            raise RoutingError(
                f"router {router.label!r} of node {source!r} raised {type(exc).__name__}: {exc}",
                node=source,
            ) from exc
        edge = fired.get(target) if isinstance(target, str) else None
        if edge is None:
            raise RoutingError(
                f"router {router.label!r} of node {source!r} returned {target!r}, which is not "
                f"one of its targets: {', '.join(valid)}"
                + (did_you_mean(target, valid) if isinstance(target, str) else ""),
                node=source,
            )
        return edge


def _holds(edge: _CompiledEdge, source: str, view: Any, ctx: Any) -> bool:
    assert edge.when is not None
    try:
        return bool(edge.when(view, ctx) if edge.takes_ctx else edge.when(view))
    except Exception as exc:
        raise RoutingError(
            f"the condition of edge {source} -> {edge.target} [{edge.label}] raised "
            f"{type(exc).__name__}: {exc}",
            node=source,
        ) from exc


def _no_match(source: str, edges: tuple[_CompiledEdge, ...]) -> NoEdgeMatched:
    return NoEdgeMatched(
        source, [f"-> {e.target}" + (" (unconditional)" if e.when is None else f" if {e.label}") for e in edges]
    )


def _takes_ctx(fn: Callable[..., Any], what: str) -> bool:
    """Whether ``fn`` wants ``(state, ctx)`` rather than ``(state)``."""
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return False
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    if not positional and not any(p.kind is p.VAR_POSITIONAL for p in params):
        raise TypeError(f"{what} must accept the state as its first argument: {fn!r}")
    if len(positional) < 2:
        return any(p.kind is p.VAR_POSITIONAL for p in params)
    # `lambda s, name=name: ...` binds a loop variable; only a required or `ctx` slot wants ctx.
    second = positional[1]
    return second.default is second.empty or second.name == "ctx"


def _is_async(fn: Callable[..., Any]) -> bool:
    return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(
        getattr(fn, "__call__", None)
    )


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
        self._schema = Schema(state)
        self._nodes: dict[str, NodeSpec] = {}
        self._edges: list[Edge] = []
        self._routers: dict[str, Router] = {}
        self._listeners: list[Callable[[Event], Any]] = []
        self._compiled: Compiled | None = None

    # -- building -----------------------------------------------------------------

    def add_node(
        self,
        name: str,
        fn: Callable[..., Any],
        *,
        approval: bool = False,
        on_deny: str | None = None,
        feedback: bool = True,
        replace: bool = False,
    ) -> Graph:
        """Add a node: ``fn(state)`` or ``fn(state, ctx)``, sync or async.

        ``approval=True`` pauses after the node until a person approves or denies;
        ``on_deny`` names the node to go to on a denial (default: end ``denied``).
        ``feedback=False`` turns off revision feedback for LLM nodes on revisits.
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
        self._nodes[name] = NodeSpec(
            name=name,
            fn=fn,
            takes_ctx=_takes_ctx(fn, f"node {name!r}"),
            is_async=_is_async(fn),
            approval=approval,
            on_deny=on_deny,
            feedback=feedback,
        )
        self._compiled = None
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
        self._compiled = None
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
        self._routers[source] = Router(
            source, fn, tuple(targets) if targets is not None else None, _label_of(fn, "router")
        )
        self._compiled = None
        return self

    def add_listener(self, listener: Callable[[Event], Any]) -> Graph:
        """Call ``listener(event)`` for every event of every run of this graph."""
        self._listeners.append(listener)
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

    # -- validation ---------------------------------------------------------------

    def compile(self) -> Compiled:
        """Validate the graph (every problem listed at once) and freeze it for running.

        Raises:
            GraphValidationError: the graph breaks one or more build rules.
        """
        if self._compiled is not None:
            return self._compiled
        problems: list[str] = []
        nodes = self._nodes
        known = set(nodes)
        if not isinstance(self.name, str) or not self.name.strip():
            problems.append("the graph name is empty")
        if not nodes:
            problems.append("the graph has no nodes; add one with add_node(name, fn)")
        if not isinstance(self.max_steps, int) or self.max_steps < 1:
            problems.append(f"max_steps must be an integer >= 1, got {self.max_steps!r}")
        if not isinstance(self.max_same_node, int) or self.max_same_node < 1:
            problems.append(f"max_same_node must be an integer >= 1, got {self.max_same_node!r}")
        if self.on_max_steps not in _ON_MAX_STEPS:
            problems.append(
                f"on_max_steps must be one of {', '.join(_ON_MAX_STEPS)}, got {self.on_max_steps!r}"
            )

        out: dict[str, list[Edge]] = {}
        for edge in self._edges:
            where = f"edge {edge.source} -> {edge.target}"
            if edge.source == END:
                problems.append(f"{where}: END is terminal; no edge may leave it")
            elif edge.source != START and edge.source not in known:
                problems.append(
                    f"{where}: unknown source node {edge.source!r}{did_you_mean(edge.source, known)}"
                )
            if edge.target == START:
                problems.append(f"{where}: no edge may lead back to START")
            elif edge.target != END and edge.target not in known:
                problems.append(
                    f"{where}: unknown target node {edge.target!r}{did_you_mean(edge.target, known)}"
                )
            out.setdefault(edge.source, []).append(edge)

        for source, router in self._routers.items():
            if source == END:
                problems.append("a router cannot leave END")
            elif source != START and source not in known:
                problems.append(f"router {router.label!r}: unknown source node {source!r}{did_you_mean(source, known)}")
            if source in out:
                problems.append(
                    f"node {source!r} has both edges and a router; give it one or the other"
                )
            for target in router.targets or ():
                if target != END and target not in known:
                    problems.append(
                        f"router {router.label!r} of {source!r}: unknown target {target!r}"
                        f"{did_you_mean(target, known)}"
                    )

        if START not in out and START not in self._routers:
            problems.append(
                "the graph has no start; add an edge from START, e.g. add_edge(START, "
                f"{next(iter(nodes), 'first_node')!r})"
            )
        for name, spec in nodes.items():
            if name not in out and name not in self._routers:
                problems.append(
                    f"node {name!r} has no outgoing edge; add one, e.g. add_edge({name!r}, END)"
                )
            if spec.on_deny is not None and spec.on_deny != END and spec.on_deny not in known:
                problems.append(
                    f"node {name!r}: on_deny target {spec.on_deny!r} is not a node"
                    f"{did_you_mean(spec.on_deny, known)}"
                )
        if problems:
            raise GraphValidationError(str(self.name), problems)

        unreachable = self._unreachable(out)
        if unreachable:
            warnings.warn(
                f"graph {self.name!r}: node(s) {', '.join(map(repr, unreachable))} cannot be "
                "reached from START by any edge or router target",
                GraphWarning,
                stacklevel=2,
            )

        edges = {
            source: tuple(
                _CompiledEdge(
                    e.target,
                    e.when,
                    e.when is not None and _takes_ctx(e.when, f"condition of {source} -> {e.target}"),
                    e.label,
                    FiredEdge(source, e.target, e.label, e.when is None),
                )
                for e in group
            )
            for source, group in out.items()
        }
        routers = {}
        for source, router in self._routers.items():
            valid = router.targets if router.targets is not None else (*nodes, END)
            routers[source] = (
                router,
                _takes_ctx(router.fn, f"router of {source!r}"),
                valid,
                {target: FiredEdge(source, target, router.label, False) for target in valid},
            )
        wants_ctx = frozenset(
            name
            for name, spec in nodes.items()
            if spec.takes_ctx
            or any(e.takes_ctx for e in edges.get(name, ()))
            or (name in routers and routers[name][1])
        )
        self._compiled = Compiled(
            name=self.name,
            schema=self._schema,
            nodes=dict(nodes),
            edges=edges,
            routers=routers,
            max_steps=self.max_steps,
            on_max_steps=self.on_max_steps,
            max_same_node=self.max_same_node,
            wants_ctx=wants_ctx,
            all_sync=not any(spec.is_async for spec in nodes.values()),
        )
        return self._compiled

    def _unreachable(self, out: Mapping[str, list[Edge]]) -> list[str]:
        seen: set[str] = set()
        frontier = [START]
        while frontier:
            source = frontier.pop()
            targets: list[str] = [e.target for e in out.get(source, ())]
            spec = self._nodes.get(source)
            if spec is not None and spec.on_deny:
                targets.append(spec.on_deny)
            router = self._routers.get(source)
            if router is not None:
                if router.targets is None:
                    return []  # a router without declared targets may go anywhere
                targets.extend(router.targets)
            for target in targets:
                if target not in seen and target != END:
                    seen.add(target)
                    frontier.append(target)
        return [name for name in self._nodes if name not in seen]

    # -- routing ------------------------------------------------------------------

    def route(self, state: Any, source: str = START) -> RouteDecision:
        """Evaluate routing out of ``source`` for ``state`` without running any node.

        Returns the :class:`RouteDecision` with each candidate's condition value.

        Raises:
            NoEdgeMatched: no edge out of ``source`` held.
            RoutingError: a condition or router raised, or returned an unknown name.
        """
        compiled = self.compile()
        if source not in compiled.edges and source not in compiled.routers:
            raise ValueError(
                f"graph {self.name!r} has no node {source!r}{did_you_mean(source, compiled.nodes)}"
            )
        view = compiled.schema.view(compiled.schema.initial(state))
        return compiled.route(source, view, None)

    # -- running (implemented in engine.py) ---------------------------------------

    def invoke(self, input: Any = None, **options: Any) -> RunResult:
        """Run to the end and return the :class:`RunResult` (see :func:`nbgraph.engine.invoke`)."""
        from .engine import invoke

        return invoke(self, input, **options)

    async def ainvoke(self, input: Any = None, **options: Any) -> RunResult:
        """Async :meth:`invoke`."""
        from .engine import Run

        return await Run(self, input, **options).execute()

    def start(self, input: Any = None, *, display: bool | None = None, **options: Any) -> Run:
        """Start a run as a task in the running event loop and return its :class:`Run` handle.

        In a Jupyter kernel a live view of the run is displayed (``display=False``
        turns that off). Pauses wait for answers from the view or from
        ``run.answer`` / ``run.approve`` / ``run.deny``; ``await run`` gives the result.
        """
        from ._display import show_run
        from .engine import Run

        run = Run(self, input, live=True, **options).launch()
        if display is not False:
            show_run(run)
        return run

    def astream(self, input: Any = None, **options: Any) -> Any:
        """Async-iterate the run's events as they happen."""
        from .engine import Run

        return Run(self, input, **options).stream()

    def resume(self, thread: str, answer: Any = None, *, checkpointer: Checkpointer | None = None, **options: Any) -> RunResult:
        """Continue an interrupted, failed or aborted run from its last checkpoint."""
        from .engine import invoke_resume

        return invoke_resume(self, thread, answer, checkpointer=checkpointer, **options)

    async def aresume(self, thread: str, answer: Any = None, *, checkpointer: Checkpointer | None = None, **options: Any) -> RunResult:
        """Async :meth:`resume`."""
        from .engine import Run

        run = Run.from_checkpoint(self, thread, answer, checkpointer=checkpointer, **options)
        return await run.execute()

    def fork(self, run_or_thread: Any, *, step: int, update: Mapping[str, Any] | None = None, checkpointer: Checkpointer | None = None, **options: Any) -> RunResult:
        """Start a new run from the checkpoint after ``step`` with the graph as defined now."""
        from .engine import fork

        return fork(self, run_or_thread, step=step, update=update, checkpointer=checkpointer, **options)

    # -- export -------------------------------------------------------------------

    def to_mermaid(self) -> str:
        """The graph as mermaid ``flowchart TD`` text."""
        from .export import to_mermaid

        return to_mermaid(self)

    def to_dag(self) -> dict[str, Any]:
        """The graph as DAG JSON (nodes; edges with from, to, label, unconditional)."""
        from .export import to_dag

        return to_dag(self)

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, Any]:
        from ._display import graph_mimebundle

        return graph_mimebundle(self)

    def __repr__(self) -> str:
        return f"<Graph {self.name!r}: {len(self._nodes)} nodes, {len(self._edges) + len(self._routers)} edges/routers>"
