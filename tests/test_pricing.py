"""Price presets, ``--price`` parsing and cost."""

from __future__ import annotations

import pytest

from turnpress.compare.pricing import (
    PRICE_PRESETS,
    Price,
    cost_usd,
    default_price,
    get_price,
    parse_price,
)


def test_presets_are_data():
    assert {name: (p.input, p.cached, p.write) for name, p in PRICE_PRESETS.items()} == {
        "openai-gpt-4.1": (2.00, 0.50, None),
        "openai-gpt-4o": (2.50, 1.25, None),
        "anthropic-sonnet-4": (3.00, 0.30, 3.75),
        "anthropic-haiku-3.5": (0.80, 0.08, 1.00),
    }


def test_parse_preset_and_custom():
    assert parse_price("anthropic-sonnet-4") is PRICE_PRESETS["anthropic-sonnet-4"]
    assert parse_price("in=1.5,cached=0.15,write=1.875") == Price(1.5, 0.15, 1.875)
    assert parse_price(" in = 2 , cached = 0.5 ") == Price(2.0, 0.5, None)
    assert parse_price("input=1,cached=0") == Price(1.0, 0.0, None)


@pytest.mark.parametrize(("text", "message"), [
    ("gpt-9", r"unknown price preset 'gpt-9'; use a preset \(openai-gpt-4.1, "),
    ("in=abc,cached=1", r"malformed price 'in=abc,cached=1': 'abc' is not a number"),
    ("in=1", r"malformed price 'in=1': cached= is missing"),
    ("cached=1", r"malformed price 'cached=1': in= is missing"),
    ("in=1,cached=1,outt=3", r"'outt=3' is not in=, cached=, write=, out= or min="),
    ("in=1,cached", r"'cached' is not in=, cached=, write=, out= or min="),
    ("in=-1,cached=1", r"in must be a non-negative number"),
    ("in=1,in=2,cached=1", r"'in' given twice"),
    ("in=nan,cached=1", r"non-negative number"),
    # accepted once: every cost ratio 1.000 and a recommendation picked at random
    ("in=0,cached=0", r"in= must be more than 0 \(every cost and cost ratio is made of it"),
    ("in=1,cached=2", r"cached= \(2\) is more than in= \(1\); a cached read is billed at a "
                      r"fraction"),
])
def test_malformed_prices_name_the_problem(text, message):
    with pytest.raises(ValueError, match=message):
        parse_price(text)


def test_cost():
    sonnet = PRICE_PRESETS["anthropic-sonnet-4"]
    # 1M input of which 400k cached and 100k written: 0.5M*3 + 0.4M*0.3 + 0.1M*3.75
    assert cost_usd(sonnet, 1_000_000, 400_000, 100_000) == pytest.approx(1.5 + 0.12 + 0.375)
    assert cost_usd(PRICE_PRESETS["openai-gpt-4.1"], 2000, 1024) == pytest.approx(
        (976 * 2.0 + 1024 * 0.5) / 1e6)
    with pytest.raises(ValueError, match="exceed"):
        cost_usd(sonnet, 10, 8, 8)


def test_write_without_a_write_price_costs_the_anthropic_premium():
    assert Price(2.0, 0.5).effective_write == pytest.approx(2.5)
    assert PRICE_PRESETS["anthropic-haiku-3.5"].effective_write == 1.0


def test_defaults_follow_the_cache_model():
    assert default_price("anthropic") == "anthropic-sonnet-4"
    assert default_price("openai") == default_price("none") == "openai-gpt-4.1"
    assert get_price(None, "anthropic") is PRICE_PRESETS["anthropic-sonnet-4"]
    custom = Price(1, 0.1)
    assert get_price(custom) is custom


def test_json_and_text():
    p = PRICE_PRESETS["openai-gpt-4.1"]
    assert p.to_json() == {"input": 2.0, "cached": 0.5, "write": None, "output": 8.0}
    assert str(p) == "openai-gpt-4.1 (in=2,cached=0.5,out=8)"
    assert str(Price(3, 0.3, 3.75)) == "in=3,cached=0.3,write=3.75"
