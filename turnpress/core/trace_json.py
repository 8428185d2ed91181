"""A trace's JSON form, written: :func:`trace_to_dict` (read back by ``core.trace_parse``).

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

Reading is strict: every malformed input is a :class:`TraceError` naming the file,
the line or turn, and the field; nothing malformed is accepted silently.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

from turnpress.core import codec
from turnpress.core.errors import TraceError
from turnpress.core.model import (
    Turn,
)
from turnpress.core.trace_model import Trace

__all__ = [
    "NATIVE_FORMAT",
    "READ_VERSIONS",
    "TRACE_VERSION",
    "decode_value",
    "encode_value",
    "is_native_trace",
    "run_digest",
    "trace_to_dict",
]

#: The version :func:`save_trace` writes.
TRACE_VERSION = 2
#: The versions :func:`load_trace` reads.
READ_VERSIONS = (1, 2)


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


def run_digest(trace: Trace) -> str:
    """What makes two runs "the same run", whatever their name or the file, format and
    trace version they were read from: a digest (128 bits, hex) of the trace's JSON
    without its name. ``import`` warns of a run imported again and ``compare`` counts
    a run found twice once, both by this digest ("" for a trace JSON cannot hold)."""
    digest = hashlib.sha256()
    encode = json.JSONEncoder(ensure_ascii=False, sort_keys=True).encode
    try:
        obj = trace_to_dict(trace)
        obj.pop("name", None)
        turns = obj.pop("turns", [])
        # the turns one at a time: a run's whole JSON text (and the C encoder's list of
        # its pieces) would be a few times the run's size in memory, at once
        for part in (obj, *turns):
            digest.update(encode(part).encode("utf-8", "surrogatepass"))
            digest.update(b"\n")
    except (TypeError, ValueError):
        return ""
    return digest.hexdigest()[:32]


NATIVE_FORMAT = "turnpress"
# any of these keys marks a (possibly broken) turnpress trace; no transcript format has them
_NATIVE_KEYS = ("version", "mission", "max_turns", "turns")


def is_native_trace(obj: Any) -> bool:
    """Whether a parsed JSON value claims to be turnpress's own trace format."""
    return isinstance(obj, dict) and any(k in obj for k in _NATIVE_KEYS)
