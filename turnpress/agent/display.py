"""Showing an agent run in the terminal: each turn's prompt, reply and outcome.

Uses rich for colour on a terminal; piped, it prints the same plain text (no
wrapping of content, no markup interpretation), so the output stays readable in
a file or a CI log.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from rich.console import Console
from rich.text import Text

from turnpress.agent.program import find_program
from turnpress.agent.step import Step
from turnpress.core.clojure import to_clojure
from turnpress.core.compression import BASELINE_STRATEGY
from turnpress.core.model import Message, Turn

__all__ = ["RetryNotes", "RunView", "format_usage"]

SAMPLE_LIMIT = 5
SAMPLE_PRINTABLE_LIMIT = 200


def _value(value: Any) -> str:
    return to_clojure(value, SAMPLE_LIMIT, SAMPLE_PRINTABLE_LIMIT)[0]


def format_usage(usage: Mapping[str, int] | None) -> str | None:
    """``"1,234 input (200 cached), 56 output tokens"``, or None without usage."""
    if not usage:
        return None
    parts = []
    if "input_tokens" in usage:
        cached = usage.get("cached_input_tokens")
        parts.append(f"{usage['input_tokens']:,} input"
                     + (f" ({cached:,} cached)" if cached else ""))
    if "output_tokens" in usage:
        parts.append(f"{usage['output_tokens']:,} output")
    return ", ".join(parts) + " tokens" if parts else None


class RunView:
    """Prints a run as it goes: call :meth:`header`, pass :meth:`turn` as ``on_turn``,
    then call :meth:`outcome` with the :class:`Step`."""

    def __init__(self, console: Console | None = None, *, max_turns: int,
                 show_system: bool = False) -> None:
        """``show_system`` prints the full system prompt in every prompt."""
        self.console = console or Console(highlight=False)
        self.max_turns = max_turns
        self.show_system = show_system

    # -- pieces ----------------------------------------------------------------------

    def _label(self, text: str, style: str) -> None:
        self.console.print(Text(text, style=style))

    def _body(self, text: str) -> None:
        """Content exactly as it is: no markup, no highlighting, no re-wrapping."""
        self.console.print(Text(text), soft_wrap=True)

    def header(self, *, title: str, mission: str, llm: str, strategy: str | None,
               system_prompt: str) -> None:
        """What is about to run. ``strategy``: the one chosen (None: the full history); a
        one-turn run never compresses (SS-001), which the line says."""
        self._label(title, "bold")
        shown = strategy or "none (full history)"
        if strategy and strategy != BASELINE_STRATEGY and self.max_turns == 1:
            shown += (" (not used: a one-turn run is never compressed, its one prompt is "
                      "the full history)")
        self.console.print(Text.assemble(
            ("LLM: ", "dim"), llm, ("  strategy: ", "dim"), shown,
            ("  max turns: ", "dim"), str(self.max_turns)))
        self.console.print(Text.assemble(("mission: ", "dim"), mission), soft_wrap=True)
        if not self.show_system:
            self.console.print(Text(
                f"system prompt: static, {len(system_prompt):,} characters "
                f"(--show-system prints it)", style="dim"))

    def note(self, text: str) -> None:
        """A line about the run as it goes (an LLM call being retried...)."""
        self._label(f"note: {text}", "yellow")

    def messages(self, messages: Sequence[Message]) -> None:
        """The prompt: every message, the system prompt abbreviated unless asked for."""
        for i, message in enumerate(messages, 1):
            role = message["role"]
            if role == "system" and not self.show_system:
                self._label(f"[{i}] system: (static system prompt, "
                            f"{len(message['content']):,} characters)", "dim")
                continue
            self._label(f"[{i}] {role}", "cyan")
            self._body(message["content"])

    def turn(self, turn: Turn, messages: list[Message]) -> None:
        """One turn: the prompt it was sent, the reply, and what the program did."""
        self.console.print()
        self.console.rule(Text(f"Turn {turn.number} of {self.max_turns}", style="bold"))
        self._label(f"> prompt ({len(messages)} message{'s' if len(messages) != 1 else ''})",
                    "bold blue")
        self.messages(messages)
        self._label("> reply", "bold blue")
        self._body(turn.raw_response)
        note = find_program(turn.raw_response).ignored_note()
        if note:
            self.note(note)
        if turn.success:
            self._label("> ran: ok", "bold green")
        else:
            self._label(f"> ran: FAILED ({turn.result.reason})", "bold red")
        for call in turn.tool_calls:
            args = " ".join(_value(a) for a in call.args)
            self._body(f"tool call: {call.name}({args}) -> {_value(call.result)}")
        if turn.prints:
            self._label("printed:", "dim")
            for line in turn.prints:
                self._body(line)
        if turn.success:
            self._body(f"value: {_value(turn.result)}")
        else:
            self._body(f"error: {turn.result.message}")

    def outcome(self, step: Step) -> None:
        """How the run ended, and the token usage if the LLM reported it."""
        self.console.print()
        self.console.rule(Text("Outcome", style="bold"))
        n = len(step.turns)
        turns = f"{n} turn{'s' if n != 1 else ''}"
        if step.success:
            self._label(f"succeeded after {turns}", "bold green")
            self._body(f"result: {_value(step.result)}")
        else:
            failure = step.failure
            self._label(f"did not succeed after {turns}: {failure.reason}", "bold red")  # type: ignore[union-attr]
            self._body(failure.message)  # type: ignore[union-attr]
        usage = format_usage(step.usage)
        if usage:
            self._body(f"usage: {usage}")


class RetryNotes(logging.Handler):
    """Shows each retry the OpenAI and Anthropic SDKs make (their ``Retrying request
    ... in N seconds`` log records) as a :meth:`RunView.note`, so a slow server is not
    minutes of silence: ``with RetryNotes(view).attached(): agent.run(...)``."""

    LOGGERS = ("openai", "anthropic")

    def __init__(self, view: RunView) -> None:
        super().__init__(logging.INFO)
        self.view = view

    def emit(self, record: logging.LogRecord) -> None:
        """Show an SDK's "Retrying request" log record as a ``note:`` line (others are
        left to the SDK's own logging)."""
        text = record.getMessage()
        if not text.startswith("Retrying request"):
            return
        delay = re.search(r"in ([\d.]+) seconds", text)
        count = re.search(r"\(retry (\d+) of (\d+)\)", text)
        self.view.note("retrying the LLM call"
                       + (f" in {float(delay.group(1)):.1f} s" if delay else "")
                       + (f" (retry {count.group(1)} of {count.group(2)})" if count else "")
                       + ": no answer in time, a lost connection or a busy server")

    @contextmanager
    def attached(self) -> Iterator[None]:
        """Listen to the SDKs' loggers (at INFO) while the block runs."""
        loggers = [logging.getLogger(name) for name in self.LOGGERS]
        levels = [logger.level for logger in loggers]
        for logger in loggers:
            logger.addHandler(self)
            if logger.getEffectiveLevel() > logging.INFO:
                logger.setLevel(logging.INFO)
        try:
            yield
        finally:
            for logger, level in zip(loggers, levels, strict=True):
                logger.removeHandler(self)
                logger.setLevel(level)
