"""Built-ins for strings. Each is also reachable as ``clojure.string/NAME``."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from turnpress.lisp.errors import LispError
from turnpress.lisp.library.registry import core
from turnpress.lisp.regex import Regex
from turnpress.lisp.render import to_str
from turnpress.lisp.values import MISSING, is_seq, kind_name, lookup, seq


def _s(x: Any, fname: str) -> str:
    if type(x) is str:
        return x
    raise LispError("type_error", f"{fname} expects a string, got {kind_name(x)}")


def _q(name: str) -> tuple[str]:
    return (f"clojure.string/{name}",)


@core("str", "Concatenate the arguments as text: (str \"a\" 1 nil :k) is \"a1:k\" "
      "(nil adds nothing, collections print as Clojure).", category="strings")
def str_(ctx: Any, *xs: Any) -> str:
    if len(xs) == 1 and type(xs[0]) is str:
        return xs[0]
    parts = [to_str(x, ctx, ctx.max_string) for x in xs]
    ctx.check_chars(sum(len(p) for p in parts))
    return "".join(parts)


@core("subs", "(subs s start) or (subs s start end): the substring.", category="strings")
def subs(ctx: Any, s: Any, start: Any, end: Any = MISSING) -> str:
    s = _s(s, "subs")
    stop = len(s) if end is MISSING else end
    if type(start) is not int or type(stop) is not int:
        raise LispError("type_error", "subs expects integer positions")
    if not 0 <= start <= stop <= len(s):
        raise LispError("runtime_error",
                        f"subs range {start}..{stop} out of bounds for a string of {len(s)}")
    ctx.check_chars(stop - start)
    return s[start:stop]


def _sep(sep: Any, fname: str) -> str | Regex:
    if type(sep) is str or isinstance(sep, Regex):
        return sep
    raise LispError("type_error", f"{fname} expects a string separator, got {kind_name(sep)}")


@core("split", "(split s sep) or (split s sep limit): the parts of s between separators "
      "(a string, or #\"\\s+\"); trailing empty parts are dropped.", category="strings",
      qualified=_q("split"))
def split(ctx: Any, s: Any, sep: Any, limit: Any = MISSING) -> list[str]:
    s = _s(s, "split")
    sep = _sep(sep, "split")
    ctx.charge_copy(len(s))
    if limit is not MISSING:
        if type(limit) is not int:
            raise LispError("type_error", "split limit must be an integer")
        if isinstance(sep, Regex):
            parts = sep.split(s)
            if limit > 0 and len(parts) > limit:
                raise LispError("runtime_error", "split limit is only supported with a "
                                                 "string separator")
            return parts
        if sep == "":
            parts = list(s)
        else:
            parts = s.split(sep, limit - 1) if limit > 0 else s.split(sep)
        return parts
    if isinstance(sep, Regex):
        parts = sep.split(s)
    elif sep == "":
        parts = list(s)
    else:
        parts = s.split(sep)
    while parts and parts[-1] == "":
        parts.pop()
    return parts or [""] if s == "" else parts


@core("join", "(join coll) or (join sep coll): the items as text, separated by sep.",
      category="strings", qualified=_q("join"))
def join(ctx: Any, a: Any, b: Any = MISSING) -> str:
    if b is MISSING:
        sep, coll = "", a
    elif type(b) is str and (is_seq(a) or a is None):
        sep, coll = b, a  # (join coll sep): accepted too
    else:
        sep, coll = a, b
    sep = to_str(sep, ctx, ctx.max_string)
    items = seq(coll)
    ctx.charge(len(items))
    parts = [x if type(x) is str else to_str(x, ctx, ctx.max_string) for x in items]
    ctx.check_chars(sum(len(p) for p in parts) + len(sep) * max(len(parts) - 1, 0))
    return sep.join(parts)


@core("upper-case", "The string in upper case.", category="strings",
      qualified=_q("upper-case"))
def upper_case(ctx: Any, s: Any) -> str:
    ctx.check_chars(len(_s(s, "upper-case")))
    return _s(s, "upper-case").upper()


@core("lower-case", "The string in lower case.", category="strings",
      qualified=_q("lower-case"))
def lower_case(ctx: Any, s: Any) -> str:
    ctx.check_chars(len(_s(s, "lower-case")))
    return _s(s, "lower-case").lower()


@core("capitalize", "First character upper case, the rest lower case.", category="strings",
      qualified=_q("capitalize"))
def capitalize(ctx: Any, s: Any) -> str:
    s = _s(s, "capitalize")
    ctx.check_chars(len(s))
    return s[:1].upper() + s[1:].lower()


@core("trim", "The string without surrounding whitespace.", category="strings",
      qualified=_q("trim"))
def trim(ctx: Any, s: Any) -> str:
    ctx.check_chars(len(_s(s, "trim")))
    return _s(s, "trim").strip()


@core("triml", "The string without leading whitespace.", category="strings",
      qualified=_q("triml"))
def triml(ctx: Any, s: Any) -> str:
    ctx.check_chars(len(_s(s, "triml")))
    return _s(s, "triml").lstrip()


@core("trimr", "The string without trailing whitespace.", category="strings",
      qualified=_q("trimr"))
def trimr(ctx: Any, s: Any) -> str:
    ctx.check_chars(len(_s(s, "trimr")))
    return _s(s, "trimr").rstrip()


@core("blank?", "True for nil, \"\" or only whitespace.", category="strings",
      qualified=_q("blank?"))
def is_blank(s: Any) -> bool:
    return s is None or _s(s, "blank?").isspace() or s == ""


@core("includes?", "(includes? s sub): s contains sub.", category="strings",
      qualified=_q("includes?"))
def includes(ctx: Any, s: Any, sub: Any) -> bool:
    s = _s(s, "includes?")
    ctx.charge((len(s) >> 8) + 1)
    return _s(sub, "includes?") in s


@core("starts-with?", "True when s begins with prefix.", category="strings",
      qualified=_q("starts-with?"))
def starts_with(s: Any, prefix: Any) -> bool:
    return _s(s, "starts-with?").startswith(_s(prefix, "starts-with?"))


@core("ends-with?", "True when s ends with suffix.", category="strings", qualified=_q("ends-with?"))
def ends_with(s: Any, suffix: Any) -> bool:
    return _s(s, "ends-with?").endswith(_s(suffix, "ends-with?"))


@core("index-of", "(index-of s sub): position of the first sub in s, or nil.",
      category="strings", qualified=_q("index-of"))
def index_of(ctx: Any, s: Any, sub: Any) -> Any:
    s = _s(s, "index-of")
    ctx.charge((len(s) >> 8) + 1)
    i = s.find(_s(sub, "index-of"))
    return None if i < 0 else i


@core("last-index-of", "(last-index-of s sub): position of the last sub in s, or nil.",
      category="strings", qualified=_q("last-index-of"))
def last_index_of(ctx: Any, s: Any, sub: Any) -> Any:
    s = _s(s, "last-index-of")
    ctx.charge((len(s) >> 8) + 1)
    i = s.rfind(_s(sub, "last-index-of"))
    return None if i < 0 else i


@core("split-lines", "The lines of a string.", category="strings",
      qualified=_q("split-lines"))
def split_lines(ctx: Any, s: Any) -> list[str]:
    s = _s(s, "split-lines")
    ctx.charge_copy(len(s))
    return split(ctx, s.replace("\r\n", "\n"), "\n")


@core("string-reverse", "The characters of a string in reverse (clojure.string/reverse).",
      category="strings", bare=False, qualified=_q("reverse"))
def string_reverse(ctx: Any, s: Any) -> str:
    ctx.check_chars(len(_s(s, "reverse")))
    return _s(s, "reverse")[::-1]


def _replace_string(ctx: Any, s: str, match: Any, repl: Any) -> str:
    match = _sep(match, "replace")
    repl = _s(repl, "replace")
    if isinstance(match, Regex):
        parts = match.split(s)
        ctx.check_chars(sum(len(p) for p in parts) + len(repl) * (len(parts) - 1))
        return repl.join(parts)
    if match == "":
        raise LispError("runtime_error", "replace needs a non-empty pattern")
    ctx.check_chars(len(s) + s.count(match) * (len(repl) - len(match)))
    return s.replace(match, repl)


@core("replace", "(replace s match replacement): every match (a string, or #\"\\s+\") "
      "replaced; (replace smap coll) replaces items found in the map smap.",
      category="strings", qualified=())
def replace(ctx: Any, a: Any, b: Any, c: Any = MISSING) -> Any:
    if c is MISSING:
        if not isinstance(a, Mapping):
            raise LispError("arity_error", "replace takes (replace s match replacement) "
                                           "or (replace smap coll)")
        items = seq(b)
        ctx.charge(len(items))
        return [lookup(a, x, x) for x in items]
    return _replace_string(ctx, _s(a, "replace"), b, c)


@core("string-replace", "Every match in s replaced, like replace.", category="strings",
      bare=False, qualified=_q("replace"))
def string_replace(ctx: Any, s: Any, match: Any, repl: Any) -> str:
    return _replace_string(ctx, _s(s, "replace"), match, repl)


_FORMAT = re.compile(r"%(?P<flags>[-+ 0,]*)(?P<width>\d+)?(?:\.(?P<prec>\d+))?(?P<conv>[a-zA-Z%])")


@core("format", "(format fmt & args): printf-style text; supports %s %d %f %.2f %e %x %% "
      "with width and - + 0 , flags.", category="strings")
def format_(ctx: Any, fmt: Any, *args: Any) -> str:
    fmt = _s(fmt, "format")
    values = list(args)
    out: list[str] = []
    pos = 0
    for m in _FORMAT.finditer(fmt):
        out.append(fmt[pos:m.start()])
        pos = m.end()
        conv = m.group("conv")
        if conv == "%":
            out.append("%")
            continue
        if conv == "n":
            out.append("\n")
            continue
        if not values:
            raise LispError("runtime_error", f"format: not enough arguments for {m.group()}")
        out.append(_format_one(ctx, m, values.pop(0)))
        ctx.check_chars(sum(len(p) for p in out))
    out.append(fmt[pos:])
    return "".join(out)


def _format_one(ctx: Any, m: re.Match[str], value: Any) -> str:
    flags, width, prec, conv = m.group("flags"), m.group("width"), m.group("prec"), m.group(
        "conv")
    if width and int(width) > ctx.max_string:
        raise LispError("size_limit", "format width too large")
    if prec and int(prec) > 1000:
        raise LispError("size_limit", "format precision too large")
    align = "<" if "-" in flags else ""
    if conv in "sS":
        text = "nil" if value is None else to_str(value, ctx, ctx.max_string)
        if prec:
            text = text[: int(prec)]
        text = format(text, f"{align or '>'}{width or ''}")
        return text.upper() if conv == "S" else text
    spec = align + ("+" if "+" in flags else " " if " " in flags else "")
    spec += "0" if "0" in flags and not align else ""
    spec += width or ""
    spec += "," if "," in flags else ""
    if conv == "d":
        if type(value) is not int:
            raise LispError("type_error", f"format %d expects an integer, got {kind_name(value)}")
        return format(value, spec + "d")
    if conv in "fe":
        if type(value) not in (int, float):
            raise LispError("type_error", f"format %{conv} expects a number, got "
                                          f"{kind_name(value)}")
        return format(float(value), spec + f".{prec or 6}{conv}")
    if conv in "xX":
        if type(value) is not int:
            raise LispError("type_error", f"format %x expects an integer, got {kind_name(value)}")
        return format(value, spec + conv)
    if conv == "b":
        return format("false" if value is None or value is False else "true",
                      f"{align or '>'}{width or ''}")
    raise LispError("runtime_error", f"format: unsupported conversion {m.group()}")
