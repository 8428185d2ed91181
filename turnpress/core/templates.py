"""The Jinja2 environment every prompt string is rendered with.

Templates are looked up in this order, first match wins:

1. directories passed explicitly (``template_dirs=``, ``--templates DIR``),
2. directories in the ``TURNPRESS_TEMPLATES`` environment variable
   (separated by ``os.pathsep``),
3. directories that plugins return from their ``template_dirs()`` hook,
4. the built-in templates in ``turnpress/templates``.

``default:NAME`` always reaches the built-in template, so an override can
``{% extends "default:history/output.j2" %}`` and change one block.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import jinja2

from turnpress.core.clojure import to_clojure

__all__ = [
    "BUILTIN_TEMPLATE_DIR",
    "TemplateInfo",
    "export_templates",
    "get_environment",
    "list_templates",
    "resolve_template_dirs",
]

BUILTIN_TEMPLATE_DIR = Path(__file__).resolve().parent.parent / "templates"
ENV_VAR = "TURNPRESS_TEMPLATES"


def resolve_template_dirs(template_dirs: Iterable[str | os.PathLike[str]] = (),
                          *, plugin_dirs: Iterable[Path] | None = None) -> tuple[Path, ...]:
    """The override directories in search order (without the built-in one).

    Raises ``ValueError`` for a directory that does not exist, naming where it
    came from, so a typo in ``--templates`` is not silently ignored.
    """
    dirs: list[Path] = []
    for d in template_dirs:
        dirs.append(_existing(Path(d), "template directory"))
    for d in filter(None, os.environ.get(ENV_VAR, "").split(os.pathsep)):
        dirs.append(_existing(Path(d), f"template directory in ${ENV_VAR}"))
    if plugin_dirs is None:
        from turnpress.core.registry import get_registry

        plugin_dirs = get_registry().template_dirs()
    dirs.extend(Path(d) for d in plugin_dirs)
    return tuple(dirs)


def _existing(path: Path, what: str) -> Path:
    if not path.is_dir():
        raise ValueError(f"{what} {str(path)!r} does not exist or is not a directory")
    return path.resolve()


def _clojure_filter(value: Any, limit: int | None = None,
                    printable_limit: int | None = None) -> str:
    return to_clojure(value, limit, printable_limit)[0]


@lru_cache(maxsize=32)
def get_environment(dirs: tuple[Path, ...] = ()) -> jinja2.Environment:
    """A Jinja2 environment searching ``dirs`` then the built-in templates."""
    builtin = jinja2.FileSystemLoader(str(BUILTIN_TEMPLATE_DIR))
    loader = jinja2.ChoiceLoader([
        jinja2.PrefixLoader({"default": builtin}, delimiter=":"),
        jinja2.FileSystemLoader([str(d) for d in dirs] + [str(BUILTIN_TEMPLATE_DIR)]),
    ])
    env = jinja2.Environment(
        loader=loader,
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=False,
        trim_blocks=True,
        lstrip_blocks=True,
        autoescape=False,
    )
    env.filters["clojure"] = _clojure_filter
    return env


@dataclass(frozen=True)
class TemplateInfo:
    """A template name and the file it resolves to."""

    name: str
    path: Path
    origin: str  # "built-in", or the override directory it came from


def list_templates(template_dirs: Iterable[str | os.PathLike[str]] = ()) -> list[TemplateInfo]:
    """Every template name with the file that wins the lookup for it."""
    dirs = resolve_template_dirs(template_dirs)
    found: dict[str, TemplateInfo] = {}
    for d in reversed((*dirs, BUILTIN_TEMPLATE_DIR)):
        origin = "built-in" if d == BUILTIN_TEMPLATE_DIR else str(d)
        for path in sorted(d.rglob("*.j2")):
            name = path.relative_to(d).as_posix()
            found[name] = TemplateInfo(name, path, origin)
    return [found[name] for name in sorted(found)]


def export_templates(dest: str | os.PathLike[str], *, force: bool = False) -> list[Path]:
    """Copy the built-in templates into ``dest`` to start an override directory.

    Existing files are kept unless ``force`` is true; returns the files written.
    """
    dest_path = Path(dest)
    written: list[Path] = []
    sources = sorted(BUILTIN_TEMPLATE_DIR.rglob("*.j2"))
    clashes = [dest_path / s.relative_to(BUILTIN_TEMPLATE_DIR) for s in sources]
    existing = [c for c in clashes if c.exists()]
    if existing and not force:
        error = FileExistsError(
            f"{len(existing)} template(s) already exist in {dest_path}, e.g. {existing[0]}; "
            f"nothing was copied. Call export_templates(..., force=True) to overwrite them.")
        error.existing = existing  # type: ignore[attr-defined]
        raise error
    for src in sources:
        target = dest_path / src.relative_to(BUILTIN_TEMPLATE_DIR)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, target)
        written.append(target)
    return written
