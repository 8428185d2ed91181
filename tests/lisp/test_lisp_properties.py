"""Property tests: printed values read back unchanged; random programs stay in the sandbox."""

from __future__ import annotations

import math
import time
from collections.abc import Mapping

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from turnpress import Keyword, Tool, to_clojure
from turnpress.lisp import FAILURE_REASONS, ExecutionResult, Limits, read_program, run_program

# --- 1. the reader round-trips what to_clojure prints ---------------------------------------

keywords = st.from_regex(r"[a-zA-Z][a-zA-Z0-9_?!*-]{0,8}", fullmatch=True).map(Keyword)


def _exact_float(x: float) -> bool:
    text = repr(x)
    return "e" not in text and "n" not in text and len(text.partition(".")[2]) <= 10


scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=False, allow_infinity=False).filter(_exact_float),
    st.text(max_size=20),
    keywords,
)
values = st.recursive(
    scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=5),
        st.dictionaries(keywords, children, max_size=5),
        st.frozensets(scalars, max_size=5),
    ),
    max_leaves=30,
)


def same(a, b) -> bool:
    """Structural equality that also compares types (1, 1.0 and True differ)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, Mapping):
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    if isinstance(a, float) and math.isnan(a):
        return math.isnan(b)
    return a == b


@settings(max_examples=300, deadline=None)
@given(values)
def test_reader_round_trips_printed_values(value):
    text = to_clojure(value)[0]
    forms = read_program(text)
    assert len(forms) == 1
    result = run_program(text)
    assert result.success, (text, result.failure)
    assert same(result.value, value), (text, result.value)


@settings(max_examples=100, deadline=None)
@given(st.lists(values, min_size=1, max_size=4))
def test_printed_values_round_trip_inside_programs(items):
    source = "(def xs [" + " ".join(to_clojure(v)[0] for v in items) + "]) xs"
    result = run_program(source)
    assert result.success and same(result.value, items)
    assert same(result.memory["xs"], items)


# --- 2. random programs never escape the sandbox -----------------------------------------------

ATOMS = [
    "x", "y", "xs", "n", "f", "data/d", "tool/t", "tool/boom", "t", "d", "nope", "recur",
    "+", "-", "*", "/", "mod", "=", "<", "inc", "str", "count", "first", "rest", "nth", "get",
    "assoc", "conj", "map", "filter", "reduce", "sort", "sort-by", "range", "repeat",
    "concat", "into", "apply", "println", "keys", "group-by", "split", "join", "subs",
    "def", "defn", "fn", "let", "if", "when", "cond", "case", "do", "and", "or", "->", "->>",
    "loop", "return", "fail", "for", "doseq", "dotimes", "quote", "if-let", "&", "%", "%1",
    ":a", ":b", "nil", "true", "false", "0", "1", "-1", "2", "1e9", "1e300", "0.5", "3/0",
    '""', '"a,b"', '"x"', "[]", "{}", "#{}", "[x y]", "[x 1 y 2]", "{:a 1}",
    # garbage tokens
    ")", "(", "]", "{", "#", "@", "~", "^", "`", '"', "\\", "#(", "#{", "'", "::", ";",
]


def _render(tree) -> str:
    if isinstance(tree, str):
        return tree
    opener, items = tree
    closer = {"(": ")", "[": "]", "{": "}", "#(": ")", "#{": "}"}[opener]
    return opener + " ".join(_render(t) for t in items) + closer


trees = st.recursive(
    st.sampled_from(ATOMS),
    lambda children: st.tuples(st.sampled_from(["(", "(", "(", "[", "{", "#(", "#{"]),
                               st.lists(children, max_size=5)),
    max_leaves=25,
)
programs = st.lists(trees, min_size=1, max_size=4).map(lambda ts: "\n".join(map(_render, ts)))

LIMITS = Limits(max_steps=5_000, max_depth=30, timeout_s=1.0, max_collection=2_000,
                max_string=2_000, max_prints=20, print_chars=200)


def _boom(*args):
    raise RuntimeError("tool exploded")


TOOLS = {"t": Tool("t", fn=lambda *args: list(args)), "boom": Tool("boom", fn=_boom)}
DATA = {"d": [{"a": 1, "b": "x"}, {"a": 2}], "xs": [3, 1, 2]}


def _check(source: str) -> None:
    # bounded work, in CPU seconds: a loaded machine's wall clock also counts others' time
    start = time.process_time()
    result = run_program(source, tools=TOOLS, data=DATA, limits=LIMITS)
    elapsed = time.process_time() - start
    assert isinstance(result, ExecutionResult)
    assert elapsed < 3.0, (source, elapsed)
    if result.failure is not None:
        assert result.failure.reason in FAILURE_REASONS, (source, result.failure)
        assert isinstance(result.failure.message, str) and result.failure.message
        assert "Traceback" not in result.failure.message
        assert "internal error" not in result.failure.message, (source, result.failure)
        assert result.value is None
    assert len(result.prints) <= LIMITS.max_prints
    assert all(len(p) <= LIMITS.print_chars for p in result.prints)
    assert DATA == {"d": [{"a": 1, "b": "x"}, {"a": 2}], "xs": [3, 1, 2]}


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs)
def test_random_programs_never_escape_the_sandbox(source):
    _check(source)


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=60))
def test_random_text_never_escapes_the_sandbox(source):
    _check(source)
