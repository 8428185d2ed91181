"""``turnpress import``: write agent transcripts as turnpress trace files (DESIGN §10).

Every input file is read the way ``load_trace`` reads it (turnpress's own format
or any registered transcript reader, one run per ``.json`` file or per ``.jsonl``
line) and every run is written as one line of a JSONL trace file (version 1
plus the transcript fields ``source``, ``preamble``, ``skipped`` and each turn's
``messages`` and ``usage``). ``load_trace`` / ``iter_traces`` read it back
losslessly, so ``compare`` on the output gives the same figures as on the input.

An existing output file is never silently replaced: the runs are appended to it,
as ``turnpress run --save-trace runs.jsonl`` appends a run; ``--force``
(``replace=True``) replaces it instead.
"""

from __future__ import annotations

import os
import shutil
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import click

from turnpress.cli import fail_cleanly, with_stdin
from turnpress.core.errors import quote
from turnpress.core.trace import (
    Trace,
    TraceError,
    append_jsonl,
    is_trace_file,
    iter_traces,
    run_digest,
    save_traces,
    trace_from_json_line,
)
from turnpress.core.trace_inputs import Inputs, discover, skipped_lines

__all__ = ["ImportResult", "import_command", "import_transcripts"]

OUTPUT_SUFFIXES = (".jsonl", ".ndjson")


@dataclass
class ImportResult:
    """What :func:`import_transcripts` wrote: runs per input file and per format."""

    output: Path
    runs: dict[str, int] = field(default_factory=dict)
    formats: Counter[str] = field(default_factory=Counter)
    #: whether the runs were appended to an output file that already existed
    appended: bool = False
    #: files found in a directory or by a pattern and not read, with the reason
    skipped: list[tuple[Path, str]] = field(default_factory=list)
    #: runs written that were already in the output (or twice in this import):
    #: ``(run name, where the same run already is)``
    duplicates: list[tuple[str, str]] = field(default_factory=list)
    #: runs written under the name of another run of the output (not the same run):
    #: ``(run name, where it comes from, where the other run of that name is)``;
    #: names are kept as they are, ``compare`` tells such runs apart by file and line
    same_names: list[tuple[str, str, str]] = field(default_factory=list)

    @property
    def total(self) -> int:
        """The number of runs written."""
        return sum(self.runs.values())


def import_transcripts(paths: str | os.PathLike[str] | Iterable[str | os.PathLike[str]],
                       output: str | os.PathLike[str], *,
                       replace: bool = False) -> ImportResult:
    """Read every run of ``paths`` and write them, in order, to the JSONL file ``output``.

    ``paths`` (a path, or a list of them) are what ``turnpress import`` takes, found
    the same way (:func:`~turnpress.core.trace_inputs.discover`): files, directories
    read recursively, glob patterns; each file found that is not a run is not read and
    is listed in ``ImportResult.skipped`` with its reason.

    When ``output`` exists, the runs are appended after its own (it must be a
    turnpress trace file); ``replace=True`` replaces it instead. Runs are streamed
    one at a time; the output is written to a temporary file and moved into place
    only when every input was read, so a bad input (a :class:`TraceError` naming the
    file, the message index and the problem) leaves the output as it was. A file of a
    directory or pattern that cannot be read is a bad input too, as if it were named
    (:func:`~turnpress.core.trace_inputs.discover`); one that is not a run is skipped.
    """
    out = Path(output)
    if out.suffix.lower() not in OUTPUT_SUFFIXES:
        raise TraceError(f"{out}: the output of turnpress import is a JSONL file, one run a "
                         f"line; name it with {' or '.join(OUTPUT_SUFFIXES)} (e.g. -o runs.jsonl)")
    found = discover(paths)
    files = found.files
    if not files:
        raise TraceError("no input file: give one or more transcript files to import")
    for f in files:
        if f.resolve() == out.resolve():
            raise TraceError(f"{out}: the output file is also an input; choose another -o")
    append = out.exists() and not replace
    if append:
        _check_appendable(out)
    result = ImportResult(out, appended=append, skipped=found.skipped)
    # the same run (whatever its name, file or format): the digest of each run in the
    # output -> where it is, to warn of a run imported again
    seen, names = _runs_in(out) if append else ({}, {})

    def runs() -> Iterator[Trace]:
        for f in files:
            result.runs[str(f)] = 0
            for trace in iter_traces(f):
                result.runs[str(f)] += 1
                result.formats[trace.source or "turnpress"] += 1
                n = result.total
                digest = run_digest(trace)
                here = f"run {n} of this import ({f})"
                if digest in seen:
                    result.duplicates.append((trace.name or f"run {n}", seen[digest]))
                else:
                    if digest:
                        seen[digest] = here
                    if trace.name in names:
                        result.same_names.append((trace.name, here, names[trace.name]))
                if trace.name:
                    names.setdefault(trace.name, here)
                yield trace

    partial = out.with_name(out.name + ".partial")
    fresh = out.with_name(out.name + ".new.partial")
    try:
        if not append:
            save_traces(runs(), partial)
        else:
            save_traces(runs(), fresh)
            shutil.copy(out, partial)  # its content and permissions
            with fresh.open("rb") as new_runs:
                append_jsonl(partial, new_runs)
        os.replace(partial, out)
    except OSError as exc:
        raise TraceError(f"{out}: cannot write: {exc.strerror or exc}") from None
    finally:
        for leftover in (partial, fresh):
            if leftover.exists():
                leftover.unlink()
    return result


def _runs_in(existing: Path) -> tuple[dict[str, str], dict[str, str]]:
    """The digest (:func:`~turnpress.core.trace.run_digest`) of each run of the JSONL
    trace file ``existing``, and each run's name -> where it is (``FILE: line N``); a
    line that cannot be read is left out (appending never reads the old runs
    otherwise)."""
    seen: dict[str, str] = {}
    names: dict[str, str] = {}
    with existing.open("rb") as handle:
        count = 0
        for lineno, raw in enumerate(handle, 1):
            if not raw.strip():
                continue
            count += 1
            try:
                trace = trace_from_json_line(raw.decode("utf-8"), existing, lineno, count)
            except (TraceError, UnicodeDecodeError):
                continue
            digest = run_digest(trace)
            if digest:
                seen.setdefault(digest, f"{existing}: line {lineno}")
            if trace.name:
                names.setdefault(trace.name, f"{existing}: line {lineno}")
    return seen, names


def _check_appendable(out: Path) -> None:
    """Refuse to append to a file whose first line is not a turnpress trace."""
    if out.is_dir():
        raise TraceError(f"{out}: is a directory; give a file name for -o (e.g. runs.jsonl)")
    if not is_trace_file(out):
        raise TraceError(f"{out}: the file exists and is not a turnpress trace file, so the "
                         f"runs were not appended to it; choose another -o, or add --force "
                         f"to replace it")


@click.command("import")
@click.argument("files", nargs=-1, required=True)
@click.option("--output", "-o", required=True, type=click.Path(dir_okay=False),
              help="The JSONL trace file to write (one run a line). If it exists, the "
                   "runs are appended to it.")
@click.option("--force", is_flag=True,
              help="Replace an existing -o file instead of appending to it.")
def import_command(files: tuple[str, ...], output: str, force: bool) -> None:
    """Import agent transcripts (OpenAI chat, mini-swe-agent, Anthropic Messages or any
    format a plugin reads) as a turnpress JSONL trace file.

    Each FILE holds one run (.json: the final message list of a run, a
    mini-swe-agent .traj.json...) or one run a line (.jsonl); a directory is read
    recursively and a glob pattern expanded: each file found that is not a run
    (another ending, JSON no reader recognises) is named on stderr and passed over,
    while one that cannot be read (invalid JSON, not UTF-8, empty) is a bad input,
    as if it were named. An existing -o file keeps its runs and gets the new ones
    appended, as `run --save-trace x.jsonl` does; --force replaces it. Nothing is
    written if any input is bad (exit code 2, the error names the file and line).
    Runs keep their names: one with the name of another run of the output (two
    run.json in two folders) gets a warning, as one imported again does.
    """
    try:
        result = import_transcripts(with_stdin(files), output, replace=force)
    except TraceError as exc:
        raise fail_cleanly(exc) from None
    for line in skipped_lines(Inputs(list(map(Path, result.runs)), result.skipped)):
        click.echo(line, err=True)
    for name, where in result.duplicates:
        click.echo(f"warning: run {quote(name)} was imported again: the same run is already "
                   f"at {where}", err=True)
    for name, here, other in result.same_names:
        click.echo(f"warning: run {quote(name)}, {here}, has the name of another run, at "
                   f"{other}: both keep it (compare tells them apart by file and line)",
                   err=True)
    formats = ", ".join(f"{name} x{count}" for name, count in sorted(result.formats.items()))
    verb = "appended" if result.appended else "imported"
    click.echo(f"{verb} {result.total} run(s) from {len(result.runs)} file(s) to "
               f"{result.output} ({formats})")
