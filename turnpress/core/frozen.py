"""Read-only maps: the mappings a turn, a tool and the sandbox share without copying.

Part of the data model (``turnpress.core.model`` re-exports them).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

__all__ = ["FrozenMap", "HashableMap", "Memory", "freeze_memory"]


class FrozenMap(Mapping[str, Any]):
    """A read-only, picklable mapping that keeps insertion order."""

    __slots__ = ("_data",)

    def __init__(self, data: Mapping[str, Any] | None = None, /) -> None:
        self._data = dict(data or {})

    def __getitem__(self, key: str) -> Any:
        return self._data[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Mapping):
            return self._data == dict(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._data!r})"

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self._data,))


class HashableMap(FrozenMap):
    """A read-only map that can be a map key or set item: how the sandbox stores a map
    used as a key, and how a trace loads one back (both hash alike)."""

    __slots__ = ("_hash",)

    def __init__(self, data: Mapping[Any, Any] | None = None, /) -> None:
        super().__init__(data)
        self._hash = hash(frozenset(self._data.items()))

    def __hash__(self) -> int:  # type: ignore[override]
        return self._hash


class Memory(FrozenMap):
    """A turn's memory: the agent's definitions, plus the docstrings of ``def``'d values.

    ``docs`` maps a name to the docstring given in ``(def name "doc" value)``;
    function docstrings live on the :class:`Fn` itself.
    """

    __slots__ = ("docs",)

    def __init__(
        self, data: Mapping[str, Any] | None = None, /, docs: Mapping[str, str] | None = None
    ) -> None:
        super().__init__(data)
        if docs is None:
            docs = getattr(data, "docs", None) or {}
        self.docs: Mapping[str, str] = dict(docs)

    def __repr__(self) -> str:
        if self.docs:
            return f"Memory({self._data!r}, docs={self.docs!r})"
        return f"Memory({self._data!r})"

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild_memory, (self._data, dict(self.docs)))


def _rebuild_memory(data: dict[str, Any], docs: dict[str, str]) -> Memory:
    return Memory(data, docs=docs)


def freeze_memory(memory: Mapping[str, Any] | None) -> Memory:
    if isinstance(memory, Memory):
        return memory
    if memory is None:
        return Memory()
    if not isinstance(memory, Mapping):
        raise TypeError(f"memory must be a mapping of name -> value, got {type(memory).__name__}")
    return Memory(memory)
