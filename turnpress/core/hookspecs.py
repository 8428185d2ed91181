"""The extension contract: every hook a turnpress plugin can implement.

A plugin is a module (or object) with functions decorated by ``turnpress.hookimpl``
whose names match the specs below. Built-in plugins in ``turnpress.plugins`` use
exactly the same hooks; third-party plugins are found through the ``turnpress``
entry-point group::

    # pyproject.toml of your plugin
    [project.entry-points.turnpress]
    my_plugin = "my_package.plugin"
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import pluggy

PROJECT_NAME = "turnpress"

hookspec = pluggy.HookspecMarker(PROJECT_NAME)
hookimpl = pluggy.HookimplMarker(PROJECT_NAME)


@hookspec
def register_strategies(register: Callable[[type], None]) -> None:
    """Register history strategies: call ``register(StrategyClass)`` once per class.

    The strategy is known by ``StrategyClass.name``::

        @hookimpl
        def register_strategies(register):
            register(LastTurnOnly)
    """


@hookspec
def register_namespace_renderers(register: Callable[[str, Callable[..., Any], int], None]) -> None:
    """Register sections of the namespace block: ``register(name, renderer, order)``.

    ``renderer(view)`` gets a :class:`turnpress.core.compression.NamespaceView` and
    returns the section's text, or ``None`` to leave it out. Sections are shown in
    ascending ``order``; the built-ins use 100 (``tool/``), 200 (``data/``) and
    300 (``user/``)::

        @hookimpl
        def register_namespace_renderers(register):
            register("env/", lambda view: ";; === env/ ===\\nenv/region ; string", 250)
    """


@hookspec(firstresult=True)
def type_label(value: Any) -> str | None:
    """Return the type label of ``value`` (``"dataframe[3x4]"``), or ``None`` to pass.

    The first non-``None`` answer wins. The built-in vocabulary is ``trylast``, so
    a plugin can label its own types, or relabel built-in ones::

        @hookimpl
        def type_label(value):
            if isinstance(value, datetime.datetime):
                return "datetime"
    """


@hookspec
def register_tokenizers(register: Callable[[str, Callable[[str], int]], None]) -> None:
    """Register token counters: ``register(name, count_fn)``, ``count_fn(text) -> int``::

        @hookimpl
        def register_tokenizers(register):
            register("words", lambda text: len(text.split()))
    """


@hookspec
def template_dirs() -> Iterable[str] | None:
    """Return directories of Jinja2 templates that override or add to the built-ins.

    They are searched after the directories a user passes explicitly and before
    the built-in templates::

        @hookimpl
        def template_dirs():
            return [str(Path(__file__).parent / "templates")]
    """


@hookspec
def register_trace_readers(register: Callable[..., None]) -> None:
    """Register transcript formats: ``register(name, detect, read)``.

    ``detect(data, path) -> bool`` gets one parsed JSON value (a whole ``.json``
    file, or one line of a ``.jsonl`` file) and the file's path, and says whether
    it is this format; it must not raise. ``read(data, where) -> Trace`` turns it
    into a :class:`turnpress.core.trace.Trace` and raises ``TraceError`` (or
    ``ValueError``) naming ``where``, the message index and the problem. Readers
    are tried in registration order after turnpress's own trace format, so every
    command that takes a trace (``render``, ``trace show``, ``compare``) reads the
    format::

        @hookimpl
        def register_trace_readers(register):
            register("my-agent-log", lambda data, path: "my_events" in data, read_my_log)
    """
