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
    """Return the directories of Jinja2 templates this plugin ships (a list of paths).

    A plugin's own templates (``my_strategy/user.j2``) are found after the built-in
    ones, so they can never change a built-in format by accident: a file with the
    name of a built-in template is ignored, with a warning. To override a built-in
    template on purpose, put the file under ``overrides/`` in one of these
    directories (``overrides/history/turns_left.j2``); ``turnpress plugins`` and
    ``turnpress templates list`` then show it as "overridden by <distribution>".
    A file under ``overrides/`` whose name is not a built-in template is ignored,
    with a warning suggesting the nearest built-in name::

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


@hookspec
def register_commands(cli: Any) -> None:
    """Add subcommands to the ``turnpress`` command (llm's pattern).

    ``cli`` is the top-level :class:`click.Group`; use ``@cli.command()`` or
    ``cli.add_command(cmd)``. ``cli.add_lazy_command(name, "module:attribute", help)``
    adds a command whose module is imported only when the command runs, which keeps
    ``turnpress --help`` fast (the built-in ``compare`` and ``run`` do this)::

        @hookimpl
        def register_commands(cli):
            @cli.command()
            def hello():
                "Say hello."
                click.echo("hello")

    A command whose name is already taken is left out with a warning naming both.
    """


@hookspec
def register_executors(register: Callable[[str, Callable[..., Any]], None]) -> None:
    """Register where ``compare`` runs its traces: ``register(name, factory)``.

    ``factory(address, jobs)`` gets the part of ``--executor NAME[:ADDRESS]`` after
    the colon (None without one) and ``--jobs``, and returns a
    :class:`turnpress.core.executor.Executor`; a bad address raises ``ValueError``, an
    engine that cannot be reached :class:`turnpress.core.executor.ExecutorError`. The
    built-in ``local`` (a process pool) and ``dask`` executors use this hook::

        @hookimpl
        def register_executors(register):
            register("threads", lambda address, jobs: ThreadExecutor(jobs))
    """


@hookspec
def register_summarizers(register: Callable[[str, Any], None]) -> None:
    """Register summarizers for summary-based compaction: ``register(name, cls)``.

    ``cls(model="", base_url="")`` builds one (``--summarizer NAME:ARG`` passes ``ARG``
    as ``model``); it has ``name``, ``options`` and
    ``summarize(turns, ctx, *, previous, start)`` returning a
    :class:`turnpress.core.summaries.Summary` (the text, and the input and output
    tokens its call used), and ``cache_key(...)`` (the digest of what it would send,
    or None when it is free and deterministic). ``cls`` may also be a
    ``"module:attribute"`` string, imported when the summarizer is first used. The
    built-ins are ``extractive`` (no model) and ``llm`` (the agent's adapters)::

        @hookimpl
        def register_summarizers(register):
            register("first-lines", FirstLines)
    """


HOOK_NAMES: tuple[str, ...] = (
    "register_strategies",
    "register_namespace_renderers",
    "type_label",
    "register_tokenizers",
    "template_dirs",
    "register_trace_readers",
    "register_commands",
    "register_executors",
    "register_summarizers",
)
"""Every hook name, in the order the documentation presents them."""
