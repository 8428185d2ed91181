"""The PTC-Lisp reader: tokens, collections, reader macros, positions and syntax errors."""

from __future__ import annotations

import math

import pytest

from turnpress import Keyword
from turnpress.lisp import LispSyntaxError, read_program, run_program
from turnpress.lisp.forms import ListForm, MapForm, SetForm, Symbol, VectorForm
from turnpress.lisp.regex import Regex


def read1(source: str):
    forms = read_program(source)
    assert len(forms) == 1
    return forms[0]


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("nil", None),
        ("true", True),
        ("false", False),
        ("42", 42),
        ("-7", -7),
        ("+3", 3),
        ("12N", 12),
        ("1.5", 1.5),
        ("-0.25", -0.25),
        ("1e3", 1000.0),
        ("2.5E-1", 0.25),
        ("1.", 1.0),
        ("1/2", 0.5),
        ("6/3", 2),
        ('"hi"', "hi"),
        ('"a\\"b\\\\c\\nd\\te"', 'a"b\\c\nd\te'),
        ('"\\u00e9"', "é"),
        ('"multi\nline"', "multi\nline"),
        (":name", Keyword("name")),
        (":ns/name", Keyword("ns/name")),
        ("\\a", "a"),
        ("\\space", " "),
        ("\\newline", "\n"),
    ],
)
def test_scalars(source, expected):
    value = read1(source)
    assert value == expected and type(value) is type(expected)


def test_special_floats():
    assert read1("##Inf") == math.inf
    assert read1("##-Inf") == -math.inf
    assert math.isnan(read1("##NaN"))


def test_symbols_and_namespaces():
    sym = read1("tool/search")
    assert isinstance(sym, Symbol) and sym.ns == "tool" and sym.local == "search"
    assert read1("data/products").ns == "data"
    assert read1("clojure.string/join").ns == "clojure.string"
    plain = read1("even?")
    assert plain.ns is None and plain.name == "even?"
    assert read1("/").name == "/" and read1("/").ns is None
    assert read1("->>").name == "->>"


def test_collections_and_comments():
    forms = read_program("""
        ; a comment line
        [1, 2 3] ; trailing comment
        {:a 1, :b [2]}
        #{1 2}
        (f x)
        ()
    """)
    vec, mapping, a_set, call, empty = forms
    assert isinstance(vec, VectorForm) and list(vec) == [1, 2, 3]
    assert isinstance(mapping, MapForm) and list(mapping) == [Keyword("a"), 1, Keyword("b"),
                                                                VectorForm([2])]
    assert isinstance(a_set, SetForm) and list(a_set) == [1, 2]
    assert isinstance(call, ListForm) and call[0] == Symbol("f")
    assert isinstance(empty, ListForm) and len(empty) == 0


def test_positions_are_one_based():
    forms = read_program("(a)\n  [b\n   (c)]")
    assert (forms[0].line, forms[0].column) == (1, 1)
    assert (forms[1].line, forms[1].column) == (2, 3)
    assert (forms[1][1].line, forms[1][1].column) == (3, 4)
    assert (forms[1][0].line, forms[1][0].column) == (2, 4)


def test_fn_shorthand_expands_to_fn():
    form = read1("#(+ % %2 1)")
    assert form[0] == Symbol("fn")
    assert list(form[1]) == [Symbol("%1"), Symbol("%2")]
    assert list(form[2]) == [Symbol("+"), Symbol("%1"), Symbol("%2"), 1]
    rest = read1("#(apply + %&)")
    assert list(rest[1]) == [Symbol("&"), Symbol("%&")]
    assert run_program("(#(* % %) 7)").value == 49
    assert run_program("(map #(vector %1 %2) [1 2] [:a :b])").value == [
        [1, Keyword("a")], [2, Keyword("b")]]
    assert run_program("(#(count %&) 1 2 3)").value == 3


def test_quote_reads_as_quote_form():
    form = read1("'(1 2)")
    assert form[0] == Symbol("quote") and list(form[1]) == [1, 2]
    assert run_program("'(1 2 3)").value == [1, 2, 3]
    assert run_program("(quote {:a [1]})").value == {Keyword("a"): [1]}


def test_regex_literals():
    assert read1('#","') == ","
    assert read1('#"\\|"') == "|"
    assert read1('#"\\."') == "."
    assert read1('#"\\s+"') == Regex("\\s+", ws_runs=True)
    assert read1('#"\\s*,\\s*"') == Regex("\\s*,\\s*", ",", True, True)
    assert run_program('(split "a  b\\tc" #"\\s+")').value == ["a", "b", "c"]
    assert run_program('(split " a , b,c " #"\\s*,\\s*")').value == [" a", "b", "c "]
    assert run_program('(clojure.string/replace "a  b" #"\\s+" "_")').value == "a_b"


@pytest.mark.parametrize(
    ("source", "message", "line", "column"),
    [
        ("(+ 1 2", "unclosed (", 1, 1),
        ("(+ 1 2))", "unexpected )", 1, 8),
        ("(def x\n  [1 2)", "expected ]", 2, 7),
        ('"abc', "unterminated string", 1, 1),
        ('(str "a\\qb")', "unsupported escape", 1, 8),
        ("{:a}", "even number", 1, 1),
        ("#(#(inc %))", "nested #()", 1, 3),
        ("@x", "unsupported reader syntax", 1, 1),
        ("1abc", "invalid number", 1, 1),
        ("::a", "invalid keyword", 1, 1),
        ('#"a.*b"', "unsupported regular expression", 1, 1),
        ("'", "must be followed by a form", 1, 1),
        ("\n\n   (let [x 1] x", "unclosed (", 3, 4),
    ],
)
def test_syntax_errors_carry_line_and_column(source, message, line, column):
    with pytest.raises(LispSyntaxError) as info:
        read_program(source)
    err = info.value
    assert message in err.message
    assert (err.line, err.column) == (line, column)
    assert err.message.endswith(f"at line {line}, column {column}")


def test_run_program_reports_syntax_errors_as_failures():
    result = run_program("(def x 1)\n(println (+ x 1)")
    assert result.failure.reason == "syntax_error"
    assert "line 2, column 1" in result.failure.message
    assert result.memory == {}  # nothing ran: the program could not be read


def test_deep_nesting_is_a_syntax_error_not_a_crash():
    source = "(" * 100_000 + ")" * 100_000
    with pytest.raises(LispSyntaxError) as info:
        read_program(source)
    assert "nesting too deep" in info.value.message
    assert run_program(source).failure.reason == "syntax_error"
    assert run_program("[" * 50 + "]" * 50).value is not None
    assert read_program("[[1]]", max_nesting=2)
    with pytest.raises(LispSyntaxError):
        read_program("[[[1]]]", max_nesting=2)


def test_non_text_source_is_a_syntax_error():
    assert run_program(None).failure.reason == "syntax_error"  # type: ignore[arg-type]
