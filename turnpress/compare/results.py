"""The results of a comparison, added up: per prompt, per trace, per strategy.

:class:`ComparisonResult` is what :func:`~turnpress.compare.compare_traces` returns and
what ``--json``, the table and the HTML report show. A worker hands back one
:class:`TraceOutcome` per trace (a :data:`Row` of numbers per prompt and strategy);
:func:`add_outcome` adds it to the result, in trace order. Per-prompt numbers are
packed in arrays, so memory stays flat however many traces there are.
"""

from __future__ import annotations

import json
from array import array
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from turnpress.compare.pricing import Price, cost_usd
from turnpress.compare.retention import Fact
from turnpress.core.model import Message
from turnpress.core.trace import Trace

__all__ = [
    "DEFAULT_MIN_RECALL",
    "MAX_DROPPED_EXAMPLES",
    "AsRun",
    "ComparisonResult",
    "DroppedFact",
    "Row",
    "StrategyResult",
    "TraceInfo",
    "TraceOutcome",
    "TracePrompts",
    "TurnStats",
    "add_outcome",
    "billed_usage",
]

MAX_DROPPED_EXAMPLES = 50

DEFAULT_MIN_RECALL = 0.9
"""The needed-fact recall a strategy needs to be recommended (``--min-recall``)."""


@dataclass(frozen=True)
class AsRun:
    """What the provider billed for a run, summed over the turns that carry ``Turn.usage``
    (DESIGN §10): ``prompts`` such turns, their prompt, cached and cache-write tokens
    (in the provider's own tokenizer) and the cost at the comparison's price."""

    prompts: int
    prompt_tokens: int
    cached_tokens: int
    cache_write_tokens: int
    cost_usd: float
    #: ``full-history``'s modelled cost on the same prompts (those with usage): what the
    #: as-run cost is compared with
    baseline_cost_usd: float = 0.0

    @property
    def cost_ratio(self) -> float | None:
        """The billed cost as a multiple of ``full-history``'s on the same prompts."""
        return self.cost_usd / self.baseline_cost_usd if self.baseline_cost_usd else None

    @property
    def cached_share(self) -> float:
        """The billed share of prompt tokens read from the cache."""
        return self.cached_tokens / self.prompt_tokens if self.prompt_tokens else 0.0

    def __add__(self, other: AsRun) -> AsRun:
        return AsRun(self.prompts + other.prompts, self.prompt_tokens + other.prompt_tokens,
                     self.cached_tokens + other.cached_tokens,
                     self.cache_write_tokens + other.cache_write_tokens,
                     self.cost_usd + other.cost_usd,
                     self.baseline_cost_usd + other.baseline_cost_usd)

    def to_json(self) -> dict[str, Any]:
        """``{"prompts", "prompt_tokens", "cached_tokens", "cost_usd"}``."""
        return {"prompts": self.prompts, "prompt_tokens": self.prompt_tokens,
                "cached_tokens": self.cached_tokens, "cost_usd": round(self.cost_usd, 8)}


@dataclass(frozen=True)
class TraceInfo:
    """A compared trace: its name, number of turns (= prompts), the ``full-history``
    baseline's tokens and cost on it, its billed usage (``as_run``, None when no turn
    carries usage) and, per turn, the billed prompt and cached tokens (None where a
    turn has no usage)."""

    name: str
    turns: int
    baseline_tokens: int = 0
    baseline_cost_usd: float = 0.0
    as_run: AsRun | None = None
    billed: tuple[tuple[int, int] | None, ...] = field(default=(), repr=False)

    def to_json(self) -> dict[str, Any]:
        """This trace's entry of the ``--json`` document."""
        return {"name": self.name, "turns": self.turns,
                "as_run": self.as_run.to_json() if self.as_run else None}


class TurnStats(NamedTuple):
    """The numbers of one prompt under one strategy."""

    trace: str
    turn: int
    input_tokens: int
    cached_tokens: int
    written_tokens: int
    retention: float
    needed: int = 0
    needed_shown: int = 0


@dataclass(frozen=True)
class DroppedFact:
    """A fact of the history that a strategy's prompt for ``turn`` of ``trace`` lacked."""

    trace: str
    turn: int
    fact: Fact


@dataclass
class TracePrompts:
    """The rendered prompts of one trace, kept for the HTML report:
    ``prompts[turn - 1][strategy_index]`` is a list of messages."""

    trace: str
    prompts: list[list[list[Message]]]
    tokens: list[list[int]]


@dataclass
class StrategyResult:
    """The totals of one strategy over all prompts, plus its per-prompt numbers."""

    name: str
    label: str
    options: dict[str, Any]
    input_tokens: int = 0
    cached_tokens: int = 0
    written_tokens: int = 0
    cost_usd: float = 0.0
    baseline_tokens: int = 0
    prompts: int = 0
    retention_sum: float = 0.0
    needed: int = 0
    needed_shown: int = 0
    baseline_cost_usd: float = 0.0
    dropped: Counter[str] = field(default_factory=Counter)
    dropped_facts: int = 0
    dropped_examples: list[DroppedFact] = field(default_factory=list)
    #: ``("n/a" | "failed", one-line reason)`` when the strategy was not compared
    status: tuple[str, str] | None = None
    _trace: array = field(default_factory=lambda: array("I"), repr=False)
    _turn: array = field(default_factory=lambda: array("I"), repr=False)
    _input: array = field(default_factory=lambda: array("q"), repr=False)
    _cached: array = field(default_factory=lambda: array("q"), repr=False)
    _written: array = field(default_factory=lambda: array("q"), repr=False)
    _retention: array = field(default_factory=lambda: array("d"), repr=False)
    _needed: array = field(default_factory=lambda: array("I"), repr=False)
    _needed_shown: array = field(default_factory=lambda: array("I"), repr=False)
    _names: list[str] = field(default_factory=list, repr=False)

    @property
    def compared(self) -> bool:
        """Whether the strategy ran on every trace (not ``n/a``, not failed)."""
        return self.status is None

    @property
    def retention(self) -> float:
        """Mean retention over all prompts (1.0 when there is none)."""
        return self.retention_sum / self.prompts if self.prompts else 1.0

    @property
    def needed_fact_recall(self) -> float:
        """Needed facts shown / needed facts, pooled over every prompt (1.0 when none)."""
        return self.needed_shown / self.needed if self.needed else 1.0

    @property
    def cost_ratio(self) -> float:
        """This strategy's cost as a multiple of ``full-history``'s on the same prompts."""
        return self.cost_usd / self.baseline_cost_usd if self.baseline_cost_usd else 1.0

    @property
    def savings_vs_full_history(self) -> float:
        """The fraction of input tokens saved against ``full-history`` on the same prompts."""
        if not self.baseline_tokens:
            return 0.0
        return 1.0 - self.input_tokens / self.baseline_tokens

    @property
    def cached_share(self) -> float:
        """The fraction of input tokens read from the prompt cache."""
        return self.cached_tokens / self.input_tokens if self.input_tokens else 0.0

    def per_turn(self) -> Iterator[TurnStats]:
        """The numbers of every prompt, trace by trace, turn by turn."""
        for i in range(len(self._turn)):
            yield TurnStats(self._names[self._trace[i]], self._turn[i], self._input[i],
                            self._cached[i], self._written[i], self._retention[i],
                            self._needed[i], self._needed_shown[i])

    def rows(self) -> Iterator[tuple[int, int, int, int, int, float]]:
        """Like :meth:`per_turn`, with the trace's index in ``ComparisonResult.traces``:
        ``(trace_index, turn, input_tokens, cached_tokens, written_tokens, retention)``."""
        for i in range(len(self._turn)):
            yield (self._trace[i], self._turn[i], self._input[i], self._cached[i],
                   self._written[i], self._retention[i])

    def trace_costs(self, price: Price) -> list[float]:
        """The cost of this strategy's prompts on each trace, by trace index (the traces
        it ran on; see ``ComparisonResult.traces``)."""
        costs = [0.0] * (max(self._trace) + 1 if len(self._trace) else 0)
        for i in range(len(self._turn)):
            costs[self._trace[i]] += cost_usd(price, self._input[i], self._cached[i],
                                              self._written[i])
        return costs

    def to_json(self) -> dict[str, Any]:
        """This strategy's entry of the ``--json`` document."""
        return {
            "name": self.name,
            "options": _jsonable(self.options),
            "input_tokens": self.input_tokens,
            "cached_tokens": self.cached_tokens,
            "written_tokens": self.written_tokens,
            "savings_vs_full_history": round(self.savings_vs_full_history, 6),
            "cost_usd": round(self.cost_usd, 8),
            "cost_ratio": round(self.cost_ratio, 6),
            "retention": round(self.retention, 6),
            # null: no prompt had a needed fact, so recall measured nothing
            "needed_fact_recall": round(self.needed_fact_recall, 6) if self.needed else None,
            "needed_facts": self.needed,
            "dropped_facts": self.dropped_facts,
            "dropped": dict(self.dropped.most_common()),
            "dropped_examples": [{"trace": d.trace, "turn": d.turn, "fact": str(d.fact)}
                                 for d in self.dropped_examples],
            "per_turn": [
                {"trace": t.trace, "turn": t.turn, "input_tokens": t.input_tokens,
                 "cached_tokens": t.cached_tokens, "retention": round(t.retention, 6),
                 "needed": t.needed, "needed_shown": t.needed_shown}
                for t in self.per_turn()
            ],
        }


def _jsonable(value: Any) -> Any:
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    return repr(value)


@dataclass
class ComparisonResult:
    """What :func:`compare_traces` found: settings, traces and one result per strategy."""

    tokenizer: str
    cache: str
    price: Price
    traces: list[TraceInfo] = field(default_factory=list)
    strategies: list[StrategyResult] = field(default_factory=list)
    baseline_tokens: int = 0
    baseline_cost_usd: float = 0.0
    kept_prompts: list[TracePrompts] = field(default_factory=list)
    min_recall: float = DEFAULT_MIN_RECALL
    #: ``(label, "n/a" | "failed", reason)`` of strategies that could not even be created
    unresolved: list[tuple[str, str, str]] = field(default_factory=list)

    def strategy(self, label: str) -> StrategyResult:
        """The result of the strategy shown as ``label`` (its name, plus options if any)."""
        for s in self.strategies:
            if s.label == label:
                return s
        raise KeyError(f"no strategy {label!r} in this comparison; have: "
                       + ", ".join(s.label for s in self.strategies))

    @property
    def compared(self) -> list[StrategyResult]:
        """The strategies that ran on every trace."""
        return [s for s in self.strategies if s.compared]

    @property
    def not_compared(self) -> list[tuple[str, str, str]]:
        """``(label, "n/a" | "failed", reason)`` of every strategy left out."""
        return [*self.unresolved,
                *((s.label, *s.status) for s in self.strategies if s.status is not None)]

    @property
    def as_run(self) -> AsRun | None:
        """Billed usage summed over the traces that carry it (None when none does)."""
        runs = [t.as_run for t in self.traces if t.as_run is not None]
        if not runs:
            return None
        total = runs[0]
        for r in runs[1:]:
            total = total + r
        return total

    @property
    def recommended(self) -> StrategyResult | None:
        """The cheapest compared strategy whose needed-fact recall is at least
        :attr:`min_recall` (ties: the first listed); None when no strategy has it, or
        when no prompt had a needed fact, so recall measured nothing."""
        if not any(s.needed for s in self.compared):
            return None
        ok = [s for s in self.compared if s.needed_fact_recall >= self.min_recall - 1e-12]
        return min(ok, key=lambda s: s.cost_usd) if ok else None

    @property
    def prompts(self) -> int:
        """The number of prompts compared per strategy (sum of the traces' turns)."""
        return sum(t.turns for t in self.traces)

    def to_json(self) -> dict[str, Any]:
        """The ``--json`` document (a JSON-ready dict)."""
        best = self.recommended
        as_run = self.as_run
        return {
            "tokenizer": self.tokenizer,
            "cache": self.cache,
            "price": self.price.to_json(),
            "min_recall": self.min_recall,
            "traces": [t.to_json() for t in self.traces],
            "strategies": [s.to_json() for s in self.compared],
            "as_run": as_run.to_json() if as_run else None,
            "recommended": None if best is None else {
                "name": best.name, "options": _jsonable(best.options),
                "cost_ratio": round(best.cost_ratio, 6),
                "needed_fact_recall": round(best.needed_fact_recall, 6)},
            "not_compared": [{"strategy": label, "status": status, "reason": reason}
                             for label, status, reason in self.not_compared],
        }

    def dumps(self, indent: int | None = 2) -> str:
        """:meth:`to_json` as JSON text."""
        return json.dumps(self.to_json(), indent=indent, ensure_ascii=False)


Row = tuple[int, int, int, int, float, int, int]
"""(turn, input, cached, written, retention, needed, needed shown) of one prompt."""


@dataclass
class TraceOutcome:
    """One trace's numbers: ``rows[s]`` holds a :data:`Row` per prompt of strategy s."""

    index: int
    info: TraceInfo
    rows: list[list[Row]]
    dropped: list[list[tuple[int, Fact]]]
    status: list[tuple[str, str] | None]
    prompts: TracePrompts | None = None


def billed_usage(trace: Trace, price: Price, baseline_cost: float
                 ) -> tuple[AsRun | None, tuple[tuple[int, int] | None, ...]]:
    """The run's billed usage (None when no turn carries usage) and, per turn, the
    billed ``(prompt, cached)`` tokens (None where a turn has none)."""
    billed = tuple((t.usage.prompt_tokens, t.usage.cached_tokens) if t.usage else None
                   for t in trace.turns)
    used = [t.usage for t in trace.turns if t.usage is not None]
    if not used:
        return None, billed
    cost = sum(cost_usd(price, u.prompt_tokens, u.cached_tokens, u.cache_write_tokens)
               for u in used)
    return AsRun(len(used), sum(u.prompt_tokens for u in used),
                 sum(u.cached_tokens for u in used),
                 sum(u.cache_write_tokens for u in used), cost, baseline_cost), billed


def add_outcome(result: ComparisonResult, outcome: TraceOutcome, names: list[str],
                keep_prompts: int) -> None:
    """Add one trace's numbers to ``result`` (``names``: the trace names the strategy
    results share; ``keep_prompts``: how many traces' prompts the result keeps)."""
    trace_index = len(result.traces)
    info = outcome.info
    result.traces.append(info)
    names.append(info.name)
    result.baseline_tokens += info.baseline_tokens
    result.baseline_cost_usd += info.baseline_cost_usd
    for sr, rows, dropped, status in zip(result.strategies, outcome.rows, outcome.dropped,
                                         outcome.status, strict=True):
        if sr.status is not None:
            continue
        if status is not None:
            sr.status = status
            continue
        add_rows(sr, trace_index, rows, result.price)
        sr.baseline_tokens += info.baseline_tokens
        sr.baseline_cost_usd += info.baseline_cost_usd
        distinct = set()
        for turn, fact in dropped:
            sr.dropped[fact.kind] += 1
            if fact not in distinct:
                distinct.add(fact)
                if len(sr.dropped_examples) < MAX_DROPPED_EXAMPLES:
                    sr.dropped_examples.append(DroppedFact(info.name, turn, fact))
        sr.dropped_facts += len(distinct)
    if outcome.prompts is not None and len(result.kept_prompts) < keep_prompts:
        result.kept_prompts.append(outcome.prompts)


def add_rows(sr: StrategyResult, trace_index: int, rows: Sequence[Row], price: Price) -> None:
    """Add one trace's rows to ``sr``'s totals and per-prompt arrays."""
    for turn, total, cached, written, score, needed, shown in rows:
        sr.input_tokens += total
        sr.cached_tokens += cached
        sr.written_tokens += written
        sr.cost_usd += cost_usd(price, total, cached, written)
        sr.prompts += 1
        sr.retention_sum += score
        sr.needed += needed
        sr.needed_shown += shown
        sr._trace.append(trace_index)
        sr._turn.append(turn)
        sr._input.append(total)
        sr._cached.append(cached)
        sr._written.append(written)
        sr._retention.append(score)
        sr._needed.append(needed)
        sr._needed_shown.append(shown)
