"""The built-in ``compare`` and ``run`` commands, added through ``register_commands``.

They register the way any plugin can, as lazy commands: their modules (and the
compare engine or agent loop behind them) are imported only when the command runs.
"""

from __future__ import annotations

from typing import Any

from turnpress.core.hookspecs import hookimpl


@hookimpl
def register_commands(cli: Any) -> None:
    """Add ``turnpress compare`` and ``turnpress run``."""
    cli.add_lazy_command("compare", "turnpress.compare.cli:compare",
                         "Compare strategies on traces.")
    cli.add_lazy_command("run", "turnpress.agent.cli:run",
                         "Run an agent task (offline with scripted replies).")
