"""Hostile and extreme PTC-Lisp programs, with the outcome each must have.

A plain module (no pytest needed) shared by the sandbox tests
(``tests/lisp/test_lisp_limits.py``), the timing check in
``benchmarks/bench_lisp.py --adversarial`` and the fuzzer (``scripts/fuzz.py``):

* :data:`ADVERSARIAL_PROGRAMS` -- ``(name, program, expected_reason)``: the
  ``Failure.reason`` the run must end with, or ``None`` when the program is
  legal and must succeed (deep nesting, shared structure, big integers, lone
  surrogates, regexes, maps and sets as keys: the rest of turnpress must then
  handle the value);
* :func:`limits_for` -- the :class:`~turnpress.lisp.Limits` to run a program
  with: :data:`ADVERSARIAL_LIMITS` (modest, so the whole list runs in seconds)
  unless the program needs others to reach the limit it is about;
* :func:`random_program` -- a random, usually valid program, for fuzzing.

The expected reasons hold for those limits: the step limit is low enough that
work bombs meet it well before the clock, so the outcome does not depend on
the machine's speed.

>>> import random
>>> from turnpress.lisp import FAILURE_REASONS, run_program
>>> result = run_program(random_program(random.Random(1)), limits=ADVERSARIAL_LIMITS)
>>> result.success or result.failure.reason in FAILURE_REASONS
True
"""

from __future__ import annotations

import random

from turnpress.lisp import Limits

__all__ = ["ADVERSARIAL_LIMITS", "ADVERSARIAL_PROGRAMS", "ended_as_expected", "limits_for",
           "random_program"]

#: The limits every program runs with unless :data:`_LIMITS` names others.
ADVERSARIAL_LIMITS = Limits(max_steps=100_000, timeout_s=2.0, max_memory=64 * 2**20)

_SHARED_40 = "(def x (loop [x [1] i 0] (if (< i 40) (recur [x x] (inc i)) x)))"
_NESTED_1000 = "(def x (loop [x [] i 0] (if (< i 1000) (recur [x] (inc i)) x)))"
_NESTED_100K = "(def x (loop [x [] i 0] (if (< i 100000) (recur [x] (inc i)) x)))"
_BIG_STRING = '(def s (apply str (repeat 999999 "a")))'


def _let(n: int) -> str:
    return "(let [" + " ".join(f"a{i} 0" for i in range(n)) + "] a0)"


#: (name, program, expected failure reason or None for success)
ADVERSARIAL_PROGRAMS: list[tuple[str, str, str | None]] = [
    # --- issue 13 repros: built-in higher-order functions count their work
    ("juxt-bomb", "(loop [f inc i 0] (if (< i 23) (recur (juxt f f) (inc i)) "
                  "(do (f 1) :done)))", "step_limit"),
    ("comp-999999", "(def f (apply comp (repeat 999999 inc))) (dotimes [i 300] (f 1))",
     "step_limit"),
    ("comp-doubling", "(loop [f inc i 0] (if (< i 30) (recur (comp f f) (inc i)) (f 0)))",
     "step_limit"),
    ("partial-chain", "(loop [f inc i 0] (if (< i 15000) (recur (partial f) (inc i)) (f 1)))",
     "depth_limit"),
    ("complement-chain", "(loop [f odd? i 0] (if (< i 15000) (recur (complement f) (inc i)) "
                         "(f 1)))", "depth_limit"),
    ("every-doubling", "(loop [f odd? i 0] (if (< i 40) (recur (fn [x] (every? f [x x])) "
                       "(inc i)) (f 1)))", "step_limit"),
    ("constantly-juxt", "(loop [f (constantly 1) i 0] (if (< i 40) (recur (juxt f f) "
                        "(inc i)) (count (f))))", "step_limit"),
    ("sort-trivial-comparator", "(sort (fn [a b] a) (range 100000))", "step_limit"),
    ("sort-mixed-nil", "(sort (conj (vec (range 200000)) nil))", "step_limit"),
    ("map-of-comp", "(count (map (apply comp (repeat 1000 inc)) (range 1000)))",
     "step_limit"),
    # --- whole-collection work inside a loop counts in proportion to the collection
    ("equal-big-vectors", "(def a (vec (range 100000))) (def b (vec (range 100000))) "
                          "(dotimes [i 1000] (= a b))", "step_limit"),
    ("keys-big-map", "(def m (zipmap (range 100000) (range 100000))) "
                     "(dotimes [i 1000] (keys m))", "step_limit"),
    ("update-big-map", "(def m (zipmap (range 50000) (range 50000))) "
                       "(dotimes [i 1000] (update m 1 inc))", "step_limit"),
    ("last-of-big-set", "(def s (set (range 100000))) (dotimes [i 1000] (last s))",
     "step_limit"),
    ("includes-big-string", _BIG_STRING + ' (dotimes [i 100000] (includes? s "b"))',
     "step_limit"),
    ("assoc-many", "(count (apply assoc {} (range 200000)))", "step_limit"),
    ("apply-str-in-loop", _BIG_STRING + ' (dotimes [i 1000] (count (str s "b")))',
     "step_limit"),
    # --- reading and compiling count toward the time limit; the source has a size limit
    ("let-30000", _let(30_000), None),
    ("let-100000", _let(100_000), "timeout"),
    ("string-literal-8mb", '(count "' + "a" * 8_000_000 + '")', "size_limit"),
    ("int-literal-2000-digits", "(inc " + "7" * 2000 + ")", "syntax_error"),
    ("source-nesting-1000", "(" * 1000 + ")" * 1000, "syntax_error"),
    # --- wide forms run in a loop count every part
    ("wide-do", "(dotimes [i 100000] (do " + "1 " * 2000 + "))", "step_limit"),
    ("wide-vector", "(dotimes [i 100000] [i " + "1 " * 2000 + "])", "step_limit"),
    ("wide-cond", "(dotimes [i 100000] (cond " + "false 1 " * 1000 + ":else 2))",
     "step_limit"),
    ("wide-call", "(dotimes [i 100000] (+ i " + "1 " * 2000 + "))", "step_limit"),
    # --- memory
    ("memory-subs", _BIG_STRING + " (def xs (for [i (range 300000)] (subs s 1)))",
     "memory_limit"),
    ("memory-upper-case", _BIG_STRING + " (def xs (mapv (fn [i] (upper-case s)) "
                          "(range 300000)))", "memory_limit"),
    ("big-string-legal", '(count (apply str (repeat 999999 "a")))', None),
    ("string-doubling", '(loop [s "a"] (recur (str s s)))', "size_limit"),
    ("concat-doubling", "(loop [xs [1]] (recur (concat xs xs)))", "size_limit"),
    ("range-1e9", "(range 1e9)", "size_limit"),
    ("format-width", '(format "%999999999d" 1)', "size_limit"),
    # --- integers
    ("int-product-5000", "(apply * (repeat 5000 99999))", "size_limit"),
    ("int-squaring", "(loop [x 2] (recur (* x x)))", "size_limit"),
    ("int-doubling", "(loop [x 1] (recur (+ x x)))", "size_limit"),
    ("int-reduce-plus", "(reduce + (repeat 10000 (apply * (repeat 240 99999))))",
     None),
    ("int-1200-digits-legal", "(str (apply * (repeat 240 99999)))", None),
    # --- values the sandbox can legally make
    ("nested-1000", _NESTED_1000 + " (str x)", None),
    ("nested-100000", _NESTED_100K, None),
    ("nested-100000-str", _NESTED_100K + " (str x)", "depth_limit"),
    ("shared-40", _SHARED_40, None),
    ("shared-40-str", _SHARED_40 + " (str x)", "step_limit"),
    ("shared-40-println", _SHARED_40 + " (println x)", None),
    ("shared-40-set-item", _SHARED_40 + " (hash-set x)", "step_limit"),
    ("shared-40-equal", _SHARED_40 + " (= x (loop [y [1] i 0] (if (< i 40) "
                        "(recur [y y] (inc i)) y)))", "step_limit"),
    ("lone-surrogate", '(def s "\\ud800") (str s "x")', None),
    ("regex-value", '(def r #"\\s*,\\s*") (split "a , b,c" r)', None),
    ("regex-backtracking", '(re-find #"(a+)+b" "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaac")',
     "syntax_error"),
    ("maps-and-sets-as-keys", "(def m {{:a 1} 1 #{1 2} 2 [1 {:b #{3}}] 3}) "
                              "(def s #{{:a 1} #{2} [#{3}]}) [(get m {:a 1}) (count s)]",
     None),
    ("group-by-maps", "(group-by identity [{:a 1} {:a 1} #{2}])", None),
    # --- endless sequences and recursion
    ("iterate", "(take 5 (iterate inc 0))", "undefined_symbol"),
    ("range-endless", "(take 5 (range))", "arity_error"),
    ("cycle", "(take 5 (cycle [1 2]))", "undefined_symbol"),
    ("repeat-endless", "(take 5 (repeat 1))", "arity_error"),
    ("loop-forever", "(loop [] (recur))", "step_limit"),
    ("deep-recursion", "(defn f [n] (f (inc n))) (f 0)", "depth_limit"),
    ("mutual-recursion", "(defn a [n] (b n)) (defn b [n] (a n)) (a 1)", "depth_limit"),
    ("recursion-through-map", "(defn g [] (map (fn [_] (g)) [1])) (g)", "depth_limit"),
    ("println-flood", "(dotimes [i 5000] (println i))", "output_limit"),
]

_SHORT_ADVERSARIAL = [program for _, program, _ in ADVERSARIAL_PROGRAMS if len(program) < 2000]

_LIMITS: dict[str, Limits] = {
    # the repro limits of issue 13 (the step limit is the default one)
    "juxt-bomb": Limits(timeout_s=1.0, max_steps=200_000),
    "comp-999999": Limits(timeout_s=1.0, max_steps=200_000),
    "let-30000": Limits(timeout_s=10.0),
    "let-100000": Limits(timeout_s=0.2),
    "string-literal-8mb": Limits(timeout_s=1.0),
    # enough steps to reach the memory budget first
    "memory-subs": Limits(max_steps=10**8, timeout_s=5.0, max_memory=64 * 2**20),
    "memory-upper-case": Limits(max_steps=10**8, timeout_s=5.0, max_memory=64 * 2**20),
    "nested-100000": Limits(max_steps=1_000_000, timeout_s=5.0),
    "nested-100000-str": Limits(max_steps=10_000_000, timeout_s=10.0),
}


def ended_as_expected(reason: str | None, expected: str | None) -> bool:
    """Whether a program's failure ``reason`` is the ``expected`` one. Which of the step
    limit and the clock stops a busy program first depends on how loaded the machine
    is, so a ``step_limit`` program stopped by ``timeout`` also ended as it should."""
    return reason == expected or (expected == "step_limit" and reason == "timeout")


def limits_for(name: str) -> Limits:
    """The limits adversarial program ``name`` runs with."""
    return _LIMITS.get(name, ADVERSARIAL_LIMITS)


# --- random programs --------------------------------------------------------------------

_UNARY = ["inc", "dec", "count", "first", "rest", "str", "vec", "set", "keys", "vals",
          "reverse", "sort", "distinct", "frequencies", "flatten", "empty?", "nil?",
          "upper-case", "trim", "name", "not", "seq", "last", "butlast", "abs"]
_BINARY = ["+", "-", "*", "/", "=", "<", "get", "conj", "cons", "nth", "take", "drop",
           "concat", "merge", "into", "mod", "max", "min", "str", "contains?", "subs",
           "split", "join", "repeat", "range", "partition", "zipmap", "interpose"]
_HIGHER = ["map", "filter", "remove", "keep", "some", "every?", "sort-by", "group-by",
           "mapcat", "take-while", "drop-while", "reduce", "map-indexed"]
_FNS = ["inc", "odd?", "even?", "identity", "str", "count", "vector", ":a", "#(* % 2)",
        "(fn [x] (if (number? x) (inc x) x))", "(comp inc inc)", "(partial + 1)",
        "(juxt inc dec)", "(complement nil?)", "(constantly 1)", "first"]
_NAMES = ["x", "y", "z"]


_NUM_FNS = ["inc", "dec", "-", "abs"]
_NUM_OPS = ["+", "-", "*", "max", "min", "mod", "quot"]
_PREDS = ["odd?", "even?", "pos?", "zero?", "#(> % 3)", "(complement odd?)",
          "(fn [x] (< x 10))"]
_MAPPERS = ["inc", "dec", "#(* % 2)", "(comp inc inc)", "(partial + 1)", "(fn [x] (- x))",
            "abs", "(fn [x] (if (odd? x) x (inc x)))"]


def _num(rng: random.Random, depth: int, names: list[str]) -> str:
    """An expression that gives a number (if it does not fail)."""
    kind = rng.randrange(8 if depth > 0 else 2)
    if kind == 0:
        return str(rng.choice([0, 1, 2, 3, 7, 42, -5, 10**6, 2**62, rng.randint(-99, 99)]))
    if kind == 1:
        return rng.choice(["1.5", "-0.25", "3/4", "100"])
    sub = depth - 1
    if kind == 2:
        return f"({rng.choice(_NUM_FNS)} {_num(rng, sub, names)})"
    if kind == 3:
        return f"({rng.choice(_NUM_OPS)} {_num(rng, sub, names)} {_num(rng, sub, names)})"
    if kind == 4:
        return f"(count {_coll(rng, sub, names)})"
    if kind == 5:
        return f"(reduce {rng.choice(['+', 'max', 'min'])} 0 {_coll(rng, sub, names)})"
    if kind == 6:
        return f"(let [n {_num(rng, sub, names)}] (if (odd? n) (* n 3) (quot n 2)))"
    return f"(or (first {_coll(rng, sub, names)}) 0)"


def _coll(rng: random.Random, depth: int, names: list[str]) -> str:
    """An expression that gives a vector of numbers (if it does not fail)."""
    kind = rng.randrange(10 if depth > 0 else 2)
    if kind == 0:
        return "[" + " ".join(str(rng.randint(-9, 99)) for _ in range(rng.randrange(6))) + "]"
    if kind == 1:
        return f"(range {rng.randrange(30)})"
    sub = depth - 1
    if kind == 2:
        return f"(map {rng.choice(_MAPPERS)} {_coll(rng, sub, names)})"
    if kind == 3:
        return f"(filter {rng.choice(_PREDS)} {_coll(rng, sub, names)})"
    if kind == 4:
        return f"(concat {_coll(rng, sub, names)} {_coll(rng, sub, names)})"
    if kind == 5:
        return f"(sort {_coll(rng, sub, names)})"
    if kind == 6:
        return f"(for [v {_coll(rng, sub, names)} :when (odd? v)] (* v {_num(rng, 0, names)}))"
    if kind == 7:
        return f"(take {rng.randrange(10)} {_coll(rng, sub, names)})"
    if kind == 8:
        return f"(mapv count (vals (group-by {rng.choice(_PREDS)} {_coll(rng, sub, names)})))"
    if names:
        return f"(if (sequential? {rng.choice(names)}) {rng.choice(names)} [])"
    return "[]"


def _literal(rng: random.Random, depth: int, names: list[str]) -> str:
    kind = rng.randrange(9 if depth > 0 else 6)
    if kind == 0:
        return str(rng.choice([0, 1, -1, 2, 7, 42, 10**6, 2**62, rng.randint(-99, 99)]))
    if kind == 1:
        return rng.choice(['"a"', '"hello world"', '""', '"a,b,c"', '"\\u00e9"', '" x "'])
    if kind == 2:
        return rng.choice([":a", ":b", ":name", "nil", "true", "false"])
    if kind == 3:
        return rng.choice(["1.5", "-0.25", "##Inf", "##NaN", "3/4"])
    if kind == 4:
        return rng.choice(['#"\\s+"', '#","', "#{}", "[]", "{}"])
    if kind == 5:
        return rng.choice(names) if names else "nil"
    items = [_expr(rng, depth - 1, names) for _ in range(rng.randrange(4))]
    if kind == 6:
        return "[" + " ".join(items) + "]"
    if kind == 7:
        return "#{" + " ".join(items) + "}"
    pairs = [f"{_expr(rng, depth - 1, names)} {_expr(rng, depth - 1, names)}"
             for _ in range(rng.randrange(3))]
    return "{" + " ".join(pairs) + "}"


def _expr(rng: random.Random, depth: int, names: list[str]) -> str:
    if depth <= 0:
        return _literal(rng, 0, names)
    if rng.random() < 0.5:
        return _num(rng, depth, names) if rng.random() < 0.5 else _coll(rng, depth, names)
    kind = rng.randrange(16)
    sub = depth - 1
    if kind < 2:
        return _literal(rng, depth, names)
    if kind < 5:
        return _num(rng, depth, names)
    if kind < 8:
        return _coll(rng, depth, names)
    if kind == 8:
        return f"({rng.choice(_UNARY)} {_expr(rng, sub, names)})"
    if kind == 9:
        return f"({rng.choice(_BINARY)} {_expr(rng, sub, names)} {_expr(rng, sub, names)})"
    if kind == 10:
        return f"({rng.choice(_HIGHER)} {rng.choice(_FNS)} {_expr(rng, sub, names)})"
    if kind == 11:
        return f"(let [w {_expr(rng, sub, names)}] {_expr(rng, sub, [*names, 'w'])})"
    if kind == 12:
        return f"(if {_expr(rng, sub, names)} {_expr(rng, sub, names)} {_expr(rng, sub, names)})"
    if kind == 13:
        return (f"(loop [i 0 acc {_expr(rng, sub, names)}] (if (< i {rng.randrange(50)}) "
                f"(recur (inc i) (conj [acc] i)) acc))")
    if kind == 14:
        return f"(for [v {_expr(rng, sub, names)} :when (some? v)] {_expr(rng, sub, names)})"
    return f"(-> {_expr(rng, sub, names)} {rng.choice(_UNARY)} {rng.choice(_UNARY)})"


def random_program(rng: random.Random, depth: int = 4) -> str:
    """A random program of up to ``depth`` nested forms: it defines ``x``, ``y``, ``z``, then
    computes one more expression (``println`` now and then).

    Programs are syntactically valid and mostly well-typed (numbers go where numbers
    are expected most of the time); many still fail at run time (type errors, arity
    errors...), which is the point: every run must end with a value or a documented
    failure reason. Now and then one of :data:`ADVERSARIAL_PROGRAMS` is mixed in.
    """
    names: list[str] = []
    lines = []
    for name in _NAMES:
        lines.append(f"(def {name} {_expr(rng, depth - 1, names)})")
        names.append(name)
    last = _expr(rng, depth, names)
    lines.append(f"(println {last})" if rng.random() < 0.2 else last)
    if rng.random() < 0.02:
        lines.append(rng.choice(_SHORT_ADVERSARIAL))
    return "\n".join(lines)
