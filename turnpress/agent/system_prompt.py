"""The agent's static system prompt: the PTC-Lisp reference plus the output format.

Its text lives in the ``agent/system_prompt.j2`` template, so it can be overridden
like every other template (``template_dirs=``, ``$TURNPRESS_TEMPLATES``, plugins).
It holds no tools and no data (those go in the USER message), so it is the same on
every turn of every run and providers can cache it.
"""

from __future__ import annotations

import os
from collections.abc import Iterable

from turnpress.core.templates import get_environment, resolve_template_dirs
from turnpress.lisp import LANGUAGE_REFERENCE

__all__ = ["SYSTEM_PROMPT_TEMPLATE", "system_prompt"]

SYSTEM_PROMPT_TEMPLATE = "agent/system_prompt.j2"


def system_prompt(template_dirs: Iterable[str | os.PathLike[str]] = ()) -> str:
    """The default system prompt, rendered from :data:`SYSTEM_PROMPT_TEMPLATE`."""
    env = get_environment(resolve_template_dirs(template_dirs))
    text = env.get_template(SYSTEM_PROMPT_TEMPLATE).render(
        language_reference=LANGUAGE_REFERENCE.strip("\n"))
    return text.rstrip("\n")
