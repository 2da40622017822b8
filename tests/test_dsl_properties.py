"""Whatever text reaches the parser, only GraphSyntaxError may come out, with a message and a real line."""

from __future__ import annotations

import io
import warnings

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nbgraph import Graph
from nbgraph.dsl import GraphSyntaxError, compile_node_body, parse


def _sub() -> Graph:
    g = Graph("sub")
    g.add_node("s", lambda s: None)
    g.add_edge("__start__", "s")
    g.add_edge("s", "__end__")
    return g


NAMESPACE = {
    "a": lambda s: None,
    "b": lambda s: None,
    "route": lambda s: "a",
    "x": 3,
    "sub": _sub(),
    "to_q": lambda s: {},
    "from_r": lambda s: {},
    "no_arg": lambda: "a",  # a router that cannot take the state
    "route_ctx": lambda state, ctx: "a",
    "c": lambda s: None,
    "d": lambda s: None,
    "e": lambda s: None,
}

TOKENS = st.sampled_from(
    [
        "START",
        "END",
        "a",
        "b",
        "c",
        "->",
        "|",
        "via",
        "route",
        "if",
        "state.n",
        ">",
        "1",
        "(",
        ")",
        "[",
        "]",
        "approval",
        "on_deny=",
        ",",
        "#",
        '"',
        "'",
        " ",
        "\n",
        "\t",
        "ctx.visit",
        "==",
        "x",
        "9",
        "\\",
        "\x00",
        # fan-out, joins, maps, sub-graphs
        "&",
        "for",
        "in",
        "item",
        "state.items",
        "else",
        "sub",
        "input=to_q",
        "output=from_r",
        "input=",
        "output=x",
        "no_arg",
        "lambda:",
        "not",
        "-",
        "{",
        "}",
        "[t for t in state.xs if t]",
    ]
)

NEST = st.sampled_from(["(", "[", "{", "not ", "-", "lambda: ", "x.", "1+", "f(", "state[", "(1 if "])
CLOSERS = {"(": ")", "[": "]", "{": "}", "f(": ")", "state[": "]", "(1 if ": " else 0)"}
DEPTHS = st.sampled_from([(0, 20), (180, 220), (1900, 3500), (20_000, 20_000), (100_000, 100_000)]).flatmap(
    lambda bounds: st.integers(*bounds)
)


@st.composite
def nested(draw) -> str:
    """An expression nested near, or far past, a limit of the parser, the compiler or the wrapper."""
    openers = draw(st.one_of(NEST.map(lambda opener: [opener]), st.lists(NEST, min_size=1, max_size=3)))
    depth = draw(DEPTHS)
    closed = draw(st.integers(0, depth))
    body = "".join(openers[i % len(openers)] for i in range(depth)) + draw(
        st.sampled_from(["1", "state.n", "ctx.visit", ""])
    )
    return body + "".join(CLOSERS.get(openers[i % len(openers)], "") for i in reversed(range(closed)))


EXPRESSIONS = st.one_of(
    st.sampled_from(
        [
            "state.n > 1",
            "state.items",
            "ctx.visit",
            "t.ok",
            "(",
            "state['if']",
            "a if b else c",
            "",
            "[t for t in state.xs if t]",
            "yield",
            "await x",
            "1 +",
            "'#'",
        ]
    ),
    nested(),
)
NODES = st.sampled_from(["a", "b", "c", "sub", "a [approval]", "b [on_deny=a]", "sub [input=to_q, output=from_r]"])
MUTANTS = st.sampled_from(
    [
        "",
        "9",
        "x",
        "nope",
        "START",
        "END",
        "a [aproval]",
        "sub [input=to_q]",
        "sub [output=x, input=to_q]",
        "a [input=to_q, output=from_r]",
        "sub [input=nope, output=to_q]",
    ]
)
VALID_EXPRESSIONS = st.sampled_from(
    [
        "state.n > 1",
        "state.items",
        "ctx.visit",
        "state['if']",
        "'#' in state.s",
        "(state.a if state.b else state.c)",
        "[t for t in state.xs if t]",
    ]
)


@st.composite
def statements(draw, clean: bool) -> str:
    """One line in (or near) the grammar: an edge chain with groups, a map and a condition, or a router.

    A ``clean`` line names defined nodes and valid expressions only, so that whole cells
    get past the parser to the builder and the compiler.
    """
    endpoints = NODES if clean else st.one_of(NODES, NODES, NODES, MUTANTS)  # mostly right, sometimes wrong
    expressions = VALID_EXPRESSIONS if clean else EXPRESSIONS
    group = st.lists(endpoints, min_size=1, max_size=1 if clean else 3).map(" & ".join)
    first = st.one_of(st.just("START"), group, group)
    last = st.one_of(st.just("END"), group, group)
    kind = draw(st.sampled_from(["edge", "edge", "edge", "chain", "router", "node"]))
    if kind == "node":
        return draw(endpoints)
    if kind == "router":
        source = draw(
            st.sampled_from(["d", "e"]) if clean else st.one_of(st.sampled_from(["d", "e", "START"]), MUTANTS)
        )
        targets = " | ".join(draw(st.lists(st.one_of(endpoints, st.just("END")), min_size=1, max_size=3)))
        router = draw(
            st.sampled_from(["route", "route_ctx", "no_arg"] if clean else ["route", "no_arg", "x", "nope", ""])
        )
        return f"{source} -> {targets} via {router}"
    if kind == "chain":
        return " -> ".join([draw(first), *draw(st.lists(group, min_size=1, max_size=2)), draw(last)])
    line = f"{draw(first)} -> {draw(last)}"
    if draw(st.booleans()):
        variable = draw(st.sampled_from(["t"] if clean else ["t", "t", "item", "9", "if", ""]))
        line += f" for {variable} in {draw(expressions)}"
    if draw(st.booleans()):
        line += f" if {draw(expressions)}"
    return line


@st.composite
def cells(draw) -> str:
    clean = draw(st.booleans())
    lines = draw(st.lists(statements(clean), min_size=1, max_size=4))
    if draw(st.sampled_from([True, True, True, False])):
        lines.insert(0, "START -> a")
    if draw(st.sampled_from([True, True, True, False])):
        lines += ["a -> END", "b -> END", "c -> END", "sub -> END"]
    return "\n".join(lines)


SHAPES = st.sampled_from(
    [
        "START -> a\na -> END if {}",
        "START -> a\na -> b for t in {}\nb -> END",
        "START -> a\na -> b for t in state.xs if {}\nb -> END",
        "START -> a & b if {}\na & b -> END",
        "START -> sub [input=to_q, output=from_r] -> END if {}",
    ]
)


def python_lines(text: str) -> int:
    """How many lines Python reads in ``text``: universal newlines end them, nothing else does."""
    return len(io.StringIO(text, newline=None).readlines())


def check(text: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # unreachable-node warnings are not errors
        try:
            parse(text, NAMESPACE, "prop")
        except GraphSyntaxError as exc:
            assert exc.message.strip() and not exc.message.rstrip().endswith(":"), "an error without its detail"
            assert 1 <= exc.line <= max(1, python_lines(text))
            assert exc.column >= 1
            str(exc)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(max_size=80))
def test_arbitrary_text(text):
    check(text)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(TOKENS, max_size=25).map(" ".join))
def test_near_miss_graphs(text):
    check(text)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.lists(TOKENS, max_size=8).map(" ".join), max_size=6).map("\n".join))
def test_multi_line_cells(text):
    check(text)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(SHAPES, nested())
def test_deeply_nested_expressions(shape, expression):
    check(shape.format(expression))


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cells())
def test_cells_in_the_grammar(text):
    """Fan-out, joins, maps, sub-graphs and routers, right and wrong."""
    check(text)


@settings(max_examples=100, deadline=None)
@given(st.integers(190, 215), SHAPES)
def test_parentheses_around_the_limit(depth, shape):
    check(shape.format("(" * depth + "state.n" + ")" * depth))


LITERAL_TEXT = st.text(st.characters(exclude_categories=["Cs"], exclude_characters="'\\\r\n\x00"), max_size=30)
"""What a one-line string literal or a comment may hold: any character but its quote, a backslash and a line end."""


@settings(max_examples=300, deadline=None)
@given(LITERAL_TEXT, LITERAL_TEXT)
def test_a_literal_or_comment_python_accepts_is_accepted(inside, note):
    condition = f"state.s == '{inside}'"
    compile(f"{condition}  # {note}", "<condition>", "eval")  # Python takes both
    g = parse(f"START -> a  # {note}\na -> b if {condition}  # {note}\na -> END\nb -> END", NAMESPACE, "literal")
    assert g.invoke({"s": inside}).path == ["a", "b"]
    assert g.invoke({"s": inside + "?"}).path == ["a"]


# -- %%node bodies ------------------------------------------------------------------------

BODY_TOKENS = st.sampled_from(
    [
        "return",
        "{'x': 1}",
        "state",
        "ctx",
        "await",
        "ctx.ask()",
        "yield",
        "continue",
        "break",
        "nonlocal x",
        "global x",
        "x",
        "=",
        "1",
        "(",
        ")",
        "[",
        "]",
        "{",
        "}",
        ":",
        "if",
        "else",
        "elif",
        "for",
        "in",
        "while",
        "def f():",
        "async",
        "lambda:",
        "class C:",
        "try:",
        "except:",
        "finally:",
        "with",
        "as",
        "pass",
        "not",
        "-",
        "+",
        "*",
        "**",
        ",",
        ".",
        "'",
        '"',
        '"""',
        "#",
        "\\",
        "\n",
        "\n    ",
        "\n        ",
        "\r",
        "\r\n",
        "\t",
        " ",
        "\u2028",
        "\x0c",
        "\x85",
        "\x1c",
        "\x00",
        "\ud800",
        "é",
        "f'{",
        "}'",
        ":=",
        "@",
        "del",
        "from os import *",
        "raise",
        "x = 1",
        "'\u2028'",
        "# \u2028 x",
        "'''\n'''",
        "async for",
        "[x async for x in y]",
        "*x",
        "is 1",
        "'\\d'",
    ]
)
STATEMENTS = st.sampled_from(
    [
        "continue",
        "break",
        "nonlocal x",
        "nonlocal state",
        "global state",
        "return {'x': 1}",
        "yield 1",
        "x = await ctx.ask()",
        "del state",
        "def g(a, a): pass",
        "def g():\n    nonlocal x",
        "class C:\n    return 1",
        "def g():\n    x = 1\n    global x",
        "def g():\n    from os import *",
        "x = yield from y",
        "f = lambda: await x",
        "for t in state:\n    continue",
        "while x:\n    break\nelse:\n    continue",
        "x: int = 1",
        "return",
        "async def g():\n    yield 1\n    return 2",
        "try:\n    pass\nfinally:\n    continue",
        "if x:",
        "    x = 1",
        "t = '''a\u2028\n  b'''",
        "t = 'a\x0cb\x1cc\x85d'  # \u2028 e",
        "match x:\n    case 1:\n        pass",
        "print(f'{x!z}')",
        "x = 1" + "0" * 5000,
        "x = 'a' 'b' f'{1}'",
    ]
)


@st.composite
def bodies(draw) -> str:
    """Statements right or wrong only in their place, token soup, and nesting near or far past the limits."""
    parts = draw(
        st.lists(
            st.one_of(
                STATEMENTS,
                st.lists(BODY_TOKENS, max_size=10).map(" ".join),
                nested().map(lambda expr: f"return {expr}"),
                nested().map(lambda expr: f"if {expr}:\n    pass"),
            ),
            min_size=1,
            max_size=5,
        )
    )
    return draw(st.sampled_from(["\n", "\r\n", "\r"])).join(parts)


def check_body(body: str) -> None:
    try:
        fn = compile_node_body("prop", body, {}, first_line=2)
    except GraphSyntaxError as exc:
        assert exc.message.strip(), "an error without its detail"
        assert exc.cell == "%%node"
        assert 2 <= exc.line <= 1 + max(1, python_lines(body))
        assert exc.column >= 1
        str(exc)
    else:
        assert callable(fn)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(bodies())
def test_a_node_body_compiles_or_is_a_language_error(body):
    """Whatever fails, in parsing, in compiling or for its depth, is a GraphSyntaxError at a cell line."""
    check_body(body)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(max_size=80))
def test_any_text_as_a_node_body(body):
    check_body(body)
