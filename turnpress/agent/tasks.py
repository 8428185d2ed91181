"""TASK.toml files: an agent task with canned tools and scripted replies, runnable offline.

```toml
name = "product-research"            # optional; default: the file name
description = "One line for `turnpress run --list`"
mission = "Find well-reviewed {{category}} products"   # {{placeholders}} come from [data]
max_turns = 5                        # optional (5)
compression = true                   # optional: true (default), false, "NAME[:k=v,...]"

[data]                               # the agent's data/ namespace; any TOML values
category = "Electronics"
products = [{ name = "Laptop", price = 1200 }]

[tools.search-reviews]               # one table per canned tool
description = "Search reviews by category"
params = { category = "string" }     # parameter name = type label, in call order
returns = "string"                   # type label (default "any")
result = "..."                       # what every call returns; leave out for nil
# results = ["1st call", "2nd call"] # or one value per call, in order
# error = "service down"             # or every call fails with this message

[[replies]]                          # scripted LLM replies, one per turn, in order
text = '''
```clojure
(return 42)
```
'''
# usage = { input_tokens = 1200, output_tokens = 40 }   # optional, as an LLM reports it
```

``replies`` may also be a top-level array of strings (``replies = ["..."]``), written
before the first ``[table]`` (TOML puts keys after a table header into that table).
TOML has no nil: a tool without ``result`` returns nil (a side-effect tool).
Unknown keys are errors, so a typo never goes unnoticed. docs/tasks.md documents
every field.
"""

from __future__ import annotations

import copy
import datetime
import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from turnpress.agent.agent import INHERIT, Agent
from turnpress.agent.llm import LLM, USAGE_KEYS, LLMReply, ScriptedLLM
from turnpress.agent.mission import expand_mission
from turnpress.core.compression import Compression, normalize
from turnpress.core.model import Tool

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10 only
    import tomli as tomllib

__all__ = [
    "DEFAULT_TASK",
    "TASKS_DIR",
    "CannedTool",
    "CannedToolSpec",
    "Task",
    "TaskError",
    "bundled_task_names",
    "bundled_task_path",
    "load_task",
    "parse_task",
]

TASKS_DIR = Path(__file__).resolve().parent.parent / "examples" / "tasks"
DEFAULT_TASK = "product-research"
"""The bundled task ``turnpress run`` runs when given none."""

_TASK_KEYS = ("name", "description", "mission", "max_turns", "compression", "data", "tools",
              "replies")
_TOOL_KEYS = ("description", "params", "returns", "result", "results", "error")


class TaskError(ValueError):
    """A task that cannot be loaded; the message names the file and the field."""


class CannedTool:
    """A tool that returns canned values: ``result`` every call, or ``results`` in turn."""

    def __init__(self, name: str, *, result: Any = None, results: list[Any] | None = None,
                 error: str | None = None) -> None:
        """A fresh tool: its call count starts at zero."""
        self.name = name
        self.result = result
        self.results = results
        self.error = error
        self.calls: list[tuple[Any, ...]] = []

    def __call__(self, *args: Any) -> Any:
        """Record the call and return (a copy of) the canned value."""
        self.calls.append(args)
        if self.error is not None:
            raise RuntimeError(self.error)
        if self.results is None:
            return copy.deepcopy(self.result)
        if len(self.calls) > len(self.results):
            raise RuntimeError(f"canned tool {self.name!r} has {len(self.results)} result(s) "
                               f"but was called {len(self.calls)} times")
        return copy.deepcopy(self.results[len(self.calls) - 1])


@dataclass(frozen=True)
class CannedToolSpec:
    """A canned tool as the task file describes it."""

    name: str
    description: str = ""
    params: Mapping[str, str] = field(default_factory=dict)
    returns: str = "any"
    result: Any = None
    results: tuple[Any, ...] | None = None
    error: str | None = None

    def build(self) -> Tool:
        """A :class:`Tool` backed by a new :class:`CannedTool` (call counts from zero)."""
        fn = CannedTool(self.name, result=self.result,
                        results=None if self.results is None else list(self.results),
                        error=self.error)
        return Tool(self.name, dict(self.params), self.returns, self.description, fn)


@dataclass(frozen=True)
class Task:
    """A loaded task file. :meth:`build_agent` turns it into a runnable :class:`Agent`."""

    name: str
    mission: str
    description: str = ""
    max_turns: int = 5
    #: the strategy; ``True`` (the default strategy) unless the file says otherwise,
    #: the same default as ``Agent`` and ``render()``
    compression: Compression = True
    data: Mapping[str, Any] = field(default_factory=dict)
    tools: tuple[CannedToolSpec, ...] = ()
    replies: tuple[str | LLMReply, ...] = ()
    source: Path | None = None

    @property
    def bundled(self) -> bool:
        """Whether the task ships with turnpress."""
        return self.source is not None and self.source.parent == TASKS_DIR

    def build_tools(self) -> dict[str, Tool]:
        """Fresh canned tools, by name."""
        return {spec.name: spec.build() for spec in self.tools}

    def scripted_llm(self) -> ScriptedLLM:
        """A :class:`ScriptedLLM` with the task's replies; ``TaskError`` if it has none."""
        if not self.replies:
            raise TaskError(f"task {self.name!r} has no scripted replies; pass an LLM "
                            f"(--llm openai:MODEL or anthropic:MODEL)")
        return ScriptedLLM(self.replies)

    def build_agent(self, llm: LLM | None = None, *, max_turns: int | None = None,
                    compression: Compression = INHERIT, **options: Any) -> Agent:
        """The task as an :class:`Agent`.

        ``llm`` defaults to the task's scripted replies; ``max_turns`` and
        ``compression`` override the task's. Other ``options`` go to ``Agent``
        (``system_prompt``, ``template_dirs``, ``on_turn``...).
        """
        return Agent(
            mission=self.mission,
            tools=self.build_tools(),
            data=copy.deepcopy(dict(self.data)),
            llm=llm if llm is not None else self.scripted_llm(),
            max_turns=self.max_turns if max_turns is None else max_turns,
            compression=self.compression if compression is INHERIT else compression,
            **options,
        )


# -- parsing -----------------------------------------------------------------------------


class _Parser:
    def __init__(self, where: str) -> None:
        self.where = where

    def error(self, field_name: str, problem: str) -> TaskError:
        return TaskError(f"{self.where}: {field_name}: {problem}")

    def check_value(self, value: Any, at: str) -> None:
        """TOML values the agent cannot hold (dates and times) are errors."""
        if isinstance(value, (datetime.date, datetime.time)):
            raise self.error(at, "dates and times are not supported; write them as strings")
        if isinstance(value, list):
            for i, item in enumerate(value):
                self.check_value(item, f"{at}[{i}]")
        elif isinstance(value, dict):
            for key, item in value.items():
                self.check_value(item, f"{at}.{key}")

    def unknown(self, table: Mapping[str, Any], allowed: tuple[str, ...], at: str) -> None:
        extra = [k for k in table if k not in allowed]
        if extra:
            raise self.error(at + extra[0], f"unknown key; valid keys: {', '.join(allowed)}")

    def get(self, table: Mapping[str, Any], key: str, kind: type | tuple[type, ...],
            default: Any, at: str = "") -> Any:
        if key not in table:
            if default is ...:
                raise self.error(at + key, "missing")
            return default
        value = table[key]
        if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            expected = {str: "a string", int: "an integer", dict: "a table",
                        list: "an array"}.get(kind, "a valid value")  # type: ignore[call-overload]
            raise self.error(at + key, f"expected {expected}, got {value!r:.60}")
        return value

    def tool(self, name: str, table: Any) -> CannedToolSpec:
        at = f"tools.{name}."
        if not isinstance(table, dict):
            raise self.error(f"tools.{name}", "expected a table")
        self.unknown(table, _TOOL_KEYS, at)
        params = self.get(table, "params", dict, {}, at)
        for pname, label in params.items():
            if not isinstance(label, str):
                raise self.error(f"{at}params.{pname}", f"expected a type label string, "
                                                        f"got {label!r:.60}")
        given = [k for k in ("result", "results", "error") if k in table]
        if len(given) > 1:
            raise self.error(at + given[1], "give only one of result, results, error")
        results = self.get(table, "results", list, None, at)
        self.check_value(table.get("result"), at + "result")
        self.check_value(results, at + "results")
        return CannedToolSpec(
            name=name,
            description=self.get(table, "description", str, "", at),
            params=params,
            returns=self.get(table, "returns", str, "any", at),
            result=table.get("result"),
            results=None if results is None else tuple(results),
            error=self.get(table, "error", str, None, at),
        )

    def reply(self, value: Any, i: int) -> str | LLMReply:
        if isinstance(value, str):
            return value
        if isinstance(value, dict):
            at = f"replies[{i}]."
            self.unknown(value, ("text", "usage"), at)
            text = self.get(value, "text", str, ..., at)
            usage = self.get(value, "usage", dict, None, at)
            if usage is not None:
                self.unknown(usage, USAGE_KEYS, at + "usage.")
            if usage is not None and not all(
                    isinstance(v, int) and not isinstance(v, bool) for v in usage.values()):
                raise self.error(at + "usage", "token counts must be integers")
            if usage is None:
                return text
            reply = LLMReply(text, usage)
            try:
                reply.billed()
            except ValueError as exc:
                raise self.error(at + "usage", str(exc).replace("the LLM reported ", "")) \
                    from None
            return reply
        raise self.error(f"replies[{i}]", f"expected a string or a table with text, "
                                          f"got {value!r:.60}")

    def task(self, doc: Mapping[str, Any], default_name: str, source: Path | None) -> Task:
        self.unknown(doc, _TASK_KEYS, "")
        max_turns = self.get(doc, "max_turns", int, 5)
        if max_turns < 1:
            raise self.error("max_turns", f"must be at least 1, got {max_turns}")
        compression = self.get(doc, "compression", (str, bool), True)
        try:
            normalize(compression)
        except ValueError as exc:
            raise self.error("compression", str(exc)) from None
        data = self.get(doc, "data", dict, {})
        self.check_value(data, "data")
        mission = self.get(doc, "mission", str, ...)
        try:
            expand_mission(mission, data)
        except ValueError as exc:
            raise self.error("mission", f"{exc}; add the value under [data] in this "
                                        f"file") from None
        tools = self.get(doc, "tools", dict, {})
        replies = self.get(doc, "replies", list, [])
        return Task(
            name=self.get(doc, "name", str, default_name),
            mission=mission,
            description=self.get(doc, "description", str, ""),
            max_turns=max_turns,
            compression=compression,
            data=data,
            tools=tuple(self.tool(name, spec) for name, spec in tools.items()),
            replies=tuple(self.reply(r, i) for i, r in enumerate(replies)),
            source=source,
        )


def parse_task(text: str, *, name: str = "task", where: str = "task",
               source: Path | None = None) -> Task:
    """A :class:`Task` from TOML text; errors name ``where`` and the field."""
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise TaskError(f"{where}: invalid TOML: {exc}") from None
    return _Parser(where).task(doc, name, source)


def bundled_task_names() -> list[str]:
    """The names of the bundled tasks, sorted."""
    return sorted(p.stem for p in TASKS_DIR.glob("*.toml"))


def bundled_task_path(name: str) -> Path:
    """The file of bundled task ``name``; ``TaskError`` listing the names if unknown."""
    path = TASKS_DIR / f"{name}.toml"
    if not path.is_file():
        raise TaskError(f"unknown task {name!r}; bundled tasks: "
                        f"{', '.join(bundled_task_names())} (or give a path to a TASK.toml)")
    return path


def load_task(spec: str | os.PathLike[str] | None = None) -> Task:
    """Load a task: a path to a ``.toml`` file, or the name of a bundled task.

    ``None`` loads :data:`DEFAULT_TASK`. Raises :class:`TaskError` for an unknown
    name, an unreadable file, invalid TOML or an invalid field.
    """
    spec = DEFAULT_TASK if spec is None else spec
    path = Path(spec)
    if not path.is_file():
        if isinstance(spec, str) and not spec.endswith(".toml") and os.sep not in spec:
            path = bundled_task_path(spec)
        else:
            raise TaskError(f"{spec}: no such task file")
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise TaskError(f"{path}: cannot read task file: {exc}") from None
    return parse_task(text, name=path.stem, where=str(path), source=path.resolve())
