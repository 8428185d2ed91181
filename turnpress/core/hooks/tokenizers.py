"""``register_tokenizers(register)``: ``register(name, count_fn)``.

A third-party counter is guarded: one that raises raises a
:class:`~turnpress.core.errors.PluginError` naming its plugin (a count cannot be
guessed); the count itself is checked by ``core.tokens``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from turnpress.core.errors import PluginError
from turnpress.core.hooks.base import HookCalls
from turnpress.core.plugin_loading import PluginInfo, Registration

__all__ = ["TokenizersHook"]


class TokenizersHook(HookCalls):
    """The registered token counters."""

    def tokenizers(self) -> dict[str, Registration]:
        """Registered token counters by name.

        A third-party counter that raises raises :class:`PluginError` naming its
        plugin (a count cannot be guessed).
        """

        def make(info: PluginInfo, args: tuple[Any, ...]) -> Registration:
            if len(args) != 2 or not isinstance(args[0], str) or not callable(args[1]):
                raise TypeError("register() takes (name, count_fn)")
            count = args[1] if info.builtin else _guarded_counter(args[0], args[1], info)
            return Registration(args[0], count, info)

        return self._collect("register_tokenizers", "tokenizer", make)


def _guarded_counter(name: str, count: Callable[[str], int],
                     info: PluginInfo) -> Callable[[str], int]:
    """``count`` whose exceptions become a :class:`PluginError` naming the plugin (the
    count itself is checked by ``core.tokens``); an ``encode`` attribute is kept."""

    def guarded(text: str) -> int:
        try:
            return count(text)
        except (Exception, SystemExit) as exc:
            raise PluginError(f"tokenizer {name!r} of {info.source} failed: "
                              f"{type(exc).__name__}: {exc}", plugin=info.name,
                              distribution=info.distribution,
                              entry_point=info.entry_point) from None

    encode = getattr(count, "encode", None)
    if encode is not None:
        guarded.encode = encode  # type: ignore[attr-defined]
    return guarded
