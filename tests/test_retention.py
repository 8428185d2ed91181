"""Retention: the facts of the history a prompt still carries."""

from __future__ import annotations

import pytest

from turnpress import Failure, Fn, Tool, ToolCall, Trace, Turn, load_trace, render
from turnpress.core.compression import get_strategy, strategy_names
from turnpress.core.retention import (
    Fact,
    fact_present,
    history_facts,
    prompt_haystack,
    retention,
)
from turnpress.examples import short_example_trace_paths

TOOLS = {"search": Tool("search", {"query": "string"}, "list", "Search products"),
         "get-inventory": Tool("get-inventory", {}, "string", "Inventory report")}
MISSION = "Find the cheapest laptop in stock"


def history() -> list[Turn]:
    t1 = Turn.succeeded(1, '(def hits (tool/search "laptop"))', None,
                        memory={"hits": [1, 2]},
                        tool_calls=[ToolCall("search", ("laptop",), [1, 2])])
    t2 = Turn.succeeded(2, "(defn cheap? [p] (< p 500))\n(println \"found\" (count hits))",
                        None, memory={"hits": [1, 2], "cheap?": Fn(("p",))},
                        prints=["first line\nfound 2"])
    t3 = Turn.failed(3, "(tool/get-inventory 1)",
                     Failure("arity_error", "get-inventory takes no arguments"),
                     memory={"hits": [1, 2], "cheap?": Fn(("p",))},
                     tool_calls=[ToolCall("get-inventory", (1,), None)])
    return [t1, t2, t3]


def test_history_facts():
    facts = history_facts(history(), MISSION)
    assert facts == [
        Fact("mission", MISSION),
        Fact("tool call", "search"),
        Fact("tool call", "get-inventory"),
        Fact("name", "hits"),
        Fact("name", "cheap?"),
        Fact("last print", "found 2"),
        Fact("last error", "get-inventory takes no arguments"),
    ]
    assert history_facts([], MISSION) == [Fact("mission", MISSION)]


def test_tool_calls_within_the_strategy_limit():
    facts = history_facts(history(), MISSION, tool_call_limit=1)
    assert [f.value for f in facts if f.kind == "tool call"] == ["get-inventory"]
    assert not [f for f in history_facts(history(), MISSION, tool_call_limit=0)
                if f.kind == "tool call"]


def test_no_error_fact_once_a_later_turn_succeeded():
    turns = [*history(), Turn.succeeded(4, "(return 1)", 1, memory={})]
    assert not [f for f in history_facts(turns, MISSION) if f.kind == "last error"]


def test_tool_listing_is_not_a_call():
    """The tool/ section lists every tool; it must not count as having called them."""
    listing = "(tool/search query)      ; query:string -> list - Search products"
    hay = prompt_haystack([{"role": "user", "content": f"{MISSION}\n\n{listing}"}],
                          exclude=[listing])
    assert not fact_present(Fact("tool call", "search"), hay)
    for shown in ('search("laptop")', '(tool/search "laptop")', '(search "laptop")'):
        assert fact_present(Fact("tool call", "search"), shown)


def test_names_match_whole_symbols_only():
    assert fact_present(Fact("name", "hits"), "hits                ; = list[2]")
    assert fact_present(Fact("name", "cheap?"), "(cheap? [p])")
    assert not fact_present(Fact("name", "hits"), "all-hits ; = list[2]")
    assert not fact_present(Fact("name", "hit"), "hits ; = list[2]")
    assert not fact_present(Fact("name", "products"), "data/products ; list[7]")


def render_all(compression):
    return render(history(), mission=MISSION, system_prompt="SYSTEM", tools=TOOLS,
                  turns_left=2, compression=compression)


def test_full_history_and_default_strategy_keep_everything():
    base = render_all(False)
    for compression in (False, True):
        r = retention(history(), render_all(compression), mission=MISSION,
                      strategy=get_strategy(compression), exclude=["SYSTEM"], reference=base)
        assert r.score == 1.0 and r.dropped == ()
        assert len(r.facts) == 7


def test_dropped_facts_are_reported():
    user = f'{MISSION}\n\nhits ; = list[2]\n;   search("laptop")'
    messages = [{"role": "system", "content": "SYSTEM"}, {"role": "user", "content": user}]
    r = retention(history(), messages, mission=MISSION, exclude=["SYSTEM"])
    assert [str(f) for f in r.dropped] == [
        "tool call get-inventory", "name cheap?", "last print 'found 2'",
        "last error 'get-inventory takes no arguments'"]
    assert r.score == pytest.approx(3 / 7)
    assert 0.0 <= r.score <= 1.0


def test_the_system_prompt_retains_nothing():
    messages = [{"role": "system", "content": f"{MISSION} hits cheap? search(x)"},
                {"role": "user", "content": "nothing here"}]
    system = messages[0]["content"]
    r = retention(history()[:1], messages, mission=MISSION, exclude=[system])
    assert r.score == 0.0


def test_facts_the_reference_lacks_do_not_count():
    reference = [{"role": "user", "content": MISSION}]
    r = retention(history(), [{"role": "user", "content": MISSION}], mission=MISSION,
                  reference=reference)
    assert r.facts == (Fact("mission", MISSION),) and r.score == 1.0


def test_no_facts_means_full_retention():
    assert retention([], [{"role": "user", "content": ""}], mission="").score == 1.0


@pytest.mark.parametrize("path", short_example_trace_paths(), ids=lambda p: p.stem)
def test_full_history_scores_one_on_every_bundled_prompt(path):
    trace = load_trace(path)
    for n in range(1, len(trace.turns) + 1):
        full = trace.prompt(n, False)
        r = retention(trace.turns[: n - 1], full, mission=trace.mission,
                      exclude=[trace.system_prompt], strategy=get_strategy(False))
        assert r.score == 1.0, (n, r.dropped)


@pytest.mark.parametrize("strategy", strategy_names())
def test_scores_are_fractions(strategy):
    trace: Trace = load_trace(short_example_trace_paths()[0])
    for n in range(1, len(trace.turns) + 1):
        r = retention(trace.turns[: n - 1], trace.prompt(n, strategy), mission=trace.mission,
                      strategy=get_strategy(strategy), exclude=[trace.system_prompt],
                      reference=trace.prompt(n, False))
        assert 0.0 <= r.score <= 1.0
        assert set(r.dropped) <= set(r.facts)
