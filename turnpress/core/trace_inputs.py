"""Which files a command reads: trace files, directories and glob patterns (DESIGN §12).

:func:`discover` is the one place ``compare``, ``trace show`` and ``import`` find
their input files. A file named as such is read as it is (a bad one is an error).
A directory is read recursively, and a glob pattern (``runs/**/*.jsonl``; ``**``
crosses directories) is expanded: every file found that turnpress's format or
some registered reader recognises is read; a file found that is not a run (not a
.json/.jsonl file, JSON that no reader recognises) is *skipped*, with the reason,
so that nothing is left out silently. A .json/.jsonl file found that cannot be
read (not UTF-8, invalid JSON, empty) is a broken run, not "not a run": it is
read as if it were named, and the command reports it as it reports a named file
(``compare`` skips and counts it, or stops with ``--strict``; ``import``,
``trace show`` and ``render`` stop with its error).

The Python functions behind those commands take the same inputs through it:
``compare_traces`` (the files found that are not runs are its result's
``not_runs``), ``import_transcripts`` (``ImportResult.skipped``) and
:func:`load_traces`, the runs ``trace show`` and ``render`` read
(:attr:`LoadedTraces.skipped`).
"""

from __future__ import annotations

import glob
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from turnpress.core.errors import TraceError
from turnpress.core.trace import (
    BOM,
    Trace,
    claims,
    first_line,
    iter_traces,
    parse_text,
    trace_file,
)

__all__ = ["TRACE_SUFFIXES", "Inputs", "LoadedTraces", "Scan", "discover", "load_traces",
           "skipped_lines"]

#: the file endings a directory or a pattern is searched for
TRACE_SUFFIXES = (".json", ".jsonl", ".ndjson")
_MAGIC = ("*", "?", "[")


@dataclass
class Inputs:
    """The files to read, and the files found but skipped with their reason."""

    files: list[Path] = field(default_factory=list)
    skipped: list[tuple[Path, str]] = field(default_factory=list)

    def iter_traces(self) -> Iterator[Trace]:
        """Every run of :attr:`files`, file by file, each read by
        :func:`~turnpress.core.trace.iter_traces` (a file that cannot be read raises
        its :class:`TraceError`, whether it was named or found)."""
        for path in self.files:
            yield from iter_traces(path)


@dataclass
class LoadedTraces(Inputs):
    """What :func:`load_traces` read: the runs (:attr:`traces`), the files they came
    from (``files``) and the files found but skipped, not runs, with their reason
    (``skipped``)."""

    traces: list[Trace] = field(default_factory=list)


def _is_pattern(arg: str) -> bool:
    return any(c in arg for c in _MAGIC) and not Path(arg).exists()


def _walk(directory: Path) -> list[Path]:
    found = []
    for root, _, files in os.walk(directory):
        found.extend(Path(root) / name for name in files)
    return sorted(found)


def why_not(path: Path) -> tuple[str, bool] | None:
    """Why a found file is not read (``None``: some reader recognises it), and whether
    it is that the file cannot be read (it cannot be opened, is not UTF-8 or not JSON,
    or is empty: a broken run) rather than that it is not a run (another ending, a
    format no reader recognises)."""
    if path.suffix.lower() not in TRACE_SUFFIXES:
        return f"not a {', '.join(TRACE_SUFFIXES)} file", False
    try:
        if path.suffix.lower() == ".json":
            obj = parse_text(path.read_bytes().removeprefix(BOM), str(path))
            return None if claims(obj, path) else ("not a format turnpress reads", False)
        with path.open("rb") as handle:
            first = first_line(handle, path, strict=True)
    except TraceError as exc:
        text = str(exc)
        return (text[len(f"{path}: "):] if text.startswith(f"{path}: ") else text), True
    except OSError as exc:
        return f"cannot read: {exc.strerror or exc}", True
    if first is None:
        return "empty: no line to read", True
    if claims(first, path) or claims([first], path):
        return None
    return "line 1 is not a format turnpress reads", False


class Scan:
    """:func:`discover`, one argument at a time, for a caller that reads its inputs as
    they come (``compare_traces`` streams its sources): :meth:`files` gives the files
    one argument names, each file once over all the arguments scanned, and adds them
    to :attr:`inputs`, with the files found that are not runs in ``inputs.skipped``."""

    def __init__(self) -> None:
        self.inputs = Inputs()
        self._seen: set[Path] = set()
        self._examined: dict[Path, tuple[str, bool]] = {}  # the files skipped, and why

    def _add(self, path: Path, new: list[Path]) -> None:
        key = path.resolve()
        if key not in self._seen:
            self._seen.add(key)
            self.inputs.files.append(path)
            new.append(path)

    def take(self, found: Inputs) -> list[Path]:
        """The files of ``found`` (what :func:`discover` found already) that no argument
        scanned before named, added as :meth:`files` adds them, with its skipped files."""
        new: list[Path] = []
        for path in found.files:
            self._add(path, new)
        for path, reason in found.skipped:
            if path.resolve() not in self._examined:
                self._examined[path.resolve()] = (reason, False)
                self.inputs.skipped.append((path, reason))
        return new

    def files(self, arg: str | os.PathLike[str]) -> list[Path]:
        """The files ``arg`` names that no argument scanned before named (see
        :func:`discover`)."""
        text = os.fspath(arg)
        path = Path(text)
        new: list[Path] = []
        if not (path.is_dir() or _is_pattern(text)):
            self._add(trace_file(text), new)  # a bundled trace's name: its file
            return new
        found = (_walk(path) if path.is_dir() else
                 [f for p in sorted(glob.glob(text, recursive=True))
                  for f in (_walk(Path(p)) if Path(p).is_dir() else [Path(p)])])
        if not found:
            raise TraceError(f"{text}: no file matches this pattern" if not path.is_dir()
                             else f"{text}: the directory holds no file")
        read = 0
        first_reason = None
        for f in found:
            key = f.resolve()
            if key in self._seen:  # named or found before: read once, there
                read += 1
                continue
            examined = self._examined.get(key) or why_not(f)
            if examined is None or examined[1]:  # a broken run: as if named
                read += 1
                self._add(f, new)
                continue
            if key not in self._examined:  # skipped once, however often it is found
                self._examined[key] = examined
                self.inputs.skipped.append((f, examined[0]))
            first_reason = first_reason or f"{f}: {examined[0]}"
        if not read:
            raise TraceError(f"{text}: no file turnpress reads among the {len(found)} "
                             f"found ({len(found)} skipped: {first_reason}...)")
        return new


def discover(args: str | os.PathLike[str] | Iterable[str | os.PathLike[str]]) -> Inputs:
    """The files named by ``args`` (a path or a list of them: files, bundled traces'
    names, directories, glob patterns; see the module docstring), in order, each once
    (a file named or found again is read once, where it came first, and a file found
    again that is not a run is listed once). A pattern that matches nothing, or a directory
    or pattern where no file is read, is a :class:`TraceError`. A file found that
    cannot be read (see :func:`why_not`) is one of the files to read, as if named
    (a broken run, for the command to report), never skipped here."""
    scan = Scan()
    for arg in _arguments(args):
        scan.files(arg)
    return scan.inputs


def _arguments(args: str | os.PathLike[str] | Iterable[str | os.PathLike[str]]
               ) -> Iterable[str | os.PathLike[str]]:
    """``args``, one path given alone as a list of it (a string is no list of
    letters)."""
    return [args] if isinstance(args, (str, os.PathLike)) else args


def load_traces(args: str | os.PathLike[str] | Iterable[str | os.PathLike[str]]
                ) -> LoadedTraces:
    """Every run of the files ``args`` name, in order: what ``turnpress trace show``
    and ``turnpress render`` read. ``args`` is a path or a list of them, each a trace
    file (JSON or JSONL, any format a reader reads), a bundled trace's name
    (``product-research``), a directory (read recursively) or a glob pattern
    (``"logs/**/*.jsonl"``), found by :func:`discover`, as on the command line.

    A file found that is not a run is not read: it is in ``skipped`` with its reason
    (the command names each on stderr). A file that cannot be read, named or found,
    raises its :class:`TraceError` (naming the file and line), as does a pattern
    that matches nothing or a directory where no file is a run."""
    found = discover(args)
    return LoadedTraces(found.files, found.skipped, list(found.iter_traces()))


def skipped_lines(inputs: Inputs, *, count: bool = True) -> list[str]:
    """One line per skipped file (``skipped FILE: why``), then (``count``) a count, or
    nothing. Without the count, a caller that reads the files counts them once it has
    (``compare``: of the files it kept, some may turn out not to be runs it can read)."""
    if not inputs.skipped:
        return []
    lines = [f"skipped {path}: {reason}" for path, reason in inputs.skipped]
    if count:
        lines.append(f"{len(inputs.skipped)} file(s) skipped, {len(inputs.files)} read")
    return lines
