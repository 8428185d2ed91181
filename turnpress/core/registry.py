"""The registry: the one object that knows the plugins and what they registered.

The registry is built on first use, never at ``import turnpress``
(:func:`get_registry`). :class:`Registry` is assembled from small pieces: loading
plugins (:mod:`turnpress.core.plugin_loading`) and one class per hook, each checking
that hook's answers (:mod:`turnpress.core.hooks`).
"""

from __future__ import annotations

import threading

from turnpress.core.errors import PluginError, PluginWarning
from turnpress.core.hooks.commands import CommandsHook
from turnpress.core.hooks.executors import ExecutorsHook
from turnpress.core.hooks.namespace_renderers import NamespaceRenderersHook
from turnpress.core.hooks.strategies import StrategiesHook
from turnpress.core.hooks.summarizers import SummarizersHook
from turnpress.core.hooks.template_dirs import OVERRIDES_DIR, TemplateDirsHook, TemplateLayout
from turnpress.core.hooks.tokenizers import TokenizersHook
from turnpress.core.hooks.trace_readers import TraceReadersHook
from turnpress.core.hooks.type_label import TypeLabelHook
from turnpress.core.plugin_loading import (
    BUILTIN_PLUGINS,
    LOAD_PLUGINS_ENV,
    SLOW_IMPORT_SECONDS,
    PluginInfo,
    Registration,
    selected_names,
)

__all__ = [
    "BUILTIN_PLUGINS",
    "LOAD_PLUGINS_ENV",
    "OVERRIDES_DIR",
    "SLOW_IMPORT_SECONDS",
    "PluginError",
    "PluginInfo",
    "PluginWarning",
    "Registration",
    "Registry",
    "TemplateLayout",
    "get_registry",
    "reset_registry",
    "selected_names",
]


class Registry(StrategiesHook, NamespaceRenderersHook, TokenizersHook, TraceReadersHook,
               TemplateDirsHook, TypeLabelHook, CommandsHook, SummarizersHook,
               ExecutorsHook):
    """A pluggy plugin manager plus the names its plugins registered.

    ``Registry()`` loads the built-in plugins and the installed third-party ones
    (those ``TURNPRESS_LOAD_PLUGINS`` selects); ``Registry(entry_points=False)``
    only the built-ins. Use :meth:`register` to add a plugin object by hand (an
    application's own plugin, or one in a test).
    """

    def load_all(self) -> None:
        """Run every registration hook now (``turnpress plugins`` wants the full picture)."""
        self.strategies()
        self.namespace_renderers()
        self.tokenizers()
        self.trace_readers()
        self.template_layout()
        self.summarizers()
        self.executors()

    def failure_note(self) -> str:
        """A sentence for "unknown name" errors when some plugins failed to load, or
        ``TURNPRESS_LOAD_PLUGINS`` left installed ones out (either may be the one that
        provides the name)."""
        note = ""
        failed = [str(e) for e in self.errors if e.plugin is not None]
        if failed:
            note += (" Note: some plugins failed to load and may be the ones that provide "
                     "it: " + "; ".join(failed))
        if self.left_out:
            note += (f" Note: {LOAD_PLUGINS_ENV}={self.selection!r} leaves out the installed "
                     f"plugin{'s' if len(self.left_out) > 1 else ''} "
                     f"{', '.join(self.left_out)}, which may provide it: unset it, or add "
                     f"the plugin's name.")
        return note


_registry: Registry | None = None
_registry_lock = threading.Lock()


def get_registry() -> Registry:
    """The process-wide registry, built (and third-party plugins loaded) on first use."""
    global _registry
    if _registry is None:
        with _registry_lock:
            if _registry is None:
                _registry = Registry()
    return _registry


def reset_registry(registry: Registry | None = None) -> Registry | None:
    """Drop the process-wide registry (it is rebuilt on next use) or install ``registry``.

    Returns the previous one, so a test can put it back.
    """
    global _registry
    with _registry_lock:
        previous, _registry = _registry, registry
    return previous
