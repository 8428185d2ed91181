"""``register_commands(cli)``: a plugin adds click subcommands to the ``turnpress`` group.

A command name that is already taken is left out (the first one keeps it), with a
warning naming both plugins.
"""

from __future__ import annotations

from typing import Any

from turnpress.core.hooks.base import HookCalls

__all__ = ["CommandsHook"]


class CommandsHook(HookCalls):
    """The plugins' CLI subcommands."""

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
