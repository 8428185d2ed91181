"""Helpers the built-in strategies share for imported transcripts (DESIGN §10, §11).

Not a plugin (the leading ``_`` keeps built-in discovery away): small functions over
a transcript turn's original messages (``Turn.messages``, OpenAI chat shape), so each
strategy can mask, cut or summarize them and still hand the provider a valid
conversation (every assistant ``tool_call`` answered by a ``tool`` message with its
``tool_call_id``).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Hashable, Mapping, Sequence
from functools import partial
from itertools import islice
from typing import Any

from turnpress.core.compression import RenderContext
from turnpress.core.message_text import json_argument
from turnpress.core.model import INSTRUCTION_ROLES, Message, Turn
from turnpress.core.providers import ANTHROPIC_KEPT, kept_content, part_text
from turnpress.plugins.full_history import TurnFold, same_turns

#: long outputs keep this many lines from the start and from the end (DESIGN §11)
HEAD_LINES = 20
TAIL_LINES = 20
#: and at most this many characters from each end (a one-line 50 kB blob is long too)
HEAD_CHARS = 2000
TAIL_CHARS = 2000
#: a transcript's tool-call arguments (a shell command, a file path) show this many
#: characters; PTC-Lisp calls keep the 60 of DESIGN §4
CALL_ARG_CHARS = 300


#: the marker a coalesced view shows where a message had a part that is not text
#: (``[image]``, ``[audio]``, ``[file]``; another part type shows as ``[its type]``)
PART_MARKERS = {"image_url": "[image]", "image": "[image]", "input_audio": "[audio]",
                "audio": "[audio]", "file": "[file]", "document": "[document]"}
#: the roles whose feedback messages are the user's own words in a tool-calling transcript
WORD_ROLES = ("user", *INSTRUCTION_ROLES)


def content_text(message: Mapping[str, Any]) -> str:
    """A message's content as text (list-of-parts content joined, ``None`` as "").

    A part that is not text (an image, audio, a file) shows as its marker
    (:data:`PART_MARKERS`), so a view built from the text says where it was.
    """
    content = message.get("content")
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    parts = []
    for part in content:
        if isinstance(part, Mapping):
            if "text" not in part and "content" not in part:
                kind = str(part.get("type", "part"))
                parts.append(PART_MARKERS.get(kind, f"[{kind}]"))
                continue
            text = part.get("text", part.get("content", ""))
            parts.append(text if isinstance(text, str) else json.dumps(text))
        else:
            parts.append(str(part))
    return "\n".join(parts)


def calls_tools(turn: Turn) -> bool:
    """Whether a transcript turn's assistant message made tool calls."""
    return bool(turn.messages) and bool(turn.messages[0].get("tool_calls"))


def first_tool_turn(turns: Sequence[Turn]) -> int:
    """The position (1-based) of the first turn that made a tool call (``len(turns) + 1``
    when none did). From it on the transcript is a tool-calling one: its tool results
    come as ``tool`` messages, so a user, system or developer message among a turn's
    feedback is the user's own words, never a tool's output (:func:`is_words`). Before
    it (and in transcripts without tool calls, such as mini-swe-agent's, whose
    observations come as user messages) feedback messages are outputs. A turn's
    reading depends only on the turns up to it, so earlier turns render the same as the
    run grows.

    A tuple of turns is looked at once: the answer is remembered for the last few
    tuples, and a tuple that starts with one of them (the next prompt's turns) looks
    only at its own new turns."""
    if type(turns) is not tuple:
        return _first_from(turns, 0)
    for seen, first in _FIRST_TOOL:
        if seen is turns:
            return first
    start = 0
    for seen, first in _FIRST_TOOL:
        if len(seen) <= len(turns) and same_turns(seen, turns) == len(seen):
            if first <= len(seen):
                return _remember_first(turns, first)
            start = len(seen)
            break
    return _remember_first(turns, _first_from(turns, start))


#: the last tuples of turns met by :func:`first_tool_turn`, with its answer (kept alive
#: here, so no other tuple takes their ids while they are remembered)
_FIRST_TOOL: list[tuple[tuple[Turn, ...], int]] = []


def _remember_first(turns: tuple[Turn, ...], first: int) -> int:
    _FIRST_TOOL.insert(0, (turns, first))
    del _FIRST_TOOL[4:]
    return first


def _first_from(turns: Sequence[Turn], start: int) -> int:
    """:func:`first_tool_turn`, knowing that none of the first ``start`` turns made one."""
    for pos in range(start + 1, len(turns) + 1):
        if calls_tools(turns[pos - 1]):
            return pos
    return len(turns) + 1


def words_at(turns: Sequence[Turn], pos: int) -> bool:
    """Whether the ``pos``-th turn (1-based) reads its user and system messages as the
    user's own words (:func:`is_words`): it, or a turn before it, made a tool call
    (``first_tool_turn(turns[:pos]) <= pos``, which is ``first_tool_turn(turns) <= pos``:
    the turns after it do not matter)."""
    if type(turns) is tuple:
        return first_tool_turn(turns) <= pos
    return any(calls_tools(t) for t in islice(turns, pos))


def is_words(message: Mapping[str, Any], words: bool) -> bool:
    """Whether a feedback message is the user's own words (``words``: its turn is at or
    after :func:`first_tool_turn`): such a message is never cut, masked, dropped or
    shown as output by a built-in strategy."""
    return words and message.get("role") in WORD_ROLES


def user_words(turn: Turn, words: bool) -> list[Mapping[str, Any]]:
    """The user's own messages among a transcript turn's feedback (see :func:`is_words`)."""
    return [m for m in turn.messages[1:] if is_words(m, words)] if words else []


def output_messages(turn: Turn, words: bool) -> list[Mapping[str, Any]]:
    """A transcript turn's feedback without the user's own words: its outputs."""
    return [m for m in feedback_messages(turn) if not is_words(m, words)]


def cut_middle(text: str, ctx: RenderContext, *, head_lines: int = HEAD_LINES,
               tail_lines: int = TAIL_LINES, head_chars: int = HEAD_CHARS,
               tail_chars: int = TAIL_CHARS) -> str:
    """``text`` cut to its first and last lines, with a line saying how much was left out.

    Lines are cut first (``[... 1,234 lines elided ...]``); a text still longer than
    ``head_chars + tail_chars`` after that is cut by characters
    (``[... 5,678 characters elided ...]``). Never larger: a cut that would not be
    shorter than ``text`` returns ``text`` unchanged.
    """
    lines = text.split("\n")
    cut = text
    if len(lines) > head_lines + tail_lines:
        elided = len(lines) - head_lines - tail_lines
        marker = ctx.template("history/elided.j2", count=elided, unit="line")
        cut = "\n".join([*lines[:head_lines], marker, *lines[len(lines) - tail_lines:]])
    if len(cut) > head_chars + tail_chars:
        elided = len(cut) - head_chars - tail_chars
        marker = ctx.template("history/elided.j2", count=elided, unit="character")
        cut = f"{cut[:head_chars]}\n{marker}\n{cut[len(cut) - tail_chars:]}"
    return cut if len(cut) < len(text) else text


def with_content(message: Mapping[str, Any], content: str) -> Message:
    """A copy of ``message`` with new text content; every other field (``tool_call_id``,
    ``name``...) is kept so the conversation stays valid for the provider."""
    copy = dict(message)
    copy["content"] = content
    return copy  # type: ignore[return-value]


def feedback_messages(turn: Turn) -> list[Mapping[str, Any]]:
    """The messages answering a transcript turn's assistant message (tool and user)."""
    return [m for m in turn.messages if m.get("role") != "assistant"]


def assistant_messages(turn: Turn) -> list[Mapping[str, Any]]:
    """A transcript turn's assistant message(s)."""
    return [m for m in turn.messages if m.get("role") == "assistant"]


def cut_feedback(turn: Turn, ctx: RenderContext, *, words: bool = False,
                 **limits: int) -> list[Message]:
    """A transcript turn's original messages with each output content cut to head
    plus tail (:func:`cut_middle`); assistant messages, and with ``words`` the user's
    own messages (:func:`is_words`), as sent.

    Made once per run, turn and limits (``RenderContext.per_turn``): every call returns
    a new list of the same message objects (never change them)."""
    key = ("_imported_messages.cut_feedback", words, tuple(sorted(limits.items())))
    return list(ctx.per_turn(turn, key, partial(_cut_feedback, turn, ctx, limits, words)))


def _cut_feedback(turn: Turn, ctx: RenderContext, limits: dict[str, int], words: bool
                  ) -> tuple[Message, ...]:
    out: list[Message] = []
    for m in turn.messages:
        if (m.get("role") == "assistant" or not isinstance(m.get("content"), str)
                or is_words(m, words)):
            out.append(dict(m))  # type: ignore[arg-type]
        else:
            out.append(with_content(m, cut_middle(m["content"], ctx, **limits)))
    return tuple(out)


def feedback_text(turn: Turn) -> str:
    """All feedback of a transcript turn as one text (tool results and user messages)."""
    return "\n".join(content_text(m) for m in feedback_messages(turn))


def output_text(turn: Turn, words: bool) -> str:
    """A transcript turn's outputs as one text (:func:`output_messages`)."""
    return "\n".join(content_text(m) for m in output_messages(turn, words))


def preamble_head(ctx: RenderContext) -> list[Message]:
    """The system (or ``developer``) message(s) a transcript's preamble starts with."""
    return [dict(m) for m in ctx.preamble[:_head_count(ctx)]]  # type: ignore[misc]


def _head_count(ctx: RenderContext) -> int:
    """How many system (or ``developer``) messages the preamble starts with."""
    return next((k for k, m in enumerate(ctx.preamble)
                 if m.get("role") not in INSTRUCTION_ROLES), len(ctx.preamble))


def mission_text(ctx: RenderContext) -> str:
    """What the transcript's preamble asked, after its system message(s): the mission."""
    texts = [content_text(m) for m in ctx.preamble[_head_count(ctx):]]
    return "\n\n".join(t for t in texts if t) or ctx.mission


def mission_parts(ctx: RenderContext) -> tuple[list[dict[str, Any]], list[Any] | None]:
    """The parts of the transcript's mission message(s) that are not text (an image, a
    file, audio, a document: what :func:`content_text` shows as a marker), as the user
    sent them: ``(parts, blocks)``. On an Anthropic transcript, ``blocks`` are the
    Anthropic blocks the reader kept for those parts (``_anthropic``: a PDF, which the
    OpenAI shape holds only as its ``[document]`` marker, is one), else None."""
    parts: list[dict[str, Any]] = []
    blocks: list[Any] = []
    for m in ctx.preamble[_head_count(ctx):]:
        content = m.get("content")
        original = kept_content(m)
        if isinstance(content, str) and original is not None:
            # the reader made a lone marker (a PDF alone) a string: its blocks are kept
            content = [{"type": "text", "text": part_text(b)} for b in original]
        if not isinstance(content, list):
            continue
        aligned = original is not None and len(original) == len(content)
        for k, part in enumerate(content):
            if not isinstance(part, Mapping):
                continue
            block = original[k] if aligned else None  # type: ignore[index]
            marker = isinstance(block, Mapping) and block.get("type") != "text"
            if marker or ("text" not in part and "content" not in part):
                parts.append(dict(part))
                blocks.append(block if marker else None)  # to_anthropic sends a copy
    return parts, (blocks if blocks and None not in blocks else None)


def view_message(ctx: RenderContext, content: str) -> Message:
    """The USER message of a coalesced transcript view: ``content``, then the mission's
    parts that are not text as sent (the text says where each was, by its marker), so an
    image or a document the user gave stays in every prompt, not only its marker (on an
    Anthropic transcript with the blocks the reader kept, which
    :func:`~turnpress.core.providers.to_anthropic` sends while the message is as made)."""
    parts, blocks = mission_parts(ctx)
    if not parts:
        return ctx.message("user", content)
    message: dict[str, Any] = {"role": "user",
                               "content": [{"type": "text", "text": content}, *parts]}
    if blocks is not None:
        message[ANTHROPIC_KEPT] = {"content": [{"type": "text", "text": content}, *blocks]}
    return message  # type: ignore[return-value]


def last_outputs(turns: Sequence[Turn], ctx: RenderContext, limit: int, *,
                 max_chars: int | None = None, lines: int = HEAD_LINES) -> str | None:
    """The ``;; Output:`` section of a transcript: its last ``limit`` feedback contents
    (tool results; user messages too before :func:`first_tool_turn`: they are the
    observations there), each cut to head plus tail, oldest first."""
    if max_chars is not None:
        limits = {"head_lines": 3, "tail_lines": 3, "head_chars": max_chars // 2,
                  "tail_chars": max_chars // 2}
    else:
        limits = line_limits(lines)
    key = ("_imported_messages.cut_contents", tuple(limits.items()), limit)

    def contents(pos: int, calling: bool) -> tuple[str | None, ...]:
        return _cut_contents(turns[pos - 1], ctx, limits, calling)

    # the turn's reading (pos >= first_tool_turn) is whether the run called a tool by then
    prints = [c for c in _window(turns, ctx, key, limit, contents) if c is not None]
    if not prints:
        return None
    return ctx.template("history/output.j2", prints=prints, max_chars=None)


#: per window (section, limits): the walk that keeps the window of each turn (:func:`_window`)
_WINDOWS: dict[Hashable, TurnFold[tuple[bool, tuple[Any, ...]]]] = {}


def _window(turns: Sequence[Turn], ctx: RenderContext, key: Hashable, limit: int,
            entries: Callable[[int, bool], Sequence[Any]]) -> tuple[Any, ...]:
    """The last ``limit`` entries of ``turns``, oldest first (what
    ``newest_items((entries of t for t in reversed(turns)), limit)`` gives), where
    ``entries(pos, calling)`` gives the ``pos``-th turn's (1-based) and ``calling`` says
    whether a turn up to it made a tool call. Each turn's window is its previous one's
    and its own entries, carried on from the last prompt (:class:`TurnFold`), so a
    prompt makes only its new turns' windows and entries (each turn's once a run, not
    remembered beyond the window), however long the run."""
    if limit <= 0 or not turns:
        return ()
    walk = _WINDOWS.get(key)
    if walk is None:
        if len(_WINDOWS) >= 64:
            _WINDOWS.clear()
        walk = _WINDOWS[key] = TurnFold()

    def make(pos: int, before: list[tuple[bool, tuple[Any, ...]]]
             ) -> tuple[bool, tuple[Any, ...]]:
        calling, window = before[-1] if before else (False, ())
        calling = calling or calls_tools(turns[pos - 1])
        own = entries(pos, calling)
        if own:
            window = (*window, *own)
            if len(window) > limit:
                window = window[len(window) - limit:]
        return calling, window

    return walk.value(ctx, turns, key, make)[1]


def _cut_contents(turn: Turn, ctx: RenderContext, limits: dict[str, int], words: bool
                  ) -> tuple[str | None, ...]:
    """Each output content of ``turn`` cut to head plus tail (None for an empty one)."""
    return tuple(cut_middle(c, ctx, **limits) if c else None
                 for c in (content_text(m) for m in output_messages(turn, words)))


#: per turn: (whether the run made a tool call up to it, the user's own messages up to
#: it as ``;; User messages:`` entries); shared by every strategy, as it depends only on
#: the turns (each prompt walks only the turns the previous one did not)
_WORDS_WALK: TurnFold[tuple[bool, tuple[dict[str, Any], ...]]] = TurnFold()


def _words_upto(turns: Sequence[Turn], ctx: RenderContext, count: int
                ) -> tuple[bool, tuple[dict[str, Any], ...]]:
    """``(tool-calling, entries)`` of ``turns[:count]`` (see :data:`_WORDS_WALK`)."""
    if count <= 0:
        return False, ()

    def make(pos: int, before: list[tuple[bool, tuple[dict[str, Any], ...]]]
             ) -> tuple[bool, tuple[dict[str, Any], ...]]:
        calling, entries = before[-1] if before else (False, ())
        turn = turns[pos - 1]
        calling = calling or calls_tools(turn)
        if calling:
            own = tuple({"number": turn.number, "role": m.get("role"), "text": content_text(m)}
                        for m in user_words(turn, True))
            entries = entries + own if own else entries
        return calling, entries

    return _WORDS_WALK.value(ctx, turns, "_imported_messages.words", make, count=count)


def words_section(turns: Sequence[Turn], ctx: RenderContext) -> str | None:
    """The ``;; User messages:`` section of a coalesced view: the user's own messages
    (:func:`is_words`) of every turn but the last, oldest first, each whole and labelled
    with the turn it came after (the last turn's follow the view as sent:
    :func:`newest_words`)."""
    entries = _words_upto(turns, ctx, len(turns) - 1)[1]
    if not entries:
        return None
    return ctx.template("history/user_messages.j2", messages=list(entries))


def newest_words(turns: Sequence[Turn]) -> list[Message]:
    """The user's own messages after the last turn's assistant message (the request the
    model must answer now), as sent: a coalesced view ends with them."""
    if not turns or first_tool_turn(turns) > len(turns):
        return []
    return [dict(m) for m in user_words(turns[-1], True)]  # type: ignore[misc]


def tool_calls(turns: Sequence[Turn], ctx: RenderContext, limit: int) -> str | None:
    """The ``;; Tool calls made:`` section of a transcript: the last ``limit`` calls, each
    argument as the JSON it was sent as, each string in it shown up to
    ``CALL_ARG_CHARS`` characters (commands and paths are what a tool-calling agent
    reuses)."""
    if not turns:
        return None
    key = ("_imported_messages.tool_calls", CALL_ARG_CHARS, limit)

    def entries(pos: int, _calling: bool) -> tuple[dict[str, str], ...]:
        return _call_entries(turns[pos - 1], ctx)

    calls = list(_window(turns, ctx, key, limit, entries))
    return ctx.template("history/tool_calls.j2", calls=calls)


def _call_entries(turn: Turn, ctx: RenderContext) -> tuple[dict[str, str], ...]:
    """The tool-call entries of one turn (made once per run and window, as
    :func:`_window` walks it; never change them)."""
    return tuple({"name": call.name,
                  "args": " ".join(json_argument(a, CALL_ARG_CHARS) for a in call.args)}
                 for call in turn.tool_calls)


def line_limits(lines: int) -> dict[str, int]:
    """:func:`cut_middle` limits keeping ``lines`` lines (and 100 characters a line) at
    each end."""
    return {"head_lines": lines, "tail_lines": lines, "head_chars": 100 * lines,
            "tail_chars": 100 * lines}


def summary_view(turns: Sequence[Turn], ctx: RenderContext, *, tool_call_limit: int,
                 output_limit: int, max_chars: int | None = None,
                 turns_left: bool = False, lines: int = HEAD_LINES) -> str:
    """The coalesced view of a transcript: mission, the tool calls made, the last outputs,
    the user's own messages since the mission (:func:`words_section`).

    This is what ``single-user-coalesced`` and ``aggressive`` send for an imported
    transcript in one USER message (there is no REPL state, so no namespaces),
    followed by the user's newest messages as sent (:func:`newest_words`).
    """
    parts = [mission_text(ctx).rstrip("\n"),
             tool_calls(turns, ctx, tool_call_limit),
             last_outputs(turns, ctx, output_limit, max_chars=max_chars, lines=lines),
             words_section(turns, ctx)]
    if turns_left:
        parts.append(ctx.turns_left_line(ctx.turns_left))
    return "\n\n".join(p for p in parts if p)


def answered(messages: Sequence[Mapping[str, Any]]) -> bool:
    """Whether every assistant ``tool_call`` in ``messages`` is answered by a later
    ``tool`` message with its id (what providers require)."""
    pending: set[str] = set()
    for m in messages:
        if m.get("role") == "assistant":
            if pending:
                return False
            pending = {c.get("id") for c in m.get("tool_calls") or () if c.get("id")}
        elif m.get("role") == "tool":
            pending.discard(m.get("tool_call_id"))
    return not pending


def transcript_head_breakpoints(ctx: RenderContext) -> list[tuple[int, int | None]]:
    """The stable head of a coalesced transcript view (:func:`summary_view`): the end of
    its system message(s), and the mission at the start of the USER message after them
    (a run without a mission, one that starts with the assistant, has only the first)."""
    head = _head_count(ctx)
    points: list[tuple[int, int | None]] = [(head - 1, None)] if head else []
    mission = len(mission_text(ctx).rstrip("\n"))
    return [*points, (head, mission)] if mission else points
