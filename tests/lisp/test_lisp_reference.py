"""LANGUAGE_REFERENCE mentions every implemented core function and special form."""

from __future__ import annotations

import re

from turnpress.lisp import LANGUAGE_REFERENCE
from turnpress.lisp.library import CORE, QUALIFIED
from turnpress.lisp.reference import SPECIAL_FORM_DOCS
from turnpress.lisp.special_forms import SPECIAL_FORMS

_EDGE = r"[\w\-?!*<>=/.+&%']"


def mentioned(name: str) -> bool:
    """``name`` appears as a whole token (not as part of a longer name)."""
    return re.search(rf"(?<!{_EDGE}){re.escape(name)}(?!{_EDGE})", LANGUAGE_REFERENCE) is not None


def test_every_core_function_is_in_the_reference():
    missing = [name for name in CORE if not mentioned(name)]
    assert not missing, f"core functions missing from LANGUAGE_REFERENCE: {missing}"


def test_every_qualified_function_is_in_the_reference():
    missing = []
    for name in QUALIFIED:
        ns, local = name.split("/")
        if mentioned(name):
            continue
        if ns == "clojure.string" and local in CORE:
            continue  # covered by "clojure.string/NAME" in the namespaces section
        missing.append(name)
    assert not missing, f"qualified functions missing from LANGUAGE_REFERENCE: {missing}"
    assert "clojure.string/NAME" in LANGUAGE_REFERENCE


def test_every_special_form_is_in_the_reference():
    assert set(SPECIAL_FORMS) == set(SPECIAL_FORM_DOCS)
    missing = [name for name in SPECIAL_FORMS if not mentioned(name)]
    assert not missing, f"special forms missing from LANGUAGE_REFERENCE: {missing}"


def test_reference_covers_the_language_rules():
    for phrase in ["tool/NAME", "data/NAME", "ambiguous_reference", "(return x)",
                   "(fail reason)", "docstring", "(= 1 1.0) is false", "2000 characters",
                   "string key of the same name", "#(+ % %2)"]:
        assert phrase in LANGUAGE_REFERENCE, phrase


def test_every_core_function_has_a_summary():
    assert all(fn.summary and fn.category for fn in CORE.values())
    assert all(fn.summary for fn in QUALIFIED.values())


def test_reference_examples_run():
    from turnpress.lisp import run_program

    assert run_program('(str "a" 1 nil :k)').value == "a1:k"
    assert run_program("(-> 2 (- 1) inc)").value == 2
    assert run_program("(->> [1 2] (map inc))").value == [2, 3]
    assert run_program("'(1 2)").value == [1, 2]
