"""Memory across runs: definitions, docstrings, order, return types (DEF-001..DEF-009)."""

from __future__ import annotations

import pickle

from turnpress import Fn, Keyword, Memory
from turnpress.lisp import Closure, run_program

K = Keyword


def test_def_001_redefinition_within_a_run_keeps_the_final_value():
    """DEF-001: (def x 1) (def x 2) in one run leaves only x = 2."""
    result = run_program("(def x 1) (def y 0) (def x 2)")
    assert dict(result.memory) == {"x": 2, "y": 0}


def test_def_002_redefinition_across_runs_latest_wins():
    """DEF-002: a later run's definition replaces the earlier one."""
    first = run_program("(def x 1) (def y 2)")
    second = run_program("(def x 10)", memory=first.memory)
    assert dict(second.memory) == {"x": 10, "y": 2}
    assert dict(first.memory) == {"x": 1, "y": 2}  # copy on write


def test_def_003_def_nil():
    """DEF-003: (def x nil) defines x as nil."""
    result = run_program("(def x nil) (nil? x)")
    assert "x" in result.memory and result.memory["x"] is None and result.value is True


def test_def_004_def_empty_vector():
    """DEF-004: (def x []) defines an empty list."""
    assert run_program("(def x [])").memory["x"] == []


def test_def_005_both_def_and_defn_take_docstrings():
    """DEF-005: (def x "doc" v) goes to Memory.docs; (defn f "doc" ...) to Fn.doc."""
    result = run_program('(def users "Active users" [1 2]) (defn f "Doubles x" [x] (* 2 x))')
    assert result.memory.docs == {"users": "Active users"}
    assert result.memory["users"] == [1, 2]
    f = result.memory["f"]
    assert isinstance(f, Fn) and f.doc == "Doubles x" and f.params == ("x",)
    assert run_program('(def s "just a string")').memory.docs == {}


def test_def_006_docstrings_are_captured_at_execution_time():
    """DEF-006: a docstring is recorded when the def runs (and only if it runs)."""
    result = run_program('(when false (def x "never" 1)) (def y "ran" 2)')
    assert result.memory.docs == {"y": "ran"} and "x" not in result.memory
    redefined = run_program("(def y 3)", memory=result.memory)
    assert redefined.memory.docs == {}  # the latest def had no docstring
    assert result.memory.docs == {"y": "ran"}


def test_def_007_semicolons_removed_from_docstrings():
    """DEF-007: every ; is removed from def and defn docstrings."""
    result = run_program('(def x "a; b;; c" 1) (defn f "x;y" [] 1)')
    assert result.memory.docs["x"] == "a b c"
    assert result.memory["f"].doc == "xy"


def test_def_008_memory_accumulates_across_runs():
    """DEF-008: each run starts from the previous memory and adds to it."""
    m1 = run_program("(def a 1)").memory
    m2 = run_program("(def b (+ a 1))", memory=m1).memory
    m3 = run_program("(defn c [] (+ a b))", memory=m2).memory
    assert list(m3) == ["a", "b", "c"]
    assert run_program("(c)", memory=m3).value == 3


def test_def_009_order_of_definition():
    """DEF-009: memory keeps the order of first definition; redefinition keeps the place."""
    m1 = run_program("(def b 1) (def a 2) (defn z [] 1)").memory
    m2 = run_program("(def c 3) (def b 10)", memory=m1).memory
    assert list(m2) == ["b", "a", "z", "c"] and m2["b"] == 10


def test_failed_runs_keep_completed_definitions():
    """REPL semantics: definitions made before an error survive into memory."""
    previous = run_program('(def keep "me" 1)').memory
    result = run_program('(def a 1) (def b "doc" 2) (undefined-fn) (def c 3)', memory=previous)
    assert result.failure.reason == "undefined_symbol"
    assert dict(result.memory) == {"keep": 1, "a": 1, "b": 2}
    assert result.memory.docs == {"keep": "me", "b": "doc"}
    assert dict(previous) == {"keep": 1} and previous.docs == {"keep": "me"}


def test_given_mappings_are_never_mutated():
    memory = {"x": [1]}
    data = {"d": {"k": [1]}}
    result = run_program("(def x (conj x 2)) (def y (assoc data/d :z 1))", memory=memory,
                         data=data)
    assert result.success
    assert memory == {"x": [1]} and data == {"d": {"k": [1]}}
    assert result.memory["x"] == [1, 2]


def test_memory_is_a_memory_and_plain_mappings_work():
    result = run_program("(+ a 1)", memory={"a": 1})
    assert isinstance(result.memory, Memory) and result.value == 2
    assert run_program("1").memory == {}


def test_closures_are_fn_subclasses():
    result = run_program("(defn add [a b] (+ a b)) (def f (fn [x & more] x))")
    add = result.memory["add"]
    assert isinstance(add, Closure) and isinstance(add, Fn)
    assert add.params == ("a", "b") and add.name == "add"
    assert result.memory["f"].params == ("x", "&", "more")
    destructured = run_program("(defn g [{:keys [a]} [b c]] a)").memory["g"]
    assert destructured.params == ("{:keys [a]}", "[b c]")
    assert add != run_program("(defn add [a b] (+ a b))").memory["add"]  # identity


def test_return_type_is_the_label_of_the_last_return_value():
    """Each call records type_label(return value); memory carries the last one."""
    result = run_program("(defn f [x] (if x [1 2] \"s\")) (f true) (f nil)")
    assert result.memory["f"].return_type == "string"
    assert run_program("(defn g [] 1)").memory["g"].return_type is None
    called = run_program("(defn h [] {:a 1}) (map (fn [_] (h)) [1 2])").memory["h"]
    assert called.return_type == "map[1]"


def test_return_type_survives_into_the_next_turn():
    m1 = run_program("(defn f [n] (vec (range n))) (f 3)").memory
    assert m1["f"].return_type == "list[3]"
    m2 = run_program("(def y 1)", memory=m1).memory
    assert m2["f"].return_type == "list[3]"  # not called: unchanged
    m3 = run_program("(f 5)", memory=m2).memory
    assert m3["f"].return_type == "list[5]"
    assert m1["f"].return_type == "list[3]"


def test_return_type_recorded_for_failed_runs_and_aliases():
    result = run_program("(defn f [] :k) (def g f) (g) (fail \"stop\")")
    assert result.failure.reason == "fail"
    assert result.memory["f"].return_type == "keyword"
    assert result.memory["g"] is result.memory["f"]


def test_closures_from_memory_keep_their_captured_values():
    m1 = run_program("(defn make [n] (fn [x] (* x n))) (def triple (make 3))").memory
    assert run_program("(triple 5)", memory=m1).value == 15
    assert run_program("((make 2) 5)", memory=m1).value == 10


def test_memory_can_be_pickled():
    memory = run_program('(def x "doc" [1 :a]) (defn f [a] (inc a)) (f 1)').memory
    restored = pickle.loads(pickle.dumps(memory))
    assert restored["x"] == [1, K("a")] and restored.docs == {"x": "doc"}
    assert run_program("(f 41)", memory=restored).value == 42
