"""The type vocabulary (TYP-001..TYP-012) and the type_label hook."""

from __future__ import annotations

import pytest

from turnpress import Fn, Keyword, type_label


def test_labels_of_hostile_values_look_at_the_top_level_only() -> None:
    """A 1,000-deep value and a 2^40-node shared value label in O(1); regexes label."""
    from turnpress.core.codec import RegexValue
    from turnpress.lisp import run_program

    deep: list = []
    for _ in range(1000):
        deep = [deep]
    shared: list = [1]
    for _ in range(40):
        shared = [shared, shared]
    assert type_label(deep) == "list[1]"
    assert type_label(shared) == "list[2]"
    assert type_label(RegexValue("\\s+")) == "regex"
    assert type_label(run_program('#"\\s*,\\s*"').value) == "regex"
    assert type_label(10 ** 5000) == "integer"


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
