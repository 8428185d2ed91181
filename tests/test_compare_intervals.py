"""Issue 20 item 2: ``compare --sample N --seed S`` (stratified by run length) and 95%
bootstrap intervals over runs for cost ratio, needed-fact recall and tokens saved; the
recommendation is made on recall's lower bound (DESIGN §13)."""

from __future__ import annotations

import json
import random
import re

import pytest
from click.testing import CliRunner

from turnpress.cli import main
from turnpress.compare import compare_traces
from turnpress.compare.intervals import (
    Interval,
    RatioOfSums,
    bootstrap_intervals,
    runs_to_settle,
)
from turnpress.compare.pricing import cost_usd, get_price
from turnpress.compare.results import (
    ComparisonResult,
    SampleInfo,
    StrategyResult,
    TraceInfo,
    TraceOutcome,
    add_outcome,
)
from turnpress.compare.sources import stratified_sample
from turnpress.compare.table import notes, plain_lines


def run(*args: str):
    return CliRunner().invoke(main, ["compare", *args])


# -- the intervals cover the truth ----------------------------------------------------------------


def synthetic_population(size: int, seed: int) -> tuple[list[int], list[float], list[float]]:
    """Runs of 5 to 200 turns: full-history's cost grows with the square of the length, a
    strategy's cost is a noisy share of it that falls on long runs (as caching makes it);
    returns lengths, strategy costs and baseline costs."""
    rng = random.Random(seed)
    lengths, cost, base = [], [], []
    for _ in range(size):
        turns = rng.randint(5, 200)
        baseline = 0.002 * turns ** 2 * rng.uniform(0.5, 1.5)
        share = min(1.2, max(0.05, rng.gauss(0.9 - 0.002 * turns, 0.12)))
        lengths.append(turns)
        base.append(baseline)
        cost.append(baseline * share)
    return lengths, cost, base


def test_the_95_interval_covers_the_true_ratio_in_at_least_90_of_100_samples():
    """On a synthetic corpus whose true cost ratio is known (the ratio over all its runs),
    the interval of a stratified sample of 40 runs covers it in >= 90 of 100 seeds."""
    lengths, cost, base = synthetic_population(3000, seed=7)
    truth = sum(cost) / sum(base)
    covered, widths = 0, []
    for seed in range(100):
        picked = stratified_sample(lengths, 40, seed)
        figure = RatioOfSums([cost[i] for i in picked], [base[i] for i in picked])
        [ci] = bootstrap_intervals([figure], seed=seed)
        covered += ci.low <= truth <= ci.high
        widths.append(ci.high - ci.low)
        assert ci.low <= figure.value() <= ci.high
    assert covered >= 90, covered
    # and the intervals are not trivially wide
    assert max(widths) < 0.5 * truth


def test_the_interval_narrows_as_runs_are_added():
    lengths, cost, base = synthetic_population(3000, seed=3)
    width = []
    for n in (20, 80, 320):
        picked = stratified_sample(lengths, n, 0)
        [ci] = bootstrap_intervals([RatioOfSums([cost[i] for i in picked],
                                                [base[i] for i in picked])])
        width.append(ci.high - ci.low)
    assert width[0] > width[1] > width[2]
    assert width[2] < width[0] / 2.5  # ~ 1 / sqrt(16) = 1/4, with bootstrap noise


def test_bootstrap_is_seeded_and_degenerate_cases_are_the_figure():
    rng = random.Random(1)
    figure = RatioOfSums([rng.random() for _ in range(30)], [1 + rng.random() for _ in range(30)])
    assert bootstrap_intervals([figure], seed=4) == bootstrap_intervals([figure], seed=4)
    assert bootstrap_intervals([figure], seed=4) != bootstrap_intervals([figure], seed=5)
    one = RatioOfSums([3.0], [4.0])
    assert bootstrap_intervals([one]) == [Interval(0.75, 0.75)]
    assert bootstrap_intervals([RatioOfSums([], [], empty=1.0)]) == [Interval(1.0, 1.0)]
    # a replicate that draws only runs with no denominator gets the figure's empty value
    [ci] = bootstrap_intervals([RatioOfSums([0.0, 3.0], [0.0, 4.0], empty=1.0)], seed=1)
    assert ci == Interval(0.75, 1.0)
    with pytest.raises(ValueError, match="one numerator and one denominator per run"):
        bootstrap_intervals([figure, RatioOfSums([1.0], [1.0])])
    with pytest.raises(ValueError, match="confidence"):
        bootstrap_intervals([figure], confidence=1.0)


def test_runs_to_settle_follows_one_over_sqrt_n():
    # at 0.93 with a lower bound of 0.87 over 10 runs, the half-width must halve to clear
    # 0.90: four times the runs
    assert runs_to_settle(10, 0.93, Interval(0.87, 0.97), 0.9) == 40
    # under the bar: runs until the upper bound falls under it
    assert runs_to_settle(10, 0.85, Interval(0.75, 0.95), 0.9) in (40, 41)  # float rounding
    assert runs_to_settle(10, 0.9, Interval(0.8, 1.0), 0.9) is None


# -- stratified sampling --------------------------------------------------------------------------


def test_the_sample_is_stratified_by_length():
    rng = random.Random(0)
    lengths = [rng.randint(1, 300) for _ in range(1000)]
    order = sorted(range(1000), key=lambda i: (lengths[i], i))
    rank = {run: r for r, run in enumerate(order)}
    picked = stratified_sample(lengths, 10, seed=2)
    assert picked == sorted(picked) and len(set(picked)) == 10
    # one run from each tenth of the runs sorted by length
    assert sorted(rank[i] // 100 for i in picked) == list(range(10))
    assert stratified_sample(lengths, 10, seed=2) == picked
    assert stratified_sample(lengths, 10, seed=3) != picked
    assert stratified_sample(lengths[:5], 10, seed=0) == [0, 1, 2, 3, 4]


def test_sample_from_python_and_the_cli():
    full = compare_traces(None, ["full-history", "rolling-window"])
    sampled = compare_traces(None, ["full-history", "rolling-window"], sample=3, seed=5)
    assert sampled.sample is not None
    assert (sampled.sample.runs, sampled.sample.population) == (3, len(full.traces))
    names = [t.name for t in sampled.traces]
    assert len(names) == 3 and names == [t.name for t in full.traces if t.name in names]
    # a trace's numbers do not depend on which other traces are compared
    by_name = {t.name: t for t in full.traces}
    for info in sampled.traces:
        assert info == by_name[info.name]
    doc = sampled.to_json()
    assert doc["sample"] == {"runs": 3, "of": len(full.traces), "seed": 5,
                             "stratified_by": "turns"}
    assert doc["intervals"]["seed"] == 5
    assert any(line.startswith("sample: 3 of ") for line in notes(sampled))

    out = run("--sample", "3", "--seed", "5", "--json", "-s", "full-history",
              "-s", "rolling-window")
    assert out.exit_code == 0, out.output
    assert json.loads(out.output) == json.loads(sampled.dumps())
    every = compare_traces(None, ["full-history"], sample=len(full.traces) + 5)
    assert [ln for ln in notes(every) if ln.startswith("sample: ")] == [
        f"sample: all {len(full.traces)} runs (--sample asked for at least as many)"]
    bad = run("--sample", "0")
    assert bad.exit_code == 2 and "--sample" in bad.output
    with pytest.raises(ValueError, match="sample must be a positive number"):
        compare_traces(None, ["full-history"], sample=0)


def test_runs_that_cannot_be_read_or_have_no_turn_are_not_drawn(tmp_path):
    """A sample of N compares N runs: a run that cannot be read or has no turn is not
    one of the population (it was drawn as a run of no turn, so a sample compared fewer
    than N and over-drew the short runs); each is still skipped and named, and
    --strict still stops at it."""
    from turnpress.examples import short_example_trace_paths

    good = [str(p) for p in short_example_trace_paths()]
    garbled = tmp_path / "garbled.json"
    garbled.write_text("{oops")
    died = tmp_path / "died.json"
    died.write_text(json.dumps([{"role": "system", "content": "s"},
                                {"role": "user", "content": "fix the bug"}]))
    broken = [str(garbled), str(died)]
    for seed in range(4):
        result = compare_traces([*broken, *good], ["full-history"], sample=2, seed=seed,
                                strict=False)
        assert result.sample is not None
        assert (result.sample.runs, result.sample.population) == (2, len(good))
        assert len(result.traces) == 2
        assert sorted(s.file for s in result.skipped) == sorted(broken)
    with pytest.raises(ValueError, match=r"garbled\.json"):
        compare_traces([*good, str(garbled)], ["full-history"], sample=2, strict=True)


# -- intervals of a whole comparison, and the recommendation on the lower bound -------------------


def synthetic_result(shown: list[int], *, needed: int = 10, min_recall: float = 0.9,
                     repeat: int = 1, full: bool = False) -> ComparisonResult:
    """A comparison of a cheap lossy strategy (and ``full`` history) over one-prompt runs:
    the lossy one shows ``shown[i]`` of the ``needed`` facts of run i (each run
    ``repeat`` times) at half full-history's tokens, with a per-run cost that varies."""
    price = get_price("in=1,cached=0.1", "none")
    result = ComparisonResult("chars4", "none", price, min_recall=min_recall)
    names: list[str] = []
    result.strategies = [StrategyResult("full-history", "full-history", {}, _names=names),
                         StrategyResult("lossy", "lossy", {}, _names=names)]
    if not full:  # as if only the lossy one had been asked for
        result.strategies[0].status = ("n/a", "not asked for")
    for k in range(repeat):
        for i, s in enumerate(shown):
            tokens = 1000 + 100 * i
            lossy = tokens // 2 + 40 * (i % 3)
            info = TraceInfo(f"run-{k}-{i}", 1, tokens, cost_usd(price, tokens, 0, 0))
            add_outcome(result, TraceOutcome(
                len(result.traces), info,
                [[(1, tokens, 0, 0, 1.0, needed, needed)],
                 [(1, lossy, 0, 0, 0.5, needed, s)]],
                [[], []], [None, None]), names, 0)
    return result


def test_each_figure_gets_an_interval_around_it():
    result = synthetic_result([10, 9, 10, 8, 10, 10, 9, 10], full=True)
    lossy = result.strategy("lossy")
    ci = result.intervals()["lossy"]
    assert ci["cost_ratio"].low < lossy.cost_ratio < ci["cost_ratio"].high
    assert ci["needed_fact_recall"].low < lossy.needed_fact_recall \
        <= ci["needed_fact_recall"].high
    saved = ci["savings_vs_full_history"]
    assert saved.low < lossy.savings_vs_full_history < saved.high
    full = result.intervals()["full-history"]
    assert full["cost_ratio"] == Interval(1.0, 1.0)
    assert full["savings_vs_full_history"] == Interval(0.0, 0.0)
    entry = result.to_json()["strategies"][1]
    assert entry["ci"]["needed_fact_recall"] == ci["needed_fact_recall"].to_json()
    # the plain lines show the intervals wider than 3 decimals, "-" for full-history's
    lines = plain_lines(result)
    assert lines[1].split()[-3:] == ["cost_ratio_95ci", "recall_95ci", "saved_95ci"]
    full_row = next(ln for ln in lines if ln.startswith("full-history"))
    assert full_row.split()[-3:] == ["-", "-", "-"]
    lossy_row = next(ln for ln in lines if ln.startswith("lossy"))
    low, high = ci["needed_fact_recall"].low, ci["needed_fact_recall"].high
    assert lossy_row.split()[-2] == f"{low:.3f}..{high:.3f}"


def test_a_recommendation_is_withheld_when_recall_s_lower_bound_is_under_the_bar():
    """Recall 0.93 over 10 runs, one of them poor: the point clears 0.9 but the interval
    does not, so nothing is recommended; the footer names the candidate and how many runs
    would settle it. Ten times the same runs settle it."""
    shown = [10, 10, 10, 10, 10, 10, 10, 10, 6, 7]
    few = synthetic_result(shown)
    lossy = few.strategy("lossy")
    assert lossy.needed_fact_recall == pytest.approx(0.93)
    assert few.intervals()["lossy"]["needed_fact_recall"].low < 0.9
    assert few.recommended is None
    candidate = few.candidate
    assert candidate is not None and candidate.strategy is lossy
    assert candidate.runs_to_settle is not None and candidate.runs_to_settle > 10
    doc = few.to_json()
    assert doc["recommended"] is None
    assert doc["candidate"]["name"] == "lossy"
    assert doc["candidate"]["runs_to_settle"] == candidate.runs_to_settle
    [line] = [ln for ln in notes(few) if ln.startswith("no recommendation")]
    assert "the best candidate, lossy has recall 0.930" in line
    assert f"about {candidate.runs_to_settle} runs in all would settle it" in line
    assert "--min-recall" in line

    # with full-history compared too, it is recommended, and lossy named as undecided
    both = synthetic_result(shown, full=True)
    assert both.recommended is both.strategy("full-history")
    assert both.candidate is not None and both.candidate.strategy.label == "lossy"
    assert any(ln.startswith("undecided, and cheaper: the best candidate, lossy has recall "
                             "0.930") for ln in notes(both))

    many = synthetic_result(shown, repeat=candidate.runs_to_settle // len(shown) + 2)
    assert many.intervals()["lossy"]["needed_fact_recall"].low >= 0.9
    assert many.recommended is many.strategy("lossy")
    assert many.candidate is None
    assert any(ln.startswith("* recommended: lossy, the cheapest whose recall is >= 0.9")
               for ln in notes(many))


def test_one_run_gives_no_interval_and_no_recommendation():
    """One run has nothing to resample: its interval is the figure itself, so nothing is
    recommended "at the lower bound"; the footer says so and names the cheapest at the
    bar on that run (the candidate, runs to settle unknown). Two runs recommend."""
    one = synthetic_result([10], full=True)
    assert one.intervals()["lossy"]["needed_fact_recall"] == Interval(1.0, 1.0)
    assert one.recommended is None
    candidate = one.candidate
    assert candidate is not None and candidate.strategy is one.strategy("lossy")
    assert candidate.runs_to_settle is None
    doc = one.to_json()
    assert doc["recommended"] is None and doc["candidate"]["name"] == "lossy"
    [line] = [ln for ln in notes(one) if ln.startswith("no recommendation")]
    assert line == ("no recommendation: one run gives no 95% interval (they resample "
                    "runs); on it, the cheapest with recall >= 0.9 (--min-recall) is lossy "
                    "(recall 1.000): compare more runs to settle it")
    assert synthetic_result([10, 10], full=True).recommended is not None


def test_under_the_bar_but_not_ruled_out_and_ruled_out():
    close = synthetic_result([10, 10, 10, 10, 10, 10, 10, 10, 3, 5])  # 0.88
    assert close.recommended is None
    assert close.candidate is not None
    [line] = [ln for ln in notes(close) if ln.startswith("no recommendation")]
    assert "no recommendation: lossy has recall 0.880" in line
    assert "but the interval reaches it" in line
    low = synthetic_result([5, 5, 6, 5, 4, 5, 5, 6])  # 0.51, every replicate under 0.9
    assert low.recommended is None and low.candidate is None
    [line] = [ln for ln in notes(low) if ln.startswith("no recommendation")]
    assert "even at the upper bound of its 95% interval" in line


def test_a_sampled_comparison_says_a_larger_sample_would_settle_it():
    few = synthetic_result([10, 10, 10, 10, 10, 10, 10, 10, 6, 7])
    few.sample = SampleInfo(10, 500, 0)
    [line] = [ln for ln in notes(few) if ln.startswith("no recommendation")]
    assert "a larger --sample, or all of them" in line


def test_the_terminal_table_shows_an_interval_under_a_figure_only_where_it_is_wider():
    from rich.console import Console

    from turnpress.compare.table import print_comparison

    result = synthetic_result([10, 9, 10, 8, 10, 10, 9, 10], full=True)
    console = Console(width=80, force_terminal=True, record=True, color_system=None)
    print_comparison(result, console, plain=False)
    lines = console.export_text().splitlines()
    ci = result.intervals()["lossy"]
    row = next(i for i, ln in enumerate(lines) if ln.startswith("lossy"))
    under = lines[row + 1].split()
    low, high = ci["cost_ratio"].low, ci["cost_ratio"].high
    assert under[0] == f"{low:.2f}-{high:.2f}".replace("0.", ".")
    assert under[1] == f"{ci['needed_fact_recall'].low:.3f}-" \
        f"{ci['needed_fact_recall'].high:.3f}".replace("0.", ".")
    full = next(i for i, ln in enumerate(lines) if ln.startswith("full-history"))
    assert lines[full + 1].startswith("lossy")  # no interval line: 1.00x exactly
    assert any("95% bootstrap interval over runs" in ln for ln in lines)


@pytest.mark.parametrize(("shown", "full"), [
    ([10], True),                                      # one run: no interval
    ([10] * 8 + [6, 7], False),                        # no recommendation, a candidate
    ([10] * 8 + [6, 7], True),                         # recommended, a cheaper candidate
    ([5, 5, 6, 5, 4, 5, 5, 6], False),                 # ruled out, even at the upper bound
])
def test_the_html_report_says_what_the_footer_says_of_the_recommendation(shown, full):
    """QA-b item 7: the page said "95% interval 1.000-1.000 ... straddles 0.9" of a
    single run, where the terminal says one run gives no interval; the page now gives
    the footer's own lines on a recommendation withheld or undecided."""
    from html import unescape

    from turnpress.compare.html import html_report

    result = synthetic_result(shown, full=full)
    page = " ".join(unescape(re.sub(r"<[^>]+>", " ", html_report(result))).split()).lower()
    said = [ln for ln in notes(result) if ln.startswith(("no recommendation", "undecided"))]
    assert said
    for line in said:
        assert line.lower() in page
    assert "straddles" not in page


@pytest.mark.parametrize("n", [2, 50])
def test_the_html_report_says_what_the_footer_says_of_the_sample(n):
    """QA-b item 16: ``--sample 100`` of fewer runs compares every run; the footer says
    "sample: all N runs", and the page said "A sample of 3 of 3 runs, stratified by
    length": it now gives the footer's line, of a sample of some runs or of all."""
    from html import unescape

    from turnpress.compare.html import html_report
    from turnpress.examples import short_example_trace_paths

    result = compare_traces(short_example_trace_paths(), ["full-history"],
                            tokenizer="chars4", sample=n)
    page = " ".join(unescape(re.sub(r"<[^>]+>", " ", html_report(result))).split()).lower()
    [line] = [ln for ln in notes(result) if ln.startswith("sample: ")]
    assert line.startswith("sample: all 3 runs" if n > 3 else "sample: 2 of 3 runs")
    assert line.lower() in page
    assert "a sample of 3 of 3" not in page
