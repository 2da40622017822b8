"""IPython magics: ``%%graph``, ``%%node`` and ``%graph``, thin sugar over the Python API.

Every magic has a Python equivalent:

==========================================  ===============================================
magic                                       Python
==========================================  ===============================================
``%%graph NAME`` cell                       ``NAME = nbgraph.dsl.parse(cell, globals(), "NAME")``
``%%graph NAME --record PATH`` cell         ``model=nbgraph.recorded(M, PATH, mode=MODE)`` for the graph, M its
                                            ``--model`` (else the environment's), MODE its ``--record-mode``
``%%node NAME`` cell                        a ``def NAME(state, ctx): ...`` (or ``llm_node(...)``)
``%graph run NAME [INPUT] [--thread T]``    ``run = NAME.start(INPUT)`` (``NAME.invoke`` outside Jupyter)
``%graph show NAME``                        ``display(NAME)``
``%graph route NAME FROM [STATE]``          ``print(NAME.route(STATE, FROM).explain())``
``%graph history RUN``                      ``print(nbgraph.export.history_table(RUN.history))``
``%graph answer RUN [VALUE] [--pause ID]``  ``RUN.answer(VALUE, pause=ID)`` (recorded as given by a magic)
``%graph decisions RUN|STORE [--thread T]`` ``print(nbgraph.decisions(RUN))`` / ``(STORE, thread=T)``
``%graph export NAME --format F``           ``NAME.to_mermaid()`` / ``NAME.to_dag()`` / ``RUN.to_ndjson()``
``%graph list``                             the ``Graph`` objects in your namespace
``%graph sweep NAME [--checkpointer SPEC]``  ``nbgraph.sweep_deadlines(NAME, store)``
==========================================  ===============================================
"""

from __future__ import annotations

import json
import re
import sys
import warnings
from typing import Any

from IPython.core.error import UsageError
from IPython.core.magic import Magics, cell_magic, line_cell_magic, magics_class
from IPython.core.magic_arguments import argument, magic_arguments, parse_argstring
from IPython.display import display, update_display

from . import _display  # noqa: F401  (registers the display hooks)
from ._running import sweep_deadlines
from .checkpoint import MemoryCheckpointer, SQLiteCheckpointer
from .dsl import GraphSyntaxError, NodeDefinition, compile_node_body, parse
from .engine import Run, RunResult
from .export import history_table
from .graph import Graph
from .hooks import in_kernel

__all__ = ["GraphMagics", "load_ipython_extension"]


@magic_arguments()
@argument("name", help="the graph's name; the Graph is bound to this variable")
@argument("--state", help="a pydantic model class in your namespace (default: dict state)")
@argument("--max-steps", type=int, default=50, help="most node executions per run (default 50)")
@argument("--on-max-steps", choices=("return_last", "raise", "flag"), default="return_last")
@argument("--max-same-node", type=int, default=40, help="most consecutive runs of one node (default 40)")
@argument("--model", help="an expression for the default model of LLM nodes")
@argument(
    "--settle",
    metavar="fail_fast|all",
    help="when a parallel branch fails: cancel the others (fail_fast, the default) or let every branch finish (all)",
)
@argument("--max-concurrency", metavar="N", help="most parallel branches that run at once (default: all of them)")
@argument(
    "--checkpointer",
    help="memory, sqlite:PATH, redis://HOST:PORT/DB, postgresql://HOST/DB, or an expression naming a checkpointer",
)
@argument(
    "--record",
    metavar="PATH",
    help="keep the model's exchanges in the NDJSON recording PATH, or give them back from it (see --record-mode)",
)
@argument(
    "--record-mode",
    choices=("record", "replay", "missing"),
    default="missing",
    help="record: call the model, PATH started afresh; replay: never call it; missing (the default): replay "
    "what PATH holds, record the rest",
)
def _graph_cell_args() -> None:
    """``%%graph NAME [options]``: define a graph from edge lines."""


@magic_arguments()
@argument("name", help="the node's name (a function of that name is also bound)")
@argument("--graph", help="only for this graph (default: any graph that names the node)")
@argument("--llm", action="store_true", help="the cell body is the system prompt of an LLM node")
@argument("--tools", default="", help="comma-separated tool functions for --llm")
@argument(
    "--approval",
    nargs="?",
    const="after",
    default=None,
    choices=("before", "after"),
    help="a person approves the node: after it ran (the default), or before it runs",
)
@argument(
    "--approve-tools",
    default="",
    help="comma-separated tools of an --llm node whose every call waits for a person's decision",
)
@argument("--no-feedback", action="store_true", help="no revision feedback on revisits")
def _node_cell_args() -> None:
    """``%%node NAME [options]``: define a node from a function body or a system prompt."""


_GRAPH_DOC = """Define, run and inspect nbgraph graphs.

Cell magic -- define a graph (the edges are the diagram)::

    %%graph NAME [--state MODEL] [--max-steps N] [--on-max-steps return_last|raise|flag]
                 [--max-same-node N] [--model EXPR] [--settle fail_fast|all]
                 [--max-concurrency N] [--checkpointer SPEC]
                 [--record PATH [--record-mode record|replay|missing]]
    START -> research
    research -> analyze if state.has_findings   # the condition text is the label
    research -> summarize                       # fallback: first match wins
    analyze -> summarize -> END                 # chains
    review [approval] -> publish | rewrite | END via route_review
    publish [approval=before] -> END            # a person lets it run, or not

Line magic -- subcommands::

    %graph run NAME [INPUT] [--thread T] [--step]
                                            start a run (live view in Jupyter); --step pauses
                                            before every node (Continue / Step / Stop)
    %graph show NAME                        display the graph
    %graph route NAME FROM [STATE]          which edge fires from FROM, and why
    %graph history RUN                      the steps of a run (a Run or RunResult variable)
    %graph answer RUN [VALUE] [--pause ID]  answer a waiting run's pause (recorded as via="magic")
    %graph decisions RUN|STORE [--thread T] who decided what, when: a run's, a thread's, a store's
    %graph export NAME --format mermaid|json|ndjson
    %graph list                             the graphs in your namespace
    %graph sweep NAME [--checkpointer SPEC] resume the threads of NAME whose pauses are past
                                            their deadline (each takes its deadline's answer)

Run ``%graph help`` or ``%%graph --help`` for the cell options.
"""


def _wants_help(line: str) -> bool:
    # magic_arguments parsers have no --help of their own; answer it before parsing.
    return any(word in ("-h", "--help") for word in line.split())


def _positive(text: str, what: str) -> int:
    """``text`` as an integer of at least 1, or a usage error that says ``what`` it is for."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise UsageError(f"{what} must be a positive integer, got {text!r}")
    return value


def _split_flag(rest: str, flag: str) -> tuple[str, bool]:
    """Pull a ``--flag`` off the end of a line whose start is a Python expression."""
    match = re.search(rf"(?:^|\s)--{flag}\s*$", rest)
    if match is None:
        return rest, False
    return rest[: match.start()], True


def _split_option(rest: str, option: str) -> tuple[str, str | None]:
    """Pull ``--option VALUE`` off the end of a line whose start is a Python expression."""
    match = re.search(rf"(?:^|\s)--{option}(?:\s+|=)(\S+)\s*$", rest)
    if match is None:
        return rest, None
    return rest[: match.start()], match.group(1)


@magics_class
class GraphMagics(Magics):
    """The ``%%graph``, ``%%node`` and ``%graph`` magics of one IPython shell."""

    def __init__(self, shell: Any) -> None:
        super().__init__(shell)
        # Nodes defined with %%node: {graph name or None for any graph: {node: fn}}.
        self.nodes: dict[str | None, dict[str, Any]] = {}
        # What the notebook's name held right after each %%node cell, {(graph, node): value}: a
        # different value later means the notebook defined the name again, after the cell.
        self._left_in_namespace: dict[tuple[str | None, str], Any] = {}

    @property
    def _ns(self) -> dict[str, Any]:
        assert self.shell is not None  # (the magics are registered with a shell)
        return self.shell.user_ns

    # -- %%graph / %graph -------------------------------------------------------------

    @line_cell_magic
    def graph(self, line: str, cell: str | None = None) -> Any:
        if cell is None:
            return self._line(line)
        return self._define(line, cell)

    graph.__doc__ = _GRAPH_DOC

    def _define(self, line: str, cell: str) -> None:
        if _wants_help(line):
            print(_graph_cell_args.parser.format_help())
            return
        args = parse_argstring(_graph_cell_args, line)
        if not args.name.isidentifier():
            raise UsageError(f"%%graph NAME: {args.name!r} is not a valid Python name")
        options: dict[str, Any] = {
            "max_steps": args.max_steps,
            "on_max_steps": args.on_max_steps,
            "max_same_node": args.max_same_node,
        }
        if args.state:
            options["state"] = self._lookup(args.state, "--state")
        if args.model:
            options["model"] = self._eval(args.model, "--model")
        if args.settle is not None:
            if args.settle not in ("fail_fast", "all"):
                raise UsageError(f"%%graph {args.name}: --settle must be fail_fast or all, got {args.settle!r}")
            options["settle"] = args.settle
        if args.max_concurrency is not None:
            options["max_concurrency"] = _positive(args.max_concurrency, f"%%graph {args.name}: --max-concurrency")
        if args.checkpointer:
            options["checkpointer"] = self._checkpointer(args.checkpointer)
        if args.record:
            options["model"] = self._recorded(args.name, options.get("model"), args.record, args.record_mode)
        nodes, overridden = self._node_cells_for(args.name)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            graph = parse(cell, self._ns, args.name, nodes=nodes, first_line=2, **options)
        for warning in caught:
            print(f"warning: {warning.message}", file=sys.stderr)
        for name in sorted(overridden & graph.nodes.keys()):
            print(
                f"warning: node {name}: {name} was defined again after its %%node {name} cell, and this graph uses "
                f"the newer definition; run the %%node {name} cell again to use the cell's code",
                file=sys.stderr,
            )
        # A Run already going keeps its own compiled copy of the previous definition.
        self._ns[args.name] = graph
        from ._redefined import graph_redefined

        for thread in graph_redefined(graph):
            print(f"run {thread} of {args.name} waits: its view offers to fork it onto this definition")
        display_id = f"nbgraph-graph-{args.name}"
        if in_kernel():
            # One view for both outputs: the earlier cell's, updated, and this one's.
            shown = graph._repr_mimebundle_()
            data, metadata = shown if isinstance(shown, tuple) else (shown, {})
            update_display(data, metadata=metadata, display_id=display_id, raw=True)
            display(data, metadata=metadata, display_id=display_id, raw=True)
        else:
            display(graph)

    def _line(self, line: str) -> Any:
        command, _, rest = line.strip().partition(" ")
        rest = rest.strip()
        handler = {
            "run": self._run,
            "show": self._show,
            "route": self._route,
            "history": self._history,
            "answer": self._answer,
            "decisions": self._decisions,
            "export": self._export,
            "list": self._list,
            "sweep": self._sweep,
        }.get(command)
        if command in ("", "help", "-h", "--help"):
            print(_GRAPH_DOC)
            print(_graph_cell_args.parser.format_help())
            return None
        if handler is None:
            raise UsageError(
                f"%graph: unknown subcommand {command!r}; use run, show, route, history, answer, decisions, export, "
                "list or sweep"
            )
        return handler(rest)

    def _run(self, rest: str) -> None:
        rest, stepping = _split_flag(rest, "step")
        rest, thread = _split_option(rest, "thread")
        rest, step_last = _split_flag(rest, "step")
        stepping = stepping or step_last
        name, _, expr = rest.strip().partition(" ")
        if not name:
            raise UsageError("usage: %graph run NAME [INPUT] [--thread T] [--step]")
        graph = self._graph(name)
        data = self._eval(expr, "INPUT") if expr.strip() else {}
        if in_kernel():
            run = graph.start(data, thread=thread, stepping=stepping)
            self._ns["_run"] = run
            print(f"run {run.thread} started; it is bound to _run — `await _run` gives the result")
            if stepping:
                print(
                    "it pauses before every node: Continue / Step / Stop in the view, or _run.answer('continue') / _run.answer('step')"
                )
        else:
            result = graph.invoke(data, thread=thread, stepping=stepping)
            self._ns["_result"] = result
            print(f"{result.outcome}: {' -> '.join(result.path) or '(no steps)'}")
            if result.reason:
                print(result.reason)

    def _show(self, rest: str) -> None:
        display(self._graph(rest.strip()), display_id=f"nbgraph-graph-{rest.strip()}" if in_kernel() else None)

    def _route(self, rest: str) -> None:
        name, _, rest = rest.strip().partition(" ")
        source, _, expr = rest.strip().partition(" ")
        if not name or not source:
            raise UsageError("usage: %graph route NAME FROM [STATE]")
        graph = self._graph(name)
        state = self._eval(expr, "STATE") if expr.strip() else {}
        decision = graph.route(state, "__start__" if source == "START" else source)
        print(decision.explain())

    def _history(self, rest: str) -> None:
        target = self._eval(rest.strip(), "RUN") if rest.strip() else None
        if not isinstance(target, (Run, RunResult)):
            raise UsageError("usage: %graph history RUN, where RUN is a Run or RunResult (e.g. _run)")
        print(history_table(target.history), end="")

    def _answer(self, rest: str) -> None:
        rest, pause = _split_option(rest, "pause")
        name, _, expr = rest.strip().partition(" ")
        if not name:
            raise UsageError("usage: %graph answer RUN [VALUE] [--pause ID], where RUN is a waiting Run (e.g. _run)")
        target = self._eval(name, "RUN")
        if not isinstance(target, Run):
            raise UsageError(
                f"%graph answer: {name!r} is a {type(target).__name__}, not a Run that waits; a run that ended "
                "interrupted goes on with GRAPH.invoke(Resume(RESULT, VALUE))"
            )
        value = self._eval(expr, "VALUE") if expr.strip() else None
        target.answer(value, pause=pause, via="magic")

    def _decisions(self, rest: str) -> None:
        rest, thread = _split_option(rest, "thread")
        if not rest.strip():
            raise UsageError("usage: %graph decisions RUN|STORE [--thread T]")
        from . import decisions

        source = self._eval(rest.strip(), "RUN or STORE")
        try:
            print(decisions(source, thread), end="")
        except TypeError as exc:
            raise UsageError(f"%graph decisions: {exc}") from None

    def _export(self, rest: str) -> None:
        rest, fmt = _split_option(rest, "format")
        name = rest.strip()
        fmt = fmt or "mermaid"
        target = self._eval(name, "NAME") if name else None
        if fmt == "ndjson":
            if isinstance(target, Run):
                target = target.result()
            if not isinstance(target, RunResult):
                raise UsageError("%graph export RUN --format ndjson needs a finished run or its result")
            print(target.to_ndjson(), end="")
        elif fmt == "json":
            if not isinstance(target, (Graph, Run, RunResult)):
                raise UsageError(f"%graph export: {name!r} is not a Graph, Run or RunResult")
            print(json.dumps(target.to_dag(), indent=2))
        elif fmt == "mermaid":
            if not isinstance(target, Graph):
                raise UsageError(f"%graph export: {name!r} is not a Graph")
            print(target.to_mermaid(), end="")
        else:
            raise UsageError(f"%graph export: unknown format {fmt!r}; use mermaid, json or ndjson")

    def _list(self, rest: str) -> None:
        graphs = [(k, v) for k, v in self._ns.items() if isinstance(v, Graph) and not k.startswith("_")]
        if not graphs:
            print("no graphs defined yet; write a %%graph NAME cell")
        for key, graph in graphs:
            print(f"{key}: {len(graph.nodes)} nodes, {len(graph.edges) + len(graph.routers)} edges/routers")

    def _sweep(self, rest: str) -> None:
        rest, spec = _split_option(rest, "checkpointer")
        name = rest.strip()
        if not name or " " in name:
            raise UsageError("usage: %graph sweep NAME [--checkpointer SPEC]")
        graph = self._graph(name)
        results = sweep_deadlines(graph, self._checkpointer(spec) if spec else None)
        if not results:
            print(f"no thread of {name} waits at a pause past its deadline")
        for result in results:
            print(f"{result.thread}: {result.outcome}" + (f" ({result.reason})" if result.reason else ""))

    # -- %%node -----------------------------------------------------------------------

    @cell_magic
    def node(self, line: str, cell: str) -> None:
        """Define a node: the body is a function body (``state``, ``ctx`` in scope, ``await``
        allowed, ``return`` the update) or, with ``--llm``, the node's system prompt.

        Python equivalent: ``def NAME(state, ctx): ...`` then ``g.add_node("NAME", NAME)``.
        """
        if _wants_help(line):
            print(_node_cell_args.parser.format_help())
            return
        args = parse_argstring(_node_cell_args, line)
        name = args.name
        if not name.isidentifier():
            raise UsageError(f"%%node NAME: {name!r} is not a valid Python name")
        if args.llm:
            fn = self._llm_node(name, cell, args)
        else:
            if args.tools or args.approve_tools:
                raise UsageError("%%node --tools only applies to --llm nodes (and --approve-tools with it)")
            fn = compile_node_body(name, cell, self._ns)
        options = {"approval": args.approval or False, "feedback": not args.no_feedback}
        self._warn_if_shadowing(name, args.graph)
        self.nodes.setdefault(args.graph, {})[name] = NodeDefinition(fn, options)
        if args.graph is None:
            # A node for any graph is also a plain function of the notebook; one scoped to
            # a graph must not shadow a same-named function other graphs use.
            self._ns[name] = fn
        self._left_in_namespace[args.graph, name] = self._ns.get(name)
        # Redefine the node in an existing graph, e.g. to fix it before resuming a failed run.
        names = {args.graph} if args.graph else set()
        for graph in self._graphs_using(name, args.graph):
            graph.add_node(name, fn, replace=True, **options)
            names.add(graph.name)
        if names:
            from ._redefined import node_redefined

            for thread in node_redefined(name, fn, names):
                print(
                    f"node {name}: its new code is swapped into run {thread}, which waits (from the node's next call on)"
                )

    def _node_cells_for(self, graph: str) -> tuple[dict[str, Any], set[str]]:
        """The %%node definitions a ``%%graph graph`` cell uses, and the names the notebook
        defined again after their %%node cell, which the graph takes from the notebook instead:
        the definition run last wins, as everywhere else in a notebook."""
        nodes: dict[str, Any] = {}
        overridden: set[str] = set()
        for scope in (None, graph):
            for name, definition in self.nodes.get(scope, {}).items():
                now = self._ns.get(name)
                if now is not self._left_in_namespace.get((scope, name)) and callable(now):
                    overridden.add(name)
                    nodes.pop(name, None)
                else:
                    overridden.discard(name)
                    nodes[name] = definition
        return nodes, overridden

    def _warn_if_shadowing(self, name: str, graph: str | None) -> None:
        """Say so when a %%node cell hides a function of the same name the notebook defined
        (by a def or an import), which graphs would otherwise have used."""
        before = self._ns.get(name)
        if (
            not callable(before)
            or isinstance(before, Graph)
            or any(definition.fn is before for scope in self.nodes.values() for definition in scope.values())
        ):
            return
        who = f"graph {graph} uses" if graph else "graphs defined from now on use"
        print(
            f"warning: %%node {name} hides the function {name} defined earlier in this notebook: {who} "
            f"this cell's code (rename one of them to keep both)",
            file=sys.stderr,
        )

    def _graphs_using(self, node: str, only: str | None) -> list[Graph]:
        found = []
        for value in self._ns.values():
            if isinstance(value, Graph) and node in value.nodes and (only is None or value.name == only):
                found.append(value)
        return found

    def _llm_node(self, name: str, prompt: str, args: Any) -> Any:
        from .llm import llm_node

        tools = [self._lookup(t.strip(), "--tools") for t in args.tools.split(",") if t.strip()]
        approved = {t.strip(): True for t in args.approve_tools.split(",") if t.strip()}
        try:
            return llm_node(
                system=prompt.strip(), tools=tools, approval=approved, feedback=not args.no_feedback, name=name
            )
        except ValueError as exc:
            raise UsageError(f"%%node {name}: {exc}") from None

    # -- helpers ----------------------------------------------------------------------

    def _graph(self, name: str) -> Graph:
        value = self._ns.get(name)
        if not isinstance(value, Graph):
            known = [k for k, v in self._ns.items() if isinstance(v, Graph)]
            hint = f"; graphs defined: {', '.join(known)}" if known else "; define one with a %%graph cell"
            raise UsageError(f"{name!r} is not a graph{hint}")
        return value

    def _lookup(self, name: str, what: str) -> Any:
        if name not in self._ns:
            raise UsageError(f"{what}: {name!r} is not defined in the notebook")
        return self._ns[name]

    def _eval(self, expr: str, what: str) -> Any:
        try:
            return eval(expr, self._ns)  # the user's own expression, in their namespace
        except Exception as exc:
            raise UsageError(f"{what}: could not evaluate {expr!r}: {type(exc).__name__}: {exc}") from None

    def _recorded(self, graph: str, model: Any, path: str, mode: str) -> Any:
        """The graph's model, recorded: the one ``--model`` gives, or the one its LLM nodes would
        call without it (the environment's); a replay without ``--model`` takes the recording's."""
        from .llm import ModelError, recorded, resolve_model

        try:
            if model is not None or mode != "replay":
                model = resolve_model(model)
            return recorded(model, path, mode=mode)  # type: ignore[arg-type]  (a choice of the parser)
        except (ValueError, TypeError, ModelError) as exc:
            raise UsageError(f"%%graph {graph}: --record {path}: {exc}") from None

    def _checkpointer(self, spec: str) -> Any:
        if spec == "memory":
            return MemoryCheckpointer()
        if spec.startswith("sqlite:"):
            return SQLiteCheckpointer(spec.removeprefix("sqlite:"))
        if spec.startswith(("redis://", "rediss://")):
            from .checkpoint import RedisCheckpointer

            return RedisCheckpointer(spec)
        if spec.startswith(("postgresql://", "postgres://")):
            from .checkpoint import PostgresCheckpointer

            return PostgresCheckpointer(spec)
        return self._eval(spec, "--checkpointer")


def _show_graph_syntax_error(shell: Any, etype: type, value: BaseException, tb: Any, tb_offset: Any = None) -> None:
    # The message already shows the cell line and a caret; the parser's own frames
    # would only bury it. `_showtraceback` is the hook ipykernel overrides to send a
    # real error output, so frontends, "Run all" and nbval see the failure.
    shell._showtraceback(etype, value, [f"{etype.__name__}: {value}"])


def load_ipython_extension(ipython: Any) -> None:
    """Register the magics: ``%load_ext nbgraph``."""
    ipython.register_magics(GraphMagics)
    ipython.set_custom_exc((GraphSyntaxError,), _show_graph_syntax_error)
