"""The errors a PTC-Lisp program can run into, and the signals that end a run early.

Every problem a program causes is a :class:`LispError` with one of the documented
``reason`` strings; :func:`turnpress.lisp.run_program` turns it into a
:class:`turnpress.core.model.Failure`. Nothing else ever leaves the interpreter.
"""

from __future__ import annotations

from typing import Any

from turnpress.core.model import Failure

__all__ = [
    "FAILURE_REASONS",
    "ArgumentError",
    "LispError",
    "LispSyntaxError",
    "ReturnSignal",
]

#: Every ``Failure.reason`` that :func:`~turnpress.lisp.run_program` can report:
#:
#: * ``syntax_error`` -- the text cannot be read, or a special form is malformed;
#: * ``undefined_symbol`` / ``ambiguous_reference`` -- a name resolves to nothing,
#:   or to both ``tool/x`` and ``data/x``;
#: * ``type_error`` / ``arity_error`` -- a value of the wrong kind, or the wrong
#:   number of arguments;
#: * ``tool_error`` -- a tool raised;
#: * ``step_limit`` / ``depth_limit`` / ``timeout`` -- ``Limits.max_steps``, call or
#:   value nesting, ``Limits.timeout_s`` (reading and compiling included);
#: * ``size_limit`` -- a collection, string, integer or the program text is past
#:   its limit (``max_collection``, ``max_string``, 4096-bit integers, ``max_source``);
#: * ``memory_limit`` -- the program's values hold more than ``Limits.max_memory``
#:   (the run then keeps none of its definitions);
#: * ``output_limit`` -- more than ``Limits.max_prints`` ``println`` calls;
#: * ``fail`` -- the program called ``(fail reason)``;
#: * ``runtime_error`` -- anything else (division by zero, an index out of bounds).
FAILURE_REASONS: tuple[str, ...] = (
    "syntax_error",
    "undefined_symbol",
    "ambiguous_reference",
    "type_error",
    "arity_error",
    "tool_error",
    "step_limit",
    "depth_limit",
    "timeout",
    "size_limit",
    "memory_limit",
    "output_limit",
    "fail",
    "runtime_error",
)


class LispError(Exception):
    """A program error: ``reason`` is one of :data:`FAILURE_REASONS`, ``message`` a sentence."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message

    def to_failure(self) -> Failure:
        """The :class:`Failure` reported for this error."""
        return Failure(self.reason, self.message)


class ArgumentError(LispError):
    """A bad argument found by a shared helper that does not know which built-in it serves.

    The built-in's call site turns it into a plain :class:`LispError` whose message
    starts with the function's name (``"map: cannot treat integer as a sequence"``).
    """

    def named(self, name: str) -> LispError:
        """The same error, naming the built-in ``name``."""
        return LispError(self.reason, f"{name}: {self.message}")


class LispSyntaxError(LispError):
    """The source could not be read or a special form is malformed.

    ``line`` and ``column`` (both 1-based) point at the offending text; the
    failure message ends with ``at line L, column C``.
    """

    def __init__(self, message: str, line: int, column: int) -> None:
        super().__init__("syntax_error", f"{message} at line {line}, column {column}")
        self.detail = message
        self.line = line
        self.column = column


class ReturnSignal(Exception):
    """Raised by ``(return x)``: ends the run successfully with ``value``."""

    def __init__(self, value: Any) -> None:
        super().__init__("return")
        self.value = value
