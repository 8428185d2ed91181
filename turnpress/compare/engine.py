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
from turnpress.compare.pricing import Price, cost_usd, get_price
from turnpress.compare.retention import Fact, counted_facts, prompt_haystack, score_facts
from turnpress.compare.retention import strategy_tool_call_limit as _tool_call_limit
from turnpress.core.compression import (
    BASELINE_STRATEGY,
    RenderContext,
    check_messages,
    get_strategy,
    option_defaults,
    strategy_names,
)
from turnpress.core.model import Message
from turnpress.core.providers import anthropic_breakpoints
from turnpress.core.templates import resolve_template_dirs
from turnpress.core.tokens import DEFAULT_TOKENIZER, TokenCounter, Tokenizer, get_tokenizer
from turnpress.core.trace import Trace, TraceError, iter_traces, trace_from_dict

__all__ = [
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


class CompareError(RuntimeError):
    """A strategy or tokenizer failed while comparing; the message says which, where."""


# -- results ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class TraceInfo:
    """A compared trace: its name and number of turns (= prompts)."""

    name: str
    turns: int


class TurnStats(NamedTuple):
    """The numbers of one prompt under one strategy."""

    trace: str
    turn: int
    input_tokens: int
    cached_tokens: int
    written_tokens: int
    retention: float


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
    dropped: Counter[str] = field(default_factory=Counter)
    dropped_examples: list[DroppedFact] = field(default_factory=list)
    _trace: array = field(default_factory=lambda: array("I"), repr=False)
    _turn: array = field(default_factory=lambda: array("I"), repr=False)
    _input: array = field(default_factory=lambda: array("q"), repr=False)
    _cached: array = field(default_factory=lambda: array("q"), repr=False)
    _written: array = field(default_factory=lambda: array("q"), repr=False)
    _retention: array = field(default_factory=lambda: array("d"), repr=False)
    _names: list[str] = field(default_factory=list, repr=False)

    @property
    def retention(self) -> float:
        """Mean retention over all prompts (1.0 when there is none)."""
        return self.retention_sum / self.prompts if self.prompts else 1.0

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
                            self._cached[i], self._written[i], self._retention[i])

    def rows(self) -> Iterator[tuple[int, int, int, int, int, float]]:
        """Like :meth:`per_turn`, with the trace's index in ``ComparisonResult.traces``:
        ``(trace_index, turn, input_tokens, cached_tokens, written_tokens, retention)``."""
        for i in range(len(self._turn)):
            yield (self._trace[i], self._turn[i], self._input[i], self._cached[i],
                   self._written[i], self._retention[i])

    def to_json(self) -> dict[str, Any]:
        """This strategy's entry of the ``--json`` document."""
        return {
            "name": self.name,
            "options": _jsonable(self.options),
            "input_tokens": self.input_tokens,
            "cached_tokens": self.cached_tokens,
            "savings_vs_full_history": round(self.savings_vs_full_history, 6),
            "cost_usd": round(self.cost_usd, 8),
            "retention": round(self.retention, 6),
            "per_turn": [
                {"trace": t.trace, "turn": t.turn, "input_tokens": t.input_tokens,
                 "cached_tokens": t.cached_tokens, "retention": round(t.retention, 6)}
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
    kept_prompts: list[TracePrompts] = field(default_factory=list)

    def strategy(self, label: str) -> StrategyResult:
        """The result of the strategy shown as ``label`` (its name, plus options if any)."""
        for s in self.strategies:
            if s.label == label:
                return s
        raise KeyError(f"no strategy {label!r} in this comparison; have: "
                       + ", ".join(s.label for s in self.strategies))

    @property
    def prompts(self) -> int:
        """The number of prompts compared per strategy (sum of the traces' turns)."""
        return sum(t.turns for t in self.traces)

    def to_json(self) -> dict[str, Any]:
        """The ``--json`` document (a JSON-ready dict)."""
        return {
            "tokenizer": self.tokenizer,
            "cache": self.cache,
            "price": self.price.to_json(),
            "traces": [{"name": t.name, "turns": t.turns} for t in self.traces],
            "strategies": [s.to_json() for s in self.strategies],
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


def resolve_strategies(strategies: Iterable[Any] | None = None) -> list[Any]:
    """Strategy instances for ``strategies`` (names, ``"name:k=v"`` specs, classes,
    instances, ``(name, {options})``); None means every registered strategy. Repeats
    are dropped; a bad one raises ``ValueError``."""
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
        path = Path(source)
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
        where = f"{path}: line {lineno}"
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise TraceError(f"{where}: invalid JSON at column {exc.colno}: {exc.msg}") from None
        yield trace_from_dict(obj, where, f"{Path(path).stem}#{count}")


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


@dataclass
class _Outcome:
    """One trace's numbers: ``rows[s]`` holds (turn, input, cached, written, retention)."""

    index: int
    name: str
    turns: int
    baseline: list[int]
    rows: list[list[tuple[int, int, int, int, float]]]
    dropped: list[list[tuple[int, Fact]]]
    prompts: TracePrompts | None = None


class _Worker:
    """Compares the strategies on one trace at a time (one per process)."""

    def __init__(self, settings: _Settings) -> None:
        self.settings = settings
        self.counter = TokenCounter(settings.tokenizer)
        self.baseline = get_strategy(BASELINE_STRATEGY)

    def run(self, index: int, task: tuple[Any, ...]) -> list[_Outcome]:
        return [self.compare(index + i, trace) for i, trace in enumerate(_load(task))]

    def compare(self, index: int, trace: Trace) -> _Outcome:
        s = self.settings
        strategies = s.strategies
        self.counter.start_run()
        caches = [new_cache_model(s.cache) for _ in strategies]
        keep = index < s.keep_prompts
        outcome = _Outcome(index, trace.name, len(trace.turns), [],
                           [[] for _ in strategies], [[] for _ in strategies],
                           TracePrompts(trace.name, [], []) if keep else None)
        exclude: tuple[str, ...] | None = None
        for n in range(1, len(trace.turns) + 1):
            turns = trace.turns[: n - 1]
            memory = turns[-1].memory if turns else {}
            ctx = RenderContext(mission=trace.mission, system_prompt=trace.system_prompt,
                                tools=trace.tools, data=trace.data,
                                turns_left=trace.max_turns - (n - 1),
                                template_dirs=s.template_dirs)
            base = self._render(self.baseline, turns, memory, ctx, trace, n)
            outcome.baseline.append(self.counter.count(base))
            if exclude is None:  # the tool/ listing does not change within a trace
                exclude = (trace.system_prompt, *ctx.namespaces({}, only=["tool/"]))
            reference = prompt_haystack(base, exclude)
            facts_by_limit: dict[int | None, list[Fact]] = {}
            kept_messages, kept_tokens = [], []
            for i, strategy in enumerate(strategies):
                messages = (base if strategy == self.baseline
                            else self._render(strategy, turns, memory, ctx, trace, n))
                points: list[tuple[int, int | None]] = []
                if s.cache == "anthropic":
                    points = anthropic_breakpoints(
                        messages, self._breakpoints(strategy, turns, memory, ctx, trace, n))
                prompt = self.counter.tokenize(messages, points)
                usage = caches[i].account(prompt)
                limit = _tool_call_limit(strategy)
                if limit not in facts_by_limit:
                    facts_by_limit[limit] = counted_facts(turns, trace.mission,
                                                          tool_call_limit=limit,
                                                          reference=reference)
                kept = score_facts(facts_by_limit[limit], prompt_haystack(messages, exclude))
                outcome.rows[i].append((n, prompt.total, usage.cached, usage.written,
                                        kept.score))
                outcome.dropped[i].extend((n, f) for f in kept.dropped)
                if keep:
                    kept_messages.append(messages)
                    kept_tokens.append(prompt.total)
            if outcome.prompts is not None:
                outcome.prompts.prompts.append(kept_messages)
                outcome.prompts.tokens.append(kept_tokens)
        self.counter.start_run()
        return outcome

    @staticmethod
    def _render(strategy: Any, turns: Any, memory: Any, ctx: RenderContext, trace: Trace,
                n: int) -> list[Message]:
        try:
            return check_messages(strategy.to_messages(turns, memory, ctx), strategy)
        except CompareError:
            raise
        except Exception as exc:
            raise CompareError(f"strategy {strategy.name!r} failed on trace "
                               f"{trace.name or '(unnamed)'}, turn {n}: "
                               f"{type(exc).__name__}: {exc}") from exc

    @staticmethod
    def _breakpoints(strategy: Any, turns: Any, memory: Any, ctx: RenderContext, trace: Trace,
                     n: int) -> list[tuple[int, int | None]]:
        method = getattr(strategy, "cache_breakpoints", None)
        if method is None:
            return [(0, None)]
        try:
            return list(method(turns, memory, ctx))
        except Exception as exc:
            raise CompareError(f"strategy {strategy.name!r}: cache_breakpoints() failed on "
                               f"trace {trace.name or '(unnamed)'}, turn {n}: "
                               f"{type(exc).__name__}: {exc}") from exc


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
                yield from pending.popleft().result()
        while pending:
            yield from pending.popleft().result()
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


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
) -> ComparisonResult:
    """Compare strategies on traces.

    ``traces``: trace files (JSON or JSONL, streamed), :class:`Trace` objects, or
    None for the bundled examples. ``strategies``: anything
    :func:`turnpress.get_strategy` accepts, or None for every registered strategy.
    ``tokenizer``: a registered tokenizer name; ``cache``: ``openai``,
    ``anthropic`` or ``none``; ``price``: a preset name, ``in=..,cached=..,write=..``
    or a :class:`Price` (None: ``anthropic-sonnet-4`` with the Anthropic cache
    model, else ``openai-gpt-4.1``). ``jobs``: worker processes, forked on Linux
    when this process runs a single thread, spawned otherwise (then only installed
    plugins are seen, and a script must guard its entry point with
    ``if __name__ == "__main__":``). ``keep_prompts``: keep
    the rendered prompts of the first N traces (for the HTML report).
    ``progress`` is called with each trace once it is done.

    Bad names, options, prices and traces raise ``ValueError`` (``TraceError``
    for traces); a strategy that fails raises :class:`CompareError`.
    """
    instances = resolve_strategies(strategies)
    tok = get_tokenizer(tokenizer)
    new_cache_model(cache)
    the_price = get_price(price, cache)
    if isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1:
        raise ValueError(f"jobs must be a positive integer, got {jobs!r}")
    settings = _Settings(tuple(instances), tok, cache, keep_prompts,
                         resolve_template_dirs(template_dirs))
    result = ComparisonResult(tok.name, cache, the_price)
    names: list[str] = []
    for strategy in instances:
        result.strategies.append(StrategyResult(
            strategy.name, strategy_label(strategy),
            dict(getattr(strategy, "options", {}) or {}), _names=names))
    kept_positions = 0
    for outcome in _run(_tasks(_as_sources(traces)), settings, jobs):
        trace_index = len(result.traces)
        info = TraceInfo(outcome.name, outcome.turns)
        result.traces.append(info)
        names.append(outcome.name)
        baseline_total = sum(outcome.baseline)
        result.baseline_tokens += baseline_total
        for sr, rows, dropped in zip(result.strategies, outcome.rows, outcome.dropped,
                                     strict=True):
            _add_rows(sr, trace_index, rows, the_price)
            sr.baseline_tokens += baseline_total
            for turn, fact in dropped:
                sr.dropped[fact.kind] += 1
                if len(sr.dropped_examples) < MAX_DROPPED_EXAMPLES:
                    sr.dropped_examples.append(DroppedFact(outcome.name, turn, fact))
        if outcome.prompts is not None and kept_positions < keep_prompts:
            kept_positions += 1
            result.kept_prompts.append(outcome.prompts)
        if progress is not None:
            progress(info)
    return result


def _add_rows(sr: StrategyResult, trace_index: int,
              rows: Sequence[tuple[int, int, int, int, float]], price: Price) -> None:
    for turn, total, cached, written, score in rows:
        sr.input_tokens += total
        sr.cached_tokens += cached
        sr.written_tokens += written
        sr.cost_usd += cost_usd(price, total, cached, written)
        sr.prompts += 1
        sr.retention_sum += score
        sr._trace.append(trace_index)
        sr._turn.append(turn)
        sr._input.append(total)
        sr._cached.append(cached)
        sr._written.append(written)
        sr._retention.append(score)
