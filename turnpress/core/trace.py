"""Trace files: one agent run (JSON) or many (JSONL, one run a line).

A trace holds everything needed to re-render any turn's prompt under any
strategy: mission, system prompt, max turns, tools, data and the turns.
Values JSON cannot hold are tagged (``{"$kw": "a"}``, ``{"$set": [...]}``,
``{"$fn": {...}}``, ``{"$map": [[k, v], ...]}``, ``{"$fail": {...}}``,
``{"$float": "nan"}``), so loading then saving is lossless. A broken file gets
a :class:`TraceError` naming the file, the line or turn, and the field.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from turnpress.core.model import (
    Failure,
    Fn,
    Keyword,
    Memory,
    Message,
    Tool,
    ToolCall,
    Turn,
    Usage,
    coerce_tools,
)

__all__ = [
    "TRACE_VERSION",
    "Trace",
    "TraceError",
    "decode_value",
    "encode_value",
    "is_native_trace",
    "iter_traces",
    "load_trace",
    "read_any",
    "save_trace",
    "save_traces",
    "trace_formats",
    "trace_from_dict",
    "trace_to_dict",
]

TRACE_VERSION = 1
_TAGS = ("$kw", "$set", "$fn", "$map", "$fail", "$float")


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
        for the prompt of turn ``n`` (1-based): the first n-1 turns, ``max_turns - (n-1)``
        turns left."""
        if not 1 <= n <= max(len(self.turns), 1):
            raise ValueError(f"trace {self.name or '(unnamed)'} has {len(self.turns)} turn(s); "
                             f"turn must be from 1 to {max(len(self.turns), 1)}, got {n}")
        return {"turns": self.turns[: n - 1], "mission": self.mission,
                "system_prompt": self.system_prompt, "tools": self.tools, "data": self.data,
                "turns_left": self.max_turns - (n - 1), "preamble": self.preamble}

    def prompt(self, n: int, compression: Any = True,
               template_dirs: Iterable[str | os.PathLike[str]] = ()) -> list[Message]:
        """The messages sent for turn ``n`` (1-based): ``render(turns[:n-1], ...)``."""
        from turnpress.core.compression import render

        return render(**self.prompt_arguments(n), compression=compression,
                      template_dirs=template_dirs)


# -- values ------------------------------------------------------------------------------


def _set_items_sorted(items: Iterable[Any]) -> list[Any]:
    from turnpress.core.clojure import _set_sort_key

    return sorted(items, key=_set_sort_key)


def encode_value(value: Any, where: str = "value") -> Any:
    """A JSON-ready form of ``value`` with tags for what JSON lacks."""
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        if math.isfinite(value):
            return value
        return {"$float": "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")}
    if isinstance(value, Keyword):
        return {"$kw": value.name}
    if isinstance(value, Failure):
        return {"$fail": {"reason": value.reason, "message": value.message}}
    if isinstance(value, Fn):
        return {"$fn": {"params": list(value.params), "doc": value.doc,
                        "return_type": value.return_type}}
    if isinstance(value, (list, tuple)):
        return [encode_value(v, f"{where}[{i}]") for i, v in enumerate(value)]
    if isinstance(value, (set, frozenset)):
        return {"$set": [encode_value(v, f"{where}[]") for v in _set_items_sorted(value)]}
    if isinstance(value, Mapping):
        keys = list(value)
        if all(isinstance(k, str) for k in keys) and not (len(keys) == 1 and keys[0] in _TAGS):
            return {k: encode_value(v, f"{where}.{k}") for k, v in value.items()}
        return {"$map": [[encode_value(k, f"{where} key"), encode_value(v, f"{where}[{k!r}]")]
                         for k, v in value.items()]}
    raise TraceError(f"{where}: a {type(value).__name__} value cannot be stored in a trace "
                     f"(supported: nil, booleans, numbers, strings, keywords, lists, maps, "
                     f"sets, functions)")


def _hashable(value: Any) -> Any:
    if isinstance(value, list):
        return tuple(_hashable(v) for v in value)
    if isinstance(value, dict):
        raise TypeError("a map cannot be a set item or map key")
    return value


def decode_value(value: Any, where: str = "value") -> Any:
    """The inverse of :func:`encode_value`; raises ``TraceError`` naming ``where``."""
    if isinstance(value, list):
        return [decode_value(v, f"{where}[{i}]") for i, v in enumerate(value)]
    if not isinstance(value, dict):
        return value
    if len(value) == 1:
        (tag, body), = value.items()
        try:
            if tag == "$kw":
                if not isinstance(body, str):
                    raise TypeError("expected a string")
                return Keyword(body)
            if tag == "$float":
                return float(body)
            if tag == "$set":
                return {_hashable(decode_value(v, f"{where}[]")) for v in body}
            if tag == "$map":
                return {_hashable(decode_value(k, f"{where} key")): decode_value(v, where)
                        for k, v in body}
            if tag == "$fn":
                return Fn(tuple(body.get("params", ())), body.get("doc"),
                          body.get("return_type"))
            if tag == "$fail":
                return Failure(str(body["reason"]), str(body["message"]))
        except (TypeError, ValueError, KeyError, AttributeError) as exc:
            raise TraceError(f"{where}: malformed {tag} value {body!r} ({exc})") from None
    return {k: decode_value(v, f"{where}.{k}") for k, v in value.items()}


# -- turns and traces --------------------------------------------------------------------


def _turn_to_dict(turn: Turn) -> dict[str, Any]:
    where = f"turn {turn.number}"
    out: dict[str, Any] = {
        "number": turn.number,
        "success": turn.success,
        "program": turn.program,
        "raw_response": turn.raw_response,
        "result": encode_value(turn.result, f"{where}: result"),
        "prints": list(turn.prints),
        "tool_calls": [
            {"name": c.name, "args": encode_value(list(c.args), f"{where}: tool_calls.args"),
             "result": encode_value(c.result, f"{where}: tool_calls.result")}
            for c in turn.tool_calls
        ],
        "memory": encode_value(dict(turn.memory), f"{where}: memory"),
    }
    docs = getattr(turn.memory, "docs", None)
    if docs:
        out["docs"] = dict(docs)
    if turn.messages:
        out["messages"] = [dict(m) for m in turn.messages]
    if turn.usage is not None:
        out["usage"] = turn.usage.to_dict()
    return out


def trace_to_dict(trace: Trace) -> dict[str, Any]:
    """The JSON-ready form of a trace (version 1)."""
    out: dict[str, Any] = {"version": TRACE_VERSION}
    if trace.name:
        out["name"] = trace.name
    out.update({
        "mission": trace.mission,
        "system_prompt": trace.system_prompt,
        "max_turns": trace.max_turns,
        "tools": {name: tool.to_dict() for name, tool in trace.tools.items()},
        "data": encode_value(dict(trace.data), "data"),
        "turns": [_turn_to_dict(t) for t in trace.turns],
    })
    if trace.source:
        out["source"] = trace.source
    if trace.preamble:
        out["preamble"] = [dict(m) for m in trace.preamble]
    if trace.skipped:
        out["skipped"] = [dict(m) for m in trace.skipped]
    return out


class _Reader:
    """Reads one trace dict, naming the place of every problem."""

    def __init__(self, where: str) -> None:
        self.where = where

    def fail(self, field_name: str, problem: str, turn: int | None = None) -> TraceError:
        at = f"{self.where}: turn {turn}: " if turn is not None else f"{self.where}: "
        return TraceError(f"{at}field {field_name!r}: {problem}")

    def get(self, obj: Mapping[str, Any], key: str, kind: type | tuple[type, ...],
            turn: int | None = None, default: Any = ..., prefix: str = "") -> Any:
        if key not in obj:
            if default is not ...:
                return default
            raise self.fail(prefix + key, "missing", turn)
        value = obj[key]
        if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            names = kind.__name__ if isinstance(kind, type) else " or ".join(
                k.__name__ for k in kind)
            raise self.fail(prefix + key, f"expected {_json_kind(names)}, got "
                                          f"{_json_kind(type(value).__name__)} {value!r:.60}",
                            turn)
        return value

    def value(self, raw: Any, field_name: str, turn: int | None = None) -> Any:
        try:
            return decode_value(raw, field_name)
        except TraceError as exc:
            path, _, problem = str(exc).partition(": ")
            raise self.fail(path, problem, turn) from None

    def trace(self, obj: Any, default_name: str) -> Trace:
        if not isinstance(obj, dict):
            raise TraceError(f"{self.where}: expected a JSON object for a trace, got "
                             f"{_json_kind(type(obj).__name__)}")
        version = obj.get("version", TRACE_VERSION)
        if version != TRACE_VERSION:
            raise self.fail("version", f"unsupported trace version {version!r}; this "
                                       f"turnpress reads version {TRACE_VERSION}")
        mission = self.get(obj, "mission", str)
        system_prompt = self.get(obj, "system_prompt", str, default="")
        max_turns = self.get(obj, "max_turns", int)
        if max_turns < 1:
            raise self.fail("max_turns", f"must be at least 1, got {max_turns}")
        raw_tools = self.get(obj, "tools", dict, default={})
        tools = {}
        for name, spec in raw_tools.items():
            try:
                tools[name] = Tool.from_schema(name, spec)
            except TypeError as exc:
                raise self.fail(f"tools.{name}", str(exc)) from None
        data = self.value(self.get(obj, "data", dict, default={}), "data")
        raw_turns = self.get(obj, "turns", list)
        if len(raw_turns) > max_turns:
            raise self.fail("turns", f"{len(raw_turns)} turns but max_turns is {max_turns}")
        turns = tuple(self.turn(t, i) for i, t in enumerate(raw_turns, 1))
        name = self.get(obj, "name", str, default=default_name)
        source = self.get(obj, "source", str, default="")
        preamble = self.messages(self.get(obj, "preamble", list, default=[]), "preamble")
        skipped = self.messages(self.get(obj, "skipped", list, default=[]), "skipped")
        return Trace(mission=mission, turns=turns, system_prompt=system_prompt,
                     max_turns=max_turns, tools=tools, data=data, name=name, source=source,
                     preamble=preamble, skipped=skipped)

    def messages(self, raw: list[Any], field_name: str,
                 turn: int | None = None) -> tuple[dict[str, Any], ...]:
        """Provider messages stored as they were sent (JSON objects, kept verbatim)."""
        for i, m in enumerate(raw):
            if not isinstance(m, dict):
                raise self.fail(f"{field_name}[{i}]", f"expected a JSON object, got "
                                f"{_json_kind(type(m).__name__)}", turn)
        return tuple(raw)

    def usage(self, obj: Mapping[str, Any], number: int) -> Usage | None:
        raw = self.get(obj, "usage", (dict, type(None)), number, default=None)
        if raw is None:
            return None
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

    def turn(self, obj: Any, position: int) -> Turn:
        if not isinstance(obj, dict):
            raise self.fail(f"turns[{position - 1}]", "expected a JSON object", position)
        number = self.get(obj, "number", int, position)
        if number != position:
            raise self.fail("number", f"turns must be numbered 1, 2, 3... in order; turn "
                                      f"{position} says {number}", position)
        success = self.get(obj, "success", bool, number)
        program = self.get(obj, "program", str, number)
        raw_response = self.get(obj, "raw_response", str, number, default=program)
        prints = self.get(obj, "prints", list, number, default=[])
        for i, p in enumerate(prints):
            if not isinstance(p, str):
                raise self.fail(f"prints[{i}]", f"expected a string, got {p!r:.60}", number)
        calls = []
        for i, raw in enumerate(self.get(obj, "tool_calls", list, number, default=[])):
            prefix = f"tool_calls[{i}]."
            if not isinstance(raw, dict):
                raise self.fail(f"tool_calls[{i}]", "expected a JSON object", number)
            args = self.value(self.get(raw, "args", list, number, [], prefix),
                              prefix + "args", number)
            calls.append(ToolCall(self.get(raw, "name", str, number, prefix=prefix),
                                  tuple(args),
                                  self.value(raw.get("result"), prefix + "result", number)))
        memory_raw = self.get(obj, "memory", dict, number, default={})
        docs = self.get(obj, "docs", dict, number, default={})
        memory = Memory(self.value(memory_raw, "memory", number), docs=docs)
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
    registered transcript reader whose ``detect`` accepts it."""
    if is_native_trace(obj):
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
            raise TraceError(f"{where}: {exc}") from None
        if not isinstance(trace, Trace):
            raise TraceError(f"{where}: trace reader {reg.name!r} of {reg.plugin.source} "
                             f"returned {type(trace).__name__}, not a Trace")
        if not trace.name:
            trace = _renamed(trace, name)
        return trace
    raise TraceError(f"{where}: not a format turnpress reads; it reads: "
                     f"{', '.join(trace_formats())} (a turnpress trace needs \"version\", "
                     f"\"mission\", \"max_turns\" and \"turns\")")


def _renamed(trace: Trace, name: str) -> Trace:
    from dataclasses import replace

    return replace(trace, name=name)


def _is_jsonl(path: Path) -> bool:
    return path.suffix.lower() in (".jsonl", ".ndjson")


def iter_traces(path: str | os.PathLike[str]) -> Iterator[Trace]:
    """Yield every run in a JSON or JSONL trace file, reading JSONL line by line."""
    p = Path(path)
    try:
        handle = p.open(encoding="utf-8")
    except OSError as exc:
        raise TraceError(f"{p}: cannot read trace file: {exc.strerror or exc}") from None
    with handle:
        if _is_jsonl(p):
            count = 0
            for lineno, line in enumerate(handle, 1):
                if not line.strip():
                    continue
                count += 1
                where = f"{p}: line {lineno}"
                try:
                    obj = json.loads(line)
                except json.JSONDecodeError as exc:
                    raise TraceError(f"{where}: invalid JSON at column {exc.colno}: "
                                     f"{exc.msg}") from None
                yield read_any(obj, p, where, f"{p.stem}#{count}")
            if count == 0:
                raise TraceError(f"{p}: no trace in this file (it is empty)")
        else:
            try:
                obj = json.load(handle)
            except json.JSONDecodeError as exc:
                raise TraceError(f"{p}: line {exc.lineno}: invalid JSON at column "
                                 f"{exc.colno}: {exc.msg}") from None
            except UnicodeDecodeError as exc:
                raise TraceError(f"{p}: not UTF-8 text ({exc.reason})") from None
            yield read_any(obj, p, str(p), _stem(p))


def _stem(path: Path) -> str:
    """``run`` for ``run.json`` and for ``run.traj.json``."""
    name = path.name
    for suffix in (".traj.json", ".json"):
        if name.lower().endswith(suffix):
            return name[: -len(suffix)]
    return path.stem


def load_trace(path: str | os.PathLike[str]) -> Trace:
    """Load the one run in a trace file (use :func:`iter_traces` for many runs)."""
    traces = iter_traces(path)
    first = next(traces)
    extra = next(traces, None)
    if extra is not None:
        raise TraceError(f"{path}: holds more than one run; use "
                         f"turnpress.core.trace.iter_traces() to read them all")
    return first


def save_trace(trace: Trace, path: str | os.PathLike[str]) -> None:
    """Write one run: indented JSON, or a single line for a ``.jsonl`` path."""
    save_traces([trace], path) if _is_jsonl(Path(path)) else Path(path).write_text(
        json.dumps(trace_to_dict(trace), indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def save_traces(traces: Iterable[Trace], path: str | os.PathLike[str]) -> None:
    """Write many runs as JSONL, one per line."""
    with Path(path).open("w", encoding="utf-8") as handle:
        for trace in traces:
            handle.write(json.dumps(trace_to_dict(trace), ensure_ascii=False) + "\n")
