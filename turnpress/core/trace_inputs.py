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
"""

from __future__ import annotations

import glob
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from turnpress.core.errors import TraceError
from turnpress.core.trace import BOM, claims, first_line, parse_text

__all__ = ["TRACE_SUFFIXES", "Inputs", "discover", "skipped_lines"]

#: the file endings a directory or a pattern is searched for
TRACE_SUFFIXES = (".json", ".jsonl", ".ndjson")
_MAGIC = ("*", "?", "[")


@dataclass
class Inputs:
    """The files to read, and the files found but skipped with their reason."""

    files: list[Path] = field(default_factory=list)
    skipped: list[tuple[Path, str]] = field(default_factory=list)


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


def discover(args: Iterable[str | os.PathLike[str]]) -> Inputs:
    """The files named by ``args`` (files, directories, glob patterns; see the module
    docstring), in order, each once. A pattern that matches nothing, or a directory
    or pattern where no file is read, is a :class:`TraceError`. A file found that
    cannot be read (see :func:`why_not`) is one of the files to read, as if named
    (a broken run, for the command to report), never skipped here."""
    out = Inputs()
    seen: set[Path] = set()

    def add(path: Path) -> None:
        key = path.resolve()
        if key not in seen:
            seen.add(key)
            out.files.append(path)

    for arg in args:
        text = os.fspath(arg)
        path = Path(text)
        if path.is_dir() or _is_pattern(text):
            found = (_walk(path) if path.is_dir() else
                     [f for p in sorted(glob.glob(text, recursive=True))
                      for f in (_walk(Path(p)) if Path(p).is_dir() else [Path(p)])])
            if not found:
                raise TraceError(f"{text}: no file matches this pattern" if not path.is_dir()
                                 else f"{text}: the directory holds no file")
            before = len(out.files)
            first_reason = None
            for f in found:
                examined = why_not(f)
                if examined is None or examined[1]:  # a broken run: as if named
                    add(f)
                else:
                    out.skipped.append((f, examined[0]))
                    first_reason = first_reason or f"{f}: {examined[0]}"
            if len(out.files) == before:
                raise TraceError(f"{text}: no file turnpress reads among the {len(found)} "
                                 f"found ({len(found)} skipped: {first_reason}...)")
        else:
            add(path)
    return out


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
