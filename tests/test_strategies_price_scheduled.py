"""Behaviour of ``price-scheduled``: the coalesced view rebuilt when re-reading its stale
part has cost as much as writing it anew (ski rental on the price, DESIGN §11, issue 18).
"""

from __future__ import annotations

import ast
import itertools
import re
import subprocess
import sys
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st
from turn_strategies import History, breakpoints_hold, histories, is_prefix

from turnpress import Fn, ToolCall, Turn, render
from turnpress.core.compression import RenderContext
from turnpress.plugins import price_scheduled
from turnpress.plugins.price_scheduled import (
    PriceScheduled,
    Rates,
    RebuildRule,
    names_in_use,
    refs,
    rest_of_row,
    schedule,
    shows_name,
)

OPENAI = Rates(read=0.50, write=2.00)  # gpt-4.1: cached read 0.25x, no write premium
ANTHROPIC = Rates(read=0.30, write=3.75)  # sonnet-4: read 0.1x, write 1.25x


def _ok(n: int, prints=(), calls=(), program: str | None = None) -> Turn:
    program = program or f"(def v{n} (step {n}))"
    return Turn.succeeded(n, program, n, memory={f"v{n}": n}, prints=prints,
                          tool_calls=calls, raw_response=f"```clojure\n{program}\n```")


def _ctx(turns_left: int = 50) -> RenderContext:
    return RenderContext(mission="m", system_prompt="sys", tools={}, data={},
                         turns_left=turns_left)


# -- the rule against the best schedule in hindsight ---------------------------------------


def _views(deltas: list[float], compact: list[float], view: float) -> list[float]:
    """``[r]``: the view rebuilt after turn ``r``: every earlier turn compact, turn ``r``
    itself as in a delta (a rebuilt view shows its last turn as a delta does)."""
    out, kept = [view], view
    for d, k in zip(deltas, compact, strict=True):
        out.append(kept + d)
        kept += k
    return out


def _appending(views: list[float], deltas: list[float], rates: Rates, c: int,
               stop: int) -> float:
    """What calls ``c+1 .. stop-1`` pay when they append after a rebuild at ``c``: each
    reads the view and the deltas before it and writes its own delta."""
    total, appended = 0.0, 0.0
    for pos in range(c + 1, stop):
        total += rates.read * (views[c] + appended) + rates.write * deltas[pos - 1]
        appended += deltas[pos - 1]
    return total


def plan_cost(deltas: list[float], compact: list[float], rates: Rates, rebuilds: list[int],
              view: float = 0.0) -> float:
    """What a schedule pays, call by call: a call after a rebuild writes the rebuilt view."""
    views = _views(deltas, compact, view)
    total, c = 0.0, 0
    for r in [*sorted(rebuilds), len(deltas) + 1]:
        total += _appending(views, deltas, rates, c, r)
        if r <= len(deltas):
            total += rates.write * views[r]
        c = r
    return total


def optimal_cost(deltas: list[float], compact: list[float], rates: Rates,
                 view: float = 0.0) -> float:
    """The cheapest schedule chosen in hindsight, by dynamic programming over the last
    rebuild (a rebuilt view depends only on where it is, not on the schedule)."""
    n = len(deltas)
    views = _views(deltas, compact, view)
    best = [0.0] + [float("inf")] * n  # best[r]: the cheapest way to rebuild at r
    for r in range(1, n + 1):
        best[r] = min(best[c] + _appending(views, deltas, rates, c, r) + rates.write * views[r]
                      for c in range(r))
    return min(best[c] + _appending(views, deltas, rates, c, n + 1) for c in range(n + 1))


sizes = st.lists(st.tuples(st.integers(1, 4000), st.floats(0.0, 1.0)), min_size=1,
                 max_size=60)


@settings(max_examples=300, deadline=None)
@given(turns=sizes, rates=st.sampled_from([OPENAI, ANTHROPIC]),
       view=st.integers(1, 20000))
def test_rule_costs_at_most_twice_the_best_schedule(turns, rates, view) -> None:
    """Ski rental: on any sequence of turn sizes, under either price list, the rule's
    schedule costs at most twice the optimal offline schedule."""
    deltas = [float(d) for d, _ in turns]
    compact = [d * share for d, share in turns]
    rebuilds = schedule(deltas, compact, RebuildRule(rates), view)
    online = plan_cost(deltas, compact, rates, rebuilds, view)
    assert online <= 2 * optimal_cost(deltas, compact, rates, view) + 1e-6


def test_optimal_cost_is_the_cheapest_schedule() -> None:
    """The dynamic programme in this test is right: it matches every schedule tried."""
    deltas, compact = [900.0, 50.0, 3000.0, 10.0, 700.0], [100.0, 50.0, 40.0, 10.0, 90.0]
    best = optimal_cost(deltas, compact, ANTHROPIC, 500.0)
    costs = [plan_cost(deltas, compact, ANTHROPIC, [p for p in range(1, 6) if mask >> p & 1],
                       500.0) for mask in range(64)]
    assert best == min(costs)


def test_rebuilds_follow_the_price() -> None:
    """The same run rebuilds less often under Anthropic's prices (write 1.25x, read 0.1x:
    a write costs 12.5 reads) than under OpenAI's (read 0.25x: 4 reads); as the stale
    part grows each turn, the rent paid grows with the square of the turns since the
    last rebuild, so the gap is about the square root of 12.5 / 4. No turn count decides."""
    deltas, compact = [2000.0] * 200, [200.0] * 200
    openai = schedule(deltas, compact, RebuildRule(OPENAI))
    anthropic = schedule(deltas, compact, RebuildRule(ANTHROPIC))
    assert len(openai) > 1.5 * len(anthropic) > 0
    # nothing stale (a delta no larger than its place in a view): never rebuild
    assert schedule(deltas, deltas, RebuildRule(OPENAI)) == []


def test_a_prompt_past_the_limit_rebuilds() -> None:
    rule = RebuildRule(ANTHROPIC, limit=10_000)
    assert rule.due(0.0, view=1000, growth=0, appended=8500, head=600)
    assert not rule.due(0.0, view=1000, growth=0, appended=8000, head=600)


# -- the strategy ---------------------------------------------------------------------------


def test_options_are_checked() -> None:
    assert PriceScheduled.option_defaults() == {
        "max_tokens": 200_000, "names": 150, "output_lines": 12, "key_lines": 4,
        "turn_lines": 1, "line_chars": 100, "println_limit": 6, "tool_call_limit": 20,
        "errors": "last"}
    for bad in ({"max_tokens": 10}, {"names": -1}, {"errors": "all"}):
        try:
            PriceScheduled(**bad)
        except ValueError as exc:
            assert next(iter(bad)) in str(exc)
        else:
            raise AssertionError(f"{bad} accepted")


def _long_run(n: int) -> list[Turn]:
    return [_ok(k, [f"row_{k}_{j} = {j * k}" for j in range(40)]) for k in range(1, n + 1)]


def test_prompt_is_append_only_between_rebuilds() -> None:
    """Between two rebuilds each prompt starts with the one before it, but for the rest
    of the latest turn's delta: the latest turn is its compact delta (what later prompts
    re-read) then a pair with the rest of what its delta shows and the turns left; a
    rebuild makes the prompt smaller than appending would."""
    turns = _long_run(60)
    strategy = PriceScheduled()
    marks = [strategy.checkpoints(turns[:k], _ctx(100 - k))[0] for k in range(61)]
    rebuilds = sorted(set(marks) - {0})
    assert len(rebuilds) >= 2, "a run that prints this much rebuilds"
    for k in range(1, 60):
        before = strategy.to_messages(turns[:k], turns[k - 1].memory, _ctx(100 - k))
        after = strategy.to_messages(turns[:k + 1], turns[k].memory, _ctx(99 - k))
        if marks[k + 1] == marks[k]:
            rest = 2 if marks[k] < k else 0  # the rest of the latest turn's delta
            assert is_prefix(before[:len(before) - rest], after)
            assert len(after) == len(before) + 4 - rest
            compact, rest_of = after[-4:-2], after[-2:]
            assert compact[0]["content"].startswith(f";; Turn {k + 1} ran (code omitted)")
            assert "Turns left" not in compact[1]["content"]
            assert rest_of[0]["content"].startswith(f";; Turn {k + 1}, the rest")
            assert after[-1]["content"].endswith(f"Turns left: {99 - k}")
        else:
            assert sum(map(len, (m["content"] for m in after))) < sum(
                map(len, (m["content"] for m in before))) + len(after[-1]["content"])


def test_a_rebuild_reads_the_older_turns_the_view_before_it_wrote() -> None:
    """The older turns' key lines come right after the stable head and later rebuilds
    only append to them, so a rebuild starts with what the view before it marked as
    its older turns, and marks that end too: under Anthropic's cache it reads that
    part and writes only the rest (under OpenAI's the shared prefix is read anyway)."""
    from turnpress.core.pricing import get_cache_rules, get_price

    turns = _long_run(80)
    strategy = PriceScheduled()

    def ctx(k: int) -> RenderContext:
        return RenderContext(mission="m", system_prompt="sys", tools={}, data={},
                             turns_left=100 - k, cache=get_cache_rules("openai"),
                             price=get_price("openai-gpt-4.1", "openai"))

    rebuilds = [k for k in range(1, 81) if strategy.checkpoints(turns[:k], ctx(k))[0] == k]
    assert len(rebuilds) >= 3
    shared = 0
    for before, after in itertools.pairwise(rebuilds):
        view = strategy.to_messages(turns[:after], turns[after - 1].memory, ctx(after))[1]
        assert view["content"].startswith("m\n\n;; Earlier output by turn (key lines):")
        old = strategy.to_messages(turns[:before], turns[before - 1].memory, ctx(before))[1]
        # the marks of the view before (the end of its stable head, of its older turns,
        # of its user/ prelude): the longest one the view repeats is marked again
        marks = [o for i, o in strategy.cache_breakpoints(
            turns[:before], turns[before - 1].memory, ctx(before)) if i == 1 and o]
        points = strategy.cache_breakpoints(turns[:after], turns[after - 1].memory, ctx(after))
        offset = max(o for o in marks if old["content"][:o] == view["content"][:o])
        assert (1, offset) in points
        shared = max(shared, offset)
    assert shared > 1000, "later rebuilds re-read the older turns of the view before"


def test_older_turns_are_compact_and_the_latest_turn_is_whole() -> None:
    """Compress the code, keep the learnings: the latest turn's delta shows its output
    cut to ``output_lines`` lines at each end; once a later turn follows it, the turn
    is re-read as a compact delta (calls with arguments cut short, names defined, output
    cut to ``turn_lines`` lines at each end plus key lines, never empty); under
    Anthropic's cache the last breakpoint ends before the latest delta, which is sent
    once and never written."""
    from turnpress.core.pricing import get_cache_rules, get_price

    long = "x" * 80
    first_turn = _ok(1, [f"row {j}" for j in range(40)], [ToolCall("fetch", (f"key-{long}", 7))])
    quiet = Turn.succeeded(2, "(+ 1 2)", 3, memory=first_turn.memory,  # defines nothing
                           raw_response="```clojure\n(+ 1 2)\n```")
    turns = [first_turn, quiet, _ok(3, [f"line {j}: " + "y" * 40 for j in range(40)])]
    # cached reads priced at nothing: re-reading costs no rent, so nothing is rebuilt (a
    # view that would show none of these turns' calls nor output is cheap to rebuild, and
    # at Anthropic's prices the rule would rebuild it at once)
    ctx = RenderContext(mission="m", system_prompt="sys", tools={}, data={}, turns_left=9,
                        cache=get_cache_rules("anthropic"),
                        price=get_price("in=3,cached=0,write=3.75", "anthropic"))
    strategy = PriceScheduled()
    messages = strategy.to_messages(turns, turns[-1].memory, ctx)
    assert strategy.checkpoints(turns, ctx)[0] == 0  # no rebuild yet: view, 3 compact deltas
    first_call, first, _, second, _, latest, rest_call, rest = messages[2:]
    assert first_call["content"].startswith(";; Turn 1 ran (code omitted); called fetch(")
    assert long not in first_call["content"]  # the argument is cut short
    assert "row 0" in first["content"] and "row 39" in first["content"]
    assert "row 1\n" not in first["content"]  # one line at each end, not output_lines
    assert "Turns left" not in first["content"]
    assert second["content"] == ";; Nothing defined or printed"
    # the latest turn: its compact delta, then the rest of its delta, sent once
    assert "line 0:" in latest["content"] and "line 39:" in latest["content"]
    assert "line 11:" not in latest["content"] and "Turns left" not in latest["content"]
    assert rest_call["content"] == ";; Turn 3, the rest of what it showed"
    assert "line 11:" in rest["content"] and "line 28:" in rest["content"]
    assert "line 0:" not in rest["content"] and "line 39:" not in rest["content"]
    assert "[... 1 line shown above ...]" in rest["content"]
    assert "line 12:" not in rest["content"]  # output_lines at each end, as the delta
    assert rest["content"].endswith("Turns left: 9")
    points = strategy.cache_breakpoints(turns, turns[-1].memory, ctx)
    # the end of the compact deltas, the latest turn's included: the rest is never written
    assert max(i for i, _ in points) == len(messages) - 3


def test_the_rest_of_a_row_the_compact_delta_cut_starts_at_the_cut_word() -> None:
    """A long row that the compact delta cut is continued in the rest, from the start of
    the word the cut split (no word is shown cut, nothing before it twice)."""
    row = "2025-03-11T14:04:21Z POST /api/checkout 502 req=0028e7fd upstream=payments-gw"
    shown = row[:40] + "..."
    rest = rest_of_row(row, shown)
    assert rest.startswith("...") and row.endswith(rest[3:])
    assert len(rest) < len(row) and row[row.rfind(" ", 0, 40) + 1:] == rest[3:]
    assert rest_of_row(row, None) == row  # not shown compact: the whole row
    assert rest_of_row(row, "something else...") == row
    # a long line at the end of an output: the latest turn shows it once, whole
    long = "key_" + "x" * 150 + " tail_name"
    turns = [_ok(1, [f"line {j}" for j in range(30)] + [long])]
    messages = PriceScheduled().to_messages(turns, turns[-1].memory, _ctx())
    compact, rest_text = messages[-3]["content"], messages[-1]["content"]
    assert "tail_name" not in compact and "tail_name" in rest_text
    assert rest_text.count("key_") + compact.count("key_") == 2  # cut once, continued once


def test_the_view_lists_the_names_the_run_went_on_to_use() -> None:
    """A name an early output showed and a later program used survives a rebuild even
    when the view's key lines would not show it."""
    t1 = _ok(1, ["header", *[f"line {j}" for j in range(30)], "config_key_alpha = 3",
                 *[f"more {j}" for j in range(30)]])
    t2 = _ok(2, ["ok"], program="(println config_key_alpha)")
    turns = [t1, t2, *_long_run(40)[2:]]
    assert "config_key_alpha" in names_in_use(turns, _ctx())
    strategy = PriceScheduled(key_lines=0)
    messages = strategy.coalesced(turns, len(turns), _ctx())
    assert "config_key_alpha" in messages[-1]["content"]
    assert "Names in use" in messages[-1]["content"]
    assert "config_key_alpha" not in PriceScheduled(key_lines=0, names=0).coalesced(
        turns, len(turns), _ctx())[-1]["content"]


def test_names_in_use_goes_on_from_the_turns_it_walked() -> None:
    """names_in_use keeps the tallies of the last turns it walked: a longer run, a
    shorter one, another run and another context give what a fresh walk gives."""
    t1 = _ok(1, ["config_key_alpha = 3", "ids 12345"])
    t2 = _ok(2, ["ok 12345"], program="(println config_key_alpha 12345)")
    turns = (t1, t2, *_long_run(12)[2:])
    ctx = _ctx()

    def fresh(ts: tuple[Turn, ...]) -> list[str]:  # a new run: nothing kept
        return names_in_use(ts, _ctx())

    expected = {n: fresh(turns[:n]) for n in range(len(turns) + 1)}
    for n in [*range(len(turns) + 1), 3, 1, len(turns), 0, 5]:
        assert names_in_use(turns[:n], ctx) == expected[n]
        assert names_in_use(list(turns[:n]), ctx) == expected[n]
    other = (t2, t1)
    assert names_in_use(other, ctx) == fresh(other)
    assert names_in_use(turns, _ctx()) == expected[len(turns)]
    assert "config_key_alpha" in expected[2] and "12345" in expected[2]


def test_refs_finds_paths_names_and_numbers() -> None:
    text = "see ./pvlib/irradiance.py line 1234: np.nan in sky_diffuse, RuntimeWarning 1e-10"
    assert refs(text) >= {"./pvlib/irradiance.py", "1234", "np.nan", "sky_diffuse",
                          "RuntimeWarning"}
    assert "untimeWarning" not in refs(text) and "e-10" not in refs(text)


@settings(max_examples=500, deadline=None)
@given(st.text(alphabet="abAB_.-/ 19(é²٣ǅßİ\n", max_size=40))
def test_refs_run_by_run_is_the_look_behind_search(text: str) -> None:
    """refs, matched run by run with plain-word runs skipped, finds what the look-behind
    regex finds searching the whole text."""
    whole = {f.rstrip(".-/") for f in price_scheduled._REF.findall(text)}
    assert refs.__wrapped__(text) == {f for f in whole if len(f) >= 3}


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="ab_.-/ 1(é²٣\n", max_size=30),
       st.sampled_from(["ab", "a.b", "1a", "b/", "é²"]))
def test_shows_name_is_the_whole_name_search(text: str, name: str) -> None:
    """shows_name (searched where the name occurs) is the look-behind regex's search."""
    pattern = r"(?<![\w.\-/])" + re.escape(name) + r"(?![\w\-/])"
    assert shows_name(text, name) is (re.search(pattern, text) is not None)
    assert shows_name("x ab_c ab", "ab") and not shows_name("x ab_c .ab", "ab")


_NAMES = ["ab", "a.b", "1a", "b/", "é²", "a b", "ab\nab", ""]


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="ab_.-/ 1(é²\n", max_size=20),
       st.text(alphabet="ab_.-/ 1(é²\n", max_size=20), st.booleans())
def test_names_section_with_a_head_is_the_search_of_the_whole(
        head: str, rest: str, joined: bool) -> None:
    """names_section told the head the view starts with (searched once per run) lists
    the names the search of the whole text does not find, whatever follows the head."""
    view = PriceScheduled()._coalesced
    shown = f"{head}\n\n{rest}" if joined else head + rest
    original = price_scheduled.names_in_use
    price_scheduled.names_in_use = lambda turns, ctx: list(_NAMES)  # type: ignore[assignment]
    try:
        assert view.names_section([], _ctx(), shown, head) == view.names_section(
            [], _ctx(), shown)
    finally:
        price_scheduled.names_in_use = original


def test_max_tokens_bounds_the_prompt() -> None:
    """With a small ``max_tokens`` the prompt rebuilds before it passes the ceiling
    (about four characters a token, with the largest delta as margin)."""
    turns = _long_run(80)
    strategy = PriceScheduled(max_tokens=2000)
    ctx = _ctx()
    for k in range(1, 81):
        messages = strategy.to_messages(turns[:k], turns[k - 1].memory, ctx)
        body = sum(len(m["content"]) for m in messages)
        assert body <= 2000 * 4 + 4000, (k, body)


@settings(max_examples=40, deadline=None)
@given(history=histories(max_turns=8))
def test_breakpoints_are_repeated_by_later_prompts(history: History) -> None:
    breakpoints_hold(history, len(history.turns), PriceScheduled)


def test_renders_through_the_public_api() -> None:
    turns = [_ok(1, ["a"]), _ok(2, ["b"], [ToolCall("search", ("x",))])]
    messages = render(turns, mission="m", turns_left=3, compression=PriceScheduled)
    assert messages[0] == {"role": "system", "content": ""}
    assert messages[-1]["content"].endswith("Turns left: 3")
    assert any('search("x")' in m["content"] for m in messages)
    assert not any("(def v" in m["content"] for m in messages)


# -- judge and player stay apart --------------------------------------------------------------


def _turnpress_imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
    return {m for m in found if m.startswith("turnpress")}


def test_strategy_never_imports_compare() -> None:
    """The needed-fact recall is the judge: the strategy module, and every turnpress
    module it imports, stays clear of ``turnpress.compare`` (its fact extraction)."""
    module = Path(price_scheduled.__file__)
    assert not {m for m in _turnpress_imports(module) if m.startswith("turnpress.compare")}
    code = ("import sys, turnpress.plugins.price_scheduled; "
            "print([m for m in sys.modules if m.startswith('turnpress.compare')])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.strip()
    assert out == "[]"


# -- snapshots on a bundled run ------------------------------------------------------------


def _rebuild_turn(trace, strategy: str, start: int = 10) -> int:
    """The first prompt from turn ``start`` on that a rebuild made (the view alone,
    no delta after it)."""
    for n in range(start, len(trace.turns) + 1):
        if len(trace.prompt(n, strategy)) == 2:
            return n
    raise AssertionError("no rebuild")


def test_snapshot_at_a_rebuild_and_two_turns_after(snapshot) -> None:
    """The default price (openai-gpt-4.1) on the bundled incident-triage run: the prompt
    a rebuild made, and the prompt two turns later (the view, two compact deltas, then
    the rest of the latest turn's delta)."""
    from turnpress import load_trace
    from turnpress.core.providers import format_text
    from turnpress.examples import example_trace_paths

    [path] = [p for p in example_trace_paths() if p.stem == "incident-triage"]
    trace = load_trace(path)
    n = _rebuild_turn(trace, "price-scheduled")
    at, later = trace.prompt(n, "price-scheduled"), trace.prompt(n + 2, "price-scheduled")
    assert len(later) == 8 and later[:2] == at[:2]
    assert format_text(at) == snapshot(name="at-rebuild")
    assert format_text(later) == snapshot(name="two-turns-after")


# -- a rebuilt PTC-Lisp view: older turns by what lasts, the latest turn's calls ------------


def _anthropic_ctx(k: int, total: int = 100) -> RenderContext:
    from turnpress.core.pricing import get_cache_rules, get_price

    return RenderContext(mission="m", system_prompt="sys", tools={}, data={},
                         turns_left=total - k, cache=get_cache_rules("anthropic"),
                         price=get_price("anthropic-sonnet-4", "anthropic"))


def _called_run(n: int, memory: dict | None = None) -> list[Turn]:
    """Turns that each call a tool and print a first line, names and a last line."""
    return [Turn.succeeded(k, f"(def v{k} {k})", k, memory=memory or {f"v{k}": k},
                           prints=[f"first {k}", *[f"plain {k} {j}" for j in range(30)],
                                   f"row_{k} = {k}", f"last {k}"],
                           tool_calls=[ToolCall("lookup", (f"id-{k}",))],
                           raw_response=f"```clojure\n(def v{k} {k})\n```")
            for k in range(1, n + 1)]


def _rebuilds(strategy: PriceScheduled, turns: list[Turn]) -> list[int]:
    return [k for k in range(1, len(turns) + 1)
            if strategy.checkpoints(turns[:k], _anthropic_ctx(k))[0] == k]


def test_a_rebuilt_lisp_view_shows_the_latest_turns_calls_and_older_turns_key_lines() -> None:
    """A rebuilt PTC-Lisp view shows the latest turn's tool calls and output as its delta
    did, and older turns only by their key lines: their calls and their first and last
    lines were shown by their compact deltas from each turn to this rebuild, and a
    sliding window of them would be rewritten by every rebuild."""
    turns = _called_run(60)
    strategy = PriceScheduled()
    rebuilds = _rebuilds(strategy, turns)
    assert rebuilds
    for c in rebuilds:
        view = strategy.to_messages(turns[:c], turns[c - 1].memory, _anthropic_ctx(c))[1]
        text = view["content"]
        assert f';; Tool calls of turn {c}:\n;   lookup("id-{c}")' in text
        assert f'lookup("id-{c - 1}")' not in text and ";; Tool calls made" not in text
        assert f"first {c}" in text and f"last {c}" in text  # the latest turn, as a delta
        assert f"last {c - 1}" not in text and f"first {c - 1}" not in text
        assert f"row_{c - 1} = {c - 1}" in text  # an older turn's key lines stay


def test_a_rebuild_re_reads_the_prelude_the_view_before_it_wrote() -> None:
    """When neither the older turns' key lines nor the ``user/`` prelude changed since the
    view before, a rebuild repeats that view up to the end of its prelude: both views
    mark that end, so under Anthropic's cache the rebuild reads it and writes the rest."""
    quiet = [Turn.succeeded(k, "(def x 1)", k, memory={"x": 1},
                            prints=[f"plain {k} {j}" for j in range(60)],
                            raw_response="```clojure\n(def x 1)\n```") for k in range(1, 81)]
    strategy = PriceScheduled()
    rebuilds = _rebuilds(strategy, quiet)
    assert len(rebuilds) >= 3
    for before, after in itertools.pairwise(rebuilds[1:]):
        old = strategy.to_messages(quiet[:before], {"x": 1}, _anthropic_ctx(before))[1]
        new = strategy.to_messages(quiet[:after], {"x": 1}, _anthropic_ctx(after))[1]
        end = old["content"].index(";; === user/")
        end = old["content"].index("\n\n", end)  # the end of the prelude
        marks = strategy.cache_breakpoints(quiet[:before], {"x": 1}, _anthropic_ctx(before))
        points = strategy.cache_breakpoints(quiet[:after], {"x": 1}, _anthropic_ctx(after))
        assert (1, end) in marks and (1, end) in points
        assert old["content"][:end] == new["content"][:end]


def test_a_rebuild_re_reads_the_functions_of_the_prelude_the_view_before_it_wrote() -> None:
    """When the older turns' key lines and the functions of ``user/`` are unchanged but a
    value's label changed (``list[3]`` to ``list[4]``), a rebuild repeats the view before
    it up to the end of its functions: both views mark that end, so under Anthropic's
    cache the rebuild reads it (not only the older turns) and writes the rest."""
    f = Fn(("x",), "the row of x")
    turns = [Turn.succeeded(k, "(def rows (range k))", k,
                            memory={"f": f, "rows": list(range(k % 7 + 1))},
                            prints=[f"plain {k} {j}" for j in range(60)],
                            raw_response="```clojure\n(def rows (range k))\n```")
             for k in range(1, 81)]
    strategy = PriceScheduled()
    rebuilds = _rebuilds(strategy, turns)
    assert len(rebuilds) >= 3
    repeated = 0
    for before, after in itertools.pairwise(rebuilds[1:]):
        old = strategy.to_messages(turns[:before], turns[before - 1].memory,
                                   _anthropic_ctx(before))[1]["content"]
        new = strategy.to_messages(turns[:after], turns[after - 1].memory,
                                   _anthropic_ctx(after))[1]["content"]
        end = old.index("\n", old.index("(f [x])"))  # the end of the functions
        marks = strategy.cache_breakpoints(turns[:before], turns[before - 1].memory,
                                           _anthropic_ctx(before))
        points = strategy.cache_breakpoints(turns[:after], turns[after - 1].memory,
                                            _anthropic_ctx(after))
        assert (1, end) in marks and len(marks) <= 4 and len(points) <= 4
        if old[:end] == new[:end] and old[end:old.index("\n\n", end)] != \
                new[end:new.index("\n\n", end)]:
            assert (1, end) in points  # the values changed: read up to the functions
            repeated += 1
    assert repeated, "some rebuild repeats the functions but not the values"


def test_a_compact_argument_is_never_longer_than_the_whole_one() -> None:
    """A compact delta cuts a call's arguments short only where that is shorter than the
    argument as the tool-call section shows it: cutting ``"AUD-2026-11"`` to
    ``"AUD-2026-1..."`` would make the latest turn send the whole call again."""
    from turnpress.core.pricing import get_price

    report = {"audit": "AUD-2026-11", "warehouse": "WH-1", "sku": "SKU-100", "n": 3}
    turns = [_ok(1, ["flagged"], [ToolCall("flag", (report,))]), _ok(2, ["ok"])]
    ctx = RenderContext(mission="m", system_prompt="sys", tools={}, data={}, turns_left=9,
                        price=get_price("in=2,cached=0", "openai"))  # no rent: no rebuild
    messages = PriceScheduled().to_messages(turns, turns[-1].memory, ctx)
    compact = next(m["content"] for m in messages if m["content"].startswith(";; Turn 1 ran"))
    assert '"AUD-2026-11"' in compact and "AUD-2026-1..." not in compact
    assert price_scheduled.compact_arg("x" * 80, _ctx()).endswith('..."')


def test_before_a_rebuild_the_last_breakpoint_ends_where_the_prompt_before_did() -> None:
    """A prompt whose next prompt rebuilds marks the end of what the prompt before it
    showed the same way (to read what it wrote), not its latest turn: the next prompt
    repeats none of it, so writing it to the cache would be paid for nothing."""
    turns = _called_run(60)
    strategy = PriceScheduled()
    checked = 0
    for k in range(2, 60):
        ctx = _anthropic_ctx(k)
        c, moves = strategy.checkpoints(turns[:k], ctx)
        messages = strategy.to_messages(turns[:k], turns[k - 1].memory, ctx)
        if moves and c < k and messages[-2]["content"].startswith(f";; Turn {k}, the rest"):
            points = strategy.cache_breakpoints(turns[:k], turns[k - 1].memory, ctx)
            last = max(i for i, _ in points)
            before = strategy.to_messages(turns[:k - 1], turns[k - 2].memory,
                                          _anthropic_ctx(k - 1))
            assert before[:last + 1] == messages[:last + 1]  # what the prompt before showed
            assert last == len(messages) - 5  # the turn before's compact delta ends there
            checked += 1
    assert checked


def test_a_rebuilt_lisp_view_counts_the_earlier_turns_calls() -> None:
    """The view lists only the latest turn's calls, but says how many calls of each tool
    the earlier turns made: the agent still knows which side effects it caused."""
    turns = _called_run(60)
    strategy = PriceScheduled()
    for c in _rebuilds(strategy, turns):
        text = strategy.to_messages(turns[:c], turns[c - 1].memory, _anthropic_ctx(c))[1]
        assert f";; Tool calls of earlier turns: lookup x{c - 1}\n" in text["content"]
