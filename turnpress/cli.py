"""The ``turnpress`` command: a thin click layer over the library.

Each command only parses options, calls library functions and prints. Commands
that belong to a feature (``compare``, ``run``) and third-party commands come
through the ``register_commands`` plugin hook; the built-in ones are lazy, so
importing this module imports neither the compare engine nor the agent.
Warnings (a plugin left out...) are printed as one ``Warning: ...`` line each
on stderr, without Python's source-line echo. Everything is printed through
:func:`echo`, which writes a lone surrogate (a cut-off emoji in a chat log) as its
``\\udXXX`` escape instead of failing.
"""

from __future__ import annotations

import atexit
import importlib
import inspect
import json
import shutil
import tempfile
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click
from click.core import ParameterSource

from turnpress.core.breakpoints import strategy_failure, strategy_origin
from turnpress.core.compression import get_strategy
from turnpress.core.errors import a_or_an, printable
from turnpress.core.inspect import describe_trace
from turnpress.core.message_keys import LeftOut
from turnpress.core.providers import format_text
from turnpress.core.registry import PluginError, PluginWarning, get_registry
from turnpress.core.request import RequestError, request_document
from turnpress.core.strategy import DEFAULT_STRATEGY
from turnpress.core.strategy_lookup import describe_options, spec_value
from turnpress.core.templates import export_templates, list_templates
from turnpress.core.trace import TraceError, is_bare_name, trace_file
from turnpress.core.trace_inputs import Inputs, discover, skipped_lines
from turnpress.examples import EXAMPLES_DIR, example_trace_paths

T = TypeVar("T")


def echo(message: str = "", *, err: bool = False, nl: bool = True) -> None:
    """``click.echo`` of ``message`` made :func:`printable`: what a trace holds never
    makes a command fail with ``UnicodeEncodeError``."""
    click.echo(printable(message), err=err, nl=nl)


class LazyCommand(click.Command):
    """A command known by name and help; its module is imported when it runs."""

    def __init__(self, name: str, target: str, help: str = "") -> None:
        super().__init__(name, help=help, short_help=help)
        self.target = target

    def resolve(self) -> click.Command:
        """Import ``module:attribute`` and return the real command."""
        module_name, _, attr = self.target.partition(":")
        try:
            command = getattr(importlib.import_module(module_name), attr)
        except (ImportError, AttributeError) as exc:
            raise CLIError(f"command {self.name!r} ({self.target}) could not be loaded: "
                           f"{type(exc).__name__}: {exc}") from None
        if not isinstance(command, click.Command):
            raise CLIError(f"command {self.name!r}: {self.target} is not a click command")
        return command


class TurnpressGroup(click.Group):
    """The top-level group: core commands plus those plugins add via ``register_commands``."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._core: dict[str, click.Command] | None = None
        self._loaded_for: object | None = None

    def add_lazy_command(self, name: str, target: str, help: str = "") -> None:
        """Add command ``name`` whose ``module:attribute`` is imported on first use."""
        self.add_command(LazyCommand(name, target, help))

    def load_plugin_commands(self) -> None:
        """Ask the plugins for their commands (again, if the registry was replaced)."""
        registry = get_registry()
        if self._loaded_for is registry:
            return
        if self._core is None:
            self._core = dict(self.commands)
        self.commands = dict(self._core)
        self._loaded_for = registry
        registry.register_commands(self)

    def list_commands(self, ctx: click.Context) -> list[str]:
        self.load_plugin_commands()
        return sorted(self.commands)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if self._core is None or cmd_name not in self._core:
            self.load_plugin_commands()
        command = self.commands.get(cmd_name)
        if isinstance(command, LazyCommand):
            return command.resolve()
        return command

    def resolve_command(self, ctx: click.Context, args: list[str]
                        ) -> tuple[str | None, click.Command | None, list[str]]:
        """click's, with an unknown command's error naming the installed plugins
        ``TURNPRESS_LOAD_PLUGINS`` leaves out (or that failed to load), as an unknown
        strategy's does: one of them may add it."""
        try:
            return super().resolve_command(ctx, args)
        except click.UsageError as exc:
            if exc.message.startswith("No such command"):
                exc.message += get_registry().failure_note()
            raise

    def format_commands(self, ctx: click.Context, formatter: Any) -> None:
        rows = [(name, self.commands[name].get_short_help_str(limit=60))
                for name in self.list_commands(ctx)]
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)

    def main(self, *args: Any, **kwargs: Any) -> Any:
        """Run the command with warnings shown as one line each."""
        with warnings.catch_warnings():
            warnings.simplefilter("always", PluginWarning)
            warnings.showwarning = _show_warning
            return super().main(*args, **kwargs)


def _show_warning(message: Warning | str, category: type[Warning], filename: str,
                  lineno: int, file: Any = None, line: str | None = None) -> None:
    """One ``Warning: ...`` line on stderr, without the source line Python adds."""
    echo(f"Warning: {message}", err=True)


@click.group(cls=TurnpressGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="turnpress")
def main() -> None:
    """turnpress: compress the code, preserve the learnings.

    Render, inspect and compare what a multi-turn code-writing agent sees of its
    own past.
    """


class CLIError(click.ClickException):
    """A user error: printed as one ``Error: ...`` line, exit code 2."""

    exit_code = 2

    def format_message(self) -> str:
        return printable(self.message)


def fail_cleanly(exc: Exception) -> CLIError:
    """Wrap a library error as a one-line CLI error."""
    return CLIError(str(exc))



def choose_strategy(spec: str) -> Any:
    """The strategy instance for ``NAME[:k=v,...]`` (or ``none``: ``full-history``), or a
    one-line :class:`CLIError`."""
    try:
        return get_strategy(spec)
    except (ValueError, PluginError) as exc:
        raise fail_cleanly(exc) from None
    except Exception as exc:
        reg = get_registry().strategies().get(spec.partition(":")[0])
        if reg is None or reg.plugin.builtin:
            raise
        raise CLIError(f"strategy {reg.name!r} of {reg.plugin.source} could not be "
                       f"created: {type(exc).__name__}: {exc}") from None


def run_strategy(strategy: Any, call: Callable[[], T]) -> T:
    """``call()``, with library errors and a plugin strategy's own failure as one line.

    A ``ValueError`` (a bad option, a :class:`TemplateProblem`...) or a
    ``PluginError`` becomes a :class:`CLIError`; any other exception from a
    third-party strategy names the strategy and its plugin
    (:func:`~turnpress.core.breakpoints.strategy_failure`). A built-in strategy's
    bug keeps its traceback.
    """
    try:
        return call()
    except Exception as exc:
        problem = strategy_failure(strategy, exc)
        if problem is None:
            raise
        raise CLIError(problem) from None


def resolve_trace_path(arg: str) -> str:
    """A trace file path as given, or the bundled example trace named ``arg``
    (``product-research``), as ``turnpress run NAME`` finds a bundled task."""

    found = trace_file(arg)
    if found != Path(arg):  # a bundled trace's name
        return str(found)
    if found.exists() or not is_bare_name(arg):
        return arg
    bundled = {p.name.split(".")[0]: p for p in example_trace_paths()}
    raise CLIError(f"no trace file {arg!r} and no bundled trace of that name; bundled traces "
                   f"(in {EXAMPLES_DIR}): {', '.join(sorted(bundled)) or '(none)'}")


STDIN = "-"
"""The argument that reads a trace from standard input."""


def stdin_file() -> str:
    """Standard input saved to a temporary ``stdin.json`` (one JSON document) or
    ``stdin.jsonl`` (anything else, read line by line), removed at exit: a trace read
    from ``-`` is then read like a file (and named ``stdin``)."""
    data = click.get_binary_stream("stdin").read()
    if not data.strip():
        raise CLIError("-: standard input is empty; pipe a trace into it, e.g. "
                       "`cat run.json | turnpress trace show -`")
    directory = tempfile.mkdtemp(prefix="turnpress-stdin-")
    atexit.register(shutil.rmtree, directory, True)
    try:
        json.loads(data.removeprefix(b"\xef\xbb\xbf"))
        suffix = ".json"
    except ValueError:
        suffix = ".jsonl"
    path = Path(directory) / f"stdin{suffix}"
    path.write_bytes(data)
    return str(path)


def with_stdin(args: tuple[str, ...]) -> tuple[str, ...]:
    """``args`` with ``-`` replaced by :func:`stdin_file` (read once)."""
    if STDIN not in args:
        return args
    saved = stdin_file()
    return tuple(saved if a == STDIN else a for a in args)


def input_files(args: tuple[str, ...]) -> list[str]:
    """The files named on the command line: a file, a bundled trace's name, a directory
    (read recursively), a glob pattern, or ``-`` (standard input). Each file a
    directory or pattern holds that is not a run is named on stderr with the reason,
    then a count (``turnpress.core.trace_inputs.discover``); one that cannot be read
    is kept, as if named (a broken run, for the caller to report)."""
    return [str(p) for p in scan_inputs(args).files]


def scan_inputs(args: tuple[str, ...], *, count: bool = True) -> Inputs:
    """:func:`input_files`, found and skipped (``count``: False leaves the count line
    to a caller that counts once it has read the files)."""
    args = with_stdin(args)
    try:
        found = discover(resolve_trace_path(a) for a in args)
    except TraceError as exc:
        raise fail_cleanly(exc) from None
    for line in skipped_lines(found, count=count):
        echo(line, err=True)
    return found


def load_traces_or_examples(paths: tuple[str, ...]) -> list[Any]:
    """Load the traces named on the command line (a path, a bundled trace's name, a
    directory or a glob pattern: :func:`input_files`), or the bundled examples: what
    :func:`~turnpress.core.trace_inputs.load_traces` reads, the files that are not
    runs named on stderr before the others are read."""
    found = scan_inputs(paths)
    if not found.files:
        found = Inputs(list(example_trace_paths()))
    try:
        return list(found.iter_traces())
    except TraceError as exc:
        raise fail_cleanly(exc) from None


DEFAULT_TRACE = "product-research"
"""The bundled trace ``render`` shows without a TRACE (the task ``run`` runs by default)."""

templates_option = click.option(
    "--templates", "template_dirs", multiple=True, type=click.Path(file_okay=False),
    help="Directory of template overrides (repeatable; searched first).")


@main.command()
@click.argument("trace", required=False)
@click.option("--strategy", "-s", default=DEFAULT_STRATEGY, show_default=True,
              metavar="NAME[:k=v,...]|none",
              help="Strategy and options, e.g. rolling-window:window=3; none: the full "
                   "history (full-history).")
@click.option("--turn", "-t", "turn", type=int, default=None,
              help="Render the prompt sent for this turn: 1 to the number of turns + 1 "
                   "(+1: the next prompt a live agent sends). Default: the last turn. "
                   "(In compare, -t is --tokenizer.)")
@click.option("--format", "-f", "fmt",
              type=click.Choice(["text", "json", "openai", "anthropic", "responses"]),
              default="text", show_default=True)
@templates_option
def render(trace: str | None, strategy: str, turn: int | None, fmt: str,
           template_dirs: tuple[str, ...]) -> None:
    """Render the prompt of one turn of TRACE: a trace file, or a bundled trace's name
    (default: product-research, the bundled example `turnpress run` runs), a directory
    read recursively or a glob pattern.

    A JSONL file of several runs (or several files) renders that turn of each run
    (text: one after the other; json/openai/anthropic: one JSON document a line);
    --turn must be valid for each run, which is checked before anything is printed.

    A message key the format has no place for (a logger's own key in -f openai; name
    or reasoning_content in -f anthropic) is left out with one warning line a key on
    stderr, naming the formats that keep it (-f json keeps every key).
    """

    chosen = choose_strategy(strategy)
    traces = load_traces_or_examples((trace or DEFAULT_TRACE,))
    # every trace's turn is checked before anything is printed
    chosen_turns = []
    for tr in traces:
        n = max(len(tr.turns), 1) if turn is None else turn
        try:
            tr.prompt_arguments(n)
        except ValueError as exc:
            hint = "" if len(traces) == 1 else (f"; nothing was rendered: --turn must suit "
                                                f"each of the file's {len(traces)} runs")
            raise fail_cleanly(ValueError(f"--turn {n}: {exc}{hint}")) from None
        chosen_turns.append(n)
    documents: list[tuple[dict[str, Any], Any, str]] = []  # (document, messages, where)
    left_out = LeftOut(fmt)  # the message keys the format has no place for
    for tr, n in zip(traces, chosen_turns, strict=True):
        messages = run_strategy(chosen, lambda tr=tr, n=n: tr.prompt(
            n, chosen, template_dirs))
        left_out.add(messages)
        if fmt == "text":
            which = (f"turn {n} of {len(tr.turns)}" if n <= len(tr.turns) else
                     f"turn {n} (the next prompt, after {len(tr.turns)} "
                     f"turn{'' if len(tr.turns) == 1 else 's'})")
            echo(f"# trace {tr.name}, {which}, strategy {chosen.name}\n")
            echo(format_text(messages))
        where = f"trace {tr.name}, turn {n}, -f {fmt}"
        if fmt != "text":
            documents.append((_request_document(tr, n, chosen, messages, fmt, template_dirs),
                              messages, where))
    # every document is written before anything is printed, as every --turn is checked
    texts = [_json_text(doc, messages, chosen, where, 2 if len(documents) == 1 else None)
             for doc, messages, where in documents]
    for text in texts:
        echo(text)
    for line in left_out.warnings():  # nothing the trace holds is dropped silently
        echo(line, err=True)


#: what a message's values must be to be written as JSON
JSON_VALUES = ("a message's values must be JSON values: str, int, float, bool, None, and "
               "lists and dicts of them")


def _json_text(document: dict[str, Any], messages: Any, strategy: Any, where: str,
               indent: int | None) -> str:
    """``document`` as JSON text; a value JSON cannot hold is one :class:`CLIError`
    naming the strategy (and its plugin), the message's index and its key."""
    try:
        return json.dumps(document, indent=indent, ensure_ascii=False)
    except (TypeError, ValueError) as exc:
        raise CLIError(f"{where}: {_not_json(messages, strategy, exc)}") from None


def _not_json(messages: Any, strategy: Any, exc: Exception) -> str:
    """Which value of ``strategy``'s messages (or options) JSON cannot hold, and why."""
    origin = strategy_origin(strategy)
    for index, message in enumerate(messages):
        for key, value in message.items():
            try:
                json.dumps({key: value})
            except (TypeError, ValueError) as err:
                return (f"{origin} returned a message at index {index} whose key {key!r} "
                        f"holds {a_or_an(type(value).__name__)} ({err}); {JSON_VALUES}")
    try:
        json.dumps(getattr(strategy, "options", {}))
    except (TypeError, ValueError) as err:
        return f"{origin} has options that are no JSON values ({err})"
    return f"the prompt cannot be written as JSON: {type(exc).__name__}: {exc}"


def _request_document(trace: Any, n: int, strategy: Any, messages: Any, fmt: str,
                      template_dirs: tuple[str, ...]) -> dict[str, Any]:
    """:func:`~turnpress.core.request.request_document`, its errors as one line: the
    format's, naming the trace, turn and ``-f``; the strategy's, as :func:`run_strategy`
    words them (``-f anthropic`` asks it for its cache breakpoints)."""
    try:
        return request_document(trace, n, strategy, messages, fmt, template_dirs)
    except RequestError as exc:
        raise CLIError(f"trace {exc.trace}, turn {exc.turn}, -f {exc.format}: "
                       f"{exc.problem}") from None
    except Exception as exc:
        if fmt != "anthropic":  # only the converters ran: their errors are as they were
            raise
        problem = strategy_failure(strategy, exc)
        if problem is None:
            raise
        raise CLIError(problem) from None


@main.command()
@click.argument("names", nargs=-1, metavar="[NAME]...")
def strategies(names: tuple[str, ...]) -> None:
    """List the strategies (or the NAMEs given), each with its options: default and
    a line each, as `-s NAME:option=value` takes them."""
    registered = get_registry().strategies()
    unknown = [n for n in names if n not in registered]
    if unknown:
        raise CLIError(f"unknown strategy {unknown[0]!r}; registered: "
                       f"{', '.join(sorted(registered))}")
    blocks = []
    for name in names or sorted(registered):
        cls = registered[name].value
        own = vars(cls).get("__doc__")  # not a base class's (inspect.getdoc inherits it)
        summary = (inspect.cleandoc(own) if isinstance(own, str) and own.strip()
                   else "(no description)").split("\n\n")[0]
        lines = [f"{name}: {' '.join(summary.split()).replace('``', '')}"]
        options = describe_options(cls)
        shown = [(f"{o}={spec_value(d)}", text) for o, d, text in options]
        width = max((len(o) for o, _ in shown), default=0)
        lines.extend(f"  {o:<{width}}  {text}".rstrip() for o, text in shown)
        if not options:
            lines.append("  (no options)")
        blocks.append("\n".join(lines))
    echo("\n\n".join(blocks))


@main.command()
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
def plugins(as_json: bool) -> None:
    """List installed plugins: what each registers, its distribution and version.

    In a pipe, the table is plain lines (one per plugin), so it can be grepped.
    """
    from turnpress.console import print_table  # CLI lazy loading: rich only for tables

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PluginWarning)  # listed below the table instead
        registry = get_registry()
        registry.load_all()
        main.load_plugin_commands()
    rows = [
        {"name": info.name, "distribution": info.distribution, "version": info.version,
         "builtin": info.builtin, "entry_point": info.entry_point, "module": info.module,
         "hooks": info.hooks, "registers": info.registers, "error": info.error,
         "problems": info.problems}
        for info in registry.plugins.values()
    ]
    errors = [str(e) for e in registry.errors]
    if as_json:
        echo(json.dumps({"plugins": rows, "errors": errors}, indent=2))
        return
    table = []
    for row in rows:
        parts = [f"{kind}: {', '.join(names)}" for kind, names in row["registers"].items()]
        # hooks that register no named thing (type_label) are listed by name
        parts += [h for h in row["hooks"] if h == "type_label"]
        registers = "; ".join(parts) or ", ".join(row["hooks"]) or "-"
        if row["error"]:
            registers = "NOT LOADED (see below)"
        elif row["problems"]:
            registers += " (problems: see below)"
        table.append([row["name"], row["distribution"]
                      + (" (built-in)" if row["builtin"] else ""), row["version"], registers])
    # the long column last: piped, one plugin that registers much pads no other column
    print_table(["plugin", "distribution", "version", "registers"], table,
                title="turnpress plugins")
    for name, path in registry.template_layout().overrides:
        echo(f"template {name}: overridden by {registry.template_layout().owner(path)}"
             f" ({path})")
    failed = {info.error for info in registry.plugins.values() if info.error}
    for error in errors:  # a plugin left out is an error; a part of one left out, a warning
        echo(f"{'error' if error in failed else 'warning'}: {error}")


@main.group()
def trace() -> None:
    """Inspect trace files."""


@trace.command("show")
@click.argument("path", metavar="TRACE")
@click.option("--view", type=click.Choice(["full", "compressed"]), default=None,
              help="full (the default): every turn as it ran; compressed (the default "
              "with -s): the prompt each turn was given, then its reply.")
@click.option("--raw", is_flag=True, help="Show raw LLM responses and the system prompt.")
@click.option("--strategy", "-s", default=DEFAULT_STRATEGY, show_default=True,
              metavar="NAME[:k=v,...]|none",
              help="Strategy of the compressed view (-s alone means --view compressed); "
                   "none: the full history (full-history).")
@templates_option
def trace_show(path: str, view: str | None, raw: bool, strategy: str,
               template_dirs: tuple[str, ...]) -> None:
    """Show the turns of the run(s) in TRACE (a file, a bundled trace's name, a
    directory read recursively, or a glob pattern such as 'logs/**/*.jsonl')."""
    given = click.get_current_context().get_parameter_source("strategy") \
        is not ParameterSource.DEFAULT
    if given and view == "full":
        raise CLIError("-s/--strategy chooses the prompts of --view compressed; --view full "
                       "shows the turns as they ran: drop one of them")
    view = view or ("compressed" if given else "full")
    chosen = choose_strategy(strategy)
    for tr in load_traces_or_examples((path,)):
        echo(run_strategy(chosen, lambda tr=tr: describe_trace(
            tr, view=view, raw=raw, compression=chosen, template_dirs=template_dirs)))


@main.group()
def templates() -> None:
    """List or export the Jinja2 templates that hold every prompt format."""


@templates.command("list")
@templates_option
def templates_list(template_dirs: tuple[str, ...]) -> None:
    """List template names and where each one comes from (built-in, a --templates
    directory, "overridden by DIST" for a plugin override, "plugin DIST")."""
    from turnpress.console import print_table  # CLI lazy loading: rich only for tables

    try:
        infos = list_templates(template_dirs)
    except ValueError as exc:
        raise fail_cleanly(exc) from None
    print_table(["template", "origin"], [[printable(i.name), printable(i.origin)]
                                         for i in infos],
                title="turnpress templates")


@templates.command("export")
@click.argument("directory", type=click.Path(file_okay=False))
@click.option("--force", is_flag=True, help="Overwrite templates that already exist there.")
def templates_export(directory: str, force: bool) -> None:
    """Copy the built-in templates into DIRECTORY, to edit and pass with --templates."""
    try:
        written = export_templates(directory, force=force)
    except FileExistsError as exc:
        existing = getattr(exc, "existing", None) or [directory]
        raise CLIError(f"{len(existing)} template(s) already exist in {directory}, e.g. "
                       f"{existing[0]}; nothing was exported. Add --force to overwrite them, "
                       f"or export to a new directory.") from None
    except OSError as exc:
        raise fail_cleanly(exc) from None
    echo(f"exported {len(written)} templates to {directory}; use them with "
               f"--templates {directory} or TURNPRESS_TEMPLATES={directory}")
