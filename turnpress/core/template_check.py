"""Checking the user's template overrides before a run, not at the turn that needs them."""

from __future__ import annotations

import os
from collections.abc import Iterable

from turnpress.core.templates import get_environment, resolve_template_dirs

__all__ = ["check_templates"]


def check_templates(template_dirs: Iterable[str | os.PathLike[str]] = ()) -> None:
    """Compile every template the override ``template_dirs`` (and ``TURNPRESS_TEMPLATES``)
    hold, so a syntax error or a file that is not UTF-8 is found before a run starts
    rather than at the turn that first needs the template.

    Raises :class:`TemplateProblem` naming the file and the line. An undefined variable
    shows only when the template is rendered (it may sit in a branch that is never
    taken), so it is not checked here.
    """
    dirs = resolve_template_dirs(template_dirs)
    env = get_environment(dirs)
    for d in dirs:
        for path in sorted(d.rglob("*.j2")):
            env.get_template(path.relative_to(d).as_posix())
