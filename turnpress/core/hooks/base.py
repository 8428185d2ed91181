"""Calling one hook on each plugin separately, so one bad plugin stays alone.

:class:`HookCalls` is the base of every hook's class in this package: ``_collect``
calls a ``register_*`` hook plugin by plugin, checks each ``register(...)`` call with
the hook's own ``make`` function and reports a bad answer or a name clash, naming the
plugin, as a :class:`~turnpress.core.errors.PluginWarning`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from turnpress.core.plugin_loading import (
    PluginInfo,
    PluginLoader,
    Registration,
    accepted,
    short_repr,
)

__all__ = ["HookCalls", "MakeRegistration"]

MakeRegistration = Callable[[PluginInfo, tuple[Any, ...]], Registration]
"""A hook's check of one ``register(...)`` call: the :class:`Registration`, or
``TypeError``/``ValueError`` saying what is wrong with the arguments."""


class HookCalls(PluginLoader):
    """A :class:`PluginLoader` that calls ``register_*`` hooks and keeps their answers."""

    def _collect(self, hook_name: str, kind: str, make: MakeRegistration
                 ) -> dict[str, Registration]:
        """Call ``hook_name`` on each plugin separately, so one bad plugin stays alone."""
        cached = self._cache.get(hook_name)
        if cached is not None:
            return cached
        with self._lock:
            found: dict[str, Registration] = {}
            for info in self.plugins.values():
                info.registers.pop(kind, None)
            caller = getattr(self.pm.hook, hook_name)
            # get_hookimpls() lists plugins in registration order: built-ins first
            for impl in caller.get_hookimpls():
                info = self.plugins[impl.plugin_name]
                pending: list[Registration] = []

                def register(*args: Any, _info: PluginInfo = info,
                             _pending: list[Registration] = pending) -> None:
                    try:
                        _pending.append(make(_info, args))
                    except (TypeError, ValueError) as exc:
                        shown = ", ".join(short_repr(a) for a in args)
                        self._problem(_info, f"{_info.source} called register({shown}) in "
                                             f"{hook_name}(): {exc}; it is left out")

                try:
                    answer = impl.function(**accepted(impl, register=register))
                except (Exception, SystemExit) as exc:
                    self._fail_hook(info, hook_name, exc)
                    continue
                if answer is not None:
                    self._problem(info, f"{info.source}: {hook_name}() returned "
                                        f"{short_repr(answer)}, which is ignored; call "
                                        f"register(...) once for each {kind} instead")
                for reg in pending:
                    if reg.name in found:
                        other = found[reg.name].plugin
                        self._problem(info, f"{kind} name {reg.name!r} from {info.source} "
                                            f"clashes with the one from {other.source}; the "
                                            f"second one is left out. Rename one of them or "
                                            f"uninstall {info.distribution}.")
                        continue
                    found[reg.name] = reg
                    info.registers.setdefault(kind, []).append(reg.name)
            self._cache[hook_name] = found
            return found
