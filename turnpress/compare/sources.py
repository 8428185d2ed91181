"""Where the compared traces come from: files (JSONL read line by line) or objects.

:func:`trace_tasks` turns the sources into small tasks a worker can load
(:func:`load_task`), so a JSONL file of many runs is streamed and spread over the
workers without being read whole.
"""

from __future__ import annotations

import os
import random
from collections.abc import Iterable, Iterator, Sequence
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
from turnpress.core.trace_inputs import Inputs, Scan
from turnpress.core.trace_text import utf16_hint
from turnpress.examples import example_trace_paths

__all__ = ["TraceSample", "TraceSource", "as_sources", "count_traces", "load_task", "skipped_task",
           "stratified_sample", "task_file", "task_key", "trace_tasks"]

TraceSource = str | os.PathLike[str] | Trace


def _is_jsonl(path: Path) -> bool:
    return path.suffix.lower() in (".jsonl", ".ndjson")


def trace_tasks(sources: Iterable[TraceSource], strict: bool = True
                ) -> Iterator[tuple[Any, ...]]:
    """What a worker needs to load each trace, reading JSONL files line by line.

    A JSONL file that cannot be opened, is not UTF-8 or holds no trace raises
    :class:`TraceError` when ``strict``; otherwise it becomes a ``("skipped", file,
    reason)`` task (:func:`skipped_task`) and the next source is read.
    """
    for source in sources:
        if isinstance(source, Trace):
            yield ("trace", source)
            continue
        path = trace_file(source)
        if not _is_jsonl(path) or is_event_log(path):  # an event log is one run, read whole
            yield ("file", str(path))
            continue
        try:
            yield from _jsonl_tasks(path)
        except TraceError as exc:
            if strict:
                raise
            yield skipped_task(str(path), str(exc))


def _jsonl_tasks(path: Path) -> Iterator[tuple[Any, ...]]:
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
            hint = utf16_hint(exc.object[:2]) if exc.start == 0 and not count else ""
            raise TraceError(f"{path}: not UTF-8 text ({exc.reason}){hint}") from None
        if count == 0:
            raise TraceError(f"{path}: no trace in this file (it is empty)")


def skipped_task(file: str, message: str) -> tuple[str, str, str]:
    """``("skipped", file, reason)``: ``message`` (a :class:`TraceError`'s, which starts
    with the file) without the file in front."""
    prefix = f"{file}: "
    return ("skipped", file, message[len(prefix):] if message.startswith(prefix) else message)


def task_file(task: tuple[Any, ...]) -> str:
    """The file a task reads (a trace object's name for an in-memory trace)."""
    if task[0] == "trace":
        return task[1].name or "(unnamed trace)"
    return task[1]


def task_key(task: tuple[Any, ...]) -> tuple[str, int | None] | None:
    """What identifies a task's trace across runs: ``(file, line)`` (line None for a
    JSON file); None for an in-memory trace."""
    if task[0] == "file":
        return (task[1], None)
    if task[0] == "line":
        return (task[1], task[2])
    return None


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


def as_sources(traces: Any, scan: Scan | None = None) -> Iterable[TraceSource]:
    """``traces`` as sources (None: the bundled example traces): each path (``str`` or
    ``os.PathLike``) as :func:`~turnpress.core.trace_inputs.discover` finds it, as the
    command line does (a trace file or a bundled trace's name as it is, a directory
    read recursively, a glob pattern expanded; each file once), each
    :class:`~turnpress.core.trace_inputs.Inputs` (what ``discover`` found) as its
    files, each :class:`Trace` as it is. ``scan`` (a
    :class:`~turnpress.core.trace_inputs.Scan`) gathers the files found that are not
    runs, with their reason, in ``scan.inputs.skipped``. A list or tuple (or a single
    source) is scanned at once, so a pattern that matches nothing is a
    :class:`TraceError` before anything is read; any other iterable as it is read."""
    if traces is None:
        return example_trace_paths()
    scan = scan if scan is not None else Scan()
    if isinstance(traces, (str, os.PathLike, Trace, Inputs)):
        traces = [traces]
    expanded = _expanded(traces, scan)
    return list(expanded) if isinstance(traces, (list, tuple)) else expanded


def _expanded(traces: Iterable[Any], scan: Scan) -> Iterator[TraceSource]:
    for source in traces:
        if isinstance(source, Trace):
            yield source
        elif isinstance(source, Inputs):
            yield from scan.take(source)
        else:
            yield from scan.files(source)


def count_traces(traces: Any = None) -> int:
    """How many traces ``traces`` (what :func:`as_sources` takes: files, directories,
    glob patterns, ``Inputs``, :class:`Trace` objects) holds (JSONL lines are counted,
    not parsed)."""
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


def stratified_sample(lengths: Sequence[int], n: int, seed: int) -> list[int]:
    """The positions of ``n`` of the runs whose lengths (turns) are ``lengths``, drawn
    stratified by length, in run order: the runs sorted by length (ties: by position)
    are cut into ``n`` strata of (nearly) equal size, and one run is drawn from each
    with ``random.Random(seed)``. Every length band is thus represented in proportion;
    ``n`` at least the number of runs gives them all."""
    total = len(lengths)
    if n >= total:
        return list(range(total))
    rng = random.Random(seed)
    order = sorted(range(total), key=lambda i: (lengths[i], i))
    chosen = []
    for k in range(n):
        start, stop = k * total // n, (k + 1) * total // n
        chosen.append(order[rng.randrange(start, stop)])
    return sorted(chosen)


class TraceSample:
    """``compare --sample N --seed S``: the tasks of a stratified sample of the runs.

    :meth:`tasks` reads every run once to learn its length (the sample is stratified by
    turns), then yields the tasks of the drawn runs only; :attr:`population` and
    :attr:`drawn` are set once it has. A run that cannot be read or has no turn is not
    one of the population: its task is passed on, to be skipped and named (or, with
    ``strict``, to stop the comparison) as without a sample."""

    def __init__(self, n: int, seed: int = 0) -> None:
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise ValueError(f"sample must be a positive number of runs, got {n!r}")
        if isinstance(seed, bool) or not isinstance(seed, int):
            raise ValueError(f"seed must be an integer, got {seed!r}")
        self.n = n
        self.seed = seed
        self.population = 0
        self.drawn = 0

    def tasks(self, sources: Iterable[TraceSource], strict: bool = True
              ) -> Iterator[tuple[Any, ...]]:
        """The tasks (as :func:`trace_tasks` gives them, ``strict`` as there) of the drawn
        runs, in run order, and those of the runs that are not of the population."""
        sources = list(sources)  # read twice: once for the lengths, once for the runs
        lengths: list[int] = []
        # per task: the position in ``lengths`` of each of its runs (None: no turn), or
        # None for a task that cannot be read
        places: list[list[int | None] | None] = []
        for task in trace_tasks(sources, strict):
            if task[0] == "skipped":
                places.append([])
                continue
            try:
                turns = [len(trace.turns) for trace in load_task(task)]
            except ValueError:  # a TraceError too: reported when the task runs
                places.append(None)
                continue
            mine: list[int | None] = []
            for count in turns:
                mine.append(len(lengths) if count else None)
                if count:
                    lengths.append(count)
            places.append(mine)
        chosen = set(stratified_sample(lengths, self.n, self.seed))
        self.population, self.drawn = len(lengths), len(chosen)
        for task, mine in zip(trace_tasks(sources, strict), places, strict=False):
            if mine is None or task[0] == "skipped":
                yield task
                continue
            keep = [i is None or i in chosen for i in mine]
            if all(keep):
                yield task
            elif any(keep):  # some of the runs of one file: hand over those runs alone
                for trace, kept in zip(load_task(task), keep, strict=False):
                    if kept:
                        yield ("trace", trace)
