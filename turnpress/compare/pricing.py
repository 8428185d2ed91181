"""Token prices: presets as data, ``--price`` parsing and the cost of a prompt.

Prices are USD per million tokens: ordinary input, cached input (read from the
prompt cache) and cache write (Anthropic's first write of a prefix; ``None``
when the provider has no write premium). A write without a write price costs
1.25x the input price, Anthropic's premium. ``output`` is the price of generated
tokens, what a summarization call's summary costs (the presets carry the list
price; ``None`` when a price given by hand has no ``out=``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

__all__ = [
    "CACHE_WRITE_PREMIUM",
    "PRICE_PRESETS",
    "Price",
    "cost_usd",
    "default_price",
    "get_price",
    "output_cost_usd",
    "parse_price",
]

CACHE_WRITE_PREMIUM = 1.25


@dataclass(frozen=True)
class Price:
    """USD per million tokens: ``input``, ``cached`` input and cache ``write`` (or None)."""

    input: float
    cached: float
    write: float | None = None
    name: str | None = None
    output: float | None = None

    @property
    def effective_write(self) -> float:
        """The price of a cache write: ``write``, or 1.25x ``input`` when it is unset."""
        return self.write if self.write is not None else self.input * CACHE_WRITE_PREMIUM

    def to_json(self) -> dict[str, float | None]:
        """``{"input": float, "cached": float, "write": float | None, "output": float |
        None}``."""
        return {"input": self.input, "cached": self.cached, "write": self.write,
                "output": self.output}

    def __str__(self) -> str:
        parts = f"in={self.input:g},cached={self.cached:g}"
        if self.write is not None:
            parts += f",write={self.write:g}"
        if self.output is not None:
            parts += f",out={self.output:g}"
        return f"{self.name} ({parts})" if self.name else parts


# USD per million tokens: input / cached input / cache write (None: no write premium) /
# output (the providers' list prices).
PRICE_PRESETS: dict[str, Price] = {
    "openai-gpt-4.1": Price(2.00, 0.50, None, "openai-gpt-4.1", 8.00),
    "openai-gpt-4o": Price(2.50, 1.25, None, "openai-gpt-4o", 10.00),
    "anthropic-sonnet-4": Price(3.00, 0.30, 3.75, "anthropic-sonnet-4", 15.00),
    "anthropic-haiku-3.5": Price(0.80, 0.08, 1.00, "anthropic-haiku-3.5", 4.00),
}

_KEYS = {"in": "input", "input": "input", "cached": "cached", "write": "write",
         "out": "output", "output": "output"}


def parse_price(text: str) -> Price:
    """A preset name, or ``in=..,cached=..[,write=..][,out=..]`` (USD per million tokens).

    A ``ValueError`` names the problem and the presets.
    """
    text = text.strip()
    if text in PRICE_PRESETS:
        return PRICE_PRESETS[text]
    presets = ", ".join(PRICE_PRESETS)
    usage = (f"use a preset ({presets}) or in=USD,cached=USD[,write=USD][,out=USD] per "
             f"million tokens")
    if "=" not in text:
        raise ValueError(f"unknown price preset {text!r}; {usage}")
    values: dict[str, float] = {}
    for item in (p.strip() for p in text.split(",")):
        key, eq, raw = item.partition("=")
        field = _KEYS.get(key.strip().lower())
        if not eq or field is None:
            raise ValueError(f"malformed price {text!r}: {item!r} is not in=, cached=, "
                             f"write= or out=; {usage}")
        if field in values:
            raise ValueError(f"malformed price {text!r}: {key.strip()!r} given twice")
        try:
            value = float(raw)
        except ValueError:
            raise ValueError(f"malformed price {text!r}: {raw.strip()!r} is not a number") \
                from None
        if not math.isfinite(value) or value < 0:
            raise ValueError(f"malformed price {text!r}: {key.strip()} must be a "
                             f"non-negative number")
        values[field] = value
    missing = [k for k in ("input", "cached") if k not in values]
    if missing:
        name = "in" if missing[0] == "input" else missing[0]
        raise ValueError(f"malformed price {text!r}: {name}= is missing; {usage}")
    return Price(values["input"], values["cached"], values.get("write"),
                 output=values.get("output"))


def get_price(price: str | Price | None, cache: str = "openai") -> Price:
    """``price`` as a :class:`Price` (``None``: the default for ``cache``)."""
    if isinstance(price, Price):
        return price
    return parse_price(price if price is not None else default_price(cache))


def default_price(cache: str) -> str:
    """The preset used when no price is given: ``anthropic-sonnet-4`` for the
    Anthropic cache model, else ``openai-gpt-4.1``."""
    return "anthropic-sonnet-4" if cache == "anthropic" else "openai-gpt-4.1"


def cost_usd(price: Price, input_tokens: int, cached: int = 0, written: int = 0) -> float:
    """The cost of ``input_tokens`` prompt tokens of which ``cached`` were read from the
    cache and ``written`` were written to it."""
    uncached = input_tokens - cached - written
    if uncached < 0:
        raise ValueError(f"cached ({cached}) + written ({written}) tokens exceed the "
                         f"prompt's {input_tokens} tokens")
    return (uncached * price.input + cached * price.cached
            + written * price.effective_write) / 1_000_000


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
