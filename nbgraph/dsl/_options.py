"""Node options written in brackets: ``review [approval, on_deny=rewrite, destinations=a|b]``."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from ..deadlines import Deadline
from ..names import END
from ._scan import _NAME, _Line, _shown


@dataclass(frozen=True)
class _Ref:
    """A function named in a node option (``input=to_query``), resolved once nodes are."""

    name: str
    line: int
    column: int
    text: str


def _parse_options(line: _Line, name: str, raw: str, column: int) -> dict[str, Any]:
    options: dict[str, Any] = {}
    offset = 0
    for part in raw.split(","):
        item = part.strip()
        at = column + offset + len(part) - len(part.lstrip())
        offset += len(part) + 1
        if not item:
            continue
        key, _, rest = item.partition("=")
        value = rest.strip()
        if item == "approval":
            options["approval"] = True
        elif item.startswith("approval="):
            if value not in ("before", "after"):
                raise line.error(
                    f"approval is 'approval', 'approval=before' or 'approval=after', got {_shown(item)}", at
                )
            options["approval"] = value
        elif item.startswith("deadline="):
            options["deadline"] = _deadline(line, value, at)
        elif item in ("no_feedback", "no-feedback"):
            options["feedback"] = False
        elif item.startswith("on_deny="):
            if not re.fullmatch(_NAME, value):
                raise line.error(f"on_deny needs a node name, got {_shown(value)}", at)
            options["on_deny"] = END if value == "END" else value
        elif item.startswith("destinations="):
            targets = [t.strip() for t in value.split("|")]
            for target in targets:
                if not re.fullmatch(_NAME, target):
                    raise line.error(f"destinations needs node names separated by '|', got {_shown(target)}", at)
            options["destinations"] = [END if t == "END" else t for t in targets]
        elif item.startswith(("input=", "output=")):
            if not re.fullmatch(_NAME, value):
                raise line.error(f"{key} needs the name of a function, got {_shown(value)}", at)
            options[key] = _Ref(value, line.number, at + len(key) + 1 + len(rest) - len(rest.lstrip()), line.text)
        else:
            raise line.error(
                f"unknown option {_shown(item)} for node {name!r}; options are approval, approval=before, "
                "deadline=SECONDS[:approve], no_feedback, on_deny=NAME, destinations=A|B, input=FN, output=FN",
                at,
            )
    return options


_DEADLINE = re.compile(r"(\d+(?:\.\d*)?|\.\d+)\s*(s|m|h)?(?::(approve|deny))?")
_UNITS = {None: 1, "s": 1, "m": 60, "h": 3600}


def _deadline(line: _Line, value: str, at: int) -> Deadline:
    """``deadline=30s`` (deny when it passes), ``deadline=5m:approve``: how long an approval waits."""
    match = _DEADLINE.fullmatch(value)
    seconds = float(match.group(1)) * _UNITS[match.group(2)] if match else 0.0
    if match is None or seconds <= 0:
        raise line.error(
            f"deadline is a time such as 30s, 5m or 2h, optionally :approve (what it decides; default deny), "
            f"got {_shown(value)}",
            at,
        )
    return Deadline(seconds, "approve" if match.group(3) == "approve" else None)
