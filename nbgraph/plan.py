"""The compiled plan: what ``Graph.compile()`` produces and the engine walks.

A plan is frozen. Each node's record carries everything the walker needs per step,
resolved once: its calling convention, its routing (a hop it always takes, or a
function of the state), and the frames it leads to. Redefining a graph builds a
new plan; a run keeps the plan it started with.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal, NamedTuple

from .deadlines import Deadline
from .errors import NoEdgeMatched, RoutingError, did_you_mean
from .history import FiredEdge, Frame
from .names import END, START, Send
from .state import Schema, to_jsonable

__all__ = [
    "Breakpoints",
    "Edge",
    "Hop",
    "NodePlan",
    "NodeSpec",
    "OnMaxSteps",
    "Plan",
    "RouteDecision",
    "Router",
    "is_async",
    "takes_ctx",
]

OnMaxSteps = Literal["return_last", "raise", "flag"]


# -- what the builder declares ---------------------------------------------------------


class NodeSpec(NamedTuple):
    """A node as declared, with its calling convention resolved once."""

    name: str
    fn: Any
    """The node's function ``fn(state)`` or ``fn(state, ctx)``; for a sub-graph node, its ``Graph``."""
    takes_ctx: bool
    is_async: bool
    approval: Literal["before", "after"] | None = None
    """When a person approves the node: before it runs, or after (before the run goes on)."""
    on_deny: str | None = None
    feedback: bool = True
    destinations: tuple[str, ...] | None = None
    """Where a ``Goto`` from this node may lead (None: not declared)."""
    timeout: float | None = None
    """Seconds the (async) node may run before it is cancelled; waiting for a person does not count."""
    graph: Any = None
    """A sub-graph run as this node (a ``Graph``), or None for a function."""
    input: Callable[..., Any] | None = None
    """A sub-graph's input: ``input(state) -> its input`` (None: it shares this graph's state)."""
    output: Callable[..., Any] | None = None
    """A sub-graph's result: ``output(its_state) -> update`` (None: it shares this graph's state)."""
    deadline: Deadline | None = None
    """How long its approval waits for a person, and what it decides then (``then``: None denies, True approves)."""
    deciders: tuple[str, ...] = ()
    """Who may answer its approval (empty: anyone)."""

    @property
    def kind(self) -> str:
        return "graph" if self.graph is not None else getattr(self.fn, "nbgraph_kind", "function")

    @property
    def tools(self) -> tuple[str, ...]:
        return tuple(getattr(self.fn, "nbgraph_tools", ()) or ())


class Edge(NamedTuple):
    """One edge. ``when`` is None for an unconditional edge, which always matches."""

    source: str
    target: str
    when: Callable[..., Any] | None = None
    label: str | None = None
    fanout: tuple[str, ...] = ()
    """Every target of a static fan-out (they run together; ``target`` is the first)."""
    each: Callable[..., Any] | None = None
    """A map: ``target`` runs once per item of ``each(state)``, the item as its first argument."""
    join: tuple[str, ...] = ()
    """The sources ``target`` waits for: it runs once all of them finished since it last ran."""

    @property
    def unconditional(self) -> bool:
        return self.when is None

    @property
    def targets(self) -> tuple[str, ...]:
        return self.fanout or (self.target,)

    def describe(self) -> str:
        condition = "always" if self.when is None else f"if {self.label}"
        return f"{self.source} -> {' & '.join(self.targets)} ({condition})"


class Router(NamedTuple):
    """A routing function: ``fn(state) -> target name``, checked against ``targets``."""

    source: str
    fn: Callable[..., Any]
    targets: tuple[str, ...] | None
    label: str


class Breakpoints(NamedTuple):
    """Where a run pauses for a person to look: the paths of the nodes to stop ``before``
    they run, and ``after`` they ran (``research/search`` is a node inside sub-graph node
    ``research``)."""

    before: frozenset[str] = frozenset()
    after: frozenset[str] = frozenset()


class RouteDecision(NamedTuple):
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


# -- what the engine walks -------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Hop:
    """Where routing goes after a step: the edge it fired and the frames it leads to."""

    edge: FiredEdge
    frames: tuple[Frame, ...]
    join: frozenset[str] | None = None
    """For an edge into a join: the sources its target waits for."""


Route = Callable[[Any, Any], Hop]
"""``route(state_view, ctx) -> Hop``: routing out of one node."""


@dataclass(frozen=True, slots=True)
class NodePlan:
    """One node, ready to run: the walker reads only these fields per step."""

    name: str
    fn: Callable[..., Any]
    takes_ctx: bool
    is_async: bool
    approval: bool
    """A person approves the node's update before the run goes on."""
    approval_before: bool
    """A person approves before the node runs."""
    timeout: float | None
    wants_ctx: bool
    """The function, a condition or the router takes a ``ctx``: build one per step."""
    fixed: Hop | None
    """The hop routing always takes (one unconditional edge); None when it depends on the state."""
    route: Route
    decide: Callable[[Any, Any], RouteDecision]
    frame: Frame
    spec: NodeSpec
    subplan: Plan | None = None
    """The compiled sub-graph this node runs, if it is one."""
    deadline: Deadline | None = None
    """How long its approval waits, and what it decides when that time has passed."""
    awaited: bool = field(init=False)
    """Its call is awaited: the node is async, or runs a sub-graph (a plain call returns at once)."""
    gated: bool = field(init=False)
    """A person approves it, before or after it runs."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "awaited", self.is_async or self.subplan is not None)
        object.__setattr__(self, "gated", self.approval or self.approval_before)


@dataclass(frozen=True, slots=True)
class Plan:
    """A validated, frozen graph: what the engine walks."""

    name: str
    schema: Schema
    nodes: Mapping[str, NodePlan]
    start: NodePlan
    """Routing out of START, as a node record that never runs."""
    edges: tuple[Edge, ...]
    """The edges as declared (for exports and views)."""
    routers: Mapping[str, Router]
    max_steps: int
    on_max_steps: OnMaxSteps
    max_same_node: int
    all_sync: bool
    """No node is async: a run can be driven without an event loop."""
    model: Any = None
    budget: Any = None
    checkpointer: Any = None
    listeners: tuple[Callable[[Any], Any], ...] = ()
    graph: Any = None
    """The builder this plan was compiled from (shown by views; never read by the engine)."""
    settle: Literal["fail_fast", "all"] = "fail_fast"
    """When one of several branches fails: cancel the others and fail the step, or let all finish."""
    max_concurrency: int | None = None
    """The most branches that run at once (None: all)."""
    gotos: dict[tuple[str, str], Hop] | None = None
    """The hops of ``Goto`` commands, built on first use (the compiler gives each plan its own dict)."""
    children: tuple[tuple[Any, int], ...] = ()
    """Every sub-graph inside (nested ones too) with its edit count when compiled: a
    sub-graph changed since makes this plan stale."""
    breakpoints: Breakpoints | None = None
    """Where runs pause (sub-graphs' own under their node's path); None when neither the
    graph nor a sub-graph set any, so a resumed run keeps those of its thread."""

    def __repr__(self) -> str:
        return f"<Plan {self.name!r}: {len(self.nodes)} nodes>"

    def node(self, name: str) -> NodePlan:
        """The node record for ``name`` (START's routing record for START)."""
        return self.start if name == START else self.nodes[name]

    def goto(self, source: str, target: str) -> Hop:
        """The hop of a ``Goto``/``End`` command from ``source`` (built once per pair)."""
        gotos = self.gotos
        assert gotos is not None
        hop = gotos.get((source, target))
        if hop is None:
            edge = FiredEdge(source, target, "end" if target == END else "goto", False)
            hop = gotos[(source, target)] = Hop(edge, self.frames_to(target))
        return hop

    def frames_to(self, target: str) -> tuple[Frame, ...]:
        return () if target == END else (self.nodes[target].frame,)

    def route(self, source: str, view: Any, ctx: Any) -> RouteDecision:
        """Routing out of ``source``, recording each candidate's condition value."""
        return self.node(source).decide(view, ctx)

    def start_edge(self, target: str) -> FiredEdge:
        """The edge out of START to ``target`` as declared (for the trace of a resumed run)."""
        for edge in self.edges:
            if edge.source == START and edge.target == target:
                return FiredEdge(START, target, edge.label, edge.when is None)
        router = self.routers.get(START)
        return FiredEdge(START, target, router.label if router else None, False)

    def hop_of(self, edge: FiredEdge) -> Hop:
        """The hop for an edge already taken (a restored step's record)."""
        return Hop(edge, self.frames_to(edge.target))

    def with_function(self, name: str, fn: Callable[..., Any]) -> Plan:
        """This plan with node ``name`` calling ``fn`` instead (its edges, options and place unchanged).

        Raises:
            ValueError: no such node, it runs a sub-graph, or ``fn`` is sync and the node has a timeout.
            TypeError: ``fn`` cannot take the state.
        """
        node = self.nodes.get(name)
        if node is None:
            raise ValueError(f"graph {self.name!r} has no node {name!r} to replace{did_you_mean(name, self.nodes)}")
        if node.subplan is not None:
            raise ValueError(
                f"node {name!r} of graph {self.name!r} runs a sub-graph, not a function: it cannot be swapped for one"
            )
        wants = takes_ctx(fn, f"node {name!r}")
        runs_async = is_async(fn)
        if node.timeout is not None and not runs_async:
            raise ValueError(f"node {name!r} has timeout={node.timeout:g}, so its function must be async (async def)")
        spec = node.spec._replace(fn=fn, takes_ctx=wants, is_async=runs_async)
        routing_ctx = getattr(getattr(node.route, "__self__", None), "takes_ctx", node.wants_ctx)
        swapped = replace(
            node,
            fn=fn,
            takes_ctx=wants,
            is_async=runs_async,
            wants_ctx=wants or routing_ctx,
            spec=spec,
        )
        return replace(self, nodes={**self.nodes, name: swapped}, all_sync=self.all_sync and not runs_async)


# -- routing, compiled once per node ---------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Candidate:
    target: str
    when: Callable[..., Any] | None
    takes_ctx: bool
    label: str | None
    hop: Hop
    each: Callable[..., Any] | None = None
    each_ctx: bool = False


class FirstMatch:
    """Edges out of a node, tried in declaration order; the first whose condition holds wins."""

    __slots__ = ("source", "candidates")

    def __init__(self, source: str, edges: Sequence[Edge], hop: Callable[[Edge], Hop]) -> None:
        self.source = source
        self.candidates = tuple(
            _Candidate(
                e.target,
                e.when,
                e.when is not None and takes_ctx(e.when, f"condition of {source} -> {e.target}"),
                e.label,
                hop(e),
                e.each,
                e.each is not None and takes_ctx(e.each, f"each= of {source} -> {e.target}"),
            )
            for e in edges
        )

    @property
    def takes_ctx(self) -> bool:
        return any(c.takes_ctx or c.each_ctx for c in self.candidates)

    @property
    def fixed(self) -> Hop | None:
        """The hop taken whatever the state: the first edge is unconditional (and maps nothing)."""
        if not self.candidates:
            return None  # a node whose Goto or Send picks where it goes
        first = self.candidates[0]
        return first.hop if first.when is None and first.each is None else None

    def route(self, view: Any, ctx: Any) -> Hop:
        for candidate in self.candidates:
            if candidate.when is None or self._holds(candidate, view, ctx):
                return candidate.hop if candidate.each is None else self._map(candidate, view, ctx)
        raise self._no_match()

    def _map(self, candidate: _Candidate, view: Any, ctx: Any) -> Hop:
        """A map edge: a frame per item, each carrying its item as the payload."""
        each = candidate.each
        assert each is not None
        try:
            items = list(each(view, ctx) if candidate.each_ctx else each(view))
        except Exception as exc:
            raise RoutingError(
                f"the map of edge {self.source} -> {candidate.target} [{candidate.label}] raised "
                f"{type(exc).__name__}: {exc}",
                node=self.source,
            ) from exc
        hop = candidate.hop
        frame = hop.frames[0]
        return Hop(hop.edge, tuple(frame._replace(payload=item) for item in items), hop.join)

    def decide(self, view: Any, ctx: Any) -> RouteDecision:
        checks: list[tuple[str, str, Any]] = []
        for candidate in self.candidates:
            held = True if candidate.when is None else self._holds(candidate, view, ctx)
            checks.append((candidate.target, candidate.label or "always", held))
            if held:
                edge = candidate.hop.edge
                return RouteDecision(self.source, edge.target, edge.label, edge.unconditional, tuple(checks))
        raise self._no_match()

    def _holds(self, candidate: _Candidate, view: Any, ctx: Any) -> bool:
        when = candidate.when
        assert when is not None
        try:
            return bool(when(view, ctx) if candidate.takes_ctx else when(view))
        except Exception as exc:
            raise RoutingError(
                f"the condition of edge {self.source} -> {candidate.target} [{candidate.label}] raised "
                f"{type(exc).__name__}: {exc}",
                node=self.source,
            ) from exc

    def _no_match(self) -> NoEdgeMatched:
        return NoEdgeMatched(
            self.source,
            [f"-> {c.target}" + (" (unconditional)" if c.when is None else f" if {c.label}") for c in self.candidates],
        )


class RoutedBy:
    """A router function: ``fn(state) -> target name``, checked against its targets."""

    __slots__ = ("source", "fn", "takes_ctx", "label", "valid", "hops")

    def __init__(self, router: Router, takes_ctx: bool, valid: tuple[str, ...], hops: Mapping[str, Hop]) -> None:
        self.source = router.source
        self.fn = router.fn
        self.takes_ctx = takes_ctx
        self.label = router.label
        self.valid = valid
        self.hops = hops

    def route(self, view: Any, ctx: Any) -> Hop:
        try:
            target = self.fn(view, ctx) if self.takes_ctx else self.fn(view)
        except Exception as exc:
            raise RoutingError(
                f"router {self.label!r} of node {self.source!r} raised {type(exc).__name__}: {exc}",
                node=self.source,
            ) from exc
        if isinstance(target, Send) or (
            isinstance(target, (list, tuple)) and target and all(isinstance(item, Send) for item in target)
        ):
            return self._sends((target,) if isinstance(target, Send) else target)
        hop = self.hops.get(target) if isinstance(target, str) else None
        if hop is None:
            raise RoutingError(
                f"router {self.label!r} of node {self.source!r} returned {target!r}, which is not "
                f"one of its targets: {', '.join(self.valid)}"
                + (did_you_mean(target, self.valid) if isinstance(target, str) else ""),
                node=self.source,
            )
        return hop

    def _sends(self, items: Sequence[Send]) -> Hop:
        """``Send`` items a router returned, as LangGraph's conditional edges may: a branch per
        item, each running its node (one of the router's targets) with the item's payload."""
        frames = []
        for item in items:
            hop = self.hops.get(item.node)
            if hop is None or not hop.frames:
                raise RoutingError(
                    f"router {self.label!r} of node {self.source!r} sent to {item.node!r}, which is not one of its "
                    f"targets: {', '.join(self.valid)}{did_you_mean(item.node, self.valid)}",
                    node=self.source,
                )
            try:
                to_jsonable(item.payload)
            except Exception as exc:
                raise RoutingError(
                    f"router {self.label!r} of node {self.source!r} sent {item.node!r} a payload that cannot be "
                    f"stored as JSON ({exc}); send plain data",
                    node=self.source,
                ) from None
            frames.append(hop.frames[0]._replace(payload=item.payload))
        targets = tuple(dict.fromkeys(frame.node for frame in frames))
        edge = FiredEdge(self.source, targets[0], "send", False, targets if len(targets) > 1 else ())
        return Hop(edge, tuple(frames))

    def decide(self, view: Any, ctx: Any) -> RouteDecision:
        edge = self.route(view, ctx).edge
        return RouteDecision(
            self.source, edge.target, edge.label, False, ((edge.target, edge.label or "router", edge.target),)
        )


# -- calling conventions ---------------------------------------------------------------


def takes_ctx(fn: Callable[..., Any], what: str) -> bool:
    """Whether ``fn`` wants ``(state, ctx)`` rather than ``(state)``.

    Raises:
        TypeError: ``fn`` cannot take the state as its first argument.
    """
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


def is_async(fn: Callable[..., Any]) -> bool:
    return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(type(fn).__call__)
