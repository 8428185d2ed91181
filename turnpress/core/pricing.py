"""What a prompt costs a strategy: the price list and the rules of the prompt cache.

Both are part of the render context (``RenderContext.price``, ``RenderContext.cache``,
DESIGN §11), so a strategy can schedule its work by what it costs; ``compare`` bills
with the same objects (``turnpress.compare.pricing`` re-exports them).

Prices are USD per million tokens: ordinary input, cached input (read from the
prompt cache) and cache write (Anthropic's first write of a prefix; ``None``
when the provider has no write premium). A write without a write price costs
1.25x the input price, Anthropic's premium. ``output`` is the price of generated
tokens (a summarization call's summary; ``None`` when a price given by hand has no
``out=``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

__all__ = [
    "CACHE_RULES",
    "CACHE_WRITE_PREMIUM",
    "DEFAULT_CACHE",
    "PRICE_PRESETS",
    "CacheRules",
    "Price",
    "default_price",
    "get_cache_rules",
    "get_price",
    "parse_price",
    "resolve_pricing",
    "rules_for",
]

CACHE_WRITE_PREMIUM = 1.25


@dataclass(frozen=True)
class Price:
    """USD per million tokens: ``input``, ``cached`` input and cache ``write`` (or None);
    ``min_cached``: the model's smallest cacheable prefix in tokens, when it is not the
    cache model's (:class:`CacheRules` ``min_tokens``, 1024): Anthropic's Haiku 3.5
    caches no prefix under 2048 tokens (see :func:`rules_for`)."""

    input: float
    cached: float
    write: float | None = None
    name: str | None = None
    output: float | None = None
    min_cached: int | None = None

    @property
    def effective_write(self) -> float:
        """The price of a cache write: ``write``, or 1.25x ``input`` when it is unset."""
        return self.write if self.write is not None else self.input * CACHE_WRITE_PREMIUM

    def to_json(self) -> dict[str, float | None]:
        """``{"input": float, "cached": float, "write": float | None, "output": float |
        None}``, and ``"min_cached"`` when it is set."""
        out: dict[str, float | None] = {"input": self.input, "cached": self.cached,
                                        "write": self.write, "output": self.output}
        if self.min_cached is not None:
            out["min_cached"] = self.min_cached
        return out

    def __str__(self) -> str:
        parts = f"in={self.input:g},cached={self.cached:g}"
        if self.write is not None:
            parts += f",write={self.write:g}"
        if self.output is not None:
            parts += f",out={self.output:g}"
        if self.min_cached is not None:
            parts += f",min={self.min_cached}"
        return f"{self.name} ({parts})" if self.name else parts


# USD per million tokens: input / cached input / cache write (None: no write premium) /
# output (the providers' list prices); Haiku 3.5's smallest cacheable prefix (Anthropic's
# prompt-caching docs: 2048 tokens for Haiku 3.5 and 3, 1024 for Sonnet 4).
PRICE_PRESETS: dict[str, Price] = {
    "openai-gpt-4.1": Price(2.00, 0.50, None, "openai-gpt-4.1", 8.00),
    "openai-gpt-4o": Price(2.50, 1.25, None, "openai-gpt-4o", 10.00),
    "anthropic-sonnet-4": Price(3.00, 0.30, 3.75, "anthropic-sonnet-4", 15.00),
    "anthropic-haiku-3.5": Price(0.80, 0.08, 1.00, "anthropic-haiku-3.5", 4.00, 2048),
}

_KEYS = {"in": "input", "input": "input", "cached": "cached", "write": "write",
         "out": "output", "output": "output", "min": "min_cached"}


def parse_price(text: str) -> Price:
    """A preset name, or ``in=..,cached=..[,write=..][,out=..][,min=..]`` (USD per million
    tokens; ``min=``: the model's smallest cacheable prefix in tokens, see :class:`Price`).

    A ``ValueError`` names the problem and the presets.
    """
    text = text.strip()
    if text in PRICE_PRESETS:
        return PRICE_PRESETS[text]
    presets = ", ".join(PRICE_PRESETS)
    usage = (f"use a preset ({presets}) or in=USD,cached=USD[,write=USD][,out=USD]"
             f"[,min=TOKENS] (USD per million tokens; min: the model's smallest cached "
             f"prefix)")
    if "=" not in text:
        raise ValueError(f"unknown price preset {text!r}; {usage}")
    values: dict[str, float] = {}
    for item in (p.strip() for p in text.split(",")):
        key, eq, raw = item.partition("=")
        field = _KEYS.get(key.strip().lower())
        if not eq or field is None:
            raise ValueError(f"malformed price {text!r}: {item!r} is not in=, cached=, "
                             f"write=, out= or min=; {usage}")
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
        if field == "min_cached" and (value != int(value) or value < 1):
            raise ValueError(f"malformed price {text!r}: min= is a number of tokens, a "
                             f"whole number of at least 1 (e.g. min=2048)")
        values[field] = value
    missing = [k for k in ("input", "cached") if k not in values]
    if missing:
        name = "in" if missing[0] == "input" else missing[0]
        raise ValueError(f"malformed price {text!r}: {name}= is missing; {usage}")
    if values["input"] <= 0:
        raise ValueError(f"price {text!r}: in= must be more than 0 (every cost and cost "
                         f"ratio is made of it: at 0, each strategy costs nothing)")
    if values["cached"] > values["input"]:
        raise ValueError(f"price {text!r}: cached= ({values['cached']:g}) is more than in= "
                         f"({values['input']:g}); a cached read is billed at a fraction of "
                         f"the input price (e.g. in=2,cached=0.5)")
    least = values.get("min_cached")
    return Price(values["input"], values["cached"], values.get("write"),
                 output=values.get("output"), min_cached=None if least is None else int(least))


def get_price(price: str | Price | None, cache: str = "openai") -> Price:
    """``price`` as a :class:`Price` (``None``: the default for ``cache``)."""
    if isinstance(price, Price):
        return price
    return parse_price(price if price is not None else default_price(cache))


def default_price(cache: str) -> str:
    """The preset used when no price is given: ``anthropic-sonnet-4`` for the
    Anthropic cache model, else ``openai-gpt-4.1``."""
    return "anthropic-sonnet-4" if cache == "anthropic" else "openai-gpt-4.1"


@dataclass(frozen=True)
class CacheRules:
    """How a provider's prompt cache works, as a strategy needs to know it.

    ``name``: ``"openai"`` (automatic prefix cache), ``"anthropic"`` (explicit
    ``cache_control`` breakpoints, writes billed at the write price) or ``"none"``;
    ``min_tokens``: the smallest prefix that is cached; ``step``: cached lengths are
    rounded down to a multiple of it; ``breakpoints``: how many explicit breakpoints a
    prompt may carry (0: the cache is automatic, or there is none).
    """

    name: str
    min_tokens: int = 1024
    step: int = 1
    breakpoints: int = 0

    @property
    def cached(self) -> bool:
        """Whether prompts are cached at all."""
        return self.name != "none"

    def __str__(self) -> str:
        return self.name


#: the cache models ``compare --cache`` and ``compress(cache=)`` accept
CACHE_RULES: dict[str, CacheRules] = {
    "openai": CacheRules("openai", min_tokens=1024, step=128),
    "anthropic": CacheRules("anthropic", min_tokens=1024, breakpoints=4),
    "none": CacheRules("none", min_tokens=0),
}

#: the cache model when nothing says (``compare``'s default too); its price is
#: :func:`default_price` of it (``openai-gpt-4.1``)
DEFAULT_CACHE = "openai"


def get_cache_rules(cache: str | CacheRules | None) -> CacheRules:
    """``cache`` as :class:`CacheRules` (``None``: :data:`DEFAULT_CACHE`); an unknown name
    raises ``ValueError`` listing the valid ones."""
    if isinstance(cache, CacheRules):
        return cache
    name = DEFAULT_CACHE if cache is None else cache
    try:
        return CACHE_RULES[name]
    except (KeyError, TypeError):
        valid = ", ".join(CACHE_RULES)
        raise ValueError(f"unknown cache model {cache!r}; valid: {valid}") from None


def rules_for(cache: str | CacheRules | None, price: Price) -> CacheRules:
    """The cache rules of ``cache`` for the model ``price`` is for: its smallest cached
    prefix is the price's ``min_cached`` when that is set (Haiku 3.5: 2048 tokens)."""
    rules = get_cache_rules(cache)
    if price.min_cached is None or not rules.cached:
        return rules
    return replace(rules, min_tokens=price.min_cached)


def resolve_pricing(cache: str | CacheRules | None = None,
                    price: str | Price | None = None) -> tuple[CacheRules, Price]:
    """The cache rules and the price a render uses: ``cache`` (None: ``openai``) and
    ``price`` (a preset name, ``in=..,cached=..[,write=..]``, a :class:`Price`, or None:
    the default for the cache, ``openai-gpt-4.1`` or ``anthropic-sonnet-4``). A bad
    value raises ``ValueError`` saying what was wrong and what is accepted."""
    rules = get_cache_rules(cache)
    if price is not None and not isinstance(price, (str, Price)):
        raise ValueError(f"price must be a preset name, 'in=..,cached=..[,write=..]' or a "
                         f"Price, got {type(price).__name__} {price!r:.60}")
    chosen = get_price(price, rules.name)
    return (rules if isinstance(cache, CacheRules) else rules_for(rules, chosen)), chosen
