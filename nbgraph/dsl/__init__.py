"""The ``%%graph`` language: cell text in, a :class:`~nbgraph.Graph` out (pure; no IPython).

Grammar (one statement per line; ``#`` starts a comment; blank lines are ignored; lines
end where Python's do, at ``\\n``, ``\\r\\n`` or a lone ``\\r``, so a string literal or a
comment may hold U+2028, a form feed and the like)::

    cell      := { line }
    line      := edges | router | node
    edges     := group "->" group { "->" group } [ "for" NAME "in" ITEMS ] [ "if" CONDITION ]
    router    := endpoint "->" target "|" target { "|" target } "via" NAME
    node      := endpoint                         (declares a node, e.g. to give options)
    group     := endpoint { "&" endpoint }
    endpoint  := NAME [ "[" option { "," option } "]" ] | "START" | "END"
    target    := NAME | "END"
    option    := "approval" | "no_feedback" | "on_deny=" NAME | "destinations=" target { "|" target }
               | "input=" NAME | "output=" NAME | "deadline=" SECONDS [ "s" | "m" | "h" ] [ ":approve" ]

- ``a -> b -> c`` is a chain of unconditional edges.
- ``a -> b if EXPR`` is a conditional edge. EXPR is a Python expression over
  ``state`` (and ``ctx``), compiled once when the cell runs; its text becomes the
  edge label. A condition belongs to one edge, so a chain cannot carry one.
- Edges out of a node are tried in the order they appear; the first whose condition
  holds wins, and an unconditional edge always matches (use it as the fallback).
- ``&`` reads "and": ``plan -> a & b`` is one fan-out edge (``a`` and ``b`` run together
  as parallel branches, updates folding in the order written); ``a & b -> merge`` is a
  join (``merge`` runs once both finished). In a chain each arrow is one edge, so
  ``x -> a & b -> merge`` fans out, then joins; a group of several on both sides of
  one arrow (``a & b -> c & d``) is an error: join into one node first.
- ``plan -> worker for item in ITEMS`` is a map: ``worker`` runs once per item of the
  Python expression ITEMS (compiled like a condition); ``item`` only names the items
  in the label. ``for t in ITEMS if EXPR`` adds the edge's condition, tested first on
  the state (it cannot use ``t``); ITEMS ends at its first ``if`` outside brackets
  and strings, so a conditional expression in ITEMS needs parentheses.
- ``a -> b | c | END via fn`` routes out of ``a`` with ``fn(state) -> name``.
- Node names resolve, in order, to nodes defined with ``%%node`` (the ``nodes``
  argument) and to callables of the same name in the namespace. A name bound to a
  :class:`~nbgraph.Graph` makes a sub-graph node; ``[input=fn, output=fn]`` name the
  functions mapping the state into it and its final state back (both or neither).
- ``review [approval, on_deny=rewrite]`` sets node options wherever the node appears;
  ``review [approval, deadline=30m]`` denies the approval once it has waited 30 minutes
  (``deadline=30m:approve`` approves it then);
  ``triage [destinations=urgent|later]`` declares where the node's ``Goto`` may lead.
- ``if``, and ``for`` after a node, are keywords; ``via`` is one before the last name.

Every mistake raises :class:`GraphSyntaxError` naming the cell line and column, with
the line shown and a caret under the fault. Parsing takes time linear in the cell's
length.

Its modules, one concern each: ``_scan`` (a line as text: comments, names, separators,
keywords), ``_options`` (node options in brackets), ``_lines`` (each line's statement:
edges, maps, conditions, routers), ``_compile`` (the Python a cell carries: conditions,
map expressions, ``%%node`` bodies) and ``_build`` (names resolved, the Graph built and
checked; :func:`parse`).
"""

from ..errors import GraphSyntaxError
from ._build import NodeDefinition, parse
from ._compile import compile_condition, compile_node_body

__all__ = ["GraphSyntaxError", "NodeDefinition", "compile_condition", "compile_node_body", "parse"]
