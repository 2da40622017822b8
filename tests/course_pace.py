"""The course's stated method for a lesson's minutes (notebooks/README.md)."""

from __future__ import annotations

import re

import nbformat

SILENT_READING = 180
"""Words a minute a learner reads to themself."""
READING_ALOUD = 150
"""Words a minute a teacher reads to a room."""


def minutes(notebook: nbformat.NotebookNode, words_a_minute: int = SILENT_READING) -> float:
    """Prose at ``words_a_minute``, code at 8 lines a minute, half a minute to run each code
    cell, 5 minutes an exercise (or a capstone milestone)."""
    markdown = [c.source for c in notebook.cells if c.cell_type == "markdown"]
    code = [c.source for c in notebook.cells if c.cell_type == "code"]
    words = sum(len(text.split()) for text in markdown)
    lines = sum(1 for text in code for line in text.splitlines() if line.strip())
    exercises = sum(len(re.findall(r"^## (Exercise|Milestone)", text, re.M)) for text in markdown)
    return words / words_a_minute + lines / 8 + 0.5 * len(code) + 5 * exercises
