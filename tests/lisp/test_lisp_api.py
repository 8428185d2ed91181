"""The public API of turnpress.lisp, as the agent loop uses it."""

from __future__ import annotations

import dataclasses

import pytest

import turnpress.lisp as lisp
from turnpress import Failure, Fn, Memory
from turnpress.lisp import (
    LANGUAGE_REFERENCE,
    Closure,
    ExecutionResult,
    Limits,
    LispSyntaxError,
    read_program,
    run_program,
)
from turnpress.lisp.library import CORE, resolve_qualified

#: The core functions the issue asks for (issue 6).
REQUIRED_FUNCTIONS = """
+ - * / mod quot rem = not= < > <= >= not str count first second rest last nth get get-in
assoc assoc-in dissoc update merge keys vals contains? map filter remove reduce some every?
sort sort-by group-by frequencies distinct take drop concat into conj range inc dec min max
abs subs split join upper-case lower-case trim includes? starts-with? ends-with? println
empty? nil? keyword name mapv filterv zipmap select-keys max-key min-key identity vec set
""".split()

REQUIRED_SPECIAL_FORMS = """
def defn fn let if when cond do and or -> ->> loop recur return fail if-let when-let doseq for
""".split()


def test_public_names():
    assert callable(run_program) and callable(read_program)
    assert isinstance(LANGUAGE_REFERENCE, str) and len(LANGUAGE_REFERENCE) > 1000
    assert issubclass(LispSyntaxError, Exception)
    for name in lisp.__all__:
        assert getattr(lisp, name).__doc__ or name in ("LANGUAGE_REFERENCE",
                                                        "FAILURE_REASONS")


def test_required_functions_and_special_forms_exist():
    missing = [name for name in REQUIRED_FUNCTIONS if name not in CORE]
    assert not missing
    from turnpress.lisp.special_forms import SPECIAL_FORMS

    assert not [name for name in REQUIRED_SPECIAL_FORMS if name not in SPECIAL_FORMS]
    for name in ("join", "split", "upper-case", "trim", "includes?", "replace"):
        assert resolve_qualified("clojure.string", name) is not None


def test_execution_result_shape():
    result = run_program('(def x "doc" 1) (println "hi") (+ x 1)')
    assert isinstance(result, ExecutionResult)
    assert result.value == 2 and result.success and result.failure is None
    assert isinstance(result.memory, Memory) and result.memory.docs == {"x": "doc"}
    assert result.prints == ("hi",) and result.tool_calls == () and not result.returned
    with pytest.raises(dataclasses.FrozenInstanceError):
        result.value = 3  # type: ignore[misc]
    failed = run_program("(fail :x)")
    assert not failed.success and isinstance(failed.failure, Failure)


def test_limits_is_a_frozen_dataclass_with_the_documented_defaults():
    limits = Limits()
    assert (limits.max_steps, limits.max_depth, limits.timeout_s, limits.max_collection,
            limits.max_string, limits.max_prints, limits.print_chars) == (
        1_000_000, 200, 5.0, 1_000_000, 1_000_000, 1000, 2000)
    with pytest.raises(dataclasses.FrozenInstanceError):
        limits.max_steps = 1  # type: ignore[misc]


def test_closure_is_a_frozen_identity_compared_fn():
    assert issubclass(Closure, Fn)
    assert dataclasses.is_dataclass(Closure)
    f = run_program("(fn [a] a)").value
    assert isinstance(f, Closure) and f.params == ("a",)
    with pytest.raises(dataclasses.FrozenInstanceError):
        f.doc = "x"  # type: ignore[misc]
    g = run_program("(fn [a] a)").value
    assert f == f and f != g and len({f, g}) == 2


def test_run_program_accepts_empty_mappings_and_none():
    assert run_program("1", tools={}, data={}, memory=None).value == 1
    assert run_program("1", tools=None, data=None).value == 1
