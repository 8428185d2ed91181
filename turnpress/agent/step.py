"""The outcome of an agent run: :class:`Step`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from turnpress.core.model import Failure, Message, Tool, Turn
from turnpress.core.trace import Trace

__all__ = ["Step"]


@dataclass(frozen=True)
class Step:
    """What an agent run produced.

    - ``result``: the value of ``(return x)``; ``None`` when the run failed.
    - ``success``: whether the agent returned.
    - ``turns``: every :class:`Turn`, oldest first, full programs and raw responses
      included (the record for debugging; the LLM saw them through the strategy).
    - ``messages``: per LLM call, exactly the messages it was sent (``messages[i]``
      is the prompt of turn ``i + 1``; when an LLM call itself failed, its prompt
      is the last entry and has no turn).
    - ``failure``: why the run did not succeed (``None`` on success). Reasons: the
      program's own ``fail``, ``max_turns``, ``llm_error``, or ``render_error`` (the
      next prompt could not be built: a template problem, a plugin strategy that
      raised).
    - ``usage``: token counts summed over the calls whose LLM reported them
      (``None`` if none did); ``turn_usage`` holds them per call.
    - ``mission`` (expanded), ``system_prompt``, ``max_turns``, ``tools``, ``data``
      and ``compression`` (the strategy name, ``None`` for uncompressed): the
      run's settings, kept so that :meth:`to_trace` can record the run.
    """

    result: Any
    success: bool
    turns: tuple[Turn, ...]
    messages: list[list[Message]] = field(repr=False)
    failure: Failure | None = None
    usage: Mapping[str, int] | None = None
    turn_usage: tuple[Mapping[str, int] | None, ...] = field(default=(), repr=False)
    mission: str = ""
    system_prompt: str = field(default="", repr=False)
    max_turns: int = 5
    tools: Mapping[str, Tool] = field(default_factory=dict, repr=False)
    data: Mapping[str, Any] = field(default_factory=dict, repr=False)
    compression: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "turns", tuple(self.turns))
        object.__setattr__(self, "turn_usage", tuple(self.turn_usage))
        if self.success and self.failure is not None:
            raise ValueError("a successful Step has no failure")
        if not self.success and self.failure is None:
            raise ValueError("an unsuccessful Step needs a Failure saying why")

    def to_trace(self, name: str = "") -> Trace:
        """The run as a :class:`~turnpress.Trace` (save it with ``turnpress.save_trace``).

        Each turn keeps the billed input usage of its LLM call (``Turn.usage``), so
        ``turnpress compare`` on the saved run shows the as-run row.
        """
        return Trace(mission=self.mission, turns=self.turns, system_prompt=self.system_prompt,
                     max_turns=self.max_turns, tools=self.tools, data=self.data, name=name)


def sum_usage(usages: Sequence[Mapping[str, int] | None]) -> dict[str, int] | None:
    """Per-key sums of the reported usages, or ``None`` when none was reported."""
    total: dict[str, int] = {}
    for usage in usages:
        for key, value in (usage or {}).items():
            total[key] = total.get(key, 0) + value
    return total if any(u is not None for u in usages) else None
