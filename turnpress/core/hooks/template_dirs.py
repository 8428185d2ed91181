"""``template_dirs()``: the template directories a plugin ships, and where they sit.

Each answer must be a directory path or a list of them; what is not is reported and
left out. Files under a directory's ``overrides/`` replace the built-in template of
the same name; the others add new names and can never replace a built-in one by
accident (:class:`TemplateLayout`). The search order itself is in
``core.templates``.
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from turnpress.core.hooks.base import HookCalls
from turnpress.core.plugin_loading import PluginInfo, short_repr

__all__ = ["BUILTIN_TEMPLATE_DIR", "OVERRIDES_DIR", "TemplateDirsHook", "TemplateLayout",
           "builtin_template_names"]

BUILTIN_TEMPLATE_DIR = Path(__file__).resolve().parent.parent.parent / "templates"
"""The built-in templates (``turnpress/templates``)."""

OVERRIDES_DIR = "overrides"
"""The sub-folder of a plugin template directory whose files override built-ins."""


def builtin_template_names() -> frozenset[str]:
    """The names of every built-in template (``history/turns_left.j2``, ...)."""
    return _builtin_names()


@lru_cache(maxsize=1)
def _builtin_names() -> frozenset[str]:
    return frozenset(p.relative_to(BUILTIN_TEMPLATE_DIR).as_posix()
                     for p in BUILTIN_TEMPLATE_DIR.rglob("*.j2"))


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


class TemplateDirsHook(HookCalls):
    """The plugins' template directories and how their files sit among the built-ins."""

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
                                f"{short_repr(result)}; it must return a list of directory "
                                f"paths. Its templates are left out.")
            return []
        dirs = []
        for item in list(items):
            if not isinstance(item, (str, os.PathLike)):
                self._problem(info, f"{info.source}: template_dirs() returned "
                                    f"{short_repr(item)} in its list, not a directory path; "
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
