"""``register_summarizers(register)``: ``register(name, summarizer_class)``.

A summarizer is a class (or a factory) called with its options, or a
``"module:attribute"`` string naming one, imported when the summarizer is first
built (how ``llm`` is registered: it lives in ``turnpress.agent``, a layer above the
plugins, as the ``run`` command does). Anything else is reported, naming the plugin,
and left out. What a summarizer instance must do is in :mod:`turnpress.core.summaries`.
"""

from __future__ import annotations

import importlib
import re
from typing import Any

from turnpress.core.errors import PluginError
from turnpress.core.hooks.base import HookCalls
from turnpress.core.plugin_loading import PluginInfo, Registration, short_repr

__all__ = ["SummarizersHook"]

_NAME = re.compile(r"^[a-z][a-z0-9_-]*$")
_TARGET = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_]\w*$")


class SummarizersHook(HookCalls):
    """The registered summarizers."""

    def summarizers(self) -> dict[str, Registration]:
        """Registered summarizers by name (a class, a factory, or a lazy
        ``"module:attribute"`` string)."""

        def make(info: PluginInfo, args: tuple[Any, ...]) -> Registration:
            if len(args) != 2:
                raise TypeError("register() takes (name, summarizer_class)")
            name, value = args
            if not isinstance(name, str) or not _NAME.match(name):
                raise TypeError(f"summarizer name {short_repr(name)} must be a lower-case "
                                f"word (letters, digits, '-', '_')")
            if isinstance(value, str):
                if not _TARGET.match(value):
                    raise TypeError(f"{value!r} is not 'module:attribute'")
            elif not callable(value):
                raise TypeError(f"{short_repr(value)} is not a summarizer class")
            return Registration(name, value, info)

        return self._collect("register_summarizers", "summarizer", make)

    def summarizer_class(self, name: str) -> Any:
        """The summarizer class registered as ``name`` (a lazy one imported now).

        Raises ``ValueError`` naming the registered summarizers for an unknown name,
        :class:`PluginError` naming the plugin when a lazy target cannot be imported.
        """
        regs = self.summarizers()
        reg = regs.get(name)
        if reg is None:
            valid = ", ".join(sorted(regs)) or "(none)"
            raise ValueError(f"unknown summarizer {name!r}; registered summarizers: "
                             f"{valid}." + self.failure_note())  # type: ignore[attr-defined]
        if not isinstance(reg.value, str):
            return reg.value
        module, _, attribute = reg.value.partition(":")
        try:
            return getattr(importlib.import_module(module), attribute)
        except (ImportError, AttributeError) as exc:
            raise PluginError(f"summarizer {name!r} of {reg.plugin.source}: cannot load "
                              f"{reg.value}: {type(exc).__name__}: {exc}",
                              plugin=reg.plugin.name, distribution=reg.plugin.distribution,
                              entry_point=reg.plugin.entry_point) from None
