"""Expand ``{{name}}`` placeholders in a mission from the agent's data (MissionExpander).

A placeholder is ``{{name}}`` (spaces inside the braces are allowed) or a dotted
path ``{{user.name}}`` into nested maps. Strings are inserted as they are; other
values in Clojure syntax (``[1 2 3]``, ``{:a 1}``, ``nil``), the language the
agent writes. A placeholder with no value is an error raised before any LLM call.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from turnpress.core.clojure import to_clojure
from turnpress.core.model import Keyword

__all__ = ["PLACEHOLDER", "expand_mission", "placeholders"]

PLACEHOLDER = re.compile(r"\{\{\s*([A-Za-z_][\w\-?!]*(?:\.[\w\-?!]+)*)\s*\}\}")
"""The placeholder pattern; group 1 is the name or dotted path."""


def placeholders(mission: str) -> list[str]:
    """The placeholder names in ``mission``, in order of first appearance, without repeats."""
    seen: dict[str, None] = {}
    for match in PLACEHOLDER.finditer(mission):
        seen.setdefault(match.group(1), None)
    return list(seen)


def _lookup(data: Mapping[Any, Any], path: str) -> Any:
    """The value at dotted ``path``; raises ``KeyError`` with the part that is missing."""
    value: Any = data
    for part in path.split("."):
        if not isinstance(value, Mapping):
            raise KeyError(part)
        if part in value:
            value = value[part]
        elif Keyword(part) in value:
            value = value[Keyword(part)]
        else:
            raise KeyError(part)
    return value


def _text(value: Any) -> str:
    return value if isinstance(value, str) else to_clojure(value)[0]


def expand_mission(mission: str, data: Mapping[str, Any] | None = None) -> str:
    """``mission`` with every ``{{name}}`` replaced by its value in ``data``.

    Raises ``ValueError`` naming the first placeholder that has no value and the
    keys ``data`` has, so a typo is found before the agent spends any tokens.
    """
    if not isinstance(mission, str):
        raise TypeError(f"mission must be a string, got {type(mission).__name__}")
    data = data or {}
    for name in placeholders(mission):
        try:
            _lookup(data, name)
        except KeyError:
            keys = ", ".join(str(k) for k in data) or "(none)"
            raise ValueError(f"mission placeholder {{{{{name}}}}} has no value in data; "
                             f"data keys: {keys}") from None
    return PLACEHOLDER.sub(lambda m: _text(_lookup(data, m.group(1))), mission)
