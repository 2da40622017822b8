"""The Graph builder: named nodes, edges tried in order, routers, build-time validation.

A ``Graph`` is a mutable description. ``compile()`` checks every rule at once and
builds the frozen :class:`~nbgraph.plan.Plan` the engine walks; a running ``Run``
keeps its own plan, so redefining the graph meanwhile never disturbs it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

from . import engine, hooks
from ._running import Running
from .answering import deciders_of
from .compiler import GraphWarning, compile_graph
from .deadlines import Deadline, approval_deadline
from .errors import did_you_mean
from .export import to_dag, to_mermaid
from .names import END, START, End, Goto
from .plan import (
    Breakpoints,
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
    from .engine import Budget
    from .events import Event

__all__ = ["END", "START", "Breakpoints", "Edge", "End", "Goto", "Graph", "GraphWarning", "RouteDecision"]

_PLANNED = frozenset(
    {
        "name",
        "state",
        "max_steps",
        "on_max_steps",
        "max_same_node",
        "budget",
        "checkpointer",
        "model",
        "settle",
        "max_concurrency",
    }
)
"""Graph attributes the plan is built from: setting one means compiling again."""


def _label_of(fn: Callable[..., Any], anonymous: str) -> str:
    name = getattr(fn, "__name__", None) or type(fn).__name__
    return anonymous if name == "<lambda>" else name


class Graph(Running):
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
        settle: when one of several parallel branches fails, ``"fail_fast"`` (the
            default) cancels the others and fails the step; ``"all"`` lets every
            branch finish, records each failure and keeps the others' updates.
        max_concurrency: the most branches that run at once (None: all of them).

    Example::

        g = Graph("count")
        g.add_node("inc", lambda s: {"n": s.n + 1})
        g.add_edge(START, "inc")
        g.add_edge("inc", "inc", when=lambda s: s.n < 3, label="n < 3")
        g.add_edge("inc", END)
        assert g.invoke({"n": 0}).state["n"] == 3
    """

    on_max_steps: OnMaxSteps
    settle: Literal["fail_fast", "all"]

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
        settle: Literal["fail_fast", "all"] = "fail_fast",
        max_concurrency: int | None = None,
    ) -> None:
        self.name = name
        self.state = state
        self.max_steps = max_steps
        self.on_max_steps = on_max_steps
        self.max_same_node = max_same_node
        self.budget = budget
        self.checkpointer = checkpointer
        self.model = model
        self.settle = settle
        self.max_concurrency = max_concurrency
        self._nodes: dict[str, NodeSpec] = {}
        self._edges: list[Edge] = []
        self._routers: dict[str, Router] = {}
        self._listeners: list[Callable[[Event], Any]] = []
        self._breakpoints: tuple[tuple[str, ...], tuple[str, ...]] | None = None
        self._plan: Plan | None = None

    def __setattr__(self, key: str, value: Any) -> None:
        object.__setattr__(self, key, value)
        if key in _PLANNED or (key == "_plan" and value is None):
            object.__setattr__(self, "_plan", None)
            # Counted so that a graph running this one as a sub-graph sees it changed.
            object.__setattr__(self, "_edits", getattr(self, "_edits", 0) + 1)

    # -- building -----------------------------------------------------------------

    def add_node(
        self,
        name: str,
        fn: Callable[..., Any] | Graph,
        *,
        approval: bool | Literal["before", "after"] = False,
        on_deny: str | None = None,
        deadline: Deadline | float | None = None,
        deciders: str | Sequence[str] | None = None,
        feedback: bool = True,
        destinations: Iterable[str] | None = None,
        timeout: float | None = None,
        input: Callable[..., Any] | None = None,
        output: Callable[..., Any] | None = None,
        replace: bool = False,
    ) -> Graph:
        """Add a node: ``fn(state)`` or ``fn(state, ctx)``, sync or async, or another ``Graph``.

        A ``Graph`` as the node runs as a sub-graph: its steps nest under this node
        (paths such as ``outer/research/search``), its own ``max_steps`` applies, and a
        pause inside it pauses this run. By default it works on this graph's state;
        ``input(state) -> its input`` and ``output(its_state) -> update`` map between
        the two when they differ.

        ``approval=True`` (or ``"after"``) pauses after the node, before the run goes on,
        until a person approves its update (showing what it changes and where the run
        goes next) or denies it: a denied update never reaches the state.
        ``approval="before"`` pauses before the node runs, showing the state it would
        run on; a denied node does not run. ``on_deny`` names the node to go to on a
        denial (default: end ``denied``). ``deadline`` bounds how long the approval waits:
        a :class:`~nbgraph.Deadline` (or a number of seconds); when it passes, the approval
        is denied, or approved only with ``Deadline(seconds, then="approve")``, and the
        decision is recorded as made by the deadline. ``deciders`` names who may answer the
        approval (their :func:`~nbgraph.answering.identity`; default: anyone), and the view
        says so.
        ``feedback=False`` turns off revision feedback for LLM nodes on revisits.
        ``destinations`` lists where the node's ``Goto`` commands and ``Send`` items
        may lead: they are drawn as dotted edges, count for reachability, stand in
        for an outgoing edge, and a ``Goto`` or ``Send`` elsewhere is an error. ``timeout`` cancels an async node that runs longer (time waiting for a
        person does not count); the run ends ``failed`` saying so, resumable.
        ``replace=True`` redefines an existing node (for example to fix it before
        :meth:`resume`).
        """
        if not isinstance(name, str) or not name.strip():
            raise ValueError(f"node name must be a non-empty string, got {name!r}")
        if name in (START, END):
            raise ValueError(f"{name!r} is reserved and cannot be a node name")
        if isinstance(fn, Graph):
            graph, calls_with_ctx, asynchronous = fn, False, True
        elif callable(fn):
            graph, calls_with_ctx, asynchronous = None, takes_ctx(fn, f"node {name!r}"), is_async(fn)
        else:
            raise TypeError(
                f"node {name!r} must be a callable fn(state) or fn(state, ctx), or a Graph, "
                f"got {type(fn).__name__} {fn!r}"
            )
        for what, mapping in (("input", input), ("output", output)):
            if mapping is not None and (graph is None or not callable(mapping)):
                raise TypeError(f"node {name!r}: {what}= is a function, and only a sub-graph node takes one")
        if name in self._nodes and not replace:
            raise ValueError(
                f"node {name!r} is already defined in graph {self.name!r}; pass replace=True to redefine it"
            )
        if isinstance(destinations, str):
            raise TypeError(f"node {name!r}: destinations must be a list of node names, got {destinations!r}")
        if approval not in (True, False, None, "before", "after"):
            raise ValueError(f"node {name!r}: approval must be True, False, 'before' or 'after', got {approval!r}")
        if deadline is not None and approval in (False, None):
            raise ValueError(
                f"node {name!r}: deadline= bounds how long its approval waits; give approval=True or 'before' with it"
            )
        deadline = approval_deadline(deadline, f"node {name!r}")
        if deciders is not None and approval in (False, None):
            raise ValueError(
                f"node {name!r}: deciders= names who may answer its approval; give approval=True or 'before'"
            )
        who = deciders_of(deciders, f"node {name!r}")
        if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout <= 0):
            raise ValueError(f"node {name!r}: timeout must be a number of seconds > 0, got {timeout!r}")
        self._nodes[name] = NodeSpec(
            name=name,
            fn=fn,
            takes_ctx=calls_with_ctx,
            is_async=asynchronous,
            approval="after" if approval is True else approval or None,
            on_deny=on_deny,
            feedback=feedback,
            destinations=tuple(destinations) if destinations is not None else None,
            timeout=timeout,
            graph=graph,
            input=input,
            output=output,
            deadline=deadline,
            deciders=who,
        )
        self._plan = None
        return self

    def add_edge(
        self,
        source: str | Sequence[str],
        target: str | Sequence[str],
        *,
        when: Callable[..., Any] | None = None,
        label: str | None = None,
        each: Callable[..., Any] | None = None,
    ) -> Graph:
        """Add an edge; ``when(state)`` (or ``when(state, ctx)``) makes it conditional.

        Edges out of a node are tried in the order they were added; the first whose
        condition holds wins, and an unconditional edge always matches.

        - ``target`` may list several nodes (``add_edge("plan", ["a", "b"])``): they run
          together, as parallel branches, and their updates fold in the order listed.
        - ``source`` may list several nodes (``add_edge(["a", "b"], "merge")``): a join,
          ``merge`` runs once all of them have finished since it last ran.
        - ``each=fn(state) -> items`` makes a map: ``target`` runs once per item, each
          run a branch with the item as its first argument; routing goes on from
          ``target`` once, when all have settled.
        """
        targets: tuple[str, ...] = (target,) if isinstance(target, str) else tuple(target)
        sources: tuple[str, ...] = (source,) if isinstance(source, str) else tuple(source)
        where = f"edge {' & '.join(map(str, sources))} -> {' & '.join(map(str, targets))}"
        if when is not None and not callable(when):
            raise TypeError(f"{where}: when= must be callable, got {when!r}")
        if each is not None and not callable(each):
            raise TypeError(f"{where}: each= must be callable, got {each!r}")
        if not targets or not sources:
            raise ValueError(f"{where}: an edge needs a source and a target")
        first = targets[0]
        if each is not None and len(targets) > 1:
            raise ValueError(f"{where}: a map (each=) runs one node per item; give one target")
        if len(sources) > 1 and len(targets) > 1:
            raise ValueError(f"{where}: a join waits for several nodes into one; give one target")
        if when is not None and label is None:
            label = _label_of(when, "condition")
        if each is not None and label is None:
            label = f"each {_label_of(each, 'item')}"
        fanout = targets if len(targets) > 1 else ()
        join = sources if len(sources) > 1 else ()
        for one in sources:
            self._edges.append(Edge(one, first, when, label, fanout, each, join))
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

    def breakpoints(self, before: Iterable[str] = (), after: Iterable[str] = ()) -> Graph:
        """Pause runs of this graph before or after the named nodes, for a person to look.

        Names are node names, or paths into sub-graphs (``"research/search"`` is node
        ``search`` of the graph that node ``research`` runs); ``compile()`` checks them.
        A run that reaches one pauses as for an approval, with a :class:`Pause` of kind
        ``"breakpoint"`` answered ``"continue"`` (go on to the next breakpoint),
        ``"step"`` (pause before the next node, wherever it runs) or ``"stop"`` (end the
        run ``aborted``, resumable). Calling it again replaces the breakpoints;
        ``g.breakpoints()`` clears them. The breakpoints are kept with the run's thread:
        a resume keeps them unless the resuming graph has set its own.

        Raises:
            TypeError: ``before`` or ``after`` is not a list of node names.
        """
        lists = []
        for what, names in (("before", before), ("after", after)):
            if isinstance(names, str) or not isinstance(names, Iterable):
                raise TypeError(f"breakpoints({what}=...) takes a list of node names, got {names!r}")
            names = tuple(names)
            for name in names:
                if not isinstance(name, str) or not name.strip():
                    raise TypeError(f"breakpoints({what}=...): a node name is a non-empty string, got {name!r}")
            lists.append(tuple(dict.fromkeys(names)))
        self._breakpoints = (lists[0], lists[1])
        self._plan = None
        return self

    @property
    def declared_breakpoints(self) -> Breakpoints | None:
        """The breakpoints set with :meth:`breakpoints` (None if it was never called: a
        resumed run then keeps those of its thread)."""
        if self._breakpoints is None:
            return None
        return Breakpoints(frozenset(self._breakpoints[0]), frozenset(self._breakpoints[1]))

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
        plan = self._plan
        if plan is None or any(graph._edits != edits for graph, edits in plan.children):
            # (A sub-graph changed since, say a node fixed with replace=True before a resume.)
            plan = self._plan = compile_graph(self)
        return plan

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
            raise ValueError(f"graph {self.name!r} has no node {source!r}{did_you_mean(source, plan.nodes)}")
        schema = plan.schema
        ctx = engine.Context(None, plan, source, 0, visit)
        return plan.route(source, schema.view(schema.initial(state)), ctx)

    # -- export -------------------------------------------------------------------

    def to_mermaid(self) -> str:
        """The graph as mermaid ``flowchart TD`` text."""
        return to_mermaid(self)

    def to_dag(self) -> dict[str, Any]:
        """The graph as DAG JSON (nodes; edges with from, to, label, unconditional)."""
        return to_dag(self)

    def _repr_mimebundle_(
        self, include: Any = None, exclude: Any = None
    ) -> dict[str, Any] | tuple[dict[str, Any], dict[str, Any]]:
        return hooks.graph_mimebundle(self, to_mermaid(self))

    def _display_(self) -> Any:
        # marimo asks this first: the view (it would show the bundle's mermaid as text).
        return hooks.displayed(self, self._repr_mimebundle_)

    def __repr__(self) -> str:
        return f"<Graph {self.name!r}: {len(self._nodes)} nodes, {len(self._edges) + len(self._routers)} edges/routers>"
