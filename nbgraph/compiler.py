"""The compiler: build-time validation, and the plan a graph's declarations compile to.

Everything the walker would otherwise work out per step is resolved here once:
each node's calling convention, its routing (a hop it always takes, or the
edges to try in order), and the frames each hop leads to.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Collection, Mapping
from typing import TYPE_CHECKING, Any

from typing_extensions import is_typeddict

from .errors import GraphValidationError, did_you_mean
from .history import FiredEdge, Frame
from .names import END, START
from .plan import (
    Breakpoints,
    Edge,
    FirstMatch,
    Hop,
    NodePlan,
    NodeSpec,
    Plan,
    RoutedBy,
    Router,
    takes_ctx,
)
from .state import Schema

if TYPE_CHECKING:
    from .graph import Graph

__all__ = ["GraphWarning", "compile_graph"]

ON_MAX_STEPS = ("return_last", "raise", "flag")


class GraphWarning(UserWarning):
    """A graph that will run but is probably not what was meant (an unreachable node)."""


def compile_graph(graph: Graph, _within: tuple[str, ...] = ()) -> Plan:
    """Check every build rule of ``graph`` at once and build its :class:`Plan`.

    Raises:
        GraphValidationError: the graph breaks one or more build rules (a sub-graph's
            problems are listed under the node that runs it).
    """
    declared = graph.nodes
    routers = graph.routers
    out, schema = _validate(graph, declared, graph.edges, routers)
    subplans = _subplans(graph, declared, (*_within, graph.name))
    breakpoints = _breakpoints(graph, declared, subplans)
    unreachable = _unreachable(declared, routers, out)
    if unreachable:
        warnings.warn(
            f"graph {graph.name!r}: node(s) {', '.join(map(repr, unreachable))} cannot be reached "
            "from START by any edge, router target or declared Goto destination",
            GraphWarning,
            stacklevel=2,
        )
    frames = {name: Frame(name, name) for name in declared}
    joins: dict[str, frozenset[str]] = {}
    for edge in graph.edges:
        if edge.join and edge.target not in joins:  # validated: every join into a node is the same set
            joins[edge.target] = frozenset(edge.join)

    def hop(source: str, target: str, label: str | None, unconditional: bool, fanout: tuple[str, ...] = ()) -> Hop:
        targets = fanout or (target,)
        return Hop(
            FiredEdge(source, target, label, unconditional, fanout),
            tuple(frames[t] for t in targets if t != END),
            joins.get(target) if not fanout else None,
        )

    nodes: dict[str, NodePlan] = {}
    for source in (START, *declared):
        router = routers.get(source)
        if router is not None:
            valid = router.targets if router.targets is not None else (*declared, END)
            routed = RoutedBy(
                router,
                takes_ctx(router.fn, f"router of {source!r}"),
                valid,
                {target: hop(source, target, router.label, False) for target in valid},
            )
            route, decide, fixed, routing_ctx = routed.route, routed.decide, None, routed.takes_ctx
        else:
            edges = FirstMatch(
                source, out.get(source, ()), lambda e: hop(e.source, e.target, e.label, e.when is None, e.fanout)
            )
            route, decide, fixed, routing_ctx = edges.route, edges.decide, edges.fixed, edges.takes_ctx
        spec = declared.get(source) or NodeSpec(START, _never_runs, False, False)
        nodes[source] = NodePlan(
            name=source,
            fn=spec.fn,
            takes_ctx=spec.takes_ctx,
            is_async=spec.is_async,
            approval=spec.approval == "after",
            approval_before=spec.approval == "before",
            timeout=spec.timeout,
            wants_ctx=spec.takes_ctx or routing_ctx,
            fixed=fixed,
            route=route,
            decide=decide,
            frame=frames.get(source) or Frame(START, START),
            spec=spec,
            subplan=subplans.get(source),
            deadline=spec.deadline,
        )
    start = nodes.pop(START)
    return Plan(
        name=graph.name,
        schema=schema,
        nodes=nodes,
        start=start,
        edges=tuple(graph.edges),
        routers=routers,
        max_steps=graph.max_steps,
        on_max_steps=graph.on_max_steps,
        max_same_node=graph.max_same_node,
        all_sync=not any(spec.is_async for spec in declared.values()),
        settle=graph.settle,
        max_concurrency=graph.max_concurrency,
        model=graph.model,
        budget=graph.budget,
        checkpointer=graph.checkpointer,
        listeners=tuple(graph.listeners),
        graph=graph,
        gotos={},
        breakpoints=breakpoints,
        children=tuple(
            seen
            for name, subplan in subplans.items()
            for seen in ((declared[name].graph, declared[name].graph._edits), *subplan.children)
        ),
    )


def _validate(
    graph: Graph, nodes: Mapping[str, NodeSpec], edges: list[Edge], routers: Mapping[str, Router]
) -> tuple[dict[str, list[Edge]], Schema]:
    """Every build rule the graph breaks (its state's included), raised at once; the edges
    out of each node, and the state's schema."""
    problems: list[str] = []
    try:
        schema = Schema(graph.state, identify=_identify_message, graph=str(graph.name))
    except GraphValidationError as exc:
        problems.extend(exc.problems)
    known = set(nodes)
    if not isinstance(graph.name, str) or not graph.name.strip():
        problems.append("the graph name is empty")
    if not nodes:
        problems.append("the graph has no nodes; add one with add_node(name, fn)")
    if not isinstance(graph.max_steps, int) or graph.max_steps < 1:
        problems.append(f"max_steps must be an integer >= 1, got {graph.max_steps!r}")
    if not isinstance(graph.max_same_node, int) or graph.max_same_node < 1:
        problems.append(f"max_same_node must be an integer >= 1, got {graph.max_same_node!r}")
    if graph.settle not in ("fail_fast", "all"):
        problems.append(f"settle must be 'fail_fast' or 'all', got {graph.settle!r}")
    if graph.max_concurrency is not None and (
        not isinstance(graph.max_concurrency, int)
        or isinstance(graph.max_concurrency, bool)
        or graph.max_concurrency < 1
    ):
        problems.append(f"max_concurrency must be None or an integer >= 1, got {graph.max_concurrency!r}")
    if graph.on_max_steps not in ON_MAX_STEPS:
        problems.append(f"on_max_steps must be one of {', '.join(ON_MAX_STEPS)}, got {graph.on_max_steps!r}")

    out: dict[str, list[Edge]] = {}
    joined: dict[str, tuple[str, ...]] = {}
    checked: tuple[str, ...] = ()
    for edge in edges:
        if edge.source == END:
            problems.append(f"{_where(edge)}: END is terminal; no edge may leave it")
        elif edge.source != START and edge.source not in known:
            problems.append(f"{_where(edge)}: unknown source node {edge.source!r}{did_you_mean(edge.source, known)}")
        for target in edge.targets:
            if target == START:
                problems.append(f"{_where(edge)}: no edge may lead back to START")
            elif target != END and target not in known:
                problems.append(f"{_where(edge)}: unknown target node {target!r}{did_you_mean(target, known)}")
        if edge.fanout and (END in edge.fanout or len(set(edge.fanout)) < len(edge.fanout)):
            problems.append(
                f"{_where(edge)}: a fan-out runs distinct nodes together; END and repeats have no place in it"
            )
        if edge.each is not None and edge.target == END:
            problems.append(f"{_where(edge)}: a map (each=) runs a node per item; END is not one")
        # A join of n nodes is n edges sharing one tuple: checked once, not n times over its n names.
        if edge.join and edge.join is not checked:
            checked = edge.join
            if edge.target == END:
                problems.append(
                    f"{_where(edge)}: a join leads into a node, not END; give each node its own edge to END "
                    "(the run ends when every branch has)"
                )
            elif len(set(edge.join)) < len(edge.join) or START in edge.join:
                problems.append(f"{_where(edge)}: a join waits for distinct nodes into a node")
            elif joined.setdefault(edge.target, edge.join) != edge.join:
                problems.append(
                    f"{_where(edge)}: node {edge.target!r} already joins {' & '.join(joined[edge.target])}; "
                    "a node waits for one set of nodes"
                )
        out.setdefault(edge.source, []).append(edge)

    problems.extend(_never_taken(out))
    for source, router in routers.items():
        if source == END:
            problems.append("a router cannot leave END")
        elif source != START and source not in known:
            problems.append(f"router {router.label!r}: unknown source node {source!r}{did_you_mean(source, known)}")
        if source in out:
            problems.append(f"node {source!r} has both edges and a router; give it one or the other")
        for target in router.targets or ():
            if target != END and target not in known:
                problems.append(
                    f"router {router.label!r} of {source!r}: unknown target {target!r}{did_you_mean(target, known)}"
                )

    if START not in out and START not in routers:
        problems.append(
            f"the graph has no start; add an edge from START, e.g. add_edge(START, {next(iter(nodes), 'first_node')!r})"
        )
    for name, spec in nodes.items():
        if name not in out and name not in routers and not spec.destinations:
            problems.append(
                f"node {name!r} has no outgoing edge; add one, e.g. add_edge({name!r}, END), "
                "or declare where its Goto or Send leads with destinations=[...]"
            )
        if spec.on_deny is not None and spec.on_deny != END and spec.on_deny not in known:
            problems.append(
                f"node {name!r}: on_deny target {spec.on_deny!r} is not a node{did_you_mean(spec.on_deny, known)}"
            )
        if spec.timeout is not None and not spec.is_async:
            problems.append(
                f"node {name!r}: timeout= needs an async node (a synchronous one cannot be interrupted); "
                f"make {name} an `async def`"
            )
        for target in spec.destinations or ():
            if target != END and target not in known:
                problems.append(f"node {name!r}: destination {target!r} is not a node{did_you_mean(target, known)}")
    if problems:
        raise GraphValidationError(str(graph.name), problems)
    return out, schema


def _never_taken(out: Mapping[str, list[Edge]]) -> list[str]:
    """Edges that can never be taken: edges out of a node are tried in order and the first that
    holds wins, so any edge after one that always holds is dead. Two unconditional edges out
    of one node are how LangGraph writes a fan-out; here that loses a node without a word."""
    problems: list[str] = []
    for source, edges in out.items():
        always = next((e for e in edges if e.when is None and e.each is None and not e.join), None)
        if always is None:
            continue
        dead = edges[edges.index(always) + 1 :]
        if not dead:
            continue
        shown = " and ".join(_where(edge) for edge in dead[:3])
        if len(dead) > 3:
            shown += f" (and {len(dead) - 3:,} more)"
        targets = list(dict.fromkeys([*always.targets, *(t for edge in dead[:8] for t in edge.targets)]))
        written = "START" if source == START else repr(source)
        fix = (
            f"to run them together write one fan-out edge, add_edge({written}, {targets!r}) "
            f"({'START' if source == START else source} -> {' & '.join(targets)} in a %%graph cell)"
            if all(edge.when is None and edge.each is None for edge in dead) and END not in targets
            else "give the first one a condition (when=), or move it last as the fallback"
        )
        lost = ", ".join(repr(t) for t in dict.fromkeys(t for edge in dead[:3] for t in edge.targets))
        problems.append(
            f"{shown} can never be taken, so {lost} is never reached that way: {_where(always)} always "
            f"holds and edges out of a node are tried in order (the first that holds wins); {fix}"
        )
    return problems


def _where(edge: Edge) -> str:
    """The edge as written, for a problem's message (built only then: a wide join's text is long)."""
    return f"edge {' & '.join(edge.join) or edge.source} -> {' & '.join(edge.targets)}"


def _identify_message(item: Any) -> Any:
    """A dict state's message without an id as the message model ``MessagesState`` keeps."""
    # Imported here: only a dict state given a plain message loads the LLM layer.
    from .llm.messages import identify

    return identify(item)


def _subplans(graph: Graph, nodes: Mapping[str, NodeSpec], within: tuple[str, ...]) -> dict[str, Plan]:
    """The plans of the sub-graphs run as nodes, checked against the graph that runs them."""
    plans: dict[str, Plan] = {}
    problems: list[str] = []
    for name, spec in nodes.items():
        child = spec.graph
        if child is None:
            continue
        if child.name in within or child is graph:
            problems.append(f"node {name!r}: graph {child.name!r} would run inside itself ({' > '.join(within)})")
            continue
        shared = spec.input is None and spec.output is None
        if shared and not _same_state(child.state, graph.state):
            problems.append(
                f"node {name!r}: sub-graph {child.name!r} has state {_state_name(child.state)} and this graph "
                f"{_state_name(graph.state)}; give input= and output= to map between them"
                + _mapping_hint(child.state, graph.state)
            )
        if (spec.input is None) != (spec.output is None):
            problems.append(
                f"node {name!r}: give a sub-graph both input= and output=, or neither (it then shares the state)"
            )
        if spec.approval or spec.timeout is not None:
            problems.append(f"node {name!r}: a sub-graph node takes no approval= or timeout=; give its own nodes those")
        try:
            plans[name] = compile_graph(child, within)
        except GraphValidationError as exc:
            problems.extend(f"node {name!r} (sub-graph {child.name!r}): {problem}" for problem in exc.problems)
    if problems:
        raise GraphValidationError(str(graph.name), problems)
    return plans


def _breakpoints(graph: Graph, nodes: Mapping[str, NodeSpec], subplans: Mapping[str, Plan]) -> Breakpoints | None:
    """The graph's breakpoints as node paths, with its sub-graphs' own under their node's
    path; None when none of them set any.

    Raises:
        GraphValidationError: a breakpoint names no node (with the closest names).
    """
    declared = graph._breakpoints
    nested = [(name, plan.breakpoints) for name, plan in subplans.items() if plan.breakpoints is not None]
    if declared is None and not nested:
        return None
    before: set[str] = set()
    after: set[str] = set()
    problems: list[str] = []
    for where, paths in zip((before, after), declared or ((), ()), strict=True):
        label = "before" if where is before else "after"
        for path in paths:
            problem = _find(path, nodes, subplans)
            if problem is None:
                where.add(path)
            else:
                problems.append(f"breakpoint {label} {path!r}: {problem}")
    if problems:
        raise GraphValidationError(str(graph.name), problems)
    for name, inner in nested:
        before.update(f"{name}/{path}" for path in inner.before)
        after.update(f"{name}/{path}" for path in inner.after)
    return Breakpoints(frozenset(before), frozenset(after))


def _find(path: str, nodes: Collection[str], subplans: Mapping[str, Plan]) -> str | None:
    """Why ``path`` names no node of the graph (None: it names one)."""
    head, _, rest = path.partition("/")
    if head in (START, END):
        return f"{'START' if head == START else 'END'} is not a node; a breakpoint names a node that runs"
    if head not in nodes:
        return f"the graph has no node {head!r}{did_you_mean(head, nodes)}"
    if not rest:
        return None
    plan = subplans.get(head)
    if plan is None:
        return f"node {head!r} is not a sub-graph, so {path!r} names no node inside it"
    problem = _find(
        rest, plan.nodes, {name: node.subplan for name, node in plan.nodes.items() if node.subplan is not None}
    )
    if problem is None:
        return None
    return f"in sub-graph {head!r} (graph {plan.name!r}): {problem.removeprefix('the graph has ')}"


def _state_name(state: Any) -> str:
    return "dict" if state in (None, dict) else getattr(state, "__name__", repr(state))


def _unreachable(
    nodes: Mapping[str, NodeSpec], routers: Mapping[str, Router], out: Mapping[str, list[Edge]]
) -> list[str]:
    """Nodes no path from START reaches; none when where a reachable node goes cannot be known."""
    seen: set[str] = set()
    frontier = [START]
    while frontier:
        source = frontier.pop()
        targets: list[str] = [t for e in out.get(source, ()) for t in e.targets]
        spec = nodes.get(source)
        if spec is not None:
            if spec.on_deny:
                targets.append(spec.on_deny)
            if spec.destinations is not None:
                targets.extend(spec.destinations)
            elif spec.graph is None and _may_goto(spec.fn):
                return []  # a Goto without declared destinations may lead anywhere
        router = routers.get(source)
        if router is not None:
            if router.targets is None:
                return []  # a router without declared targets may go anywhere
            targets.extend(router.targets)
        for target in targets:
            if target not in seen and target != END:
                seen.add(target)
                frontier.append(target)
    return [name for name in nodes if name not in seen]


def _mapping_hint(inner: Any, outer: Any) -> str:
    """How input= passes the fields two states share, to put in an error message."""
    shared = [field for field in _field_names(outer) if field in _field_names(inner)]
    if not shared:
        return ""
    read = "s[{!r}]" if outer is None or outer is dict or is_typeddict(outer) else "s.{}"
    picked = ", ".join(f"{field!r}: {read.format(field)}" for field in shared)
    return (
        f"; they share {', '.join(shared)}: input=lambda s: {{{picked}}} passes those in, and output= returns "
        "the fields it sets here (only those cross back; the sub-graph's own fields stay in it)"
    )


def _field_names(state: Any) -> tuple[str, ...]:
    """The fields a declared state has (none for a dict state)."""
    if state is None or state is dict:
        return ()
    if is_typeddict(state):
        return tuple(state.__annotations__)
    return tuple(getattr(state, "model_fields", ()))


def _same_state(one: Any, other: Any) -> bool:
    """Whether two graphs' states are one type (a dict state is ``dict`` or None)."""
    return one is other or (one in (None, dict) and other in (None, dict))


def _never_runs(state: Any) -> None:
    """START's place in the plan: it routes, it never runs."""


def _may_goto(fn: Callable[..., Any]) -> bool:
    """Whether ``fn`` may return a ``Goto`` or ``Send``: its code names one, or cannot be read."""
    code = getattr(fn, "__code__", None)
    if code is None:
        code = getattr(type(fn).__call__, "__code__", None)  # (a callable object's method)
    if code is None:
        return True
    return _names_goto(code)


def _names_goto(code: Any) -> bool:
    names = (*code.co_names, *code.co_freevars)
    if "Goto" in names or "Send" in names:
        return True
    return any(hasattr(const, "co_names") and _names_goto(const) for const in code.co_consts)
