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
