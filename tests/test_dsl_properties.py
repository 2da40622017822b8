"""Whatever text reaches the parser, only GraphSyntaxError may come out."""

from __future__ import annotations

import warnings

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nbgraph.dsl import GraphSyntaxError, parse

NAMESPACE = {"a": lambda s: None, "b": lambda s: None, "route": lambda s: "a", "x": 3}

TOKENS = st.sampled_from(
    ["START", "END", "a", "b", "c", "->", "|", "via", "route", "if", "state.n", ">", "1", "(", ")", "[", "]",
     "approval", "on_deny=", ",", "#", '"', "'", " ", "\n", "\t", "ctx.visit", "==", "x", "9", "\\", "\x00"]
)


def check(text: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # unreachable-node warnings are not errors
        try:
            parse(text, NAMESPACE, "prop")
        except GraphSyntaxError as exc:
            assert exc.line >= 1 and exc.column >= 1
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
