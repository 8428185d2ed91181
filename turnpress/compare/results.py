"""The results of a comparison, added up: per prompt, per trace, per strategy.

:class:`ComparisonResult` is what :func:`~turnpress.compare.compare_traces` returns and
what ``--json``, the table and the HTML report show. A worker hands back one
:class:`TraceOutcome` per trace (a :data:`Row` of numbers per prompt and strategy);
:func:`add_outcome` adds it to the result, in trace order. Per-prompt numbers are
packed in arrays, so memory stays flat however many traces there are.
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
import secrets
from array import array
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from json.encoder import encode_basestring as _encode_string
from typing import IO, Any, NamedTuple

from turnpress.compare.intervals import (
    CONFIDENCE,
    MIN_RUNS,
    REPLICATES,
    Interval,
    RatioOfSums,
    bootstrap_intervals,
    interval_fields,
    runs_to_settle,
)
from turnpress.compare.pricing import Price, cost_usd, output_cost_usd
from turnpress.compare.retention import Fact
from turnpress.compare.spill import RecordStore
from turnpress.core.errors import quote
from turnpress.core.model import Message
from turnpress.core.trace import Trace

__all__ = [
    "DEFAULT_MIN_RECALL",
    "MAX_DROPPED_EXAMPLES",
    "AsRun",
    "CallRow",
    "ComparisonResult",
    "DroppedFact",
    "Repeated",
    "Row",
    "SampleInfo",
    "Skipped",
    "StrategyResult",
    "TraceInfo",
    "TraceOutcome",
    "TracePrompts",
    "TurnStats",
    "add_calls",
    "add_outcome",
    "billed_usage",
]

#: the figures that get an interval, by their ``--json`` names
CI_FIGURES = ("cost_ratio", "needed_fact_recall", "savings_vs_full_history")

MAX_DROPPED_EXAMPLES = 50

_ROW = "<IIqqqdqq"
"""A kept per-prompt row: trace index, turn, input, cached and written tokens,
retention, needed facts, needed facts shown."""
_CALL = "<IIqq"
"""A strategy's own model call: trace index, turn, input tokens, output tokens."""
_BILLED = "<IIqq"
"""A turn's billed usage: trace index, turn index (from 0), prompt and cached tokens."""

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
    #: runs whose log holds no system prompt (Claude Code does not write it): what was
    #: billed for them includes one, and tool definitions, that the replayed prompts lack
    runs_without_system: int = 0

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
                     self.baseline_cost_usd + other.baseline_cost_usd,
                     self.runs_without_system + other.runs_without_system)

    def to_json(self) -> dict[str, Any]:
        """``{"prompts", "prompt_tokens", "cached_tokens", "cache_write_tokens",
        "cost_usd"}``, and ``"runs_without_system"`` when some runs' logs hold no system
        prompt."""
        out: dict[str, Any] = {"prompts": self.prompts, "prompt_tokens": self.prompt_tokens,
                               "cached_tokens": self.cached_tokens,
                               "cache_write_tokens": self.cache_write_tokens,
                               "cost_usd": round(self.cost_usd, 8)}
        if self.runs_without_system:
            out["runs_without_system"] = self.runs_without_system
        return out


@dataclass(frozen=True)
class TraceInfo:
    """A compared trace: its name, number of turns (= prompts), the ``full-history``
    baseline's tokens and cost on it, its billed usage (``as_run``, None when no turn
    carries usage) and, per turn, the billed prompt and cached tokens (None where a
    turn has no usage; a trace's outcome carries them, ``ComparisonResult.traces``
    do not: :meth:`ComparisonResult.billed` has them)."""

    name: str
    turns: int
    baseline_tokens: int = 0
    baseline_cost_usd: float = 0.0
    as_run: AsRun | None = None
    billed: tuple[tuple[int, int] | None, ...] = field(default=(), repr=False)
    #: the floor: what the run would cost if each new message were sent once and
    #: nothing were re-read, the system prompt read from the cache (DESIGN §11)
    floor_usd: float = 0.0
    #: where the run was read: its file (None for a :class:`Trace` object) and, in a
    #: JSONL file of one run a line, its line (None otherwise)
    file: str | None = None
    line: int | None = None
    #: what makes two runs the same run (:func:`turnpress.core.trace.run_digest`;
    #: "" when unknown): ``compare`` counts a run found twice once
    digest: str = field(default="", repr=False)

    @property
    def where(self) -> str:
        """``FILE``, ``FILE: line N``, or the run's name for a trace object."""
        if self.file is None:
            return f"trace {self.name or '(unnamed)'}"
        return self.file if self.line is None else f"{self.file}: line {self.line}"

    def to_json(self) -> dict[str, Any]:
        """This trace's entry of the ``--json`` document: its name, and where it was
        read (``file``; ``line`` in a JSONL file of one run a line; both None for a
        trace object), as ``--per-trace`` has them: runs of the same name (two
        ``run.json`` in two folders) are told apart by them."""
        return {"name": self.name, "file": self.file, "line": self.line, "turns": self.turns,
                "as_run": self.as_run.to_json() if self.as_run else None,
                "floor": round(self.floor_usd, 8)}


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


@dataclass(frozen=True)
class Skipped:
    """A run that was not compared: its ``file`` (and line, in ``reason``) and why (it
    cannot be read, or has no turn); or, in :attr:`ComparisonResult.not_runs`, a file
    found in a directory or by a pattern that is no run, and why."""

    file: str
    reason: str

    def to_json(self) -> dict[str, str]:
        """``{"file", "reason"}``, an entry of the ``--json`` document's ``"skipped"``."""
        return {"file": self.file, "reason": self.reason}

    def __str__(self) -> str:
        return f"{self.file}: {self.reason}"


@dataclass(frozen=True)
class Repeated:
    """A run found again (the same run, :attr:`TraceInfo.digest`, at another place):
    counted once, where it came first (``first``), and left out here (``at``)."""

    name: str
    at: TraceInfo
    first: TraceInfo

    def to_json(self) -> dict[str, Any]:
        """An entry of the ``--json`` document's ``"repeated"``."""
        return {"name": self.name, "file": self.at.file, "line": self.at.line,
                "same_as": {"name": self.first.name, "file": self.first.file,
                            "line": self.first.line}}

    def __str__(self) -> str:
        return (f"run {quote(self.name)} at {self.at.where} is "
                f"the same run as at {self.first.where}: counted once, there")


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
    #: the floor of the traces this strategy ran on (see :attr:`TraceInfo.floor_usd`)
    floor_usd: float = 0.0
    dropped: Counter[str] = field(default_factory=Counter)
    dropped_facts: int = 0
    dropped_examples: list[DroppedFact] = field(default_factory=list)
    #: ``("n/a" | "failed", one-line reason)`` when the strategy was not compared
    status: tuple[str, str] | None = None
    #: model calls the strategy itself made (summarization calls), billed as their own
    #: rows: input at the input price, output at the output price (in ``cost_usd``)
    summary_calls: int = 0
    summary_input_tokens: int = 0
    summary_output_tokens: int = 0
    summary_cost_usd: float = 0.0
    #: the per-prompt rows, in the order added (:data:`_ROW`), kept on disk past a bound
    _rows: RecordStore = field(default_factory=lambda: RecordStore(_ROW), repr=False)
    #: the strategy's own model calls (:data:`_CALL`), likewise
    _calls: RecordStore = field(default_factory=lambda: RecordStore(_CALL), repr=False)
    #: per trace index: the strategy's cost (at ``_price``), input tokens, needed facts
    #: and needed facts shown (what the intervals and the worst run's recall use)
    _run_cost: array = field(default_factory=lambda: array("d"), repr=False)
    _run_tokens: array = field(default_factory=lambda: array("d"), repr=False)
    _run_needed: array = field(default_factory=lambda: array("d"), repr=False)
    _run_shown: array = field(default_factory=lambda: array("d"), repr=False)
    _price: Price | None = field(default=None, repr=False)
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
    def floor_ratio(self) -> float:
        """This strategy's cost as a multiple of the floor (1.0 when the floor is 0)."""
        return self.cost_usd / self.floor_usd if self.floor_usd else 1.0

    @property
    def min_trace_recall(self) -> float:
        """The needed-fact recall of the worst single trace (traces with needed facts
        only; 1.0 when none has any)."""
        return min((k / n for n, k in zip(self._run_needed, self._run_shown, strict=True)
                    if n), default=1.0)

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
        """The numbers of every prompt, trace by trace, turn by turn (read back from
        where they are kept: past a bound, a temporary file)."""
        names = self._names
        for trace, turn, tokens, cached, written, score, needed, shown in self._rows:
            yield TurnStats(names[trace], turn, tokens, cached, written, score, needed, shown)

    def rows(self) -> Iterator[tuple[int, int, int, int, int, float]]:
        """Like :meth:`per_turn`, with the trace's index in ``ComparisonResult.traces``:
        ``(trace_index, turn, input_tokens, cached_tokens, written_tokens, retention)``."""
        for row in self._rows:
            yield row[:6]

    def trace_costs(self, price: Price) -> list[float]:
        """The cost of this strategy's prompts on each trace, by trace index (the traces
        it ran on; see ``ComparisonResult.traces``)."""
        return self.trace_totals(price, len(self._run_cost))[0]

    def calls(self) -> Iterator[tuple[str, int, int, int]]:
        """The strategy's own model calls (summarization calls), one row each:
        ``(trace, turn whose prompt they built, input tokens, output tokens)``."""
        for trace, turn, tokens_in, tokens_out in self._calls:
            yield self._names[trace], turn, tokens_in, tokens_out

    def trace_totals(self, price: Price, traces: int
                     ) -> tuple[list[float], list[float], list[float], list[float]]:
        """Per trace index (``traces`` of them): this strategy's cost, input tokens,
        needed facts and needed facts shown, summed over the trace's prompts (kept per
        trace as the rows come in; at another ``price`` than the comparison's, the
        costs are summed again from the rows)."""
        def padded(values: array) -> list[float]:
            out = values.tolist()[:traces]
            return out + [0.0] * (traces - len(out))

        if self._price is None or price == self._price:
            cost = padded(self._run_cost)
        else:
            cost = [0.0] * traces
            for t, _turn, tokens_in, cached, written, *_ in self._rows:
                cost[t] += cost_usd(price, tokens_in, cached, written)
            for t, _turn, tokens_in, tokens_out in self._calls:
                cost[t] += output_cost_usd(price, tokens_in, tokens_out)
        return (cost, padded(self._run_tokens), padded(self._run_needed),
                padded(self._run_shown))

    def to_json(self, ci: Mapping[str, Interval] | None = None) -> dict[str, Any]:
        """This strategy's entry of the ``--json`` document (``ci``: the 95% intervals
        of its figures, by :data:`CI_FIGURES` name, shown as ``"ci"``)."""
        return self._entry(ci, list(self._call_entries()), list(self._turn_entries()))

    def _entry(self, ci: Mapping[str, Interval] | None, calls: Any, turns: Any
               ) -> dict[str, Any]:
        """:meth:`to_json` with ``calls`` as ``summary_per_call`` and ``turns`` as
        ``per_turn``."""
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
            "min_trace_recall": round(self.min_trace_recall, 6),
            "floor_ratio": round(self.floor_ratio, 6),
            **({"ci": interval_fields(dict(ci))} if ci is not None else {}),
            "needed_facts": self.needed,
            "dropped_facts": self.dropped_facts,
            "dropped": dict(self.dropped.most_common()),
            "dropped_examples": [{"trace": d.trace, "turn": d.turn, "fact": str(d.fact)}
                                 for d in self.dropped_examples],
            "summary_calls": self.summary_calls,
            "summary_input_tokens": self.summary_input_tokens,
            "summary_output_tokens": self.summary_output_tokens,
            "summary_cost_usd": round(self.summary_cost_usd, 8),
            "summary_per_call": calls,
            "per_turn": turns,
        }

    def _call_entries(self) -> Iterator[dict[str, Any]]:
        """The ``summary_per_call`` entries of :meth:`to_json`, one at a time."""
        for trace, turn, tokens_in, tokens_out in self.calls():
            yield {"trace": trace, "turn": turn, "input_tokens": tokens_in,
                   "output_tokens": tokens_out}

    def _turn_entries(self) -> Iterator[dict[str, Any]]:
        """The ``per_turn`` entries of :meth:`to_json`, one at a time."""
        price = self._price
        for t in self.per_turn():
            cost = (cost_usd(price, t.input_tokens, t.cached_tokens, t.written_tokens)
                    if price is not None else 0.0)
            yield {"trace": t.trace, "turn": t.turn, "input_tokens": t.input_tokens,
                   "cached_tokens": t.cached_tokens, "written_tokens": t.written_tokens,
                   "cost_usd": round(cost, 8), "retention": round(t.retention, 6),
                   "needed": t.needed, "needed_shown": t.needed_shown}


def _jsonable(value: Any) -> Any:
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    return repr(value)


@dataclass(frozen=True)
class SampleInfo:
    """``compare --sample``: ``runs`` drawn of ``population``, stratified by run length,
    with ``seed``."""

    runs: int
    population: int
    seed: int

    @property
    def every_run(self) -> bool:
        """Whether the sample holds every run (``--sample`` asked for as many or more)."""
        return self.runs >= self.population

    def to_json(self) -> dict[str, Any]:
        """``{"runs", "of", "seed", "stratified_by"}``."""
        return {"runs": self.runs, "of": self.population, "seed": self.seed,
                "stratified_by": "turns"}


@dataclass(frozen=True)
class Candidate:
    """When no strategy is recommended: the one more runs could settle, its recall's
    interval and about how many runs in all would settle it (None: no number would)."""

    strategy: StrategyResult
    recall: Interval
    runs_to_settle: int | None


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
    #: the floor over all traces (see :attr:`TraceInfo.floor_usd`)
    floor_usd: float = 0.0
    kept_prompts: list[TracePrompts] = field(default_factory=list)
    min_recall: float = DEFAULT_MIN_RECALL
    #: ``(label, "n/a" | "failed", reason)`` of strategies that could not even be created
    unresolved: list[tuple[str, str, str]] = field(default_factory=list)
    #: the seed of the bootstrap (and of ``sample``'s draw)
    seed: int = 0
    #: set when a sample of the runs was compared (``compare --sample``)
    sample: SampleInfo | None = None
    _ci: tuple[Any, dict[str, dict[str, Interval]]] | None = field(default=None, repr=False,
                                                                    compare=False)
    #: ``(label, note)``: what a strategy says about how it ran (a summarizer that fell
    #: back to ``extractive`` for lack of a model), shown in the table's footer
    notes: list[tuple[str, str]] = field(default_factory=list)
    #: the runs left out because they cannot be read or have no turn (not ``strict``)
    skipped: list[Skipped] = field(default_factory=list)
    #: the files a directory or a glob pattern held that are not runs (another ending,
    #: JSON no reader recognises), not read, each with its reason (``compare`` names
    #: them on stderr; the ``--json`` document has no entry for them)
    not_runs: list[Skipped] = field(default_factory=list)
    #: the runs left out because the same run came earlier (counted once, the first)
    repeated: list[Repeated] = field(default_factory=list)
    #: the billed usage of each turn that has it (:data:`_BILLED`; see :meth:`billed`)
    _billed: RecordStore = field(default_factory=lambda: RecordStore(_BILLED), repr=False)

    def billed(self) -> Iterator[tuple[int, int, int, int]]:
        """The billed usage of every turn that carries it (``TraceInfo.billed`` of each
        trace as it came in; the traces of the result keep none, so that memory stays
        flat in the number of turns): ``(trace_index, turn_index, prompt_tokens,
        cached_tokens)``, trace by trace, turn by turn (``turn_index`` from 0)."""
        return iter(self._billed)

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

    def intervals(self) -> dict[str, dict[str, Interval]]:
        """The 95% bootstrap interval over runs (:mod:`turnpress.compare.intervals`) of
        each compared strategy's cost ratio, needed-fact recall and tokens saved:
        ``{label: {figure: Interval}}`` (figures named as in :data:`CI_FIGURES`)."""
        compared = self.compared
        key = (len(self.traces), self.seed, tuple(s.label for s in compared),
               tuple(s.prompts for s in compared))
        if self._ci is not None and self._ci[0] == key:
            return self._ci[1]
        n = len(self.traces)
        base_cost = [t.baseline_cost_usd for t in self.traces]
        base_tokens = [float(t.baseline_tokens) for t in self.traces]
        figures = []
        for s in compared:
            cost, tokens, needed, shown = s.trace_totals(self.price, n)
            figures += [RatioOfSums(cost, base_cost), RatioOfSums(shown, needed),
                        RatioOfSums(tokens, base_tokens)]
        found = bootstrap_intervals(figures, seed=self.seed)
        out = {}
        for i, s in enumerate(compared):
            cost_ratio, recall, kept = found[3 * i: 3 * i + 3]
            out[s.label] = dict(zip(CI_FIGURES, (cost_ratio, recall, kept.complement()),
                                    strict=True))
        self._ci = (key, out)
        return out

    @property
    def recommended(self) -> StrategyResult | None:
        """The cheapest compared strategy whose needed-fact recall is at least
        :attr:`min_recall` at the **lower bound** of its 95% interval over runs (ties:
        the first listed); None when no strategy has it, when no prompt had a needed
        fact, so recall measured nothing, or with fewer than :data:`MIN_RUNS` runs (no
        interval over runs: :attr:`candidate` names the one to check on more)."""
        if not any(s.needed for s in self.compared) or len(self.traces) < MIN_RUNS:
            return None
        ci = self.intervals()
        ok = [s for s in self.compared
              if ci[s.label]["needed_fact_recall"].low >= self.min_recall - 1e-12]
        return min(ok, key=lambda s: s.cost_usd) if ok else None

    @property
    def candidate(self) -> Candidate | None:
        """The strategy more runs could settle: of the compared strategies cheaper than
        :attr:`recommended` (all of them when nothing is), those whose recall interval
        straddles :attr:`min_recall`; the cheapest whose recall is at least the bar,
        else the cheapest. None when there is none, or when recall measured nothing.
        With fewer than :data:`MIN_RUNS` runs (no interval): the cheapest whose recall
        is at least the bar on them, more runs to settle it unknown."""
        if not any(s.needed for s in self.compared):
            return None
        ci = self.intervals()
        if len(self.traces) < MIN_RUNS:
            reach = [s for s in self.compared
                     if s.needed_fact_recall >= self.min_recall - 1e-12]
            if not reach:
                return None
            pick = min(reach, key=lambda s: s.cost_usd)
            return Candidate(pick, ci[pick.label]["needed_fact_recall"], None)
        best = self.recommended
        bar = self.min_recall - 1e-12
        open_ = [s for s in self.compared
                 if (best is None or s.cost_usd < best.cost_usd)
                 and ci[s.label]["needed_fact_recall"].low < bar
                 <= ci[s.label]["needed_fact_recall"].high]
        if not open_:
            return None
        pick = min(open_, key=lambda s: (s.needed_fact_recall < bar, s.cost_usd))
        recall = ci[pick.label]["needed_fact_recall"]
        return Candidate(pick, recall, runs_to_settle(len(self.traces),
                                                      pick.needed_fact_recall, recall,
                                                      self.min_recall))

    @property
    def prompts(self) -> int:
        """The number of prompts compared per strategy (sum of the traces' turns)."""
        return sum(t.turns for t in self.traces)

    def to_json(self) -> dict[str, Any]:
        """The ``--json`` document (a JSON-ready dict, with every prompt's numbers in it:
        :meth:`write_json` writes the same document without holding them)."""
        return self._document()

    def _document(self, lazy: dict[str, Callable[[], Iterator[dict[str, Any]]]]
                  | None = None, nonce: str = "") -> dict[str, Any]:
        """:meth:`to_json`; with ``lazy``, each strategy's ``per_turn`` and
        ``summary_per_call`` lists are left out: a placeholder string
        (``"\\x00{nonce}:{number}\\x00"``) stands in each place, mapped in ``lazy``
        to what makes the list's entries."""
        best = self.recommended
        as_run = self.as_run
        ci = self.intervals()
        candidate = self.candidate
        return {
            "tokenizer": self.tokenizer,
            "cache": self.cache,
            "price": self.price.to_json(),
            "min_recall": self.min_recall,
            "floor": round(self.floor_usd, 8),
            "traces": [t.to_json() for t in self.traces],
            "strategies": [s.to_json(ci[s.label]) if lazy is None
                           else _placeheld(s, ci[s.label], lazy, nonce)
                           for s in self.compared],
            "as_run": as_run.to_json() if as_run else None,
            "recommended": None if best is None else {
                "name": best.name, "options": _jsonable(best.options),
                "cost_ratio": round(best.cost_ratio, 6),
                "needed_fact_recall": round(best.needed_fact_recall, 6),
                "min_trace_recall": round(best.min_trace_recall, 6),
                "ci": interval_fields({k: ci[best.label][k]
                                       for k in ("cost_ratio", "needed_fact_recall")})},
            "not_compared": [{"strategy": label, "status": status, "reason": reason}
                             for label, status, reason in self.not_compared],
            "candidate": None if candidate is None else {
                "name": candidate.strategy.name,
                "options": _jsonable(candidate.strategy.options),
                "needed_fact_recall": round(candidate.strategy.needed_fact_recall, 6),
                "ci": {"needed_fact_recall": candidate.recall.to_json()},
                "runs_to_settle": candidate.runs_to_settle},
            "sample": None if self.sample is None else self.sample.to_json(),
            "intervals": {"confidence": CONFIDENCE, "method": "percentile bootstrap",
                          "unit": "run", "replicates": REPLICATES, "seed": self.seed},
            "notes": [{"strategy": label, "note": note} for label, note in self.notes],
            "skipped": [s.to_json() for s in self.skipped],
            "repeated": [r.to_json() for r in self.repeated],
        }

    def iter_json(self, indent: int = 2) -> Iterator[str]:
        """The text of :meth:`dumps` in pieces: the document without its per-prompt
        lists first, then each list streamed into its place from where the rows are
        kept, a batch of entries at a time (so neither the entries nor the whole text
        are ever held)."""
        if isinstance(indent, bool) or not isinstance(indent, int) or indent < 0:
            raise ValueError(f"indent must be a non-negative integer, got {indent!r}")
        lazy: dict[str, Callable[[], Iterator[dict[str, Any]]]] = {}
        nonce = secrets.token_hex(8)
        text = json.dumps(self._document(lazy, nonce), indent=indent, ensure_ascii=False)
        makers = list(lazy.values())
        unit = " " * indent
        start = 0
        # a control character is written \u0000 in JSON text; the nonce tells the
        # placeholders apart from any string of the document that looks the same
        placeholder = re.compile(re.escape(json.dumps(f"\x00{nonce}:")[:-1]) + r"(\d+)"
                                 + re.escape(json.dumps("\x00")[1:]))
        for found in placeholder.finditer(text):
            line = text[text.rfind("\n", 0, found.start()) + 1:found.start()]
            base = line[:len(line) - len(line.lstrip(" "))]
            yield text[start:found.start()]
            yield from _stream_list(makers[int(found.group(1))](), base, unit)
            start = found.end()
        yield text[start:]

    def write_json(self, out: IO[str], indent: int = 2) -> None:
        """Write :meth:`dumps` to the text stream ``out``, piece by piece
        (:meth:`iter_json`)."""
        for piece in self.iter_json(indent):
            out.write(piece)

    def dumps(self, indent: int | None = 2) -> str:
        """:meth:`to_json` as JSON text."""
        if indent is None:
            return json.dumps(self.to_json(), indent=indent, ensure_ascii=False)
        return "".join(self.iter_json(indent))


_BATCH = 2048  # per-prompt entries encoded into one piece of the --json text


def _placeheld(s: StrategyResult, ci: Mapping[str, Interval],
               lazy: dict[str, Callable[[], Iterator[dict[str, Any]]]],
               nonce: str) -> dict[str, Any]:
    """``s.to_json(ci)`` with placeholders for its per-prompt lists (see
    :meth:`ComparisonResult._document`)."""
    tokens = []
    for make in (s._call_entries, s._turn_entries):
        tokens.append(f"\x00{nonce}:{len(lazy)}\x00")
        lazy[tokens[-1]] = make
    return s._entry(ci, *tokens)


def _scalar(value: Any) -> str:
    """A scalar as ``json.dumps(value, ensure_ascii=False)`` writes it."""
    kind = type(value)
    if kind is int:
        return int.__repr__(value)
    if kind is float and math.isfinite(value):
        return float.__repr__(value)
    if kind is str:
        return _encode_string(value)
    return json.dumps(value, ensure_ascii=False)


def _stream_list(entries: Iterator[dict[str, Any]], base: str, unit: str) -> Iterator[str]:
    """A list of flat dicts as ``json.dumps(..., indent=len(unit))`` writes it where its
    key's line is indented by ``base``: ``[]``, or one entry a block, in batches."""
    pad, inner = base + unit, base + unit + unit
    keys: dict[str, str] = {}
    opened = False
    batch: list[str] = []
    for entry in entries:
        fields = []
        for key, value in entry.items():
            written = keys.get(key)
            if written is None:
                written = keys[key] = f"{inner}{_encode_string(key)}: "
            fields.append(written + _scalar(value))
        batch.append(f"{pad}{{\n" + ",\n".join(fields) + f"\n{pad}}}")
        if len(batch) >= _BATCH:
            yield (",\n" if opened else "[\n") + ",\n".join(batch)
            opened, batch = True, []
    if batch:
        yield (",\n" if opened else "[\n") + ",\n".join(batch)
        opened = True
    yield f"\n{base}]" if opened else "[]"


Row = tuple[int, int, int, int, float, int, int]
"""(turn, input, cached, written, retention, needed, needed shown) of one prompt."""

CallRow = tuple[int, int, int]
"""(turn, input tokens, output tokens) of one model call a strategy made itself (a
summarization call) to build the prompt of that turn."""


@dataclass
class TraceOutcome:
    """One trace's numbers: ``rows[s]`` holds a :data:`Row` per prompt of strategy s;
    ``dropped[s]`` each fact strategy s dropped, once: ``(turn, fact, prompts)``, the
    turn whose prompt first lacked it and how many prompts lacked it (a ``(turn,
    fact)`` pair counts as one prompt)."""

    index: int
    info: TraceInfo
    rows: list[list[Row]]
    dropped: list[list[tuple[int, Fact, int]]] | list[list[tuple[int, Fact]]]
    status: list[tuple[str, str] | None]
    prompts: TracePrompts | None = None
    #: ``calls[s]``: the :data:`CallRow` of each model call strategy s made itself
    calls: list[list[CallRow]] = field(default_factory=list)


def billed_usage(trace: Trace, price: Price, baseline_cost: float
                 ) -> tuple[AsRun | None, tuple[tuple[int, int] | None, ...]]:
    """The run's billed usage (None when no turn carries usage) and, per turn, the
    billed ``(prompt, cached)`` tokens (None where a turn has none). The cost includes
    the summarization calls a turn records (``Usage.summary_*``: a run made with
    ``summary-compaction``), input at the input price and output at the output price."""
    billed = tuple((t.usage.prompt_tokens, t.usage.cached_tokens) if t.usage else None
                   for t in trace.turns)
    used = [t.usage for t in trace.turns if t.usage is not None]
    if not used:
        return None, billed
    cost = sum(cost_usd(price, u.prompt_tokens, u.cached_tokens, u.cache_write_tokens)
               + output_cost_usd(price, u.summary_input_tokens, u.summary_output_tokens)
               for u in used)
    return AsRun(len(used), sum(u.prompt_tokens for u in used),
                 sum(u.cached_tokens for u in used),
                 sum(u.cache_write_tokens for u in used), cost, baseline_cost,
                 0 if trace.system_prompt.strip() else 1), billed


def add_outcome(result: ComparisonResult, outcome: TraceOutcome, names: list[str],
                keep_prompts: int) -> None:
    """Add one trace's numbers to ``result`` (``names``: the trace names the strategy
    results share; ``keep_prompts``: how many traces' prompts the result keeps).
    ``outcome.info`` becomes the trace's entry of ``result.traces``, its per-turn
    ``billed`` usage moved to the result's :meth:`~ComparisonResult.billed` store."""
    trace_index = len(result.traces)
    info = outcome.info
    if info.billed:  # per turn: kept in the result's store, not on each trace
        for turn, usage in enumerate(info.billed):
            if usage is not None:
                result._billed.append(trace_index, turn, usage[0], usage[1])
        info = outcome.info = dataclasses.replace(info, billed=())
    result.traces.append(info)
    names.append(info.name)
    result.baseline_tokens += info.baseline_tokens
    result.baseline_cost_usd += info.baseline_cost_usd
    result.floor_usd += info.floor_usd
    for index, (sr, rows, dropped, status) in enumerate(zip(
            result.strategies, outcome.rows, outcome.dropped, outcome.status, strict=True)):
        if sr.status is not None:
            continue
        if status is not None:
            sr.status = status
            continue
        add_rows(sr, trace_index, rows, result.price)
        add_calls(sr, trace_index, outcome.calls[index] if outcome.calls else (),
                  result.price)
        sr.baseline_tokens += info.baseline_tokens
        sr.baseline_cost_usd += info.baseline_cost_usd
        sr.floor_usd += info.floor_usd
        distinct = set()
        for turn, fact, *times in dropped:
            sr.dropped[fact.kind] += times[0] if times else 1
            if fact not in distinct:
                distinct.add(fact)
                if len(sr.dropped_examples) < MAX_DROPPED_EXAMPLES:
                    sr.dropped_examples.append(DroppedFact(info.name, turn, fact))
        sr.dropped_facts += len(distinct)
    if outcome.prompts is not None and len(result.kept_prompts) < keep_prompts:
        result.kept_prompts.append(outcome.prompts)


def _run_slot(sr: StrategyResult, trace_index: int, price: Price) -> None:
    """Make room for ``trace_index`` in ``sr``'s per-trace sums (at ``price``)."""
    if sr._price is None:
        sr._price = price
    for values in (sr._run_cost, sr._run_tokens, sr._run_needed, sr._run_shown):
        while len(values) <= trace_index:
            values.append(0.0)


def add_rows(sr: StrategyResult, trace_index: int, rows: Sequence[Row], price: Price) -> None:
    """Add one trace's rows to ``sr``'s totals, its per-trace sums and its kept rows."""
    _run_slot(sr, trace_index, price)
    cost, tokens = sr._run_cost[trace_index], sr._run_tokens[trace_index]
    needs, shows = sr._run_needed[trace_index], sr._run_shown[trace_index]
    append = sr._rows.append
    for turn, total, cached, written, score, needed, shown in rows:
        prompt_cost = cost_usd(price, total, cached, written)
        sr.input_tokens += total
        sr.cached_tokens += cached
        sr.written_tokens += written
        sr.cost_usd += prompt_cost
        sr.prompts += 1
        sr.retention_sum += score
        sr.needed += needed
        sr.needed_shown += shown
        cost += prompt_cost
        tokens += total
        needs += needed
        shows += shown
        append(trace_index, turn, total, cached, written, score, needed, shown)
    sr._run_cost[trace_index], sr._run_tokens[trace_index] = cost, tokens
    sr._run_needed[trace_index], sr._run_shown[trace_index] = needs, shows


def add_calls(sr: StrategyResult, trace_index: int, calls: Sequence[CallRow],
              price: Price) -> None:
    """Add one trace's model calls of a strategy (summarization calls) to ``sr``: each is
    billed as its own row, input at the input price and output at the output price."""
    if not calls:
        return
    _run_slot(sr, trace_index, price)
    for turn, tokens_in, tokens_out in calls:
        cost = output_cost_usd(price, tokens_in, tokens_out)
        sr.summary_calls += 1
        sr.summary_input_tokens += tokens_in
        sr.summary_output_tokens += tokens_out
        sr.summary_cost_usd += cost
        sr.cost_usd += cost
        sr._run_cost[trace_index] += cost
        sr._calls.append(trace_index, turn, tokens_in, tokens_out)
