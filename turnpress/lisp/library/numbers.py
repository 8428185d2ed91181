"""Built-ins for arithmetic, comparison and logic."""

from __future__ import annotations

import itertools
import math
import operator
from typing import Any

from turnpress.lisp.errors import LispError
from turnpress.lisp.library.registry import core
from turnpress.lisp.values import MAX_INT_BITS, compare, kind_name, lisp_eq, truthy

_NUM = frozenset({int, float})


def _num(x: Any, fname: str) -> Any:
    t = type(x)
    if t is int or t is float:
        return x
    if t is not bool and isinstance(x, (int, float)):
        return x
    raise LispError("type_error", f"{fname} expects numbers, got {kind_name(x)}")


def _int(x: Any, fname: str) -> int:
    if type(x) is int:
        return x
    if type(x) is float and x.is_integer():
        return int(x)
    raise LispError("type_error", f"{fname} expects an integer, got {kind_name(x)}")


_INT_LIMIT = 1 << MAX_INT_BITS
_INT_MAX = _INT_LIMIT - 1


def _too_big() -> LispError:
    return LispError("size_limit", f"integer too large (more than {MAX_INT_BITS} bits)")


def _big(r: Any) -> Any:
    """``r``, unless it is an integer past :data:`MAX_INT_BITS` (``size_limit``)."""
    if type(r) is int and not -_INT_LIMIT < r < _INT_LIMIT:
        raise _too_big()
    return r


def _add2(a: Any, b: Any) -> Any:
    ta, tb = type(a), type(b)
    if ta is int and tb is int:
        r = a + b
        if -_INT_LIMIT < r < _INT_LIMIT:
            return r
        raise _too_big()
    if ta in _NUM and tb in _NUM:
        return a + b  # a float
    return add(a, b)


def _sub2(a: Any, b: Any) -> Any:
    ta, tb = type(a), type(b)
    if ta is int and tb is int:
        r = a - b
        if -_INT_LIMIT < r < _INT_LIMIT:
            return r
        raise _too_big()
    if ta in _NUM and tb in _NUM:
        return a - b  # a float
    return sub(a, b)


def _mul2(a: Any, b: Any) -> Any:
    if (type(a) is float and type(b) in _NUM) or (type(b) is float and type(a) is int):
        return a * b
    return mul(a, b)


def _eq2(ctx: Any, a: Any, b: Any) -> bool:
    return lisp_eq(a, b, ctx)


def _not_eq2(ctx: Any, a: Any, b: Any) -> bool:
    return not lisp_eq(a, b, ctx)


@core("+", "Sum of the numbers; (+) is 0.", category="numbers", binary=_add2)
def add(*xs: Any) -> Any:
    if len(xs) == 2:
        a, b = xs
        ta, tb = type(a), type(b)
        if (ta is float and tb in _NUM) or (tb is float and ta is int):
            return a + b
        if ta is int and tb is int:
            r = a + b
            if -_INT_LIMIT < r < _INT_LIMIT:
                return r
            raise _too_big()
    total: Any = 0
    for x in xs:
        total = _big(total + _num(x, "+"))
    return total


@core("-", "Subtract the rest from the first number; (- x) negates.", category="numbers",
      binary=_sub2)
def sub(x: Any, *xs: Any) -> Any:
    _num(x, "-")
    if not xs:
        return _big(-x)
    for y in xs:
        x = _big(x - _num(y, "-"))
    return x


@core("*", "Product of the numbers; (*) is 1.", category="numbers", binary=_mul2)
def mul(*xs: Any) -> Any:
    total: Any = 1
    for x in xs:
        total = _big(total * _num(x, "*"))
    return total


@core("/", "Divide the first number by the rest; exact integer results stay integers, "
      "others are floats; (/ x) is 1/x.", category="numbers")
def div(x: Any, *xs: Any) -> Any:
    _num(x, "/")
    if not xs:
        x, xs = 1, (x,)
    for y in xs:
        _num(y, "/")
        if y == 0:
            raise LispError("runtime_error", "division by zero")
        if type(x) is int and type(y) is int:
            x = x // y if x % y == 0 else x / y
        else:
            x = x / y
    return x


@core("quot", "Integer quotient, truncated toward zero.", category="numbers")
def quot(a: Any, b: Any) -> Any:
    _num(a, "quot")
    _num(b, "quot")
    if b == 0:
        raise LispError("runtime_error", "division by zero")
    if type(a) is int and type(b) is int:
        q = abs(a) // abs(b)
        return q if (a >= 0) == (b >= 0) else -q
    return float(math.trunc(a / b))


@core("rem", "Remainder of quot (sign of the dividend).", category="numbers")
def rem(a: Any, b: Any) -> Any:
    _num(a, "rem")
    _num(b, "rem")
    if b == 0:
        raise LispError("runtime_error", "division by zero")
    if type(a) is int and type(b) is int:
        return a - b * quot(a, b)
    return math.fmod(a, b)


@core("mod", "Modulus (sign of the divisor).", category="numbers")
def mod(a: Any, b: Any) -> Any:
    _num(a, "mod")
    _num(b, "mod")
    if b == 0:
        raise LispError("runtime_error", "division by zero")
    return _big(a % b)


@core("inc", "x + 1.", category="numbers")
def inc(x: Any) -> Any:
    if type(x) is int and x < _INT_MAX:
        return x + 1
    return _big(_num(x, "inc") + 1)


@core("dec", "x - 1.", category="numbers")
def dec(x: Any) -> Any:
    if type(x) is int and x > -_INT_MAX:
        return x - 1
    return _big(_num(x, "dec") - 1)


@core("max", "Largest of the numbers.", category="numbers")
def max_(x: Any, *xs: Any) -> Any:
    best = _num(x, "max")
    for y in xs:
        if _num(y, "max") > best:
            best = y
    return best


@core("min", "Smallest of the numbers.", category="numbers")
def min_(x: Any, *xs: Any) -> Any:
    best = _num(x, "min")
    for y in xs:
        if _num(y, "min") < best:
            best = y
    return best


@core("abs", "Absolute value.", category="numbers", qualified=("Math/abs",))
def abs_(x: Any) -> Any:
    return _big(abs(_num(x, "abs")))


@core("int", "Truncate a number to an integer.", category="numbers", aliases=("long",))
def to_int(x: Any) -> int:
    return _big(int(_num(x, "int")))


@core("double", "The number as a float.", category="numbers", aliases=("float",))
def to_double(x: Any) -> float:
    return float(_num(x, "double"))


@core("parse-long", "Parse a string as an integer; nil if it is not one.", category="numbers",
      qualified=("Integer/parseInt",))
def parse_long(s: Any) -> Any:
    if type(s) is not str:
        raise LispError("type_error", f"parse-long expects a string, got {kind_name(s)}")
    text = s.strip()
    if not text or len(text) > 1000:
        return None
    try:
        return _big(int(text))
    except ValueError:
        return None


@core("parse-double", "Parse a string as a float; nil if it is not one.", category="numbers",
      qualified=("Double/parseDouble",))
def parse_double(s: Any) -> Any:
    if type(s) is not str:
        raise LispError("type_error", f"parse-double expects a string, got {kind_name(s)}")
    text = s.strip()
    if not text or len(text) > 1000:
        return None
    try:
        return float(text)
    except ValueError:
        return None


@core("floor", "Largest integral float <= x.", category="numbers", bare=False,
      qualified=("Math/floor",))
def floor(x: Any) -> float:
    return float(math.floor(_num(x, "floor")))


@core("ceil", "Smallest integral float >= x.", category="numbers", bare=False,
      qualified=("Math/ceil",))
def ceil(x: Any) -> float:
    return float(math.ceil(_num(x, "ceil")))


@core("round", "Round to the nearest integer (halves up).", category="numbers", bare=False,
      qualified=("Math/round",))
def round_(x: Any) -> int:
    return math.floor(_num(x, "round") + 0.5)


@core("sqrt", "Square root (a float).", category="numbers", bare=False,
      qualified=("Math/sqrt",))
def sqrt(x: Any) -> float:
    x = _num(x, "sqrt")
    if x < 0:
        raise LispError("runtime_error", "square root of a negative number")
    return math.sqrt(x)


@core("pow", "x raised to the power y (a float).", category="numbers", bare=False,
      qualified=("Math/pow",))
def pow_(x: Any, y: Any) -> float:
    return float(_num(x, "pow")) ** float(_num(y, "pow"))


# --- comparison and logic -------------------------------------------------------------


@core("=", "Value equality: true when all arguments are equal. Numbers of different types "
      "are not equal: (= 1 1.0) is false; use == for numbers.", category="compare",
      binary=_eq2)
def eq(ctx: Any, x: Any, *xs: Any) -> bool:
    return all(lisp_eq(x, y, ctx) for y in xs)


@core("not=", "True unless all arguments are equal: (not (= ...)).", category="compare",
      binary=_not_eq2)
def not_eq(ctx: Any, x: Any, *xs: Any) -> bool:
    return not all(lisp_eq(x, y, ctx) for y in xs)


@core("==", "Numeric equality: (== 1 1.0) is true.", category="compare")
def num_eq(x: Any, *xs: Any) -> bool:
    _num(x, "==")
    return all(_num(y, "==") == x for y in xs)


def _chain(xs: tuple[Any, ...], op: Any) -> bool:
    for a, b in itertools.pairwise(xs):
        if not op(a, b):
            return False
    return True


@core("<", "True when the arguments increase strictly (numbers or strings).",
      category="compare", binary=operator.lt)
def lt(x: Any, *xs: Any) -> bool:
    if len(xs) == 1:
        return x < xs[0]
    return _chain((x, *xs), operator.lt)


@core(">", "True when the arguments decrease strictly.", category="compare", binary=operator.gt)
def gt(x: Any, *xs: Any) -> bool:
    if len(xs) == 1:
        return x > xs[0]
    return _chain((x, *xs), operator.gt)


@core("<=", "True when the arguments never decrease.", category="compare", binary=operator.le)
def le(x: Any, *xs: Any) -> bool:
    if len(xs) == 1:
        return x <= xs[0]
    return _chain((x, *xs), operator.le)


@core(">=", "True when the arguments never increase.", category="compare", binary=operator.ge)
def ge(x: Any, *xs: Any) -> bool:
    if len(xs) == 1:
        return x >= xs[0]
    return _chain((x, *xs), operator.ge)


@core("compare", "-1, 0 or 1: nil < numbers; strings, keywords and vectors compare with "
      "their own kind.", category="compare")
def compare_(ctx: Any, a: Any, b: Any) -> int:
    return compare(a, b, ctx)


@core("not", "true for nil and false, else false.", category="compare")
def not_(x: Any) -> bool:
    return x is None or x is False


@core("identity", "Returns its argument.", category="higher")
def identity(x: Any) -> Any:
    return x


@core("boolean", "true unless nil or false.", category="compare")
def boolean(x: Any) -> bool:
    return truthy(x)


@core("zero?", "x is 0.", category="predicates")
def is_zero(x: Any) -> bool:
    return _num(x, "zero?") == 0


@core("pos?", "x > 0.", category="predicates")
def is_pos(x: Any) -> bool:
    return _num(x, "pos?") > 0


@core("neg?", "x < 0.", category="predicates")
def is_neg(x: Any) -> bool:
    return _num(x, "neg?") < 0


@core("even?", "An even integer.", category="predicates")
def is_even(x: Any) -> bool:
    return _int(x, "even?") % 2 == 0


@core("odd?", "An odd integer.", category="predicates")
def is_odd(x: Any) -> bool:
    return _int(x, "odd?") % 2 == 1


@core("number?", "A number.", category="predicates")
def is_number(x: Any) -> bool:
    return type(x) is not bool and isinstance(x, (int, float))


@core("int?", "An integer.", category="predicates", aliases=("integer?",))
def is_int(x: Any) -> bool:
    return type(x) is not bool and isinstance(x, int)


@core("float?", "A float.", category="predicates", aliases=("double?",))
def is_float(x: Any) -> bool:
    return isinstance(x, float)

