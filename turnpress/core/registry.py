"""Find plugins, call their hooks, check what they answer, and keep what they register.

The registry is built on first use, never at ``import turnpress``: the built-in
plugins (the modules named in :data:`BUILTIN_PLUGINS`) are registered first, then
the third-party plugins of the ``turnpress`` entry-point group that
``TURNPRESS_LOAD_PLUGINS`` selects. Loading is strict, like pytest's
``check_pending()``: a hook implementation whose name is not a turnpress hook is
a :class:`PluginError`. A plugin that fails to import (``SystemExit`` and a
``KeyboardInterrupt`` raised by the module included), raises in a hook, answers
a hook with the wrong type or registers a name that is already taken is named by
distribution and entry point in a :class:`PluginWarning`; what it got wrong is
left out and everything else keeps working.
"""

from __future__ import annotations

import difflib
import importlib
import importlib.metadata as metadata
import os
import signal
import sys
import threading
import time
import warnings
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pluggy

from turnpress.core import hookspecs

__all__ = [
    "BUILTIN_PLUGINS",
    "LOAD_PLUGINS_ENV",
    "SLOW_IMPORT_SECONDS",
    "PluginError",
    "PluginInfo",
    "PluginWarning",
    "Registration",
    "Registry",
    "TemplateLayout",
    "get_registry",
    "reset_registry",
]

BUILTIN_PLUGINS: tuple[str, ...] = (
    "turnpress.plugins.type_labels",
    "turnpress.plugins.namespaces",
    "turnpress.plugins.tokenizers",
    "turnpress.plugins.aggressive",
    "turnpress.plugins.checkpoint_coalesced",
    "turnpress.plugins.clear_tool_uses",
    "turnpress.plugins.full_history",
    "turnpress.plugins.observation_masking",
    "turnpress.plugins.per_turn_summary",
    "turnpress.plugins.progressive_batch",
    "turnpress.plugins.rolling_window",
    "turnpress.plugins.single_user_coalesced",
    "turnpress.plugins.readers.mini_swe_agent",
    "turnpress.plugins.readers.anthropic_messages",
    "turnpress.plugins.readers.openai_chat",
    "turnpress.plugins.commands",
)
"""The built-in plugin modules, registered in this order (no directory scanning)."""

LOAD_PLUGINS_ENV = "TURNPRESS_LOAD_PLUGINS"
"""Unset: load every third-party plugin; empty: none; else a comma-separated list of
entry-point or distribution names to load."""

SLOW_IMPORT_SECONDS = 3.0
"""A plugin import slower than this is reported (on stderr while it runs, then as a
warning with the time it took)."""

OVERRIDES_DIR = "overrides"
"""The sub-folder of a plugin template directory whose files override built-ins."""


class PluginError(Exception):
    """A plugin could not be loaded or used; the message names the plugin."""

    def __init__(self, message: str, *, plugin: str | None = None,
                 distribution: str | None = None, entry_point: str | None = None) -> None:
        super().__init__(message)
        self.plugin = plugin
        self.distribution = distribution
        self.entry_point = entry_point


class PluginWarning(UserWarning):
    """Issued when a plugin, or something it registered or answered, is left out."""


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


@dataclass(frozen=True)
class TemplateLayout:
    """Where plugin templates sit in the template search (see ``core.templates``).

    ``overrides`` maps a built-in template name to the plugin file that replaces it;
    ``own`` maps every other plugin template name to its file. ``owners`` maps a
    file to the distribution that ships it.
    """

    overrides: tuple[tuple[str, Path], ...] = ()
    own: tuple[tuple[str, Path], ...] = ()
    owners: tuple[tuple[Path, str], ...] = ()

    def owner(self, path: Path) -> str:
        """The distribution that ships ``path``."""
        return dict(self.owners).get(path, "?")


def _turnpress_version() -> str:
    try:
        return metadata.version("turnpress")
    except metadata.PackageNotFoundError:  # running from a source tree
        from turnpress import __version__

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


class Registry:
    """A pluggy plugin manager plus the names its plugins registered.

    ``Registry()`` loads the built-in plugins and the installed third-party ones
    (those ``TURNPRESS_LOAD_PLUGINS`` selects); ``Registry(entry_points=False)``
    only the built-ins. Use :meth:`register` to add a plugin object by hand (an
    application's own plugin, or one in a test).
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
            eps = [ep for ep in eps
                   if _norm(ep.name) in wanted or _norm(_dist_name(ep)) in wanted]
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
                             f"{type(exc).__name__}: {exc}")
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
                problem = f"{info.source} could not be registered: {exc}"
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
        warnings.warn(message, PluginWarning, stacklevel=4)

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
                            f"{type(exc).__name__}: {exc}")

    # -- collecting registrations -------------------------------------------------

    def _call(self, impl: Any, info: PluginInfo, hook_name: str, **kwargs: Any) -> Any:
        """Call one hook implementation; report and return None if it raises."""
        try:
            return impl.function(**_accepted(impl, **kwargs))
        except (Exception, SystemExit) as exc:
            self._fail_hook(info, hook_name, exc)
            return None

    def _collect(self, hook_name: str, kind: str,
                 make: Callable[[PluginInfo, tuple[Any, ...]], Registration]
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
                        shown = ", ".join(_short_repr(a) for a in args)
                        self._problem(_info, f"{_info.source} called register({shown}) in "
                                             f"{hook_name}(): {exc}; it is left out")

                try:
                    answer = impl.function(**_accepted(impl, register=register))
                except (Exception, SystemExit) as exc:
                    self._fail_hook(info, hook_name, exc)
                    continue
                if answer is not None:
                    self._problem(info, f"{info.source}: {hook_name}() returned "
                                        f"{_short_repr(answer)}, which is ignored; call "
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

    def strategies(self) -> dict[str, Registration]:
        """Registered strategy classes by name."""

        def make(info: PluginInfo, args: tuple[Any, ...]) -> Registration:
            if len(args) != 1:
                raise TypeError("register() takes one strategy class")
            cls = args[0]
            name = getattr(cls, "name", None)
            if not isinstance(cls, type) or not isinstance(name, str) or not name:
                raise TypeError(f"{_short_repr(cls)} is not a strategy class with a 'name' "
                                f"string")
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
                raise TypeError(f"order must be an integer, got {_short_repr(order)}")
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
                                    f"{_short_repr(text)}, not a string or None; its section "
                                    f"is left out")
                return None
            return text

        return guarded

    def tokenizers(self) -> dict[str, Registration]:
        """Registered token counters by name.

        A third-party counter that raises raises :class:`PluginError` naming its
        plugin (a count cannot be guessed).
        """

        def make(info: PluginInfo, args: tuple[Any, ...]) -> Registration:
            if len(args) != 2 or not isinstance(args[0], str) or not callable(args[1]):
                raise TypeError("register() takes (name, count_fn)")
            count = args[1] if info.builtin else _guarded_counter(args[0], args[1], info)
            return Registration(args[0], count, info)

        return self._collect("register_tokenizers", "tokenizer", make)

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
                from turnpress.core.trace import TraceError

                raise TraceError(f"{where}: trace reader {name!r} of {info.source} failed: "
                                 f"{type(exc).__name__}: {exc}") from None

        return guarded_detect, guarded_read

    def template_dirs(self) -> tuple[Path, ...]:
        """Template directories from plugins, in plugin registration order."""
        return tuple(path for path, _info in self._plugin_template_dirs())

    def _plugin_template_dirs(self) -> list[tuple[Path, PluginInfo]]:
        cached = self._cache.get("template_dirs")
        if cached is not None:
            return cached
        with self._lock:
            dirs: list[tuple[Path, PluginInfo]] = []
            for info in self.plugins.values():
                info.registers.pop("templates", None)
            for impl in self.pm.hook.template_dirs.get_hookimpls():
                info = self.plugins[impl.plugin_name]
                result = self._call(impl, info, "template_dirs")
                for d in self._checked_dirs(result, info):
                    dirs.append((d, info))
                    info.registers.setdefault("templates", []).append(str(d))
            self._cache["template_dirs"] = dirs
            return dirs

    def _checked_dirs(self, result: Any, info: PluginInfo) -> list[Path]:
        if result is None:
            return []
        items = [result] if isinstance(result, (str, os.PathLike)) else result
        if isinstance(result, (bytes, dict)) or not isinstance(items, Iterable):
            self._problem(info, f"{info.source}: template_dirs() returned "
                                f"{_short_repr(result)}; it must return a list of directory "
                                f"paths. Its templates are left out.")
            return []
        dirs = []
        for item in list(items):
            if not isinstance(item, (str, os.PathLike)):
                self._problem(info, f"{info.source}: template_dirs() returned "
                                    f"{_short_repr(item)} in its list, not a directory path; "
                                    f"it is left out")
                continue
            path = Path(item)
            if not path.is_dir():
                self._problem(info, f"{info.source}: template directory {str(path)!r} does "
                                    f"not exist; it is left out")
                continue
            dirs.append(path.resolve())
        return dirs

    def template_layout(self) -> TemplateLayout:
        """Plugin templates split into explicit overrides and the plugins' own names.

        Files that would silently change a built-in (a plugin's own template with a
        built-in's name) or that override nothing (a misspelled name under
        ``overrides/``) are reported and left out.
        """
        cached = self._cache.get("template_layout")
        if cached is not None:
            return cached
        with self._lock:
            from turnpress.core.templates import builtin_template_names

            builtin = builtin_template_names()
            overrides: dict[str, tuple[Path, PluginInfo]] = {}
            own: dict[str, tuple[Path, PluginInfo]] = {}
            owners: dict[Path, str] = {}
            for info in self.plugins.values():
                info.registers.pop("overrides", None)
            for root, info in self._plugin_template_dirs():
                for path in sorted(root.rglob("*.j2")):
                    rel = path.relative_to(root).as_posix()
                    where = f"{info.source}: template {str(path)!r}"
                    if rel.startswith(OVERRIDES_DIR + "/"):
                        name = rel[len(OVERRIDES_DIR) + 1:]
                        if name not in builtin:
                            near = difflib.get_close_matches(name, sorted(builtin), n=1)
                            hint = f" (did you mean {OVERRIDES_DIR}/{near[0]}?)" if near else ""
                            self._problem(info, f"{where} overrides no built-in template"
                                                f"{hint}; it is ignored")
                            continue
                        if name in overrides:
                            self._problem(info, f"{where} overrides {name}, which "
                                                f"{overrides[name][1].source} already "
                                                f"overrides; it is ignored")
                            continue
                        overrides[name] = (path, info)
                        info.registers.setdefault("overrides", []).append(name)
                    elif rel in builtin:
                        self._problem(info, f"{where} has the name of a built-in template, "
                                            f"which it cannot change by accident; it is "
                                            f"ignored. To override {rel} on purpose, move it "
                                            f"to {OVERRIDES_DIR}/{rel}.")
                        continue
                    elif rel in own:
                        self._problem(info, f"{where} has the same name as a template of "
                                            f"{own[rel][1].source}; it is ignored")
                        continue
                    else:
                        own[rel] = (path, info)
                    owners[path] = info.distribution
            layout = TemplateLayout(
                overrides=tuple((n, p) for n, (p, _i) in sorted(overrides.items())),
                own=tuple((n, p) for n, (p, _i) in sorted(own.items())),
                owners=tuple(owners.items()))
            self._cache["template_layout"] = layout
            return layout

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
                                    f"{_short_repr(label)} for a {type(value).__name__}, not a "
                                    f"string or None; the answer is ignored")
                continue
            if label is not None:
                return label
        return None

    def register_commands(self, cli: Any) -> None:
        """Let every plugin add its subcommands to the click group ``cli``.

        A command name that is already taken is left out (the first one keeps it),
        with a warning naming both plugins.
        """
        with self._lock:
            for info in self.plugins.values():
                info.registers.pop("command", None)
            owners = {name: "turnpress (core command)" for name in cli.commands}
            for impl in self.pm.hook.register_commands.get_hookimpls():
                info = self.plugins[impl.plugin_name]
                before = dict(cli.commands)
                self._call(impl, info, "register_commands", cli=cli)
                after = dict(cli.commands)
                cli.commands.clear()
                cli.commands.update(before)
                for name, command in after.items():
                    if before.get(name) is command:
                        continue
                    if name in before:
                        self._problem(info, f"{info.source} adds the command {name!r}, which "
                                            f"{owners[name]} already has; it is left out")
                        continue
                    cli.commands[name] = command
                    owners[name] = info.source
                    info.registers.setdefault("command", []).append(name)

    def load_all(self) -> None:
        """Run every registration hook now (``turnpress plugins`` wants the full picture)."""
        self.strategies()
        self.namespace_renderers()
        self.tokenizers()
        self.trace_readers()
        self.template_layout()

    def failure_note(self) -> str:
        """A sentence for "unknown name" errors when some plugins failed to load."""
        failed = [str(e) for e in self.errors]
        if not failed:
            return ""
        return (" Note: some plugins failed to load and may be the ones that provide it: "
                + "; ".join(failed))


def _short_repr(value: Any, limit: int = 60) -> str:
    try:
        text = repr(value)
    except Exception:  # a plugin's object with a broken __repr__
        text = f"<{type(value).__name__}>"
    if len(text) > limit:
        text = text[:limit - 3] + "..."
    return f"{text} ({type(value).__name__})" if not isinstance(value, type) else text


def _guarded_counter(name: str, count: Callable[[str], int],
                     info: PluginInfo) -> Callable[[str], int]:
    """``count`` whose exceptions become a :class:`PluginError` naming the plugin (the
    count itself is checked by ``core.tokens``); an ``encode`` attribute is kept."""

    def guarded(text: str) -> int:
        try:
            return count(text)
        except (Exception, SystemExit) as exc:
            raise PluginError(f"tokenizer {name!r} of {info.source} failed: "
                              f"{type(exc).__name__}: {exc}", plugin=info.name,
                              distribution=info.distribution,
                              entry_point=info.entry_point) from None

    encode = getattr(count, "encode", None)
    if encode is not None:
        guarded.encode = encode  # type: ignore[attr-defined]
    return guarded


def _still_importing(info: PluginInfo) -> None:
    """Say so on stderr while a plugin import runs past the threshold."""
    try:
        sys.stderr.write(f"turnpress: still importing {info.source} after "
                         f"{SLOW_IMPORT_SECONDS:g} s (leave it out with "
                         f"{LOAD_PLUGINS_ENV})\n")
        sys.stderr.flush()
    except Exception:  # pragma: no cover - stderr closed
        pass


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
