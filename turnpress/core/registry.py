"""Find plugins, call their hooks, and keep what they register.

The registry is built on first use, never at ``import turnpress``: built-in plugins
(every module in ``turnpress.plugins``) are registered first, then third-party
plugins from the ``turnpress`` entry-point group. A plugin that fails to import,
raises in a hook or registers a name that is already taken is reported as a
:class:`PluginError` naming its distribution and entry point; it is left out and
everything else keeps working.
"""

from __future__ import annotations

import importlib
import importlib.metadata as metadata
import pkgutil
import threading
import warnings
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pluggy

from turnpress.core import hookspecs

__all__ = [
    "PluginError",
    "PluginInfo",
    "PluginWarning",
    "Registration",
    "Registry",
    "get_registry",
    "reset_registry",
]

BUILTIN_PACKAGE = "turnpress.plugins"


class PluginError(Exception):
    """A plugin could not be loaded or used; the message names the plugin."""

    def __init__(self, message: str, *, plugin: str | None = None,
                 distribution: str | None = None, entry_point: str | None = None) -> None:
        super().__init__(message)
        self.plugin = plugin
        self.distribution = distribution
        self.entry_point = entry_point


class PluginWarning(UserWarning):
    """Issued when a plugin is left out because of a :class:`PluginError`."""


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

    @property
    def source(self) -> str:
        """``plugin 'x' (distribution d 1.0, entry point x = pkg.mod)``."""
        where = f"distribution {self.distribution} {self.version}"
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
        from turnpress import __version__

        return __version__


class Registry:
    """A pluggy plugin manager plus the names its plugins registered.

    ``Registry()`` loads the built-in plugins and the installed third-party ones;
    ``Registry(entry_points=False)`` only the built-ins. Use :meth:`register` to
    add a plugin object by hand (an application's own plugin, or one in a test).
    """

    def __init__(self, *, builtins: bool = True, entry_points: bool = True) -> None:
        self.pm = pluggy.PluginManager(hookspecs.PROJECT_NAME)
        self.pm.add_hookspecs(hookspecs)
        self.errors: list[PluginError] = []
        self.plugins: dict[str, PluginInfo] = {}
        self._cache: dict[str, Any] = {}
        self._lock = threading.RLock()
        if builtins:
            self._load_builtins()
        if entry_points:
            self._load_entry_points()

    # -- loading -----------------------------------------------------------------

    def _load_builtins(self) -> None:
        package = importlib.import_module(BUILTIN_PACKAGE)
        version = _turnpress_version()
        for mod in sorted(pkgutil.iter_modules(package.__path__), key=lambda m: m.name):
            if mod.name.startswith("_"):
                continue
            module = importlib.import_module(f"{BUILTIN_PACKAGE}.{mod.name}")
            info = PluginInfo(mod.name, module.__name__, "turnpress", version, builtin=True)
            self._add(module, info)

    def _load_entry_points(self) -> None:
        eps = sorted(metadata.entry_points(group=hookspecs.PROJECT_NAME),
                     key=lambda ep: (_dist_name(ep), ep.name))
        for ep in eps:
            dist = _dist_name(ep)
            info = PluginInfo(ep.name, ep.value, dist, _dist_version(ep),
                              entry_point=f"{ep.name} = {ep.value}")
            try:
                plugin = ep.load()
            except Exception as exc:
                self._fail(info, f"{info.source} failed to import: "
                                 f"{type(exc).__name__}: {exc}")
                continue
            self._add(plugin, info)

    def register(self, plugin: Any, name: str | None = None, *,
                 distribution: str = "(registered in code)", version: str = "") -> PluginInfo:
        """Register a plugin object (module, class or instance with hook functions)."""
        with self._lock:
            plugin_name = name or getattr(plugin, "__name__", None) or type(plugin).__name__
            module = getattr(plugin, "__name__", type(plugin).__module__)
            info = PluginInfo(plugin_name, module, distribution, version)
            self._add(plugin, info)
            return info

    def _add(self, plugin: Any, info: PluginInfo) -> None:
        if info.name in self.plugins:
            self._fail(info, f"{info.source} uses the plugin name {info.name!r}, which "
                             f"{self.plugins[info.name].source} already has")
            return
        try:
            self.pm.register(plugin, name=info.name)
        except Exception as exc:
            self._fail(info, f"{info.source} could not be registered: {exc}")
            return
        info.hooks = sorted(impl_hook for impl_hook in self._hook_names(info.name))
        self.plugins[info.name] = info
        self._cache.clear()

    def _hook_names(self, plugin_name: str) -> Iterable[str]:
        for caller in self.pm.get_hookcallers(self.pm.get_plugin(plugin_name)) or []:
            yield caller.name

    def _fail(self, info: PluginInfo, message: str) -> None:
        error = PluginError(message, plugin=info.name, distribution=info.distribution,
                            entry_point=info.entry_point)
        info.error = message
        self.plugins.setdefault(info.name, info)
        self.errors.append(error)
        warnings.warn(message, PluginWarning, stacklevel=3)

    # -- collecting registrations -------------------------------------------------

    def _collect(self, hook_name: str, kind: str,
                 make: Callable[[PluginInfo, tuple[Any, ...]], Registration]
                 ) -> dict[str, Registration]:
        """Call ``hook_name`` on each plugin separately, so one bad plugin stays alone."""
        with self._lock:
            if hook_name in self._cache:
                return self._cache[hook_name]
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
                    _pending.append(make(_info, args))

                try:
                    impl.function(**_accepted(impl, register=register))
                except Exception as exc:
                    self._fail_hook(info, hook_name, exc)
                    continue
                for reg in pending:
                    if reg.name in found:
                        other = found[reg.name].plugin
                        self._fail_hook(info, hook_name, None,
                                        f"{kind} name {reg.name!r} from {info.source} clashes "
                                        f"with the one from {other.source}; the second one is "
                                        f"left out. Rename one of them or uninstall "
                                        f"{info.distribution}.")
                        continue
                    found[reg.name] = reg
                    info.registers.setdefault(kind, []).append(reg.name)
            self._cache[hook_name] = found
            return found

    def _fail_hook(self, info: PluginInfo, hook: str, exc: BaseException | None,
                   message: str | None = None) -> None:
        if message is None:
            message = f"{info.source} raised in hook {hook}(): {type(exc).__name__}: {exc}"
        error = PluginError(message, plugin=info.name, distribution=info.distribution,
                            entry_point=info.entry_point)
        if error.args not in [e.args for e in self.errors]:
            self.errors.append(error)
            warnings.warn(message, PluginWarning, stacklevel=4)

    def strategies(self) -> dict[str, Registration]:
        """Registered strategy classes by name."""

        def make(info: PluginInfo, args: tuple[Any, ...]) -> Registration:
            if len(args) != 1:
                raise TypeError("register() takes one strategy class")
            cls = args[0]
            name = getattr(cls, "name", None)
            if not isinstance(cls, type) or not isinstance(name, str) or not name:
                raise TypeError(f"{cls!r} is not a strategy class with a 'name' string")
            if not callable(getattr(cls, "to_messages", None)):
                raise TypeError(f"strategy class {cls.__name__} has no to_messages() method")
            return Registration(name, cls, info)

        return self._collect("register_strategies", "strategy", make)

    def namespace_renderers(self) -> list[Registration]:
        """Registered namespace section renderers, in display order."""

        def make(info: PluginInfo, args: tuple[Any, ...]) -> Registration:
            if len(args) == 2:
                name, renderer, order = args[0], args[1], 1000
            elif len(args) == 3:
                name, renderer, order = args
            else:
                raise TypeError("register() takes (name, renderer, order)")
            if not isinstance(name, str) or not callable(renderer):
                raise TypeError("register() takes a name string and a callable renderer")
            return Registration(name, renderer, info, int(order))

        regs = self._collect("register_namespace_renderers", "namespace", make)
        return sorted(regs.values(), key=lambda r: (r.order, r.name))

    def tokenizers(self) -> dict[str, Registration]:
        """Registered token counters by name."""

        def make(info: PluginInfo, args: tuple[Any, ...]) -> Registration:
            if len(args) != 2 or not isinstance(args[0], str) or not callable(args[1]):
                raise TypeError("register() takes (name, count_fn)")
            return Registration(args[0], args[1], info)

        return self._collect("register_tokenizers", "tokenizer", make)

    def trace_readers(self) -> dict[str, Registration]:
        """Registered transcript readers by name; each value is ``(detect, read)``."""

        def make(info: PluginInfo, args: tuple[Any, ...]) -> Registration:
            if (len(args) != 3 or not isinstance(args[0], str) or not callable(args[1])
                    or not callable(args[2])):
                raise TypeError("register() takes (name, detect, read)")
            return Registration(args[0], (args[1], args[2]), info)

        return self._collect("register_trace_readers", "trace reader", make)

    def template_dirs(self) -> tuple[Path, ...]:
        """Template directories from plugins, in plugin registration order."""
        with self._lock:
            if "template_dirs" in self._cache:
                return self._cache["template_dirs"]
            dirs: list[Path] = []
            for info in self.plugins.values():
                info.registers.pop("templates", None)
            for impl in self.pm.hook.template_dirs.get_hookimpls():
                info = self.plugins[impl.plugin_name]
                try:
                    result = impl.function(**_accepted(impl))
                except Exception as exc:
                    self._fail_hook(info, "template_dirs", exc)
                    continue
                for d in [result] if isinstance(result, (str, Path)) else (result or []):
                    dirs.append(Path(d))
                    info.registers.setdefault("templates", []).append(str(d))
            self._cache["template_dirs"] = tuple(dirs)
            return self._cache["template_dirs"]

    def type_label(self, value: Any) -> str:
        """The label of ``value`` from the ``type_label`` hook, or ``"unknown"``."""
        try:
            label = self.pm.hook.type_label(value=value)
        except Exception:
            label = self._type_label_slow(value)
        return label if label is not None else "unknown"

    def _type_label_slow(self, value: Any) -> str | None:
        for impl in self.pm.hook.type_label.get_hookimpls()[::-1]:
            try:
                label = impl.function(**_accepted(impl, value=value))
            except Exception as exc:
                self._fail_hook(self.plugins[impl.plugin_name], "type_label", exc)
                continue
            if label is not None:
                return label
        return None

    def load_all(self) -> None:
        """Run every registration hook now (``turnpress plugins`` wants the full picture)."""
        self.strategies()
        self.namespace_renderers()
        self.tokenizers()
        self.trace_readers()
        self.template_dirs()

    def failure_note(self) -> str:
        """A sentence for "unknown name" errors when some plugins failed to load."""
        if not self.errors:
            return ""
        return (" Note: some plugins failed to load and may be the ones that provide it: "
                + "; ".join(str(e) for e in self.errors))


def _accepted(impl: Any, **kwargs: Any) -> dict[str, Any]:
    """The hook arguments an implementation asked for (pluggy lets it take fewer)."""
    return {k: v for k, v in kwargs.items() if k in impl.argnames}


def _dist_name(ep: metadata.EntryPoint) -> str:
    dist = getattr(ep, "dist", None)
    return dist.metadata["Name"] if dist is not None else "(unknown distribution)"


def _dist_version(ep: metadata.EntryPoint) -> str:
    dist = getattr(ep, "dist", None)
    return dist.version if dist is not None else ""


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
