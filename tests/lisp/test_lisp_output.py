"""println capture (TRN-008, TRN-011) and text rendering (str, prn)."""

from __future__ import annotations

from turnpress.lisp import Limits, run_program


def test_trn_008_each_println_call_is_one_entry():
    """TRN-008: every (println ...) call is captured as one entry, multi-line or not."""
    result = run_program('(println "a" 1 :k nil) (println "two\\nlines") (println)')
    assert result.prints == ("a 1 :k nil", "two\nlines", "")
    assert result.value is None


def test_println_renders_values_as_clojure():
    result = run_program('(println {:name "Ann" :tags #{:x}} [1 2.5 "s"] 1e20 true)')
    assert result.prints == ('{:name "Ann" :tags #{:x}} [1 2.5 "s"] 100000000000000000000.0 '
                             "true",)
    assert run_program('(prn "s" :k)').prints == ('"s" :k',)
    assert run_program('(print "x")').prints == ("x",)


def test_trn_011_each_println_call_is_capped_at_2000_chars():
    """TRN-011: an entry longer than 2000 chars is cut to 2000, ending with '...'."""
    result = run_program('(println (apply str (repeat 5000 "x"))) (println "short")')
    long_entry, short = result.prints
    assert len(long_entry) == 2000 and long_entry.endswith("...")
    assert long_entry[:1997] == "x" * 1997
    assert short == "short"
    exact = run_program('(println (apply str (repeat 2000 "y")))').prints[0]
    assert exact == "y" * 2000  # not cut: no marker
    many_args = run_program("(apply println (range 3000))").prints[0]
    assert len(many_args) == 2000 and many_args.startswith("0 1 2 3") and many_args.endswith(
        "...")


def test_println_of_huge_values_is_cheap_and_exact_prefix():
    result = run_program("(def big (vec (range 200000))) (println big)")
    assert result.prints[0].startswith("[0 1 2 3 4 5")
    assert len(result.prints[0]) == 2000
    shared = run_program("(loop [x [1] i 0] (if (< i 60) (recur [x x] (inc i)) "
                         "(println x)))")
    assert shared.success and len(shared.prints[0]) == 2000
    assert shared.prints[0].startswith("[[[[[[")
    text = run_program('(println {:s (apply str (repeat 3000 "q"))})').prints[0]
    assert text.startswith('{:s "qqq') and len(text) == 2000


def test_print_limits_are_configurable():
    result = run_program('(println "abcdef")', limits=Limits(print_chars=5))
    assert result.prints == ("ab...",)
    many = run_program("(dotimes [i 5] (println i))", limits=Limits(max_prints=3))
    assert many.failure.reason == "output_limit"
    assert many.prints == ("0", "1", "2")


def test_str_concatenates_like_clojure():
    assert run_program('(str "a" 1 nil :k)').value == "a1:k"
    assert run_program("(str nil)").value == ""
    assert run_program("(str [nil :a \"b\"] {:k [1]})").value == '[nil :a "b"]{:k [1]}'
    assert run_program("(str #{1})").value == "#{1}"
    assert run_program("(str (fn [a b] a))").value == "#fn[a b]"
    assert run_program("(str inc)").value == "#fn[x]"
