"""The :class:`Trace`: one recorded agent run, and the prompt of each of its turns.

A trace holds everything needed to re-render any turn's prompt under any strategy:
mission, system prompt, max turns, tools, data and the turns. Reading and writing
its JSON form is :mod:`turnpress.core.trace_json`; files are :mod:`turnpress.core.trace`.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from turnpress.core.compression import prompt_arguments, render
from turnpress.core.model import (
    Message,
    Tool,
    Turn,
    coerce_tools,
)

__all__ = ["Trace"]


@dataclass(frozen=True)
class Trace:
    """One recorded agent run."""

    mission: str
    turns: tuple[Turn, ...] = ()
    system_prompt: str = ""
    max_turns: int = 5
    tools: Mapping[str, Tool] = field(default_factory=dict)
    data: Mapping[str, Any] = field(default_factory=dict)
    name: str = field(default="", compare=False)
    #: the transcript format this run was imported from (``"openai-chat"``...);
    #: ``""`` for a turnpress PTC-Lisp run
    source: str = ""
    #: an imported transcript's original messages before its first assistant message
    #: (system prompt, mission...), exactly as sent
    preamble: tuple[Mapping[str, Any], ...] = ()
    #: messages a reader left out on purpose, each ``{"index", "reason", "message"}``
    #: (mini-swe-agent's final ``exit`` submission...), so nothing is dropped silently
    skipped: tuple[Mapping[str, Any], ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "turns", tuple(self.turns))
        object.__setattr__(self, "preamble", tuple(self.preamble))
        object.__setattr__(self, "skipped", tuple(self.skipped))
        object.__setattr__(self, "tools", coerce_tools(self.tools))
        object.__setattr__(self, "data", dict(self.data))

    def prompt_arguments(self, n: int) -> dict[str, Any]:
        """The arguments of ``render()`` (all but ``compression`` and ``template_dirs``)
        for the prompt of turn ``n``, from 1 to ``len(turns) + 1`` (the next prompt):
        see :func:`turnpress.core.compression.prompt_arguments`, the one render path."""
        return prompt_arguments(self, n)

    def prompt(self, n: int, compression: Any = True,
               template_dirs: Iterable[str | os.PathLike[str]] = ()) -> list[Message]:
        """The messages sent for turn ``n`` (1-based): ``render(turns[:n-1], ...)``."""
        return render(**self.prompt_arguments(n), compression=compression,
                      template_dirs=template_dirs)
