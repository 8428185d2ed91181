"""Where the compared traces come from: files (JSONL read line by line) or objects.

:func:`trace_tasks` turns the sources into small tasks a worker can load
(:func:`load_task`), so a JSONL file of many runs is streamed and spread over the
workers without being read whole.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from turnpress.core.trace import (
    Trace,
    TraceError,
    is_event_log,
    iter_traces,
    trace_file,
    trace_from_json_line,
)
from turnpress.examples import example_trace_paths

__all__ = ["TraceSource", "as_sources", "count_traces", "load_task", "trace_tasks"]

TraceSource = str | os.PathLike[str] | Trace


def _is_jsonl(path: Path) -> bool:
    return path.suffix.lower() in (".jsonl", ".ndjson")


def trace_tasks(sources: Iterable[TraceSource]) -> Iterator[tuple[Any, ...]]:
    """What a worker needs to load each trace, reading JSONL files line by line."""
    for source in sources:
        if isinstance(source, Trace):
            yield ("trace", source)
            continue
        path = trace_file(source)
        if not _is_jsonl(path) or is_event_log(path):  # an event log is one run, read whole
            yield ("file", str(path))
            continue
        try:
            handle = path.open(encoding="utf-8")
        except OSError as exc:
            raise TraceError(f"{path}: cannot read trace file: {exc.strerror or exc}") from None
        with handle:
            count = 0
            try:
                for lineno, line in enumerate(handle, 1):
                    if line.strip():
                        count += 1
                        yield ("line", str(path), lineno, count, line)
            except UnicodeDecodeError as exc:
                raise TraceError(f"{path}: not UTF-8 text ({exc.reason})") from None
            if count == 0:
                raise TraceError(f"{path}: no trace in this file (it is empty)")


def load_task(task: tuple[Any, ...]) -> Iterator[Trace]:
    """The trace(s) of one task of :func:`trace_tasks`."""
    kind = task[0]
    if kind == "trace":
        yield task[1]
    elif kind == "file":
        yield from iter_traces(task[1])
    else:
        _, path, lineno, count, line = task
        yield trace_from_json_line(line, Path(path), lineno, count)


def as_sources(traces: Any) -> list[TraceSource] | Iterable[TraceSource]:
    """``traces`` as a list of sources (None: the bundled example traces)."""
    if traces is None:
        return example_trace_paths()
    if isinstance(traces, (str, os.PathLike, Trace)):
        return [traces]
    return traces


def count_traces(traces: Any = None) -> int:
    """How many traces ``traces`` holds (JSONL lines are counted, not parsed)."""
    n = 0
    for source in as_sources(traces):
        if isinstance(source, Trace) or not _is_jsonl(Path(source)) or is_event_log(source):
            n += 1
            continue
        try:
            with Path(source).open("rb") as handle:
                n += sum(1 for line in handle if line.strip())
        except OSError:
            n += 1  # the error is reported when the file is read
    return n
