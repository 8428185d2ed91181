"""Tables for the command line: rich in a terminal, plain lines in a pipe.

When stdout is not a terminal, a table is printed the way ``pip list`` does it:
a header, a dashed rule, then one line per row with the columns padded by
spaces, never wrapped or cut, so ``turnpress plugins | grep NAME`` finds the row.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import IO

from rich.console import Console
from rich.table import Table
from rich.text import Text

__all__ = ["is_terminal", "plain_table", "print_table"]


def is_terminal(stream: IO[str] | None = None) -> bool:
    """Whether ``stream`` (default: stdout) is an interactive terminal."""
    stream = stream or sys.stdout
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def plain_table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """The table as unwrapped lines: columns padded with spaces, a dashed rule
    under the header, trailing spaces stripped."""
    widths = [len(h) for h in headers]
    for row in rows:
        for i, cell in enumerate(row):
            widths[i] = max(widths[i], len(cell))

    def line(cells: Sequence[str]) -> str:
        return "  ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True)).rstrip()

    out = [line(headers), line(["-" * w for w in widths])]
    out.extend(line(row) for row in rows)
    return "\n".join(out)


def print_table(headers: Sequence[str], rows: Sequence[Sequence[str]], *,
                title: str | None = None, tty: bool | None = None,
                file: IO[str] | None = None) -> None:
    """Print a rich table in a terminal, :func:`plain_table` lines otherwise.

    ``tty`` forces one or the other (None: ask ``file``/stdout).
    """
    file = file or sys.stdout
    if not (is_terminal(file) if tty is None else tty):
        file.write(plain_table(headers, rows) + "\n")
        return
    table = Table(title=title)
    for header in headers:
        table.add_column(header, overflow="fold")
    for row in rows:
        table.add_row(*(Text(cell) for cell in row))
    Console(file=file, highlight=False).print(table)
