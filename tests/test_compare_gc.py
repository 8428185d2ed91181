"""compare's own time: the garbage collector runs less often while a worker compares
(issue 20 item 4, speed), and the thresholds the caller had come back afterwards."""

from __future__ import annotations

import gc

import pytest
from plugin_helpers import register_strategies

from turnpress import Strategy
from turnpress.compare import compare_traces
from turnpress.compare.engine import COMPARE_GC_THRESHOLDS, fewer_collections
from turnpress.examples import short_example_trace_paths

PHONE = [p for p in short_example_trace_paths() if "phone" in p.name]


@pytest.fixture
def caller_thresholds():
    """A caller's own thresholds, put back after the test whatever happens."""
    before = gc.get_threshold()
    gc.set_threshold(600, 9, 8)
    yield (600, 9, 8)
    gc.set_threshold(*before)


def test_a_strategy_renders_with_the_compare_thresholds_and_the_callers_come_back(
        fresh_registry, caller_thresholds):
    seen: list[tuple[int, int, int]] = []

    class Recording(Strategy):
        name = "gc-recording"

        def to_messages(self, turns, memory, ctx):
            seen.append(gc.get_threshold())
            return [ctx.message("user", ctx.mission)]

    register_strategies("gc-recording-plugin", Recording)
    compare_traces(PHONE, ["gc-recording"], tokenizer="chars4", jobs=1)
    assert seen and set(seen) == {COMPARE_GC_THRESHOLDS}
    assert gc.get_threshold() == caller_thresholds


def test_the_thresholds_come_back_when_the_body_raises(caller_thresholds):
    with pytest.raises(RuntimeError), fewer_collections():
        assert gc.get_threshold() == COMPARE_GC_THRESHOLDS
        raise RuntimeError("a strategy failed")
    assert gc.get_threshold() == caller_thresholds


def test_inside_another_the_thresholds_stay_until_the_outer_one_ends(caller_thresholds):
    """compare sets the thresholds once for the whole comparison; each trace's worker
    call inside it leaves them be (so the young objects are collected once)."""
    with fewer_collections():
        with fewer_collections():
            assert gc.get_threshold() == COMPARE_GC_THRESHOLDS
        assert gc.get_threshold() == COMPARE_GC_THRESHOLDS
    assert gc.get_threshold() == caller_thresholds
