"""``Agent``: a mission, its tools and data, and the settings of its turn loop.

An agent can be a tool of another agent (``tools={"researcher": child}``). A child
inherits ``llm``, ``compression`` and ``max_turns`` from the agent that calls it
unless it sets its own (API-007): those three default to :data:`INHERIT`, which
means "the parent's value", and at the top level "the default" (no LLM, the
default strategy ``compression=True`` as in ``render()``, 5 turns: SS-002).
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from turnpress.agent.llm import LLM
from turnpress.agent.loop import TurnObserver, run_loop
from turnpress.agent.mission import expand_mission, placeholders
from turnpress.agent.step import Step
from turnpress.agent.system_prompt import system_prompt as default_system_prompt
from turnpress.core.compression import Compression, normalize
from turnpress.core.model import Keyword, Tool, coerce_tools
from turnpress.core.template_check import check_templates

__all__ = ["DEFAULT_MAX_TURNS", "INHERIT", "Agent", "AgentToolError", "Settings"]

DEFAULT_MAX_TURNS = 5


class _Inherit:
    """The type of :data:`INHERIT`."""

    _instance: _Inherit | None = None

    def __new__(cls) -> _Inherit:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "INHERIT"

    def __reduce__(self) -> str:
        return "INHERIT"


INHERIT: Any = _Inherit()
"""Default of ``llm``, ``max_turns`` and ``compression``: take the calling agent's value."""


class AgentToolError(RuntimeError):
    """An agent used as a tool did not return; the calling agent's turn fails with it."""


@dataclass(frozen=True)
class Settings:
    """The inheritable settings of a run, resolved to concrete values."""

    llm: LLM | None = None
    max_turns: int = DEFAULT_MAX_TURNS
    #: the same default as ``render()``: ``True``, the default strategy
    compression: Compression = True


def _check_max_turns(value: Any) -> None:
    if value is INHERIT:
        return
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"max_turns must be an integer >= 1, got {value!r}")


def _plain_key(key: Any) -> Any:
    return key.name if isinstance(key, Keyword) else key


@dataclass(frozen=True, eq=False)
class Agent:
    """A PTC-Lisp agent.

    - ``mission``: the task; ``{{name}}`` placeholders are filled from ``data``.
    - ``tools``: name -> :class:`Tool`, callable, JSON-schema dict or another Agent.
    - ``data``: the read-only input, seen by the agent as ``data/NAME``.
    - ``llm``: any callable ``messages -> str | LLMReply`` (see ``turnpress.agent.llm``).
    - ``max_turns`` (5), ``compression`` (a :data:`~turnpress.core.compression.Compression`;
      default ``True``, the default strategy, as in ``render()``; ``False``: the
      uncompressed ``full-history`` baseline; a name, spec, class, instance or
      ``(name, {options})``).
    - ``system_prompt``: replaces the default static one when given.
    - ``description``: how the agent is described when it is a tool (default:
      the first line of the mission).
    - ``template_dirs``: template override directories; ``limits``: the
      interpreter's :class:`turnpress.lisp.Limits`. Its wall-clock ``timeout_s``
      (5 s) counts the program's own evaluation only: time inside tools, a child
      agent's LLM calls included, does not count.
    - ``on_turn``: called with each new turn and the messages it was given, as
      the run goes (for live display); child agents do not inherit it.
    """

    mission: str
    tools: Mapping[str, Any] = field(default_factory=dict)
    data: Mapping[str, Any] = field(default_factory=dict)
    llm: Any = INHERIT
    max_turns: Any = INHERIT
    compression: Compression | _Inherit = INHERIT
    system_prompt: str | None = None
    description: str = ""
    template_dirs: tuple[str | os.PathLike[str], ...] = ()
    limits: Any = None
    on_turn: TurnObserver | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if not isinstance(self.mission, str):
            raise TypeError(f"mission must be a string, got {type(self.mission).__name__}")
        if not isinstance(self.tools, Mapping):
            raise TypeError(f"tools must be a mapping of name -> tool, got "
                            f"{type(self.tools).__name__}")
        if not isinstance(self.data, Mapping):
            raise TypeError(f"data must be a mapping of name -> value, got "
                            f"{type(self.data).__name__}")
        if self.system_prompt is not None and not isinstance(self.system_prompt, str):
            raise TypeError("system_prompt must be a string or None")
        _check_max_turns(self.max_turns)
        if self.compression is not INHERIT:
            normalize(self.compression)  # a bad name or option fails here, not mid-run
        object.__setattr__(self, "tools", dict(self.tools))
        object.__setattr__(self, "data", dict(self.data))
        object.__setattr__(self, "template_dirs", tuple(self.template_dirs))

    # -- settings ---------------------------------------------------------------------

    def settings(self, parent: Settings | None = None) -> Settings:
        """This agent's settings, taking each :data:`INHERIT` one from ``parent``."""
        base = parent or Settings()
        return Settings(
            llm=base.llm if self.llm is INHERIT else self.llm,
            max_turns=base.max_turns if self.max_turns is INHERIT else self.max_turns,
            compression=base.compression if self.compression is INHERIT else self.compression,
        )

    def tool_map(self, settings: Settings) -> dict[str, Tool]:
        """The tools as :class:`Tool` objects; child agents inherit ``settings``."""
        bound = {name: value.as_tool(name, inherit=settings) if isinstance(value, Agent)
                 else value for name, value in self.tools.items()}
        return coerce_tools(bound)

    # -- running ----------------------------------------------------------------------

    def run(self, **overrides: Any) -> Step:
        """Run the agent and return its :class:`Step`.

        ``overrides`` replace fields for this run only (``agent.run(llm=my_llm,
        data={...})``). Placeholders are expanded and the settings checked before
        the first LLM call: a missing placeholder or a missing LLM raises
        ``ValueError``.
        """
        return self._run(None, **overrides)

    def _run(self, parent: Settings | None, **overrides: Any) -> Step:
        agent = self._with(overrides)
        settings = agent.settings(parent)
        mission = expand_mission(agent.mission, agent.data)
        if settings.llm is None:
            raise ValueError("the agent has no LLM: pass llm= to Agent() or to run() "
                             "(e.g. turnpress.agent.ScriptedLLM([...]))")
        if not callable(settings.llm):
            raise TypeError(f"llm must be callable (messages -> str), got "
                            f"{type(settings.llm).__name__}")
        check_templates(agent.template_dirs)  # a broken override fails here, not mid-run
        prompt = (agent.system_prompt if agent.system_prompt is not None
                  else default_system_prompt(agent.template_dirs))
        return run_loop(mission=mission, llm=settings.llm, tools=agent.tool_map(settings),
                        data=agent.data, max_turns=settings.max_turns,
                        compression=settings.compression, system_prompt=prompt,
                        template_dirs=agent.template_dirs, limits=agent.limits,
                        on_turn=agent.on_turn)

    def _with(self, overrides: Mapping[str, Any]) -> Agent:
        if not overrides:
            return self
        names = [f.name for f in dataclasses.fields(self)]
        unknown = [k for k in overrides if k not in names]
        if unknown:
            raise TypeError(f"run() got an unknown option {unknown[0]!r}; "
                            f"valid options: {', '.join(names)}")
        return dataclasses.replace(self, **overrides)

    # -- as a tool of another agent -----------------------------------------------------

    def as_tool(self, name: str, inherit: Settings | None = None) -> Tool:
        """This agent as the tool ``(tool/NAME)`` or ``(tool/NAME {:key value ...})``.

        The optional map argument is merged over the agent's ``data`` (keyword keys
        become plain names), so a child's ``{{placeholders}}`` can be filled by the
        caller. The tool returns the child's result; when the child does not
        return, it raises :class:`AgentToolError` naming the child and its failure,
        and the calling turn fails with a tool error. ``inherit`` carries the
        calling agent's settings (API-007).
        """

        def call(args: Mapping[Any, Any] | None = None) -> Any:
            if args is None:
                args = {}
            if not isinstance(args, Mapping):
                raise TypeError(f"agent tool {name!r} takes one map argument, "
                                f"got {type(args).__name__}")
            data = {**self.data, **{_plain_key(k): v for k, v in args.items()}}
            step = self._run(inherit, data=data)
            if not step.success:
                failure = step.failure
                raise AgentToolError(f"agent {name!r} did not return: "
                                     f"{failure.reason}: {failure.message}")  # type: ignore[union-attr]
            return step.result

        return Tool(name, {"data": "map"}, "any", self._tool_description(), call)

    def _tool_description(self) -> str:
        text = self.description or next(
            (line.strip() for line in self.mission.splitlines() if line.strip()), "")
        needed = [p for p in placeholders(self.mission) if p.split(".")[0] not in self.data]
        if needed:
            keys = " ".join(f":{p.split('.')[0]}" for p in dict.fromkeys(needed))
            text = f"{text} (data needs {keys})"
        return text
