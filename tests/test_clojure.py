"""to_clojure: the value formatter behind every sample and tool-call argument."""

from __future__ import annotations

import time

from hypothesis import assume, given, settings
from hypothesis import strategies as st

from turnpress import Fn, Keyword, to_clojure
from turnpress.core.clojure import _MIN_TEXT_CAP


def text(value: object, limit: int | None = None, printable_limit: int | None = None) -> str:
    return to_clojure(value, limit, printable_limit)[0]


def test_scalars() -> None:
    assert [text(v) for v in (None, True, False, 42, -7, Keyword("active"))] == [
        "nil", "true", "false", "42", "-7", ":active"]
    assert text('say "hi"\\\n') == r'"say \"hi\"\\\n"'


def test_floats_never_use_exponents_and_keep_at_most_10_decimals() -> None:
    assert text(1e20) == "100000000000000000000.0"
    assert text(3.14) == "3.14" and text(2.0) == "2.0" and text(-0.5) == "-0.5"
    assert text(1 / 3) == "0.3333333333"
    assert text(1.5e-5) == "0.000015"
    assert text(1e-12) == "0.0"
    assert text(float("nan")) == "##NaN" and text(float("-inf")) == "##-Inf"


def test_sam_003_collections_use_clojure_syntax() -> None:
    """SAM-003: samples use Clojure syntax: no commas, keywords for plain keys."""
    assert text([1, 2, 3]) == "[1 2 3]"
    assert text({"a": 1, "b c": 2, Keyword("k"): 3, 4: 5}) == '{:a 1 "b c" 2 :k 3 4 5}'
    assert text({"name": "Laptop", "price": 1200}) == '{:name "Laptop" :price 1200}'
    assert text({3, 1, 2}) == "#{1 2 3}"
    assert text(Fn(("x", "y"))) == "#fn[x y]"
    assert text({"z": 1, "a": 2}) == "{:z 1 :a 2}"  # insertion order, not sorted
    assert text({"_private": 1}) == "{:_private 1}"  # nothing dropped


def test_trn_004_truncated_collections_say_how_many() -> None:
    """TRN-004: a collection longer than limit shows its first items, ` ...`, and the
    outermost one adds `(N items, showing first M)`."""
    assert to_clojure(list(range(10)), limit=3) == (
        "[0 1 2 ...] (10 items, showing first 3)", True)
    assert to_clojure({"a": 1, "b": 2, "c": 3, "d": 4}, limit=2) == (
        "{:a 1 :b 2 ...} (4 items, showing first 2)", True)
    assert to_clojure({1, 2, 3, 4}, limit=2) == ("#{1 2 ...} (4 items, showing first 2)", True)
    nested = [[1, 2, 3, 4], [5]]
    assert to_clojure(nested, limit=3) == ("[[1 2 3 ...] [5]]", True)
    assert to_clojure([1, 2, 3], limit=3) == ("[1 2 3]", False)


def test_trn_005_truncated_strings_end_with_dots() -> None:
    """TRN-005: a string longer than printable_limit is cut there and ends with `...`."""
    assert to_clojure("x" * 100, printable_limit=20) == ('"' + "x" * 20 + '..."', True)
    assert to_clojure("short", printable_limit=20) == ('"short"', False)


def test_trn_002_sample_limits_share_the_budget() -> None:
    """TRN-002: samples use limit 3 / printable_limit 80; nested values share the budget
    (80 / 3 items each, never below 10 characters)."""
    rows = [{"name": "n" * 50, "text": "t" * 50}] * 5
    sample, truncated = to_clojure(rows, limit=3, printable_limit=80)
    assert truncated
    assert '"' + "n" * 13 + '..."' in sample  # 80 // 3 = 26 per row, 26 // 2 = 13 per value
    tiny = to_clojure(["abcdefghijklmnop"] * 10, limit=10, printable_limit=20)[0]
    assert '"abcdefghij..."' in tiny  # never fewer than 10 characters each


def test_trn_003_tool_call_args_use_60_characters() -> None:
    """TRN-003: tool-call arguments render with limit 3 / printable_limit 60."""
    assert text("q" * 100, 3, 60) == '"' + "q" * 60 + '..."'


def test_trn_001_one_formatter_for_all_truncation() -> None:
    """TRN-001: samples, tool-call args and the sample helper all go through to_clojure."""
    from turnpress.core.compression import RenderContext

    ctx = RenderContext("m", "", {}, {}, 3)
    value = {"k": list(range(20))}
    assert ctx.sample(value) == text(value, 3, 80)
    assert ctx.call_args(["a" * 90, 7]) == f"{text('a' * 90, 3, 60)} 7"


def test_cycles_do_not_recurse_forever() -> None:
    a: list = [1]
    a.append(a)
    assert to_clojure(a) == ("[1 ...]", True)


def test_unknown_objects_are_named() -> None:
    class Thing:
        def __str__(self) -> str:
            return "thing!"

    assert text(Thing()) == '#object[test_unknown_objects_are_named.<locals>.Thing "thing!"]'


def test_visiting_is_o_limit() -> None:
    """Sampling a 10-million-item list costs about what a 10-item list costs."""
    big = list(range(10_000_000))
    start = time.process_time()  # CPU seconds: steady on a loaded machine
    for _ in range(200):
        to_clojure(big, 3, 80)
    elapsed = time.process_time() - start
    assert to_clojure(big, 3, 80)[0] == "[0 1 2 ...] (10000000 items, showing first 3)"
    assert elapsed < 5  # a full walk would take ~200 x 0.5 s


json_scalars = (st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True)
                | st.text(max_size=30) | st.builds(Keyword, st.text(min_size=1, max_size=8)))
hashable = st.none() | st.booleans() | st.integers() | st.text(max_size=10)
values = st.recursive(
    json_scalars,
    lambda children: (st.lists(children, max_size=6)
                      | st.dictionaries(st.text(max_size=8) | st.builds(
                          Keyword, st.text(min_size=1, max_size=5)), children, max_size=5)
                      | st.frozensets(hashable, max_size=5)),
    max_leaves=30,
)
limits = st.none() | st.integers(min_value=0, max_value=5)
printable = st.none() | st.integers(min_value=0, max_value=100)


@settings(max_examples=300, deadline=None)
@given(values, limits, printable)
def test_never_raises_and_is_deterministic(value: object, limit: int | None,
                                           printable_limit: int | None) -> None:
    """Property: never raises on nested JSON-like values with keywords and sets; the same
    input always gives the same output."""
    first = to_clojure(value, limit, printable_limit)
    assert first == to_clojure(value, limit, printable_limit)
    assert isinstance(first[0], str) and isinstance(first[1], bool)


def _cut_something(value: object, limit: int | None, printable_limit: int | None,
                   budget: int | None) -> bool:
    """Independent oracle: would anything be left out?"""
    if isinstance(value, str):
        return budget is not None and len(value) > budget
    if isinstance(value, (list, tuple, dict, frozenset, set)):
        n = len(value)
        shown = n if limit is None else min(n, limit)
        if shown < n:
            return True
        share = budget if budget is None or shown <= 1 else max(10, budget // shown)
        items = list(value.items()) if isinstance(value, dict) else list(value)
        if isinstance(value, dict):
            return any((not (isinstance(k, str) and k and (k[0].isalpha() or k[0] in "_*!?<>="
                                                          ) and all(
                c.isalnum() or c in "_*!?<>=+.-" for c in k))
                        and _cut_something(k, limit, printable_limit, share))
                       or _cut_something(v, limit, printable_limit, share) for k, v in items)
        return any(_cut_something(v, limit, printable_limit, share) for v in items)
    return False


@settings(max_examples=300, deadline=None)
@given(values, limits, printable)
def test_truncated_exactly_when_something_was_cut(value: object, limit: int | None,
                                                  printable_limit: int | None) -> None:
    """Property: `truncated` is true exactly when an item or characters were left out
    (TRN-001). Values whose whole text is longer than the output cap (320 characters at
    least, a guard against shared structure) are left aside: the cap may cut them."""
    assume(limit is None or len(to_clojure(value)[0]) <= _MIN_TEXT_CAP)
    assert to_clojure(value, limit, printable_limit)[1] == _cut_something(
        value, limit, printable_limit, printable_limit)


def test_output_cap_cuts_and_says_so() -> None:
    """A 309-digit float fills the output cap: what follows is `...` and truncated."""
    value = {"000": {"": 1.0000000000000001e307}, "": None}  # found by hypothesis
    text, truncated = to_clojure(value, 2, 0)
    assert truncated and text.endswith('"" ...}')
    assert to_clojure(value) == (text[: -len("...}")] + "nil}", False)


def test_tick_is_called_while_rendering_and_can_stop_it() -> None:
    """``tick`` runs after every 4,096 values rendered; what it raises ends the rendering
    (the sandbox checks its clock there), and the next rendering starts afresh."""
    value = [frozenset([i, (i, str(i))]) for i in range(3000)]
    calls = []
    text = to_clojure(value, tick=lambda: calls.append(1))[0]
    assert text == to_clojure(value)[0]
    assert len(calls) >= 3

    class Stop(Exception):
        pass

    def stop() -> None:
        raise Stop

    try:
        to_clojure(value, tick=stop)
    except Stop:
        pass
    else:
        raise AssertionError("tick's exception did not stop the rendering")
    assert to_clojure(value)[0] == text
