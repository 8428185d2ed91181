"""The text of a trace file: UTF-8 decoding and JSON parsing, every problem a one-line
:class:`~turnpress.core.errors.TraceError` naming the file, the line and the column (a
UTF-16 file, what Windows PowerShell's ``>`` writes, is named as such)."""

from __future__ import annotations

import json
import sys
from typing import Any

from turnpress.core import codec
from turnpress.core.errors import TraceError

__all__ = ["BOM", "decode_utf8", "parse_json", "parse_text", "utf16_hint"]

#: a UTF-8 byte order mark, accepted (and ignored) at the start of a file
BOM = b"\xef\xbb\xbf"


class _BadConstant(ValueError):
    pass


def _reject_constant(name: str) -> Any:
    raise _BadConstant(f'{name} is not JSON; write {{"$float": "nan"}}, "inf" or "-inf"')


#: JSON nesting json.loads may recurse through (deeper input is a TraceError, never a
#: crash, even while another thread has raised the interpreter's recursion limit).
_JSON_RECURSION = 3000


def _loads(text: str) -> Any:
    limit = sys.getrecursionlimit()
    if limit <= _JSON_RECURSION:
        return json.loads(text, parse_constant=_reject_constant)
    depth, frame = 0, sys._getframe()
    while frame is not None:
        depth, frame = depth + 1, frame.f_back
    sys.setrecursionlimit(depth + _JSON_RECURSION)
    try:
        return json.loads(text, parse_constant=_reject_constant)
    finally:
        sys.setrecursionlimit(limit)


def parse_json(text: str, where: str, line_offset: int = 0) -> Any:
    """One JSON value, every problem a one-line :class:`TraceError` (``line_offset``:
    the text is one line of a file, which ``where`` names)."""
    try:
        return _loads(text)
    except json.JSONDecodeError as exc:
        at = f"{where}: " if line_offset else f"{where}: line {exc.lineno}: "
        message = exc.msg.removesuffix(" at")  # "Invalid control character at"
        raise TraceError(f"{at}invalid JSON at column {exc.colno}: {message}") from None
    except RecursionError:
        raise TraceError(f"{where}: JSON nested too deeply (values deeper than "
                         f"{codec.CHUNK_DEPTH} levels are written as a $graph)") from None
    except ValueError as exc:
        if isinstance(exc, _BadConstant):
            raise TraceError(f"{where}: {exc}") from None
        raise TraceError(f"{where}: a number too large to read (integers of more than "
                         f'4,300 digits are written {{"$int": "0x..."}})') from None


def utf16_hint(start: bytes) -> str:
    """``"; ..."`` saying what to do when ``start`` (a file's first bytes) is a UTF-16
    byte order mark (what Windows PowerShell's ``>`` writes), else ``""``."""
    if start.startswith((b"\xff\xfe", b"\xfe\xff")):
        return ("; it is UTF-16 (it starts with a UTF-16 byte order mark, as Windows "
                "PowerShell's > writes): save it as UTF-8")
    return ""


def decode_utf8(data: bytes, where: str, first_line: int | None = None) -> str:
    """``data`` as text; not UTF-8 is a :class:`TraceError` naming the line and column
    (``first_line``: ``data`` is that line of the file, which ``where`` names)."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        hint = utf16_hint(data[:2]) if first_line in (None, 1) else ""
        if first_line is None:
            line = data[: exc.start].count(b"\n") + 1
            column = exc.start - data.rfind(b"\n", 0, exc.start)
            raise TraceError(f"{where}: line {line}: not UTF-8 text (byte "
                             f"0x{data[exc.start]:02x} at column {column}){hint}") from None
        raise TraceError(f"{where}: not UTF-8 text (byte 0x{data[exc.start]:02x} at "
                         f"column {exc.start + 1}){hint}") from None


def parse_text(data: bytes, where: str) -> Any:
    """One JSON document (UTF-8 bytes), every problem a one-line :class:`TraceError`."""
    return parse_json(decode_utf8(data, where), where)
