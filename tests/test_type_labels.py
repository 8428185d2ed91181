"""The type vocabulary (TYP-001..TYP-012) and the type_label hook."""

from __future__ import annotations

import pytest

from turnpress import Fn, Keyword, type_label


@pytest.mark.parametrize(("value", "label"), [
    ([], "list[0]"),                          # TYP-001
    ([1, 2, 3], "list[3]"),                   # TYP-002
    ((1, 2), "list[2]"),
    ({}, "map[0]"),                           # TYP-003
    ({"a": 1}, "map[1]"),                     # TYP-004
    ("hello", "string"),                      # TYP-005
    (42, "integer"),                          # TYP-006
    (3.14, "float"),                          # TYP-007
    (True, "boolean"),                        # TYP-008
    (False, "boolean"),
    (Keyword("active"), "keyword"),           # TYP-009
    (None, "nil"),                            # TYP-010
    (Fn(("x",)), "#fn[...]"),                 # TYP-011
    ({1, 2, 3}, "set[3]"),                    # TYP-012
    (frozenset(), "set[0]"),
    (object(), "unknown"),
])
def test_typ_001_to_typ_012_vocabulary(value: object, label: str) -> None:
    """TYP-001..TYP-012: the labels of spec 02; booleans are checked before integers."""
    assert type_label(value) == label
