"""Loading plugins: the built-ins, then the entry points ``TURNPRESS_LOAD_PLUGINS`` selects.

The built-in plugins (the modules named in :data:`BUILTIN_PLUGINS`) are registered
first, then the third-party plugins of the ``turnpress`` entry-point group that
``TURNPRESS_LOAD_PLUGINS`` selects. Loading is strict, like pytest's
``check_pending()``: a hook implementation whose name is not a turnpress hook is a
:class:`PluginError`. A plugin that fails to import (``SystemExit`` and a
``KeyboardInterrupt`` raised by the module included), raises in a hook, answers a
hook with the wrong type or registers a name that is already taken is named by
distribution and entry point in a :class:`PluginWarning`; what it got wrong is left
out and everything else keeps working.

:class:`PluginLoader` holds the pluggy plugin manager, what is known about each
plugin (:class:`PluginInfo`) and the reporting of problems; calling the hooks and
checking their answers is in :mod:`turnpress.core.hooks`, one module per hook.
"""

from __future__ import annotations

import difflib
import importlib
import importlib.metadata as metadata
import inspect
import os
import signal
import sys
import threading
import time
import warnings
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import pluggy

from turnpress.core import hookspecs
from turnpress.core.errors import PluginError, PluginWarning
from turnpress.core.version import __version__

__all__ = [
    "BUILTIN_PLUGINS",
    "LOAD_PLUGINS_ENV",
    "SLOW_IMPORT_SECONDS",
    "PluginInfo",
    "PluginLoader",
    "Registration",
    "accepted",
    "held_warnings",
    "hold_warnings",
    "selected_names",
    "short_repr",
]

BUILTIN_PLUGINS: tuple[str, ...] = (
    "turnpress.plugins.type_labels",
    "turnpress.plugins.namespaces",
    "turnpress.plugins.tokenizers",
    "turnpress.plugins.aggressive",
    "turnpress.plugins.checkpoint_coalesced",
    "turnpress.plugins.clear_tool_uses",
    "turnpress.plugins.full_history",
    "turnpress.plugins.langchain_clear_tool_uses",
    "turnpress.plugins.observation_masking",
    "turnpress.plugins.per_turn_summary",
    "turnpress.plugins.price_scheduled",
    "turnpress.plugins.progressive_batch",
    "turnpress.plugins.rolling_window",
    "turnpress.plugins.single_user_coalesced",
    "turnpress.plugins.summarizers",
    "turnpress.plugins.summary_compaction",
    "turnpress.plugins.trim_messages",
    "turnpress.plugins.readers.mini_swe_agent",
    "turnpress.plugins.readers.anthropic_messages",
    "turnpress.plugins.readers.openai_responses",
    "turnpress.plugins.readers.claude_code",
    "turnpress.plugins.readers.openai_chat",
    "turnpress.plugins.commands",
    "turnpress.plugins.process_pool",
    "turnpress.plugins.dask_executor",
)
"""The built-in plugin modules, registered in this order (no directory scanning)."""

LOAD_PLUGINS_ENV = "TURNPRESS_LOAD_PLUGINS"
"""Unset: load every third-party plugin; empty: none; else a comma-separated list of
entry-point or distribution names to load."""

LEAVE_OUT = (f"Upgrade or reinstall it (or report it to its authors), or leave it out with "
             f"{LOAD_PLUGINS_ENV}=<the plugins to load, comma-separated>")
"""How to mend a plugin that fails, said after what went wrong."""

SLOW_IMPORT_SECONDS = 3.0
"""A plugin import slower than this is reported (on stderr while it runs, then as a
warning with the time it took)."""

#: the warnings this process holds back instead of showing them, as (message, plugin
#: name): None, except in a worker process (:func:`hold_warnings`)
_held: list[tuple[str, str | None]] | None = None
_held_lock = threading.Lock()


def hold_warnings() -> None:
    """From now on, keep the plugin warnings of this process for :func:`held_warnings`
    instead of showing them: a worker process does, and sends them to the process that
    drives it, which shows each once (``--jobs 4`` had shown each of them four times)."""
    global _held
    with _held_lock:
        if _held is None:
            _held = []


def held_warnings() -> tuple[tuple[str, str | None], ...]:
    """The warnings held back since the last call, as (message, plugin name), and
    forget them; none unless :func:`hold_warnings` was called."""
    if _held is None:
        return ()
    with _held_lock:
        out = tuple(_held)
        _held.clear()
    return out

@dataclass
class PluginInfo:
    """What ``turnpress plugins`` shows about one plugin."""

    name: str
    module: str
    distribution: str
    version: str
    entry_point: str | None = None
    builtin: bool = False
    hooks: list[str] = field(default_factory=list)
    registers: dict[str, list[str]] = field(default_factory=dict)
    error: str | None = None
    problems: list[str] = field(default_factory=list)

    @property
    def source(self) -> str:
        """``plugin 'x' (distribution d 1.0, entry point x = pkg.mod)``."""
        where = f"distribution {self.distribution} {self.version}".rstrip()
        if self.entry_point:
            where += f", entry point {self.entry_point}"
        return f"plugin {self.name!r} ({where})"


@dataclass(frozen=True)
class Registration:
    """One registered thing (a strategy class, a tokenizer...) and who registered it."""

    name: str
    value: Any
    plugin: PluginInfo
    order: int = 0

def _turnpress_version() -> str:
    try:
        return metadata.version("turnpress")
    except metadata.PackageNotFoundError:  # running from a source tree
        return __version__

def _norm(name: str) -> str:
    return name.strip().lower().replace("_", "-").replace(".", "-")


def selected_names() -> set[str] | None:
    """The names ``TURNPRESS_LOAD_PLUGINS`` selects (normalized), or None when unset."""
    value = os.environ.get(LOAD_PLUGINS_ENV)
    if value is None:
        return None
    return {_norm(n) for n in value.split(",") if n.strip()}


class _InterruptWatch:
    """Tells a real Ctrl-C apart from a ``KeyboardInterrupt`` a plugin raises itself.

    While plugins import, SIGINT sets ``signalled`` before raising as usual; a
    ``KeyboardInterrupt`` seen without it came from the plugin's code. Outside the
    main thread no SIGINT can arrive, so every ``KeyboardInterrupt`` is the plugin's.
    """

    def __init__(self) -> None:
        self.signalled = False

    @contextmanager
    def watching(self) -> Iterator[None]:
        if threading.current_thread() is not threading.main_thread():
            yield
            return
        try:
            previous = signal.getsignal(signal.SIGINT)
        except (ValueError, OSError):  # pragma: no cover - no signal support
            yield
            return

        def handler(signum: int, frame: Any) -> None:
            self.signalled = True
            if callable(previous):
                previous(signum, frame)
            elif previous != signal.SIG_IGN:
                raise KeyboardInterrupt

        try:
            signal.signal(signal.SIGINT, handler)
        except (ValueError, OSError):  # pragma: no cover
            yield
            return
        try:
            yield
        finally:
            signal.signal(signal.SIGINT, previous)

class PluginLoader:
    """A pluggy plugin manager with the plugins loaded, each one's :class:`PluginInfo`
    and the problems found, reported as :class:`PluginWarning`.

    ``PluginLoader()`` loads the built-in plugins and the installed third-party ones
    (those ``TURNPRESS_LOAD_PLUGINS`` selects); ``entry_points=False`` only the
    built-ins. :class:`~turnpress.core.registry.Registry` adds the hooks to it.
    """

    def __init__(self, *, builtins: bool = True, entry_points: bool = True) -> None:
        self.pm = pluggy.PluginManager(hookspecs.PROJECT_NAME)
        self.pm.add_hookspecs(hookspecs)
        self.errors: list[PluginError] = []
        self.plugins: dict[str, PluginInfo] = {}
        # installed plugins TURNPRESS_LOAD_PLUGINS leaves out ("distribution (entry point)"),
        # and the value it had when they were loaded
        self.left_out: list[str] = []
        self.selection: str | None = None
        self._cache: dict[str, Any] = {}
        self._lock = threading.RLock()
        if builtins:
            self._load_builtins()
        if entry_points:
            self._load_entry_points()

    # -- loading -----------------------------------------------------------------

    def _load_builtins(self) -> None:
        version = _turnpress_version()
        for module_name in BUILTIN_PLUGINS:
            module = importlib.import_module(module_name)
            info = PluginInfo(module_name.rpartition(".")[2], module_name, "turnpress",
                              version, builtin=True)
            self._add(module, info, strict=True)

    def _load_entry_points(self) -> None:
        eps = sorted(metadata.entry_points(group=hookspecs.PROJECT_NAME),
                     key=lambda ep: (_dist_name(ep), ep.name))
        wanted = selected_names()
        if wanted is not None:
            known = {_norm(ep.name) for ep in eps} | {_norm(_dist_name(ep)) for ep in eps}
            for name in sorted(wanted - known):
                self._warn(f"{LOAD_PLUGINS_ENV} names {name!r}, which no installed plugin "
                           f"has (installed: {', '.join(sorted(known)) or 'none'})")
            chosen = [ep for ep in eps
                      if _norm(ep.name) in wanted or _norm(_dist_name(ep)) in wanted]
            self.left_out = [f"{_dist_name(ep)} ({ep.name})" for ep in eps if ep not in chosen]
            self.selection = os.environ.get(LOAD_PLUGINS_ENV, "")
            eps = chosen
        watch = _InterruptWatch()
        with watch.watching():
            for ep in eps:
                info = PluginInfo(ep.name, ep.value, _dist_name(ep), _dist_version(ep),
                                  entry_point=f"{ep.name} = {ep.value}")
                plugin = self._import(ep, info, watch)
                if plugin is not None:
                    self._add(plugin, info)

    def _import(self, ep: metadata.EntryPoint, info: PluginInfo,
                watch: _InterruptWatch) -> Any | None:
        """``ep.load()``, with every way an import can go wrong named and contained."""
        timer = threading.Timer(SLOW_IMPORT_SECONDS, _still_importing, (info,))
        timer.daemon = True
        timer.start()
        started = time.perf_counter()
        try:
            plugin = ep.load()
        except KeyboardInterrupt:
            if watch.signalled:
                raise  # a real Ctrl-C stops turnpress
            self._fail(info, f"{info.source} raised KeyboardInterrupt while importing; "
                             f"it is left out")
            return None
        except SystemExit as exc:
            self._fail(info, f"{info.source} called exit ({exc.code!r}) while importing; "
                             f"it is left out")
            return None
        except Exception as exc:
            self._fail(info, f"{info.source} failed to import: "
                             f"{type(exc).__name__}: {exc}. {LEAVE_OUT}")
            return None
        finally:
            timer.cancel()
        took = time.perf_counter() - started
        if took > SLOW_IMPORT_SECONDS:
            self._problem(info, f"{info.source} took {took:.1f} s to import (more than "
                                f"{SLOW_IMPORT_SECONDS:g} s); every turnpress command waits "
                                f"for it. Leave it out with {LOAD_PLUGINS_ENV}.")
        return plugin

    def register(self, plugin: Any, name: str | None = None, *,
                 distribution: str = "(registered in code)", version: str = "") -> PluginInfo:
        """Register a plugin object (module, class or instance with hook functions).

        Raises :class:`PluginError` if it implements a hook that does not exist,
        or if the name is taken.
        """
        with self._lock:
            plugin_name = name or getattr(plugin, "__name__", None) or type(plugin).__name__
            module = getattr(plugin, "__name__", type(plugin).__module__)
            info = PluginInfo(plugin_name, module, distribution, version)
            self._add(plugin, info, strict=True)
            return info

    def _add(self, plugin: Any, info: PluginInfo, *, strict: bool = False) -> None:
        """Register ``plugin``; ``strict`` raises instead of reporting and leaving it out."""
        problem = None
        if info.name in self.plugins:
            problem = (f"{info.source} uses the plugin name {info.name!r}, which "
                       f"{self.plugins[info.name].source} already has; it is left out")
        else:
            try:
                self.pm.register(plugin, name=info.name)
            except Exception as exc:
                problem = (f"{info.source} could not be registered: "
                           f"{_registration_problem(plugin, exc)}")
            else:
                unknown = self._unknown_hooks(info.name)
                if unknown:
                    self.pm.unregister(name=info.name)
                    problem = f"{info.source} is left out: " + "; ".join(unknown)
        if problem is not None:
            if strict:
                raise PluginError(problem, plugin=info.name, distribution=info.distribution,
                                  entry_point=info.entry_point)
            self._fail(info, problem)
            return
        info.hooks = sorted(self._hook_names(info.name))
        self.plugins[info.name] = info
        for hook in _unmarked_hooks(plugin):
            self._problem(info, f"{info.source} defines {hook}() without @turnpress.hookimpl,"
                                f" so turnpress never calls it")
        self._cache.clear()

    def _unknown_hooks(self, plugin_name: str) -> list[str]:
        """Messages for hook implementations with no hook spec (pytest's check_pending)."""
        messages = []
        for caller in self.pm.get_hookcallers(self.pm.get_plugin(plugin_name)) or []:
            if caller.spec is not None:
                continue
            if any(impl.plugin_name == plugin_name and impl.optionalhook
                   for impl in caller.get_hookimpls()):
                continue
            near = difflib.get_close_matches(caller.name, hookspecs.HOOK_NAMES, n=1)
            hint = f"did you mean {near[0]}?" if near else (
                "the hooks are " + ", ".join(hookspecs.HOOK_NAMES))
            messages.append(f"it implements {caller.name}(), which is not a turnpress "
                            f"hook ({hint})")
        return messages

    def _hook_names(self, plugin_name: str) -> Iterable[str]:
        for caller in self.pm.get_hookcallers(self.pm.get_plugin(plugin_name)) or []:
            yield caller.name

    # -- reporting ----------------------------------------------------------------

    def _warn(self, message: str, info: PluginInfo | None = None) -> None:
        if message in [str(e) for e in self.errors]:
            return
        self.errors.append(PluginError(
            message, plugin=info.name if info else None,
            distribution=info.distribution if info else None,
            entry_point=info.entry_point if info else None))
        if _held is not None:
            with _held_lock:
                _held.append((message, info.name if info else None))
            return
        warnings.warn(message, PluginWarning, stacklevel=4)

    def relay(self, held: Iterable[tuple[str, str | None]]) -> None:
        """Show the warnings a worker process held back (:func:`held_warnings`) as this
        process's own: each once, however many workers sent it."""
        for message, plugin in held:
            info = self.plugins.get(plugin) if plugin is not None else None
            if info is not None:
                self._problem(info, message)
            else:
                self._warn(message)

    def _fail(self, info: PluginInfo, message: str) -> None:
        """The whole plugin is left out."""
        info.error = message
        self.plugins.setdefault(info.name, info)
        self._warn(message, info)

    def _problem(self, info: PluginInfo, message: str) -> None:
        """Part of what a loaded plugin did is left out (or it is slow)."""
        if message not in info.problems:
            info.problems.append(message)
        self._warn(message, info)

    def _fail_hook(self, info: PluginInfo, hook: str, exc: BaseException) -> None:
        self._problem(info, f"{info.source} raised in hook {hook}(): "
                            f"{type(exc).__name__}: {exc}; what it registers there is "
                            f"left out. {LEAVE_OUT}")

    def _call(self, impl: Any, info: PluginInfo, hook_name: str, **kwargs: Any) -> Any:
        """Call one hook implementation; report and return None if it raises."""
        try:
            return impl.function(**accepted(impl, **kwargs))
        except (Exception, SystemExit) as exc:
            self._fail_hook(info, hook_name, exc)
            return None


def short_repr(value: Any, limit: int = 60) -> str:
    """``repr(value)`` cut to ``limit`` characters, with its type (for messages)."""
    try:
        text = repr(value)
    except Exception:  # a plugin's object with a broken __repr__
        text = f"<{type(value).__name__}>"
    if len(text) > limit:
        text = text[:limit - 3] + "..."
    return f"{text} ({type(value).__name__})" if not isinstance(value, type) else text


def _still_importing(info: PluginInfo) -> None:
    """Say so on stderr while a plugin import runs past the threshold."""
    try:
        sys.stderr.write(f"turnpress: still importing {info.source} after "
                         f"{SLOW_IMPORT_SECONDS:g} s (leave it out with "
                         f"{LOAD_PLUGINS_ENV})\n")
        sys.stderr.flush()
    except Exception:  # pragma: no cover - stderr closed
        pass


def _registration_problem(plugin: Any, exc: Exception) -> str:
    """Why pluggy refused ``plugin``, on one line: for a hook implementation that takes
    a parameter its hookspec does not pass, which one, named from the hookspec."""
    if isinstance(exc, pluggy.PluginValidationError):
        for name in hookspecs.HOOK_NAMES:
            impl = getattr(plugin, name, None)
            if not callable(impl) or not hasattr(impl, hookspecs.PROJECT_NAME + "_impl"):
                continue
            spec = _required(getattr(hookspecs, name))
            takes = _required(impl)
            extra = [arg for arg in takes if arg not in spec]
            if extra:
                return (f"its hook {name}({', '.join(takes)}) takes "
                        f"{', '.join(repr(a) for a in extra)}, which "
                        f"{name}({', '.join(spec)}) does not pass; name the parameters as "
                        f"in the hookspec (docs/plugins.md)")
    return " ".join(str(exc).split())


def _required(function: Any) -> list[str]:
    """The parameters of ``function`` a hook call must pass (those without a default), as
    pluggy counts them."""
    try:
        parameters = inspect.signature(function).parameters.values()
    except (TypeError, ValueError):
        return []
    return [p.name for p in parameters if p.default is p.empty
            and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]


def _unmarked_hooks(plugin: Any) -> list[str]:
    """Hook names the plugin defines as plain functions (a forgotten @hookimpl)."""
    marker = hookspecs.PROJECT_NAME + "_impl"
    found = []
    for name in hookspecs.HOOK_NAMES:
        attr = getattr(plugin, name, None)
        if callable(attr) and not hasattr(attr, marker) and \
                getattr(attr, "__module__", None) == getattr(plugin, "__name__", None):
            found.append(name)
    return found


def accepted(impl: Any, **kwargs: Any) -> dict[str, Any]:
    """The hook arguments an implementation asked for (pluggy lets it take fewer)."""
    return {k: v for k, v in kwargs.items() if k in impl.argnames}


def _dist_name(ep: metadata.EntryPoint) -> str:
    dist = getattr(ep, "dist", None)
    return dist.metadata["Name"] if dist is not None else "(unknown distribution)"


def _dist_version(ep: metadata.EntryPoint) -> str:
    dist = getattr(ep, "dist", None)
    return dist.version if dist is not None else ""
