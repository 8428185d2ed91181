"""The memory budget: how much memory a program's values hold (``Limits.max_memory``).

Two numbers make up what a run is charged:

* the definitions it starts with (kept from earlier turns): :func:`estimate_size`
  walks them once per run, visiting each distinct object once (shared structure
  costs what it really costs), sampling large collections and visiting at most
  :data:`MAX_WALK` objects, so the walk stays cheap however large the memory is;
* what the run itself adds: the growth of the process's resident memory since
  the run started (:func:`resident_bytes`, read from ``/proc/self/statm``). Where
  that is not available, the sum of the sizes of the strings and collections the
  built-ins create stands in for it (an over-estimate: it also counts garbage).

The growth is measured, not estimated, so nothing a program can do escapes it;
reading it costs a few microseconds, so the run context reads it only every few
thousand steps and after every few megabytes that built-ins report allocating
(:meth:`turnpress.lisp.context.RunContext.alloc`). Other threads of the same
process share the measurement: the budget is meant for the one-program-at-a-time
agent loop, and is generous enough that ordinary host work does not reach it.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable, Mapping
from itertools import islice
from typing import Any

from turnpress.core.model import Fn

__all__ = ["MAX_WALK", "SAMPLE", "estimate_size", "resident_bytes"]

#: Most objects :func:`estimate_size` visits (it returns what it counted so far).
MAX_WALK = 20_000
#: Items of one container :func:`estimate_size` looks at (the rest is extrapolated).
SAMPLE = 128

_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096
_STATM = "/proc/self/statm"
_HAS_STATM = os.path.exists(_STATM)


def resident_bytes() -> int | None:
    """The process's resident memory in bytes, or ``None`` where it cannot be read."""
    if not _HAS_STATM:
        return None
    try:
        with open(_STATM, "rb") as f:
            return int(f.read().split()[1]) * _PAGE
    except (OSError, ValueError, IndexError):
        return None


def estimate_size(values: Iterable[Any], max_walk: int = MAX_WALK) -> int:
    """Bytes held by ``values`` and everything they reach, each object counted once.

    Strings, numbers and containers count their ``sys.getsizeof``; a closure
    counts the values it closed over. A container with more than
    :data:`SAMPLE` items is estimated from an evenly spread sample of them, and
    the walk stops after ``max_walk`` objects, so the cost is bounded whatever
    the size of the values.
    """
    seen: set[int] = set()
    stack: list[tuple[Any, float]] = [(v, 1.0) for v in values]
    total = 0.0
    walked = 0
    while stack and walked < max_walk:
        v, weight = stack.pop()
        i = id(v)
        if i in seen:
            continue
        seen.add(i)
        walked += 1
        if v is None or type(v) is bool:
            continue
        try:
            total += weight * sys.getsizeof(v)
        except TypeError:
            total += weight * 64
        if isinstance(v, (str, int, float)):
            continue
        if isinstance(v, Mapping):
            items: Any = v.items()
            n = len(v)
        elif isinstance(v, (list, tuple, set, frozenset)):
            items, n = v, len(v)
        elif isinstance(v, Fn) and isinstance(getattr(v, "env", None), Mapping):
            items, n = v.env.values(), len(v.env)  # type: ignore[attr-defined]
        else:
            continue
        step = max(n // SAMPLE, 1)
        child_weight = weight * n / min(n, SAMPLE) if n else weight
        for item in islice(items, 0, step * SAMPLE, step):
            if isinstance(v, Mapping):
                stack.append((item[0], child_weight))
                stack.append((item[1], child_weight))
            else:
                stack.append((item, child_weight))
    return int(total)
