"""95% bootstrap intervals over runs for the figures a comparison recommends on.

Every figure ``compare`` recommends on is a ratio of sums over runs: cost ratio
(strategy's cost / ``full-history``'s), needed-fact recall (needed facts shown /
needed facts) and tokens saved (1 - strategy's tokens / ``full-history``'s). Its
interval comes from the percentile bootstrap with the **run** as the resampling
unit (prompts of one run are not independent): ``replicates`` times, draw as many
runs as were compared, with replacement, and recompute each ratio from the per-run
sums. No prompt is rendered again. All figures of one replicate use the same
draw, and the draws come from a seeded generator, so the intervals are the same on
every run of the same comparison (whatever ``--jobs``).
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import dataclass
from operator import mul
from typing import Any

__all__ = ["CONFIDENCE", "MIN_RUNS", "REPLICATES", "Interval", "RatioOfSums", "bootstrap_intervals",
           "interval_fields", "runs_to_settle"]

CONFIDENCE = 0.95
"""The coverage of every interval ``compare`` reports."""

REPLICATES = 2000
"""Bootstrap replicates per comparison (2.5% tails of 50 replicates each)."""

MIN_RUNS = 2
"""The fewest runs an interval over runs says anything from (one run has nothing to
resample: its interval is the figure itself, and a recommendation waits for more)."""


@dataclass(frozen=True)
class Interval:
    """A confidence interval ``[low, high]`` of one figure."""

    low: float
    high: float

    def to_json(self) -> dict[str, float]:
        """``{"low", "high"}``, rounded like the figures of ``--json`` (6 decimals)."""
        return {"low": round(self.low, 6), "high": round(self.high, 6)}

    def wider_than(self, decimals: int) -> bool:
        """Whether the interval shows at all when printed with ``decimals`` decimals."""
        return f"{self.low:.{decimals}f}" != f"{self.high:.{decimals}f}"

    def complement(self) -> Interval:
        """The interval of ``1 - x`` (a percentile interval maps through a monotone map)."""
        return Interval(1.0 - self.high, 1.0 - self.low)


@dataclass(frozen=True)
class RatioOfSums:
    """A figure ``sum(numerators) / sum(denominators)`` over runs (``empty`` when the
    denominators sum to zero): one value of each per run, in run order."""

    numerators: Sequence[float]
    denominators: Sequence[float]
    empty: float = 1.0

    def value(self, weights: Sequence[int] | None = None) -> float:
        """The figure, with each run counted ``weights[i]`` times (once by default)."""
        if weights is None:
            num, den = math.fsum(self.numerators), math.fsum(self.denominators)
        else:
            num = sum(map(mul, weights, self.numerators))
            den = sum(map(mul, weights, self.denominators))
        return num / den if den else self.empty


def bootstrap_intervals(figures: Sequence[RatioOfSums], *, seed: int = 0,
                        replicates: int = REPLICATES,
                        confidence: float = CONFIDENCE) -> list[Interval]:
    """The percentile bootstrap interval of each figure, resampling runs.

    Every figure must have one value per run (the same runs, in the same order). With no
    run, or one, each interval is the figure itself (nothing to resample)."""
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be between 0 and 1, got {confidence!r}")
    if replicates < 1:
        raise ValueError(f"replicates must be at least 1, got {replicates!r}")
    runs = len(figures[0].numerators) if figures else 0
    for figure in figures:
        if len(figure.numerators) != runs or len(figure.denominators) != runs:
            raise ValueError("every figure needs one numerator and one denominator per run")
    if runs <= 1:
        return [Interval(f.value(), f.value()) for f in figures]
    # each distinct vector (full-history's cost is every figure's denominator...) is
    # summed once per replicate
    vectors: list[Sequence[float]] = []
    where: dict[tuple[float, ...], int] = {}

    def slot(vector: Sequence[float]) -> int:
        key = tuple(vector)
        if key not in where:
            where[key] = len(vectors)
            vectors.append(vector)
        return where[key]

    pairs = [(slot(f.numerators), slot(f.denominators), f.empty) for f in figures]
    rng = random.Random(seed)
    samples: list[list[float]] = [[] for _ in figures]
    population = range(runs)
    for _ in range(replicates):
        weights = [0] * runs
        for i in rng.choices(population, k=runs):
            weights[i] += 1
        sums = [sum(map(mul, weights, v)) for v in vectors]
        for values, (num, den, empty) in zip(samples, pairs, strict=True):
            values.append(sums[num] / sums[den] if sums[den] else empty)
    tail = (1.0 - confidence) / 2
    lo = max(0, math.floor(tail * replicates))
    hi = min(replicates - 1, math.ceil((1.0 - tail) * replicates) - 1)
    out = []
    for values in samples:
        values.sort()
        out.append(Interval(values[lo], values[hi]))
    return out


def runs_to_settle(runs: int, value: float, interval: Interval, bar: float) -> int | None:
    """About how many runs in all would put ``interval`` wholly on one side of ``bar``,
    if the figure stays at ``value`` (an interval narrows as 1/sqrt(runs)); None when
    no number of runs would (the value is on the bar, or the interval has no width)."""
    if value >= bar:
        gap, half = value - bar, value - interval.low
    else:
        gap, half = bar - value, interval.high - value
    if gap <= 1e-12 or half <= 0 or runs <= 0:
        return None
    return max(runs + 1, math.ceil(runs * (half / gap) ** 2))


def interval_fields(intervals: dict[str, Interval]) -> dict[str, Any]:
    """``{figure: {"low", "high"}}`` for ``--json``."""
    return {name: interval.to_json() for name, interval in intervals.items()}
