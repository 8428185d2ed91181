"""``register_trace_readers(register)``: ``register(name, detect, read)``, a transcript format.

A third-party reader is guarded: a ``detect`` that raises is reported and counts as
"not this format"; a ``read`` that raises something other than a ``ValueError``
becomes a :class:`~turnpress.core.errors.TraceError` naming the reader and its plugin.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from turnpress.core.errors import TraceError
from turnpress.core.hooks.base import HookCalls
from turnpress.core.plugin_loading import PluginInfo, Registration

__all__ = ["TraceReadersHook"]


class TraceReadersHook(HookCalls):
    """The registered transcript readers."""

    def trace_readers(self) -> dict[str, Registration]:
        """Registered transcript readers by name; each value is ``(detect, read)``.

        A third-party ``detect`` that raises is reported and counts as "not this
        format"; a ``read`` that raises something other than a ``ValueError``
        becomes a ``TraceError`` naming the reader and its plugin.
        """

        def make(info: PluginInfo, args: tuple[Any, ...]) -> Registration:
            if (len(args) != 3 or not isinstance(args[0], str) or not callable(args[1])
                    or not callable(args[2])):
                raise TypeError("register() takes (name, detect, read)")
            pair = (args[1], args[2])
            if not info.builtin:
                pair = self._guarded_reader(args[0], args[1], args[2], info)
            return Registration(args[0], pair, info)

        return self._collect("register_trace_readers", "trace reader", make)

    def _guarded_reader(self, name: str, detect: Callable[..., Any], read: Callable[..., Any],
                        info: PluginInfo) -> tuple[Callable[..., bool], Callable[..., Any]]:
        def guarded_detect(data: Any, path: Any) -> bool:
            try:
                return bool(detect(data, path))
            except (Exception, SystemExit) as exc:
                self._problem(info, f"trace reader {name!r} of {info.source}: detect() "
                                    f"raised {type(exc).__name__}: {exc}; it must return "
                                    f"False for data it does not read")
                return False

        def guarded_read(data: Any, where: str) -> Any:
            try:
                return read(data, where)
            except ValueError:
                raise
            except (Exception, SystemExit) as exc:
                raise TraceError(f"{where}: trace reader {name!r} of {info.source} failed: "
                                 f"{type(exc).__name__}: {exc}") from None

        return guarded_detect, guarded_read
