"""The data turnpress works on: turns, tool calls, failures and PTC-Lisp values.

Everything here is immutable once built, so a list of turns can be shared between
strategies, processes and threads without anyone changing it under another's feet.
"""

from __future__ import annotations

import inspect
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, TypedDict

from turnpress.core.frozen import FrozenMap, HashableMap, Memory, freeze_memory

__all__ = [
    "INSTRUCTION_ROLES",
    "MESSAGE_ROLES",
    "Failure",
    "Fn",
    "FrozenMap",
    "HashableMap",
    "Keyword",
    "Memory",
    "Message",
    "Tool",
    "ToolCall",
    "Turn",
    "Usage",
    "coerce_tools",
]


#: every role a message may have (OpenAI chat shape; ``developer`` is OpenAI's newer
#: name for ``system``)
MESSAGE_ROLES = ("system", "developer", "user", "assistant", "tool")
#: the roles of instruction messages (a system prompt), not of conversation turns
INSTRUCTION_ROLES = ("system", "developer")


class _MessageBase(TypedDict):
    role: Literal["system", "developer", "user", "assistant", "tool"]
    content: Any


class Message(_MessageBase, total=False):
    """One chat message as a strategy returns it.

    A PTC-Lisp prompt only uses ``role`` (system, user, assistant) and a string
    ``content``. A prompt replayed from an imported tool-calling transcript keeps
    the provider's own fields (OpenAI chat shape): ``tool_calls`` on assistant
    messages (whose ``content`` may then be ``None``), ``role: "tool"`` messages
    with ``tool_call_id``, ``name``, and list-of-parts ``content``.
    """

    tool_calls: list[dict[str, Any]]
    tool_call_id: str
    name: str


@dataclass(frozen=True, order=True)
class Keyword:
    """A Clojure keyword such as ``:active``; ``Keyword("a") == Keyword("a")``."""

    name: str

    def __post_init__(self) -> None:
        if not isinstance(self.name, str):
            raise TypeError(f"Keyword name must be a string, got {type(self.name).__name__}")
        if self.name.startswith(":"):
            object.__setattr__(self, "name", self.name[1:])

    def __str__(self) -> str:
        return f":{self.name}"


@dataclass(frozen=True)
class Fn:
    """A user-defined function value (a ``defn`` or ``fn`` closure).

    ``params`` are its parameter names, ``doc`` its docstring and ``return_type``
    the type label of the value it returned last, if it was ever called. The
    interpreter's closures are subclasses that also carry a body.
    """

    params: tuple[str, ...] = ()
    doc: str | None = None
    return_type: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "params", tuple(self.params))


@dataclass(frozen=True)
class ToolCall:
    """One call of a tool: its name, the arguments in order, and what it returned."""

    name: str
    args: tuple[Any, ...] = ()
    result: Any = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "args", tuple(self.args))


@dataclass(frozen=True)
class Failure:
    """Why a turn failed: a short machine ``reason`` and a human ``message``."""

    reason: str
    message: str


@dataclass(frozen=True)
class Usage:
    """What the provider billed for the LLM call that produced a turn (input side).

    ``prompt_tokens`` is the whole prompt, cached part included; ``cached_tokens``
    were read from the provider's prompt cache; ``cache_write_tokens`` were written
    to it (Anthropic ``cache_creation_input_tokens``; 0 elsewhere). Counts are in
    the provider's own tokenizer. ``summary_input_tokens`` and
    ``summary_output_tokens`` are the summarization calls a summarizing strategy made
    to build this turn's prompt (``summary-compaction``; 0 otherwise), billed beside it.
    """

    prompt_tokens: int
    cached_tokens: int = 0
    cache_write_tokens: int = 0
    summary_input_tokens: int = 0
    summary_output_tokens: int = 0

    def __post_init__(self) -> None:
        for name in ("prompt_tokens", "cached_tokens", "cache_write_tokens",
                     "summary_input_tokens", "summary_output_tokens"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise TypeError(f"Usage.{name} must be a non-negative integer, got {value!r}")
        if self.cached_tokens + self.cache_write_tokens > self.prompt_tokens:
            raise ValueError(f"Usage: cached ({self.cached_tokens}) + written "
                             f"({self.cache_write_tokens}) tokens exceed the prompt's "
                             f"{self.prompt_tokens}")

    def to_dict(self) -> dict[str, int]:
        """``{"prompt_tokens", "cached_tokens", "cache_write_tokens"}``, plus the summary
        counts when they are not 0."""
        names = ("prompt_tokens", "cached_tokens", "cache_write_tokens")
        if self.summary_input_tokens or self.summary_output_tokens:
            names += ("summary_input_tokens", "summary_output_tokens")
        return {name: getattr(self, name) for name in names}


@dataclass(frozen=True)
class Turn:
    """One LLM interaction cycle: the program it ran and everything it learned.

    Build one with :meth:`succeeded` or :meth:`failed`. A failed turn's ``result``
    is its :class:`Failure`. Lists passed in are stored as tuples and ``memory``
    is copied into a read-only mapping, so a turn never changes once made.
    """

    number: int
    program: str
    result: Any
    prints: tuple[str, ...]
    tool_calls: tuple[ToolCall, ...]
    memory: Mapping[str, Any]
    success: bool
    raw_response: str
    #: an imported transcript turn's original messages, as sent (OpenAI chat shape):
    #: its assistant message, then the tool/user messages that answered it; empty
    #: for a PTC-Lisp turn
    messages: tuple[Mapping[str, Any], ...] = ()
    #: the provider's billed usage of the call that produced this turn, if recorded
    usage: Usage | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "prints", tuple(self.prints))
        object.__setattr__(self, "messages", tuple(self.messages))
        if self.usage is not None and not isinstance(self.usage, Usage):
            raise TypeError(f"usage must be a Usage or None, got {type(self.usage).__name__}")
        calls = tuple(self.tool_calls)
        for call in calls:
            if not isinstance(call, ToolCall):
                raise TypeError(f"tool_calls must hold ToolCall objects, got {call!r}")
        object.__setattr__(self, "tool_calls", calls)
        object.__setattr__(self, "memory", freeze_memory(self.memory))
        if not self.success and not isinstance(self.result, Failure):
            raise TypeError("a failed turn's result must be a Failure; use Turn.failed()")

    @classmethod
    def succeeded(
        cls,
        number: int,
        program: str,
        result: Any,
        *,
        memory: Mapping[str, Any],
        prints: typing.Iterable[str] = (),
        tool_calls: typing.Iterable[ToolCall] = (),
        raw_response: str | None = None,
        messages: typing.Iterable[Mapping[str, Any]] = (),
        usage: Usage | None = None,
    ) -> Turn:
        """A turn whose program ran to the end (or to ``(return ...)``)."""
        return cls(
            number=number,
            program=program,
            result=result,
            prints=tuple(prints),
            tool_calls=tuple(tool_calls),
            memory=memory,
            success=True,
            raw_response=program if raw_response is None else raw_response,
            messages=tuple(messages),
            usage=usage,
        )

    @classmethod
    def failed(
        cls,
        number: int,
        program: str,
        error: Failure,
        *,
        memory: Mapping[str, Any],
        prints: typing.Iterable[str] = (),
        tool_calls: typing.Iterable[ToolCall] = (),
        raw_response: str | None = None,
        messages: typing.Iterable[Mapping[str, Any]] = (),
        usage: Usage | None = None,
    ) -> Turn:
        """A turn whose program failed with ``error``."""
        if not isinstance(error, Failure):
            raise TypeError(f"error must be a Failure, got {type(error).__name__}")
        return cls(
            number=number,
            program=program,
            result=error,
            prints=tuple(prints),
            tool_calls=tuple(tool_calls),
            memory=memory,
            success=False,
            raw_response=program if raw_response is None else raw_response,
            messages=tuple(messages),
            usage=usage,
        )

    @property
    def error(self) -> Failure | None:
        """The :class:`Failure` of a failed turn, else ``None``."""
        return None if self.success else self.result


_PY_TYPE_LABELS: dict[Any, str] = {
    str: "string",
    int: "integer",
    float: "float",
    bool: "boolean",
    list: "list",
    tuple: "list",
    dict: "map",
    set: "set",
    frozenset: "set",
    type(None): "nil",
    Keyword: "keyword",
    Any: "any",
}

_JSON_TYPE_LABELS = {
    "string": "string",
    "integer": "integer",
    "number": "float",
    "boolean": "boolean",
    "array": "list",
    "object": "map",
    "null": "nil",
}


def _label_for_annotation(annotation: Any) -> str:
    if annotation is inspect.Parameter.empty:
        return "any"
    if annotation in _PY_TYPE_LABELS:
        return _PY_TYPE_LABELS[annotation]
    origin = typing.get_origin(annotation)
    if origin in _PY_TYPE_LABELS:
        return _PY_TYPE_LABELS[origin]
    if origin is not None and hasattr(origin, "__mro__"):
        for base, label in _PY_TYPE_LABELS.items():
            if isinstance(base, type) and issubclass(origin, base):
                return label
    if isinstance(annotation, type):
        for base, label in _PY_TYPE_LABELS.items():
            if isinstance(base, type) and issubclass(annotation, base):
                return label
    return "any"


@dataclass(frozen=True)
class Tool:
    """A tool the agent can call as ``(tool/NAME ...)``.

    ``params`` maps each parameter name to its type label, in call order;
    ``returns`` is the label of what it returns; ``fn`` is the Python callable
    that does the work (``None`` for a tool known only by its signature, as in
    a trace). ``schema`` is the provider's definition as a request gave it (the
    function body: ``{"name", "description", "parameters"}`` or Anthropic's
    ``input_schema``), kept so that a transcript renders as the request it was.
    """

    name: str
    params: Mapping[str, str] = field(default_factory=dict)
    returns: str = "any"
    description: str = ""
    fn: Callable[..., Any] | None = field(default=None, compare=False, repr=False)
    schema: Mapping[str, Any] | None = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "params", FrozenMap(self.params))

    @classmethod
    def from_function(cls, f: Callable[..., Any], name: str | None = None) -> Tool:
        """Describe a Python function as a tool.

        Parameter and return labels come from the type hints; the description is
        the first line of the docstring; the name defaults to the function's name
        with ``_`` turned into ``-`` (``get_inventory`` -> ``get-inventory``).
        """
        try:
            hints = typing.get_type_hints(f)
        except Exception:
            hints = {}
        signature = inspect.signature(f)
        params = {
            p.name.replace("_", "-"): _label_for_annotation(hints.get(p.name, p.annotation))
            for p in signature.parameters.values()
            if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
        }
        returns = _label_for_annotation(hints.get("return", signature.return_annotation))
        doc = inspect.getdoc(f) or ""
        description = doc.strip().splitlines()[0].strip() if doc.strip() else ""
        tool_name = name or getattr(f, "__name__", "tool").replace("_", "-")
        return cls(tool_name, params, returns, description, f)

    @classmethod
    def from_schema(cls, name: str, schema: Mapping[str, Any]) -> Tool:
        """Build a tool from a JSON-schema style dict or a trace-file tool entry.

        Accepts ``{"description": ..., "parameters": {"properties": {...}}}``
        (OpenAI function style) and ``{"description", "params", "returns"}``
        (the trace file's own shape, with the provider's ``schema`` when it kept
        one). A provider definition is kept as :attr:`schema`.
        """
        if not isinstance(schema, Mapping):
            raise TypeError(f"tool {name!r}: expected a mapping, got {type(schema).__name__}")
        description = str(schema.get("description") or "")
        if "params" in schema:
            params = schema["params"] or {}
            if not isinstance(params, Mapping) or not all(
                isinstance(v, str) for v in params.values()
            ):
                raise TypeError(f"tool {name!r}: 'params' must map names to type labels")
            params = dict(params)
        else:
            parameters = schema.get("parameters") or schema.get("input_schema") or {}
            if not isinstance(parameters, Mapping):
                raise TypeError(f"tool {name!r}: 'parameters' must be a JSON-schema object, "
                                f"got {type(parameters).__name__}")
            props = parameters.get("properties") or {}
            if not isinstance(props, Mapping):
                raise TypeError(f"tool {name!r}: 'parameters.properties' must be an object "
                                f"mapping parameter names to schemas, got "
                                f"{type(props).__name__}")
            params = {}
            for pname, pschema in props.items():
                jtype = pschema.get("type") if isinstance(pschema, Mapping) else None
                if isinstance(jtype, list):
                    jtype = next((t for t in jtype if t != "null"), None)
                params[pname] = _JSON_TYPE_LABELS.get(jtype, "any")
        returns = schema.get("returns", "any")
        if not isinstance(returns, str):
            raise TypeError(f"tool {name!r}: 'returns' must be a type label string")
        kept = schema.get("schema") if "params" in schema else (
            {k: v for k, v in schema.items() if k != "fn"}
            if "parameters" in schema or "input_schema" in schema else None)
        if kept is not None and not isinstance(kept, Mapping):
            raise TypeError(f"tool {name!r}: 'schema' must be an object")
        return cls(name, params, returns, description, schema.get("fn"),
                   dict(kept) if kept is not None else None)

    def to_dict(self) -> dict[str, Any]:
        """The trace-file shape: ``{"description", "params", "returns"}``, and the
        provider's ``schema`` when the tool has one."""
        out = {"description": self.description, "params": dict(self.params),
               "returns": self.returns}
        if self.schema is not None:
            out["schema"] = dict(self.schema)
        return out


def coerce_tools(tools: Mapping[str, Any] | None) -> dict[str, Tool]:
    """Turn a ``tools=`` argument into ``{name: Tool}``.

    Values may be :class:`Tool`, a plain callable, a JSON-schema dict, or any
    object with an ``as_tool(name) -> Tool`` method (an agent used as a tool).
    The mapping key is always the tool's name.
    """
    if tools is None:
        return {}
    if not isinstance(tools, Mapping):
        raise TypeError(
            f"tools must be a mapping of name -> Tool | callable | schema dict, "
            f"got {type(tools).__name__}"
        )
    out: dict[str, Tool] = {}
    for name, value in tools.items():
        if isinstance(value, Tool):
            out[name] = value if value.name == name else Tool(
                name, value.params, value.returns, value.description, value.fn)
        elif isinstance(value, Mapping):
            out[name] = Tool.from_schema(name, value)
        elif callable(getattr(value, "as_tool", None)):
            out[name] = value.as_tool(name)
        elif callable(value):
            out[name] = Tool.from_function(value, name=name)
        else:
            raise TypeError(
                f"tool {name!r}: expected a Tool, a callable or a schema dict, "
                f"got {type(value).__name__}"
            )
    return out
