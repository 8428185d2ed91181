"""Issue 20 items 6 and 7 (memory): the driver of a comparison keeps per-run sums, not
per-prompt numbers; those go to a bounded store (a temporary file past a bound) and
stream into ``--json`` and the HTML report, which stay what they were."""

from __future__ import annotations

import copy
import io
import json
import pickle
import tracemalloc

import pytest

from turnpress.compare import spill
from turnpress.compare.html import report_data
from turnpress.compare.pricing import cost_usd, get_price, output_cost_usd
from turnpress.compare.results import (
    AsRun,
    ComparisonResult,
    StrategyResult,
    TraceInfo,
    TraceOutcome,
    add_outcome,
)
from turnpress.compare.spill import RecordStore

STRATEGIES = ["full-history", "lossy", "summarising"]


def comparison(runs: int, turns: int, *, names: str = "run-{r}") -> ComparisonResult:
    """``runs`` runs of ``turns`` prompts under three strategies (the third makes its own
    model calls), every other turn billed."""
    price = get_price("in=2,cached=0.5,out=8", "openai")
    result = ComparisonResult("o200k_base", "openai", price)
    shared: list[str] = []
    result.strategies = [StrategyResult(s, s, {}, _names=shared) for s in STRATEGIES]
    for r in range(runs):
        rows = [[(n, 1000 * n // (k + 1) + r, 500 * n // (k + 2), 7 * k, 1.0 - 0.01 * k * n,
                  n % 4, (n % 4) - (k * n % 2 if n % 4 else 0))
                 for n in range(1, turns + 1)] for k in range(len(STRATEGIES))]
        base = sum(row[1] for row in rows[0])
        billed = tuple((900 * n + r, 400 * n) if n % 2 else None for n in range(1, turns + 1))
        as_run = AsRun(len([b for b in billed if b]), sum(b[0] for b in billed if b),
                       sum(b[1] for b in billed if b), 0, 0.01 * r)
        info = TraceInfo(names.format(r=r), turns, base,
                         sum(cost_usd(price, row[1], row[2]) for row in rows[0]),
                         as_run, billed, 0.001 * turns)
        calls = [[], [], [(n, 300 + n, 40 + r) for n in range(3, turns + 1, 3)]]
        add_outcome(result, TraceOutcome(r, info, rows, [[] for _ in STRATEGIES],
                                         [None] * len(STRATEGIES), None, calls), shared, 0)
    return result


def test_a_store_gives_back_its_records_in_order_from_memory_and_disk():
    store = RecordStore("<Iqd", spill_bytes=100)
    records = [(i, -i * 10**12, i / 7) for i in range(1000)]
    for record in records:
        store.append(*record)
    assert len(store) == 1000 and store.on_disk > 0  # most of them went to the file
    assert list(store) == records
    assert list(store) == records  # read again, the same
    assert pickle.loads(pickle.dumps(store)) == store
    twin = copy.deepcopy(store)
    assert list(twin) == records and twin == store
    twin.append(1, 2, 3.0)
    assert twin != store and list(twin)[-1] == (1, 2, 3.0)
    small = RecordStore("<Iqd")
    small.append(*records[0])
    assert small.on_disk == 0 and list(small) == records[:1]
    store.close()
    assert list(store) == [] and len(store) == 0


def test_without_a_temporary_directory_the_records_stay_in_memory(monkeypatch):
    def refuse(*_args, **_kwargs):
        raise OSError("read-only file system")

    monkeypatch.setattr(spill.tempfile, "TemporaryFile", refuse)
    store = RecordStore("<I", spill_bytes=8)
    for i in range(100):
        store.append(i)
    assert store.on_disk == 0 and list(store) == [(i,) for i in range(100)]


@pytest.mark.parametrize("spill_bytes", [64, spill.SPILL_BYTES])
def test_streamed_json_is_the_document_byte_for_byte(monkeypatch, spill_bytes):
    monkeypatch.setattr(spill, "SPILL_BYTES", spill_bytes)
    result = comparison(40, 12, names='run "{r}"\n\u00e9\u2028\x00 \\u0000')
    assert all(s._rows.on_disk > 0 for s in result.strategies) == (spill_bytes == 64)
    for indent in (2, 0, 4):
        expected = json.dumps(result.to_json(), indent=indent, ensure_ascii=False)
        assert result.dumps(indent) == expected
        out = io.StringIO()
        result.write_json(out, indent)
        assert out.getvalue() == expected
    assert result.dumps(None) == json.dumps(result.to_json(), ensure_ascii=False)
    doc = json.loads(result.dumps())
    assert len(doc["strategies"][0]["per_turn"]) == 40 * 12
    assert [c["turn"] for c in doc["strategies"][2]["summary_per_call"][:4]] == [3, 6, 9, 12]
    assert doc["strategies"][1]["summary_per_call"] == []
    with pytest.raises(ValueError, match="indent must be a non-negative integer"):
        result.dumps(-1)


def test_a_trace_name_that_looks_like_a_placeholder_stays_a_name(monkeypatch):
    monkeypatch.setattr(spill, "SPILL_BYTES", 64)
    result = comparison(3, 2, names="\x00deadbeefdeadbeef:0\x00 {r}")
    assert result.dumps() == json.dumps(result.to_json(), indent=2, ensure_ascii=False)


def test_per_run_sums_are_what_the_rows_add_up_to(monkeypatch):
    monkeypatch.setattr(spill, "SPILL_BYTES", 64)
    result = comparison(25, 9)
    price = result.price
    for s in result.strategies:
        cost, tokens, needed, shown = s.trace_totals(price, 27)
        assert len(cost) == 27 and cost[25:] == [0.0, 0.0]
        by_trace: dict[int, list[float]] = {}
        for row in s.per_turn():
            t = int(row.trace.split("-")[1])
            sums = by_trace.setdefault(t, [0.0, 0.0, 0.0, 0.0])
            sums[0] += cost_usd(price, row.input_tokens, row.cached_tokens, row.written_tokens)
            sums[1] += row.input_tokens
            sums[2] += row.needed
            sums[3] += row.needed_shown
        for name, turn, tokens_in, tokens_out in s.calls():
            by_trace[int(name.split("-")[1])][0] += output_cost_usd(price, tokens_in,
                                                                     tokens_out)
            assert turn % 3 == 0
        for t, (c, k, n, w) in by_trace.items():
            assert (cost[t], tokens[t], needed[t], shown[t]) == (c, k, n, w)
        assert s.trace_costs(price) == cost[:25]
        worst = min(w / n for _, (_, _, n, w) in by_trace.items() if n)
        assert s.min_trace_recall == worst
        # at another price, the costs are summed again from the kept rows
        other = get_price("in=1,cached=0.1,out=3", "openai")
        again = s.trace_costs(other)
        assert again != cost[:25]
        rows = list(s.rows())
        assert again[4] == pytest.approx(
            sum(cost_usd(other, r[2], r[3], r[4]) for r in rows if r[0] == 4)
            + sum(output_cost_usd(other, c[2], c[3]) for c in s.calls() if c[0] == "run-4"))


def test_billed_usage_is_kept_by_the_result_not_by_each_trace():
    result = comparison(3, 5)
    assert all(t.billed == () for t in result.traces)
    assert list(result.billed()) == [(r, turn, 900 * (turn + 1) + r, 400 * (turn + 1))
                                     for r in range(3) for turn in (0, 2, 4)]
    series = report_data(result)["series"]
    assert series[1]["billed"] == [900, None, 2700, None, 4500]
    assert series[0]["billed"][0] == pytest.approx((900 + 901 + 902) / 3)


def _held(runs: int, turns: int) -> int:
    tracemalloc.start()
    try:
        result = comparison(runs, turns)
        held, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert result.prompts == runs * turns
    return held


def test_the_memory_a_result_holds_does_not_grow_with_the_prompts(monkeypatch):
    """What per-prompt arrays held: 48 bytes a prompt and strategy, 8 more a billed turn
    (and billed tuples of ~120 bytes a turn): 200 runs x 150 more turns x 3 strategies
    would be over 4 MB more. The result holds per-run sums and names only."""
    monkeypatch.setattr(spill, "SPILL_BYTES", 4096)
    short, long = _held(200, 10), _held(200, 160)
    assert long - short < 250_000, (short, long)


@pytest.mark.parametrize("cache", ["openai", "anthropic"])
def test_the_baseline_strategy_shares_the_reference_cache_model(monkeypatch, cache):
    """Issue 20 item 6: ``full-history`` among the compared strategies sends the
    reference's prompts, so its cache usage is the reference's: no second model holding
    a copy of the reference's states for the whole run (on one long run, a per-message
    cost). Its figures stay those of a strategy sending the same prompts on its own
    model (``test_a_prompt_with_the_baselines_texts_is_counted_and_searched_as_the_baselines``)."""
    from turnpress.compare import compare_traces, engine
    from turnpress.examples import example_trace_paths

    used: set[int] = set()  # the models that were sent prompts
    real = engine.new_cache_model

    def new_cache_model(name, rules=None):
        model = real(name, rules)
        account = model.account
        model.account = lambda prompt: used.add(id(model)) or account(prompt)
        return model

    monkeypatch.setattr(engine, "new_cache_model", new_cache_model)
    path = next(p for p in example_trace_paths() if p.stem == "incident-triage")
    result = compare_traces(path, ["full-history", "rolling-window"], cache=cache)
    assert len(used) == 2  # the reference's and rolling-window's
    full = result.strategy("full-history")
    assert full.cached_tokens > 0 and full.cost_ratio == 1.0
