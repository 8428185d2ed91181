"""Token prices: presets as data, ``--price`` parsing and the cost of a prompt.

The price list itself lives in :mod:`turnpress.core.pricing` (strategies read it from
their render context); it is re-exported here, beside :func:`cost_usd`.

Prices are USD per million tokens: ordinary input, cached input (read from the
prompt cache) and cache write (Anthropic's first write of a prefix; ``None``
when the provider has no write premium). A write without a write price costs
1.25x the input price, Anthropic's premium. ``output`` is the price of generated
tokens, what a summarization call's summary costs (the presets carry the list
price; ``None`` when a price given by hand has no ``out=``).
"""

from __future__ import annotations

from turnpress.core.pricing import (
    CACHE_WRITE_PREMIUM,
    PRICE_PRESETS,
    Price,
    default_price,
    get_price,
    parse_price,
)

__all__ = [
    "CACHE_WRITE_PREMIUM",
    "PRICE_PRESETS",
    "Price",
    "cost_usd",
    "default_price",
    "floor_cost",
    "get_price",
    "output_cost_usd",
    "parse_price",
]


def cost_usd(price: Price, input_tokens: int, cached: int = 0, written: int = 0) -> float:
    """The cost of ``input_tokens`` prompt tokens of which ``cached`` were read from the
    cache and ``written`` were written to it."""
    uncached = input_tokens - cached - written
    if uncached < 0:
        raise ValueError(f"cached ({cached}) + written ({written}) tokens exceed the "
                         f"prompt's {input_tokens} tokens")
    return (uncached * price.input + cached * price.cached
            + written * price.effective_write) / 1_000_000


def floor_cost(price: Price, cache: str, new_tokens: int, head_tokens: int) -> float:
    """One prompt's share of the floor (DESIGN §11): its ``new_tokens`` (what it adds to
    the run's previous prompt) sent once at the input price, and the system prompt
    (``head_tokens``) read from the cache (at the input price when there is none): on
    every prompt, the first included, whatever its length, with no write (an ideal
    bound, priced as simply as that)."""
    head_price = price.input if cache == "none" else price.cached
    return (new_tokens * price.input + head_tokens * head_price) / 1_000_000


def output_cost_usd(price: Price, input_tokens: int, output_tokens: int) -> float:
    """The cost of a model call that is not a prompt of the run (a summarization call):
    ``input_tokens`` at the input price (uncached: its prompt is not the run's) and
    ``output_tokens`` at the output price. Output tokens without an output price
    raise ``ValueError`` saying to add ``out=``."""
    if output_tokens and price.output is None:
        raise ValueError(f"price {price} has no output price, and summarization calls "
                         f"produced {output_tokens} output tokens; add out=USD (per "
                         f"million tokens) to --price")
    return (input_tokens * price.input + output_tokens * (price.output or 0.0)) / 1_000_000
