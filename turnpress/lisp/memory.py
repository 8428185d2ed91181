"""The memory budget: how much memory a program's values hold (``Limits.max_memory``).

A program is judged by what it adds and by what it keeps (issue 23):

* while it runs, it is charged the memory kept from earlier turns plus the growth
  of the process's resident memory since the run started (:func:`resident_bytes`,
  read from ``/proc/self/statm``). Where that is not available, the sum of the
  sizes of the strings and collections the built-ins create stands in for it (an
  over-estimate: it also counts garbage). The growth is measured, not estimated,
  so nothing a program can do escapes it; reading it costs a few microseconds, so
  the run context reads it only every few thousand steps and after every few
  megabytes that built-ins report allocating
  (:meth:`turnpress.lisp.context.RunContext.alloc`);
* when it ends, what it keeps (its definitions) is measured by :func:`estimate_size`,
  the same measure that charges those definitions to the next turn, so a value the
  next turn would be refused for is refused on the turn that made it, never later.

:func:`estimate_size` counts every distinct object once (shared structure costs what
it really costs) and looks at every reference exactly once: a reference is a slot of
a container already counted, so the walk costs time in proportion to the memory
really held, however often values are shared (1,500 nested sets holding 1.1 million
references are a few thousand objects). It stops once the total passes ``cap``.

Other threads of the same process share the resident measurement: the budget is
meant for the one-program-at-a-time agent loop, and is generous enough that
ordinary host work does not reach it.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable, Mapping
from itertools import repeat
from typing import Any

from turnpress.core.model import Fn, FrozenMap, Keyword

__all__ = ["estimate_size", "held_size", "resident_bytes"]

_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096
_STATM = "/proc/self/statm"
_HAS_STATM = os.path.exists(_STATM)
#: bytes counted for an object whose ``sys.getsizeof`` fails
_UNKNOWN_SIZE = 64
#: The identity key of an object: its identity hash, which for every object (lists and
#: dicts too) is CPython's pointer-derived hash, distinct for live objects like ``id``;
#: unlike ``id`` it raises no audit event, which costs a Python call per object
#: whenever an audit hook is installed (a sandbox's, a fuzzer's).
_key = object.__hash__
#: References looked at together (bounds the memory the walk itself uses)
_CHUNK = 1 << 16
#: collections whose items are iterated as they are
_COLLECTIONS = frozenset({list, tuple, set, frozenset})
#: values that hold no other values
_LEAVES = frozenset({str, int, float, bool, type(None), bytes, Keyword})


def resident_bytes() -> int | None:
    """The process's resident memory in bytes, or ``None`` where it cannot be read."""
    if not _HAS_STATM:
        return None
    try:
        with open(_STATM, "rb") as f:
            return int(f.read().split()[1]) * _PAGE
    except (OSError, ValueError, IndexError):
        return None


def estimate_size(values: Iterable[Any], cap: int | None = None) -> int:
    """Bytes held by ``values`` and everything they reach, each object counted once.

    Every object counts its ``sys.getsizeof`` (a container's own table of
    references included); containers (lists, tuples, sets, maps) count what they
    hold, a closure the values it closed over. Time is linear in the references
    looked at: each distinct container's items are looked at once, in bulk (a
    chunk of references from any containers at a time). The walk stops as soon as
    the total passes ``cap`` (then the result is above ``cap``, and not the whole
    size).
    """
    seen: set[int] = set()
    total = 0
    pending: list[Any] = list(values)  # references still to look at
    while pending:
        # a chunk of references at a time, from any containers: the work per reference
        # is done in bulk (in C), however small the containers are
        refs = pending[-_CHUNK:]
        del pending[-_CHUNK:]
        if seen.issuperset(map(_key, refs)):  # the common case under sharing
            continue
        by_id = dict(zip(map(_key, refs), refs, strict=True))
        new_ids = by_id.keys() - seen
        seen.update(new_ids)
        new = list(map(by_id.__getitem__, new_ids))
        total += sum(map(sys.getsizeof, new, repeat(_UNKNOWN_SIZE, len(new))))
        if cap is not None and total > cap:
            return total
        extend = pending.extend
        for v in new:
            t = type(v)
            if t in _LEAVES:
                continue
            if t is dict:
                extend(v)
                extend(v.values())
            elif t in _COLLECTIONS:
                extend(v)
            elif isinstance(v, FrozenMap):  # a read-only map: the dict it wraps
                pending.append(v._data)
            elif isinstance(v, Mapping):
                extend(v)
                extend(v.values())
            elif isinstance(v, (list, tuple, set, frozenset)):
                extend(v)
            elif isinstance(v, Fn) and isinstance(getattr(v, "env", None), Mapping):
                pending.append(v.env)  # type: ignore[attr-defined]
    return total
    return total


#: The definitions :func:`held_size` measured last (held, so the objects stay the
#: ones measured), the cap it was given and the result.
_last: list[tuple[dict[str, Any], int | None, int]] = []


def held_size(definitions: Mapping[str, Any], cap: int | None = None) -> int:
    """:func:`estimate_size` of the values of ``definitions``, remembering the last
    answer: what a run keeps, measured when it ends, is what the next run starts with,
    so that run reuses the measurement when every name holds the same object."""
    if _last:
        before, before_cap, size = _last[0]
        exact = before_cap is None or size <= before_cap
        if (exact or (cap is not None and before_cap is not None and cap <= before_cap)) \
                and before.keys() == definitions.keys() \
                and all(before[name] is definitions[name] for name in before):
            return size
    size = estimate_size(definitions.values(), cap)
    _last[:] = [(dict(definitions), cap, size)]
    return size

