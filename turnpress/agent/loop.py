"""The turn loop (spec 03 Loop integration): render, ask the LLM, run, append a Turn.

Each turn renders the next prompt of the run so far through the one render path
(:func:`turnpress.core.compression.prompt_arguments`, so ``turns_left = max_turns -
len(turns)``, never counted from messages: ARC-006) with the strategy resolved once
per run,
calls the LLM, extracts the program from its reply, runs it in the PTC-Lisp
sandbox with the memory of the last turn (REPL semantics), and appends an
immutable :class:`Turn` to a new tuple (ARC-002). A reply without a fenced block
runs as a whole (a bare program works); if it fails, its error says first that the
reply had no ```clojure block. A reply with no program at all (empty, or an empty
block) is a failed turn, reason ``no_program``. ``(return x)`` ends the run
with success; ``(fail reason)`` ends it with that failure; any other error is a
failed turn the agent sees and may recover from on its next turn.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from turnpress.agent.llm import LLM, LLMReply, call_llm, llm_pricing
from turnpress.agent.program import NO_PROGRAM, find_program
from turnpress.agent.step import Step, sum_usage
from turnpress.core.breakpoints import strategy_failure
from turnpress.core.compression import (
    Compression,
    RunState,
    get_strategy,
    prompt_arguments,
    render_with_calls,
)
from turnpress.core.errors import PluginError
from turnpress.core.model import Failure, Message, Tool, Turn, Usage
from turnpress.core.templates import TemplateProblem
from turnpress.lisp import run_program

__all__ = ["FAIL_REASON", "RENDER_ERROR", "TurnObserver", "run_loop"]

TurnObserver = Callable[[Turn, list[Message]], None]
"""Called after each turn with the new turn and the messages the LLM was given for it."""

FAIL_REASON = "fail"
"""``Failure.reason`` of a program that called ``(fail reason)``: the run ends."""

RENDER_ERROR = "render_error"
"""``Failure.reason`` of a run whose next prompt could not be built after turns ran (a
template problem, a plugin strategy that raised): the run ends, its turns kept."""


def run_loop(
    *,
    mission: str,
    llm: LLM,
    tools: Mapping[str, Tool],
    data: Mapping[str, Any],
    max_turns: int,
    compression: Compression,
    system_prompt: str,
    template_dirs: Iterable[str | os.PathLike[str]] = (),
    limits: Any = None,
    on_turn: TurnObserver | None = None,
) -> Step:
    """Run the agent loop until the program returns, fails, or turns run out.

    ``mission`` is already expanded and ``tools`` already coerced to :class:`Tool`.
    ``max_turns=1`` never compresses (SS-001): the single prompt is the uncompressed
    one. An exception from the LLM (or a reply whose usage is not a set of token
    counts) ends the run with ``Failure("llm_error", ...)``. Each turn keeps its
    call's billed input usage (``Turn.usage``, from :meth:`LLMReply.billed`), so a
    saved run carries what the provider billed. A strategy that summarises
    (``summary-compaction``) calls the agent's own ``llm`` for its summaries; their
    usage is added to the usage of the turn whose prompt they built
    (``summary_calls``, ``summary_input_tokens``, ``summary_output_tokens``), and a
    summarization call that fails ends the run with ``llm_error``. A prompt that
    cannot be built (a :class:`TemplateProblem`, a plugin strategy that raised: a
    ``PluginError`` naming it) raises before the first LLM call, as bad input; once
    turns ran, it ends the run with :data:`RENDER_ERROR`, naming the template or the
    strategy and its plugin, so the turns are kept. A built-in strategy's own bug is
    raised as it is.
    ``on_turn`` (if given) sees each turn as soon as it is appended.
    """
    if max_turns == 1:
        compression = False
    strategy = get_strategy(compression)  # once per run, not once per turn
    cache, price = llm_pricing(llm)  # the prompt cache the LLM's provider has
    configure = getattr(strategy, "configured", None)
    if configure is not None:  # a summarizing strategy calls the agent's own adapter
        strategy = configure(llm=llm)
    strategy_name = None if compression is None or compression is False else strategy.name
    template_dirs = tuple(template_dirs)
    run = RunState(mission=mission, system_prompt=system_prompt, max_turns=max_turns,
                   tools=tools, data=data)
    turns: tuple[Turn, ...] = ()
    sent: list[list[Message]] = []
    usages: list[Mapping[str, int] | None] = []

    def finish(success: bool, result: Any = None, failure: Failure | None = None) -> Step:
        return Step(result=result, success=success, turns=turns, messages=sent,
                    failure=failure, usage=sum_usage(usages), turn_usage=tuple(usages),
                    mission=mission, system_prompt=system_prompt, max_turns=max_turns,
                    tools=dict(tools), data=dict(data), compression=strategy_name)

    while len(turns) < max_turns:
        next_prompt = prompt_arguments(dataclasses.replace(run, turns=turns), len(turns) + 1)
        try:
            # the prompt and the model calls that built it, from one prepared render
            messages, calls = render_with_calls(**next_prompt, compression=strategy,
                                                template_dirs=template_dirs, cache=cache,
                                                price=price)
        except Exception as exc:
            failure = _render_failure(strategy, exc, len(turns) + 1,
                                      summarizes=configure is not None)
            if failure is None:
                raise  # a built-in strategy's own bug
            if not turns and failure.reason == RENDER_ERROR:  # bad input: nothing ran yet
                if isinstance(exc, (ValueError, PluginError)):
                    raise
                raise PluginError(failure.message) from exc
            return finish(False, failure=failure)
        sent.append(messages)
        try:
            reply: LLMReply = call_llm(llm, messages)
        except Exception as exc:
            return finish(False, failure=Failure(
                "llm_error", f"the LLM call for turn {len(turns) + 1} failed: "
                             f"{type(exc).__name__}: {exc}"))
        usages.append(with_calls(reply.usage, calls))
        billed = with_summary(reply.billed(), calls)
        found = find_program(reply.text)
        program = found.program
        memory = turns[-1].memory if turns else {}
        number = len(turns) + 1
        if not program:
            failure = Failure(NO_PROGRAM, _no_program(reply.text, found.fenced))
            turn = Turn.failed(number, program, failure, memory=memory,
                               raw_response=reply.text, usage=billed)
            turns = (*turns, turn)
            if on_turn is not None:
                on_turn(turn, messages)
            continue
        outcome = run_program(program, tools=tools, data=data, memory=memory, limits=limits)
        common = {"memory": outcome.memory, "prints": outcome.prints,
                  "tool_calls": outcome.tool_calls, "raw_response": reply.text,
                  "usage": billed}
        if outcome.failure is None:
            turn = Turn.succeeded(number, program, outcome.value, **common)
        else:
            failure = outcome.failure
            if failure.reason != FAIL_REASON:  # (fail ...) is the program's own words
                failure = Failure(failure.reason, found.explain(failure.message))
            turn = Turn.failed(number, program, failure, **common)
        turns = (*turns, turn)
        if on_turn is not None:
            on_turn(turn, messages)
        if outcome.failure is not None and outcome.failure.reason == FAIL_REASON:
            return finish(False, failure=outcome.failure)
        if outcome.failure is None and outcome.returned:
            return finish(True, result=outcome.value)
    return finish(False, failure=Failure(
        "max_turns", f"no (return ...) after {max_turns} turn{'s' if max_turns != 1 else ''}"))


def with_calls(usage: Mapping[str, int] | None, calls: Iterable[Any]
               ) -> Mapping[str, int] | None:
    """A turn's usage with the model calls its prompt needed (a summary-based strategy's
    summarization calls) added as ``summary_calls``, ``summary_input_tokens`` and
    ``summary_output_tokens``: they are billed on the turn that triggered them."""
    calls = list(calls)
    if not calls:
        return usage
    return {**(usage or {}), "summary_calls": len(calls),
            "summary_input_tokens": sum(c.input_tokens for c in calls),
            "summary_output_tokens": sum(c.output_tokens for c in calls)}


def with_summary(usage: Usage | None, calls: Iterable[Any]) -> Usage | None:
    """A turn's billed usage with the summarization calls its prompt needed, so a saved
    run's as-run row bills them too (None stays None: nothing was reported)."""
    calls = list(calls)
    if usage is None or not calls:
        return usage
    return dataclasses.replace(usage,
                               summary_input_tokens=sum(c.input_tokens for c in calls),
                               summary_output_tokens=sum(c.output_tokens for c in calls))


def _render_failure(strategy: Any, exc: Exception, number: int, *,
                    summarizes: bool) -> Failure | None:
    """Why the prompt of turn ``number`` could not be built, or None for a built-in
    strategy's bug. A summarizing strategy's other failures are its model call's."""
    if summarizes and not isinstance(exc, (TemplateProblem, PluginError)):
        return Failure("llm_error", f"the summarization call before turn {number} failed: "
                                    f"{type(exc).__name__}: {exc}")
    problem = strategy_failure(strategy, exc)
    return None if problem is None else Failure(RENDER_ERROR, problem)


def _no_program(reply: str, fenced: bool) -> str:
    if fenced:
        return "the reply's ```clojure block is empty: write the program inside it"
    if not reply.strip():
        return "the reply is empty: reply with exactly one ```clojure block holding the program"
    return "the reply holds no program: reply with exactly one ```clojure block"
