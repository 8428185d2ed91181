"""``type_label``: the short type name shown for a value (``list[5]``, ``string``...)."""

from __future__ import annotations

from typing import Any

from turnpress.core.registry import get_registry

__all__ = ["type_label"]


def type_label(value: Any) -> str:
    """The type label of ``value`` from the ``type_label`` hook.

    Built-in vocabulary: ``list[N]``, ``map[N]``, ``set[N]``, ``string``, ``integer``,
    ``float``, ``boolean``, ``keyword``, ``nil``, ``#fn[...]``; a plugin may label
    other types; anything unlabelled is ``unknown``.
    """
    return get_registry().type_label(value)
