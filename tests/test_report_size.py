"""Issue 20 item 6 (report size): the HTML report grows with the number of runs, not with
the text of their prompts; under 10 MB for 1,000 runs, with the prompts of a bounded,
named sample of runs."""

from __future__ import annotations

import json
import re

from turnpress.compare.html import MAX_PROMPT_CHARS, html_report, report_data
from turnpress.compare.pricing import cost_usd, get_price
from turnpress.compare.results import (
    ComparisonResult,
    StrategyResult,
    TraceInfo,
    TraceOutcome,
    TracePrompts,
    add_outcome,
)

STRATEGIES = ["full-history", "checkpoint-coalesced", "rolling-window", "aggressive",
              "observation-masking", "per-turn-summary", "progressive-batch",
              "single-user-coalesced", "clear-tool-uses"]


def big_comparison(runs: int, turns: int, keep: int, chars: int) -> ComparisonResult:
    """``runs`` runs of ``turns`` prompts under 9 strategies; the first ``keep`` runs keep
    their rendered prompts, where every strategy rewrites a ``chars``-character message
    every turn (the worst case for the page: no text shared between turns)."""
    price = get_price("openai-gpt-4.1", "openai")
    result = ComparisonResult("o200k_base", "openai", price)
    names: list[str] = []
    result.strategies = [StrategyResult(s, s, {}, _names=names) for s in STRATEGIES]
    for r in range(runs):
        rows = [[(n, 1000 * n // (k + 1), 500 * n // (k + 2), 0, 0.9, 3, 3 - (k % 2))
                 for n in range(1, turns + 1)] for k in range(len(STRATEGIES))]
        base = sum(row[1] for row in rows[0])
        info = TraceInfo(f"run-{r:04d}", turns, base,
                         sum(cost_usd(price, row[1], row[2]) for row in rows[0]))
        prompts = None
        if r < keep:
            filler = f"run {r} " * (chars // 8)
            prompts = TracePrompts(info.name, [
                [[{"role": "system", "content": "You are an agent."},
                  {"role": "user", "content": f"{k} {n} {filler}"}]
                 for k in range(len(STRATEGIES))] for n in range(1, turns + 1)],
                [[1000] * len(STRATEGIES) for _ in range(turns)])
        add_outcome(result, TraceOutcome(r, info, rows, [[] for _ in STRATEGIES],
                                         [None] * len(STRATEGIES), prompts), names, keep)
    return result


def test_the_report_of_1000_runs_is_under_10_mb():
    result = big_comparison(1000, 70, keep=20, chars=4000)
    page = html_report(result)
    size = len(page.encode("utf-8"))
    assert size < 10_000_000, size
    data = report_data(result)
    chars = sum(len(t) for t in data["texts"])
    assert chars <= MAX_PROMPT_CHARS
    # the sample of runs with prompts is named on the page, and says where it was cut
    assert 0 < len(data["prompts"]) < 20
    last = data["prompts"][-1]
    assert len(last["turns"]) < last["of"] == 70
    note = data["meta"]["prompt_note"]
    assert note.startswith(f"Rendered prompts of {len(data['prompts'])} of 1000 traces: "
                           "run-0000, run-0001")
    assert f"{last['trace']} (turns 1-{len(last['turns'])} of 70)" in note
    assert "run-0000" in re.sub(r"<script.*?</script>", "", page, flags=re.S)
    # totals cover every run
    assert data["meta"]["traces"] == 1000 and data["series"][0]["running"][0] == 1000


def test_prompts_within_the_bound_are_kept_whole():
    result = big_comparison(5, 6, keep=5, chars=100)
    data = report_data(result)
    assert [p["trace"] for p in data["prompts"]] == [f"run-{r:04d}" for r in range(5)]
    assert all(len(p["turns"]) == p["of"] == 6 for p in data["prompts"])
    assert data["meta"]["prompt_note"].startswith("Rendered prompts of 5 of 5 traces: ")
    # the ids point at the texts of the prompts, turn by turn, strategy by strategy
    kept = result.kept_prompts[2]
    turn = data["prompts"][2]["turns"][3]
    assert [data["texts"][m[1]] for m in turn[1]] == [
        m["content"] for m in kept.prompts[3][1]]
    # a bound cuts a trace at a turn and leaves the rest out; none keeps no prompt
    cut = report_data(result, max_prompt_chars=2500)
    assert sum(len(t) for t in cut["texts"]) <= 2500
    assert len(cut["prompts"]) == 1 and 0 < len(cut["prompts"][0]["turns"]) < 6
    nothing = report_data(result, max_prompt_chars=10)
    assert nothing["prompts"] == [] and nothing["texts"] == []
    assert "holds no rendered prompts" in nothing["meta"]["prompt_note"]
    json.dumps(nothing)
