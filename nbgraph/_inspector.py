"""The view's inspector panel: a step's :class:`~nbgraph.inspection.Inspection` as the message that
shows it, its input state cut to the start the panel shows.

Both the graph view and the LangGraph view send it, each from the inspection of its own runs.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .inspection import Inspection

__all__ = ["inspection_message"]

_INPUT_CHARS = 4000


def inspection_message(seen: Inspection) -> dict[str, Any]:
    """The view's ``inspection`` message for an :class:`~nbgraph.inspection.Inspection`."""
    data = seen.model_dump(mode="json")
    # The panel shows the start of the input state: a 10,000-message conversation is not sent whole.
    text = json.dumps(data["input"], default=str)
    if len(text) > _INPUT_CHARS:
        data["input"] = f"{text[:_INPUT_CHARS]}\u2026"
        data["missing"] = [
            *data.get("missing", ()),
            f"the view shows the first {_INPUT_CHARS:,} of the input state's {len(text):,} characters; "
            f"result.inspect({seen.step}).input has all of it",
        ]
    return {"type": "inspection", **data}
