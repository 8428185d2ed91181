"""Special forms: definitions, functions, bindings, control flow, loops and comprehensions."""

from __future__ import annotations

import pytest

from turnpress import Keyword
from turnpress.lisp import run_program

K = Keyword


def value(source: str, **kwargs):
    result = run_program(source, **kwargs)
    assert result.failure is None, result.failure
    return result.value


def failure(source: str, **kwargs):
    result = run_program(source, **kwargs)
    assert result.failure is not None, f"expected a failure, got {result.value!r}"
    return result.failure


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("(def x 5) x", 5),
        ("(def x 5)", 5),
        ("(defn twice [x] (* 2 x)) (twice 4)", 8),
        ("(defn f \"doc\" [a b] (+ a b)) (f 1 2)", 3),
        ("(defn f {:added 1} [a] a) (f 3)", 3),
        ("((fn [x] (inc x)) 1)", 2),
        ("((fn fact [n] (if (< n 2) 1 (* n (fact (dec n))))) 5)", 120),
        ("((fn [a & more] [a more]) 1 2 3)", [1, [2, 3]]),
        ("((fn [a & more] more) 1)", None),
        ("((fn [] 1))", 1),
        ("((fn [x]) 1)", None),
        ("(let [a 1 b (+ a 1)] [a b])", [1, 2]),
        ("(let [x 1 f (fn [] x) x 2] [(f) x])", [1, 2]),
        ("(let [[a b & r :as all] [1 2 3 4]] [a b r all])", [1, 2, [3, 4], [1, 2, 3, 4]]),
        ("(let [[a b] [1]] [a b])", [1, None]),
        ("(let [{:keys [a b] :or {b 7} :as m} {:a 1}] [a b m])", [1, 7, {K("a"): 1}]),
        ('(let [{:strs [a]} {"a" 5}] a)', 5),
        ("(let [{x :x [y] :ys} {:x 1 :ys [2]}] [x y])", [1, 2]),
        ('(let [{:keys [name]} {"name" "Ann"}] name)', "Ann"),
        ("(let [[[a b] c] [[1 2] 3]] (+ a b c))", 6),
        ("(map (fn [[k v]] [v k]) {:a 1 :b 2})", [[1, K("a")], [2, K("b")]]),
        ("((fn [{:keys [x]}] x) {:x 9})", 9),
        ("(if true 1 2)", 1),
        ("(if nil 1 2)", 2),
        ("(if false 1)", None),
        ("(if 0 :truthy :falsey)", K("truthy")),
        ('(if "" :truthy :falsey)', K("truthy")),
        ("(if [] :truthy :falsey)", K("truthy")),
        ("(if-not false 1 2)", 1),
        ("(when true 1 2)", 2),
        ("(when false 1)", None),
        ("(when-not false :x)", K("x")),
        ("(if-let [x (first [5])] (inc x) :none)", 6),
        ("(if-let [x (first [])] (inc x) :none)", K("none")),
        ("(if-let [[a] [[7]]] a)", [7]),
        ("(when-let [x 3] (* x x))", 9),
        ("(when-let [x nil] (* x x))", None),
        ("(cond false 1 nil 2 :else 3)", 3),
        ("(cond (= 1 1) :a :else :b)", K("a")),
        ("(cond false 1)", None),
        ("(case 2 1 :one 2 :two :many)", K("two")),
        ("(case 9 1 :one :many)", K("many")),
        ('(case "b" ("a" "b") :ab :other)', K("ab")),
        ("(case :k :k 1 2)", 1),
        ("(case nil nil :nil :other)", K("nil")),
        ("(do 1 2 3)", 3),
        ("(do)", None),
        ("(and)", True),
        ("(and 1 2)", 2),
        ("(and 1 nil 2)", None),
        ("(and 1 false 2)", False),
        ("(or)", None),
        ("(or nil false 3)", 3),
        ("(or nil false)", False),
        ("(-> 5 inc (* 2) (- 1))", 11),
        ("(->> [1 2 3] (map inc) (reduce +))", 9),
        ("(-> {:a {:b 1}} :a :b)", 1),
        ("(loop [i 0 acc 0] (if (< i 5) (recur (inc i) (+ acc i)) acc))", 10),
        ("(loop [[x & more] [1 2 3] out []] (if x (recur more (conj out (* x 10))) out))",
         [10, 20, 30]),
        ("(defn count-down [n] (if (zero? n) :done (recur (dec n)))) (count-down 100000)",
         K("done")),
        ("((fn [n & acc] (if (zero? n) acc (recur (dec n) (cons n acc)))) 3)", [1, 2, 3]),
        ("(loop [i 0] (cond (> i 3) i :else (recur (inc i))))", 4),
        ("(loop [i 0] (let [j (inc i)] (if (< j 3) (recur j) j)))", 3),
        ("(loop [i 0] (when (< i 3) (recur (inc i))))", None),
        ("(loop [i 0] (or (and (> i 2) i) (recur (inc i))))", 3),
        ("(for [x [1 2 3]] (* x x))", [1, 4, 9]),
        ("(for [x [1 2] y [:a :b]] [x y])", [[1, K("a")], [1, K("b")], [2, K("a")],
                                             [2, K("b")]]),
        ("(for [x (range 10) :when (even? x) :let [y (* x x)] :while (< y 40)] y)",
         [0, 4, 16, 36]),
        ("(for [[k v] {:a 1 :b 2}] (str (name k) v))", ["a1", "b2"]),
        ("(for [x [1 2 3] y [1 2 3] :while (< y x)] [x y])", [[2, 1], [3, 1], [3, 2]]),
        ("(doseq [x [1 2]] (println x))", None),
        ("(dotimes [i 3] (println i))", None),
        ("(quote [:a-vector 1])", [K("a-vector"), 1]),
        ("(comment (this is ignored))", None),
    ],
)
def test_special_forms(source, expected):
    assert value(source) == expected


def test_doseq_and_dotimes_print_in_order():
    result = run_program("(doseq [x [1 2] y [:a]] (println x y)) (dotimes [i 2] (println i))")
    assert result.prints == ("1 :a", "2 :a", "0", "1")


def test_return_stops_the_program():
    result = run_program("(println 1) (return (+ 1 2)) (println 2)")
    assert result.returned and result.value == 3 and result.prints == ("1",)
    inner = run_program("(defn f [] (map (fn [x] (when (= x 2) (return :found))) [1 2 3])) (f)")
    assert inner.returned and inner.value == K("found")
    assert run_program("(return)").value is None
    assert not run_program("(+ 1 2)").returned


def test_fail_stops_with_the_reason_as_text():
    result = run_program('(println "before") (fail "no data") (println "after")')
    assert result.failure.reason == "fail" and result.failure.message == "no data"
    assert result.prints == ("before",)
    assert failure("(fail {:code 42})").message == "{:code 42}"
    assert failure("(fail :nothing-found)").message == ":nothing-found"


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ("(if)", "if expects"),
        ("(if 1 2 3 4)", "if expects"),
        ("(let [x] x)", "even number"),
        ("(let x 1)", "binding vector"),
        ("(def)", "plain name"),
        ("(def tool/x 1)", "plain name"),
        ("(def x 1 2 3)", "def expects"),
        ("(def x 1 2)", "docstring of def must be a string"),
        ("(defn f)", "parameter vector"),
        ("(defn f ([x] x) ([x y] y))", "multi-arity"),
        ("(fn x)", "parameter vector"),
        ("(fn [x & y z] x)", "& must be followed"),
        ("(fn [1] 1)", "invalid binding form 1"),
        ("(recur 1)", "tail position"),
        ("(loop [i 0] (inc (recur i)))", "tail position"),
        ("(loop [i 0] (recur))", "recur expects 1"),
        ("(cond 1)", "pairs"),
        ("(case)", "case expects"),
        ("(return 1 2)", "return takes one value"),
        ("(fail)", "fail takes one reason"),
        ("(for [] 1)", "binding vector"),
        ("(for [x [1] :bogus 1] x)", "unknown for modifier"),
        ("(dotimes [1 2] 1)", "dotimes expects"),
        ("(quote a-symbol)", "quoted symbols"),
    ],
)
def test_malformed_special_forms_are_syntax_errors(source, message):
    err = failure(source)
    assert err.reason == "syntax_error"
    assert message in err.message
    assert "at line 1, column" in err.message


def test_runtime_failure_positions_and_later_forms():
    """A malformed form fails when it is reached; earlier top-level forms have run."""
    result = run_program("(def a 1)\n(println a)\n(let [x] x)")
    assert result.failure.reason == "syntax_error"
    assert "line 3, column 6" in result.failure.message  # the binding vector
    assert result.prints == ("1",) and result.memory["a"] == 1


def test_case_without_match_is_a_runtime_error():
    assert failure("(case 5 1 :a)").reason == "runtime_error"


def test_functions_see_later_definitions_at_call_time():
    assert value("(defn f [] (g)) (defn g [] 42) (f)") == 42


def test_closures_capture_locals():
    assert value("(defn adder [n] (fn [x] (+ x n))) (def add5 (adder 5)) (add5 1)") == 6
    assert value("(let [fs (for [i [1 2 3]] (fn [] i))] (map (fn [f] (f)) fs))") == [1, 2, 3]


def test_arity_errors_name_the_function():
    err = failure("(defn f [a b] a) (f 1)")
    assert err.reason == "arity_error"
    assert "wrong number of args (1) passed to: f (expects 2)" in err.message
    assert failure("((fn [a & r] a))").reason == "arity_error"
    assert failure("(:a {:a 1} 2 3)").reason == "arity_error"


def test_special_form_names_can_be_locals():
    assert value("(let [when 5] when)") == 5
