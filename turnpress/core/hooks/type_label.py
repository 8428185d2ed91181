"""``type_label(value)``: firstresult, a label for a value (``"list[3]"``...) or None.

The built-in vocabulary is ``trylast``, so plugins can label their own types. An
answer that is not a string or None is reported, naming the plugin, and ignored
(the next implementation answers instead).
"""

from __future__ import annotations

from typing import Any

from turnpress.core.errors import a_or_an
from turnpress.core.hooks.base import HookCalls
from turnpress.core.plugin_loading import short_repr

__all__ = ["TypeLabelHook"]


class TypeLabelHook(HookCalls):
    """The label of a value, from the first plugin that knows it."""

    def type_label(self, value: Any) -> str:
        """The label of ``value`` from the ``type_label`` hook, or ``"unknown"``.

        An answer that is not a string or None is reported, naming the plugin, and
        ignored (the next implementation answers instead).
        """
        try:
            label = self.pm.hook.type_label(value=value)
        except Exception:
            label = self._type_label_slow(value)
        else:
            if label is not None and not isinstance(label, str):
                label = self._type_label_slow(value)
        return label if label is not None else "unknown"

    def _type_label_slow(self, value: Any) -> str | None:
        for impl in self.pm.hook.type_label.get_hookimpls()[::-1]:
            info = self.plugins[impl.plugin_name]
            label = self._call(impl, info, "type_label", value=value)
            if label is not None and not isinstance(label, str):
                self._problem(info, f"{info.source}: type_label() returned "
                                    f"{short_repr(label)} for "
                                    f"{a_or_an(type(value).__name__)}, not a string or None; "
                                    f"the answer is ignored")
                continue
            if label is not None:
                return label
        return None
