"""The state of one run: limits and counters, definitions, output, tool calls.

The compiled program and every built-in share one :class:`RunContext`. It owns
the step/depth/time accounting, the ``println`` capture, tool calls, and
:meth:`RunContext.call`, which calls any callable Lisp value.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

from turnpress.core.model import Keyword, Tool, ToolCall
from turnpress.lisp.bridge import from_python, to_python
from turnpress.lisp.errors import ArgumentError, LispError
from turnpress.lisp.limits import Limits
from turnpress.lisp.memory import held_size, resident_bytes
from turnpress.lisp.render import short
from turnpress.lisp.values import Closure, CoreFn, ToolFn, kind_name, lookup

__all__ = ["HOST_ERRORS", "RunContext", "host_error"]

#: Python exceptions a built-in may raise on bad input; they become Lisp errors.
HOST_ERRORS = (TypeError, ValueError, ArithmeticError, LookupError, AttributeError)

_CHECK_EVERY = 256
# Memory is measured every this many clock checks, and after this many bytes allocated.
_MEMORY_EVERY_CHECKS = 16
_MEMORY_EVERY_BYTES = 4 * 2**20
_MEMORY_HEADROOM = 2**20
# A run always has this much room to grow in, even when the memory kept from earlier turns
# fills the budget (or, under other limits, passed it): a program that keeps less must run.
_RUN_ROOM = 4 * 2**20


def host_error(name: str, args: tuple[Any, ...] | list[Any], exc: Exception) -> LispError:
    """The Lisp error for a Python exception raised by built-in ``name`` on ``args``."""
    if isinstance(exc, ZeroDivisionError):
        return LispError("runtime_error", f"division by zero in ({name} ...)")
    if isinstance(exc, OverflowError):
        return LispError("runtime_error", f"number too large in ({name} ...)")
    if isinstance(exc, ValueError) and "int_max_str_digits" in str(exc):
        return LispError("size_limit", f"integer too large to show in ({name} ...)")
    if isinstance(exc, (TypeError, AttributeError)):
        kinds = ", ".join(kind_name(a) for a in args) or "no arguments"
        return LispError("type_error", f"{name} cannot be applied to ({kinds})")
    if isinstance(exc, LookupError):
        return LispError("runtime_error", f"{name}: no such key or index")
    return LispError("runtime_error", f"{name} failed: {exc}")


class RunContext:
    """Everything one run shares; see the module docstring."""

    def __init__(
        self,
        limits: Limits,
        tools: Mapping[str, Tool],
        data: Mapping[str, Any],
        definitions: dict[str, Any],
        docs: dict[str, str],
    ) -> None:
        self.limits = limits
        self.max_steps = limits.max_steps
        self.max_depth = limits.max_depth
        self.max_collection = limits.max_collection
        self.max_string = limits.max_string
        self.steps = 0
        self.check_at = min(_CHECK_EVERY, self.max_steps)
        self.depth = 0
        self.tools = tools
        self.data = data
        self.globals = definitions
        self.docs = docs
        self.prints: list[str] = []
        self.tool_calls: list[ToolCall] = []
        self.returns: dict[Closure, Any] = {}
        self.max_memory = limits.max_memory
        # values may fill the budget but for a little room for the interpreter's own objects
        self.value_memory = limits.max_memory - min(_MEMORY_HEADROOM, limits.max_memory // 16)
        # kept from earlier turns, measured as check_kept measured it when the last run ended
        # (held_size remembers it); measured before the program's time starts
        self.memory_base = held_size(definitions, limits.max_memory)
        self.deadline = time.monotonic() + limits.timeout_s
        # ... of which a run is charged no more than leaves it room to run
        self.base_charge = min(self.memory_base,
                               self.value_memory - min(_RUN_ROOM, self.value_memory // 4))
        self.resident_start = resident_bytes()
        self.allocated = 0  # bytes built-ins reported creating (all of this run)
        self.pending = 0  # ... since memory was last measured
        self.last_used = self.base_charge
        self.checks = 0
        self.invoke: Callable[[Closure, Any], Any] = _no_invoke
        self.prepare: Callable[[Closure], Callable[..., Any]] = _no_invoke  # type: ignore[assignment]

    # --- accounting ---------------------------------------------------------
    def check(self) -> None:
        """Raise ``step_limit``/``timeout`` when exceeded; schedule the next check."""
        if self.steps > self.max_steps:
            raise LispError(
                "step_limit",
                f"step limit exceeded: the program took more than {self.max_steps} "
                "evaluation steps")
        if time.monotonic() > self.deadline:
            raise LispError(
                "timeout", f"timeout: the program ran longer than {self.limits.timeout_s} s")
        self.checks += 1
        if not self.checks % _MEMORY_EVERY_CHECKS:
            self.check_memory()
        self.check_at = min(self.steps + _CHECK_EVERY, self.max_steps)

    def memory_used(self) -> int:
        """Bytes charged to the program now (see :mod:`turnpress.lisp.memory`)."""
        if self.resident_start is not None:
            now = resident_bytes()
            if now is not None:
                return self.base_charge + max(now - self.resident_start, 0)
        return self.base_charge + self.allocated

    def check_memory(self, upcoming: int = 0) -> None:
        """Raise ``memory_limit`` when the program's values (plus ``upcoming`` bytes about
        to be created) would hold more than ``max_memory``."""
        self.last_used = self.memory_used()
        self.pending = 0
        used = self.last_used + upcoming
        if used > self.value_memory:
            raise self.over_budget(used)

    def check_kept(self, definitions: Mapping[str, Any], previous: Mapping[str, Any]) -> None:
        """Raise ``memory_limit`` when what the program keeps -- its ``definitions`` as it
        ends, measured as the next run will charge them -- is over the budget and more
        than the ``previous`` definitions it started with held."""
        if definitions.keys() == previous.keys() and all(
                definitions[name] is previous[name] for name in definitions):
            return  # kept nothing new
        kept = held_size(definitions, self.max_memory)
        if kept > self.value_memory and kept > self.memory_base:
            raise self.over_budget(kept)

    def over_budget(self, used: int) -> LispError:
        """The ``memory_limit`` error for values holding ``used`` bytes."""
        return LispError(
            "memory_limit",
            f"memory limit exceeded: the program's values would hold about {used >> 20} "
            f"MB (the limit is {self.max_memory >> 20} MB); keep less in memory, e.g. "
            "select the fields you need instead of keeping whole results")

    def alloc(self, nbytes: int) -> None:
        """Note that a built-in is about to create a value of about ``nbytes`` bytes.

        The memory is measured again after every few megabytes, and whenever the
        last measurement plus what was created since would pass the budget.
        """
        self.allocated += nbytes
        self.pending += nbytes
        if self.pending > _MEMORY_EVERY_BYTES or \
                self.last_used + self.pending > self.value_memory:
            self.check_memory(nbytes)

    def check_clock(self) -> None:
        """Raise ``timeout`` when the time is up (used while reading and compiling)."""
        if time.monotonic() > self.deadline:
            raise LispError(
                "timeout", f"timeout: the program ran longer than {self.limits.timeout_s} s")

    def charge(self, n: int) -> None:
        """Count ``n`` steps of work done by a built-in."""
        self.steps += n
        if self.steps > self.check_at:
            self.check()

    def charge_copy(self, n: int) -> None:
        """Count copying ``n`` items in bulk (cheap: one step per 256 items)."""
        self.charge((n >> 8) + 1)
        if n > 64:
            self.alloc(8 * n)

    def check_count(self, n: int, what: str = "collection") -> None:
        """Raise ``size_limit`` before building a collection of ``n`` items."""
        if n > self.max_collection:
            raise LispError(
                "size_limit",
                f"{what} too large: {n} items (the limit is {self.max_collection})")
        self.charge_copy(n)

    def check_chars(self, n: int) -> None:
        """Raise ``size_limit`` before building a string of ``n`` characters."""
        if n > self.max_string:
            raise LispError(
                "size_limit",
                f"string too long: {n} characters (the limit is {self.max_string})")
        self.charge((n >> 8) + 1)
        if n > 64:
            self.alloc(n)

    # --- output -------------------------------------------------------------
    def emit_print(self, text: str) -> None:
        """Record one ``println`` call (one entry, cut at ``print_chars``)."""
        if len(self.prints) >= self.limits.max_prints:
            raise LispError(
                "output_limit",
                f"output limit exceeded: more than {self.limits.max_prints} println calls")
        cap = self.limits.print_chars
        if len(text) > cap:
            text = text[: max(cap - 3, 0)] + "..." if cap >= 3 else text[:cap]
        self.prints.append(text)

    # --- calls --------------------------------------------------------------
    def call(self, f: Any, args: tuple[Any, ...] | list[Any]) -> Any:
        """Call any callable Lisp value with ``args``."""
        t = type(f)
        if t is Closure:
            return self.invoke(f, args)
        if t is CoreFn:
            return self.call_core(f, args)
        if t is Keyword:
            if len(args) == 1:
                return lookup(args[0], f)
            if len(args) == 2:
                return lookup(args[0], f, args[1])
            raise LispError("arity_error", f"keyword {f} takes 1 or 2 arguments, "
                                           f"got {len(args)}")
        if t is ToolFn:
            return self.call_tool(f.name, args)
        if isinstance(f, Mapping):
            if len(args) == 1:
                return lookup(f, args[0])
            if len(args) == 2:
                return lookup(f, args[0], args[1])
            raise LispError("arity_error", f"a map takes 1 or 2 arguments, got {len(args)}")
        if isinstance(f, (set, frozenset)):
            if len(args) != 1:
                raise LispError("arity_error", f"a set takes 1 argument, got {len(args)}")
            return lookup(f, args[0])
        if isinstance(f, (list, tuple)):
            if len(args) != 1:
                raise LispError("arity_error", f"a vector takes 1 argument, got {len(args)}")
            i = args[0]
            if type(i) is not int or not 0 <= i < len(f):
                raise LispError("runtime_error",
                                f"index {short(i)} out of bounds for a vector of {len(f)}")
            return f[i]
        raise LispError("type_error", f"cannot call {kind_name(f)} {short(f)} as a function")

    def call_core(self, f: CoreFn, args: tuple[Any, ...] | list[Any]) -> Any:
        """Call a built-in, checking its arity and translating Python errors."""
        if not f.accepts(len(args)):
            raise arity_error(f.name, len(args), f)
        try:
            if f.needs_ctx:
                return f.impl(self, *args)  # type: ignore[misc]
            return f.impl(*args)  # type: ignore[misc]
        except HOST_ERRORS as exc:
            raise host_error(f.name, args, exc) from None
        except ArgumentError as exc:
            raise exc.named(f.name) from None

    def as_fn(self, f: Any) -> Callable[..., Any]:
        """A Python callable for a Lisp function value (for the higher-order built-ins)."""
        t = type(f)
        if t is Closure:
            return self.prepare(f)
        if t is Keyword:
            return lambda m, default=None: lookup(m, f, default)
        if t is CoreFn and not f.needs_ctx and f.max_args is None:
            impl, name = f.impl, f.name

            def core(*args: Any) -> Any:
                try:
                    return impl(*args)  # type: ignore[misc]
                except HOST_ERRORS as exc:
                    raise host_error(name, args, exc) from None
                except ArgumentError as exc:
                    raise exc.named(name) from None

            return core
        call = self.call
        return lambda *args: call(f, args)

    def call_tool(self, name: str, args: tuple[Any, ...] | list[Any]) -> Any:
        """Call tool ``name``: plain Python arguments in, the result back as Lisp values.

        Every attempt is recorded as a :class:`ToolCall`, even a failing one (its
        side effects may have happened); failures become ``tool_error``.
        """
        tool = self.tools.get(name)
        if tool is None:
            raise undefined_tool(name, self.tools)
        self.charge(1)
        lisp_args = tuple(args)
        py_args = [to_python(a, self) for a in lisp_args]
        if tool.fn is None:
            self.tool_calls.append(ToolCall(name, lisp_args, None))
            raise LispError("tool_error", f"tool '{name}' failed: NotImplementedError: "
                                          "no Python function is attached to this tool")
        started = time.monotonic()
        try:
            result = tool.fn(*py_args)
        except Exception as exc:
            self.tool_calls.append(ToolCall(name, lisp_args, None))
            raise LispError("tool_error",
                            f"tool '{name}' failed: {type(exc).__name__}: {exc}") from None
        finally:
            # time inside a tool (I/O, a child agent's LLM calls) is not the program's own
            self.deadline += time.monotonic() - started
        try:
            value = from_python(result, self)
        except BaseException:
            self.tool_calls.append(ToolCall(name, lisp_args, None))
            raise
        self.tool_calls.append(ToolCall(name, lisp_args, value))
        self.check()
        return value


def _no_invoke(*args: Any) -> Any:  # pragma: no cover - replaced by the compiler
    raise RuntimeError("no compiler attached to this run context")


def arity_error(name: str, given: int, f: CoreFn | None = None) -> LispError:
    """``Wrong number of args (N) passed to: NAME``, with the expected count if known."""
    expected = ""
    if f is not None:
        if f.max_args is None:
            expected = f" (expects at least {f.min_args})"
        elif f.min_args == f.max_args:
            expected = f" (expects {f.min_args})"
        else:
            expected = f" (expects {f.min_args} to {f.max_args})"
    return LispError("arity_error", f"wrong number of args ({given}) passed to: {name}{expected}")


def _names(mapping: Mapping[str, Any]) -> str:
    names = sorted(mapping)
    if not names:
        return "none"
    text = ", ".join(names[:30])
    return text + (", ..." if len(names) > 30 else "")


def undefined_tool(name: str, tools: Mapping[str, Any]) -> LispError:
    """The error for ``tool/NAME`` when there is no such tool."""
    return LispError("undefined_symbol",
                     f"undefined symbol 'tool/{name}': no tool named '{name}' "
                     f"(tools: {_names(tools)})")


def undefined_data(name: str, data: Mapping[str, Any]) -> LispError:
    """The error for ``data/NAME`` when there is no such input."""
    return LispError("undefined_symbol",
                     f"undefined symbol 'data/{name}': no data named '{name}' "
                     f"(data: {_names(data)})")
