"""The sandbox: no host access, and every limit ends the run with the right failure."""

from __future__ import annotations

import sys
import threading
import time

import pytest

from turnpress import Tool
from turnpress.lisp import FAILURE_REASONS, Limits, run_program

#: A time limit far beyond what these programs need, even on a loaded machine: the
#: run is then ended by the limit under test (steps, sizes), never by the clock.
ROOMY_S = 120.0


def cpu_seconds(fn, *args, **kwargs):
    """``fn(*args, **kwargs)`` and the CPU seconds it used. A bound on work is checked
    in CPU time: on a loaded machine (fuzzers, parallel test runs) the wall clock
    also counts the time others ran."""
    start = time.process_time()
    result = fn(*args, **kwargs)
    return result, time.process_time() - start


def reason(source: str, **kwargs) -> str:
    result = run_program(source, **kwargs)
    assert result.failure is not None, f"expected a failure, got {result.value!r}"
    assert "Traceback" not in result.failure.message
    return result.failure.reason


def test_step_limit():
    assert reason("(loop [i 0] (recur (inc i)))", limits=Limits(max_steps=10_000)) == (
        "step_limit")
    assert reason("(count (filter odd? (range 100000)))", limits=Limits(max_steps=50_000)) == (
        "step_limit")
    assert run_program("(reduce + (range 1000))", limits=Limits(max_steps=5000)).value == 499500


def test_depth_limit_for_recursion():
    deep = "(defn f [n] (if (zero? n) 0 (inc (f (dec n)))))"
    assert run_program(deep + " (f 150)").value == 150
    assert reason(deep + " (f 250)") == "depth_limit"
    assert reason(deep + " (f 20)", limits=Limits(max_depth=10)) == "depth_limit"
    assert reason("(defn g [] (map (fn [_] (g)) [1])) (g)") == "depth_limit"
    assert reason("(defn h [x] (h x)) (h 1)") == "depth_limit"


def test_huge_depth_limits_fail_cleanly_instead_of_crashing():
    deep = "(defn f [n] (if (zero? n) 0 (inc (first (map f [(dec n)]))))) (f 100000)"
    assert reason(deep, limits=Limits(max_depth=1_000_000)) == "depth_limit"


def test_deeply_nested_values_fail_cleanly():
    build = "(def x (loop [x [] i 0] (if (< i 100000) (recur [x] (inc i)) x)))"
    limits = Limits(max_steps=10_000_000, timeout_s=20)
    assert reason(build + " (str x)", limits=limits) == "depth_limit"
    twin = build.replace("(def x", "(def y")
    assert reason(build + twin + " (= x y)", limits=limits) == "depth_limit"
    nested = []
    for _ in range(100_000):
        nested = [nested]
    assert reason("(str data/n)", data={"n": nested}) == "depth_limit"


def test_timeout():
    """The clock ends an endless loop (no step limit would): soon after the deadline,
    in the CPU time the run used (the wall-clock bound is generous: a loaded machine
    may not run the test at all for a while)."""
    start = time.monotonic()
    limits = Limits(max_steps=10**12, timeout_s=0.2)
    ended, cpu = cpu_seconds(reason, "(loop [i 0] (recur (inc i)))", limits=limits)
    assert ended == "timeout"
    assert cpu < 2.0
    assert time.monotonic() - start < 60


def test_size_limits():
    assert reason("(range 1e9)") == "size_limit"
    assert reason("(count (range 2000000))") == "size_limit"
    assert reason("(repeat 2000000 1)") == "size_limit"
    assert reason('(apply str (repeat 600000 "ab"))') == "size_limit"
    assert reason('(loop [s "a"] (recur (str s s)))') == "size_limit"
    assert reason("(loop [x 2] (recur (* x x)))") == "size_limit"
    assert reason("(loop [xs [1]] (recur (concat xs xs)))") == "size_limit"
    assert reason('(join "," (repeat 10 (apply str (repeat 200000 "x"))))') == "size_limit"
    assert reason('(format "%999999999d" 1)') == "size_limit"
    assert reason('(replace (apply str (repeat 1000 "a")) "a" (apply str (repeat 2000 "b")))'
                  ) == "size_limit"
    small = Limits(max_collection=10, max_string=10)
    assert reason("(range 11)", limits=small) == "size_limit"
    assert reason('(str "0123456789" "x")', limits=small) == "size_limit"
    assert reason("(for [x (range 5) y (range 5)] [x y])", limits=small) == "size_limit"


def test_exponentially_shared_values_cannot_stall_a_run():
    """Each run ends by its step or size budget (no time limit in reach), and all of
    them together take under 5 s of CPU."""
    double = "(loop [x [1] i 0] (if (< i 60) (recur [x x] (inc i)) %s))"
    limits = Limits(max_steps=100_000, timeout_s=ROOMY_S)

    def runs() -> None:
        assert reason(double % "(str x)", limits=limits) == "step_limit"
        assert reason(double % "(str x)", limits=Limits(max_string=50_000,
                                                         timeout_s=ROOMY_S)) == "size_limit"
        assert reason(double % "(set [x])", limits=limits) == "step_limit"
        assert reason(double % "(flatten x)", limits=limits) == "step_limit"
        twin = "(loop [y [1] i 0] (if (< i 60) (recur [y y] (inc i)) y))"
        assert reason(double % f"(= x {twin})", limits=limits) == "step_limit"
        assert reason(double % "(tool/t x)", tools={"t": Tool("t", fn=len)},
                      limits=limits) == "step_limit"
        assert run_program(double % "(= x x)", limits=Limits(timeout_s=ROOMY_S)).value is True

    _, cpu = cpu_seconds(runs)
    assert cpu < 5


def test_printing_nested_sets_keeps_to_the_clock():
    """fuzz programs seed 27 case 2606: `str` of 40 nested ordinal sets (each the set of
    all before it) rendered its full 1,000,000-character budget without looking at the
    clock (2 s of a 2 s timeout and more). The sets are not pruned like lists, so the
    rendering itself now checks the clock: the run ends with ``timeout``, not with
    ``size_limit`` after the time is long gone."""
    ordinals = "(loop [x #{} i 0] (if (< i 40) (recur (conj x x) (inc i)) x))"
    assert reason(f"(str {ordinals})", limits=Limits(timeout_s=0.05)) == "timeout"
    assert reason(f"(apply (juxt str count) {ordinals})",
                  limits=Limits(timeout_s=0.05)) == "timeout"
    # println stops at the output limit, in time: well under 0.5 s of CPU (the run
    # may take longer by the wall clock on a loaded machine, so the clock is roomy)
    printed, cpu = cpu_seconds(run_program, f"(println {ordinals})",
                               limits=Limits(timeout_s=ROOMY_S))
    assert printed.failure is None
    assert cpu < 0.5


def test_output_limit():
    assert reason("(dotimes [i 2000] (println i))") == "output_limit"


def test_no_host_access():
    """There is no form that reaches Python objects, attributes, modules or files."""
    for program in [
        '(import "os")', "(require 'clojure.java.io)", '(eval "(+ 1 2)")', '(slurp "x")',
        "(__import__ \"os\")", "(.getattr inc \"impl\")", "(. inc impl)",
        "(System/getenv \"HOME\")", "(new java.io.File \"x\")", "(open \"/etc/passwd\")",
        "(exec \"1\")", "(globals)",
    ]:
        result = run_program(program)
        assert result.failure is not None, program
        assert result.failure.reason in ("undefined_symbol", "syntax_error"), program
    assert run_program("(get inc :impl)").value is None
    assert run_program('(get inc "__class__")').value is None
    assert run_program("(:__globals__ inc)").value is None
    assert reason("(keys inc)") == "type_error"
    assert reason("(seq inc)") == "type_error"


def test_python_values_in_data_are_opaque():
    class Secret:
        password = "hunter2"

        def __call__(self):
            raise AssertionError("host code must not run")

    data = {"obj": Secret(), "f": print}
    assert reason("(data/obj)", data=data) == "type_error"
    assert reason("(data/f 1)", data=data) == "type_error"
    assert run_program("(get data/obj :password)", data=data).value is None
    assert run_program('(str "" (some? data/obj))', data=data).value == "true"


def test_interpreter_bugs_never_escape(monkeypatch):
    import turnpress.lisp.interpreter as interpreter

    def broken(source, **kwargs):
        raise KeyError("oops")

    monkeypatch.setattr(interpreter, "read_program", broken)
    result = run_program("1")
    assert result.failure.reason == "runtime_error"
    assert "internal error" in result.failure.message

    def no_memory(source, **kwargs):
        raise MemoryError

    monkeypatch.setattr(interpreter, "read_program", no_memory)
    assert run_program("1").failure.reason == "memory_limit"


def test_recursion_limit_is_restored_and_threads_are_safe():
    before = sys.getrecursionlimit()
    results = []
    program = "(defn f [n] (if (zero? n) 0 (inc (f (dec n))))) (f 150)"

    def work():
        for _ in range(5):
            results.append(run_program(program).value)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == [150] * 20
    assert sys.getrecursionlimit() == before


def test_failure_reasons_are_documented():
    assert set(FAILURE_REASONS) == {
        "syntax_error", "undefined_symbol", "ambiguous_reference", "type_error",
        "arity_error", "tool_error", "step_limit", "depth_limit", "timeout", "size_limit",
        "memory_limit",
        "output_limit", "fail", "runtime_error"}


def test_limits_validate_their_values():
    with pytest.raises(ValueError):
        Limits(max_steps=0)
    with pytest.raises(ValueError):
        Limits(timeout_s=-1)
    assert Limits().print_chars == 2000 and Limits().max_depth == 200


def test_shared_values_as_keys_are_bounded():
    double = "(def x (loop [x [1] i 0] (if (< i 60) (recur [x x] (inc i)) x)))"
    for use in ["(get {} x)", "(assoc {} x 1)", "(contains? #{} x)", "(frequencies [x])",
                "(hash-map x 1)", "{x 1}"]:
        ended, cpu = cpu_seconds(reason, f"{double} {use}", limits=Limits(timeout_s=ROOMY_S))
        assert ended in ("size_limit", "step_limit"), use
        assert cpu < 3, use
