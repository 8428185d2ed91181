"""Built-in trace reader ``claude-code``: Claude Code logs (DESIGN §10, §12).

Reads both logs Claude Code writes, each a JSONL file of events, one a line, read
whole (``turnpress.core.trace.is_event_log``):

- ``claude -p --output-format stream-json`` output: a ``system`` ``init`` line,
  ``assistant`` and ``user`` lines, a final ``result`` line;
- session files, ``~/.claude/projects/<project>/<session>.jsonl``: ``user`` and
  ``assistant`` lines linked by ``parentUuid``, and ``summary``, ``system``,
  ``file-history-snapshot``... lines that were never sent to the model.

How a run is rebuilt:

- **the chain**: in a session file, the conversation is the ``parentUuid`` chain
  that ends at the last main-thread message; lines on other branches (a rewind,
  an edited prompt) are left out and counted in a note. Stream-json has no
  ``parentUuid``: its lines are in the order sent. In a compacted session each of
  these notes is on one run, not on every segment's: the lines left out are counted
  on the run of the segment they were written in (the last to start before them; a
  segment with none has no such note), and "the chain stops at line N" (its parent
  is not in the file) is on the first run, the one whose earlier conversation is
  missing (the chain is followed back from the end, so it can stop only at its start).
- **messages**: Claude Code writes one line per content block of an assistant
  message, each repeating the message's ``usage``: consecutive lines with the same
  ``message.id`` are one assistant message, and its usage is counted once per
  ``message.id`` (so the main thread's usage adds up to the ``result`` line's).
  Consecutive ``user`` lines (the results of parallel tool calls) are one user
  message, as the API received them. The messages are then read as an Anthropic
  Messages run (``turnpress.plugins.readers.anthropic_messages``).
- **side chains** (sub-agents: ``isSidechain`` in a session, ``parent_tool_use_id``
  in stream-json) are left out of the run, with one note per sub-agent naming it
  (its agent id, or the tool call that started it), its lines and its number of
  calls: their prompts are their own, not the main agent's. In a compacted session
  the note is on the run of the segment the sub-agent ran in (whose tool call started
  it), not on every segment's. A file holding only side-chain lines (a sub-agent's own
  log) is read as that sub-agent's run.
- **compaction**: a ``compact_boundary`` line ends a segment; the compacted
  conversation that follows (its first message is the compact summary) is a run of
  its own, named ``NAME/2``, ``NAME/3``..., because what the model saw after it no
  longer holds the earlier turns.
- Claude Code does not log its system prompt and tool definitions; stream-json
  does not log the first prompt either: a run without it starts with the user
  message :data:`MISSING_PROMPT`. ``trace show`` prints a note for each of these.

So ``full-history`` renders, for turn n, the messages that were sent, less what
Claude Code does not write down (system prompt, tools, the stream's first prompt).
A bad line is one error: ``FILE: line N: problem``; but the last line of a log still
being written, cut off before its newline, is left out with a note
(``turnpress.core.trace.iter_traces``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from turnpress.core.errors import a_or_an, quote
from turnpress.core.hookspecs import hookimpl
from turnpress.core.model import Tool
from turnpress.core.trace import Trace, TraceError
from turnpress.plugins.readers import anthropic_messages
from turnpress.plugins.readers._messages_to_trace import build_trace

__all__ = ["FORMAT", "MISSING_PROMPT", "detect", "read"]

FORMAT = "claude-code"
MISSING_PROMPT = "(the first prompt is not in this log)"
#: the line types of a Claude Code log
EVENT_TYPES = ("system", "assistant", "user", "result", "summary", "file-history-snapshot",
               "queue-operation", "progress")
_MESSAGE_AT = re.compile(r"^(?P<where>.*?): message (?P<index>-?\d+): ")
_BLOCK_AT = re.compile(r"content block (?P<block>\d+)")


def detect(data: Any, path: Path | None = None) -> bool:
    """A list of Claude Code log lines: the first is an object with a Claude Code line
    ``type`` and a session id, a ``uuid`` or a ``leafUuid``."""
    if not isinstance(data, list):
        return False
    first = next((e for e in data if e is not None), None)
    return (isinstance(first, dict) and first.get("type") in EVENT_TYPES
            and any(k in first for k in ("session_id", "sessionId", "uuid", "leafUuid")))


def _side(event: Mapping[str, Any]) -> str | None:
    """The side chain a line belongs to (``None``: the main thread)."""
    if event.get("isSidechain") is True:
        return str(event.get("agentId") or event.get("sessionId") or "sidechain")
    parent = event.get("parent_tool_use_id")
    return parent if isinstance(parent, str) else None


def _is_message(event: Mapping[str, Any]) -> bool:
    return event.get("type") in ("user", "assistant") and isinstance(event.get("message"),
                                                                     Mapping)


def _is_boundary(event: Mapping[str, Any]) -> bool:
    return event.get("type") == "system" and event.get("subtype") == "compact_boundary"


def _lines(data: list[Any], where: str) -> list[tuple[int, dict[str, Any]]]:
    out = []
    for i, event in enumerate(data, 1):
        if event is None:
            continue
        if not isinstance(event, dict):
            raise TraceError(f"{where}: line {i}: expected a JSON object, got "
                             f"{type(event).__name__} {quote(event)}")
        if _is_message(event) or event.get("type") in ("user", "assistant"):
            message = event.get("message")
            if not isinstance(message, Mapping):
                line = a_or_an(str(event.get("type")))
                raise TraceError(f"{where}: line {i}: {line} line needs a \"message\" object")
            if message.get("role") != event["type"]:
                raise TraceError(f"{where}: line {i}: message.role {quote(message.get('role'))}"
                                 f" does not match the line's type {quote(event['type'])}")
        out.append((i, event))
    return out


def _chain(lines: list[tuple[int, dict[str, Any]]], main: list[tuple[int, dict[str, Any]]],
           where: str) -> tuple[list[tuple[int, dict[str, Any]]], str | None, list[int]]:
    """The main thread in the order sent: the ``parentUuid`` chain of a session file
    (through compaction boundaries), or the file order of stream-json; with the note
    that the chain stops at a parent not in the file (``None`` if it does not), and the
    main-thread message lines left out, on other branches (a rewind, an edited prompt)."""
    on_main = {i for i, _ in main}
    if not any("parentUuid" in e for _, e in lines):
        return [(i, e) for i, e in lines if i in on_main or _is_boundary(e)], None, []
    by_uuid = {e["uuid"]: (i, e) for i, e in lines if isinstance(e.get("uuid"), str)}
    chain: list[tuple[int, dict[str, Any]]] = []
    seen: set[str] = set()
    stop: str | None = None
    current: tuple[int, dict[str, Any]] | None = main[-1]
    while current is not None:
        i, event = current
        if event.get("uuid") in seen:
            raise TraceError(f"{where}: line {i}: the parentUuid chain loops back to this line")
        seen.add(str(event.get("uuid")))
        chain.append(current)
        parent = event.get("parentUuid")
        if parent is None and _is_boundary(event):
            parent = event.get("logicalParentUuid")
        if parent is not None and parent not in by_uuid:
            stop = f"the chain stops at line {i}: its parent {quote(parent)} is not in the file"
        current = by_uuid.get(parent) if isinstance(parent, str) else None
    chain.reverse()
    return chain, stop, sorted(on_main - {i for i, _ in chain})


def _segments(chain: list[tuple[int, dict[str, Any]]]) -> list[list[tuple[int, dict[str, Any]]]]:
    segments: list[list[tuple[int, dict[str, Any]]]] = [[]]
    for item in chain:
        if _is_boundary(item[1]):
            if segments[-1]:
                segments.append([])
        elif _is_message(item[1]):
            segments[-1].append(item)
    return [s for s in segments if s]


def _messages(segment: list[tuple[int, dict[str, Any]]], counted: set[str]
              ) -> tuple[list[dict[str, Any]], list[list[tuple[int, int]]]]:
    """The Anthropic messages of a segment and, per message, where its blocks come from:
    ``(line, index of the line's first block in the message)`` for each line merged
    into it, the line it starts at first; usage is put on the first line of each
    ``message.id`` not yet ``counted``."""
    messages: list[dict[str, Any]] = []
    sources: list[list[tuple[int, int]]] = []
    last_id: Any = None
    for i, event in segment:
        message = event["message"]
        role = message.get("role")
        content = message.get("content")
        blocks = ([{"type": "text", "text": content}] if isinstance(content, str)
                  else list(content) if isinstance(content, list) else content)
        same = bool(messages) and messages[-1]["role"] == role and (
            role == "user" or (message.get("id") is not None and message.get("id") == last_id))
        if same and isinstance(blocks, list):
            sources[-1].append((i, len(messages[-1]["content"])))
            messages[-1]["content"].extend(blocks)
            continue
        out: dict[str, Any] = {"role": role, "content": blocks}
        message_id = message.get("id")
        if role == "assistant" and message_id not in counted and message.get("usage") is not None:
            out["usage"] = message["usage"]
            counted.add(message_id)
        last_id = message_id
        messages.append(out)
        sources.append([(i, 0)])
    for m in messages:  # one text block of a user message is a string, as typed
        if (m["role"] == "user" and isinstance(m["content"], list) and len(m["content"]) == 1
                and isinstance(m["content"][0], Mapping)
                and set(m["content"][0]) == {"type", "text"} and m["content"][0]["type"] == "text"):
            m["content"] = m["content"][0]["text"]
    return messages, sources


def _relined(exc: TraceError, sources: Mapping[int, list[tuple[int, int]]]) -> TraceError:
    """An error about message N as one about the line it comes from: the line of the
    content block the error names (numbered within that line), else the line the
    message starts at. ``sources`` maps N to where the message's blocks come from (see
    :func:`_messages`); an N it lacks is left out of the error."""
    found = _MESSAGE_AT.match(str(exc))
    if not found:
        return exc
    rest = str(exc)[found.end():]
    blocks = sources.get(int(found.group("index")))
    if blocks is None:
        return TraceError(f"{found.group('where')}: {rest}")
    line = blocks[0][0]
    block = _BLOCK_AT.match(rest)
    if block is not None:
        k = int(block.group("block"))
        line, first = next((at, first) for at, first in reversed(blocks) if first <= k)
        rest = f"content block {k - first}{rest[block.end():]}"
    return TraceError(f"{found.group('where')}: line {line}: {rest}")


def read(data: Any, where: str) -> list[Trace]:
    """The runs of a Claude Code log (the list of its lines, ``None`` for blank ones):
    one per segment between compaction boundaries."""
    lines = _lines(data, where)
    messages = [(i, e) for i, e in lines if _is_message(e)]
    main = [(i, e) for i, e in messages if _side(e) is None] or messages
    if not main:
        raise TraceError(f"{where}: empty run: no user or assistant line in this Claude "
                         f"Code log")
    sides: dict[str, list[int]] = {}
    on_main = {i for i, _ in main}
    for i, e in messages:
        side = _side(e)
        if side is not None and i not in on_main:
            sides.setdefault(side, []).append(i)
    chain, stop, branched = _chain(lines, main, where)
    segments = _segments(chain)
    # each note on the run of the segment it is about (not on every segment's run)
    segment_notes: list[list[str]] = [[] for _ in segments]
    for side, at in sides.items():
        lines_at = set(at)
        calls = len({e["message"].get("id") for i, e in messages if i in lines_at
                     and e["type"] == "assistant"})
        where_at = f"line {at[0]}" if len(at) == 1 else f"lines {at[0]}-{at[-1]}"
        segment_notes[_segment_of(at[0], segments)].append(
            f"side chain (sub-agent) {quote(side)}, {where_at}: left out of this run, its "
            f"own prompts ({calls} call(s)) billed apart")
    # the chain stops where it starts, at or before the first segment's first line: what
    # is missing is the conversation before the first run, so the note is on that run
    if stop is not None:
        segment_notes[0].append(stop)
    # a line on another branch is counted on the run of the segment it was written in
    left_out = [0 for _ in segments]
    for i in branched:
        left_out[_segment_of(i, segments)] += 1
    for k, left in enumerate(left_out):
        if left:
            segment_notes[k].append(f"{left} message line(s) on other branches of the "
                                    f"parentUuid chain (rewound or edited) left out")
    tools = _tools(lines)
    counted: set[str] = set()
    runs = []
    for k, segment in enumerate(segments, 1):
        anthropic, sources = _messages(segment, counted)
        run_notes = list(segment_notes[k - 1])
        if anthropic[0]["role"] != "user":
            anthropic.insert(0, {"role": "user", "content": MISSING_PROMPT})
            sources.insert(0, [(segment[0][0], 0)])
            run_notes.append("the first prompt is not in the log (stream-json does not "
                             f"write it): the run starts with {MISSING_PROMPT!r}")
        if len(segments) > 1:
            run_notes.append(f"segment {k} of {len(segments)}: the session was compacted "
                             f"(compact_boundary lines); each segment is a run of its own")
        run_notes.append("Claude Code does not log its system prompt or tool definitions: "
                         "they are not in the replayed prompts")
        try:
            entries = anthropic_messages.message_entries(None, anthropic, where)
        except TraceError as exc:
            raise _relined(exc, dict(enumerate(sources))) from None
        # the entries are numbered by the line each message starts at
        entries = [replace(e, index=sources[e.index][0][0]) for e in entries]
        try:
            trace = build_trace(entries, where=where, source=FORMAT, tools=tools,
                                skipped=[{"note": n} for n in run_notes])
        except TraceError as exc:
            raise _relined(exc, {blocks[0][0]: blocks for blocks in sources}) from None
        runs.append(trace)
    return runs


def _segment_of(first: int, segments: list[list[tuple[int, dict[str, Any]]]]) -> int:
    """The index of the segment a side chain whose first line is ``first``, or a line on
    another branch of the chain at line ``first``, belongs to: the one it was written
    in, the last to start before it (the first segment if none does). A sub-agent runs within
    the main thread's tool call that started it, and Claude Code writes its lines as
    they come, so they are among that segment's lines (compaction comes between calls
    of the main thread, never within one)."""
    found = 0
    for k, segment in enumerate(segments):
        if segment[0][0] < first:
            found = k
    return found


def _tools(lines: list[tuple[int, dict[str, Any]]]) -> dict[str, Tool]:
    """The tool names of the ``init`` line (Claude Code logs no schemas)."""
    for _, event in lines:
        if event.get("type") == "system" and event.get("subtype") == "init":
            names = event.get("tools")
            if isinstance(names, list):
                return {n: Tool.from_schema(n, {}) for n in names if isinstance(n, str)}
    return {}


@hookimpl
def register_trace_readers(register: Callable[..., None]) -> None:
    """Register ``claude-code``."""
    register(FORMAT, detect, read)
