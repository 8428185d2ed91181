"""Reading turnpress's own trace JSON, strictly: :func:`trace_from_dict`.

Every malformed input is a :class:`~turnpress.core.errors.TraceError` naming where
(file, line or turn) and the field; versions 1 and 2 of the format
(:mod:`turnpress.core.trace_json`) give the same turns.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping
from typing import Any

from turnpress.core import codec
from turnpress.core.errors import TraceError, quote
from turnpress.core.model import (
    Failure,
    Memory,
    Tool,
    ToolCall,
    Turn,
    Usage,
)
from turnpress.core.trace_json import READ_VERSIONS, TRACE_VERSION
from turnpress.core.trace_model import Trace

__all__ = ["MAX_TURNS", "too_deep", "trace_from_dict"]


_TRACE_KEYS = ("version", "name", "mission", "system_prompt", "max_turns", "tools", "data",
               "turns", "source", "preamble", "skipped")
_TURN_KEYS = ("number", "success", "program", "raw_response", "result", "prints",
              "tool_calls", "messages", "usage")
_V1_MEMORY_KEYS = ("memory", "docs")
_V2_MEMORY_KEYS = ("memory_set", "memory_removed", "memory_order", "docs_set", "docs_removed")
_CALL_KEYS = ("name", "args", "result")
#: Most turns (and max_turns) a trace may declare.
MAX_TURNS = 1_000_000


class _Reader:
    """Reads one trace dict, naming the place of every problem."""

    def __init__(self, where: str) -> None:
        self.where = where
        self.version = TRACE_VERSION
        self.memory: dict[str, Any] = {}
        self.docs: dict[str, str] = {}

    def fail(self, field_name: str, problem: str, turn: int | None = None) -> TraceError:
        at = f"{self.where}: turn {turn}: " if turn is not None else f"{self.where}: "
        return TraceError(f"{at}field {quote(field_name)}: {problem}")

    def known(self, obj: Mapping[str, Any], keys: Iterable[str], what: str,
              turn: int | None = None, prefix: str = "") -> None:
        allowed = set(keys)
        for key in obj:
            if key not in allowed:
                near = difflib.get_close_matches(str(key), sorted(allowed), 1)
                hint = f"; did you mean {near[0]!r}?" if near else ""
                raise self.fail(prefix + str(key), f"unknown field in {what} (version "
                                f"{self.version} {what}s have: {', '.join(keys)}){hint}",
                                turn)

    def get(self, obj: Mapping[str, Any], key: str, kind: type | tuple[type, ...],
            turn: int | None = None, default: Any = ..., prefix: str = "") -> Any:
        if key not in obj:
            if default is not ...:
                return default
            raise self.fail(prefix + key, "missing", turn)
        value = obj[key]
        kinds = kind if isinstance(kind, tuple) else (kind,)
        if str in kinds and isinstance(value, dict) and list(value) == ["$str"]:
            value = self.text(value, prefix + key, turn)
        if not isinstance(value, kind) or (isinstance(value, bool) and bool not in kinds):
            names = " or ".join(_json_kind(k.__name__) for k in kinds)
            raise self.fail(prefix + key, f"expected {names}, got "
                                          f"{_json_kind(type(value).__name__)} "
                                          f"{_short(value)}", turn)
        return value

    def value(self, raw: Any, field_name: str, turn: int | None = None) -> Any:
        try:
            return codec.decode_value(raw, field_name)
        except codec.ValueCodecError as exc:
            raise self.fail(exc.path, exc.problem, turn) from None

    def names(self, raw: Any, field_name: str, turn: int | None = None) -> dict[str, Any]:
        """A map of names to values (``data``, a v1 turn's ``memory``, ``memory_set``)."""
        value = self.value(raw, field_name, turn)
        if not isinstance(value, dict):
            raise self.fail(field_name, f"expected a map of names to values, got "
                                        f"{_short(raw)}", turn)
        for name in value:
            if not isinstance(name, str):
                raise self.fail(field_name, f"names must be strings, got {_short(name)}", turn)
        return value

    def strings(self, raw: Any, field_name: str, turn: int | None = None) -> list[str]:
        if not isinstance(raw, list):
            raise self.fail(field_name, f"expected a list of names, got {_short(raw)}", turn)
        for i, s in enumerate(raw):
            if not isinstance(s, str):
                raise self.fail(f"{field_name}[{i}]", f"expected a string, got {_short(s)}",
                                turn)
        return raw

    def text_map(self, raw: Any, field_name: str, turn: int | None = None) -> dict[str, str]:
        if not isinstance(raw, dict):
            raise self.fail(field_name, f"expected an object of name -> docstring, got "
                                        f"{_short(raw)}", turn)
        return {name: self.text(doc, f"{field_name}.{name}", turn)
                for name, doc in raw.items()}

    def text(self, raw: Any, field_name: str, turn: int | None = None) -> str:
        """A string, or the ``{"$str": [...]}`` form of one holding lone surrogates."""
        try:
            return codec.decode_text(raw, field_name)
        except codec.ValueCodecError as exc:
            raise self.fail(field_name, exc.problem, turn) from None

    def trace(self, obj: Any, default_name: str) -> Trace:
        if not isinstance(obj, dict):
            raise TraceError(f"{self.where}: expected a JSON object for a trace, got "
                             f"{_json_kind(type(obj).__name__)}")
        version = obj.get("version", 1)
        if isinstance(version, bool) or version not in READ_VERSIONS:
            raise self.fail("version", f"unsupported trace version {_short(version)}; this "
                                       f"turnpress reads versions "
                                       f"{' and '.join(map(str, READ_VERSIONS))}")
        self.version = version
        self.known(obj, _TRACE_KEYS, "trace")
        mission = self.get(obj, "mission", str)
        system_prompt = self.get(obj, "system_prompt", str, default="")
        max_turns = self.get(obj, "max_turns", int)
        if not 1 <= max_turns <= MAX_TURNS:
            raise self.fail("max_turns", f"must be from 1 to {MAX_TURNS}, got "
                                         f"{_short(max_turns)}")
        raw_tools = self.get(obj, "tools", dict, default={})
        tools = {}
        for name, spec in raw_tools.items():
            tools[name] = self.tool(name, spec)
        data = self.names(self.get(obj, "data", dict, default={}), "data")
        raw_turns = self.get(obj, "turns", list)
        if len(raw_turns) > max_turns:
            raise self.fail("turns", f"{len(raw_turns)} turns but max_turns is {max_turns}")
        turns = tuple(self.turn(t, i) for i, t in enumerate(raw_turns, 1))
        # An optional field holding the value the writer leaves out reads as if it were
        # missing (else what loads would change on save + load): "name": "" is no name.
        name = self.get(obj, "name", str, default="") or default_name
        source = self.get(obj, "source", str, default="")
        preamble = self.messages(self.get(obj, "preamble", list, default=[]), "preamble")
        skipped = self.messages(self.get(obj, "skipped", list, default=[]), "skipped")
        try:
            return Trace(mission=mission, turns=turns, system_prompt=system_prompt,
                         max_turns=max_turns, tools=tools, data=data, name=name,
                         source=source, preamble=preamble, skipped=skipped)
        except (TypeError, ValueError) as exc:
            raise TraceError(f"{self.where}: {exc}") from None

    def tool(self, name: str, spec: Any) -> Tool:
        field_name = f"tools.{name}"
        if not isinstance(spec, dict):
            raise self.fail(field_name, f"expected an object, got {_short(spec)}")
        for key in ("description", "returns"):
            if key in spec and not isinstance(spec[key], str):
                raise self.fail(f"{field_name}.{key}", f"expected a string, got "
                                                       f"{_short(spec[key])}")
        try:
            return Tool.from_schema(name, spec)
        except (TypeError, ValueError, AttributeError) as exc:
            raise self.fail(field_name, str(exc)) from None

    def messages(self, raw: list[Any], field_name: str,
                 turn: int | None = None) -> tuple[dict[str, Any], ...]:
        """Provider messages stored as they were sent (JSON objects, kept verbatim)."""
        for i, m in enumerate(raw):
            if not isinstance(m, dict):
                raise self.fail(f"{field_name}[{i}]", f"expected a JSON object, got "
                                f"{_json_kind(type(m).__name__)}", turn)
            if too_deep(m, codec.MAX_JSON_DEPTH):
                raise self.fail(f"{field_name}[{i}]", f"nested deeper than "
                                                      f"{codec.MAX_JSON_DEPTH} levels", turn)
        return tuple(raw)

    def usage(self, obj: Mapping[str, Any], number: int) -> Usage | None:
        raw = self.get(obj, "usage", (dict, type(None)), number, default=None)
        if raw is None:
            return None
        keys = ("prompt_tokens", "cached_tokens", "cache_write_tokens",
                "summary_input_tokens", "summary_output_tokens")
        self.known(raw, keys, "usage", number, "usage.")
        counts = {}
        for key in keys:
            value = self.get(raw, key, int, number, default=0, prefix="usage.")
            if value < 0:
                raise self.fail(f"usage.{key}", f"must be >= 0, got {value}", number)
            counts[key] = value
        try:
            return Usage(**counts)
        except ValueError as exc:
            raise self.fail("usage", str(exc), number) from None

    def turn_memory(self, obj: Mapping[str, Any], number: int) -> Memory:
        if self.version == 1:
            memory = self.names(self.get(obj, "memory", dict, number, default={}), "memory",
                                number)
            docs = self.text_map(self.get(obj, "docs", dict, number, default={}), "docs",
                                 number)
            return Memory(memory, docs=docs)
        removed = self.strings(obj.get("memory_removed", []), "memory_removed", number)
        changed = self.names(self.get(obj, "memory_set", dict, number, default={}),
                             "memory_set", number)
        for name in removed:
            if name not in self.memory:
                raise self.fail("memory_removed", f"removes {quote(name)}, which the memory "
                                                  f"before this turn does not hold", number)
            if name in changed:
                raise self.fail("memory_removed", f"{quote(name)} is both set and removed", number)
            del self.memory[name]
        self.memory.update(changed)
        if "memory_order" in obj:
            order = self.strings(obj["memory_order"], "memory_order", number)
            if sorted(order) != sorted(self.memory) or len(set(order)) != len(order):
                raise self.fail("memory_order", "must list every name in memory exactly "
                                                "once", number)
            self.memory = {n: self.memory[n] for n in order}
        docs_removed = self.strings(obj.get("docs_removed", []), "docs_removed", number)
        docs_set = self.text_map(self.get(obj, "docs_set", dict, number, default={}),
                                 "docs_set", number)
        for name in docs_removed:
            if name not in self.docs or name in docs_set:
                raise self.fail("docs_removed", f"removes {quote(name)}, which has no docstring "
                                                f"before this turn (or is also set)", number)
            del self.docs[name]
        self.docs.update(docs_set)
        return Memory(self.memory, docs=self.docs)

    def turn(self, obj: Any, position: int) -> Turn:
        if not isinstance(obj, dict):
            raise self.fail(f"turns[{position - 1}]", "expected a JSON object", position)
        self.known(obj, _TURN_KEYS + (_V1_MEMORY_KEYS if self.version == 1
                                      else _V2_MEMORY_KEYS), "turn", position)
        number = self.get(obj, "number", int, position)
        if number != position:
            raise self.fail("number", f"turns must be numbered 1, 2, 3... in order; turn "
                                      f"{position} says {_short(number)}", position)
        success = self.get(obj, "success", bool, number)
        program = self.get(obj, "program", str, number)
        raw_response = self.get(obj, "raw_response", str, number, default=program)
        prints = [self.text(p, f"prints[{i}]", number)
                  for i, p in enumerate(self.get(obj, "prints", list, number, default=[]))]
        calls = []
        for i, raw in enumerate(self.get(obj, "tool_calls", list, number, default=[])):
            prefix = f"tool_calls[{i}]."
            if not isinstance(raw, dict):
                raise self.fail(f"tool_calls[{i}]", "expected a JSON object", number)
            self.known(raw, _CALL_KEYS, "tool call", number, prefix)
            args = self.value(self.get(raw, "args", (list, dict), number, [], prefix),
                              prefix + "args", number)
            if not isinstance(args, list):
                raise self.fail(prefix + "args", "expected a list of values", number)
            calls.append(ToolCall(self.get(raw, "name", str, number, prefix=prefix),
                                  tuple(args),
                                  self.value(raw.get("result"), prefix + "result", number)))
        memory = self.turn_memory(obj, number)
        result = self.value(obj.get("result"), "result", number)
        extra = {"messages": self.messages(self.get(obj, "messages", list, number, default=[]),
                                           "messages", number),
                 "usage": self.usage(obj, number)}
        if success:
            return Turn.succeeded(number, program, result, memory=memory, prints=prints,
                                  tool_calls=calls, raw_response=raw_response, **extra)
        if not isinstance(result, Failure):
            raise self.fail("result", 'a failed turn needs {"$fail": {"reason": ..., '
                                      '"message": ...}}', number)
        return Turn.failed(number, program, result, memory=memory, prints=prints,
                           tool_calls=calls, raw_response=raw_response, **extra)


def _short(value: Any) -> str:
    try:
        text = repr(value) if not isinstance(value, int) or value.bit_length() < 200 else (
            f"<integer of {value.bit_length()} bits>")
    except Exception:
        text = f"<{type(value).__name__}>"
    return text if len(text) <= 60 else text[:57] + "..."


def too_deep(obj: Any, cap: int) -> bool:
    """Whether a JSON value nests deeper than ``cap`` (checked without recursion)."""
    stack = [(obj, 1)]
    while stack:
        v, d = stack.pop()
        if d > cap:
            return True
        if isinstance(v, dict):
            stack.extend((x, d + 1) for x in v.values() if isinstance(x, (dict, list)))
        elif isinstance(v, list):
            stack.extend((x, d + 1) for x in v if isinstance(x, (dict, list)))
    return False


def _json_kind(py_name: str) -> str:
    return {"str": "a string", "int": "an integer", "bool": "true/false", "list": "a list",
            "dict": "an object", "float": "a number", "NoneType": "null"}.get(py_name, py_name)


def trace_from_dict(obj: Any, where: str = "trace", name: str = "") -> Trace:
    """Build a :class:`Trace` from its JSON-ready form; errors mention ``where``."""
    return _Reader(where).trace(obj, name)
