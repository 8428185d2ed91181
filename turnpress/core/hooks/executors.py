"""``register_executors(register)``: ``register(name, factory)``, where ``compare`` runs.

``factory(address, jobs)`` builds an :class:`~turnpress.core.executor.Executor`; the
name is what ``--executor NAME[:ADDRESS]`` selects. A third-party factory is guarded:
one that raises something other than a ``ValueError`` (a bad address) or an
:class:`~turnpress.core.errors.ExecutorError` (an engine that cannot be reached)
becomes a :class:`~turnpress.core.errors.PluginError` naming its plugin.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from turnpress.core.errors import ExecutorError, PluginError
from turnpress.core.hooks.base import HookCalls
from turnpress.core.plugin_loading import PluginInfo, Registration

__all__ = ["EXECUTOR_NAME", "ExecutorsHook"]

EXECUTOR_NAME = re.compile(r"[a-z][a-z0-9_-]*\Z")
"""What an executor's name looks like: it is typed before the colon of ``--executor``."""


class ExecutorsHook(HookCalls):
    """The registered executors."""

    def executors(self) -> dict[str, Registration]:
        """Registered executor factories by name (``factory(address, jobs)``).

        A third-party factory that raises something other than ``ValueError`` or
        ``ExecutorError`` raises :class:`PluginError` naming its plugin.
        """

        def make(info: PluginInfo, args: tuple[Any, ...]) -> Registration:
            if len(args) != 2 or not isinstance(args[0], str) or not callable(args[1]):
                raise TypeError("register() takes (name, factory)")
            if not EXECUTOR_NAME.match(args[0]):
                raise ValueError(f"executor name {args[0]!r} must be lowercase letters, "
                                 f"digits, '-' or '_' (it is typed before the ':' of "
                                 f"--executor NAME[:ADDRESS])")
            factory = args[1] if info.builtin else _guarded_factory(args[0], args[1], info)
            return Registration(args[0], factory, info)

        return self._collect("register_executors", "executor", make)


def _guarded_factory(name: str, factory: Callable[..., Any],
                     info: PluginInfo) -> Callable[..., Any]:
    """``factory`` whose unexpected exceptions become a :class:`PluginError` naming the
    plugin (a ``ValueError``, a bad address, and an ``ExecutorError``, an engine that
    cannot be reached, pass as they are)."""

    def guarded(address: str | None, jobs: int) -> Any:
        try:
            return factory(address, jobs)
        except (ValueError, ExecutorError):
            raise
        except (Exception, SystemExit) as exc:
            raise PluginError(f"executor {name!r} of {info.source} failed to start: "
                              f"{type(exc).__name__}: {exc}", plugin=info.name,
                              distribution=info.distribution,
                              entry_point=info.entry_point) from None

    return guarded
