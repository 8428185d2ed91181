"""Built-in plugin: the type vocabulary of spec 02 (TYP-001..TYP-012).

It is ``trylast``, so any other plugin's ``type_label`` answer comes first. A label
only ever looks at the top level of a value (its type and length), so labelling is
O(1) however deep or shared the value is.
"""

from __future__ import annotations

import numbers
from collections.abc import Mapping
from typing import Any

from turnpress.core.codec import is_regex
from turnpress.core.hookspecs import hookimpl
from turnpress.core.model import Fn, Keyword


@hookimpl(trylast=True)
def type_label(value: Any) -> str | None:
    """Label built-in Python values with the PTC-Lisp type vocabulary."""
    if value is None:
        return "nil"
    if isinstance(value, bool):  # before int: bool is an int in Python
        return "boolean"
    if isinstance(value, str):
        return "string"
    if isinstance(value, Keyword):
        return "keyword"
    if isinstance(value, numbers.Integral):
        return "integer"
    if isinstance(value, numbers.Real):
        return "float"
    if isinstance(value, Fn):
        return "#fn[...]"
    if isinstance(value, (list, tuple)):
        return f"list[{len(value)}]"
    if isinstance(value, (set, frozenset)):
        return f"set[{len(value)}]"
    if isinstance(value, Mapping):
        return f"map[{len(value)}]"
    if is_regex(value):
        return "regex"
    return None
