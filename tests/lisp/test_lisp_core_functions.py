"""Core functions: one table of (program, expected value), then the error cases."""

from __future__ import annotations

import pytest

from turnpress import Keyword
from turnpress.lisp import run_program

K = Keyword


def value(source: str, **kwargs):
    result = run_program(source, **kwargs)
    assert result.failure is None, result.failure
    return result.value


CASES = [
    # arithmetic
    ("(+)", 0), ("(+ 1 2 3)", 6), ("(+ 1 2.5)", 3.5), ("(- 10 1 2)", 7), ("(- 5)", -5),
    ("(*)", 1), ("(* 2 3 4)", 24), ("(/ 10 4)", 2.5), ("(/ 10 5)", 2), ("(/ 10.0 5)", 2.0),
    ("(/ 4)", 0.25), ("(mod 7 3)", 1), ("(mod -7 3)", 2), ("(rem -7 3)", -1),
    ("(quot 7 2)", 3), ("(quot -7 2)", -3), ("(quot 7.5 2)", 3.0), ("(rem 7.5 2)", 1.5),
    ("(inc 1)", 2), ("(dec 1.5)", 0.5), ("(max 1 5 3)", 5), ("(min 4 2 8)", 2),
    ("(abs -3)", 3), ("(Math/abs -2.5)", 2.5), ("(int 3.9)", 3), ("(double 2)", 2.0),
    ("(Math/floor 2.7)", 2.0), ("(Math/ceil 2.1)", 3.0), ("(Math/round 2.5)", 3),
    ("(Math/sqrt 16)", 4.0), ("(Math/pow 2 10)", 1024.0), ("(clojure.math/floor 1.5)", 1.0),
    ('(parse-long "42")', 42), ('(parse-long "4x")', None), ('(parse-double "2.5")', 2.5),
    ('(Integer/parseInt "7")', 7),
    # comparison and logic
    ("(= 1 1)", True), ("(= 1 1.0)", False), ("(== 1 1.0)", True), ("(= [1 2] [1 2])", True),
    ("(= {:a [1]} {:a [1]})", True), ("(= #{1 2} #{2 1})", True), ("(= true 1)", False),
    ("(= nil false)", False), ("(= :a :a :a)", True), ("(not= 1 2)", True),
    ("(< 1 2 3)", True), ("(< 1 3 2)", False), ("(> 3 2)", True), ("(<= 1 1 2)", True),
    ("(>= 2 2 1)", True), ('(< "a" "b")', True), ("(not nil)", True), ("(not 0)", False),
    ("(compare 1 2)", -1), ('(compare "b" "a")', 1), ("(compare nil 1)", -1),
    ("(compare [1 2] [1 3])", -1), ("(compare [1 2 3] [9])", 1), ("(boolean 0)", True),
    ("(identity :x)", K("x")),
    # predicates
    ("(nil? nil)", True), ("(some? false)", True), ("(empty? [])", True),
    ("(empty? nil)", True), ('(empty? "")', True), ("(empty? {:a 1})", False),
    ("(zero? 0)", True), ("(pos? 1)", True), ("(neg? -1)", True), ("(even? 4)", True),
    ("(odd? 3)", True), ("(number? 1.5)", True), ("(number? true)", False),
    ("(int? 1)", True), ("(float? 1.0)", True), ('(string? "s")', True),
    ("(keyword? :k)", True), ("(map? {})", True), ("(vector? [])", True),
    ("(set? #{})", True), ("(coll? {})", True), ("(fn? inc)", True), ("(fn? #(1))", True),
    ("(true? true)", True), ("(false? nil)", False), ("(boolean? false)", True),
    # lookup
    ("(get {:a 1} :a)", 1), ("(get {:a 1} :b 9)", 9), ("(get [10 20] 1)", 20),
    ("(get [10 20] -1)", None), ("(get #{:a} :a)", K("a")), ('(get "abc" 1)', "b"),
    ("(get nil :a)", None), ('(get {"a" 1} :a)', 1), ('(get {:a 1 "a" 2} :a)', 1),
    ("(get-in {:a {:b [5 6]}} [:a :b 1])", 6), ("(get-in {:a 1} [:x :y] :none)", K("none")),
    ('(get-in {"user" {"name" "Bo"}} [:user :name])', "Bo"),
    ("(contains? {:a nil} :a)", True), ('(contains? {"a" 1} :a)', True),
    ("(contains? #{1} 1)", True), ("(contains? [5] 0)", True), ("(contains? [5] 1)", False),
    ("(keys {:a 1 :b 2})", [K("a"), K("b")]), ("(vals {:a 1 :b 2})", [1, 2]),
    ("(keys nil)", None), ("(find {:a 1} :a)", [K("a"), 1]),
    ("(select-keys {:a 1 :b 2 :c 3} [:a :c :z])", {K("a"): 1, K("c"): 3}),
    ('(select-keys {"a" 1 "b" 2} [:a])', {K("a"): 1}),
    ("({:a 1} :a)", 1), ("({:a 1} :b 0)", 0), ("(#{1 2} 2)", 2), ("(#{1 2} 3)", None),
    ("([7 8] 1)", 8), ("(:a {:a 1})", 1), ("(:b {:a 1} :dflt)", K("dflt")),
    # building / updating
    ("(assoc {:a 1} :b 2)", {K("a"): 1, K("b"): 2}), ("(assoc nil :a 1)", {K("a"): 1}),
    ("(assoc [1 2] 0 9)", [9, 2]), ("(assoc [1 2] 2 3)", [1, 2, 3]),
    ("(assoc {} :a 1 :b 2)", {K("a"): 1, K("b"): 2}),
    ('(assoc {"a" 1} :a 2)', {"a": 2}),
    ("(assoc-in {} [:a :b] 1)", {K("a"): {K("b"): 1}}),
    ("(assoc-in {:a {:c 2}} [:a :b] 1)", {K("a"): {K("c"): 2, K("b"): 1}}),
    ("(dissoc {:a 1 :b 2} :a)", {K("b"): 2}), ('(dissoc {"a" 1} :a)', {}),
    ("(update {:n 1} :n inc)", {K("n"): 2}), ("(update {:n 1} :n + 10)", {K("n"): 11}),
    ('(update {"n" 1} :n inc)', {"n": 2}), ("(update {} :xs conj 1)", {K("xs"): [1]}),
    ("(update-in {:a {:n 1}} [:a :n] * 5)", {K("a"): {K("n"): 5}}),
    ("(merge {:a 1} {:b 2} nil {:a 3})", {K("a"): 3, K("b"): 2}), ("(merge nil nil)", None),
    ("(merge-with + {:a 1} {:a 2 :b 1})", {K("a"): 3, K("b"): 1}),
    ("(zipmap [:a :b] [1 2 3])", {K("a"): 1, K("b"): 2}),
    ("(conj [1 2] 3 4)", [1, 2, 3, 4]), ("(conj nil 1)", [1]), ("(conj #{1} 2)", {1, 2}),
    ("(conj {:a 1} [:b 2])", {K("a"): 1, K("b"): 2}), ("(conj {:a 1} {:c 3})",
                                                        {K("a"): 1, K("c"): 3}),
    ("(cons 0 [1 2])", [0, 1, 2]), ("(into [] #{1})", [1]), ("(into [1] [2 3])", [1, 2, 3]),
    ("(into {} [[:a 1] [:b 2]])", {K("a"): 1, K("b"): 2}), ("(into #{} [1 1 2])", {1, 2}),
    ("(disj #{1 2} 1)", {2}), ("(vec #{3})", [3]), ("(vec {:a 1})", [[K("a"), 1]]),
    ("(set [1 1 2])", {1, 2}), ("(set [[1 2] [1 2]])", {(1, 2)}), ("(vector 1 2)", [1, 2]),
    ("(list 1 2)", [1, 2]), ("(hash-map :a 1)", {K("a"): 1}), ("(hash-set 1 1)", {1}),
    ('(keyword "a")', K("a")), ("(keyword :a)", K("a")), ("(name :a)", "a"),
    ('(name "s")', "s"),
    # sequences
    ("(count [1 2])", 2), ("(count nil)", 0), ('(count "héllo")', 5), ("(count {:a 1})", 1),
    ("(first [1 2])", 1), ("(first [])", None), ("(first {:a 1})", [K("a"), 1]),
    ('(first "ab")', "a"), ("(second [1 2])", 2), ("(last [1 2 3])", 3), ("(last [])", None),
    ("(rest [1 2 3])", [2, 3]), ("(rest [])", []), ("(next [1])", None),
    ("(nth [1 2 3] 1)", 2), ("(nth [1] 5 :d)", K("d")), ("(seq [])", None),
    ("(seq {:a 1})", [[K("a"), 1]]), ("(not-empty [])", None), ("(not-empty [1])", [1]),
    ("(map inc [1 2])", [2, 3]), ("(map + [1 2] [10 20 30])", [11, 22]),
    ("(mapv :a [{:a 1} {:a 2}])", [1, 2]), ("(map {:a 1 :b 2} [:a :b :c])", [1, 2, None]),
    ("(filter odd? [1 2 3])", [1, 3]), ("(filterv #{1 3} [1 2 3])", [1, 3]),
    ("(remove odd? [1 2 3])", [2]), ("(keep #(when (odd? %) (* % 2)) [1 2 3])", [2, 6]),
    ("(map-indexed vector [:a :b])", [[0, K("a")], [1, K("b")]]),
    ("(mapcat (fn [x] [x x]) [1 2])", [1, 1, 2, 2]),
    ("(reduce + [1 2 3])", 6), ("(reduce + 10 [1 2])", 13), ("(reduce + [])", 0),
    ("(reduce max [3])", 3), ("(reduce conj [] '(1 2))", [1, 2]),
    ("(reduce-kv (fn [acc k v] (+ acc v)) 0 {:a 1 :b 2})", 3),
    ("(reduce (fn [m [k v]] (assoc m v k)) {} {:a 1})", {1: K("a")}),
    ("(some even? [1 2 3])", True), ("(some #{3} [1 3])", 3), ("(some even? [1])", None),
    ("(every? pos? [1 2])", True), ("(every? pos? [])", True), ("(not-any? neg? [1])", True),
    ("(not-every? pos? [1 -1])", True),
    ("(sort [3 1 2])", [1, 2, 3]), ("(sort > [3 1 2])", [3, 2, 1]),
    ('(sort ["b" "a"])', ["a", "b"]), ("(sort [:b :a])", [K("a"), K("b")]),
    ("(sort [2 nil 1])", [None, 1, 2]), ("(sort [[2 1] [1] [1 0]])", [[1], [1, 0], [2, 1]]),
    ("(sort (fn [a b] (> a b)) [1 3 2])", [3, 2, 1]), ("(sort compare [2 1])", [1, 2]),
    ("(sort-by :n [{:n 2} {:n 1}])", [{K("n"): 1}, {K("n"): 2}]),
    ("(sort-by count > [[1] [1 2 3] [1 2]])", [[1, 2, 3], [1, 2], [1]]),
    ("(sort-by first [[2 :a] [1 :b] [2 :c] [1 :d]])",
     [[1, K("b")], [1, K("d")], [2, K("a")], [2, K("c")]]),
    ("(sort-by - [1 3 2])", [3, 2, 1]),
    ("(group-by even? [1 2 3 4])", {False: [1, 3], True: [2, 4]}),
    ("(group-by :t [{:t :a} {:t :b} {:t :a}])",
     {K("a"): [{K("t"): K("a")}, {K("t"): K("a")}], K("b"): [{K("t"): K("b")}]}),
    ("(get (group-by (juxt :a :b) [{:a 1 :b 2}]) [1 2])", [{K("a"): 1, K("b"): 2}]),
    ("(frequencies [:a :b :a])", {K("a"): 2, K("b"): 1}),
    ("(distinct [1 2 1 3 2])", [1, 2, 3]), ("(distinct [[1] [1]])", [[1]]),
    ("(take 2 [1 2 3])", [1, 2]), ("(take 5 [1])", [1]), ("(take -1 [1])", []),
    ("(drop 2 [1 2 3])", [3]), ("(take-last 2 [1 2 3])", [2, 3]),
    ("(drop-last [1 2 3])", [1, 2]), ("(drop-last 2 [1 2 3])", [1]), ("(butlast [1 2])", [1]),
    ("(take-while pos? [1 2 -1 3])", [1, 2]), ("(drop-while pos? [1 -1 2])", [-1, 2]),
    ("(reverse [1 2 3])", [3, 2, 1]), ("(concat [1] [2 3] nil)", [1, 2, 3]),
    ("(partition 2 [1 2 3 4 5])", [[1, 2], [3, 4]]),
    ("(partition 2 1 [1 2 3])", [[1, 2], [2, 3]]),
    ("(partition-all 2 [1 2 3])", [[1, 2], [3]]), ("(interpose 0 [1 2 3])", [1, 0, 2, 0, 3]),
    ("(flatten [1 [2 [3 [4]]] 5])", [1, 2, 3, 4, 5]), ("(flatten 5)", []),
    ("(range 3)", [0, 1, 2]), ("(range 1 4)", [1, 2, 3]), ("(range 10 0 -3)", [10, 7, 4, 1]),
    ("(range 0 1 0.25)", [0, 0.25, 0.5, 0.75]), ("(repeat 2 :x)", [K("x"), K("x")]),
    ("(max-key count [1] [1 2] [3])", [1, 2]), ("(min-key :a {:a 2} {:a 1})", {K("a"): 1}),
    # functions
    ("(apply + [1 2 3])", 6), ("(apply + 1 2 [3])", 6), ("(apply max [4 9 2])", 9),
    ("((comp inc inc) 1)", 3), ("((comp str inc) 1)", "2"), ("((comp) 5)", 5),
    ("((partial + 10) 1 2)", 13), ("((complement even?) 3)", True),
    ("((juxt :a :b) {:a 1 :b 2})", [1, 2]), ("((constantly 7) 1 2)", 7),
    # strings
    ('(str "a" 1 nil :k 1.5)', "a1:k1.5"), ('(str)', ""), ("(str [1 \"b\" nil])", '[1 "b" nil]'),
    ("(str {:a 1})", "{:a 1}"), ("(str true)", "true"), ("(str 1.0)", "1.0"),
    ('(subs "hello" 1 3)', "el"), ('(subs "hello" 2)', "llo"),
    ('(split "a,b,,c,," ",")', ["a", "b", "", "c"]), ('(split "abc" "")', ["a", "b", "c"]),
    ('(split "" ",")', [""]), ('(split "a-b-c" "-" 2)', ["a", "b-c"]),
    ('(clojure.string/split "a b" " ")', ["a", "b"]), ('(str/split "a;b" ";")', ["a", "b"]),
    ('(join ", " [1 "a" :k nil])', "1, a, :k, "), ('(join [1 2])', "12"),
    ('(join [1 2] "-")', "1-2"), ('(clojure.string/join "-" ["x" "y"])', "x-y"),
    ('(upper-case "abc")', "ABC"), ('(lower-case "ABC")', "abc"),
    ('(capitalize "hELLO")', "Hello"), ('(trim "  x ")', "x"), ('(triml " x ")', "x "),
    ('(trimr " x ")', " x"), ('(blank? "  ")', True), ("(blank? nil)", True),
    ('(includes? "hello" "ell")', True), ('(starts-with? "hello" "he")', True),
    ('(ends-with? "hello" "lo")', True), ('(index-of "hello" "l")', 2),
    ('(index-of "hello" "z")', None), ('(last-index-of "hello" "l")', 3),
    ('(replace "a-b-c" "-" "+")', "a+b+c"), ("(replace {1 :one} [1 2])", [K("one"), 2]),
    ('(clojure.string/replace "aXb" "X" "")', "ab"), ('(split-lines "a\\nb\\r\\nc")',
                                                     ["a", "b", "c"]),
    ('(clojure.string/reverse "abc")', "cba"), ('(reverse "ab")', ["b", "a"]),
    ('(format "%s has %d items (%.1f%%)" "cart" 3 12.345)', "cart has 3 items (12.3%)"),
    ('(format "%5s|%-5s|%05d|%,d|%x" "a" "b" 42 1234567 255)',
     "    a|b    |00042|1,234,567|ff"),
    ('(format "%s" nil)', "nil"), ('(format "%s" [1 2])', "[1 2]"),
]


@pytest.mark.parametrize(("source", "expected"), CASES)
def test_core_function(source, expected):
    result = value(source)
    assert result == expected
    if isinstance(expected, (bool, int, float)) and expected is not None:
        assert type(result) is type(expected)


@pytest.mark.parametrize(
    ("source", "reason", "fragment"),
    [
        ("(/ 1 0)", "runtime_error", "division by zero"),
        ("(mod 1 0)", "runtime_error", "division by zero"),
        ("(+ 1 nil)", "type_error", "+ expects numbers, got nil"),
        ('(+ "a" "b")', "type_error", "expects numbers"),
        ("(+ true 1)", "type_error", "expects numbers"),
        ("(inc nil)", "type_error", "inc expects numbers, got nil"),
        ("(< 1 nil)", "type_error", "< cannot be applied to (integer, nil)"),
        ("(count 5)", "type_error", "count not supported"),
        ("(first 5)", "type_error", "cannot treat integer as a sequence"),
        ("(map inc 5)", "type_error", "sequence"),
        ("(map inc [nil])", "type_error", "inc expects numbers"),
        ("(nth [1] 3)", "runtime_error", "out of bounds"),
        ('(subs "abc" 2 9)', "runtime_error", "out of bounds"),
        ("(assoc [1] 5 0)", "runtime_error", "out of bounds"),
        ("(assoc 1 :a 2)", "type_error", "assoc expects a map or vector"),
        ("(upper-case nil)", "type_error", "upper-case expects a string, got nil"),
        ("(sort [1 :a])", "type_error", "cannot compare"),
        ("(5 1)", "type_error", "cannot call"),
        ('("f" 1)', "type_error", "cannot call"),
        ("(let [x 5] (x 1))", "type_error", "cannot call integer 5"),
        ("(inc 1 2)", "arity_error", "wrong number of args (2) passed to: inc (expects 1)"),
        ("(map)", "arity_error", "map"),
        ("(apply inc [1 2])", "arity_error", "inc"),
        ("(get)", "arity_error", "get"),
        ("(range)", "arity_error", "range"),
        ("(range 0 10 0)", "runtime_error", "step 0"),
        ("(keyword 5)", "type_error", "keyword"),
        ('(format "%d" 1.5)', "type_error", "%d"),
        ('(format "%s %s" 1)', "runtime_error", "not enough arguments"),
        ("(reduce-kv + 0 [1])", "type_error", "reduce-kv expects a map"),
        ("(set [{:a 1} {:a 1}])", None, None),
    ],
)
def test_core_function_errors(source, reason, fragment):
    result = run_program(source)
    if reason is None:
        assert result.failure is None
        return
    assert result.failure is not None, result.value
    assert result.failure.reason == reason
    assert fragment in result.failure.message


def test_maps_as_set_members_and_keys():
    result = value("(count (set [{:a 1} {:a 1} {:a 2}]))")
    assert result == 2
    grouped = value("(group-by #(select-keys % [:a]) [{:a 1 :b 1} {:a 1 :b 2}])")
    assert list(grouped.values()) == [[{K("a"): 1, K("b"): 1}, {K("a"): 1, K("b"): 2}]]
    assert value("(get {[1 2] :v} [1 2])") == K("v")


def test_core_functions_never_mutate_their_inputs():
    data = {"xs": [3, 1, 2], "m": {"a": 1}}
    result = run_program(
        "(sort data/xs) (conj data/xs 4) (assoc data/m :b 2) (dissoc data/m :a)"
        "(update data/m :a inc) (reverse data/xs) (into data/xs [5])", data=data)
    assert result.success
    assert data == {"xs": [3, 1, 2], "m": {"a": 1}}


def test_tuples_from_data_act_as_vectors():
    assert value("(map inc data/t)", data={"t": (1, 2)}) == [2, 3]
    assert value("(= data/t [1 2])", data={"t": (1, 2)}) is True
    assert value("(conj data/t 3)", data={"t": (1, 2)}) == [1, 2, 3]
