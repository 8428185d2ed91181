"""Built-in trace reader ``mini-swe-agent``: ``*.traj.json`` trajectories (DESIGN §10).

A trajectory is ``{"info", "messages", "trajectory_format": "mini-swe-agent-1.x"}``;
its messages are OpenAI chat messages plus mini-swe-agent's own ``extra`` key
(the provider's response, the command's raw output...), which mini-swe-agent
removes before each call. The replayed messages are therefore each message
without ``extra``, every other key verbatim. Read from ``extra``:

- the billed usage of each call: ``extra.response.usage`` of its assistant message
  (OpenAI / DeepSeek fields);
- ``extra.exception_info`` of a tool message: the turn failed (``exception``).

A non-zero ``<returncode>`` in an observation fails the turn too
(``nonzero_returncode``). The final ``exit`` message (the submission) is not a
turn: it is kept in ``Trace.skipped`` with its reason, and ``trace show`` says so.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from turnpress.core.hookspecs import hookimpl
from turnpress.core.model import Failure
from turnpress.core.trace import Trace
from turnpress.plugins.readers._messages_to_trace import Entry, build_trace, fail, usage_from

__all__ = ["EXIT_REASON", "FORMAT", "detect", "read"]

FORMAT = "mini-swe-agent"
EXIT_REASON = "final submission (mini-swe-agent's exit message is never sent to the model)"


def detect(data: Any, path: Path | None = None) -> bool:
    """``trajectory_format`` ``mini-swe-agent-*``, or a ``*.traj.json`` with ``info``
    and ``messages``."""
    if not isinstance(data, dict):
        return False
    fmt = data.get("trajectory_format")
    if isinstance(fmt, str):
        return fmt.startswith("mini-swe-agent")
    return (path is not None and Path(path).name.lower().endswith(".traj.json")
            and "info" in data and "messages" in data)


def _entry(i: int, m: dict[str, Any], where: str) -> Entry:
    extra = m.get("extra")
    sent = {k: v for k, v in m.items() if k != "extra"}
    if not isinstance(extra, dict):
        return Entry(i, sent)
    usage = None
    response = extra.get("response")
    if m.get("role") == "assistant" and isinstance(response, dict):
        usage = usage_from(response.get("usage"), where, i)
    error = None
    info = extra.get("exception_info")
    if info:
        error = Failure("exception", str(info)[:500])
    return Entry(i, sent, usage, error)


def read(data: Any, where: str) -> Trace:
    """Read one trajectory."""
    messages = data.get("messages")
    if not isinstance(messages, list):
        raise fail(where, None, f"\"messages\" must be a list of message objects, got "
                                f"{type(messages).__name__}")
    entries, skipped = [], []
    for i, m in enumerate(messages):
        if isinstance(m, dict) and m.get("role") == "exit":
            skipped.append({"index": i, "reason": EXIT_REASON, "message": m})
        elif isinstance(m, dict):
            entries.append(_entry(i, m, where))
        else:
            entries.append(Entry(i, m))
    name = data.get("instance_id")
    return build_trace(entries, where=where, source=FORMAT, skipped=skipped,
                       name=name if isinstance(name, str) else "")


@hookimpl
def register_trace_readers(register: Callable[..., None]) -> None:
    """Register ``mini-swe-agent``."""
    register(FORMAT, detect, read)
