"""A third-party transcript format: a tiny event log, one run a JSON object.

::

    {"events": [
      {"type": "system", "text": "You are a shell agent."},
      {"type": "task", "text": "Count the files."},
      {"type": "say", "text": "Listing them."},
      {"type": "call", "id": "c1", "tool": "bash", "args": {"command": "ls"}},
      {"type": "result", "id": "c1", "output": "a b", "error": false}
    ]}

``say`` and ``call`` events in a row are one assistant message; each ``result``
answers a call. A ``.jsonl`` file holds one run a line. The events become OpenAI
chat messages and :func:`turnpress.plugins.readers.openai_chat.trace_from_messages`
does the rest (turns, tool calls, exact replay); a result with ``"error": true``
fails its turn (reason ``tool_error``).
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

from turnpress import Failure, Turn
from turnpress.core.trace import Trace, TraceError
from turnpress.plugins.readers.openai_chat import trace_from_messages

FORMAT = "example-events"


def detect(data: Any, path: Path | None = None) -> bool:
    """An object whose only key is ``events``."""
    return isinstance(data, dict) and set(data) == {"events"}


def to_messages(events: list[Any], where: str) -> tuple[list[dict[str, Any]], set[str]]:
    """The OpenAI chat messages of an event list, and the ids of the failed calls."""
    messages: list[dict[str, Any]] = []
    failed: set[str] = set()
    for i, event in enumerate(events):
        kind = event.get("type") if isinstance(event, dict) else None
        if kind in ("system", "task"):
            messages.append({"role": "system" if kind == "system" else "user",
                             "content": str(event.get("text", ""))})
        elif kind in ("say", "call"):
            if not messages or messages[-1]["role"] != "assistant":
                messages.append({"role": "assistant", "content": None})
            last = messages[-1]
            if kind == "say":
                last["content"] = (last["content"] or "") + str(event.get("text", ""))
            else:
                last.setdefault("tool_calls", []).append({
                    "id": str(event.get("id")), "type": "function",
                    "function": {"name": str(event.get("tool")),
                                 "arguments": json.dumps(event.get("args", {}))}})
        elif kind == "result":
            messages.append({"role": "tool", "tool_call_id": str(event.get("id")),
                             "content": str(event.get("output", ""))})
            if event.get("error"):
                failed.add(str(event.get("id")))
        else:
            raise TraceError(f"{where}: event {i}: unknown event type {kind!r} "
                             f"(system, task, say, call, result)")
    for m in messages:
        if m["role"] == "assistant" and m["content"] is None and not m.get("tool_calls"):
            m["content"] = ""
    return messages, failed


def read(data: Any, where: str) -> Trace:
    """Read one event log."""
    if not isinstance(data["events"], list):
        raise TraceError(f"{where}: \"events\" must be a list")
    messages, failed = to_messages(data["events"], where)
    trace = trace_from_messages(messages, where=where)
    turns = []
    for turn in trace.turns:
        bad = [m for m in turn.messages if m.get("tool_call_id") in failed]
        if bad and turn.success:
            turn = Turn.failed(turn.number, turn.program,
                               Failure("tool_error", str(bad[0]["content"])),
                               memory={}, prints=turn.prints, tool_calls=turn.tool_calls,
                               raw_response=turn.raw_response, messages=turn.messages,
                               usage=turn.usage)
        turns.append(turn)
    return replace(trace, turns=tuple(turns), source=FORMAT)
