"""The comparison engine: every prompt of every trace under every strategy.

For each trace (a run of *K* turns) and each turn *n* in 1..K, the engine
renders the prompt that was sent for turn *n* under each strategy and records
its tokens (exact, :mod:`turnpress.compare.counting`), its prompt-cache usage
under the chosen provider model (:mod:`turnpress.compare.cache`), its cost and its
retention (against the ``full-history`` prompt of that turn, which is always
rendered: it is the baseline of the savings and the reference of retention); the
numbers add up in :mod:`turnpress.compare.results`.

Traces are streamed (:mod:`turnpress.compare.sources`): a JSONL file is read line
by line and each trace is dropped once its numbers are in, so memory stays flat
however many traces there are. Each trace is one task of an executor
(:mod:`turnpress.core.executor`: the local process pool, or a distributed engine
registered through ``register_executors``), with a bounded number in flight; results
come back as they finish (and go to ``per_trace`` then) and are added up in trace
order, so the result is the same wherever the traces ran. A run that cannot be read
or has no turn is skipped (listed in ``ComparisonResult.skipped``) unless ``strict``.
"""

from __future__ import annotations

import gc
import operator
import os
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from functools import cached_property
from itertools import compress
from pathlib import Path
from typing import Any

from turnpress.compare.cache import new_cache_model
from turnpress.compare.counting import PromptCounter, leading_system, split_turns
from turnpress.compare.fact_index import FactIndex, RunFacts
from turnpress.compare.failures import (
    CompareError,
    TemplateCompareError,
    describe_failure,
    is_template_problem,
    strategy_origin,
)
from turnpress.compare.needed_facts import NeededFacts
from turnpress.compare.per_trace import PerTraceWriter, ResumeIndex, TraceKey
from turnpress.compare.pricing import Price, cost_usd, floor_cost, get_price
from turnpress.compare.results import (
    DEFAULT_MIN_RECALL,
    CallRow,
    ComparisonResult,
    Repeated,
    Row,
    SampleInfo,
    Skipped,
    StrategyResult,
    TraceInfo,
    TraceOutcome,
    TracePrompts,
    add_outcome,
    billed_usage,
)
from turnpress.compare.retention import Fact
from turnpress.compare.reuse import PromptTrack
from turnpress.compare.sources import (
    TraceSample,
    TraceSource,
    as_sources,
    load_task,
    skipped_task,
    task_file,
    task_key,
    trace_tasks,
)
from turnpress.core.compression import (
    BASELINE_STRATEGY,
    RenderContext,
    StrategyNotApplicable,
    check_messages,
    get_strategy,
    option_defaults,
    strategy_model_calls,
    strategy_names,
)
from turnpress.core.errors import PLUGIN_FAULTS
from turnpress.core.executor import Executor, TaskResults, WorkerJob, get_executor
from turnpress.core.model import Message, Turn
from turnpress.core.pricing import CacheRules, rules_for
from turnpress.core.strategy_lookup import StrategyCreationError
from turnpress.core.summaries import SummaryBudgetExceeded
from turnpress.core.templates import resolve_template_dirs
from turnpress.core.tokens import DEFAULT_TOKENIZER, Tokenizer, get_tokenizer
from turnpress.core.trace import Trace, TraceError, run_digest
from turnpress.core.trace_inputs import Scan
from turnpress.plugins.summarizers import SummaryRuntime, default_cache_dir

__all__ = ["IN_FLIGHT_PER_SLOT", "NothingCompared", "check_settings", "compare_traces",
           "resolve_strategies", "strategy_label"]

IN_FLIGHT_PER_SLOT = 4
"""Traces in flight (submitted, or finished and waiting for an earlier one) per task
the executor runs at once: enough to keep every worker busy, few enough that the
driver's memory stays flat."""


class NothingCompared(TraceError):
    """Every run was skipped (it cannot be read, or has no turn): nothing to compare.
    ``skipped`` lists them, ``not_runs`` the files found that are not runs
    (:attr:`ComparisonResult.not_runs`)."""

    def __init__(self, message: str, skipped: list[Skipped],
                 not_runs: list[Skipped] | None = None) -> None:
        super().__init__(message)
        self.skipped = skipped
        self.not_runs = not_runs or []


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
    are dropped; a bad name or option raises ``ValueError``. With a ``failures`` list,
    a strategy that cannot be created (its ``__init__`` fails: a fault of its code) is
    appended there as ``(name, "failed", reason)`` instead of raising, and the others
    are compared."""
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
        try:
            instance = get_strategy(spec)
        except StrategyCreationError as exc:
            if failures is None:
                raise
            failures.append((spec if isinstance(spec, str) else exc.strategy, "failed",
                             str(exc)))
            continue
        except Exception as exc:
            if strategies is not None or failures is None:
                raise
            # a registered strategy's defaults fail its own checks: its plugin's fault
            failures.append((spec, "failed", f"{strategy_origin(spec)}: cannot be "
                             f"created: {describe_failure(exc)}"))
            continue
        label = strategy_label(instance)
        if label not in labels:
            labels.add(label)
            out.append(instance)
    if not out:
        reasons = "; ".join(reason for _, _, reason in failures or ())
        raise ValueError(f"no strategy to compare: {reasons}" if reasons
                         else "no strategy to compare")
    return out


def check_settings(strategies: Iterable[Any] | None = None,
                   tokenizer: str | Tokenizer = DEFAULT_TOKENIZER, cache: str = "openai",
                   price: str | Price | None = None
                   ) -> tuple[list[Any], list[tuple[str, str, str]], Tokenizer, Price]:
    """The strategy instances, those that cannot be created (``(name, "failed",
    reason)``), the tokenizer and the price of a comparison, or the ``ValueError`` of a
    bad one; before any trace is read (the command line checks its options first, then
    scans directories, and :func:`compare_traces` starts here)."""
    unresolved: list[tuple[str, str, str]] = []
    instances = resolve_strategies(strategies, unresolved)
    tok = get_tokenizer(tokenizer)
    new_cache_model(cache)
    return instances, unresolved, tok, get_price(price, cache)


# -- the work on one trace ---------------------------------------------------------------------


@dataclass(frozen=True)
class _Settings:
    strategies: tuple[Any, ...]
    tokenizer: Tokenizer
    cache: str
    keep_prompts: int
    template_dirs: tuple[Path, ...]
    price: Price
    strict: bool = True

    @cached_property
    def rules(self) -> CacheRules:
        """The cache model's rules for the model priced, as strategies see them
        (``RenderContext.cache``) and the cache model counts them."""
        return rules_for(self.cache, self.price)


#: The garbage collector's thresholds while a worker compares (and, in the process that
#: calls :func:`compare_traces`, for the whole comparison): a comparison keeps many
#: long-lived containers (counted prompts, per-run caches), which the default
#: thresholds (700, 10, 10) traverse again and again; the garbage it makes is freed by
#: reference counting, not by the collector. About a tenth of compare's CPU time.
COMPARE_GC_THRESHOLDS = (50_000, 50, 100)


@contextmanager
def fewer_collections() -> Iterator[None]:
    """Run the body with :data:`COMPARE_GC_THRESHOLDS`, then restore the thresholds
    that were set before (also when the body raises). Inside another such body it
    changes nothing (restoring the default thresholds collects the young objects of
    the comparison: once per comparison, not once per trace, when it runs in this
    process)."""
    before = gc.get_threshold()
    if before == COMPARE_GC_THRESHOLDS:
        yield
        return
    gc.set_threshold(*COMPARE_GC_THRESHOLDS)
    try:
        yield
    finally:
        gc.set_threshold(*before)


class _Worker:
    """Compares the strategies on one trace at a time (one per worker): called with a
    task ``(index, task)``, it returns a :class:`TraceOutcome` (or, unless ``strict``,
    a :class:`Skipped`) per trace of the task."""

    def __init__(self, settings: _Settings) -> None:
        self.settings = settings
        self.counting = PromptCounter(settings.tokenizer, settings.cache)
        self.counter = self.counting.counter
        self.baseline = get_strategy(BASELINE_STRATEGY)

    def __call__(self, item: tuple[int, tuple[Any, ...]]) -> list[TraceOutcome | Skipped]:
        return self.run(*item)

    def run(self, index: int, task: tuple[Any, ...]) -> list[TraceOutcome | Skipped]:
        """The outcomes of the trace(s) of ``task``, the first one numbered ``index``."""
        with fewer_collections():
            return self._run(index, task)

    def _run(self, index: int, task: tuple[Any, ...]) -> list[TraceOutcome | Skipped]:
        out: list[TraceOutcome | Skipped] = []
        traces = load_task(task)
        while True:
            try:
                trace = next(traces)
            except StopIteration:
                break
            except TraceError as exc:
                if self.settings.strict:
                    raise
                out.append(Skipped(*skipped_task(task_file(task), str(exc))[1:]))
                break
            if not trace.turns and not self.settings.strict:
                where = task_file(task) + (f": line {task[2]}" if task[0] == "line" else "")
                out.append(Skipped(*skipped_task(task_file(task), f"{where}: no turn (the "
                                                 f"run ended before its first reply)")[1:]))
                continue
            outcome = self.compare(index + len(out), trace)
            file, line = task_key(task) or (None, None)
            outcome.info = replace(outcome.info, file=file, line=line,
                                   digest=run_digest(trace))
            out.append(outcome)
        return out

    def _context(self, trace: Trace, n: int) -> tuple[tuple[Turn, ...], RenderContext]:
        """The turns before prompt ``n`` and its render context, from
        ``Trace.prompt_arguments`` (the one render path)."""
        args = trace.prompt_arguments(n)
        ctx = RenderContext(
            mission=args["mission"], system_prompt=args["system_prompt"],
            tools=args["tools"], data=args["data"], turns_left=args["turns_left"],
            template_dirs=self.settings.template_dirs, preamble=args["preamble"],
            cache=self.settings.rules, price=self.settings.price)
        # a strategy that counts its messages (ctx.token_counter) shares this counter
        ctx.run_cache.counters[self.counter.tokenizer.name] = self.counter  # type: ignore[union-attr]
        return args["turns"], ctx

    def compare(self, index: int, trace: Trace) -> TraceOutcome:
        s = self.settings
        strategies = s.strategies
        body = self.counter.body
        self.counter.start_run()
        base_cache = new_cache_model(s.cache, s.rules)
        # is it the baseline, does it make model calls: decided once per strategy
        is_base = [st is self.baseline or st == self.baseline for st in strategies]
        makes_calls = [getattr(st, "model_calls", None) is not None for st in strategies]
        # the baseline sends the reference's prompts: its cache usage is the reference's
        # (one model, not a second copy of its states, as long as the run)
        caches = [None if b else new_cache_model(s.cache, s.rules) for b in is_base]
        keep = index < s.keep_prompts
        where = f"trace {trace.name or '(unnamed)'}"
        status: list[tuple[str, str] | None] = [None] * len(strategies)
        rows: list[list[Row]] = [[] for _ in strategies]
        calls: list[list[CallRow]] = [[] for _ in strategies]
        # per strategy: fact id -> [the turn it was first dropped, prompts dropped from]
        drops: list[dict[int, list[int]]] = [{} for _ in strategies]
        prompts = TracePrompts(trace.name, [], []) if keep else None
        last = len(trace.turns)
        all_turns, whole_ctx = self._context(trace, last + 1)
        whole, _ = self._render(self.baseline, all_turns,
                                all_turns[-1].memory if all_turns else {},
                                whole_ctx, where, last + 1)
        needed = NeededFacts(*split_turns(whole, body))
        del whole  # its texts are in ``needed``; its messages are no longer needed
        _, ctx1 = self._context(trace, 1)
        index_ = FactIndex((trace.system_prompt, *ctx1.namespaces({}, only=["tool/"])))
        run_facts = RunFacts(index_, trace.mission)
        base_track = PromptTrack()
        tracks = [PromptTrack() for _ in strategies]
        base_tokens, base_cost, billed_base_cost = 0, 0.0, 0.0
        floor, head, seen = 0.0, 0, 0  # the floor; the system prompt's and the last tokens
        for n in range(1, last + 1):
            turns, ctx = self._context(trace, n)
            memory = turns[-1].memory if turns else {}
            base, same = self._render(self.baseline, turns, memory, ctx, where, n, base_track)
            try:
                base_points = self.counting.points(self.baseline, base, turns, memory, ctx)
            except PLUGIN_FAULTS as exc:
                raise CompareError(f"{BASELINE_STRATEGY}: cache_breakpoints() failed on "
                                   f"{where}, turn {n}: {describe_failure(exc)}") from None
            base_prompt, base_bodies = self.counting.tokenize(base, base_points, base_track, same)
            usage = base_cache.account(base_prompt)
            base_tokens += base_prompt.total
            if n == 1:
                head = seen = base_prompt.tokens_before(leading_system(base))
            floor += floor_cost(s.price, s.cache, max(0, base_prompt.total - seen), head)
            seen = base_prompt.total
            prompt_cost = cost_usd(s.price, base_prompt.total, usage.cached, usage.written)
            base_cost += prompt_cost
            if trace.turns[n - 1].usage is not None:
                billed_base_cost += prompt_cost
            pairs = run_facts.pairs(turns)
            index_.next_turn()
            need_ids = index_.ids(needed.for_turn(n), lazy=True)
            base_shown = index_.shown(base_bodies)
            base_need = index_.shows(base_bodies, need_ids)
            counted = _counted(pairs, base_shown)
            index_.track(counted)
            need = [i for i in need_ids if i in base_need]
            kept_messages: list[list[Message]] = []
            kept_tokens: list[int] = []
            for i, strategy in enumerate(strategies):
                if status[i] is not None:
                    kept_messages.append([])
                    kept_tokens.append(0)
                    continue
                if is_base[i]:
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
                        points = self.counting.points(strategy, messages, turns, memory, ctx)
                    except PLUGIN_FAULTS as exc:
                        status[i] = ("failed", f"{strategy_origin(strategy.name)}: "
                                     f"cache_breakpoints() failed on {where}, turn {n}: "
                                     f"{describe_failure(exc)}")
                        kept_messages.append([])
                        kept_tokens.append(0)
                        continue
                    if makes_calls[i]:
                        calls[i].extend(_model_calls(strategy, turns, memory, ctx, n))
                if messages is base:
                    prompt, shown, need_shown = base_prompt, base_shown, base_need
                else:
                    prompt, texts = self.counting.tokenize(messages, points, tracks[i], same,
                                                           (base_track, base_prompt))
                    if prompt is base_prompt:  # the baseline's texts: what they show is known
                        shown, need_shown = base_shown, base_need
                    else:
                        shown = index_.shown_tracked(texts)
                        need_shown = index_.shows(texts, need)
                model = caches[i]
                used = usage if model is None else model.account(prompt)
                lost = ([] if shown.issuperset(counted)  # the common case, in C
                        else [j for j in counted if j not in shown])
                score = 1.0 - len(lost) / len(counted) if counted else 1.0
                rows[i].append((n, prompt.total, used.cached, used.written, score,
                                len(need), sum(map(need_shown.__contains__, need))))
                for j in lost:  # counted, not listed per prompt: a long run has many
                    first = drops[i].get(j)
                    if first is None:
                        drops[i][j] = [n, 1]
                    else:
                        first[1] += 1
                kept_messages.append(messages)
                kept_tokens.append(prompt.total)
            if prompts is not None:
                prompts.prompts.append(kept_messages)
                prompts.tokens.append(kept_tokens)
        as_run, billed = billed_usage(trace, s.price, billed_base_cost)
        info = TraceInfo(trace.name, last, base_tokens, base_cost, as_run, billed, floor)
        self.counter.start_run()
        dropped: list[list[tuple[int, Fact, int]]] = [
            [(turn, index_.facts[j], times) for j, (turn, times) in d.items()] for d in drops]
        return TraceOutcome(index, info, rows, dropped, status, prompts, calls)

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
            if type(messages) is list and not messages:
                raise TypeError("returned no message; a prompt needs at least one")
            return check_messages(messages, strategy), 0
        except StrategyNotApplicable:
            if strategy is self.baseline:
                raise CompareError(f"{BASELINE_STRATEGY} cannot render {where}") from None
            raise
        except (CompareError, SummaryBudgetExceeded):
            raise
        except PLUGIN_FAULTS as exc:
            reason = describe_failure(exc, strategy_origin(strategy.name))
            if is_template_problem(exc) and (strategy is self.baseline
                                             or strategy.name == BASELINE_STRATEGY):
                raise TemplateCompareError(reason) from None
            if strategy is self.baseline:
                raise CompareError(f"{BASELINE_STRATEGY} failed on {where}, turn {n}: "
                                   f"{reason}") from None
            if is_template_problem(exc):
                raise _StrategyFailed(f"{strategy_origin(strategy.name)}: {reason}") from None
            raise _StrategyFailed(f"{strategy_origin(strategy.name)} failed on {where}, "
                                  f"turn {n}: {reason}") from None


_FIRST, _SECOND = operator.itemgetter(0), operator.itemgetter(1)


def _counted(pairs: list[tuple[int, int]], shown: set[int]) -> list[int]:
    """The facts retention counts, in order, each once: of each ``(fact id, fallback
    id)`` of ``pairs``, the fact when ``shown`` holds it, else the fallback when it
    holds that (neither: none). By C-level passes (a long run has many pairs)."""
    firsts = list(map(shown.__contains__, map(_FIRST, pairs)))
    either = map(operator.or_, firsts, map(shown.__contains__, map(_SECOND, pairs)))
    picked = map(operator.getitem, pairs, map(operator.not_, firsts))
    return list(dict.fromkeys(compress(picked, either)))


class _StrategyFailed(Exception):
    """One strategy failed on one prompt; the message is the one-line reason."""


def _model_calls(strategy: Any, turns: Any, memory: Any, ctx: RenderContext,
                 n: int) -> list[CallRow]:
    """The model calls ``strategy`` made itself to build prompt ``n`` (a strategy with a
    ``model_calls(turns, memory, ctx)`` method: summary-based compaction), as rows;
    each has ``input_tokens`` and ``output_tokens``."""
    return [(n, int(c.input_tokens), int(c.output_tokens))
            for c in strategy_model_calls(strategy, turns, memory, ctx)]


def _run(tasks: Iterator[tuple[Any, ...]], settings: _Settings, results: TaskResults,
         resume: ResumeIndex | None, finished: Callable[[TraceKey | None, TraceOutcome],
                                                        None] | None,
         copy_resumed: bool = False) -> Iterator[TraceOutcome | Skipped]:
    """Every trace's outcome, in trace order, from the executor behind ``results``;
    ``finished(key, outcome)`` is called on each computed one as soon as it is back (in
    the order they finish). Traces that ``resume`` has are read back from it, not
    computed; ``("skipped", ...)`` tasks become a :class:`Skipped` (``copy_resumed``:
    ``finished`` is called on the traces read back too). When the executor fails (a
    ``submit()`` or ``done()`` that raises), the traces in flight that still finish are
    handed to ``finished`` before the error goes on."""
    slots = results.slots
    window = max(2, slots * IN_FLIGHT_PER_SLOT)
    ready: dict[int, list[TraceOutcome | Skipped]] = {}
    keys: dict[int, TraceKey | None] = {}
    pending, next_out = 0, 0
    numbered = enumerate(tasks)
    exhausted = False
    results.start(WorkerJob(_Worker, settings))
    while True:
        while not exhausted and pending + len(ready) < window:
            try:
                position, task = next(numbered)
            except StopIteration:
                exhausted = True
                break
            key = task_key(task)
            if task[0] == "skipped":
                ready[position] = [Skipped(task[1], task[2])]
            elif resume is not None and key in resume:
                assert key is not None
                outcome = resume.outcome(key, position)
                if finished is not None and copy_resumed:
                    finished(key, outcome)
                ready[position] = [outcome]
            else:
                try:
                    results.submit(position, (position, task))
                except BaseException as exc:
                    _salvage(exc, slots, results, pending, keys, finished)
                    raise
                keys[position] = key
                pending += 1
        while next_out in ready:
            yield from ready.pop(next_out)
            next_out += 1
        if not pending:
            if exhausted and not ready:
                return
            continue
        try:
            position, outcomes = results.take(keys)
        except BaseException as exc:
            _salvage(exc, slots, results, pending - 1, keys, finished)
            raise
        pending -= 1
        _finished(finished, keys.pop(position), outcomes)
        ready[position] = outcomes


def _finished(finished: Callable[[TraceKey | None, TraceOutcome], None] | None,
              key: TraceKey | None, outcomes: list[TraceOutcome | Skipped]) -> None:
    if finished is not None:
        for outcome in outcomes:
            if isinstance(outcome, TraceOutcome):
                finished(key, outcome)


def _salvage(exc: BaseException, slots: int, results: TaskResults, pending: int,
             keys: dict[int, TraceKey | None],
             finished: Callable[[TraceKey | None, TraceOutcome], None] | None) -> None:
    """After ``exc`` stopped the comparison: nothing good is thrown away, the ``pending``
    tasks in flight are let finish for ``finished``; but Ctrl-C with one slot (the tasks
    run here, one after the other) stops now, not after the queue."""
    stop_now = isinstance(exc, KeyboardInterrupt) and slots == 1
    if finished is not None and not stop_now:
        _drain(results, pending, keys, finished)


def _drain(results: TaskResults, pending: int, keys: dict[int, TraceKey | None],
           finished: Callable[[TraceKey | None, TraceOutcome], None]) -> None:
    """After a task failed: wait for the ``pending`` others and hand each one that
    finished well to ``finished`` (another failure, or Ctrl-C, stops the wait)."""
    for _ in range(pending):
        try:
            position, outcomes = results.take(keys)
        except Exception:
            continue
        except BaseException:
            return
        _finished(finished, keys.pop(position), outcomes)


# -- strategies that summarise ------------------------------------------------------------------


def _with_summaries(instances: list[Any], price: Price, jobs: int, *,
                    summarizer: str | None, base_url: str | None,
                    cache_dir: str | os.PathLike[str] | None,
                    budget: float | None) -> list[Any]:
    """``instances``, those that summarise (a ``summarizer`` option and a ``configured``
    method) given the CLI's summarizer and one shared :class:`SummaryRuntime` (disk
    cache, budget at ``price``)."""
    takes = [i for i, s in enumerate(instances)
             if "summarizer" in option_defaults(type(s)) and hasattr(s, "configured")]
    if not takes:
        if summarizer is not None or budget is not None or base_url is not None:
            raise ValueError("--summarizer, --base-url and --summary-budget apply to "
                             "summary-compaction (or another strategy with a 'summarizer' "
                             "option), which is not among the compared strategies; add -s "
                             "summary-compaction")
        return instances
    if budget is not None:
        if isinstance(budget, bool) or not isinstance(budget, (int, float)) or budget < 0:
            raise ValueError(f"summary budget must be a non-negative number of USD, "
                             f"got {budget!r}")
        if jobs > 1:
            raise ValueError("--summary-budget counts what this process spends: use it "
                             "with --jobs 1")
    runtime = SummaryRuntime(
        Path(cache_dir).expanduser() if cache_dir is not None else default_cache_dir(),
        None if budget is None else float(budget), price.input, price.output or 0.0)
    out = list(instances)
    for i in takes:
        strategy = out[i]
        if summarizer is not None or base_url is not None:
            options = dict(strategy.options)
            if summarizer is not None:
                options["summarizer"] = summarizer
            if base_url is not None and "base_url" in options:
                options["base_url"] = base_url
            strategy = get_strategy((type(strategy), options))
        live = getattr(strategy, "summarizer_name", "extractive") != "extractive"
        if live and price.output is None:
            raise ValueError(f"price {price} has no output price, and {strategy.name}'s "
                             f"summarizer {strategy.summarizer} is billed for its output; "
                             f"add out=USD to --price (or use a preset)")
        out[i] = strategy.configured(runtime=runtime)
    return out


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
    sample: int | None = None,
    seed: int = 0,
    summarizer: str | None = None,
    base_url: str | None = None,
    summary_cache: str | os.PathLike[str] | None = None,
    summary_budget: float | None = None,
    executor: str | Executor | None = None,
    strict: bool = False,
    per_trace: str | os.PathLike[str] | None = None,
    resume: str | os.PathLike[str] | None = None,
) -> ComparisonResult:
    """Compare strategies on traces.

    ``traces``: a path or a list of them, as ``turnpress compare`` takes them
    (:func:`~turnpress.core.trace_inputs.discover`): trace files (JSON or JSONL,
    streamed; any format ``load_trace`` reads), bundled traces' names, directories
    (read recursively) and glob patterns (``"logs/**/*.jsonl"``, ``**`` crossing
    directories), each file once; what ``discover`` found already (an
    :class:`~turnpress.core.trace_inputs.Inputs`); :class:`Trace` objects; or None
    for the bundled examples. A file found in a directory or by a pattern that is
    not a run (another ending, JSON no reader recognises) is not read: it is in
    ``ComparisonResult.not_runs`` with its reason; one that cannot be read (invalid
    JSON, empty) is a broken run, as if named. A pattern that matches nothing, or a
    directory or pattern where no file is a run, raises ``TraceError``.
    ``strategies``: anything :func:`turnpress.get_strategy` accepts, or None for
    every registered strategy (one that cannot be created is listed in
    ``not_compared`` instead of stopping the comparison).
    ``tokenizer``: a registered tokenizer name; ``cache``: ``openai``,
    ``anthropic`` or ``none``; ``price``: a preset name, ``in=..,cached=..,write=..``
    or a :class:`Price` (None: ``anthropic-sonnet-4`` with the Anthropic cache
    model, else ``openai-gpt-4.1``). ``executor``: where the traces run,
    ``NAME[:ADDRESS]`` of a registered executor or an
    :class:`~turnpress.core.executor.Executor` (None: ``local``, ``jobs`` worker
    processes, forked on Linux when this process runs a single thread, spawned
    otherwise: then only installed plugins are seen, and a script must guard its
    entry point with ``if __name__ == "__main__":``; ``dask[:ADDRESS]``: Dask
    distributed, ``jobs`` local workers without an address). ``keep_prompts``: keep
    the rendered prompts of the first N traces (for the HTML report).
    ``progress`` is called with each trace once it is done. ``min_recall``: the
    needed-fact recall a strategy needs to be :attr:`ComparisonResult.recommended`
    (at the lower bound of its 95% interval over runs). ``sample``: compare only that
    many of the runs, drawn stratified by length (:class:`TraceSample`); ``seed``: the
    seed of that draw and of the bootstrap intervals (:meth:`ComparisonResult.intervals`).

    Strategies that summarise (``summary-compaction``): ``summarizer`` (a spec,
    ``llm:openai:MODEL``...) and ``base_url`` replace their ``summarizer`` and
    ``base_url`` options; their summaries are kept in ``summary_cache`` (default: the
    user cache directory, :func:`~turnpress.plugins.summarizers.default_cache_dir`),
    and ``summary_budget`` (USD, at ``price``) stops the comparison with
    :class:`~turnpress.core.summaries.SummaryBudgetExceeded` before a request could
    spend more (it needs ``jobs=1``). Their calls are billed as their own rows
    (``StrategyResult.summary_calls``...); a summarizer that fell back to
    ``extractive`` for lack of a model is named in ``ComparisonResult.notes``.
    ``strict``: a run that cannot be read or has no turn raises ``TraceError``
    instead of being skipped (``ComparisonResult.skipped``; when every run is
    skipped, :class:`NothingCompared` is raised). ``per_trace``: a JSONL file that
    gets one line per trace and strategy as each trace finishes
    (:mod:`turnpress.compare.per_trace`), whatever stops the comparison later.
    ``resume``: such a file from an interrupted comparison: its traces are read back
    instead of compared (a missing file: nothing to resume); with ``per_trace`` the
    same file, new lines are appended to it. A run found again (the same trace,
    :func:`~turnpress.core.trace.run_digest`, in another file or on another line) is
    counted once, where it comes first; each copy is in ``ComparisonResult.repeated``.

    Bad names, options, prices and traces raise ``ValueError`` (``TraceError``
    for traces). A strategy that raises ``StrategyNotApplicable`` is marked
    ``n/a``, one that fails otherwise ``failed``, each with a one-line reason
    (``ComparisonResult.not_compared``); the rest complete. Only a failure of the
    ``full-history`` baseline, of a template it renders, or of the tokenizer raises
    :class:`CompareError`; an executor that cannot run (a scheduler out of reach, a
    worker without a plugin the driver has) raises
    :class:`~turnpress.core.executor.ExecutorError`, and a plugin's executor that breaks
    its contract (:class:`~turnpress.core.executor.TaskResults`: its ``start()``,
    ``submit()``, ``done()`` or ``close()`` raises, ``done()`` answers what it was not
    asked, ``slots`` is no whole number from 1) a ``PluginError`` naming it, its plugin
    and the method; the traces finished before it failed are in ``per_trace``.
    """
    instances, unresolved, tok, the_price = check_settings(strategies, tokenizer, cache,
                                                           price)
    if isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1:
        raise ValueError(f"jobs must be a positive integer, got {jobs!r}")
    if isinstance(min_recall, bool) or not isinstance(min_recall, (int, float)) \
            or not 0.0 <= min_recall <= 1.0:
        raise ValueError(f"min_recall must be a number from 0 to 1, got {min_recall!r}")
    drawing = None if sample is None else TraceSample(sample, seed)
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise ValueError(f"seed must be an integer, got {seed!r}")
    instances = _with_summaries(instances, the_price, jobs, summarizer=summarizer,
                                base_url=base_url, cache_dir=summary_cache,
                                budget=summary_budget)
    settings = _Settings(tuple(instances), tok, cache, keep_prompts,
                         resolve_template_dirs(template_dirs), the_price, bool(strict))
    result = ComparisonResult(tok.name, cache, the_price, min_recall=float(min_recall),
                              unresolved=unresolved, seed=seed)
    result.notes.extend((strategy_label(s), s.note) for s in instances
                        if isinstance(getattr(s, "note", None), str))
    names: list[str] = []
    for strategy in instances:
        result.strategies.append(StrategyResult(
            strategy.name, strategy_label(strategy),
            dict(getattr(strategy, "options", {}) or {}), _names=names))
    labels = [s.label for s in result.strategies]
    index = None if resume is None else ResumeIndex(resume, labels, tok.name, cache,
                                                    the_price)
    same_file = (index is not None and per_trace is not None
                 and Path(per_trace).resolve() == Path(resume).resolve())  # type: ignore[arg-type]
    if index is not None and per_trace is None:
        per_trace, same_file = resume, True
    scan = Scan()  # the files of directories and patterns that are not runs
    found = as_sources(traces, scan)
    sources = (trace_tasks(found, strict=bool(strict)) if drawing is None
               else drawing.tasks(found, strict=bool(strict)))
    seen: dict[str, TraceInfo] = {}  # the digest of each run counted -> its info
    # the executor before the file: an error leaves it be; a failing close() is told
    # when nothing else failed before it
    with TaskResults(get_executor(executor, jobs), "trace") as runner, fewer_collections():
        writer = None
        if per_trace is not None:
            if same_file and index is not None:
                index.prepare_append()  # a last line cut short by a kill is cut off
            writer = PerTraceWriter(per_trace, labels, tok.name, cache, the_price,
                                    append=same_file)
        try:
            for outcome in _run(sources, settings, runner, index,
                                writer.write if writer else None,
                                copy_resumed=writer is not None and not same_file):
                if isinstance(outcome, Skipped):
                    result.skipped.append(outcome)
                    continue
                # the same run again (another file, another line): counted once, the
                # first time (trace order, whatever the jobs); only digests are kept
                info = outcome.info
                first = seen.get(info.digest) if info.digest else None
                if first is not None:
                    result.repeated.append(Repeated(info.name, info, first))
                else:
                    if info.digest:
                        seen[info.digest] = info  # in result.traces anyway
                    add_outcome(result, outcome, names, keep_prompts)
                if progress is not None:
                    progress(outcome.info)
        finally:
            if writer is not None:
                writer.close()
    result.not_runs = [Skipped(str(path), why) for path, why in scan.inputs.skipped]
    if result.skipped and not result.traces:
        n = len(result.skipped)
        raise NothingCompared(str(result.skipped[0]) if n == 1 else
                              f"none of the {n} runs could be compared (each cannot be read "
                              f"or has no turn): {'; '.join(map(str, result.skipped[:3]))}"
                              + ("; ..." if n > 3 else ""), result.skipped, result.not_runs)
    if drawing is not None:
        result.sample = SampleInfo(drawing.drawn, drawing.population, seed)
    return result
