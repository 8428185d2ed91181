"""``turnpress import``: write agent transcripts as turnpress trace files (DESIGN §10).

Every input file is read the way ``load_trace`` reads it (turnpress's own format
or any registered transcript reader, one run per ``.json`` file or per ``.jsonl``
line) and every run is written as one line of a JSONL trace file (version 1
plus the transcript fields ``source``, ``preamble``, ``skipped`` and each turn's
``messages`` and ``usage``). ``load_trace`` / ``iter_traces`` read it back
losslessly, so ``compare`` on the output gives the same figures as on the input.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import click

from turnpress.core.trace import Trace, TraceError, iter_traces, save_traces

__all__ = ["ImportResult", "import_command", "import_transcripts"]

OUTPUT_SUFFIXES = (".jsonl", ".ndjson")


@dataclass
class ImportResult:
    """What :func:`import_transcripts` wrote: runs per input file and per format."""

    output: Path
    runs: dict[str, int] = field(default_factory=dict)
    formats: Counter[str] = field(default_factory=Counter)

    @property
    def total(self) -> int:
        """The number of runs written."""
        return sum(self.runs.values())


def import_transcripts(paths: Iterable[str | os.PathLike[str]],
                       output: str | os.PathLike[str]) -> ImportResult:
    """Read every run of ``paths`` and write them, in order, to the JSONL file ``output``.

    Runs are streamed one at a time; the output is written to a temporary file and
    moved into place only when every input was read, so a bad input (a
    :class:`TraceError` naming the file, the message index and the problem)
    leaves no half-written output behind.
    """
    out = Path(output)
    if out.suffix.lower() not in OUTPUT_SUFFIXES:
        raise TraceError(f"{out}: the output of turnpress import is a JSONL file, one run a "
                         f"line; name it with {' or '.join(OUTPUT_SUFFIXES)} (e.g. -o runs.jsonl)")
    files = [Path(p) for p in paths]
    if not files:
        raise TraceError("no input file: give one or more transcript files to import")
    for f in files:
        if f.resolve() == out.resolve():
            raise TraceError(f"{out}: the output file is also an input; choose another -o")
    result = ImportResult(out)

    def runs() -> Iterator[Trace]:
        for f in files:
            result.runs[str(f)] = 0
            for trace in iter_traces(f):
                result.runs[str(f)] += 1
                result.formats[trace.source or "turnpress"] += 1
                yield trace

    partial = out.with_name(out.name + ".partial")
    try:
        save_traces(runs(), partial)
        os.replace(partial, out)
    except OSError as exc:
        raise TraceError(f"{out}: cannot write: {exc.strerror or exc}") from None
    finally:
        if partial.exists():
            partial.unlink()
    return result


@click.command("import")
@click.argument("files", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option("--output", "-o", required=True, type=click.Path(dir_okay=False),
              help="The JSONL trace file to write (one run a line).")
def import_command(files: tuple[str, ...], output: str) -> None:
    """Import agent transcripts (OpenAI chat, mini-swe-agent, Anthropic Messages or any
    format a plugin reads) as a turnpress JSONL trace file."""
    from turnpress.cli import fail_cleanly

    try:
        result = import_transcripts(files, output)
    except TraceError as exc:
        raise fail_cleanly(exc) from None
    formats = ", ".join(f"{name} x{count}" for name, count in sorted(result.formats.items()))
    click.echo(f"imported {result.total} run(s) from {len(result.runs)} file(s) to "
               f"{result.output} ({formats})")
