"""Trace files: one agent run (JSON) or many (JSONL, one run a line).

A file holds turnpress's own trace format (:mod:`turnpress.core.trace_json`) or a
transcript a registered reader understands (OpenAI chat, Anthropic messages,
mini-swe-agent...): :func:`load_trace`, :func:`iter_traces` and :func:`read_any`
try turnpress's format, then each reader. :func:`save_trace` writes turnpress's
format. The :class:`Trace` itself is :mod:`turnpress.core.trace_model`; both are
exported here too.

Loading is strict: every malformed input is a :class:`TraceError` naming the file,
the line or turn, and the field; nothing malformed is accepted silently.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
from collections.abc import Iterable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any, BinaryIO

from turnpress.core import codec
from turnpress.core.errors import TraceError
from turnpress.core.plugin_loading import short_repr
from turnpress.core.registry import get_registry
from turnpress.core.trace_json import (
    NATIVE_FORMAT,
    READ_VERSIONS,
    TRACE_VERSION,
    decode_value,
    encode_value,
    is_native_trace,
    run_digest,
    trace_to_dict,
)
from turnpress.core.trace_model import Trace
from turnpress.core.trace_parse import too_deep, trace_from_dict
from turnpress.core.trace_text import BOM, decode_utf8, parse_json, parse_text
from turnpress.examples import example_trace_paths

__all__ = [
    "BOM",
    "READ_VERSIONS",
    "TRACE_VERSION",
    "Trace",
    "TraceError",
    "append_jsonl",
    "claims",
    "decode_value",
    "encode_value",
    "first_line",
    "is_bare_name",
    "is_event_log",
    "is_native_trace",
    "is_trace_file",
    "iter_traces",
    "load_trace",
    "parse_text",
    "read_any",
    "read_runs",
    "run_digest",
    "save_trace",
    "save_traces",
    "trace_file",
    "trace_formats",
    "trace_from_dict",
    "trace_from_json_line",
    "trace_to_dict",
]


def trace_formats() -> list[str]:
    """The formats :func:`load_trace` reads: turnpress's own, then each registered reader."""
    return [NATIVE_FORMAT, *get_registry().trace_readers()]


def read_any(obj: Any, path: Path, where: str, name: str) -> Trace:
    """One run from one parsed JSON value (see :func:`read_runs`); a value a reader
    reads as several runs is an error."""
    runs = read_runs(obj, path, where, name)
    if len(runs) != 1:
        raise TraceError(f"{where}: holds {len(runs)} runs, not one; read the file with "
                         f"turnpress.core.trace.iter_traces()")
    return runs[0]


def claims(obj: Any, path: Path) -> bool:
    """Whether turnpress's format or some reader reads ``obj`` as a run."""
    if isinstance(obj, dict) and ("version" in obj or "turns" in obj):
        return True
    for reg in get_registry().trace_readers().values():
        try:
            if reg.value[0](obj, path):
                return True
        except Exception:  # a detector that raises does not claim the value
            continue
    return is_native_trace(obj)


def read_runs(obj: Any, path: Path, where: str, name: str) -> list[Trace]:
    """The runs of one parsed JSON value: turnpress's own format, or the first
    registered transcript reader whose ``detect`` accepts it. A reader's ``read``
    returns a :class:`Trace`, or a list of them when the value holds several runs
    (a Claude Code session split at its compaction boundaries); runs without a name
    are named ``name``, then ``name/2``, ``name/3``...

    A value with a top-level ``"version"`` or ``"turns"`` is read as turnpress's own
    format; one with only ``"mission"`` or ``"max_turns"`` of those keys goes to the
    readers first (a third-party format may well have a mission), and is read as a
    (broken) turnpress trace only when no reader accepts it."""
    if isinstance(obj, dict) and ("version" in obj or "turns" in obj):
        return [trace_from_dict(obj, where, name)]
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
        runs = trace if isinstance(trace, list) else [trace]
        if not runs or not all(isinstance(t, Trace) for t in runs):
            bad = "" if not isinstance(trace, list) else (
                " (an empty list)" if not runs else next(
                    f" whose item {k} is {'None' if t is None else short_repr(t)}"
                    for k, t in enumerate(runs)
                    if not isinstance(t, Trace)))
            raise TraceError(f"{where}: trace reader {reg.name!r} of {reg.plugin.source} "
                             f"returned {type(trace).__name__}{bad}, not a Trace or a list "
                             f"of Traces")
        out = []
        for k, run in enumerate(runs, 1):
            _check_message_depth(run, where)
            out.append(run if run.name else _renamed(run, name if k == 1 else f"{name}/{k}"))
        return out
    if is_native_trace(obj):
        return [trace_from_dict(obj, where, name)]
    raise TraceError(f"{where}: not a format turnpress reads; it reads: "
                     f"{', '.join(trace_formats())} (a turnpress trace needs \"version\", "
                     f"\"mission\", \"max_turns\" and \"turns\")")


def _check_message_depth(trace: Trace, where: str) -> None:
    """A transcript's messages obey the nesting cap a saved trace's do, so whatever a
    reader accepts can be saved and loaded back."""
    for i, m in enumerate(trace.preamble):
        if too_deep(m, codec.MAX_JSON_DEPTH):
            raise TraceError(f"{where}: message {i}: nested deeper than "
                             f"{codec.MAX_JSON_DEPTH} levels")
    for turn in trace.turns:
        for m in turn.messages:
            if too_deep(m, codec.MAX_JSON_DEPTH):
                raise TraceError(f"{where}: turn {turn.number}: a message nested deeper "
                                 f"than {codec.MAX_JSON_DEPTH} levels")


def _renamed(trace: Trace, name: str) -> Trace:
    return replace(trace, name=name)


def _is_jsonl(path: Path) -> bool:
    return path.suffix.lower() in (".jsonl", ".ndjson")


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
    for candidate in example_trace_paths():
        if candidate.name.split(".")[0] == os.fspath(path):
            return candidate
    return p


def trace_from_json_line(line: str, path: Path, lineno: int, count: int) -> Trace:
    """The run on line ``lineno`` of the JSONL file ``path``, its ``count``-th run (named
    ``STEM#count`` when the run has no name); every problem a one-line
    :class:`TraceError` naming the file and line."""
    where = f"{path}: line {lineno}"
    line = line.removeprefix("\ufeff")  # a UTF-8 byte order mark
    return read_any(parse_json(line, where, lineno), path, where, f"{path.stem}#{count}")


def first_line(handle: BinaryIO, p: Path, *, strict: bool = False) -> Any:
    """The parsed first non-blank line of a JSONL file, ``None`` for an empty one; an
    unparsable one is ``None`` too (the line-by-line reading reports it), or, with
    ``strict``, its :class:`TraceError`. The handle is rewound."""
    try:
        for lineno, raw in enumerate(handle, 1):
            if raw.strip():
                text = decode_utf8(raw.removeprefix(BOM), f"{p}: line {lineno}", lineno)
                return parse_json(text, f"{p}: line {lineno}", lineno)
        return None
    except TraceError:
        if strict:
            raise
        return None
    finally:
        handle.seek(0)


def is_trace_file(path: str | os.PathLike[str]) -> bool:
    """Whether runs may be appended to the existing file ``path``: it is empty, or its
    first non-blank line is a turnpress trace (``turnpress import -o`` and ``run
    --save-trace`` never append to anything else). An unreadable file raises
    :class:`TraceError`."""
    p = Path(path)
    try:
        with p.open("rb") as handle:
            first = next((line for line in handle if line.strip()), b"")
    except OSError as exc:
        raise TraceError(f"{p}: cannot read: {exc.strerror or exc}") from None
    if not first:
        return True
    try:
        return is_native_trace(json.loads(first))
    except ValueError:
        return False


def is_event_log(path: str | os.PathLike[str]) -> bool:
    """Whether a JSONL file is ONE run written as events, one a line (Claude Code's
    stream-json output and session files): its first line is no run that turnpress
    or a reader reads, but a list of it is one a reader reads."""
    p = trace_file(path)
    if not _is_jsonl(p):
        return False
    try:
        with p.open("rb") as handle:
            first = first_line(handle, p)
    except OSError:
        return False
    return first is not None and not claims(first, p) and claims([first], p)


def _event_log(handle: BinaryIO, p: Path) -> tuple[list[Any], str | None]:
    """Every line of an event log, parsed; ``None`` for a blank line, so that item i
    is line i + 1 (a reader names lines in its errors). A line that cannot be read is
    an error, but for the last line of a log still being written (or of a crash): cut
    off before its newline, it is left out (``None``) and the note on it is returned
    too; with its newline, its error says that it looks cut off."""
    events: list[Any] = []
    bad: tuple[int, bytes, TraceError] | None = None  # a line that cannot be read
    for lineno, raw in enumerate(handle, 1):
        if lineno == 1:
            raw = raw.removeprefix(BOM)
        if not raw.strip():
            events.append(None)
            continue
        if bad is not None:  # a bad line with lines after it: the error it is
            raise bad[2]
        where = f"{p}: line {lineno}"
        try:
            events.append(parse_json(decode_utf8(raw, where, lineno), where, lineno))
        except TraceError as exc:
            bad = (lineno, raw, exc)
            events.append(None)
    if bad is None:
        return events, None
    lineno, raw, exc = bad
    reason = str(exc).removeprefix(f"{p}: line {lineno}: ")
    if raw.endswith(b"\n"):
        raise TraceError(f"{exc}; it is the last line and looks cut off (was the file "
                         f"still being written?)")
    return events, (f"line {lineno}, the last, is cut off ({reason}, and no newline "
                    f"ends it): left out, the run read up to line {lineno - 1} (was the "
                    f"file still being written?)")


def iter_traces(path: str | os.PathLike[str]) -> Iterator[Trace]:
    """Yield every run in a JSON or JSONL trace file, reading JSONL line by line (a
    bundled trace's name is read as its file: :func:`trace_file`). A JSONL event log
    (:func:`is_event_log`) is read whole, as one value: the list of its lines; its
    last line, cut off before its newline (a log still being written), is left out
    with a note (``trace show`` prints it)."""
    p = trace_file(path)
    try:
        handle = p.open("rb")
    except OSError as exc:
        raise TraceError(f"{p}: cannot read trace file: {exc.strerror or exc}") from None
    with handle:
        if _is_jsonl(p) and is_event_log(p):
            events, cut = _event_log(handle, p)
            for run in read_runs(events, p, str(p), _stem(p)):
                yield run if cut is None else replace(
                    run, skipped=(*run.skipped, {"note": cut}))
        elif _is_jsonl(p):
            count = 0
            for lineno, raw in enumerate(handle, 1):
                if not raw.strip():
                    continue
                count += 1
                if count == 1:
                    raw = raw.removeprefix(BOM)
                yield trace_from_json_line(decode_utf8(raw, f"{p}: line {lineno}", lineno),
                                           p, lineno, count)
            if count == 0:
                raise TraceError(f"{p}: no trace in this file (it is empty)")
        else:
            try:
                data = handle.read()
            except OSError as exc:
                raise TraceError(f"{p}: cannot read trace file: {exc.strerror or exc}") \
                    from None
            text = decode_utf8(data.removeprefix(BOM), str(p))
            del data  # a big file is held once at a time: bytes, text, parsed, trace
            obj = parse_json(text, str(p))
            del text
            runs = read_runs(obj, p, str(p), _stem(p))
            del obj  # the parsed document (provider metadata...) is not kept while the
            yield from runs  # runs are used: only what the traces hold stays alive


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
    values, and their nonce. A file writes each graph on one line, with
    :func:`codec.encoded_json` (the C JSON encoder, and lists of refs in one pass):
    indented, a graph of a million refs is millions of lines written by the
    pure-Python encoder. Containers are copied where changed, never mutated."""
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
        obj, graphs, nonce = _inline_graphs(obj)  # each written by codec.encoded_json
        text = json.dumps(obj, indent=indent, ensure_ascii=False, allow_nan=False)
        if graphs:
            text = re.sub(f'"(@@turnpress-graph-{nonce}-[0-9]+@@)"', lambda m: codec.encoded_json(
                graphs[m.group(1)]), text)
    except ValueError as exc:  # NaN in verbatim transcript messages
        raise TraceError(f"trace {trace.name or '(unnamed)'}: cannot be written as JSON: "
                         f"{exc}") from None
    # a lone surrogate outside values (a printed line...) cannot be UTF-8: escape it
    if not text.isascii() and _SURROGATE.search(text) is not None:
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
