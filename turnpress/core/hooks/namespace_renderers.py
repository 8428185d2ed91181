"""``register_namespace_renderers(register)``: ``register(name, renderer, order)``.

A renderer takes a :class:`~turnpress.core.compression.NamespaceView` and returns a
section string or None. A third-party renderer is guarded: one that raises or
returns something else is reported once, naming its plugin, and its section is
left out.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from turnpress.core.hooks.base import HookCalls
from turnpress.core.plugin_loading import PluginInfo, Registration, short_repr

__all__ = ["NamespaceRenderersHook"]


class NamespaceRenderersHook(HookCalls):
    """The registered namespace section renderers, in display order."""

    def namespace_renderers(self) -> list[Registration]:
        """Registered namespace section renderers, in display order.

        A third-party renderer that raises or returns something other than a string
        or None is reported once, naming its plugin, and its section is left out.
        """
        cached = self._cache.get("namespace_order")
        if cached is not None:
            return cached

        def make(info: PluginInfo, args: tuple[Any, ...]) -> Registration:
            if len(args) == 2:
                name, renderer, order = args[0], args[1], 1000
            elif len(args) == 3:
                name, renderer, order = args
            else:
                raise TypeError("register() takes (name, renderer, order)")
            if not isinstance(name, str) or not callable(renderer):
                raise TypeError("register() takes a name string and a callable renderer")
            if isinstance(order, bool) or not isinstance(order, int):
                raise TypeError(f"order must be an integer, got {short_repr(order)}")
            if not info.builtin:
                renderer = self._guarded_renderer(name, renderer, info)
            return Registration(name, renderer, info, order)

        regs = self._collect("register_namespace_renderers", "namespace", make)
        ordered = sorted(regs.values(), key=lambda r: (r.order, r.name))
        self._cache["namespace_order"] = ordered
        return ordered

    def _guarded_renderer(self, name: str, renderer: Callable[..., Any],
                          info: PluginInfo) -> Callable[..., Any]:
        def guarded(view: Any) -> str | None:
            try:
                text = renderer(view)
            except (Exception, SystemExit) as exc:
                self._problem(info, f"namespace renderer {name!r} of {info.source} failed: "
                                    f"{type(exc).__name__}: {exc}; its section is left out")
                return None
            if text is not None and not isinstance(text, str):
                self._problem(info, f"namespace renderer {name!r} of {info.source} returned "
                                    f"{short_repr(text)}, not a string or None; its section "
                                    f"is left out")
                return None
            return text

        return guarded
