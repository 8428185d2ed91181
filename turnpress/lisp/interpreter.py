"""``run_program``: read, compile and run a PTC-Lisp program, never raising for it."""

from __future__ import annotations

import dataclasses
import sys
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from turnpress.core.labels import type_label
from turnpress.core.model import Failure, Memory, Tool, ToolCall, coerce_tools
from turnpress.lisp.compiler import Compiler
from turnpress.lisp.context import RunContext
from turnpress.lisp.errors import LispError, ReturnSignal
from turnpress.lisp.limits import Limits
from turnpress.lisp.reader import read_program
from turnpress.lisp.values import Closure

__all__ = ["ExecutionResult", "run_program"]

# Python frames one level of Lisp call depth may need (nested expressions included).
_FRAMES_PER_DEPTH = 40
# Python 3.11+ runs Python-to-Python calls without growing the C stack; older
# versions overflow it (a segfault, not a RecursionError) well before 20,000 frames.
_MAX_RECURSION_LIMIT = 20_000 if sys.version_info >= (3, 11) else 8_000
_recursion_lock = threading.Lock()
_recursion_users = 0
_recursion_saved = 0


@dataclass(frozen=True)
class ExecutionResult:
    """What one run produced.

    ``value`` is the last form's value (or the ``(return x)`` value; ``None`` on
    failure); ``memory`` holds every definition after the run (the previous
    memory plus this run's, even when the run failed part-way -- except after a
    ``memory_limit`` failure, which keeps only the previous memory), with ``def``
    docstrings in ``memory.docs``; ``prints`` has one entry per ``println`` call;
    ``tool_calls`` lists every tool call in order; ``returned`` says whether
    ``(return x)`` ended the run; ``failure`` is ``None`` on success.
    """

    value: Any
    memory: Memory
    prints: tuple[str, ...]
    tool_calls: tuple[ToolCall, ...]
    returned: bool
    failure: Failure | None

    @property
    def success(self) -> bool:
        """True when the run did not fail."""
        return self.failure is None


def run_program(
    source: str,
    *,
    tools: Mapping[str, Tool] | None = None,
    data: Mapping[str, Any] | None = None,
    memory: Mapping[str, Any] | None = None,
    limits: Limits | None = None,
) -> ExecutionResult:
    """Run ``source`` against ``tools``, ``data`` and the previous ``memory``.

    Nothing a program does makes this raise: syntax errors, runtime errors,
    tool failures and exceeded limits all come back as ``result.failure``. The
    given mappings are never changed. ``tools`` also accepts plain callables or
    schema dicts (see :func:`turnpress.core.model.coerce_tools`).
    """
    limits = limits or Limits()
    tool_map = coerce_tools(tools or {})
    data = data if data is not None else {}
    if not isinstance(data, Mapping):
        raise TypeError(f"data must be a mapping of name -> value, got {type(data).__name__}")
    previous = memory if memory is not None else {}
    definitions = dict(previous)
    docs = dict(getattr(previous, "docs", None) or {})
    ctx = RunContext(limits, tool_map, data, definitions, docs)
    compiler = Compiler(ctx)
    value: Any = None
    returned = False
    failure: Failure | None = None
    _raise_recursion_limit(limits.max_depth)
    try:
        if isinstance(source, str) and len(source) > limits.max_source:
            raise LispError(
                "size_limit", f"program too long: {len(source)} characters (the limit is "
                              f"{limits.max_source}, Limits.max_source)")
        for form in read_program(source, check=ctx.check_clock):
            value = compiler.compile(form, frozenset())({})
        ctx.check_memory()
    except ReturnSignal as signal:
        value, returned = signal.value, True
    except LispError as error:
        value, failure = None, error.to_failure()
    except RecursionError:
        value, failure = None, Failure(
            "depth_limit", "nesting too deep: the program or its data nest more deeply than "
                           "the interpreter allows")
    except MemoryError:
        value, failure = None, Failure(
            "memory_limit", "out of memory: the program's values grew too large")
    except Exception as exc:  # a bug in the interpreter: still never escape
        value, failure = None, Failure(
            "runtime_error", f"internal error: {type(exc).__name__}: {exc}")
    finally:
        _restore_recursion_limit()
    if failure is None or failure.reason != "memory_limit":
        try:  # what the run keeps, measured as the next run will charge it
            ctx.check_kept(definitions, previous)
        except LispError as error:
            value, returned, failure = None, False, error.to_failure()
    if failure is not None and failure.reason == "memory_limit":
        # keeping what filled the memory would fail every later turn as well
        definitions = dict(previous)
        docs = dict(getattr(previous, "docs", None) or {})
    return ExecutionResult(
        value=value,
        memory=_final_memory(definitions, docs, ctx.returns),
        prints=tuple(ctx.prints),
        tool_calls=tuple(ctx.tool_calls),
        returned=returned,
        failure=failure,
    )


def _final_memory(definitions: dict[str, Any], docs: dict[str, str],
                  returns: dict[Closure, Any]) -> Memory:
    """Definitions with each called closure carrying the label of its last return value."""
    updated: dict[Closure, Closure] = {}
    out = {}
    for name, value in definitions.items():
        if type(value) is Closure and value in returns:
            if value not in updated:
                try:
                    label = type_label(returns[value])
                except Exception:
                    label = "unknown"
                updated[value] = dataclasses.replace(value, return_type=label)
            value = updated[value]
        out[name] = value
    return Memory(out, docs=docs)


def _raise_recursion_limit(max_depth: int) -> None:
    """Give deep (but allowed) Lisp recursion enough Python stack; undone afterwards."""
    global _recursion_users, _recursion_saved
    wanted = min(max_depth * _FRAMES_PER_DEPTH + 2000, _MAX_RECURSION_LIMIT)
    with _recursion_lock:
        if _recursion_users == 0:
            _recursion_saved = sys.getrecursionlimit()
        _recursion_users += 1
        if sys.getrecursionlimit() < wanted:
            sys.setrecursionlimit(wanted)


def _restore_recursion_limit() -> None:
    global _recursion_users
    with _recursion_lock:
        _recursion_users -= 1
        if _recursion_users == 0:
            sys.setrecursionlimit(_recursion_saved)
