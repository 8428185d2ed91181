"""The comparison engine: every prompt of every trace under every strategy.

For each trace (a run of *K* turns) and each turn *n* in 1..K, the engine
renders the prompt that was sent for turn *n* under each strategy and records
its tokens (exact, through a :class:`~turnpress.core.tokens.TokenCounter`), its
prompt-cache usage under the chosen provider model, its cost and its retention
(against the ``full-history`` prompt of that turn, which is always rendered: it
is the baseline of the savings and the reference of retention).

Traces are streamed: a JSONL file is read line by line and each trace is
dropped once its numbers are in, so memory stays flat however many traces
there are (only per-prompt numbers are kept, packed in arrays). With
``jobs > 1`` traces are spread over a process pool, with a bounded number in
flight.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import sys
import threading
from array import array
from collections import Counter, deque
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from turnpress.compare.cache import new_cache_model
from turnpress.compare.failures import (
    describe_failure,
    is_template_problem,
    strategy_origin,
    tokenizer_origin,
)
from turnpress.compare.pricing import Price, cost_usd, get_price
from turnpress.compare.retention import Fact, FactIndex, NeededFacts, RunFacts
from turnpress.compare.reuse import PromptTrack, roles
from turnpress.core.compression import (
    BASELINE_STRATEGY,
    RenderContext,
    StrategyNotApplicable,
    check_messages,
    get_strategy,
    option_defaults,
    strategy_names,
)
from turnpress.core.model import Message, Turn
from turnpress.core.providers import anthropic_breakpoints
from turnpress.core.templates import resolve_template_dirs
from turnpress.core.tokens import (
    DEFAULT_TOKENIZER,
    TokenCounter,
    TokenizedPrompt,
    Tokenizer,
    get_tokenizer,
)
from turnpress.core.trace import (
    Trace,
    TraceError,
    iter_traces,
    trace_file,
    trace_from_json_line,
)

__all__ = [
    "DEFAULT_MIN_RECALL",
    "AsRun",
    "CompareError",
    "ComparisonResult",
    "DroppedFact",
    "StrategyResult",
    "TraceInfo",
    "TracePrompts",
    "TurnStats",
    "compare_traces",
    "count_traces",
    "resolve_strategies",
    "strategy_label",
]

TraceSource = str | os.PathLike[str] | Trace

MAX_DROPPED_EXAMPLES = 50

DEFAULT_MIN_RECALL = 0.9
"""The needed-fact recall a strategy needs to be recommended (``--min-recall``)."""


class CompareError(RuntimeError):
    """The comparison as a whole cannot go on (the ``full-history`` baseline, a template
    or the tokenizer failed); the message says which, where. A single strategy that
    fails does not raise: it is listed in :attr:`ComparisonResult.not_compared`."""


# -- results ---------------------------------------------------------------------------------


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
            "needed_fact_recall": round(self.needed_fact_recall, 6),
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


# -- strategies ------------------------------------------------------------------------------


def strategy_label(strategy: Any) -> str:
    """``name``, or ``name:k=v,...`` listing the options that differ from the defaults."""
    options = getattr(strategy, "options", {}) or {}
    defaults = option_defaults(type(strategy))
    changed = [f"{k}={v}" for k, v in options.items() if k not in defaults or defaults[k] != v]
    return strategy.name + (":" + ",".join(changed) if changed else "")


def resolve_strategies(strategies: Iterable[Any] | None = None,
                       failures: list[tuple[str, str, str]] | None = None) -> list[Any]:
    """Strategy instances for ``strategies`` (names, ``"name:k=v"`` specs, classes,
    instances, ``(name, {options})``); None means every registered strategy. Repeats
    are dropped; a bad one raises ``ValueError``, except that with ``strategies=None``
    and a ``failures`` list, a registered strategy that cannot be created (its
    ``__init__`` raises) is appended there as ``(name, "failed", reason)``."""
    if strategies is None and failures is not None:
        out = []
        for name in strategy_names():
            try:
                out.append(get_strategy(name))
            except Exception as exc:
                failures.append((name, "failed", f"{strategy_origin(name)}: cannot be "
                                 f"created: {describe_failure(exc)}"))
        if not out:
            raise ValueError("no strategy to compare")
        return out
    if strategies is None:
        specs: list[Any] = list(strategy_names())
    elif isinstance(strategies, (str, tuple)):
        specs = [strategies]
    else:
        specs = list(strategies)
    if not specs:
        raise ValueError("no strategy to compare")
    out, labels = [], set()
    for spec in specs:
        instance = get_strategy(spec)
        label = strategy_label(instance)
        if label not in labels:
            labels.add(label)
            out.append(instance)
    return out


# -- trace sources ---------------------------------------------------------------------------


def _is_jsonl(path: Path) -> bool:
    return path.suffix.lower() in (".jsonl", ".ndjson")


def _tasks(sources: Iterable[TraceSource]) -> Iterator[tuple[Any, ...]]:
    """What a worker needs to load each trace, reading JSONL files line by line."""
    for source in sources:
        if isinstance(source, Trace):
            yield ("trace", source)
            continue
        path = trace_file(source)
        if not _is_jsonl(path):
            yield ("file", str(path))
            continue
        try:
            handle = path.open(encoding="utf-8")
        except OSError as exc:
            raise TraceError(f"{path}: cannot read trace file: {exc.strerror or exc}") from None
        with handle:
            count = 0
            try:
                for lineno, line in enumerate(handle, 1):
                    if line.strip():
                        count += 1
                        yield ("line", str(path), lineno, count, line)
            except UnicodeDecodeError as exc:
                raise TraceError(f"{path}: not UTF-8 text ({exc.reason})") from None
            if count == 0:
                raise TraceError(f"{path}: no trace in this file (it is empty)")


def _load(task: tuple[Any, ...]) -> Iterator[Trace]:
    kind = task[0]
    if kind == "trace":
        yield task[1]
    elif kind == "file":
        yield from iter_traces(task[1])
    else:
        _, path, lineno, count, line = task
        yield trace_from_json_line(line, Path(path), lineno, count)


def _as_sources(traces: Any) -> list[TraceSource] | Iterable[TraceSource]:
    if traces is None:
        from turnpress.examples import example_trace_paths

        return example_trace_paths()
    if isinstance(traces, (str, os.PathLike, Trace)):
        return [traces]
    return traces


def count_traces(traces: Any = None) -> int:
    """How many traces ``traces`` holds (JSONL lines are counted, not parsed)."""
    n = 0
    for source in _as_sources(traces):
        if isinstance(source, Trace) or not _is_jsonl(Path(source)):
            n += 1
            continue
        try:
            with Path(source).open("rb") as handle:
                n += sum(1 for line in handle if line.strip())
        except OSError:
            n += 1  # the error is reported when the file is read
    return n


# -- the work on one trace ---------------------------------------------------------------------


@dataclass(frozen=True)
class _Settings:
    strategies: tuple[Any, ...]
    tokenizer: Tokenizer
    cache: str
    keep_prompts: int
    template_dirs: tuple[Path, ...]
    price: Price


Row = tuple[int, int, int, int, float, int, int]
"""(turn, input, cached, written, retention, needed, needed shown) of one prompt."""


@dataclass
class _Outcome:
    """One trace's numbers: ``rows[s]`` holds a :data:`Row` per prompt of strategy s."""

    index: int
    info: TraceInfo
    rows: list[list[Row]]
    dropped: list[list[tuple[int, Fact]]]
    status: list[tuple[str, str] | None]
    prompts: TracePrompts | None = None


def _split_turns(messages: Sequence[Message], body: Callable[[Message], str]
                 ) -> tuple[str, list[tuple[str, str]]]:
    """A full-history conversation as (head text, [(assistant text, feedback text)])."""
    head: list[str] = []
    turns: list[tuple[list[str], list[str]]] = []
    for m in messages:
        if m["role"] == "assistant":
            turns.append(([body(m)], []))
        elif turns:
            turns[-1][1].append(body(m))
        else:
            head.append(body(m))
    return "\n".join(head), [("\n".join(a), "\n".join(f)) for a, f in turns]


def _as_run(trace: Trace, price: Price, baseline_cost: float
            ) -> tuple[AsRun | None, tuple[tuple[int, int] | None, ...]]:
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


class _Worker:
    """Compares the strategies on one trace at a time (one per process)."""

    def __init__(self, settings: _Settings) -> None:
        self.settings = settings
        self.counter = TokenCounter(settings.tokenizer)
        self.baseline = get_strategy(BASELINE_STRATEGY)

    def run(self, index: int, task: tuple[Any, ...]) -> list[_Outcome]:
        return [self.compare(index + i, trace) for i, trace in enumerate(_load(task))]

    def _context(self, trace: Trace, n: int) -> tuple[tuple[Turn, ...], RenderContext]:
        """The turns before prompt ``n`` and its render context, from
        ``Trace.prompt_arguments`` (the one render path)."""
        args = trace.prompt_arguments(n)
        return args["turns"], RenderContext(
            mission=args["mission"], system_prompt=args["system_prompt"],
            tools=args["tools"], data=args["data"], turns_left=args["turns_left"],
            template_dirs=self.settings.template_dirs, preamble=args["preamble"])

    def _tokenize(self, messages: Sequence[Message],
                  points: Iterable[tuple[int, int | None]] = (),
                  track: PromptTrack | None = None, same: int = 0
                  ) -> tuple[TokenizedPrompt, list[str]]:
        """The counted prompt and its messages' bodies; with a ``track``, the messages
        it shares with the track's previous prompt are reused (the first ``same`` are
        equal to that prompt's: their bodies are taken as they are), and the track
        moves on to this prompt."""
        counter = self.counter
        try:
            if track is None:
                bodies = counter.bodies(messages)
                return counter.tokenize(messages, points, bodies), bodies
            if same:
                bodies = track.bodies[:same]
                bodies.extend(counter.bodies(messages[same:]))
                kinds = track.roles[:same]
                kinds.extend(roles(messages[same:]))
            else:
                bodies = counter.bodies(messages)
                kinds = roles(messages)
            prompt = counter.tokenize(messages, points, bodies, track.prefix(kinds, bodies))
            track.update(kinds, bodies, prompt, messages, same)
            return prompt, bodies
        except Exception as exc:
            name = self.settings.tokenizer.name
            origin = tokenizer_origin(name)
            if str(exc).startswith(f"{origin} failed: "):  # the registry's guard named it
                raise CompareError(" ".join(str(exc).split())) from None
            raise CompareError(f"{origin} failed: {describe_failure(exc)}") from None

    def _points(self, strategy: Any, messages: list[Message], turns: Any, memory: Any,
                ctx: RenderContext) -> list[tuple[int, int | None]]:
        if self.settings.cache != "anthropic":
            return []
        method = getattr(strategy, "cache_breakpoints", None)
        raw = [(0, None)] if method is None else list(method(turns, memory, ctx))
        flat = [m if isinstance(m.get("content"), str) else
                {"role": m["role"], "content": self.counter.body(m)} for m in messages]
        return anthropic_breakpoints(flat, raw)

    def compare(self, index: int, trace: Trace) -> _Outcome:
        s = self.settings
        strategies = s.strategies
        body = self.counter.body
        self.counter.start_run()
        caches = [new_cache_model(s.cache) for _ in strategies]
        base_cache = new_cache_model(s.cache)
        keep = index < s.keep_prompts
        where = f"trace {trace.name or '(unnamed)'}"
        status: list[tuple[str, str] | None] = [None] * len(strategies)
        rows: list[list[Row]] = [[] for _ in strategies]
        dropped: list[list[tuple[int, Fact]]] = [[] for _ in strategies]
        prompts = TracePrompts(trace.name, [], []) if keep else None
        last = len(trace.turns)
        all_turns, whole_ctx = self._context(trace, last + 1)
        whole, _ = self._render(self.baseline, all_turns,
                                all_turns[-1].memory if all_turns else {},
                                whole_ctx, where, last + 1)
        needed = NeededFacts(*_split_turns(whole, body))
        _, ctx1 = self._context(trace, 1)
        index_ = FactIndex((trace.system_prompt, *ctx1.namespaces({}, only=["tool/"])))
        run_facts = RunFacts(index_, trace.mission)
        base_track = PromptTrack()
        tracks = [PromptTrack() for _ in strategies]
        base_tokens, base_cost, billed_base_cost = 0, 0.0, 0.0
        for n in range(1, last + 1):
            turns, ctx = self._context(trace, n)
            memory = turns[-1].memory if turns else {}
            base, same = self._render(self.baseline, turns, memory, ctx, where, n, base_track)
            try:
                base_points = self._points(self.baseline, base, turns, memory, ctx)
            except Exception as exc:
                raise CompareError(f"{BASELINE_STRATEGY}: cache_breakpoints() failed on "
                                   f"{where}, turn {n}: {describe_failure(exc)}") from None
            base_prompt, base_bodies = self._tokenize(base, base_points, base_track, same)
            usage = base_cache.account(base_prompt)
            base_tokens += base_prompt.total
            prompt_cost = cost_usd(s.price, base_prompt.total, usage.cached, usage.written)
            base_cost += prompt_cost
            if trace.turns[n - 1].usage is not None:
                billed_base_cost += prompt_cost
            pairs = run_facts.pairs(turns)
            need_ids = index_.ids(needed.for_turn(n), lazy=True)
            base_shown = index_.shown(base_bodies)
            base_need = index_.shows(base_bodies, need_ids)
            counted = list(dict.fromkeys(
                i if i in base_shown else j for i, j in pairs
                if i in base_shown or j in base_shown))
            index_.track(counted)
            need = [i for i in need_ids if i in base_need]
            kept_messages, kept_tokens = [], []
            for i, strategy in enumerate(strategies):
                if status[i] is not None:
                    kept_messages.append([])
                    kept_tokens.append(0)
                    continue
                if strategy is self.baseline or strategy == self.baseline:
                    messages = base
                else:
                    try:
                        messages, same = self._render(strategy, turns, memory, ctx, where,
                                                      n, tracks[i])
                    except StrategyNotApplicable as exc:
                        status[i] = ("n/a", " ".join(str(exc).split()) or "not applicable")
                        kept_messages.append([])
                        kept_tokens.append(0)
                        continue
                    except _StrategyFailed as exc:
                        status[i] = ("failed", str(exc))
                        kept_messages.append([])
                        kept_tokens.append(0)
                        continue
                    try:
                        points = self._points(strategy, messages, turns, memory, ctx)
                    except Exception as exc:
                        status[i] = ("failed", f"{strategy_origin(strategy.name)}: "
                                     f"cache_breakpoints() failed on {where}, turn {n}: "
                                     f"{describe_failure(exc)}")
                        kept_messages.append([])
                        kept_tokens.append(0)
                        continue
                if messages is base:
                    prompt, shown, need_shown = base_prompt, base_shown, base_need
                else:
                    prompt, texts = self._tokenize(messages, points, tracks[i], same)
                    shown = index_.shown_tracked(texts)
                    need_shown = index_.shows(texts, need)
                used = caches[i].account(prompt)
                lost = [j for j in counted if j not in shown]
                score = 1.0 - len(lost) / len(counted) if counted else 1.0
                rows[i].append((n, prompt.total, used.cached, used.written, score,
                                len(need), sum(1 for j in need if j in need_shown)))
                dropped[i].extend((n, index_.facts[j]) for j in lost)
                kept_messages.append(messages)
                kept_tokens.append(prompt.total)
            if prompts is not None:
                prompts.prompts.append(kept_messages)
                prompts.tokens.append(kept_tokens)
        as_run, billed = _as_run(trace, s.price, billed_base_cost)
        info = TraceInfo(trace.name, last, base_tokens, base_cost, as_run, billed)
        self.counter.start_run()
        return _Outcome(index, info, rows, dropped, status, prompts)

    def _render(self, strategy: Any, turns: Any, memory: Any, ctx: RenderContext, where: str,
                n: int, track: PromptTrack | None = None) -> tuple[list[Message], int]:
        """The strategy's prompt, and how many of its leading messages equal the
        ``track``'s previous prompt's (checked then, so not checked again); a failure of
        the baseline (or of a template) stops the comparison (:class:`CompareError`),
        another strategy's raises :class:`_StrategyFailed` (or ``StrategyNotApplicable``)."""
        try:
            messages = strategy.to_messages(turns, memory, ctx)
            same = track.same(messages) if track is not None and type(messages) is list else 0
            if same:
                try:
                    check_messages(messages[same:], strategy)
                except TypeError:
                    check_messages(messages, strategy)  # the same error, with its index
                    raise
                return messages, same
            return check_messages(messages, strategy), 0
        except StrategyNotApplicable:
            if strategy is self.baseline:
                raise CompareError(f"{BASELINE_STRATEGY} cannot render {where}") from None
            raise
        except CompareError:
            raise
        except Exception as exc:
            reason = describe_failure(exc)
            if is_template_problem(exc) and (strategy is self.baseline
                                             or strategy.name == BASELINE_STRATEGY):
                raise CompareError(reason) from None
            if strategy is self.baseline:
                raise CompareError(f"{BASELINE_STRATEGY} failed on {where}, turn {n}: "
                                   f"{reason}") from None
            if is_template_problem(exc):
                raise _StrategyFailed(f"{strategy_origin(strategy.name)}: {reason}") from None
            raise _StrategyFailed(f"{strategy_origin(strategy.name)} failed on {where}, "
                                  f"turn {n}: {reason}") from None


class _StrategyFailed(Exception):
    """One strategy failed on one prompt; the message is the one-line reason."""


_WORKER: _Worker | None = None


def _init_worker(settings: _Settings) -> None:
    global _WORKER
    _WORKER = _Worker(settings)


def _work(index: int, task: tuple[Any, ...]) -> list[_Outcome]:
    assert _WORKER is not None
    return _WORKER.run(index, task)


def _mp_context() -> multiprocessing.context.BaseContext:
    """``fork`` on Linux while this process has a single thread (fast, and workers see
    plugins registered in code), else ``spawn`` (safe everywhere; workers then load
    plugins from entry points, and a script must guard its entry point with
    ``if __name__ == "__main__":``)."""
    if sys.platform == "linux" and threading.active_count() == 1:
        return multiprocessing.get_context("fork")
    return multiprocessing.get_context("spawn")


def _run(tasks: Iterator[tuple[Any, ...]], settings: _Settings, jobs: int
         ) -> Iterator[_Outcome]:
    if jobs <= 1:
        worker = _Worker(settings)
        index = 0
        for task in tasks:
            for outcome in worker.run(index, task):
                index += 1
                yield outcome
        return
    pool = ProcessPoolExecutor(jobs, mp_context=_mp_context(), initializer=_init_worker,
                               initargs=(settings,))
    pending: deque[Future[list[_Outcome]]] = deque()
    try:
        for position, task in enumerate(tasks):
            pending.append(pool.submit(_work, position, task))
            if len(pending) >= jobs * 4:
                yield from _result(pending.popleft())
        while pending:
            yield from _result(pending.popleft())
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def _result(future: Future[list[_Outcome]]) -> list[_Outcome]:
    """A worker's outcomes; its error as raised there (a TraceError naming the file...),
    without the worker's traceback chained to it."""
    try:
        return future.result()
    except Exception as exc:
        raise exc from None


# -- the public entry point ---------------------------------------------------------------------


def compare_traces(
    traces: TraceSource | Iterable[TraceSource] | None = None,
    strategies: Iterable[Any] | str | None = None,
    *,
    tokenizer: str | Tokenizer = DEFAULT_TOKENIZER,
    cache: str = "openai",
    price: str | Price | None = None,
    jobs: int = 1,
    keep_prompts: int = 0,
    template_dirs: Iterable[str | os.PathLike[str]] = (),
    progress: Callable[[TraceInfo], None] | None = None,
    min_recall: float = DEFAULT_MIN_RECALL,
) -> ComparisonResult:
    """Compare strategies on traces.

    ``traces``: trace files (JSON or JSONL, streamed; any format ``load_trace``
    reads), :class:`Trace` objects, or None for the bundled examples.
    ``strategies``: anything :func:`turnpress.get_strategy` accepts, or None for
    every registered strategy (one that cannot be created is listed in
    ``not_compared`` instead of stopping the comparison).
    ``tokenizer``: a registered tokenizer name; ``cache``: ``openai``,
    ``anthropic`` or ``none``; ``price``: a preset name, ``in=..,cached=..,write=..``
    or a :class:`Price` (None: ``anthropic-sonnet-4`` with the Anthropic cache
    model, else ``openai-gpt-4.1``). ``jobs``: worker processes, forked on Linux
    when this process runs a single thread, spawned otherwise (then only installed
    plugins are seen, and a script must guard its entry point with
    ``if __name__ == "__main__":``). ``keep_prompts``: keep
    the rendered prompts of the first N traces (for the HTML report).
    ``progress`` is called with each trace once it is done. ``min_recall``: the
    needed-fact recall a strategy needs to be :attr:`ComparisonResult.recommended`.

    Bad names, options, prices and traces raise ``ValueError`` (``TraceError``
    for traces). A strategy that raises ``StrategyNotApplicable`` is marked
    ``n/a``, one that fails otherwise ``failed``, each with a one-line reason
    (``ComparisonResult.not_compared``); the rest complete. Only a failure of the
    ``full-history`` baseline, of a template it renders, or of the tokenizer raises
    :class:`CompareError`.
    """
    unresolved: list[tuple[str, str, str]] = []
    instances = resolve_strategies(strategies, unresolved if strategies is None else None)
    tok = get_tokenizer(tokenizer)
    new_cache_model(cache)
    the_price = get_price(price, cache)
    if isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1:
        raise ValueError(f"jobs must be a positive integer, got {jobs!r}")
    if isinstance(min_recall, bool) or not isinstance(min_recall, (int, float)) \
            or not 0.0 <= min_recall <= 1.0:
        raise ValueError(f"min_recall must be a number from 0 to 1, got {min_recall!r}")
    settings = _Settings(tuple(instances), tok, cache, keep_prompts,
                         resolve_template_dirs(template_dirs), the_price)
    result = ComparisonResult(tok.name, cache, the_price, min_recall=float(min_recall),
                              unresolved=unresolved)
    names: list[str] = []
    for strategy in instances:
        result.strategies.append(StrategyResult(
            strategy.name, strategy_label(strategy),
            dict(getattr(strategy, "options", {}) or {}), _names=names))
    kept_positions = 0
    for outcome in _run(_tasks(_as_sources(traces)), settings, jobs):
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
            _add_rows(sr, trace_index, rows, the_price)
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
        if outcome.prompts is not None and kept_positions < keep_prompts:
            kept_positions += 1
            result.kept_prompts.append(outcome.prompts)
        if progress is not None:
            progress(info)
    return result


def _add_rows(sr: StrategyResult, trace_index: int, rows: Sequence[Row], price: Price) -> None:
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
