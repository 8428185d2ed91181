"""An example turnpress plugin: a strategy, a type label, a template directory and a
transcript reader (``example-events``, see :mod:`turnpress_plugin_example.events`)."""

from __future__ import annotations

import datetime
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from turnpress import Message, Strategy, Turn, hookimpl
from turnpress.core.compression import RenderContext
from turnpress_plugin_example import events

TEMPLATES = Path(__file__).resolve().parent / "templates"


class LastTurnOnly(Strategy):
    """Mission, namespaces, and only what the newest turn printed, returned or raised."""

    name = "last-turn-only"

    def __init__(self, *, show_errors: bool = True) -> None:
        self.show_errors = show_errors

    def to_messages(self, turns: Sequence[Turn], memory: Mapping[str, Any],
                    ctx: RenderContext) -> list[Message]:
        """``[SYSTEM, USER]`` built from this plugin's own template."""
        last = turns[-1] if turns else None
        feedback = None
        if last is not None and (last.success or self.show_errors):
            feedback = ctx.feedback(last, ctx.turns_left)
        user = ctx.template(
            "last_turn_only/user.j2",
            mission=ctx.mission,
            namespaces=ctx.namespaces(memory),
            feedback=feedback,
            turns_left=ctx.turns_left_line(ctx.turns_left),
        )
        return [ctx.message("system", ctx.system_prompt), ctx.message("user", user)]


@hookimpl
def register_strategies(register: Callable[[type], None]) -> None:
    """Register ``last-turn-only``."""
    register(LastTurnOnly)


@hookimpl
def type_label(value: Any) -> str | None:
    """Label datetimes as ``datetime`` instead of ``unknown``."""
    if isinstance(value, datetime.datetime):
        return "datetime"
    return None


@hookimpl
def template_dirs() -> Iterable[str]:
    """This plugin's templates."""
    return [str(TEMPLATES)]


@hookimpl
def register_trace_readers(register: Callable[..., None]) -> None:
    """Read the ``example-events`` log format in every command that takes a trace."""
    register(events.FORMAT, events.detect, events.read)
