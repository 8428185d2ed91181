"""Trace files: one agent run (JSON) or many (JSONL, one run a line).

A trace holds everything needed to re-render any turn's prompt under any
strategy: mission, system prompt, max turns, tools, data and the turns.
Values JSON cannot hold are tagged (``{"$kw": "a"}``, ``{"$set": [...]}``,
``{"$fn": {...}}``, ``{"$map": [[k, v], ...]}``, ``{"$fail": {...}}``,
``{"$float": "nan"}``, ``{"$int": "0x..."}``, ``{"$str": [...]}``, ``{"$regex": ...}``,
``{"$graph": [...]}`` with ``{"$ref": i}`` for shared or very deep values; see
:mod:`turnpress.core.codec`), so loading then saving is lossless.

Version 2 (written by default) stores each turn's memory as changes: the names
set (defined or redefined) and removed, and the same for docstrings, so a file
grows with the run's new data, not with turns x memory. Version 1 (every turn's
whole memory) is still read, and both give the same turns.

Loading is strict: every malformed input is a :class:`TraceError` naming the file,
the line or turn, and the field; nothing malformed is accepted silently.
"""

from __future__ import annotations

import difflib
import json
import os
import re
import secrets
import shutil
import sys
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

from turnpress.core import codec
from turnpress.core.model import (
    Failure,
    Memory,
    Message,
    Tool,
    ToolCall,
    Turn,
    Usage,
    coerce_tools,
)

__all__ = [
    "READ_VERSIONS",
    "TRACE_VERSION",
    "Trace",
    "TraceError",
    "append_jsonl",
    "decode_value",
    "encode_value",
    "is_native_trace",
    "iter_traces",
    "load_trace",
    "read_any",
    "save_trace",
    "save_traces",
    "trace_file",
    "trace_formats",
    "trace_from_dict",
    "trace_from_json_line",
    "trace_to_dict",
]

#: The version :func:`save_trace` writes.
TRACE_VERSION = 2
#: The versions :func:`load_trace` reads.
READ_VERSIONS = (1, 2)


class TraceError(ValueError):
    """A trace file that cannot be read; the message says where and what is wrong."""


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
        from turnpress.core.compression import prompt_arguments

        return prompt_arguments(self, n)

    def prompt(self, n: int, compression: Any = True,
               template_dirs: Iterable[str | os.PathLike[str]] = ()) -> list[Message]:
        """The messages sent for turn ``n`` (1-based): ``render(turns[:n-1], ...)``."""
        from turnpress.core.compression import render

        return render(**self.prompt_arguments(n), compression=compression,
                      template_dirs=template_dirs)


# -- values ------------------------------------------------------------------------------


def encode_value(value: Any, where: str = "value") -> Any:
    """A JSON-ready form of ``value`` with tags for what JSON lacks (see
    :mod:`turnpress.core.codec`); a type no trace can hold raises :class:`TraceError`."""
    try:
        return codec.encode_value(value, where)
    except codec.ValueCodecError as exc:
        raise TraceError(str(exc)) from None


def decode_value(value: Any, where: str = "value") -> Any:
    """The inverse of :func:`encode_value`; raises ``TraceError`` naming ``where``."""
    try:
        return codec.decode_value(value, where)
    except codec.ValueCodecError as exc:
        raise TraceError(str(exc)) from None


# -- turns and traces --------------------------------------------------------------------


class _Encodings:
    """Encodes the values of one trace, each collection object once: a run's result is
    often also in its memory, and a big value should cost its encoding once."""

    def __init__(self) -> None:
        self.done: dict[int, tuple[Any, Any]] = {}  # id -> (value kept alive, encoding)

    def encode(self, value: Any, where: str) -> Any:
        if not isinstance(value, (list, tuple, Mapping, set, frozenset)):
            return encode_value(value, where)
        found = self.done.get(id(value))
        if found is not None and found[0] is value:
            return found[1]
        encoded = encode_value(value, where)
        self.done[id(value)] = (value, encoded)
        return encoded


def _names_to_dict(values: Mapping[str, Any], where: str,
                   encodings: _Encodings | None = None) -> Any:
    encode = (encodings or _Encodings()).encode
    out = {}
    for name, value in values.items():
        if not isinstance(name, str):
            raise TraceError(f"{where}: names must be strings, got {name!r:.60}")
        out[name] = encode(value, f"{where}.{name}")
    return _names_json(out)


def _names_json(encoded: dict[str, Any]) -> Any:
    """Names and their encoded values as a JSON object, or as ``{"$map": [[name, value],
    ...]}`` when a name starts with ``$`` (``$kw`` is a legal name, and a tag too)."""
    if any(name.startswith("$") for name in encoded):
        return {"$map": [[name, value] for name, value in encoded.items()]}
    return encoded


def _same_json(a: Any, b: Any) -> bool:
    """Whether two JSON-ready values are written alike (``==`` takes false for 0 and
    1 for 1.0: a name that changed from one to the other would not be written)."""
    if a is b:
        return True
    return a == b and json.dumps(a) == json.dumps(b)


class _MemoryDiff:
    """Writes version 2 memory: per turn, the names set (new or changed) and removed."""

    def __init__(self, encodings: _Encodings) -> None:
        self.encodings = encodings
        self.values: dict[str, tuple[Any, Any]] = {}  # name -> (value, its encoding)
        self.docs: dict[str, str] = {}

    def changes(self, memory: Mapping[str, Any], where: str) -> dict[str, Any]:
        out: dict[str, Any] = {}
        changed: dict[str, Any] = {}
        current: dict[str, tuple[Any, Any]] = {}
        for name, value in memory.items():
            if not isinstance(name, str):
                raise TraceError(f"{where}: memory names must be strings, got {name!r:.60}")
            before = self.values.get(name)
            if before is not None and before[0] is value:
                current[name] = before
                continue
            encoded = self.encodings.encode(value, f"{where}: memory.{name}")
            current[name] = (value, encoded)
            if before is None or not _same_json(before[1], encoded):
                changed[name] = encoded
        removed = [n for n in self.values if n not in memory]
        if changed:
            out["memory_set"] = _names_json(changed)
        if removed:
            out["memory_removed"] = removed
        expected = [n for n in self.values if n in memory] + [
            n for n in memory if n not in self.values]
        if list(memory) != expected:
            out["memory_order"] = list(memory)
        self.values = current
        docs = dict(getattr(memory, "docs", None) or {})
        docs_set = {n: d for n, d in docs.items() if self.docs.get(n) != d}
        docs_removed = [n for n in self.docs if n not in docs]
        if docs_set:
            out["docs_set"] = {n: codec.encode_text(d) for n, d in docs_set.items()}
        if docs_removed:
            out["docs_removed"] = docs_removed
        self.docs = docs
        return out


def _turn_to_dict(turn: Turn, diff: _MemoryDiff | None = None,
                  encodings: _Encodings | None = None) -> dict[str, Any]:
    where = f"turn {turn.number}"
    encode = (encodings or _Encodings()).encode
    out: dict[str, Any] = {
        "number": turn.number,
        "success": turn.success,
        "program": codec.encode_text(turn.program),
        "raw_response": codec.encode_text(turn.raw_response),
        "result": encode(turn.result, f"{where}: result"),
        "prints": [codec.encode_text(p) for p in turn.prints],
        "tool_calls": [
            {"name": codec.encode_text(c.name),
             "args": encode_value(list(c.args), f"{where}: tool_calls.args"),
             "result": encode(c.result, f"{where}: tool_calls.result")}
            for c in turn.tool_calls
        ],
    }
    if diff is not None:
        out.update(diff.changes(turn.memory, where))
    else:
        out["memory"] = _names_to_dict(turn.memory, f"{where}: memory", encodings)
        docs = getattr(turn.memory, "docs", None)
        if docs:
            out["docs"] = {n: codec.encode_text(d) for n, d in docs.items()}
    if turn.messages:
        out["messages"] = [dict(m) for m in turn.messages]
    if turn.usage is not None:
        out["usage"] = turn.usage.to_dict()
    return out


def trace_to_dict(trace: Trace, version: int = TRACE_VERSION) -> dict[str, Any]:
    """The JSON-ready form of a trace: version 2 (memory as per-turn changes) by
    default, or version 1 (every turn's whole memory)."""
    if version not in READ_VERSIONS or isinstance(version, bool):
        raise ValueError(f"trace version must be one of {READ_VERSIONS}, got {version!r}")
    out: dict[str, Any] = {"version": version}
    if trace.name:
        out["name"] = codec.encode_text(trace.name)
    encodings = _Encodings()
    diff = _MemoryDiff(encodings) if version >= 2 else None
    out.update({
        "mission": codec.encode_text(trace.mission),
        "system_prompt": codec.encode_text(trace.system_prompt),
        "max_turns": trace.max_turns,
        "tools": {name: tool.to_dict() for name, tool in trace.tools.items()},
        "data": _names_to_dict(trace.data, "data"),
        "turns": [_turn_to_dict(t, diff, encodings) for t in trace.turns],
    })
    if trace.source:
        out["source"] = codec.encode_text(trace.source)
    if trace.preamble:
        out["preamble"] = [dict(m) for m in trace.preamble]
    if trace.skipped:
        out["skipped"] = [dict(m) for m in trace.skipped]
    return out


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
        return TraceError(f"{at}field {field_name!r}: {problem}")

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
            if _too_deep(m, codec.MAX_JSON_DEPTH):
                raise self.fail(f"{field_name}[{i}]", f"nested deeper than "
                                                      f"{codec.MAX_JSON_DEPTH} levels", turn)
        return tuple(raw)

    def usage(self, obj: Mapping[str, Any], number: int) -> Usage | None:
        raw = self.get(obj, "usage", (dict, type(None)), number, default=None)
        if raw is None:
            return None
        self.known(raw, ("prompt_tokens", "cached_tokens", "cache_write_tokens"), "usage",
                   number, "usage.")
        counts = {}
        for key in ("prompt_tokens", "cached_tokens", "cache_write_tokens"):
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
                raise self.fail("memory_removed", f"removes {name!r}, which the memory "
                                                  f"before this turn does not hold", number)
            if name in changed:
                raise self.fail("memory_removed", f"{name!r} is both set and removed", number)
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
                raise self.fail("docs_removed", f"removes {name!r}, which has no docstring "
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


def _too_deep(obj: Any, cap: int) -> bool:
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


NATIVE_FORMAT = "turnpress"
# any of these keys marks a (possibly broken) turnpress trace; no transcript format has them
_NATIVE_KEYS = ("version", "mission", "max_turns", "turns")


def is_native_trace(obj: Any) -> bool:
    """Whether a parsed JSON value claims to be turnpress's own trace format."""
    return isinstance(obj, dict) and any(k in obj for k in _NATIVE_KEYS)


def trace_formats() -> list[str]:
    """The formats :func:`load_trace` reads: turnpress's own, then each registered reader."""
    from turnpress.core.registry import get_registry

    return [NATIVE_FORMAT, *get_registry().trace_readers()]


def read_any(obj: Any, path: Path, where: str, name: str) -> Trace:
    """One run from one parsed JSON value: turnpress's own format, or the first
    registered transcript reader whose ``detect`` accepts it.

    A value with a top-level ``"version"`` or ``"turns"`` is read as turnpress's own
    format; one with only ``"mission"`` or ``"max_turns"`` of those keys goes to the
    readers first (a third-party format may well have a mission), and is read as a
    (broken) turnpress trace only when no reader accepts it."""
    if isinstance(obj, dict) and ("version" in obj or "turns" in obj):
        return trace_from_dict(obj, where, name)
    from turnpress.core.registry import get_registry

    for reg in get_registry().trace_readers().values():
        detect, read = reg.value
        try:
            accepted = bool(detect(obj, path))
        except Exception:  # a detector that raises does not claim the file
            accepted = False
        if not accepted:
            continue
        try:
            trace = read(obj, where)
        except TraceError:
            raise
        except ValueError as exc:
            message = str(exc)  # a reader that names ``where`` itself, as documented
            raise TraceError(message if message.startswith(f"{where}:")
                             else f"{where}: {message}") from None
        if not isinstance(trace, Trace):
            raise TraceError(f"{where}: trace reader {reg.name!r} of {reg.plugin.source} "
                             f"returned {type(trace).__name__}, not a Trace")
        _check_message_depth(trace, where)
        if not trace.name:
            trace = _renamed(trace, name)
        return trace
    if is_native_trace(obj):
        return trace_from_dict(obj, where, name)
    raise TraceError(f"{where}: not a format turnpress reads; it reads: "
                     f"{', '.join(trace_formats())} (a turnpress trace needs \"version\", "
                     f"\"mission\", \"max_turns\" and \"turns\")")


def _check_message_depth(trace: Trace, where: str) -> None:
    """A transcript's messages obey the nesting cap a saved trace's do, so whatever a
    reader accepts can be saved and loaded back."""
    for i, m in enumerate(trace.preamble):
        if _too_deep(m, codec.MAX_JSON_DEPTH):
            raise TraceError(f"{where}: message {i}: nested deeper than "
                             f"{codec.MAX_JSON_DEPTH} levels")
    for turn in trace.turns:
        for m in turn.messages:
            if _too_deep(m, codec.MAX_JSON_DEPTH):
                raise TraceError(f"{where}: turn {turn.number}: a message nested deeper "
                                 f"than {codec.MAX_JSON_DEPTH} levels")


def _renamed(trace: Trace, name: str) -> Trace:
    from dataclasses import replace

    return replace(trace, name=name)


def _is_jsonl(path: Path) -> bool:
    return path.suffix.lower() in (".jsonl", ".ndjson")


class _BadConstant(ValueError):
    pass


def _reject_constant(name: str) -> Any:
    raise _BadConstant(f'{name} is not JSON; write {{"$float": "nan"}}, "inf" or "-inf"')


#: JSON nesting json.loads may recurse through (deeper input is a TraceError, never a
#: crash, even while another thread has raised the interpreter's recursion limit).
_JSON_RECURSION = 3000


def _loads(text: str) -> Any:
    limit = sys.getrecursionlimit()
    if limit <= _JSON_RECURSION:
        return json.loads(text, parse_constant=_reject_constant)
    depth, frame = 0, sys._getframe()
    while frame is not None:
        depth, frame = depth + 1, frame.f_back
    sys.setrecursionlimit(depth + _JSON_RECURSION)
    try:
        return json.loads(text, parse_constant=_reject_constant)
    finally:
        sys.setrecursionlimit(limit)


def _parse(text: str, where: str, line_offset: int = 0) -> Any:
    """One JSON value, every problem a one-line :class:`TraceError`."""
    try:
        return _loads(text)
    except json.JSONDecodeError as exc:
        at = f"{where}: " if line_offset else f"{where}: line {exc.lineno}: "
        message = exc.msg.removesuffix(" at")  # "Invalid control character at"
        raise TraceError(f"{at}invalid JSON at column {exc.colno}: {message}") from None
    except RecursionError:
        raise TraceError(f"{where}: JSON nested too deeply (values deeper than "
                         f"{codec.CHUNK_DEPTH} levels are written as a $graph)") from None
    except ValueError as exc:
        if isinstance(exc, _BadConstant):
            raise TraceError(f"{where}: {exc}") from None
        raise TraceError(f"{where}: a number too large to read (integers of more than "
                         f'4,300 digits are written {{"$int": "0x..."}})') from None


def _decode_utf8(data: bytes, where: str, first_line: int | None = None) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        if first_line is None:
            line = data[: exc.start].count(b"\n") + 1
            column = exc.start - data.rfind(b"\n", 0, exc.start)
            raise TraceError(f"{where}: line {line}: not UTF-8 text (byte "
                             f"0x{data[exc.start]:02x} at column {column})") from None
        raise TraceError(f"{where}: not UTF-8 text (byte 0x{data[exc.start]:02x} at "
                         f"column {exc.start + 1})") from None


def is_bare_name(name: str) -> bool:
    """Whether ``name`` may be a bundled trace's name rather than a path: no directory
    part and no ``.json``/``.jsonl`` ending."""
    return not (os.sep in name or "/" in name or name.endswith((".json", ".jsonl")))


def trace_file(path: str | os.PathLike[str]) -> Path:
    """``path`` as given, or, when no such file exists and it is a bare name (no
    directory, no ``.json``/``.jsonl`` ending), the bundled example trace of that name
    (``product-research``), as the command line accepts it."""
    p = Path(path)
    if p.exists() or not is_bare_name(os.fspath(path)):
        return p
    from turnpress.examples import example_trace_paths

    for candidate in example_trace_paths():
        if candidate.name.split(".")[0] == os.fspath(path):
            return candidate
    return p


def trace_from_json_line(line: str, path: Path, lineno: int, count: int) -> Trace:
    """The run on line ``lineno`` of the JSONL file ``path``, its ``count``-th run (named
    ``STEM#count`` when the run has no name); every problem a one-line
    :class:`TraceError` naming the file and line."""
    where = f"{path}: line {lineno}"
    return read_any(_parse(line, where, lineno), path, where, f"{path.stem}#{count}")


def iter_traces(path: str | os.PathLike[str]) -> Iterator[Trace]:
    """Yield every run in a JSON or JSONL trace file, reading JSONL line by line (a
    bundled trace's name is read as its file: :func:`trace_file`)."""
    p = trace_file(path)
    try:
        handle = p.open("rb")
    except OSError as exc:
        raise TraceError(f"{p}: cannot read trace file: {exc.strerror or exc}") from None
    with handle:
        if _is_jsonl(p):
            count = 0
            for lineno, raw in enumerate(handle, 1):
                if not raw.strip():
                    continue
                count += 1
                yield trace_from_json_line(_decode_utf8(raw, f"{p}: line {lineno}", lineno),
                                           p, lineno, count)
            if count == 0:
                raise TraceError(f"{p}: no trace in this file (it is empty)")
        else:
            try:
                data = handle.read()
            except OSError as exc:
                raise TraceError(f"{p}: cannot read trace file: {exc.strerror or exc}") \
                    from None
            obj = _parse(_decode_utf8(data, str(p)), str(p))
            yield read_any(obj, p, str(p), _stem(p))


def _stem(path: Path) -> str:
    """``run`` for ``run.json`` and for ``run.traj.json``."""
    name = path.name
    for suffix in (".traj.json", ".json"):
        if name.lower().endswith(suffix):
            return name[: -len(suffix)]
    return path.stem


def load_trace(path: str | os.PathLike[str]) -> Trace:
    """Load the one run in a trace file, or the bundled trace of that name (use
    :func:`iter_traces` for many runs)."""
    traces = iter_traces(path)
    first = next(traces)
    extra = next(traces, None)
    if extra is not None:
        raise TraceError(f"{path}: holds more than one run; use "
                         f"turnpress.core.trace.iter_traces() to read them all")
    return first


_SURROGATE = re.compile("[\ud800-\udfff]")


#: How deep in a trace's JSON form values start (``turns[i].memory_set.$map[j][1]``...).
_VALUE_DEPTH = 8


def _inline_graphs(obj: Any) -> tuple[Any, dict[str, Any], str]:
    """``obj`` with every ``{"$graph": ...}`` value (in the first :data:`_VALUE_DEPTH`
    levels, where values are) replaced by a placeholder string, the placeholders'
    values, and their nonce. An indented file writes each graph on one line, with the
    C JSON encoder: indented, a graph of a million refs is millions of lines written
    by the pure-Python encoder. Containers are copied where changed, never mutated."""
    nonce = secrets.token_hex(8)
    found: dict[str, Any] = {}

    def swap(v: Any, depth: int) -> Any:
        if not isinstance(v, (dict, list)) or depth > _VALUE_DEPTH:
            return v
        if isinstance(v, dict):
            if len(v) == 1 and "$graph" in v:
                token = f"@@turnpress-graph-{nonce}-{len(found)}@@"
                found[token] = v
                return token
            new = {k: swap(x, depth + 1) for k, x in v.items()}
            return v if all(new[k] is x for k, x in v.items()) else new
        items = [swap(x, depth + 1) for x in v]
        return v if all(y is x for x, y in zip(v, items, strict=True)) else items

    return swap(obj, 0), found, nonce


def _dumps(trace: Trace, version: int, indent: int | None) -> str:
    try:
        obj = trace_to_dict(trace, version)
        graphs: dict[str, Any] = {}
        if indent is not None:
            obj, graphs, nonce = _inline_graphs(obj)
        text = json.dumps(obj, indent=indent, ensure_ascii=False, allow_nan=False)
        if graphs:
            text = re.sub(f'"(@@turnpress-graph-{nonce}-[0-9]+@@)"', lambda m: json.dumps(
                graphs[m.group(1)], ensure_ascii=False, allow_nan=False), text)
    except ValueError as exc:  # NaN in verbatim transcript messages
        raise TraceError(f"trace {trace.name or '(unnamed)'}: cannot be written as JSON: "
                         f"{exc}") from None
    # a lone surrogate outside values (a printed line...) cannot be UTF-8: escape it
    if _SURROGATE.search(text) is not None:
        text = _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)
    return text


def save_trace(trace: Trace, path: str | os.PathLike[str],
               version: int = TRACE_VERSION) -> None:
    """Write one run: indented JSON, or a single line for a ``.jsonl`` path.

    ``version=1`` writes the old format (every turn's whole memory).
    """
    if _is_jsonl(Path(path)):
        save_traces([trace], path, version)
        return
    text = _dumps(trace, version, 2)
    Path(path).write_text(text + "\n", encoding="utf-8")


def save_traces(traces: Iterable[Trace], path: str | os.PathLike[str],
                version: int = TRACE_VERSION) -> None:
    """Write many runs as JSONL, one per line."""
    with Path(path).open("w", encoding="utf-8") as handle:
        for trace in traces:
            handle.write(_dumps(trace, version, None) + "\n")


def append_jsonl(path: str | os.PathLike[str], lines: BinaryIO) -> None:
    """Append the JSONL lines read from ``lines`` (a binary file) to the file ``path``
    (created if missing), ending its last line first when it has no newline, so each
    appended run starts a line of its own."""
    with Path(path).open("ab+") as handle:
        handle.seek(0, os.SEEK_END)
        if handle.tell() > 0:
            handle.seek(-1, os.SEEK_END)
            if handle.read(1) != b"\n":
                handle.write(b"\n")  # append mode: written at the end
        shutil.copyfileobj(lines, handle)
