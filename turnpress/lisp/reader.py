"""The PTC-Lisp reader: source text -> a list of forms (see :mod:`turnpress.lisp.forms`).

It is iterative (an explicit stack, no Python recursion), so hostile nesting cannot
overflow Python's stack: more than ``max_nesting`` open brackets is a syntax error.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable
from typing import Any

from turnpress.core.model import Keyword
from turnpress.lisp.errors import LispSyntaxError
from turnpress.lisp.forms import ListForm, MapForm, SetForm, Symbol, VectorForm
from turnpress.lisp.regex import parse_regex
from turnpress.lisp.values import MAX_INT_BITS

__all__ = ["MAX_NESTING", "read_program"]

#: Default limit on bracket nesting in a program.
MAX_NESTING = 128

_TOKEN = re.compile(
    r"""
    (?P<ws>[\s,]+)
  | (?P<comment>;[^\n]*)
  | (?P<string>"[^"\\]*(?:\\.[^"\\]*)*")
  | (?P<regex>\#"[^"\\]*(?:\\.[^"\\]*)*")
  | (?P<open>\(|\[|\{|\#\{|\#\()
  | (?P<close>[)\]}])
  | (?P<quote>')
  | (?P<special>\#\#(?:Inf|-Inf|NaN))
  | (?P<char>\\(?:newline|space|tab|return|.))
  | (?P<atom>[^\s,;()\[\]{}"\\']+)
  | (?P<bad>.)
    """,
    re.VERBOSE | re.DOTALL,
)

_INT = re.compile(r"[+-]?\d+N?\Z")
_FLOAT = re.compile(r"[+-]?\d+(?:\.\d*)?(?:[eE][+-]?\d+)?M?\Z")
_RATIO = re.compile(r"([+-]?\d+)/(\d+)\Z")
_STRING_ESCAPES = {'"': '"', "\\": "\\", "n": "\n", "t": "\t", "r": "\r", "b": "\b",
                   "f": "\f", "/": "/"}
_CHARS = {"newline": "\n", "space": " ", "tab": "\t", "return": "\r"}
_CLOSERS = {"(": ")", "[": "]", "{": "}", "#{": "}", "#(": ")"}
_SPECIALS = {"##Inf": float("inf"), "##-Inf": float("-inf"), "##NaN": float("nan")}


class _Source:
    """Maps string offsets to 1-based (line, column)."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.newlines = [m.start() for m in re.finditer("\n", text)]

    def where(self, offset: int) -> tuple[int, int]:
        """(line, column) of ``offset``."""
        line = bisect.bisect_left(self.newlines, offset)
        start = self.newlines[line - 1] + 1 if line else 0
        return line + 1, offset - start + 1

    def error(self, message: str, offset: int) -> LispSyntaxError:
        """A syntax error located at ``offset``."""
        line, column = self.where(offset)
        return LispSyntaxError(message, line, column)


class _Frame:
    __slots__ = ("column", "items", "line", "offset", "opener")

    def __init__(self, opener: str, offset: int, line: int, column: int) -> None:
        self.opener = opener
        self.offset = offset
        self.line = line
        self.column = column
        self.items: list[Any] = []


def _read_string(src: _Source, token: str, offset: int) -> str:
    body = token[1:-1]
    if "\\" not in body:
        return body
    out = []
    i = 0
    while i < len(body):
        ch = body[i]
        if ch != "\\":
            out.append(ch)
            i += 1
            continue
        esc = body[i + 1]
        if esc in _STRING_ESCAPES:
            out.append(_STRING_ESCAPES[esc])
            i += 2
        elif esc == "u" and re.fullmatch(r"[0-9a-fA-F]{4}", body[i + 2 : i + 6]):
            out.append(chr(int(body[i + 2 : i + 6], 16)))
            i += 6
        else:
            raise src.error(f"unsupported escape sequence \\{esc} in string", offset + 1 + i)
    return "".join(out)


def _read_atom(src: _Source, token: str, offset: int) -> Any:
    if token == "nil":
        return None
    if token == "true":
        return True
    if token == "false":
        return False
    first = token[0]
    if first.isdigit() or (first in "+-" and len(token) > 1 and token[1].isdigit()):
        return _read_number(src, token, offset)
    if first == ":":
        name = token[1:]
        if not name or name.startswith(":") or name.endswith("/"):
            raise src.error(f"invalid keyword {token}", offset)
        return Keyword(name)
    if first in "#@~^`":
        raise src.error(f"unsupported reader syntax {token}", offset)
    if token != "/" and (token.startswith("/") or token.endswith("/") or token.count("/") > 1):
        raise src.error(f"invalid symbol {token}", offset)
    line, column = src.where(offset)
    return Symbol(token, line, column)


def _read_number(src: _Source, token: str, offset: int) -> int | float:
    try:
        if _INT.match(token):
            value = int(token.rstrip("N"))
            if value.bit_length() > MAX_INT_BITS:
                raise src.error(f"number too large: {token[:40]}... (more than "
                                f"{MAX_INT_BITS} bits)", offset)
            return value
        if _FLOAT.match(token):
            return float(token.rstrip("M"))
        ratio = _RATIO.match(token)
        if ratio:
            denominator = int(ratio.group(2))
            if denominator == 0:
                raise src.error(f"division by zero in ratio {token}", offset)
            numerator = int(ratio.group(1))
            return numerator // denominator if numerator % denominator == 0 else (
                numerator / denominator)
    except (ValueError, OverflowError):
        raise src.error(f"number too large: {token[:40]}", offset) from None
    raise src.error(f"invalid number {token}", offset)


def _fn_literal(src: _Source, frame: _Frame) -> ListForm:
    """``#(+ % %2)`` -> ``(fn [%1 %2] (+ %1 %2))``."""
    max_index = 0
    rest = False

    def rewrite(form: Any) -> Any:
        nonlocal max_index, rest
        if isinstance(form, Symbol):
            name = form.name
            if name == "%":
                max_index = max(max_index, 1)
                return Symbol("%1", form.line, form.column)
            if name == "%&":
                rest = True
            elif name.startswith("%") and name[1:].isdigit():
                index = int(name[1:])
                if index < 1 or index > 20:
                    raise src.error(f"invalid argument {name} in #()", frame.offset)
                max_index = max(max_index, index)
            return form
        if isinstance(form, tuple) and hasattr(form, "line"):
            return type(form)([rewrite(x) for x in form], form.line, form.column)
        return form

    body = ListForm([rewrite(x) for x in frame.items], frame.line, frame.column)
    params: list[Any] = [Symbol(f"%{i}", frame.line, frame.column) for i in
                         range(1, max_index + 1)]
    if rest:
        params += [Symbol("&"), Symbol("%&")]
    return ListForm(
        [Symbol("fn", frame.line, frame.column), VectorForm(params, frame.line, frame.column),
         body],
        frame.line, frame.column)


def _close(src: _Source, frame: _Frame) -> Any:
    opener, items, line, column = frame.opener, frame.items, frame.line, frame.column
    if opener == "(":
        return ListForm(items, line, column)
    if opener == "[":
        return VectorForm(items, line, column)
    if opener == "{":
        if len(items) % 2:
            raise src.error("a map literal needs an even number of forms", frame.offset)
        return MapForm(items, line, column)
    if opener == "#{":
        return SetForm(items, line, column)
    return _fn_literal(src, frame)


def read_program(source: str, *, max_nesting: int = MAX_NESTING,
                 check: Callable[[], None] | None = None) -> list[Any]:
    """Read every top-level form of ``source``.

    Raises :class:`~turnpress.lisp.errors.LispSyntaxError` (with ``.line`` and
    ``.column``) for unbalanced brackets, bad tokens, unsupported reader syntax,
    or nesting deeper than ``max_nesting``. ``check``, if given, is called every
    few thousand tokens (the interpreter passes its clock check, so reading
    counts toward the time limit).
    """
    if not isinstance(source, str):
        raise LispSyntaxError(f"program must be text, got {type(source).__name__}", 1, 1)
    src = _Source(source)
    top: list[Any] = []
    stack: list[_Frame] = []
    quotes: list[tuple[int, int]] = []  # (stack depth, offset) of pending ' prefixes
    fn_depth = 0

    def emit(form: Any) -> None:
        while quotes and quotes[-1][0] == len(stack):
            _, q_offset = quotes.pop()
            line, column = src.where(q_offset)
            form = ListForm([Symbol("quote", line, column), form], line, column)
        (stack[-1].items if stack else top).append(form)

    tokens = 0
    for match in _TOKEN.finditer(source):
        tokens += 1
        if check is not None and not tokens & 4095:
            check()
        kind = match.lastgroup
        token = match.group()
        offset = match.start()
        if kind in ("ws", "comment"):
            continue
        if kind == "open":
            if len(stack) >= max_nesting:
                raise src.error(f"nesting too deep (more than {max_nesting} levels)", offset)
            if token == "#(":
                if fn_depth:
                    raise src.error("nested #() function literals are not allowed", offset)
                fn_depth += 1
            line, column = src.where(offset)
            stack.append(_Frame(token, offset, line, column))
        elif kind == "close":
            if not stack:
                raise src.error(f"unexpected {token}", offset)
            frame = stack[-1]
            expected = _CLOSERS[frame.opener]
            if token != expected:
                raise src.error(
                    f"expected {expected} to close {frame.opener} from line {frame.line}, "
                    f"column {frame.column}, but found {token}", offset)
            if quotes and quotes[-1][0] == len(stack):
                raise src.error("' must be followed by a form", quotes[-1][1])
            stack.pop()
            if frame.opener == "#(":
                fn_depth -= 1
            emit(_close(src, frame))
        elif kind == "string":
            emit(_read_string(src, token, offset))
        elif kind == "regex":
            pattern = token[2:-1].replace('\\"', '"')
            value = parse_regex(pattern)
            if value is None:
                raise src.error(
                    f'unsupported regular expression #"{pattern}": PTC-Lisp only accepts '
                    'literal patterns, #"\\s+" and literal patterns with \\s* around them',
                    offset)
            emit(value)
        elif kind == "quote":
            quotes.append((len(stack), offset))
        elif kind == "special":
            emit(_SPECIALS[token])
        elif kind == "char":
            body = token[1:]
            emit(_CHARS.get(body, body))
        elif kind == "atom":
            emit(_read_atom(src, token, offset))
        elif token == '"':
            raise src.error("unterminated string", offset)
        else:
            raise src.error(f"unexpected character {token!r}", offset)
    if stack:
        frame = stack[-1]
        raise src.error(f"unclosed {frame.opener}: missing {_CLOSERS[frame.opener]}",
                        frame.offset)
    if quotes:
        raise src.error("' must be followed by a form", quotes[-1][1])
    return top
