"""``register_strategies(register)``: ``register(StrategyClass)``, keyed by its ``name``.

A registered class must be a class with a non-empty ``name`` string and a
``to_messages()`` method; anything else is reported, naming the plugin, and left out.
A name is what ``-s NAME[:k=v,...]`` selects: it holds no ``:``, ``,``, ``=`` nor
white space, and is not one of :data:`NO_STRATEGY` (which mean ``full-history``).
"""

from __future__ import annotations

from typing import Any

from turnpress.core.hooks.base import HookCalls
from turnpress.core.plugin_loading import PluginInfo, Registration, short_repr

__all__ = ["NO_STRATEGY", "StrategiesHook"]

#: what ``-s`` reads as "no compression" (``full-history``) in every command
NO_STRATEGY = ("none", "off", "false")
_NOT_IN_NAMES = frozenset(":,=")


class StrategiesHook(HookCalls):
    """The registered strategy classes."""

    def strategies(self) -> dict[str, Registration]:
        """Registered strategy classes by name."""

        def make(info: PluginInfo, args: tuple[Any, ...]) -> Registration:
            if len(args) != 1:
                raise TypeError("register() takes one strategy class")
            cls = args[0]
            name = getattr(cls, "name", None)
            if not isinstance(cls, type) or not isinstance(name, str) or not name:
                raise TypeError(f"{short_repr(cls)} is not a strategy class with a 'name' "
                                f"string")
            if _NOT_IN_NAMES.intersection(name) or any(c.isspace() for c in name):
                raise TypeError(f"strategy name {name!r} cannot be selected with -s "
                                f"NAME[:k=v,...]: a name holds no ':', ',', '=' nor white "
                                f"space")
            if name.lower() in NO_STRATEGY:
                raise TypeError(f"strategy name {name!r} is taken: -s {name} means "
                                f"full-history (no compression) in every command")
            if not callable(getattr(cls, "to_messages", None)):
                raise TypeError(f"strategy class {cls.__name__} has no to_messages() method")
            return Registration(name, cls, info)

        return self._collect("register_strategies", "strategy", make)

    def strategy_owner(self, cls: type) -> PluginInfo | None:
        """The plugin that registered strategy class ``cls`` (None: not registered)."""
        for reg in self.strategies().values():
            if reg.value is cls:
                return reg.plugin
        return None
