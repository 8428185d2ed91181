"""The built-in ``compare``, ``run`` and ``import`` commands, added through ``register_commands``.

They register the way any plugin can, as lazy commands: their modules (and the
compare engine or agent loop behind them) are imported only when the command runs.
"""

from __future__ import annotations

from typing import Any

from turnpress.core.hookspecs import hookimpl


@hookimpl
def register_commands(cli: Any) -> None:
    """Add ``turnpress compare``, ``turnpress run`` and ``turnpress import``."""
    cli.add_lazy_command("compare", "turnpress.compare.cli:compare",
                         "Compare strategies on traces.")
    cli.add_lazy_command("run", "turnpress.agent.cli:run",
                         "Run an agent task (offline with scripted replies).")
    cli.add_lazy_command("import", "turnpress.importing:import_command",
                         "Import agent transcripts as a turnpress trace file.")
