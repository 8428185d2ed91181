"""The ``turnpress`` command: a thin click layer over the library.

Each command only parses options, calls library functions and prints. Commands
that belong to a feature live next to it and are imported only when used
(``LAZY_COMMANDS``), so ``turnpress --help`` stays fast.
"""

from __future__ import annotations

import importlib
from typing import Any

import click

LAZY_COMMANDS: dict[str, tuple[str, str]] = {
    # name: (module:attribute, one-line help shown by `turnpress --help`)
    "compare": ("turnpress.compare.cli:compare", "Compare strategies on traces."),
    "run": ("turnpress.agent.cli:run", "Run an agent task (offline with scripted replies)."),
    "import": ("turnpress.importing:import_command",
               "Import agent transcripts as a turnpress trace file."),
}


class LazyGroup(click.Group):
    """A click group that imports feature commands on first use."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *self._available()})

    def _available(self) -> list[str]:
        names = []
        for name, (target, _help) in LAZY_COMMANDS.items():
            module = target.partition(":")[0]
            if importlib.util.find_spec(module.rpartition(".")[0]) is not None:
                names.append(name)
        return names

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        command = super().get_command(ctx, cmd_name)
        if command is not None or cmd_name not in LAZY_COMMANDS:
            return command
        module_name, _, attr = LAZY_COMMANDS[cmd_name][0].partition(":")
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError:
            return None
        return getattr(module, attr)

    def format_commands(self, ctx: click.Context, formatter: Any) -> None:
        rows = []
        for name in self.list_commands(ctx):
            if name in LAZY_COMMANDS and name not in self.commands:
                rows.append((name, LAZY_COMMANDS[name][1]))
            else:
                cmd = self.commands[name]
                rows.append((name, cmd.get_short_help_str(limit=60)))
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="turnpress")
def main() -> None:
    """turnpress: compress the code, preserve the learnings.

    Render, inspect and compare what a multi-turn code-writing agent sees of its
    own past.
    """


class CLIError(click.ClickException):
    """A user error: printed as one ``Error: ...`` line, exit code 2."""

    exit_code = 2


def fail_cleanly(exc: Exception) -> CLIError:
    """Wrap a library error as a one-line CLI error."""
    return CLIError(str(exc))


def load_traces_or_examples(paths: tuple[str, ...]) -> list[Any]:
    """Load the traces named on the command line, or the bundled examples."""
    from turnpress.core.trace import TraceError, iter_traces
    from turnpress.examples import example_trace_paths

    files = list(paths) or [str(p) for p in example_trace_paths()]
    traces = []
    for path in files:
        try:
            traces.extend(iter_traces(path))
        except TraceError as exc:
            raise fail_cleanly(exc) from None
    return traces


templates_option = click.option(
    "--templates", "template_dirs", multiple=True, type=click.Path(file_okay=False),
    help="Directory of template overrides (repeatable; searched first).")


@main.command()
@click.argument("trace", required=False)
@click.option("--strategy", "-s", default="single-user-coalesced", show_default=True,
              metavar="NAME[:k=v,...]", help="Strategy and options, e.g. rolling-window:window=3.")
@click.option("--turn", "-t", "turn", type=int, default=None,
              help="Render the prompt sent for this turn (1-based; default: the last turn).")
@click.option("--format", "-f", "fmt",
              type=click.Choice(["text", "json", "openai", "anthropic"]),
              default="text", show_default=True)
@templates_option
def render(trace: str | None, strategy: str, turn: int | None, fmt: str,
           template_dirs: tuple[str, ...]) -> None:
    """Render the prompt of one turn of TRACE (default: every bundled example)."""
    import json

    from turnpress.core.compression import get_strategy
    from turnpress.core.providers import format_text, to_openai

    try:
        chosen = get_strategy(strategy)
    except ValueError as exc:
        raise fail_cleanly(exc) from None
    traces = load_traces_or_examples((trace,) if trace else ())
    documents = []
    for tr in traces:
        n = len(tr.turns) if turn is None else turn
        try:
            messages = tr.prompt(max(n, 1), chosen, template_dirs)
        except ValueError as exc:
            raise fail_cleanly(exc) from None
        if fmt == "text":
            click.echo(f"# trace {tr.name}, turn {max(n, 1)} of {len(tr.turns)}, "
                       f"strategy {chosen.name}\n")
            click.echo(format_text(messages))
        elif fmt == "json":
            documents.append({"trace": tr.name, "turn": max(n, 1), "strategy": chosen.name,
                              "options": getattr(chosen, "options", {}), "messages": messages})
        elif fmt == "anthropic":
            from turnpress.core.providers import prompt_with_breakpoints, to_anthropic

            _, breakpoints = prompt_with_breakpoints(tr, max(n, 1), chosen, template_dirs)
            system, anthropic_messages = to_anthropic(messages, breakpoints)
            documents.append({"system": system, "messages": anthropic_messages})
        else:
            documents.append({"messages": to_openai(messages)})
    if documents:
        if len(documents) == 1:
            click.echo(json.dumps(documents[0], indent=2, ensure_ascii=False))
        else:
            for doc in documents:
                click.echo(json.dumps(doc, ensure_ascii=False))


@main.command()
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
def plugins(as_json: bool) -> None:
    """List installed plugins: what each registers, its distribution and version."""
    import json
    import warnings

    from turnpress.core.registry import PluginWarning, get_registry

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PluginWarning)  # shown in the table instead
        registry = get_registry()
        registry.load_all()
    rows = [
        {"name": info.name, "distribution": info.distribution, "version": info.version,
         "builtin": info.builtin, "entry_point": info.entry_point, "hooks": info.hooks,
         "registers": info.registers, "error": info.error}
        for info in registry.plugins.values()
    ]
    errors = [str(e) for e in registry.errors]
    if as_json:
        click.echo(json.dumps({"plugins": rows, "errors": errors}, indent=2))
        return
    from rich.console import Console
    from rich.table import Table

    table = Table(title="turnpress plugins")
    table.add_column("plugin", no_wrap=True)
    table.add_column("registers", overflow="fold")
    table.add_column("distribution", overflow="fold")
    table.add_column("version", no_wrap=True)
    for row in rows:
        registers = "; ".join(f"{kind}: {', '.join(names)}"
                              for kind, names in row["registers"].items())
        if not registers:
            registers = ", ".join(row["hooks"]) or "-"
        if row["error"]:
            registers = "[red]not loaded[/red]"
        table.add_row(row["name"], registers, row["distribution"]
                      + ("" if not row["builtin"] else " (built-in)"), row["version"])
    console = Console(soft_wrap=False)
    console.print(table)
    for error in errors:
        console.print(f"[red]error:[/red] {error}", highlight=False)


@main.group()
def trace() -> None:
    """Inspect trace files."""


@trace.command("show")
@click.argument("path")
@click.option("--view", type=click.Choice(["full", "compressed"]), default="full",
              show_default=True, help="full: every turn as it ran; compressed: the prompt "
              "each turn was given, then its reply.")
@click.option("--raw", is_flag=True, help="Show raw LLM responses and the system prompt.")
@click.option("--strategy", "-s", default="single-user-coalesced", show_default=True,
              metavar="NAME[:k=v,...]", help="Strategy for --view compressed.")
@templates_option
def trace_show(path: str, view: str, raw: bool, strategy: str,
               template_dirs: tuple[str, ...]) -> None:
    """Show the turns of the run(s) in PATH."""
    from turnpress.core.compression import get_strategy
    from turnpress.core.inspect import describe_trace

    try:
        chosen = get_strategy(strategy)
    except ValueError as exc:
        raise fail_cleanly(exc) from None
    for tr in load_traces_or_examples((path,)):
        try:
            click.echo(describe_trace(tr, view=view, raw=raw, compression=chosen,
                                      template_dirs=template_dirs))
        except ValueError as exc:
            raise fail_cleanly(exc) from None


@main.group()
def templates() -> None:
    """List or export the Jinja2 templates that hold every prompt format."""


@templates.command("list")
@templates_option
def templates_list(template_dirs: tuple[str, ...]) -> None:
    """List template names and the file each one resolves to."""
    from turnpress.core.templates import list_templates

    try:
        infos = list_templates(template_dirs)
    except ValueError as exc:
        raise fail_cleanly(exc) from None
    width = max(len(i.name) for i in infos)
    for info in infos:
        click.echo(f"{info.name:<{width}}  {info.origin}")


@templates.command("export")
@click.argument("directory", type=click.Path(file_okay=False))
@click.option("--force", is_flag=True, help="Overwrite templates that already exist there.")
def templates_export(directory: str, force: bool) -> None:
    """Copy the built-in templates into DIRECTORY, to edit and pass with --templates."""
    from turnpress.core.templates import export_templates

    try:
        written = export_templates(directory, force=force)
    except (FileExistsError, OSError) as exc:
        raise fail_cleanly(exc) from None
    click.echo(f"exported {len(written)} templates to {directory}; use them with "
               f"--templates {directory} or TURNPRESS_TEMPLATES={directory}")
